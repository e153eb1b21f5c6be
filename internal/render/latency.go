package render

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"

	"github.com/culprit-dev/culprit/internal/analysis/introperf"
)

// LatencyView configures the latency outputs.
type LatencyView struct {
	Mode introperf.Mode
	Top  int    // text: instances to print (0: all)
	Name string // the recording's name, for headers
	// Slowest, when not nil, is the text's instances, selected while
	// they were inferred (introperf.Options.Slowest); Top is then its n.
	Slowest *introperf.Slowest
}

// fmtNS formats nanoseconds for people.
func fmtNS(ns float64) string {
	neg := ""
	if ns < 0 {
		neg, ns = "-", -ns
	}
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%s%.3gs", neg, ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%s%.3gms", neg, ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%s%.3gµs", neg, ns/1e3)
	case ns == 0:
		return "0"
	}
	return fmt.Sprintf("%s%.0fns", neg, ns)
}

// eventSummary is "12 cpu, 40 syscall-enter, ..." in event order.
func eventSummary(c map[recording.Event]int) string {
	var kinds []int
	for k := range c {
		kinds = append(kinds, int(k))
	}
	sort.Ints(kinds)
	var parts []string
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%d %s", c[recording.Event(k)], recording.Event(k)))
	}
	if len(parts) == 0 {
		return "no events"
	}
	return strings.Join(parts, ", ")
}

// contextString is "leaf <- caller <- caller ..." with at most n callers.
func contextString(t *introperf.Tree, v *introperf.Node, n int) string {
	var parts []string
	for k := 0; v != nil && v.Depth >= 0 && k <= n; k++ {
		parts = append(parts, t.Funcs.Get(v.Func).Name)
		v = v.Parent
	}
	if v != nil && v.Depth >= 0 {
		parts = append(parts, "…")
	}
	return strings.Join(parts, " <- ")
}

// LatencyText prints a summary of the inference and the slowest
// instances in mode v.Mode.
func LatencyText(w io.Writer, r *introperf.Result, v LatencyView) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "IntroPerf latency inference (%s mode)", v.Mode)
	if v.Name != "" {
		fmt.Fprintf(bw, " of %s", v.Name)
	}
	fmt.Fprintf(bw, "\nevents: %s; %d used in %d threads", eventSummary(r.EventCounts), r.Used, len(r.Threads))
	if r.Empty > 0 {
		fmt.Fprintf(bw, " (%d with empty stacks skipped)", r.Empty)
	}
	if r.Probe > 0 {
		fmt.Fprintf(bw, " (%d in the recorder's own code skipped)", r.Probe)
	}
	if n := syscallNote(r); n != "" {
		fmt.Fprintf(bw, "\n%s", n)
	}
	total := 0
	for _, t := range r.Threads {
		total += t.Instances
	}
	fmt.Fprintf(bw, "\n%d function instances in %d calling contexts, over %s\n",
		total, r.Tree.Nodes(), fmtNS(float64(r.End-r.Start)))
	var list []introperf.Instance
	if v.Slowest != nil {
		list = v.Slowest.List()
	} else {
		list = slowestInstances(r.Instances, v.Mode, v.Top)
	}
	n := len(list)
	if n == 0 {
		fmt.Fprintln(bw, "no function instances")
		return bw.Flush()
	}
	fmt.Fprintf(bw, "\nslowest instances (%d of %d), start from the first event:\n", n, total)
	fmt.Fprintf(bw, "%12s %12s %12s %8s  %-s\n", "conservative", "aggressive", "start", "tid", "function (object)  context")
	for _, in := range list {
		fn := r.Tree.Funcs.Get(in.Func)
		fmt.Fprintf(bw, "%12s %12s %12s %8d  %s  ctx %d: %s\n",
			fmtNS(float64(in.Conservative)), fmtNS(float64(in.Aggressive)), fmtNS(float64(in.Start-r.Start)),
			in.TID, fn.Label(), in.Node, contextString(r.Tree, r.Tree.Node(in.Node).Parent, 3))
	}
	return bw.Flush()
}

type latThreadJSON struct {
	PID       uint32 `json:"pid"`
	TID       uint32 `json:"tid"`
	Comm      string `json:"comm"`
	Events    int    `json:"events"`
	Instances int    `json:"instances"`
}

type latContextJSON struct {
	ID       int32   `json:"id"`
	Parent   int32   `json:"parent"`
	Function string  `json:"function"`
	Object   string  `json:"object"`
	Layer    string  `json:"layer"`
	Depth    int     `json:"depth"`
	Count    int64   `json:"count"`
	MeanC    float64 `json:"mean_conservative"`
	MeanA    float64 `json:"mean_aggressive"`
	OwnC     float64 `json:"own_conservative"`
	OwnA     float64 `json:"own_aggressive"`
}

