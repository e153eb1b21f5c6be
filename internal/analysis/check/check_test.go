package check

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// runs builds one side: three input sizes, each function's samples given by
// a function of n (1 sample = 1 ms).
func runs(funcs map[string]func(n float64) float64) []Run {
	var out []Run
	for _, n := range []float64{1, 4, 16} {
		r := Run{Pair: fmt.Sprintf("prog n=%g", n), Series: "prog", X: n, HasX: true}
		for name, f := range funcs {
			s := f(n)
			r.Funcs = append(r.Funcs, Func{Name: name, Object: "prog", Samples: int64(s), Amount: s * 1e6})
		}
		out = append(out, r)
	}
	return out
}

func TestCompareNamesOnlyWhatChanged(t *testing.T) {
	base := runs(map[string]func(float64) float64{
		"setup":    func(n float64) float64 { return 30 * n },
		"scan":     func(n float64) float64 { return 20 * n },
		"checksum": func(n float64) float64 { return 40 * n },
		"main":     func(n float64) float64 { return 3 },
		"tiny":     func(n float64) float64 { return 2 },
	})
	target := runs(map[string]func(float64) float64{
		"setup":    func(n float64) float64 { return 30*n + 3 }, // within noise and threshold
		"scan":     func(n float64) float64 { return 20 * n * n },
		"checksum": func(n float64) float64 { return 10 * n },
		"main":     func(n float64) float64 { return 4 },
		"tiny":     func(n float64) float64 { return 6 }, // tripled, but within counting noise
	})
	res := Compare(base, target, Options{XName: "n"})
	if res.Pairs != 3 || len(res.Unpaired) != 0 || res.Functions != 5 {
		t.Fatalf("pairs %d, unpaired %v, functions %d", res.Pairs, res.Unpaired, res.Functions)
	}
	if len(res.Changes) != 2 {
		t.Fatalf("changes: %+v", res.Changes)
	}
	d, o := res.Changes[0], res.Changes[1]
	if d.Function != "scan" || d.Kind != "degradation" || d.Base.Kind != "linear" || d.Target.Kind != "quadratic" {
		t.Errorf("first change %+v, base %+v, target %+v", d, d.Base, d.Target)
	}
	if d.Location != "n=4, n=16" {
		t.Errorf("degradation located at %q", d.Location)
	}
	if d.Confidence != 1 {
		t.Errorf("degradation confidence %.2f: %+v", d.Confidence, d.Methods)
	}
	if o.Function != "checksum" || o.Kind != "optimization" || o.Base.Kind != "linear" || o.Target.Kind != "linear" {
		t.Errorf("second change %+v", o)
	}
	if o.Severity > -0.74 || o.Severity < -0.76 {
		t.Errorf("optimization severity %.3f, want -0.75", o.Severity)
	}
	if !res.Degraded(0.5) || res.Degraded(100) {
		t.Error("Degraded threshold wrong")
	}
}

func TestUnpaired(t *testing.T) {
	base := []Run{{Pair: "a", Funcs: []Func{{Name: "f", Samples: 10, Amount: 1}}}}
	target := []Run{{Pair: "b", Funcs: []Func{{Name: "f", Samples: 10, Amount: 1}}}}
	res := Compare(base, target, Options{})
	if res.Pairs != 0 || len(res.Unpaired) != 2 || len(res.Changes) != 0 {
		t.Errorf("%+v", res)
	}
}

// TestMannWhitney checks the z of the normal approximation against values
// computed by hand (scipy.stats.mannwhitneyu(y, x, use_continuity=False,
// method="asymptotic") gives the same U and z).
func TestMannWhitney(t *testing.T) {
	// No overlap, 3 against 3: U = 9, mean 4.5, σ² = 9·7/12 = 5.25.
	if z := MannWhitneyZ([]float64{1, 2, 3}, []float64{4, 5, 6}); math.Abs(z-4.5/math.Sqrt(5.25)) > 1e-12 {
		t.Errorf("z = %g", z)
	}
	// Ties: x = {1, 2, 2}, y = {2, 3, 3}: ranks 1, 3, 3 | 3, 5.5, 5.5; U = 14 − 6 = 8;
	// ties (3 of 2, 2 of 3): Σ(t³−t) = 24 + 6 = 30; σ² = 9/12·(7 − 30/30) = 4.5.
	if z := MannWhitneyZ([]float64{1, 2, 2}, []float64{2, 3, 3}); math.Abs(z-3.5/math.Sqrt(4.5)) > 1e-12 {
		t.Errorf("z with ties = %g", z)
	}
	if z := MannWhitneyZ([]float64{1, 1}, []float64{1, 1}); z != 0 {
		t.Errorf("all equal: z = %g", z)
	}
}

