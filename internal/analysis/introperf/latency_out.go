package introperf

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
)

// LatencyView configures the latency outputs.
type LatencyView struct {
	Mode Mode
	Top  int    // text: instances to print (0: all)
	Name string // the recording's name, for headers
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
func contextString(t *Tree, v *Node, n int) string {
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

// WriteLatencyText prints a summary of the inference and the slowest
// instances in mode v.Mode.
func WriteLatencyText(w io.Writer, r *Result, v LatencyView) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "IntroPerf latency inference (%s mode)", v.Mode)
	if v.Name != "" {
		fmt.Fprintf(bw, " of %s", v.Name)
	}
	fmt.Fprintf(bw, "\nevents: %s; %d used in %d threads", eventSummary(r.EventCounts), r.Used, len(r.Threads))
	if r.Empty > 0 {
		fmt.Fprintf(bw, " (%d with empty stacks skipped)", r.Empty)
	}
	fmt.Fprintf(bw, "\n%d function instances in %d calling contexts, over %s\n",
		len(r.Instances), r.Tree.Nodes(), fmtNS(float64(r.End-r.Start)))
	list := append([]Instance(nil), r.Instances...)
	sort.SliceStable(list, func(i, j int) bool {
		a, b := list[i].Latency(v.Mode), list[j].Latency(v.Mode)
		if a != b {
			return a > b
		}
		return list[i].Start < list[j].Start
	})
	n := len(list)
	if v.Top > 0 && n > v.Top {
		n = v.Top
	}
	if n == 0 {
		fmt.Fprintln(bw, "no function instances")
		return bw.Flush()
	}
	fmt.Fprintf(bw, "\nslowest instances (%d of %d), start from the first event:\n", n, len(list))
	fmt.Fprintf(bw, "%12s %12s %12s %8s  %-s\n", "conservative", "aggressive", "start", "tid", "function (object)  context")
	for _, in := range list[:n] {
		fn := r.Tree.Funcs.Get(in.Func)
		fmt.Fprintf(bw, "%12s %12s %12s %8d  %s  ctx %d: %s\n",
			fmtNS(float64(in.Conservative)), fmtNS(float64(in.Aggressive)), fmtNS(float64(in.Start-r.Start)),
			in.TID, fn.Label(), in.Node, contextString(r.Tree, r.Tree.Node(in.Node).Parent, 3))
	}
	return bw.Flush()
}

type jsonThread struct {
	PID       uint32 `json:"pid"`
	TID       uint32 `json:"tid"`
	Comm      string `json:"comm"`
	Events    int    `json:"events"`
	Instances int    `json:"instances"`
}

