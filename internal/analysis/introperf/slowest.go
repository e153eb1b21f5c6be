package introperf

import (
	"cmp"
	"slices"
)

// Slowest selects the n slowest of the instances added to it, by their
// latency in one mode (all of them when n is 0), slowest first and ties by
// start: the list a text view prints. Given to Analyze (Options.Slowest),
// it selects while instances are inferred, so that a run of millions of
// instances is not held for the forty printed.
type Slowest struct {
	mode  Mode
	n     int
	count int
	all   []Instance // the instances added, while there are no more than n (n 0: always)
	heap  []Instance // the n slowest so far, the root the fastest of them
}

// NewSlowest returns a Slowest of the n slowest instances in mode m.
func NewSlowest(m Mode, n int) *Slowest { return &Slowest{mode: m, n: n} }

// less orders a before b: slower, then earlier, then by context.
func (s *Slowest) less(a, b Instance) int {
	la, lb := a.Latency(s.mode), b.Latency(s.mode)
	switch {
	case la != lb:
		return cmp.Compare(lb, la)
	case a.Start != b.Start:
		return cmp.Compare(a.Start, b.Start)
	}
	return cmp.Compare(a.Node, b.Node)
}

// Add adds in.
func (s *Slowest) Add(in Instance) {
	s.count++
	if s.n <= 0 || s.count <= s.n {
		s.all = append(s.all, in)
	} else {
		s.all = nil
	}
	if s.n <= 0 {
		return
	}
	h := s.heap
	if len(h) < s.n {
		h = append(h, in)
		for i := len(h) - 1; i > 0; {
			p := (i - 1) / 2
			if s.less(h[i], h[p]) <= 0 {
				break
			}
			h[i], h[p] = h[p], h[i]
			i = p
		}
		s.heap = h
		return
	}
	if s.less(in, h[0]) >= 0 {
		return
	}
	h[0] = in
	for i := 0; ; {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if c+1 < len(h) && s.less(h[c+1], h[c]) > 0 {
			c++
		}
		if s.less(h[c], h[i]) <= 0 {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// List returns the selected instances, slowest first.
func (s *Slowest) List() []Instance {
	out := s.heap
	if s.n <= 0 || s.count <= s.n {
		out = s.all
	}
	out = slices.Clone(out)
	slices.SortFunc(out, s.less)
	return out
}

// Count is how many instances were added.
func (s *Slowest) Count() int { return s.count }
