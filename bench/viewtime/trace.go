package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/tracing"
	"github.com/chromedp/chromedp"
	"golang.org/x/sys/unix"
)

// traceDir, when set: each interaction is traced (Chromium's tracing,
// the DevTools timeline's categories), its events written there and its
// renderer main thread's time split by kind (traceKind), with when the
// input reached the page. Tracing costs the renderer time of its own:
// these runs tell where the time goes, not how long it takes.
var traceDir string

// writeTrace writes evs to path in the JSON trace format.
func writeTrace(path string, evs []traceEvent) error {
	b, err := json.Marshal(struct {
		TraceEvents []traceEvent `json:"traceEvents"`
	}{evs})
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// monoNow is CLOCK_MONOTONIC in microseconds: the clock of Chromium's
// trace events on Linux (base::TimeTicks).
func monoNow() float64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return float64(ts.Sec)*1e6 + float64(ts.Nsec)/1e3
}

// traceEvent is a trace event as Chromium reports it (JSON trace format).
type traceEvent struct {
	Name string          `json:"name"`
	Ph   string          `json:"ph"`
	Ts   float64         `json:"ts"`
	Dur  float64         `json:"dur"`
	Tdur float64         `json:"tdur,omitempty"`
	Pid  int             `json:"pid"`
	Tid  int             `json:"tid"`
	Args json.RawMessage `json:"args,omitempty"`
}

// startTrace starts Chromium's tracing of the page in ctx; the returned
// func ends it and returns its events.
func startTrace(ctx context.Context) (func() ([]traceEvent, error), error) {
	lctx, cancel := context.WithCancel(ctx)
	var mu sync.Mutex
	var raw [][]byte
	done := make(chan struct{})
	var once sync.Once
	if err := chromedp.Listen(lctx, func(ev any) {
		switch e := ev.(type) {
		case *tracing.EventDataCollected:
			mu.Lock()
			for _, v := range e.Value {
				raw = append(raw, []byte(v))
			}
			mu.Unlock()
		case *tracing.EventTracingComplete:
			once.Do(func() { close(done) })
		}
	}); err != nil {
		cancel()
		return nil, err
	}
	_, err := chromedp.Call(ctx, tracing.Start, tracing.StartParams{
		TransferMode: tracing.StartTransferModeReportEvents,
		TraceConfig: &tracing.TraceConfig{IncludedCategories: []string{
			"toplevel", "devtools.timeline", "disabled-by-default-devtools.timeline", "v8.execute", "blink.user_timing"}},
	})
	if err != nil {
		cancel()
		return nil, err
	}
	return func() ([]traceEvent, error) {
		defer cancel()
		if _, err := chromedp.Call(ctx, tracing.End, cdp.Empty{}); err != nil {
			return nil, err
		}
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			return nil, fmt.Errorf("tracing did not complete")
		}
		mu.Lock()
		defer mu.Unlock()
		evs := make([]traceEvent, 0, len(raw))
		for _, r := range raw {
			var e traceEvent
			if json.Unmarshal(r, &e) == nil {
				evs = append(evs, e)
			}
		}
		return evs, nil
	}, nil
}

// traceKinds are the kinds the renderer main thread's time is split
// into, by the trace events' names (the innermost event of a kind
// takes the time its children of no kind leave): script (the pages'
// and pprof's JavaScript, the handlers of events, timers and frames),
// parse (HTML and style sheets), style (style recalculation), layout,
// paint (paint, pre-paint, layerize and the commit to the compositor)
// and gc; what no event of a kind covers is "other" (the task's own
// time: IPC, the loader, ...).
func traceKind(name string) string {
	switch name {
	case "FunctionCall", "EvaluateScript", "v8.compile", "v8.compileModule", "v8.run", "V8.Execute",
		"TimerFire", "FireAnimationFrame", "EventDispatch", "RunMicrotasks", "v8.callFunction",
		"v8.evaluateModule", "XHRReadyStateChange", "v8.produceCache", "v8.produceModuleCache":
		return "script"
	case "ParseHTML", "ParseAuthorStyleSheet":
		return "parse"
	case "UpdateLayoutTree", "RecalculateStyles", "ScheduleStyleRecalculation":
		return "style"
	case "Layout":
		return "layout"
	case "Paint", "PrePaint", "PaintImage", "Layerize", "UpdateLayer", "CompositeLayers", "Commit",
		"UpdateLayerTree", "PaintSetup":
		return "paint"
	}
	if strings.Contains(name, "GC") {
		return "gc"
	}
	return ""
}