// With several runs per side, the test uses run-to-run variation: a change
// as large as the runs' own spread is not reported, though its sample
// counts differ beyond counting noise.
func TestSeveralRunsPerSide(t *testing.T) {
	side := func(amounts ...float64) []Run {
		var out []Run
		for _, a := range amounts {
			out = append(out, Run{Pair: "p", Funcs: []Func{{Name: "f", Samples: int64(a), Amount: a * 1e6}}})
		}
		return out
	}
	noisy := Compare(side(1000, 1400, 1800, 1200), side(1700, 1300, 2100, 1900), Options{}) // +30%, Poisson z 14, Mann–Whitney z 1.4
	if len(noisy.Changes) != 0 {
		t.Errorf("a change within the runs' spread was reported: %+v", noisy.Changes)
	}
	clear := Compare(side(1000, 1010, 990, 1005, 995), side(1500, 1510, 1490, 1505, 1495), Options{Z: 2.5})
	if len(clear.Changes) != 1 || clear.Changes[0].Kind != "degradation" {
		t.Errorf("a clear change over five runs each: %+v", clear.Changes)
	}
}

// TestBurstDoesNotDecide: three pairs of three runs each, the target 10%
// slower (under the threshold) and one target run per pair slowed 3× by
// a burst of another program. The mean would call it a 73% degradation;
// the median sees the 10%.
func TestBurstDoesNotDecide(t *testing.T) {
	var base, target []Run
	for _, n := range []string{"1", "2", "3"} {
		for i, a := range []float64{1000, 1002, 998} {
			base = append(base, Run{Pair: n, Funcs: []Func{{Name: "f", Samples: int64(a), Amount: a * 1e6}}})
			b := a * 1.1
			if i == 2 {
				b = a * 3
			}
			target = append(target, Run{Pair: n, Funcs: []Func{{Name: "f", Samples: int64(b), Amount: b * 1e6}}})
		}
	}
	if r := Compare(base, target, Options{}); len(r.Changes) != 0 {
		t.Errorf("a burst in one run of each pair decided the change: %+v", r.Changes)
	}
	if got := RunAmount([]float64{3, 1}, 4); got != 0.5 {
		t.Errorf("median of 3, 1 and two runs without the function: %g, want 0.5", got)
	}
}

// TestNameInTwoObjects: a function name in two objects of each target run
// (half its time in each) is one function with one amount per run, not two
// runs of half the amount.
func TestNameInTwoObjects(t *testing.T) {
	var base, target []Run
	for _, n := range []string{"1", "2", "3"} {
		for _, a := range []float64{1000, 1002, 998} {
			base = append(base, Run{Pair: n, Funcs: []Func{{Name: "f", Object: "a", Samples: int64(a), Amount: a * 1e6}}})
			half := Func{Name: "f", Samples: int64(a / 2), Amount: a / 2 * 1e6}
			inA, inB := half, half
			inA.Object, inB.Object = "a", "b"
			target = append(target, Run{Pair: n, Funcs: []Func{inA, inB}})
		}
	}
	if r := Compare(base, target, Options{}); len(r.Changes) != 0 {
		t.Errorf("a function split over two objects changed: %+v", r.Changes)
	}
}

// tracedRun is one traced run: work(n) for n = 1..60, three calls each,
// taking dur(n) ns, and other() at a constant 5 µs; every 50th call of
// work was preempted (20 ms).
func tracedRun(dur func(n float64) float64) Run {
	r := Run{Pair: "prog", Series: "prog", Traced: true}
	work := Func{Name: "work", Object: "prog", Args: map[string][]float64{}}
	other := Func{Name: "other", Object: "prog"}
	k := 0
	for rep := 0; rep < 3; rep++ {
		for n := 1.0; n <= 60; n++ {
			k++
			d := dur(n) * (1 + 0.02*math.Sin(float64(k)))
			if k%50 == 0 {
				d = 20e6
			}
			work.Durations = append(work.Durations, d)
			work.Args["n"] = append(work.Args["n"], n)
			work.Args["flags"] = append(work.Args["flags"], 0)
			other.Durations = append(other.Durations, 5000*(1+0.02*math.Cos(float64(k))))
		}
	}
	r.Funcs = []Func{work, other}
	return r
}

