package e2e

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

type exprsJSON struct {
	Samples int `json:"samples"`
	Exprs   []struct {
		Expr     string  `json:"expr"`
		Function string  `json:"function"`
		Count    int     `json:"count"`
		Missing  int     `json:"missing"`
		Mean     float64 `json:"mean"`
		Min      float64 `json:"min"`
		Max      float64 `json:"max"`
		P50      float64 `json:"p50"`
	} `json:"exprs"`
}

func exprReport(t *testing.T, args ...string) exprsJSON {
	t.Helper()
	out := mustRun(t, append([]string{"report", "--exprs", "--format", "json"}, args...)...)
	var e exprsJSON
	if err := json.Unmarshal([]byte(out), &e); err != nil {
		t.Fatalf("report --exprs JSON: %v\n%s", err, out)
	}
	return e
}

// PCT's `profile -gdb -expr 'hier-test@worker@n' int-avg hier-test`: the
// time-weighted mean of n is (1e7·1 + 2e7·2)/3, and that of the loop counter
// i is half of it (PCT printed 8.38e+06).
func TestExprHierarchicalMean(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "hier-O2", []string{"hier.c"}, "-O2", "-g")
	out := rec(t)
	mustRun(t, "record", "--expr", "hier*@worker@n", "--expr", "hier*@worker@i", "--expr", "hier*@dispatch_*@n", "-o", out, "--", bin, "8")
	e := exprReport(t, out)
	if len(e.Exprs) != 3 {
		t.Fatalf("want three expressions, got %+v", e.Exprs)
	}
	n, i, none := e.Exprs[0], e.Exprs[1], e.Exprs[2]
	// dispatch_N is on every stack but has no n: missing, never guessed.
	if none.Function != "dispatch_*" || none.Count != 0 || none.Missing < e.Samples*9/10 {
		t.Errorf("dispatch_*@n: %+v", none)
	}
	want := (1e7*1 + 2e7*2) / 3
	if n.Count < e.Samples*9/10 || math.Abs(n.Mean-want)/want > 0.10 || n.Min != 1e7 || n.Max != 2e7 {
		t.Errorf("n: %+v, want %d samples with a time-weighted mean of %.4g", n, e.Samples, want)
	}
	if math.Abs(i.Mean-want/2)/(want/2) > 0.10 {
		t.Errorf("i: mean %.4g, want about %.4g", i.Mean, want/2)
	}
}
