package trace

import (
	"cmp"
	"slices"

	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
)

// Summary is what a trace's calls give the build's statistics
// (DynamicStats, ProbeTraps, InnermostOpen), gathered call by call: a
// trace adds each record as it writes it, so that its end needs no
// reading of its recording back (a profile holds every call with its
// arguments, strings and symbolized call site; a summary holds each
// call's span on its thread, 24 bytes, in chunks of a fixed size: a
// slice grown by append copies the calls again at each growth, and
// the fresh pages it faults in cost this VM more than the rest of the
// summary, measured). Probes are merged by function and object, as the
// loader merges them.
type Summary struct {
	probes  []profile.Probe
	byKey   map[[2]string]int32
	ids     map[uint32]int32 // a recording's Probe IDs
	calls   []int            // by probe: the recorded calls
	excl    []uint64         // by probe: their exclusive time
	callees []map[int32]uint64
	spans   [][]span // every call, in the order added, in chunks of spanChunk
	traps   int
}

// spanChunk is how many calls a chunk of Summary.spans holds (96 KiB).
const spanChunk = 4096

// span is one call on its thread, for InnermostOpen.
type span struct {
	start, end uint64
	tid        uint32
	probe      int32
}

// NewSummary returns an empty Summary.
func NewSummary() *Summary {
	return &Summary{byKey: map[[2]string]int32{}, ids: map[uint32]int32{}}
}

// allSpans are the calls' spans in one slice, in the order added.
func (s *Summary) allSpans() []span {
	n := 0
	for _, c := range s.spans {
		n += len(c)
	}
	all := make([]span, 0, n)
	for _, c := range s.spans {
		all = append(all, c...)
	}
	return all
}

// Add takes a record written to a trace's recording: its Probe and Call
// records count, others are ignored.
func (s *Summary) Add(r recording.Record) {
	switch v := r.(type) {
	case *recording.Probe:
		s.ids[v.ID] = s.probe(profile.Probe{Function: v.Function, Object: v.Object, Offset: v.Offset, Every: v.Every})
	case *recording.Call:
		pi, ok := s.ids[v.Probe]
		if !ok {
			return
		}
		ci := int32(-1)
		if i, ok := s.ids[v.Caller]; ok {
			ci = i
		}
		s.call(pi, ci, v.TID, v.Start, v.End, v.Child, v.Site != 0)
	}
}

// probe returns the index of probe p, added if new.
func (s *Summary) probe(p profile.Probe) int32 {
	k := [2]string{p.Function, p.Object}
	if i, ok := s.byKey[k]; ok {
		return i
	}
	i := int32(len(s.probes))
	s.probes = append(s.probes, p)
	s.byKey[k] = i
	s.calls = append(s.calls, 0)
	s.excl = append(s.excl, 0)
	s.callees = append(s.callees, nil)
	return i
}

// call adds one recorded call of probe pi made from a traced call of
// probe ci (-1: none); returned says it went back through its return
// probe (its call site is known), a second trap.
func (s *Summary) call(pi, ci int32, tid uint32, start, end, child uint64, returned bool) {
	c := profile.Call{Start: start, End: end, Child: child}
	s.calls[pi]++
	s.excl[pi] += c.Exclusive()
	if ci >= 0 {
		if s.callees[ci] == nil {
			s.callees[ci] = map[int32]uint64{}
		}
		s.callees[ci][pi]++
	}
	if k := len(s.spans); k == 0 || len(s.spans[k-1]) == spanChunk {
		s.spans = append(s.spans, make([]span, 0, spanChunk))
	}
	last := &s.spans[len(s.spans)-1]
	*last = append(*last, span{start, end, tid, pi})
	s.traps++
	if returned {
		s.traps++
	}
}

// Summarize gathers the calls of a loaded profile.
func Summarize(p *profile.Profile) *Summary {
	s := NewSummary()
	for _, pr := range p.Probes {
		s.probe(pr)
	}
	for i := range p.Calls {
		c := &p.Calls[i]
		s.call(c.Probe, c.Caller, c.TID, c.Start, c.End, c.Child, c.Site >= 0)
	}
	return s
}