// TestCompareTracedCalls: one traced run per side; work's per-call time
// turns from linear to quadratic in its argument n. Check names work only,
// by its calls, with the model change against n.
func TestCompareTracedCalls(t *testing.T) {
	base := []Run{tracedRun(func(n float64) float64 { return 500 * n })}
	target := []Run{tracedRun(func(n float64) float64 { return 5000 + 60*n*n })}
	res := Compare(base, target, Options{XName: "n"})
	if len(res.Changes) != 1 {
		t.Fatalf("changes %+v", res.Changes)
	}
	c := res.Changes[0]
	if c.Function != "work" || c.Kind != "degradation" || c.Measure != PerCall || c.BaseCalls != 180 || c.TgtCalls != 180 {
		t.Fatalf("change %+v", c)
	}
	if c.Base == nil || c.Target == nil || c.Base.Kind != "linear" || c.Target.Kind != "quadratic" || c.Target.X != "arg:n" {
		t.Fatalf("models %+v → %+v (%+v)", c.Base, c.Target, c.Methods)
	}
	if c.Confidence != 1 {
		t.Errorf("confidence %.2f: %+v", c.Confidence, c.Methods)
	}
	if !strings.HasPrefix(c.Location, "n") || !strings.Contains(c.Location, "n>") {
		t.Errorf("location %q: the largest n changed most", c.Location)
	}
}

// withLoad gives every traced call of r an on-CPU time equal to what
// dur(n) says, and makes its wall durations the target side's load: each
// call of every function slowed by factor.
func withLoad(r Run, factor float64) Run {
	for i := range r.Funcs {
		f := &r.Funcs[i]
		f.CPU = append([]float64(nil), f.Durations...)
		for k := range f.Durations {
			f.Durations[k] *= factor
		}
	}
	return r
}

// TestCompareTracedCPU: the target ran on a machine busy enough to stretch
// every call's wall time by 2.5 while work alone changed on the CPU. By
// on-CPU time only work is named (PerCallCPU); by wall time (Options.Wall)
// other's calls seem 150% slower as well. A side without on-CPU times for
// some run falls back to wall time.
func TestCompareTracedCPU(t *testing.T) {
	base := []Run{withLoad(tracedRun(func(n float64) float64 { return 500 * n }), 1)}
	target := []Run{withLoad(tracedRun(func(n float64) float64 { return 5000 + 60*n*n }), 2.5)}
	res := Compare(base, target, Options{XName: "n"})
	if len(res.Changes) != 1 || res.Changes[0].Function != "work" || res.Changes[0].Measure != PerCallCPU {
		t.Fatalf("on the CPU: changes %+v", res.Changes)
	}
	if c := res.Changes[0]; c.Base == nil || c.Target == nil || c.Base.Kind != "linear" || c.Target.Kind != "quadratic" {
		t.Errorf("on the CPU: models %+v → %+v", c.Base, c.Target)
	}
	wall := Compare(base, target, Options{XName: "n", Wall: true})
	names := map[string]string{}
	for _, c := range wall.Changes {
		names[c.Function] = c.Measure
	}
	if len(names) != 2 || names["other"] != PerCall || names["work"] != PerCall {
		t.Errorf("wall time: changes %v, want work and other per call", names)
	}
	target[0].Funcs[1].CPU = nil
	mixed := Compare(base, target, Options{XName: "n"})
	for _, c := range mixed.Changes {
		if c.Function == "other" && c.Measure != PerCall {
			t.Errorf("other without on-CPU times on one side: measure %q", c.Measure)
		}
		if c.Function == "work" && c.Measure != PerCallCPU {
			t.Errorf("work: measure %q", c.Measure)
		}
	}
}

// A function sampled on one side only has an infinite (or zero) ratio, and
// a few stray samples in each run pass the counting-noise test: it is a
// change only when it holds NewShare of its side's time.
func TestNewFunctionNeedsAShare(t *testing.T) {
	base := runs(map[string]func(float64) float64{
		"setup":   func(n float64) float64 { return 300 * n },
		"gone":    func(n float64) float64 { return 4 },
		"gonehot": func(n float64) float64 { return 100 },
	})
	target := runs(map[string]func(float64) float64{
		"setup":  func(n float64) float64 { return 300 * n },
		"stray":  func(n float64) float64 { return 4 },
		"newhot": func(n float64) float64 { return 100 },
	})
	kinds := func(o Options) map[string]string {
		got := map[string]string{}
		for _, c := range Compare(base, target, o).Changes {
			got[c.Function] = c.Kind
		}
		return got
	}
	// Without a floor the stray samples are a degradation: the case the
	// floor exists for.
	if got := kinds(Options{XName: "n"}); got["stray"] != "degradation" || got["gone"] != "optimization" {
		t.Fatalf("without a floor: %v (the test's stray samples must pass the two-sample test)", got)
	}
	got := kinds(Options{XName: "n", NewShare: DefaultNewShare})
	want := map[string]string{"newhot": "degradation", "gonehot": "optimization"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("with a floor of %g: %v, want %v", DefaultNewShare, got, want)
	}
	for _, c := range Compare(base, target, Options{XName: "n", NewShare: DefaultNewShare}).Changes {
		if c.Function == "newhot" && !math.IsInf(c.Severity, 1) {
			t.Errorf("newhot severity %v, want +Inf (new)", c.Severity)
		}
	}
}
