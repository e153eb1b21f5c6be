package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/culprit-dev/culprit/internal/analysis/trace"
)

// Duration formats ns for a table: ns, µs, ms or s with three figures.
func Duration(ns float64) string {
	switch {
	case ns < 0:
		// A difference (variance's other, where a queue's two threads'
		// windows overlap): in the unit of its size.
		return "-" + Duration(-ns)
	case ns < 1e3:
		return fmt.Sprintf("%.0fns", ns)
	case ns < 1e6:
		return fmt.Sprintf("%.3gµs", ns/1e3)
	case ns < 1e9:
		return fmt.Sprintf("%.3gms", ns/1e6)
	}
	return fmt.Sprintf("%.3gs", ns/1e9)
}

// TraceText prints per-function call statistics: calls, and the total,
// mean, p99 and max of inclusive and exclusive durations; with callers,
// each function's calls by caller beneath it.
func TraceText(w io.Writer, fs []trace.Function, lost uint64, top int) error {
	var b strings.Builder
	if lost > 0 {
		fmt.Fprintf(&b, "%d calls were not recorded (see the trace's warnings)\n", lost)
	}
	if len(fs) == 0 {
		b.WriteString("no traced calls\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	fmt.Fprintf(&b, "%10s %10s %10s %10s %10s  %10s %10s %10s  %s\n",
		"calls", "excl", "incl", "mean", "p99", "excl mean", "excl p99", "max", "function")
	for i, f := range fs {
		if top > 0 && i >= top {
			fmt.Fprintf(&b, "... %d more functions (--top 0 shows all)\n", len(fs)-top)
			break
		}
		calls := fmt.Sprint(f.Calls)
		if f.Every > 1 {
			calls = fmt.Sprintf("~%d", f.Estimated)
		}
		name := f.Name
		switch {
		case f.Unwound == f.Unreturned && f.Unwound > 0:
			name += fmt.Sprintf(" (%d did not return: unwound)", f.Unreturned)
		case f.Unwound > 0:
			name += fmt.Sprintf(" (%d did not return, %d unwound)", f.Unreturned, f.Unwound)
		case f.Unreturned > 0:
			name += fmt.Sprintf(" (%d did not return)", f.Unreturned)
		}
		if f.Every > 1 {
			name += fmt.Sprintf(" (1 in %d recorded: %d)", f.Every, f.Calls)
		}
		fmt.Fprintf(&b, "%10s %10s %10s %10s %10s  %10s %10s %10s  %s\n", calls,
			Duration(float64(f.Excl.Total)), Duration(float64(f.Incl.Total)), Duration(f.Incl.Mean), Duration(float64(f.Incl.P99)),
			Duration(f.Excl.Mean), Duration(float64(f.Excl.P99)), Duration(float64(f.Incl.Max)), name)
		for _, c := range f.Callers {
			fmt.Fprintf(&b, "%10d %10s %10s %10s %10s  %10s %10s %10s    <- %s\n", c.Calls,
				Duration(float64(c.Excl.Total)), Duration(float64(c.Incl.Total)), Duration(c.Incl.Mean), Duration(float64(c.Incl.P99)),
				Duration(c.Excl.Mean), Duration(float64(c.Excl.P99)), Duration(float64(c.Incl.Max)), c.Name)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// TraceJSON writes per-function call statistics.
func TraceJSON(w io.Writer, fs []trace.Function, extra JSONExtra) error {
	if fs == nil {
		fs = []trace.Function{}
	}
	return writeJSON(w, struct {
		Functions []trace.Function `json:"functions"`
		Lost      uint64           `json:"lost"`
		Sources   []jsonSource     `json:"sources"`
		Warnings  []string         `json:"warnings"`
	}{fs, extra.Lost, jsonSources(extra.Sources), jsonWarnings(extra.Warnings)})
}

// CallsText lists calls, slowest first, with their arguments.
func CallsText(w io.Writer, calls []trace.CallInfo) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%10s %10s %10s %10s %8s %5s  %s\n", "incl", "excl", "cpu", "start", "tid", "depth", "call")
	for _, c := range calls {
		var args []string
		for _, a := range c.Args {
			args = append(args, a.Name+"="+a.Value)
		}
		call := c.Function + "(" + strings.Join(args, ", ") + ")"
		if c.Ret != "" {
			call += " = " + c.Ret
		}
		if c.Unwound {
			call += " (did not return: unwound)"
		} else if c.Unreturned {
			call += " (did not return)"
		}
		cpu := "-"
		if c.CPULost {
			cpu = "lost" // a context switch in it went unseen
		}
		if c.InclCPU != nil {
			cpu = Duration(float64(*c.InclCPU))
		}
		fmt.Fprintf(&b, "%10s %10s %10s %9.3fs %8d %5d  %s <- %s\n", Duration(float64(c.Incl)), Duration(float64(c.Excl)), cpu,
			c.Start, c.TID, c.Depth, call, c.Caller)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// CallsJSON writes calls, slowest first.
func CallsJSON(w io.Writer, calls []trace.CallInfo, extra JSONExtra) error {
	if calls == nil {
		calls = []trace.CallInfo{}
	}
	return writeJSON(w, struct {
		Calls    []trace.CallInfo `json:"calls"`
		Sources  []jsonSource     `json:"sources"`
		Warnings []string         `json:"warnings"`
	}{calls, jsonSources(extra.Sources), jsonWarnings(extra.Warnings)})
}

// TraceDiffText prints two traced runs compared per function.
// A line first says whether the times are on the CPU or wall durations;
// when they are mixed, the functions compared by wall time are marked.
func TraceDiffText(w io.Writer, cs []trace.Change, top int) error {
	var b strings.Builder
	cpu := 0
	for _, c := range cs {
		if c.OnCPU {
			cpu++
		}
	}
	switch {
	case len(cs) > 0 && cpu == len(cs):
		b.WriteString("times on the CPU: without preemption, blocking and sleep (--time wall: durations)\n")
	case cpu > 0:
		b.WriteString("times on the CPU: without preemption, blocking and sleep; (wall): wall durations, a run did not measure that function's time on the CPU\n")
	default:
		b.WriteString("wall durations\n")
	}
	fmt.Fprintf(&b, "%10s %10s %10s %10s %10s %10s %8s  %s\n", "calls A", "calls B", "mean A", "mean B", "excl A", "excl B", "mean B/A", "function")
	for i, c := range cs {
		if top > 0 && i >= top {
			fmt.Fprintf(&b, "... %d more functions (--top 0 shows all)\n", len(cs)-top)
			break
		}
		ratio := "-"
		if c.MeanRatio > 0 {
			ratio = fmt.Sprintf("%.3f", c.MeanRatio)
		}
		mark := ""
		if !c.OnCPU && cpu > 0 {
			mark = " (wall)"
		}
		fmt.Fprintf(&b, "%10d %10d %10s %10s %10s %10s %8s  %s\n", c.A.Calls, c.B.Calls,
			Duration(c.A.Incl.Mean), Duration(c.B.Incl.Mean), Duration(float64(c.A.Excl.Total)), Duration(float64(c.B.Excl.Total)), ratio, c.Name+mark)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// TraceDiffJSON writes two traced runs compared per function.
func TraceDiffJSON(w io.Writer, cs []trace.Change) error {
	if cs == nil {
		cs = []trace.Change{}
	}
	return writeJSON(w, struct {
		Functions []trace.Change `json:"functions"`
	}{cs})
}
