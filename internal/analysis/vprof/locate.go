package vprof

import (
	"math"
	"sort"

	"github.com/culprit-dev/culprit/internal/profile"
)

// placeCount is a number of buggy samples read at one source line and
// basic block (indexes into Analyzer.locs and Analyzer.blocks, −1 unknown)
// and charged to one function (index into Analyzer.funcs): n samples, and
// extra reads of samples counted at another place (a global read in
// several frames of one sample is one sample of its distributions, read
// in each of those frames' functions).
type placeCount struct {
	loc, block int32
	fn         int32
	n, extra   int
}

// place is a line or a block (index into Analyzer.locs or Analyzer.blocks)
// where a variable was read while charged to function fn: a global is
// charged to the function of each PC it was read at, and each of those
// functions is localised to its own places, not to every place the global
// was read at. extra marks the reads of a sample counted elsewhere: they
// place it in their function, not in the variable's own count.
type place struct {
	fn, i int32
	extra bool
}

// where is where a variable's buggy samples fall against the normal range
// of one dimension: those considered, those outside, and where the ones
// outside were read.
type where struct {
	considered, outside int
	at                  map[place]int // line → samples outside
	inBlock             map[place]int // basic block → samples outside
	// The same for the buggy samples inside the normal range whose values
	// are over-represented in the buggy runs (mixBins).
	over                int
	overAt, overInBlock map[place]int
}

func (w *where) count(outside, over bool, p placeCount) {
	w.considered += p.n
	if !outside {
		if over {
			w.over += p.n
			if w.overAt == nil {
				w.overAt, w.overInBlock = map[place]int{}, map[place]int{}
			}
			p.addTo(w.overAt, w.overInBlock)
		}
		return
	}
	w.outside += p.n
	if w.at == nil {
		w.at, w.inBlock = map[place]int{}, map[place]int{}
	}
	p.addTo(w.at, w.inBlock)
}

// addTo adds p's samples and extra reads to the counts of its line and
// block.
func (p placeCount) addTo(at, inBlock map[place]int) {
	for _, k := range [2]struct {
		n     int
		extra bool
	}{{p.n, false}, {p.extra, true}} {
		if k.n == 0 {
			continue
		}
		at[place{p.fn, p.loc, k.extra}] += k.n
		if p.block >= 0 {
			inBlock[place{p.fn, p.block, k.extra}] += k.n
		}
	}
}

// MixBins is how many quantiles of the normal samples bound the bins in
// which a variable's buggy and normal mixes of values are compared.
const MixBins = 10

// mixBins divides a dimension's values into bins bounded by the normal
// samples' quantiles (each bound value its own bin, so that a variable
// with few distinct values has a bin per value) and marks the bins whose
// share of the buggy samples exceeds their share of the normal ones by
// more than two standard errors (the two-proportion test the shares of
// time use): the values the buggy runs over-represent.
type mixBins struct {
	edges []float64
	over  map[int]bool
}

func (m *mixBins) bin(x float64) int {
	i := sort.SearchFloat64s(m.edges, x)
	if i < len(m.edges) && m.edges[i] == x {
		return 2*i + 1
	}
	return 2 * i
}

func (m *mixBins) overRepresented(x float64) bool {
	return len(m.over) > 0 && !math.IsNaN(x) && m.over[m.bin(x)]
}

func newMixBins(normal []float64, buggy *nums) mixBins {
	var m mixBins
	if len(normal) == 0 || buggy.len() == 0 {
		return m
	}
	s := append([]float64(nil), normal...)
	sort.Float64s(s)
	for k := 1; k < MixBins; k++ {
		e := s[k*(len(s)-1)/MixBins]
		if len(m.edges) == 0 || e > m.edges[len(m.edges)-1] {
			m.edges = append(m.edges, e)
		}
	}
	// The extremes are bins of their own too.
	m.edges = append([]float64{s[0]}, m.edges...)
	if s[len(s)-1] > m.edges[len(m.edges)-1] {
		m.edges = append(m.edges, s[len(s)-1])
	}
	if m.edges[1] == m.edges[0] {
		m.edges = m.edges[1:]
	}
	nc, bc := map[int]float64{}, map[int]float64{}
	for _, x := range s {
		nc[m.bin(x)]++
	}
	nb := 0.0
	for i, n := 0, buggy.len(); i < n; i++ {
		if x := buggy.at(i); !math.IsNaN(x) {
			bc[m.bin(x)]++
			nb++
		}
	}
	nn := float64(len(s))
	m.over = map[int]bool{}
	for b, c := range bc {
		if share(nc[b], nn, c, nb).Grew() {
			m.over[b] = true
		}
	}
	return m
}

// place adds p to the places of the current run of equal values.
func (st *stState) place(p placeCount) {
	for i := range st.in {
		if q := &st.in[i]; q.loc == p.loc && q.block == p.block && q.fn == p.fn {
			q.n += p.n
			q.extra += p.extra
			return
		}
	}
	st.in = append(st.in, p)
}

