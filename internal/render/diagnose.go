package render

import (
	"encoding/json"
	"fmt"
	"github.com/culprit-dev/culprit/internal/analysis/vprof"
	"io"
	"path/filepath"
	"strings"
)

// diagJSONDoc is the JSON form of a Result (docs/report-json.md).
type diagJSONDoc struct {
	Method   vprof.Method    `json:"method"`
	Inputs   []vprof.Input   `json:"inputs"`
	Normal   []vprof.Run     `json:"normal"`
	Buggy    []vprof.Run     `json:"buggy"`
	Options  diagJSONOptions `json:"options"`
	History  bool            `json:"history"`
	CostUnit string          `json:"cost_unit"`
	Warnings []string        `json:"warnings"`
	Notes    []string        `json:"notes"`
	Schema   diagJSONSchema  `json:"schema"`
	// Functions are ordered by rank.
	Functions []vprof.FunctionResult `json:"functions"`
}

type diagJSONOptions struct {
	Alpha           float64 `json:"alpha"`
	DefaultDiscount float64 `json:"default_discount"`
	ValidDiscount   float64 `json:"valid_discount"`
	MaxTestSamples  int     `json:"max_test_samples"`
}

type diagJSONSchema struct {
	OnlyNormal []string `json:"only_normal"`
	OnlyBuggy  []string `json:"only_buggy"`
}