type jsonContext struct {
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

type jsonInstance struct {
	Function     string `json:"function"`
	Object       string `json:"object"`
	Context      int32  `json:"context"`
	Path         int32  `json:"path"`
	Depth        int32  `json:"depth"`
	PID          uint32 `json:"pid"`
	TID          uint32 `json:"tid"`
	Start        uint64 `json:"start"`
	Conservative uint64 `json:"conservative"`
	Aggressive   uint64 `json:"aggressive"`
}

func eventCounts(c map[recording.Event]int) map[string]int {
	out := map[string]int{}
	for k, n := range c {
		out[k.String()] = n
	}
	return out
}

// WriteLatencyJSON writes the instances (timeline order), the calling
// contexts they refer to and the threads; see docs/report-json.md.
func WriteLatencyJSON(w io.Writer, r *Result, v LatencyView) error {
	doc := struct {
		Mode      string         `json:"mode"`
		Origin    uint64         `json:"origin"`
		Events    map[string]int `json:"events"`
		Used      int            `json:"used"`
		Threads   []jsonThread   `json:"threads"`
		Contexts  []jsonContext  `json:"contexts"`
		Instances []jsonInstance `json:"instances"`
	}{Mode: v.Mode.String(), Origin: r.Start, Events: eventCounts(r.EventCounts), Used: r.Used,
		Threads: []jsonThread{}, Contexts: []jsonContext{}, Instances: []jsonInstance{}}
	for _, t := range r.Threads {
		doc.Threads = append(doc.Threads, jsonThread{t.PID, t.TID, t.Comm, t.Events, t.Instances})
	}
	for i := 0; i < r.Tree.Nodes(); i++ {
		n := r.Tree.Node(int32(i))
		fn := r.Tree.Funcs.Get(n.Func)
		doc.Contexts = append(doc.Contexts, jsonContext{ID: n.ID, Parent: n.Parent.ID, Function: fn.Name, Object: fn.Object,
			Layer: r.Objects.Layer(fn).Key(), Depth: n.Depth, Count: n.Count,
			MeanC: n.Mean(Conservative), MeanA: n.Mean(Aggressive), OwnC: n.OwnMean(Conservative), OwnA: n.OwnMean(Aggressive)})
	}
	list := append([]Instance(nil), r.Instances...)
	SortInstances(list)
	for _, in := range list {
		fn := r.Tree.Funcs.Get(in.Func)
		doc.Instances = append(doc.Instances, jsonInstance{fn.Name, fn.Object, in.Node, in.Path, in.Depth,
			in.PID, in.TID, in.Start - r.Start, in.Conservative, in.Aggressive})
	}
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetIndent("", " ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	return bw.Flush()
}

type chromeEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Dur  *float64       `json:"dur,omitempty"`
	PID  uint32         `json:"pid"`
	TID  uint32         `json:"tid"`
	Args map[string]any `json:"args,omitempty"`
}

// WriteChrome writes the inferred instances as a Chrome trace event file
// (JSON object form) for Perfetto or chrome://tracing: one lane per thread,
// one complete event ("ph":"X") per instance, lasting its latency in mode m.
// Instances of a thread nest: a callee's interval lies inside its caller's
// in both modes. ts is in µs from the profile's first sample. Arguments give
// both latencies in ns, the context id and the calling context.
func WriteChrome(w io.Writer, p *profile.Profile, r *Result, m Mode) error {
	bw := bufio.NewWriter(w)
	origin := r.Start
	if p != nil && p.StartTime != 0 && p.StartTime <= origin {
		origin = p.StartTime
	}
	if _, err := bw.WriteString("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n"); err != nil {
		return err
	}
	first := true
	emit := func(e chromeEvent) error {
		b, err := json.Marshal(e)
		if err != nil {
			return err
		}
		if !first {
			bw.WriteString(",\n")
		}
		first = false
		_, err = bw.Write(b)
		return err
	}
	seenPID := map[uint32]bool{}
	threads := append([]ThreadInfo(nil), r.Threads...)
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
			if err := emit(chromeEvent{Name: "process_name", Ph: "M", PID: t.PID, TID: t.PID,
				Args: map[string]any{"name": fmt.Sprintf("%s (%d)", pname, t.PID)}}); err != nil {
				return err
			}
		}
		if err := emit(chromeEvent{Name: "thread_name", Ph: "M", PID: t.PID, TID: t.TID,
			Args: map[string]any{"name": fmt.Sprintf("%s (%d)", name, t.TID)}}); err != nil {
			return err
		}
	}
	list := append([]Instance(nil), r.Instances...)
	SortInstances(list)
	for _, in := range list {
		fn := r.Tree.Funcs.Get(in.Func)
		dur := float64(in.Latency(m)) / 1e3
		cat := "user"
		if fn.Kernel {
			cat = "kernel"
		}
		ts := float64(in.Start-origin) / 1e3
		if in.Start < origin {
			ts = 0
		}
		err := emit(chromeEvent{Name: fn.Name, Cat: cat, Ph: "X", Ts: ts, Dur: &dur, PID: in.PID, TID: in.TID,
			Args: map[string]any{
				"object":          fn.Object,
				"context":         in.Node,
				"conservative_ns": in.Conservative,
				"aggressive_ns":   in.Aggressive,
				"callers":         contextString(r.Tree, r.Tree.Node(in.Node).Parent, 4),
			}})
		if err != nil {
			return err
		}
	}
	if _, err := bw.WriteString("\n]}\n"); err != nil {
		return err
	}
	return bw.Flush()
}

// baseName is the file name shown for a run.
func baseName(s string) string {
	if s == "" {
		return "-"
	}
	return filepath.Base(s)
}
