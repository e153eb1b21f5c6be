package check

import (
	"fmt"
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
