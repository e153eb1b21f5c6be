package render

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/analysis/vprof"
)

// diagResult is a diagnosis built by hand: one anomalous function with
// lines and blocks, one without variables.
func diagResult(method vprof.Method) *vprof.Result {
	o := vprof.DefaultOptions()
	o.Method = method
	an := &vprof.Anomaly{Dimension: vprof.DimValue, NormalMedian: 508000, BuggyMedian: 0, NormalMin: 500000, NormalMax: 518000,
		HasNormal: true, Outside: 3100, Considered: 3100,
		Lines:  []vprof.Line{{File: "/src/hier.c", Line: 14, Function: "dispatch_2", Samples: 3100}},
		Blocks: []vprof.Block{{Object: "/bin/hier", Function: "blk", Start: 0x1130, End: 0x1150, Samples: 3100}}}
	v := &vprof.VariableResult{Name: "available_mem", Function: "dispatch_2", Tags: "cond,args", Discount: 0, Dimension: vprof.DimValue,
		Anomalous: true, Anomaly: an, Dimensions: []vprof.DimResult{{Dimension: vprof.DimValue, T: math.Inf(1), Critical: math.NaN()}}}
	return &vprof.Result{Options: o, Method: o.Method,
		Normal: []vprof.Run{{Path: "n.rec", Samples: 10, CPU: 0.01}}, Buggy: []vprof.Run{{Path: "b.rec", Samples: 20, CPU: 0.02}},
		Inputs: []vprof.Input{{Name: "pool_size", Function: "#global", Normal: 4096, Buggy: 256}},
		Functions: []vprof.FunctionResult{
			{Rank: 1, Name: "dispatch_2", Object: "/bin/hier", Calibrated: 3.1, Raw: 3.1, Dimension: vprof.DimValue, Variable: "available_mem",
				Pattern: vprof.WrongConstraint, Lines: an.Lines, Blocks: an.Blocks, Var: v, Score: 0.4, Evidence: vprof.EvidenceVariable,
				Why: "41% of buggy time vs 1% normal; available_mem: normal 500000..518000, buggy median 0 (cond,args) → wrong-constraint"},
			{Rank: 2, Name: "memcpy", Object: "/lib/libc.so.6", Calibrated: 1, Raw: 1, Dimension: vprof.DimNone, Pattern: vprof.NoPattern},
		}}
}

func TestDiagnoseText(t *testing.T) {
	var buf bytes.Buffer
	if err := DiagnoseText(&buf, diagResult(vprof.MethodVprof), 0); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"vProf diagnosis: 1 buggy run against 1 normal run",
		"available_mem [cond,args]: normal median 508000, buggy 0; 100% of buggy samples outside the normal range [500000, 518000]",
		"seen at: /src/hier.c:14 (100%)", "in blocks: blk 0x1130..0x1150 (100%)", "no sampled variable: not discounted",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("vprof text lacks %q:\n%s", want, buf.String())
		}
	}
	buf.Reset()
	if err := DiagnoseText(&buf, diagResult(vprof.MethodDifferential), 1); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"input that differs: pool_size = 4096 normally, 256 in the buggy runs",
		"variable   wrong-constraint    dispatch_2 (hier)",
		"      41% of buggy time vs 1% normal; available_mem", "... 1 more functions",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("differential text lacks %q:\n%s", want, buf.String())
		}
	}
}

func TestDiagnoseJSON(t *testing.T) {
	r := diagResult(vprof.MethodDifferential)
	r.Inputs = nil
	var buf bytes.Buffer
	if err := DiagnoseJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Method    string             `json:"method"`
		CostUnit  string             `json:"cost_unit"`
		Inputs    []vprof.Input      `json:"inputs"`
		Warnings  []string           `json:"warnings"`
		Options   map[string]float64 `json:"options"`
		Functions []struct {
			Name     string        `json:"name"`
			Why      string        `json:"why"`
			Evidence string        `json:"evidence"`
			Lines    []vprof.Line  `json:"lines"`
			Blocks   []vprof.Block `json:"blocks"`
		} `json:"functions"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if doc.Method != "differential" || doc.CostUnit != "s" || doc.Inputs == nil || doc.Warnings == nil || doc.Options["alpha"] != 0.05 {
		t.Errorf("doc: %+v", doc)
	}
	if len(doc.Functions) != 2 || doc.Functions[0].Why == "" || doc.Functions[0].Evidence != "variable" ||
		doc.Functions[1].Lines == nil || doc.Functions[1].Blocks == nil || doc.Functions[0].Blocks[0].Start != 0x1130 {
		t.Errorf("functions: %+v", doc.Functions)
	}
	// Infinite and NaN statistics are written as 0.
	if !strings.Contains(buf.String(), `"t": 0`) || strings.Contains(buf.String(), "Inf") {
		t.Errorf("statistics not sanitized:\n%s", buf.String())
	}
}
