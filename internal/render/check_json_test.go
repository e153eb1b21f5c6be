package render

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/culprit-dev/culprit/internal/analysis/check"
)

// A function new in the target has an infinite ratio and severity, and
// two sides without spread an infinite Z: JSON has no infinities, so
// each is null, and the rest is written.
func TestCheckJSONNotFinite(t *testing.T) {
	base := &check.Model{Kind: "linear", R2: math.Inf(-1)}
	r := check.Result{Pairs: 1, Functions: 1, Changes: []check.Change{{
		Function: "scan", Kind: "degradation", Severity: math.Inf(1), Z: math.Inf(1), Confidence: math.NaN(),
		TargetNS: 5e6, Base: base,
		Methods: []check.Method{{Method: "average-amount", Verdict: "degradation", Value: math.Inf(1)},
			{Method: "two-sample", Verdict: "degradation", Value: 4.5}},
	}}}
	var b bytes.Buffer
	if err := CheckJSON(&b, CheckHeader{Base: "a", Target: "b"}, r); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Changes []struct {
			Function   string   `json:"function"`
			Severity   *float64 `json:"severity"`
			Z          *float64 `json:"z"`
			Confidence *float64 `json:"confidence"`
			TargetNS   float64  `json:"target_ns"`
			Base       *struct {
				R2 float64 `json:"r2"`
			} `json:"base_model"`
			Methods []struct {
				Method string   `json:"method"`
				Value  *float64 `json:"value"`
			} `json:"methods"`
		} `json:"changes"`
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if len(got.Changes) != 1 {
		t.Fatalf("%d changes\n%s", len(got.Changes), b.String())
	}
	c := got.Changes[0]
	if c.Function != "scan" || c.Severity != nil || c.Z != nil || c.Confidence != nil || c.TargetNS != 5e6 {
		t.Errorf("change %+v\n%s", c, b.String())
	}
	if c.Base == nil || c.Base.R2 != 0 || !math.IsInf(base.R2, -1) {
		t.Errorf("base model %+v (the result's own R2 %v must stay)", c.Base, base.R2)
	}
	if len(c.Methods) != 2 || c.Methods[0].Value != nil || c.Methods[1].Value == nil || *c.Methods[1].Value != 4.5 {
		t.Errorf("methods %+v", c.Methods)
	}
}