// traceSplitOf returns the split of the renderer main threads' time in
// evs from from to to (CLOCK_MONOTONIC, µs), as key=value pairs named
// after what: each kind's ms; busy (their sum: the main threads' tasks)
// and cpu (the thread time of those tasks: busy less the time the
// thread waited for a CPU or a lock),
// idle (the rest of the span: waiting for the server, the network
// service, the GPU process, or chromedp); and input, from from to the
// last input event (click, contextmenu or submit) the page dispatched.
func traceSplitOf(evs []traceEvent, what string, from, to float64) string {
	type key struct{ pid, tid int }
	main := map[key]bool{}
	for _, e := range evs {
		if e.Ph == "M" && e.Name == "thread_name" && strings.Contains(string(e.Args), `"CrRendererMain"`) {
			main[key{e.Pid, e.Tid}] = true
		}
	}
	byThread := map[key][]traceEvent{}
	input := -1.0
	for _, e := range evs {
		k := key{e.Pid, e.Tid}
		if e.Ph != "X" || !main[k] || e.Ts < from || e.Ts > to {
			continue
		}
		byThread[k] = append(byThread[k], e)
		if e.Name == "EventDispatch" {
			for _, t := range []string{`"type":"click"`, `"type":"contextmenu"`, `"type":"submit"`} {
				if strings.Contains(string(e.Args), t) {
					input = max(input, e.Ts)
				}
			}
		}
	}
	ms := map[string]float64{}
	busy, busyCPU := 0.0, 0.0
	for _, es := range byThread {
		sort.Slice(es, func(i, j int) bool {
			if es[i].Ts != es[j].Ts {
				return es[i].Ts < es[j].Ts
			}
			return es[i].Dur > es[j].Dur
		})
		type open struct {
			end, child float64
			kind       string
			dur        float64
		}
		var stack []open
		pop := func() {
			o := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			self := max(o.dur-o.child, 0)
			k := o.kind
			if k == "" {
				k = "other"
			}
			ms[k] += self / 1000
		}
		for _, e := range es {
			for len(stack) > 0 && stack[len(stack)-1].end <= e.Ts {
				pop()
			}
			kind := traceKind(e.Name)
			if len(stack) == 0 {
				busy += e.Dur / 1000
				busyCPU += e.Tdur / 1000
			} else {
				stack[len(stack)-1].child += e.Dur
				if kind == "" {
					kind = stack[len(stack)-1].kind
				}
			}
			stack = append(stack, open{end: e.Ts + e.Dur, kind: kind, dur: e.Dur})
		}
		for len(stack) > 0 {
			pop()
		}
	}
	out := fmt.Sprintf("%s_tr_busy_ms=%.0f %s_tr_cpu_ms=%.0f %s_tr_idle_ms=%.0f", what, busy, what, busyCPU, what, max((to-from)/1000-busy, 0))
	for _, k := range []string{"script", "parse", "style", "layout", "paint", "gc", "other"} {
		out += fmt.Sprintf(" %s_tr_%s_ms=%.0f", what, k, ms[k])
	}
	if input >= 0 {
		out += fmt.Sprintf(" %s_tr_input_ms=%.0f", what, (input-from)/1000)
	}
	return out
}
