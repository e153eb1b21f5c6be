package exprs

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/culprit-dev/culprit/internal/loader"
	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
)

// writeRecording writes a recording with CPU samples of given periods and,
// at each, a value of expression 1 (missing where v is NaN) and a count.
func writeRecording(t *testing.T, periods []uint64, vals []float64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x.rec")
	w, err := recording.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(&recording.Meta{Tool: "test", Event: "cpu-clock"})
	w.Write(&recording.ValueSource{ID: 1, Class: recording.SourceExpression, Name: "n", Function: "worker"})
	w.Write(&recording.ValueSource{ID: 2, Class: recording.SourceCounter, Name: "ticks"})
	w.Write(&recording.ValueSource{ID: 3, Class: recording.SourceVariable, Name: "never_sampled", Function: "#global"})
	tm := uint64(1000)
	for i, p := range periods {
		tm += p
		w.WriteSample(recording.Sample{Time: tm, PID: 1, TID: 1, Period: p}, nil, []uint64{0x401000})
		v := recording.Value{Time: tm, PID: 1, TID: 1, Source: 1, Type: recording.ValueInt, Bits: uint64(int64(vals[i]))}
		if math.IsNaN(vals[i]) {
			v.Type, v.Bits = recording.ValueMissing, 0
		}
		w.Write(&v)
		w.Write(&recording.Value{Time: tm, PID: 1, TID: 1, Source: 2, Type: recording.ValueUint, Bits: 1})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func load(t *testing.T, path string) *profile.Profile {
	p, err := loader.Load([]string{path}, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSummaryTimeWeighted(t *testing.T) {
	// PCT's hier-test: n = 1e7 for a third of the time, 2e7 for two thirds;
	// with unequal (jittered) periods the mean must weigh by CPU time.
	periods := []uint64{1e6, 1e6, 3e6, 1e6, 2e6}
	vals := []float64{1e7, 1e7, 2e7, math.NaN(), 2e7}
	list := Summarize(load(t, writeRecording(t, periods, vals)), Options{Bins: 4, Series: 10})
	if len(list) != 3 {
		t.Fatalf("want the expression, the counter and the variable, got %+v", list)
	}
	if v := list[2]; v.Class != "variable" || v.Count != 0 || v.Missing != 0 {
		t.Errorf("variable never sampled: %+v", v)
	}
	s := list[0]
	if s.Expr != "n" || s.Count != 4 || s.Missing != 1 {
		t.Errorf("count/missing: %+v", s)
	}
	want := (1e7*1e6 + 1e7*1e6 + 2e7*3e6 + 2e7*2e6) / 7e6
	if math.Abs(s.Mean-want) > 1e-6 {
		t.Errorf("time-weighted mean %v, want %v", s.Mean, want)
	}
	if s.Min != 1e7 || s.Max != 2e7 || s.P50 != 1.5e7 {
		t.Errorf("min/max/p50: %+v", s)
	}
	total := 0
	for _, b := range s.Hist {
		total += b.Count
	}
	if len(s.Hist) != 4 || total != 4 || s.Hist[0].Count != 2 || s.Hist[3].Count != 2 {
		t.Errorf("histogram %+v", s.Hist)
	}
	if len(s.Series) != 4 || s.Series[0].T >= s.Series[3].T {
		t.Errorf("series %+v", s.Series)
	}
	if c := list[1]; c.Class != "counter" || c.Count != 5 || c.Mean != 1 {
		t.Errorf("counter %+v", c)
	}
}

func TestSeriesDownsampled(t *testing.T) {
	n := 1000
	periods := make([]uint64, n)
	vals := make([]float64, n)
	for i := range periods {
		periods[i] = 1e6
		vals[i] = float64(i)
	}
	s := Summarize(load(t, writeRecording(t, periods, vals)), Options{Series: 10})[0]
	if len(s.Series) != 10 || s.Series[0].Value != 49.5 || s.Series[9].Value != 949.5 {
		t.Errorf("series %+v", s.Series)
	}
	if math.Abs(s.P90-899.1) > 1e-9 || math.Abs(s.P99-989.01) > 1e-9 {
		t.Errorf("p90 %v p99 %v", s.P90, s.P99)
	}
}

func TestHistograms(t *testing.T) {
	mk := func(vals ...uint64) *profile.Profile {
		p := &profile.Profile{ValueSources: []recording.ValueSource{{Name: "other", Function: "f"}, {Name: "n", Function: "f"}}}
		for _, v := range vals {
			p.Values = append(p.Values, profile.Value{Source: 1, Type: recording.ValueUint, Bits: v})
			p.Values = append(p.Values, profile.Value{Source: 0, Type: recording.ValueUint, Bits: 1000})
		}
		return p
	}
	h, err := Histograms([]*profile.Profile{mk(0, 1, 2), mk(8, 10, 10)}, "n", "f", 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 2 || len(h[0]) != 5 || len(h[1]) != 5 {
		t.Fatalf("histograms %+v, want two of 5 bins", h)
	}
	// Common range 0..10, bins of 2: [0,2) [2,4) [4,6) [6,8) [8,10].
	want := [][]int{{2, 1, 0, 0, 0}, {0, 0, 0, 0, 3}}
	for i := range want {
		for k, c := range want[i] {
			if h[i][k].Count != c {
				t.Errorf("run %d bin %d [%g, %g): %d values, want %d", i, k, h[i][k].Lo, h[i][k].Hi, h[i][k].Count, c)
			}
		}
	}
	if h[1][4].Hi != 10 {
		t.Errorf("last bin ends at %g, want 10", h[1][4].Hi)
	}
	if h, _ := Histograms([]*profile.Profile{mk(1)}, "missing", "f", 5); h != nil {
		t.Errorf("histograms of a variable without values")
	}
	if h, _ := Histograms([]*profile.Profile{mk(3, 3)}, "n", "f", 5); len(h[0]) != 1 || h[0][0].Count != 2 {
		t.Errorf("one value: %+v, want one bin of 2", h)
	}
}

// TestSeriesBands checks the points of a series past n values (each the
// mean of a slice, at its middle value's time, with the slice's least
// and greatest value) and up to n (each a value, no bands).
func TestSeriesBands(t *testing.T) {
	times := make([]uint64, 1000)
	vals := make([]float64, 1000)
	for i := range vals {
		times[i], vals[i] = uint64(5e9+i*1e6), float64(i)
	}
	pts, bands := SeriesBands(times, vals, 5e9, 10)
	if len(pts) != 10 || len(bands) != 10 {
		t.Fatalf("%d points, %d bands of 1000 values in 10; want 10 each", len(pts), len(bands))
	}
	for i, pt := range pts {
		lo := float64(100 * i)
		if pt.Value != lo+49.5 || bands[i] != [2]float64{lo, lo + 99} || math.Abs(pt.T-(lo+49)/1000) > 1e-12 {
			t.Errorf("point %d: %+v, band %v; want mean %v at %v s, band %v to %v", i, pt, bands[i], lo+49.5, (lo+49)/1000, lo, lo+99)
		}
	}
	if pts, bands := SeriesBands(times[:10], vals[:10], 5e9, 10); len(pts) != 10 || bands != nil || pts[3].Value != 3 {
		t.Errorf("10 values in 10 points: %d points, bands %v; want each value, no bands", len(pts), bands)
	}
}
