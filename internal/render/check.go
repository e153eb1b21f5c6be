package render

import (
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/culprit-dev/culprit/internal/analysis/check"
)

// CheckHeader says what was compared.
type CheckHeader struct {
	Base, Target      string // commits
	BaseRuns, TgtRuns int
	Threshold, Z      float64
	FailAbove         float64
	XName             string
}

func severityText(s float64) string {
	if math.IsInf(s, 1) {
		return "new"
	}
	return fmt.Sprintf("%+.0f%%", 100*s)
}

// CheckText writes the changes found, one paragraph each, and a summary.
func CheckText(w io.Writer, h CheckHeader, r check.Result) error {
	fmt.Fprintf(w, "base %s (%d runs) → target %s (%d runs): %d paired workloads, %d functions\n",
		shortHash(h.Base), h.BaseRuns, shortHash(h.Target), h.TgtRuns, r.Pairs, r.Functions)
	for _, u := range r.Unpaired {
		fmt.Fprintf(w, "  not paired (on one side only): %s\n", strings.ReplaceAll(u, "\x00", " | "))
	}
	if len(r.Changes) == 0 {
		fmt.Fprintf(w, "no change above %.0f%% beyond noise\n", 100*h.Threshold)
		return nil
	}
	fmt.Fprintln(w)
	for _, c := range r.Changes {
		per := "per run"
		switch c.Measure {
		case check.PerCall:
			per = fmt.Sprintf("per call (%d → %d calls)", c.BaseCalls, c.TgtCalls)
		case check.PerCallCPU:
			per = fmt.Sprintf("on the CPU per call (%d → %d calls)", c.BaseCalls, c.TgtCalls)
		}
		fmt.Fprintf(w, "%s %s (%s): %s, %.3gs → %.3gs %s, confidence %.0f%%\n", strings.ToUpper(c.Kind[:1])+c.Kind[1:],
			c.Function, c.Object, severityText(c.Severity), c.BaseNS/1e9, c.TargetNS/1e9, per, 100*c.Confidence)
		if c.Base != nil && c.Target != nil {
			fmt.Fprintf(w, "  model      %s → %s (%s → %s)\n", c.Base.Kind, c.Target.Kind, c.Base.Formula, c.Target.Formula)
		}
		if c.Location != "" {
			fmt.Fprintf(w, "  where      %s\n", c.Location)
		}
		for _, m := range c.Methods {
			fmt.Fprintf(w, "  %-16s %-12s %s\n", m.Method, m.Verdict, m.Detail)
		}
	}
	deg, opt := 0, 0
	for _, c := range r.Changes {
		if c.Kind == "degradation" {
			deg++
		} else {
			opt++
		}
	}
	fmt.Fprintf(w, "\n%d degradations, %d optimizations\n", deg, opt)
	return nil
}

// CheckJSON writes the comparison as JSON.
func CheckJSON(w io.Writer, h CheckHeader, r check.Result) error {
	// JSON has no infinities: a figure that is not finite (a ratio or a
	// severity of a function new in the target, a Z over two sides
	// without spread) is null.
	type method struct {
		check.Method
		Value *float64 `json:"value"` // null: not finite
	}
	type change struct {
		check.Change
		Severity   *float64 `json:"severity"` // null: the function is new
		Z          *float64 `json:"z"`
		Confidence *float64 `json:"confidence"`
		Methods    []method `json:"methods"`
	}
	out := struct {
		Base      string   `json:"base"`
		Target    string   `json:"target"`
		BaseRuns  int      `json:"base_runs"`
		TgtRuns   int      `json:"target_runs"`
		Threshold float64  `json:"threshold"`
		Pairs     int      `json:"pairs"`
		Unpaired  []string `json:"unpaired"`
		Functions int      `json:"functions"`
		Changes   []change `json:"changes"`
	}{Base: h.Base, Target: h.Target, BaseRuns: h.BaseRuns, TgtRuns: h.TgtRuns, Threshold: h.Threshold,
		Pairs: r.Pairs, Unpaired: []string{}, Functions: r.Functions, Changes: []change{}}
	for _, u := range r.Unpaired {
		out.Unpaired = append(out.Unpaired, strings.ReplaceAll(u, "\x00", " | "))
	}
	for _, c := range r.Changes {
		x := change{Change: c, Severity: finite(c.Severity), Z: finite(c.Z), Confidence: finite(c.Confidence),
			Methods: []method{}}
		for _, m := range c.Methods {
			x.Methods = append(x.Methods, method{Method: m, Value: finite(m.Value)})
		}
		for _, m := range []**check.Model{&x.Base, &x.Target} {
			if *m != nil && !isFinite((*m).R2) {
				c := **m
				c.R2 = 0 // a model that explains nothing
				*m = &c
			}
		}
		out.Changes = append(out.Changes, x)
	}
	return writeJSON(w, out)
}

// finite is f, nil when it is not finite.
func finite(f float64) *float64 {
	if !isFinite(f) {
		return nil
	}
	return &f
}

// CheckJUnit writes the comparison as a JUnit XML report for CI: one test
// case per function compared that changed, failing for degradations at or
// above FailAbove, and one passing case for the rest.
func CheckJUnit(w io.Writer, h CheckHeader, r check.Result) error {
	type failure struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",chardata"`
	}
	type testcase struct {
		Name      string   `xml:"name,attr"`
		Classname string   `xml:"classname,attr"`
		Failure   *failure `xml:"failure,omitempty"`
		SystemOut string   `xml:"system-out,omitempty"`
	}
	type suite struct {
		XMLName  xml.Name   `xml:"testsuite"`
		Name     string     `xml:"name,attr"`
		Tests    int        `xml:"tests,attr"`
		Failures int        `xml:"failures,attr"`
		Cases    []testcase `xml:"testcase"`
	}
	s := suite{Name: "culprit check " + shortHash(h.Base) + ".." + shortHash(h.Target)}
	for _, c := range r.Changes {
		var detail strings.Builder
		for _, m := range c.Methods {
			fmt.Fprintf(&detail, "%s: %s (%s)\n", m.Method, m.Verdict, m.Detail)
		}
		tc := testcase{Name: c.Function, Classname: "culprit.check." + c.Object}
		msg := fmt.Sprintf("%s %s: %s, confidence %.0f%%", c.Kind, c.Function, severityText(c.Severity), 100*c.Confidence)
		if c.Base != nil && c.Target != nil {
			msg += fmt.Sprintf(", model %s → %s", c.Base.Kind, c.Target.Kind)
		}
		if c.Kind == "degradation" && c.Severity >= h.FailAbove {
			tc.Failure = &failure{Message: msg, Type: "degradation", Text: detail.String()}
			s.Failures++
		} else {
			tc.SystemOut = msg + "\n" + detail.String()
		}
		s.Cases = append(s.Cases, tc)
	}
	s.Cases = append(s.Cases, testcase{Name: "other functions", Classname: "culprit.check",
		SystemOut: fmt.Sprintf("%d functions compared over %d paired workloads", r.Functions, r.Pairs)})
	s.Tests = len(s.Cases)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(s); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