// Probes are the probes of the calls, in the order first seen.
func (s *Summary) Probes() []profile.Probe { return s.probes }

// Traps counts the probe traps of the recorded calls: the entry of each,
// and its return when it returned through a probe (a call whose return
// address was known).
func (s *Summary) Traps() int { return s.traps }

// Stats computes each traced function's Dynamic Stats, by name.
func (s *Summary) Stats() map[string]FuncStats {
	durs := make([][]uint64, len(s.probes))
	for i, n := range s.calls {
		durs[i] = make([]uint64, 0, n)
	}
	for _, c := range s.spans {
		for k := range c {
			durs[c[k].probe] = append(durs[c[k].probe], c[k].end-c[k].start)
		}
	}
	out := map[string]FuncStats{}
	for i, pr := range s.probes {
		v := durs[i]
		if len(v) == 0 {
			continue
		}
		st := Stats(v, uint64(pr.Every))
		st.ExclTotal = s.excl[i]
		if len(s.callees[i]) > 0 {
			st.Callees = map[string]uint64{}
			for ci, n := range s.callees[i] {
				st.Callees[s.probes[ci].Function] += n
			}
		}
		out[pr.Function] = st
	}
	return out
}

// InnermostOpen returns a function that names the innermost call open
// on thread tid at time t ("" when none is), as traced calls nest on a
// thread: the last call to start at or before t, or the nearest of its
// traced callers still open at t. A call of a function in jumpsOut
// (tracer.JumpsOut: it hands its frame to a library function by a tail
// call) is passed over for the traced call it was made in: what a
// sample whose stack holds no frame of the executable was taken in is
// that library function, which an untraced stack shows returning
// straight to the caller (its caller itself when the caller is traced,
// as in a trace of every function). Samples merged by the loader have
// one time for many: give it an unmerged profile's samples.
func (s *Summary) InnermostOpen(jumpsOut map[string]bool) func(tid uint32, t uint64) string {
	calls := s.allSpans()
	slices.SortFunc(calls, func(a, b span) int {
		if a.tid != b.tid {
			return cmp.Compare(a.tid, b.tid)
		}
		if a.start != b.start {
			return cmp.Compare(a.start, b.start)
		}
		return cmp.Compare(b.end, a.end) // the outer first
	})
	// Each thread's calls are a run of calls; parent is the index of the
	// call each was made in, -1 for none.
	runs := map[uint32][2]int{}
	parent := make([]int32, len(calls))
	var stack []int32
	for i := 0; i < len(calls); {
		j := i
		for j < len(calls) && calls[j].tid == calls[i].tid {
			j++
		}
		runs[calls[i].tid] = [2]int{i, j}
		stack = stack[:0]
		for k := i; k < j; k++ {
			for len(stack) > 0 && calls[stack[len(stack)-1]].end < calls[k].start {
				stack = stack[:len(stack)-1]
			}
			parent[k] = -1
			if len(stack) > 0 {
				parent[k] = stack[len(stack)-1]
			}
			stack = append(stack, int32(k))
		}
		i = j
	}
	return func(tid uint32, t uint64) string {
		r, ok := runs[tid]
		if !ok {
			return ""
		}
		k, _ := slices.BinarySearchFunc(calls[r[0]:r[1]], t, func(c span, t uint64) int {
			if c.start <= t {
				return -1
			}
			return 1
		})
		if k == 0 {
			return ""
		}
		passed := false
		for i := int32(r[0] + k - 1); i >= 0; i = parent[i] {
			if calls[i].end < t {
				continue
			}
			if f := s.probes[calls[i].probe].Function; passed || !jumpsOut[f] {
				return f
			}
			passed = true // the caller's frame is the innermost an untraced stack holds
		}
		return ""
	}
}
