package vprof

import (
	"errors"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/culprit-dev/culprit/internal/stats"
)

// DimResult compares the normal and buggy samples of a variable in one
// dimension.
type DimResult struct {
	Dimension Dimension `json:"dimension"`
	Discount  float64   `json:"discount"`
	// Rejected: the Anderson–Darling test told the samples apart (or the
	// normal runs had none), so Discount is 1 − Hellinger (0 below
	// ValidDiscount); otherwise Discount is DefaultDiscount.
	Rejected  bool    `json:"rejected"`
	T         float64 `json:"t"`         // standardized AD statistic (0 when not tested)
	Critical  float64 `json:"critical"`  // its critical value at α
	Hellinger float64 `json:"hellinger"` // when rejected
	Normal    int     `json:"normal_n"`
	Buggy     int     `json:"buggy_n"`
	Note      string  `json:"note,omitempty"` // why the test was not run
}

// meaningless says whether vProf skips the value dimension of a variable:
// its name or type mentions a process, thread, or time, whose values differ
// between any two runs.
func meaningless(name, typ string) bool {
	for _, w := range []string{"proc", "pid", "thread", "tid", "time"} {
		if strings.Contains(name, w) || strings.Contains(typ, w) {
			return true
		}
	}
	return false
}

// thin returns xs itself when it has at most n elements, else n evenly
// spaced order statistics of it (the (i+½)/n quantiles). A sample of more
// than 16n elements is first reduced to 16n by taking every k-th element
// (a systematic sample, which keeps the distribution to within about
// 1/sqrt(16n)), so that thinning costs O(n log n), not O(len log len).
func thin(xs []float64, n int) []float64 {
	if n <= 0 || len(xs) <= n {
		return xs
	}
	var s []float64
	if m := 16 * n; len(xs) > m {
		s = make([]float64, m)
		for i := range s {
			s[i] = xs[int(uint64(i)*uint64(len(xs))/uint64(m))]
		}
	} else {
		s = slices.Clone(xs)
	}
	slices.Sort(s)
	out := make([]float64, n)
	for i := range out {
		out[i] = s[(2*i+1)*len(s)/(2*n)]
	}
	return out
}

// compareDim computes a dimension's discount: DefaultDiscount when the
// k-sample Anderson–Darling test (midrank form) does not reject at α that
// the normal samples x and buggy samples y come from one distribution,
// otherwise 1 − Hellinger(x, y), cut to 0 below ValidDiscount. Edge cases
// as vProf's code: no buggy samples → not rejected; a variable never
// sampled in the normal run (normalSampled false) → rejected with Hellinger
// 1; too few samples for the test → not rejected (this includes a variable
// sampled in the normal run too rarely to have, say, a delta).
func (o Options) compareDim(d Dimension, x, y []float64, normalSampled bool) DimResult {
	r := DimResult{Dimension: d, Normal: len(x), Buggy: len(y), Discount: o.DefaultDiscount}
	switch {
	case len(y) == 0:
		r.Note = "no buggy samples"
		return r
	case len(x) == 0 && !normalSampled:
		r.Note = noNormal
		r.Rejected, r.Hellinger, r.Discount = true, 1, 0
		return r
	case len(x) == 0:
		r.Note = "too few samples to test"
		return r
	}
	ad, err := stats.AndersonDarling([][]float64{thin(x, o.MaxTestSamples), thin(y, o.MaxTestSamples)}, true, o.Alpha)
	if err != nil {
		if errors.Is(err, stats.ErrTooFewSamples) {
			r.Note = "too few samples to test"
		} else {
			r.Note = err.Error()
		}
		return r
	}
	if !math.IsInf(ad.T, 0) && !math.IsNaN(ad.T) {
		r.T = ad.T
	}
	r.Critical = ad.Critical
	if !ad.Reject {
		return r
	}
	r.Rejected = true
	r.Hellinger = stats.Hellinger(x, y)
	r.Discount = 1 - r.Hellinger
	if r.Discount < o.ValidDiscount {
		r.Discount = 0
	}
	return r
}

// hellingerTie is the difference of Hellinger distances below which two
// anomalies count as equally far from normal: the estimate varies by more
// than that between two recordings of the same runs.
const hellingerTie = 0.02

// lowest picks the dimension with the lowest discount. Ties are common (any
// discount below ValidDiscount is 0, and disjoint samples all give 0) and
// vProf's paper leaves them open; they go, in order, to a dimension whose
// test rejected, to the larger Hellinger distance (the stronger anomaly
// before the cut; differences within hellingerTie are noise), and then to
// value over duration over delta: a value outside the normal ones is the
// most direct evidence, and deltas that differ because the buggy values
// stay the same (deltas of 0) say what the duration dimension says more
// specifically.
func lowest(dims []DimResult) int {
	best := -1
	for i := range dims {
		if best < 0 || strongerDim(dims[i], dims[best]) {
			best = i
		}
	}
	return best
}

// strongerDim says whether d is a stronger anomaly than e (see lowest).
// Between two rejections, one the test made on samples of both runs beats
// one that comes from the variable never being sampled in the normal run.
func strongerDim(d, e DimResult) bool {
	switch {
	case d.Discount != e.Discount:
		return d.Discount < e.Discount
	case d.Rejected != e.Rejected:
		return d.Rejected
	case d.unsampled() != e.unsampled():
		return !d.unsampled()
	case math.Abs(d.Hellinger-e.Hellinger) > hellingerTie:
		return d.Hellinger > e.Hellinger
	}
	return dimPref(d.Dimension) < dimPref(e.Dimension)
}

// unsampled says whether the dimension was rejected only because the
// variable was never sampled in the normal run.
func (d DimResult) unsampled() bool { return d.Note == noNormal }

const noNormal = "no normal samples"

func dimPref(d Dimension) int {
	switch d {
	case DimValue:
		return 0
	case DimDuration:
		return 1
	}
	return 2
}

// comparison is a variable against one normal run.
type comparison struct {
	dims   []DimResult
	chosen int
}

func (c comparison) discount() float64 { return c.dims[c.chosen].Discount }

// discountVar computes a variable's discount: per normal run, the lowest of
// its dimensions (duration only for pointers; no value dimension for the
// names vProf deems meaningless); over several normal runs, the median
// (the lower one for an even count), as vProf's code does.
func (o Options) discountVar(v *variable, normals int) comparison {
	if normals < 1 {
		normals = 1
	}
	cs := make([]comparison, normals)
	empty := &series{}
	for i := range cs {
		x := empty
		if i < len(v.normal) && v.normal[i] != nil {
			x = v.normal[i]
		}
		sampled := x.values.len() > 0 || x.durations.len() > 0
		var dims []DimResult
		if !v.src.Pointer {
			if !meaningless(v.src.Name, v.src.Type) {
				dims = append(dims, o.compareDim(DimValue, x.values.floats(), v.buggy.values.floats(), sampled))
			}
			dims = append(dims, o.compareDim(DimDelta, x.deltas.floats(), v.buggy.deltas.floats(), sampled))
		}
		dims = append(dims, o.compareDim(DimDuration, x.durations.floats(), v.buggy.durations.floats(), sampled))
		cs[i] = comparison{dims: dims, chosen: lowest(dims)}
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].discount() < cs[j].discount() })
	return cs[(len(cs)-1)/2]
}
