// Package exprs summarizes sampled expressions, counters and variables (PCT's
// formatters, such as int-avg): for each, how often it was evaluated, how
// often it was missing, its time-weighted mean, extremes, quantiles, a
// histogram and a time series. It reads only profile.Profile.
package exprs

import (
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
)

// Summary describes one expression or counter.
type Summary struct {
	Expr     string  `json:"expr"`
	Function string  `json:"function,omitempty"` // the frame it was evaluated in
	Class    string  `json:"class"`              // "expression", "counter" or "variable" (--values)
	Count    int     `json:"count"`              // samples with a value
	Missing  int     `json:"missing"`            // samples where it could not be evaluated
	Mean     float64 `json:"mean"`               // weighted by the CPU time each sample stands for
	Min      float64 `json:"min"`
	Max      float64 `json:"max"`
	P50      float64 `json:"p50"`
	P90      float64 `json:"p90"`
	P99      float64 `json:"p99"`
	Hist     []Bin   `json:"hist,omitempty"`
	Series   []Point `json:"series,omitempty"`
	// Names are the values of an enum-typed expression by name, in
	// declaration order: how often each was seen and its share of the CPU
	// time the values stand for. Values that are no enumerator are left out.
	Names []Name `json:"names,omitempty"`
}

// Name is one enumerator of an enum-typed expression.
type Name struct {
	Name  string  `json:"name"`
	Value int64   `json:"value"`
	Count int     `json:"count"`
	Share float64 `json:"share"` // time-weighted fraction of the values, 0..1
}

// Bin is a histogram bucket [Lo, Hi) (the last one includes Hi).
type Bin struct {
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi"`
	Count int     `json:"count"`
}

// Point is a value at a time, in seconds from the profile's start.
type Point struct {
	T     float64 `json:"t"`
	Value float64 `json:"value"`
}

// Options select the optional parts.
type Options struct {
	Bins   int // histogram buckets (0: none)
	Series int // at most this many points per series (0: none)
}

type key struct {
	tid  uint32
	time uint64
}

// Summarize summarizes every expression and counter of p, in the order of
// their sources.
func Summarize(p *profile.Profile, o Options) []Summary {
	// The CPU time a value stands for is the period of the sample it was
	// taken at (samples can be jittered, so periods differ).
	// Without values there is nothing to weigh (and a million samples
	// would cost a map of a million entries).
	var period map[key]float64
	if len(p.Values) > 0 {
		period = make(map[key]float64, len(p.Samples))
		for _, s := range p.Samples {
			if s.Event == recording.EventCPU && s.Period > 0 {
				period[key{s.TID, s.Time}] = float64(s.Period)
			}
		}
	}
	type acc struct {
		vals, weights []float64
		times         []uint64
		missing       int
	}
	accs := make([]acc, len(p.ValueSources))
	for _, v := range p.Values {
		if v.Source < 0 || int(v.Source) >= len(accs) {
			continue
		}
		a := &accs[v.Source]
		if v.Missing() {
			a.missing++
			continue
		}
		w, ok := period[key{v.TID, v.Time}]
		if !ok {
			w = 1
		}
		a.vals = append(a.vals, v.Float64())
		a.weights = append(a.weights, w)
		a.times = append(a.times, v.Time)
	}
	var out []Summary
	for i, src := range p.ValueSources {
		a := accs[i]
		s := Summary{Expr: src.Name, Function: src.Function, Count: len(a.vals), Missing: a.missing, Class: "expression"}
		switch src.Class {
		case recording.SourceCounter:
			s.Class = "counter"
		case recording.SourceVariable:
			s.Class = "variable"
		}
		if len(a.vals) > 0 {
			var sum, wsum float64
			for j, v := range a.vals {
				sum += v * a.weights[j]
				wsum += a.weights[j]
			}
			s.Mean = sum / wsum
			sorted := append([]float64(nil), a.vals...)
			sort.Float64s(sorted)
			s.Min, s.Max = sorted[0], sorted[len(sorted)-1]
			s.P50, s.P90, s.P99 = quantile(sorted, 0.5), quantile(sorted, 0.9), quantile(sorted, 0.99)
			if o.Bins > 0 {
				s.Hist = histogram(sorted, o.Bins)
			}
			if o.Series > 0 {
				s.Series = Series(a.times, a.vals, p.StartTime, o.Series)
			}
			s.Names = names(src.Enum, a.vals, a.weights, wsum)
		}
		out = append(out, s)
	}
	return out
}

