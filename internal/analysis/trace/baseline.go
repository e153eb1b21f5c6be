package trace

import (
	"slices"
	"sort"

	"github.com/culprit-dev/culprit/internal/profile"
)

// FuncStats are Perun's Dynamic Stats of one function (Pavela 2020,
// §7.1.2): made from one traced run, used by the next. Durations are
// inclusive, in ns.
type FuncStats struct {
	SampledCount uint64  `json:"sampled_count"` // calls recorded
	Sample       uint64  `json:"sample"`        // every Sample-th call was recorded
	Count        uint64  `json:"count"`         // calls made: SampledCount + (SampledCount−1)·(Sample−1)
	Total        uint64  `json:"total"`
	Min          uint64  `json:"min"`
	Max          uint64  `json:"max"`
	Avg          float64 `json:"avg"`
	Median       float64 `json:"median"`
	Q1           float64 `json:"Q1"`
	Q3           float64 `json:"Q3"`
	IQR          float64 `json:"IQR"` // Q3 − Q1
	// ExclTotal is the exclusive time of the recorded calls (inclusive
	// less the traced callees'), not one of Perun's fields: culprit keeps
	// the functions that took most of a run (Hot).
	ExclTotal uint64 `json:"excl_total,omitempty"`
	// Partial marks a function whose probes dynamic probing removed
	// during the trace: its calls are those made while they were set, so
	// Count is a lower bound of the calls made (the larger of this trace's
	// and the earlier one's), and the durations a sample of them.
	Partial bool `json:"partial,omitempty"`
	// Callees are the traced functions it called, with how many calls
	// (for the wrapped filter).
	Callees map[string]uint64 `json:"callees,omitempty"`
}

// quantile is the linearly interpolated quantile of sorted v.
func quantile(v []uint64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	pos := q * float64(len(v)-1)
	i := int(pos)
	if i+1 >= len(v) {
		return float64(v[len(v)-1])
	}
	return float64(v[i]) + (pos-float64(i))*(float64(v[i+1])-float64(v[i]))
}

// DynamicStats computes each traced function's Dynamic Stats, by name
// (Summary.Stats of the profile's calls).
func DynamicStats(p *profile.Profile) map[string]FuncStats {
	return Summarize(p).Stats()
}

// Stats are the Dynamic Stats fields of amounts v (sorted in place)
// recorded every sample-th time (0 or 1: every time).
func Stats(v []uint64, sample uint64) FuncStats {
	if len(v) == 0 {
		return FuncStats{}
	}
	slices.Sort(v)
	s := FuncStats{SampledCount: uint64(len(v)), Sample: max(sample, 1), Min: v[0], Max: v[len(v)-1]}
	s.Count = s.SampledCount + (s.SampledCount-1)*(s.Sample-1)
	for _, x := range v {
		s.Total += x
	}
	s.Avg = float64(s.Total) / float64(len(v))
	s.Median, s.Q1, s.Q3 = quantile(v, 0.5), quantile(v, 0.25), quantile(v, 0.75)
	s.IQR = s.Q3 - s.Q1
	return s
}

// Baseline configures Perun's Dynamic Baseline (§7.2, Algorithm 2).
type Baseline struct {
	Soft, Hard uint64 // call thresholds: Table A.4's soft (10,000; 1,000 strict) and soft·100
	// Resolution: a median under it is not measurable (ns). The thesis
	// does not give it; see docs/trace.md.
	Resolution float64
	// ConstantRatio: IQR < median·ConstantRatio is a constant duration.
	ConstantRatio float64
	// WrapperRatio: a function that takes at least WrapperRatio of each
	// wrapper's median is left to its wrappers.
	WrapperRatio float64
}

// BaselineSoft and BaselineStrict are Table A.4's modes with culprit's
// choices for the values the thesis leaves open.
var (
	BaselineSoft   = Baseline{Soft: 10000, Hard: 1000000, Resolution: 2000, ConstantRatio: 0.1, WrapperRatio: 0.9}
	BaselineStrict = Baseline{Soft: 1000, Hard: 100000, Resolution: 2000, ConstantRatio: 0.1, WrapperRatio: 0.9}
)

// Excluded says why dynamic baseline leaves a function out.
type Excluded struct {
	Function string `json:"function"`
	Filter   string `json:"filter"` // call_limit, constant or wrapped
}

// DynamicBaseline returns the functions the stats of an earlier run leave
// out, in name order: called more than Hard times (call_limit); called
// more than Soft times with a median under Resolution or an IQR under
// median·ConstantRatio (constant); or, with at least one wrapper (a
// function whose only traced callee it is, with the same call count),
// taking at least WrapperRatio of every wrapper's median (wrapped: the
// wrapper stands for it). changed functions are never left out.
func DynamicBaseline(stats map[string]FuncStats, b Baseline, changed map[string]bool) []Excluded {
	wrappers := map[string][]string{}
	for name, s := range stats {
		if len(s.Callees) != 1 {
			continue
		}
		for callee := range s.Callees {
			if c, ok := stats[callee]; ok && callee != name && c.Count == s.Count {
				wrappers[callee] = append(wrappers[callee], name)
			}
		}
	}
	var names []string
	for n := range stats {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []Excluded
	for _, n := range names {
		if changed[n] {
			continue
		}
		s := stats[n]
		switch {
		case s.Count > b.Hard:
			out = append(out, Excluded{n, "call_limit"})
		case s.Count > b.Soft && (s.Median < b.Resolution || s.IQR < s.Median*b.ConstantRatio):
			out = append(out, Excluded{n, "constant"})
		case len(wrappers[n]) > 0:
			all := true
			for _, w := range wrappers[n] {
				all = all && s.Median >= stats[w].Median*b.WrapperRatio
			}
			if all {
				out = append(out, Excluded{n, "wrapped"})
			}
		}
	}
	return out
}

// Hot returns the functions whose exclusive time in the stats (scaled
// from the recorded calls to the calls made, for sampled ones) is over
// share of the run, root's inclusive time when the stats have root, else
// the sum of the exclusive times: the ones a profile must not lose,
// whatever an optimization says. The stats merge traces: a function
// traced again after its callees were left out has their time in its
// exclusive time, which the sum would count twice, and root's time does
// not.
func Hot(stats map[string]FuncStats, share float64, root string) map[string]bool {
	est := map[string]float64{}
	var total float64
	for f, s := range stats {
		if s.SampledCount == 0 {
			continue
		}
		e := float64(s.ExclTotal) * float64(max(s.Count, s.SampledCount)) / float64(s.SampledCount)
		est[f] = e
		total += e
	}
	if r, ok := stats[root]; ok && r.Total > 0 {
		total = float64(r.Total)
	}
	out := map[string]bool{}
	for f, e := range est {
		if total > 0 && e > share*total {
			out[f] = true
		}
	}
	return out
}