// dimensions are the dimensions of variable.where, in its order.
var dimensions = [3]Dimension{DimValue, DimDelta, DimDuration}

// pick returns a series' samples of dimension d.
func (s *series) pick(d Dimension) *nums {
	switch d {
	case DimValue:
		return &s.values
	case DimDelta:
		return &s.deltas
	}
	return &s.durations
}

// normalRange is the range of v's normal samples in dimension d, pooled
// over the normal runs; has is false when there are none.
func normalRange(v *variable, d Dimension) (has bool, lo, hi float64) {
	for _, s := range v.normal {
		if s == nil {
			continue
		}
		xs := s.pick(d)
		for i, n := 0, xs.len(); i < n; i++ {
			x := xs.at(i)
			if !has {
				has, lo, hi = true, x, x
			}
			lo, hi = math.Min(lo, x), math.Max(hi, x)
		}
	}
	return has, lo, hi
}

// outsideRange is a buggy sample's test against the normal range: outside
// it beyond 5% of the bound's magnitude (as vProf's code), or no normal
// sample at all.
type outsideRange struct {
	has    bool
	lo, hi float64
}

func rangeOf(v *variable, d Dimension) outsideRange {
	has, lo, hi := normalRange(v, d)
	return outsideRange{has: has, lo: lo - 0.05*math.Abs(lo), hi: hi + 0.05*math.Abs(hi)}
}

func (o outsideRange) outside(x float64) bool { return !o.has || x < o.lo || x > o.hi }

// locate reads the buggy runs again, value by value as add read them, and
// fills in every variable's where: per dimension, its buggy samples
// outside the normal range and the lines and blocks they were read at (a
// duration dimension's sample is the length of the run of equal values it
// belongs to). Keeping this instead of the samples keeps the analysis's
// memory to its series.
func (a *Analyzer) locate() error {
	ranges := make([][3]outsideRange, len(a.vars))
	mixes := make([][3]mixBins, len(a.vars))
	for i, v := range a.vars {
		v.where = [3]where{}
		for d, dim := range dimensions {
			ranges[i][d] = rangeOf(v, dim)
			var normal []float64
			for _, s := range v.normal {
				if s != nil {
					normal = s.pick(dim).appendTo(normal)
				}
			}
			mixes[i][d] = newMixBins(normal, v.buggy.pick(dim))
		}
	}
	for _, r := range a.buggy {
		w := newWalker(r.srcVar, len(a.vars))
		places := map[int32]placeCount{} // frame → line, block, function of the PC
		closeRun := func(vi int32, st *stState, length int) {
			wh, o, m := &a.vars[vi].where[2], ranges[vi][2], &mixes[vi][2]
			for _, p := range st.in {
				wh.count(o.outside(float64(length)), m.overRepresented(float64(length)), p)
			}
			st.in = st.in[:0]
		}
		err := a.eachValue(r.p, func(v *profile.Value) bool {
			vi := w.variable(v)
			if vi < 0 {
				return true
			}
			st := w.thread(vi, v)
			va := a.vars[vi]
			pl := placeCount{loc: -1, block: -1, fn: a.fn(profile.Unknown, profile.Unknown), n: 1}
			if fi := v.FrameIndex(); fi >= 0 {
				var ok bool
				if pl, ok = places[fi]; !ok {
					fr := r.p.FrameAt(fi)
					pl = placeCount{loc: a.loc(fr), block: a.block(fr), fn: a.fn(fr.Name(), fr.Object), n: 1}
					places[fi] = pl
				}
			}
			if !va.src.Global {
				// A local is charged to its own function, wherever
				// (in which inlined callee) it was read.
				pl.fn = va.owner
			}
			if st.has && st.time == v.Time {
				// Read again in another frame of the same sample: the
				// same sample, placed in this frame's function too.
				pl.n, pl.extra = 0, 1
				for d, seen := range st.seen {
					if seen.counted {
						va.where[d].count(seen.outside, seen.over, pl)
					}
				}
				st.place(pl)
				return true
			}
			s := st.next(v, va.src.Pointer)
			x := math.NaN() // a value not kept (NaN, a pointer's)
			if s.kept {
				x = s.x
			}
			st.seen[0].outside, st.seen[0].over = ranges[vi][0].outside(x), mixes[vi][0].overRepresented(x)
			st.seen[0].counted = true
			va.where[0].count(st.seen[0].outside, st.seen[0].over, pl)
			st.seen[1].counted = s.hasDelta
			if s.hasDelta {
				st.seen[1].outside, st.seen[1].over = ranges[vi][1].outside(s.delta), mixes[vi][1].overRepresented(s.delta)
				va.where[1].count(st.seen[1].outside, st.seen[1].over, pl)
			}
			if s.close {
				closeRun(vi, st, s.closed)
			}
			st.place(pl)
			return true
		})
		if err != nil {
			return err
		}
		for vi := range w.states {
			for j := range w.states[vi] {
				if st := &w.states[vi][j]; st.has {
					closeRun(int32(vi), st, st.run)
				}
			}
		}
	}
	return nil
}