// DiagnoseJSON writes the result as JSON, every function included.
func DiagnoseJSON(w io.Writer, r *vprof.Result) error {
	d := diagJSONDoc{Method: r.Method, Inputs: r.Inputs, Normal: r.Normal, Buggy: r.Buggy, History: r.History, CostUnit: "s",
		Options: diagJSONOptions{Alpha: r.Options.Alpha, DefaultDiscount: r.Options.DefaultDiscount,
			ValidDiscount: r.Options.ValidDiscount, MaxTestSamples: r.Options.MaxTestSamples},
		Warnings: diagNonNil(r.Warnings), Notes: diagNonNil(r.Notes), Schema: diagJSONSchema{OnlyNormal: diagNonNil(r.OnlyNormal), OnlyBuggy: diagNonNil(r.OnlyBuggy)},
		Functions: r.Functions}
	if d.Functions == nil {
		d.Functions = []vprof.FunctionResult{}
	}
	if d.Inputs == nil {
		d.Inputs = []vprof.Input{}
	}
	for i := range d.Functions {
		if d.Functions[i].Lines == nil {
			d.Functions[i].Lines = []vprof.Line{}
		}
		if d.Functions[i].Blocks == nil {
			d.Functions[i].Blocks = []vprof.Block{}
		}
		if v := d.Functions[i].Var; v != nil && v.Anomaly != nil && v.Anomaly.Blocks == nil {
			v.Anomaly.Blocks = []vprof.Block{}
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(diagSanitize(d))
}

func diagNonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// diagSanitize replaces infinities and NaNs, which JSON cannot hold, by 0 in
// the statistics of the variables.
func diagSanitize(d diagJSONDoc) diagJSONDoc {
	fix := func(x *float64) {
		if !isFinite(*x) {
			*x = 0
		}
	}
	seen := map[*vprof.VariableResult]bool{}
	for i := range d.Functions {
		v := d.Functions[i].Var
		if v == nil || seen[v] {
			continue
		}
		seen[v] = true
		for j := range v.Dimensions {
			fix(&v.Dimensions[j].T)
			fix(&v.Dimensions[j].Critical)
		}
		if a := v.Anomaly; a != nil {
			fix(&a.NormalMedian)
			fix(&a.BuggyMedian)
			fix(&a.NormalMin)
			fix(&a.NormalMax)
		}
	}
	return d
}

// DiagnoseText writes the ranking, top functions only (0: all).
func DiagnoseText(w io.Writer, r *vprof.Result, top int) error {
	var b strings.Builder
	title := "diagnosis (differential: growth of each function's share of CPU time, weighted by evidence)"
	if r.Method == vprof.MethodVprof {
		title = "vProf diagnosis"
	}
	fmt.Fprintf(&b, "%s: %s against %s\n", title, diagPlural(len(r.Buggy), "buggy run"), diagPlural(len(r.Normal), "normal run"))
	for _, group := range []struct {
		name string
		runs []vprof.Run
	}{{"normal", r.Normal}, {"buggy", r.Buggy}} {
		for _, run := range group.runs {
			fmt.Fprintf(&b, "  %-6s %s: %d CPU samples (%s), %d values of %d variables", group.name, run.Path, run.Samples,
				diagSeconds(run.CPU), run.Values, run.Variables)
			if run.Executable != "" {
				fmt.Fprintf(&b, "; %s", run.Executable)
			}
			b.WriteString("\n")
		}
	}
	hist := "off (needs at least 2 runs of each kind)"
	if r.History {
		hist = "on, for functions without variables"
	}
	fmt.Fprintf(&b, "  α %g, DefaultDiscount %g, ValidDiscount %g; hist-discounter %s\n",
		r.Options.Alpha, r.Options.DefaultDiscount, r.Options.ValidDiscount, hist)
	if r.Method == vprof.MethodVprof {
		b.WriteString("  cost: CPU time per buggy run; raw = max(PC cost, variable cost); calibrated = (1 − discount) · raw\n")
	} else {
		b.WriteString("  score: (1 − discount) · growth of the function's share of CPU time (its whole call subtree); discount 0 with evidence from its variables or own time\n")
		for _, in := range r.Inputs {
			name := in.Name
			if in.Function != "" && in.Function != "#global" {
				name = in.Function + ":" + in.Name
			}
			fmt.Fprintf(&b, "  input that differs: %s = %s normally, %s in the buggy runs (constant in each run)\n", name, diagNum(in.Normal), diagNum(in.Buggy))
		}
	}
	for _, wn := range r.Warnings {
		fmt.Fprintf(&b, "  warning: %s\n", wn)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "  note: %s\n", n)
	}
	b.WriteString("\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	n := len(r.Functions)
	if top > 0 && top < n {
		n = top
	}
	b.Reset()
	if r.Method != vprof.MethodVprof {
		fmt.Fprintf(&b, "%4s  %7s  %7s  %7s  %-9s  %-18s  %s\n", "rank", "score", "buggy", "normal", "evidence", "pattern", "function")
		for i := 0; i < n; i++ {
			f := r.Functions[i]
			fmt.Fprintf(&b, "%4d  %6.1f%%  %6.1f%%  %6.1f%%  %-9s  %-18s  %s\n", f.Rank, 100*f.Score, 100*f.Share.Buggy, 100*f.Share.Normal,
				f.Evidence, f.Pattern, diagFuncLabel(f))
			fmt.Fprintf(&b, "%6s%s\n", "", f.Why)
		}
		if n < len(r.Functions) {
			fmt.Fprintf(&b, "... %d more functions (--top 0 shows all)\n", len(r.Functions)-n)
		}
		_, err := io.WriteString(w, b.String())
		return err
	}
	fmt.Fprintf(&b, "%4s  %10s  %10s  %8s  %-9s  %-18s  %s\n", "rank", "calibrated", "raw", "discount", "dimension", "pattern", "function")
	for i := 0; i < n; i++ {
		f := r.Functions[i]
		fmt.Fprintf(&b, "%4d  %10s  %10s  %8.2f  %-9s  %-18s  %s\n", f.Rank, diagSeconds(f.Calibrated), diagSeconds(f.Raw), f.Discount,
			f.Dimension, f.Pattern, diagFuncLabel(f))
		for _, line := range diagDetails(f) {
			fmt.Fprintf(&b, "%6s%s\n", "", line)
		}
	}
	if n < len(r.Functions) {
		fmt.Fprintf(&b, "... %d more functions (--top 0 shows all)\n", len(r.Functions)-n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func diagFuncLabel(f vprof.FunctionResult) string {
	obj := f.Object
	if obj != "" && !strings.HasPrefix(obj, "[") {
		obj = filepath.Base(obj)
	}
	if obj == "" {
		return f.Name
	}
	return f.Name + " (" + obj + ")"
}

// diagDetails are the lines printed under a function: its most anomalous
// variable compared, and where the anomalous values were read.
func diagDetails(f vprof.FunctionResult) []string {
	var out []string
	switch {
	case f.Var != nil:
		out = append(out, diagSummary(f.Var))
		if a := f.Var.Anomaly; a != nil && f.Var.Anomalous && len(a.Lines) > 0 {
			of := a.Outside
			if of == 0 {
				of = a.Over // only the mix changed: where the over-represented values were read
			}
			var parts []string
			for i, l := range a.Lines {
				if i == 5 {
					parts = append(parts, fmt.Sprintf("… %d more lines", len(a.Lines)-5))
					break
				}
				parts = append(parts, fmt.Sprintf("%s (%s)", l.String(), diagPercent(l.Samples, of)))
			}
			out = append(out, "seen at: "+strings.Join(parts, ", "))
			if len(a.Blocks) > 0 {
				parts = parts[:0]
				for i, bl := range a.Blocks {
					if i == 5 {
						parts = append(parts, fmt.Sprintf("… %d more blocks", len(a.Blocks)-5))
						break
					}
					parts = append(parts, fmt.Sprintf("%s %s (%s)", bl.Function, bl, diagPercent(bl.Samples, of)))
				}
				out = append(out, "in blocks: "+strings.Join(parts, ", "))
			}
		}
	case f.History != nil && f.History.C > 0:
		out = append(out, fmt.Sprintf("no sampled variable; ranked higher in the normal run in %d of %d run pairs", f.History.H, f.History.C))
	default:
		out = append(out, "no sampled variable: not discounted")
	}
	return out
}

// diagSummary compares a variable's normal and buggy samples in one line, e.g.
// "available_mem: normal median 5.1e+05, buggy 0; 100% of buggy samples
// outside the normal range [4.9e+05, 5.3e+05]".
func diagSummary(v *vprof.VariableResult) string {
	name := v.Name
	var what []string
	if v.Global {
		what = append(what, "global")
	}
	if v.Pointer {
		what = append(what, "pointer")
	}
	if v.Tags != "" && v.Tags != "none" {
		what = append(what, v.Tags)
	}
	if len(what) > 0 {
		name += " [" + strings.Join(what, " ") + "]"
	}
	a := v.Anomaly
	if a == nil {
		return fmt.Sprintf("%s: discount %.2f (%s)", name, v.Discount, v.Dimension)
	}
	var quantity, unit string
	switch a.Dimension {
	case vprof.DimValue:
		quantity = ""
	case vprof.DimDelta:
		quantity = "change between samples, "
	case vprof.DimDuration:
		quantity = "samples a value lasts, "
		unit = ""
	}
	if !a.HasNormal {
		return fmt.Sprintf("%s: never sampled in the normal runs; %sbuggy median %s%s over %d samples", name, quantity, diagNum(a.BuggyMedian), unit, a.Considered)
	}
	s := fmt.Sprintf("%s: %snormal median %s, buggy %s", name, quantity, diagNum(a.NormalMedian), diagNum(a.BuggyMedian))
	if !v.Anomalous {
		return s + "; distributions alike (DefaultDiscount)"
	}
	s += fmt.Sprintf("; %s of buggy samples outside the normal range [%s, %s]",
		diagPercent(a.Outside, a.Considered), diagNum(a.NormalMin), diagNum(a.NormalMax))
	if a.Outside == 0 && a.Over > 0 {
		s += fmt.Sprintf(", %s in values the buggy runs over-represent", diagPercent(a.Over, a.Considered))
	}
	return s
}

func diagNum(x float64) string { return vprof.FormatValue(x) }

func diagPercent(n, total int) string {
	if total == 0 {
		return "0%"
	}
	p := 100 * float64(n) / float64(total)
	if p > 0 && p < 1 {
		return fmt.Sprintf("%.1f%%", p)
	}
	return fmt.Sprintf("%.0f%%", p)
}

func diagPlural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// diagSeconds formats CPU seconds: 1.23s, 45.6ms, 789µs.
func diagSeconds(s float64) string {
	switch {
	case s == 0:
		return "0"
	case s >= 1:
		return fmt.Sprintf("%.3gs", s)
	case s >= 1e-3:
		return fmt.Sprintf("%.3gms", s*1e3)
	}
	return fmt.Sprintf("%.3gµs", s*1e6)
}