// names counts the values of an enum-typed source by enumerator; enum is
// ValueSource.Enum.
func names(enum string, vals, weights []float64, wsum float64) []Name {
	if enum == "" {
		return nil
	}
	var out []Name
	for _, pair := range strings.Split(enum, ",") {
		n, v, ok := strings.Cut(pair, "=")
		iv, err := strconv.ParseInt(v, 10, 64)
		if !ok || err != nil {
			return nil // not written by culprit: show numbers only
		}
		out = append(out, Name{Name: n, Value: iv})
	}
	for j, v := range vals {
		for k := range out {
			if float64(out[k].Value) == v {
				out[k].Count++
				out[k].Share += weights[j] / wsum
				break
			}
		}
	}
	return out
}

// Lookup returns the enumerator whose value is v.
func (s Summary) Lookup(v float64) (string, bool) {
	for _, n := range s.Names {
		if float64(n.Value) == v {
			return n.Name, true
		}
	}
	return "", false
}

// quantile of sorted values, by linear interpolation between closest ranks.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 1 {
		return sorted[0]
	}
	pos := q * float64(len(sorted)-1)
	i := int(math.Floor(pos))
	if i+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[i] + (sorted[i+1]-sorted[i])*(pos-float64(i))
}

func histogram(sorted []float64, bins int) []Bin {
	lo, hi := sorted[0], sorted[len(sorted)-1]
	if lo == hi {
		return []Bin{{Lo: lo, Hi: hi, Count: len(sorted)}}
	}
	width := (hi - lo) / float64(bins)
	out := make([]Bin, bins)
	for i := range out {
		out[i].Lo = lo + float64(i)*width
		out[i].Hi = lo + float64(i+1)*width
	}
	out[bins-1].Hi = hi
	for _, v := range sorted {
		i := int((v - lo) / width)
		if i >= bins {
			i = bins - 1
		}
		out[i].Count++
	}
	return out
}

// Series keeps at most n points of the values vals taken at times (in
// time order), averaging the values of each slice of them; T is seconds
// from start.
func Series(times []uint64, vals []float64, start uint64, n int) []Point {
	pts, _ := SeriesBands(times, vals, start, n)
	return pts
}

// SeriesBands is Series with, when its points average slices of the
// values (more than n of them), the least and greatest value of each
// point's slice; nil when each point is a value.
func SeriesBands(times []uint64, vals []float64, start uint64, n int) ([]Point, [][2]float64) {
	if len(vals) <= n {
		out := make([]Point, len(vals))
		for i := range vals {
			out[i] = Point{T: float64(times[i]-start) / 1e9, Value: vals[i]}
		}
		return out, nil
	}
	var out []Point
	var bands [][2]float64
	per := float64(len(vals)) / float64(n)
	for i := 0; i < n; i++ {
		a, b := int(float64(i)*per), int(float64(i+1)*per)
		if b > len(vals) {
			b = len(vals)
		}
		if a >= b {
			continue
		}
		sum, lo, hi := 0.0, vals[a], vals[a]
		for _, v := range vals[a:b] {
			sum += v
			lo, hi = min(lo, v), max(hi, v)
		}
		mid := times[(a+b-1)/2]
		out = append(out, Point{T: float64(mid-start) / 1e9, Value: sum / float64(b-a)})
		bands = append(bands, [2]float64{lo, hi})
	}
	return out, bands
}

// Histograms bins the values of one variable or expression (by name and
// the function it is evaluated in; "#global" for globals) in each profile
// over their common range, so that runs compare bin by bin: bins buckets,
// or one when every value is the same. It returns nil when no profile has
// a value of it, and an error when reading a profile's values again
// (Profile.EachValue) fails.
func Histograms(ps []*profile.Profile, name, function string, bins int) ([][]Bin, error) {
	vals := make([][]float64, len(ps))
	lo, hi, n := math.Inf(1), math.Inf(-1), 0
	for i, p := range ps {
		want := map[int32]bool{}
		for j, src := range p.ValueSources {
			if src.Name == name && src.Function == function {
				want[int32(j)] = true
			}
		}
		err := p.EachValue(func(v *profile.Value) bool {
			if !want[v.Source] || v.Missing() {
				return true
			}
			x := v.Float64()
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return true
			}
			vals[i] = append(vals[i], x)
			lo, hi, n = math.Min(lo, x), math.Max(hi, x), n+1
			return true
		})
		if err != nil {
			return nil, err
		}
	}
	if n == 0 || bins < 1 {
		return nil, nil
	}
	if lo == hi {
		bins = 1
	}
	out := make([][]Bin, len(ps))
	width := (hi - lo) / float64(bins)
	for i := range out {
		out[i] = make([]Bin, bins)
		for k := range out[i] {
			out[i][k] = Bin{Lo: lo + float64(k)*width, Hi: lo + float64(k+1)*width}
		}
		out[i][bins-1].Hi = hi
		for _, x := range vals[i] {
			k := bins - 1
			if width > 0 {
				k = min(int((x-lo)/width), bins-1)
			}
			out[i][k].Count++
		}
	}
	return out, nil
}