func eventCounts(c map[recording.Event]int) map[string]int {
	out := map[string]int{}
	for k, n := range c {
		out[k.String()] = n
	}
	return out
}

// jsonString returns s as a JSON string literal.
func jsonString(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// LatencyJSON writes the instances (timeline order), the calling
// contexts they refer to and the threads; see docs/report-json.md. Instances
// are written one per line, as they are many.
func LatencyJSON(w io.Writer, r *introperf.Result, v LatencyView) error {
	head := struct {
		Mode     string           `json:"mode"`
		Origin   uint64           `json:"origin"`
		Events   map[string]int   `json:"events"`
		Used     int              `json:"used"`
		Syscalls uint64           `json:"syscalls"`
		Threads  []latThreadJSON  `json:"threads"`
		Contexts []latContextJSON `json:"contexts"`
	}{Mode: v.Mode.String(), Origin: r.Start, Events: eventCounts(r.EventCounts), Used: r.Used, Syscalls: r.Syscalls,
		Threads: []latThreadJSON{}, Contexts: []latContextJSON{}}
	for _, t := range r.Threads {
		head.Threads = append(head.Threads, latThreadJSON{t.PID, t.TID, t.Comm, t.Events, t.Instances})
	}
	for i := 0; i < r.Tree.Nodes(); i++ {
		n := r.Tree.Node(int32(i))
		fn := r.Tree.Funcs.Get(n.Func)
		head.Contexts = append(head.Contexts, latContextJSON{ID: n.ID, Parent: n.Parent.ID, Function: fn.Name, Object: fn.Object,
			Layer: r.Objects.Layer(fn).Key(), Depth: n.Depth, Count: n.Count,
			MeanC: n.Mean(introperf.Conservative), MeanA: n.Mean(introperf.Aggressive), OwnC: n.OwnMean(introperf.Conservative), OwnA: n.OwnMean(introperf.Aggressive)})
	}
	b, err := json.Marshal(head)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	bw.Write(b[:len(b)-1]) // without the closing brace
	bw.WriteString(",\n\"instances\": [")
	names := make([][]byte, len(r.Tree.Funcs.Funcs))
	objects := make([][]byte, len(r.Tree.Funcs.Funcs))
	for i, fn := range r.Tree.Funcs.Funcs {
		names[i], objects[i] = jsonString(fn.Name), jsonString(fn.Object)
	}
	var line []byte
	first := true
	err = r.EachInstance(func(in introperf.Instance) error {
		line = line[:0]
		if !first {
			line = append(line, ',')
		}
		first = false
		line = append(line, "\n{\"function\":"...)
		line = append(line, names[in.Func]...)
		line = append(line, ",\"object\":"...)
		line = append(line, objects[in.Func]...)
		line = append(line, ",\"context\":"...)
		line = strconv.AppendInt(line, int64(in.Node), 10)
		line = append(line, ",\"path\":"...)
		line = strconv.AppendInt(line, int64(in.Path), 10)
		line = append(line, ",\"depth\":"...)
		line = strconv.AppendInt(line, int64(in.Depth), 10)
		line = append(line, ",\"pid\":"...)
		line = strconv.AppendUint(line, uint64(in.PID), 10)
		line = append(line, ",\"tid\":"...)
		line = strconv.AppendUint(line, uint64(in.TID), 10)
		line = append(line, ",\"start\":"...)
		line = strconv.AppendUint(line, in.Start-r.Start, 10)
		line = append(line, ",\"conservative\":"...)
		line = strconv.AppendUint(line, in.Conservative, 10)
		line = append(line, ",\"aggressive\":"...)
		line = strconv.AppendUint(line, in.Aggressive, 10)
		line = append(line, ",\"seen\":"...)
		line = strconv.AppendUint(line, in.Seen-r.Start, 10)
		line = append(line, ",\"end\":"...)
		line = strconv.AppendUint(line, in.End-r.Start, 10)
		line = append(line, '}')
		_, err := bw.Write(line)
		return err
	})
	if err != nil {
		return err
	}
	bw.WriteString("\n]}\n")
	return bw.Flush()
}

// slowest returns the n instances with the largest latency in mode m
// (all when n is 0), slowest first, ties by start.
func slowestInstances(list []introperf.Instance, m introperf.Mode, n int) []introperf.Instance {
	s := introperf.NewSlowest(m, n)
	for _, in := range list {
		s.Add(in)
	}
	return s.List()
}

// LatencyChrome writes the inferred instances as a Chrome trace event file
// (JSON object form) for Perfetto or chrome://tracing: one lane per thread,
// one complete event ("ph":"X") per instance, from its first event to its
// end in mode m on the sample clock (Instance.Span: waits for a CPU
// included, so that a thread's instances nest in both modes). ts is in µs from the profile's first sample. Arguments give
// both latencies in ns, the context id and the calling context.
func LatencyChrome(w io.Writer, p *profile.Profile, r *introperf.Result, m introperf.Mode) error {
	cw := newChromeWriter(w)
	origin := r.Start
	if p != nil && p.StartTime != 0 && p.StartTime <= origin {
		origin = p.StartTime
	}
	seenPID := map[uint32]bool{}
	threads := append([]introperf.ThreadInfo(nil), r.Threads...)
	sort.Slice(threads, func(i, j int) bool {
		if threads[i].PID != threads[j].PID {
			return threads[i].PID < threads[j].PID
		}
		return threads[i].TID < threads[j].TID
	})
	for _, t := range threads {
		name := t.Comm
		if name == "" {
			name = fmt.Sprintf("tid %d", t.TID)
		}
		if !seenPID[t.PID] {
			seenPID[t.PID] = true
			pname := name
			if p != nil {
				if mt, ok := p.Threads[t.PID]; ok && mt.Comm != "" {
					pname = mt.Comm
				}
			}
			if err := cw.event(ChromeEvent{Name: "process_name", Ph: "M", PID: t.PID, TID: t.PID,
				Args: map[string]string{"name": fmt.Sprintf("%s (%d)", pname, t.PID)}}); err != nil {
				return err
			}
		}
		if err := cw.event(ChromeEvent{Name: "thread_name", Ph: "M", PID: t.PID, TID: t.TID,
			Args: map[string]string{"name": fmt.Sprintf("%s (%d)", name, t.TID)}}); err != nil {
			return err
		}
	}
	// Instances, written by hand: there can be millions.
	names := make([][]byte, len(r.Tree.Funcs.Funcs))
	for i, fn := range r.Tree.Funcs.Funcs {
		cat := "user"
		if fn.Kernel {
			cat = "kernel"
		}
		names[i] = append(append(append(jsonString(fn.Name), ",\"cat\":\""...), cat...), "\",\"ph\":\"X\",\"ts\":"...)
	}
	args := make([][]byte, r.Tree.Nodes())
	for i := range args {
		v := r.Tree.Node(int32(i))
		fn := r.Tree.Funcs.Get(v.Func)
		args[i] = append(append(append(append([]byte(",\"args\":{\"object\":"), jsonString(fn.Object)...),
			",\"callers\":"...), jsonString(contextString(r.Tree, v.Parent, 4))...), ",\"context\":"...)
		args[i] = strconv.AppendInt(args[i], int64(i), 10)
	}
	var line []byte
	err := r.EachInstance(func(in introperf.Instance) error {
		ts := uint64(0)
		if in.Start > origin {
			ts = in.Start - origin
		}
		line = append(line[:0], "{\"name\":"...)
		line = append(line, names[in.Func]...)
		line = appendMicros(line, ts)
		line = append(line, ",\"dur\":"...)
		line = appendMicros(line, in.Span(m)-in.Start)
		line = append(line, ",\"pid\":"...)
		line = strconv.AppendUint(line, uint64(in.PID), 10)
		line = append(line, ",\"tid\":"...)
		line = strconv.AppendUint(line, uint64(in.TID), 10)
		line = append(line, args[in.Node]...)
		line = append(line, ",\"conservative_ns\":"...)
		line = strconv.AppendUint(line, in.Conservative, 10)
		line = append(line, ",\"aggressive_ns\":"...)
		line = strconv.AppendUint(line, in.Aggressive, 10)
		line = append(line, "}}"...)
		return cw.raw(line)
	})
	if err != nil {
		return err
	}
	return cw.close()
}

// appendMicros appends ns as microseconds with three decimals.
func appendMicros(b []byte, ns uint64) []byte {
	b = strconv.AppendUint(b, ns/1000, 10)
	frac := ns % 1000
	if frac == 0 {
		return b
	}
	b = append(b, '.')
	if frac < 100 {
		b = append(b, '0')
	}
	if frac < 10 {
		b = append(b, '0')
	}
	return strconv.AppendUint(b, frac, 10)
}

// baseName is the file name shown for a run.
func runBase(s string) string {
	if s == "" {
		return "-"
	}
	return filepath.Base(s)
}
