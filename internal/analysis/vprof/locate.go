package vprof

import (
	"math"

	"github.com/culprit-dev/culprit/internal/profile"
)

// placeCount is a number of buggy samples read at one source line and
// basic block (indexes into Analyzer.locs and Analyzer.blocks, −1 unknown).
type placeCount struct {
	loc, block int32
	n          int
}

// where is where a variable's buggy samples fall against the normal range
// of one dimension: those considered, those outside, and where the ones
// outside were read.
type where struct {
	considered, outside int
	at                  map[int32]int // line → samples outside
	inBlock             map[int32]int // basic block → samples outside
}

func (w *where) count(outside bool, p placeCount) {
	w.considered += p.n
	if !outside {
		return
	}
	w.outside += p.n
	if w.at == nil {
		w.at, w.inBlock = map[int32]int{}, map[int32]int{}
	}
	w.at[p.loc] += p.n
	if p.block >= 0 {
		w.inBlock[p.block] += p.n
	}
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
	for i, v := range a.vars {
		v.where = [3]where{}
		for d, dim := range dimensions {
			ranges[i][d] = rangeOf(v, dim)
		}
	}
	for _, r := range a.buggy {
		w := newWalker(r.srcVar, len(a.vars))
		places := map[int32]placeCount{} // frame → line, block
		closeRun := func(vi int32, st *stState, length int) {
			wh, o := &a.vars[vi].where[2], ranges[vi][2]
			for _, p := range st.in {
				wh.count(o.outside(float64(length)), p)
			}
			st.in = st.in[:0]
		}
		err := r.p.EachValue(func(v *profile.Value) bool {
			vi := w.variable(v)
			if vi < 0 {
				return true
			}
			st := w.state(vi, v)
			if st == nil {
				return true
			}
			va := a.vars[vi]
			s := st.next(v, va.src.Pointer)
			pl := placeCount{loc: -1, block: -1, n: 1}
			if fi := v.FrameIndex(); fi >= 0 {
				var ok bool
				if pl, ok = places[fi]; !ok {
					fr := r.p.FrameAt(fi)
					pl = placeCount{loc: a.loc(fr), block: a.block(fr), n: 1}
					places[fi] = pl
				}
			}
			x := math.NaN() // a value not kept (NaN, a pointer's)
			if s.kept {
				x = s.x
			}
			va.where[0].count(ranges[vi][0].outside(x), pl)
			if s.hasDelta {
				va.where[1].count(ranges[vi][1].outside(s.delta), pl)
			}
			if s.close {
				closeRun(vi, st, s.closed)
			}
			for i := range st.in {
				if st.in[i].loc == pl.loc && st.in[i].block == pl.block {
					st.in[i].n++
					return true
				}
			}
			st.in = append(st.in, pl)
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
