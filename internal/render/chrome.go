package render

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/culprit-dev/culprit/internal/analysis/sched"
	"github.com/culprit-dev/culprit/internal/analysis/trace"
	"github.com/culprit-dev/culprit/internal/profile"
)

// ChromeEvent is one event of the Chrome trace event format.
type ChromeEvent struct {
	Name string            `json:"name"`
	Cat  string            `json:"cat,omitempty"`
	Ph   string            `json:"ph"`
	Ts   float64           `json:"ts"`            // µs from the profile's start
	Dur  *float64          `json:"dur,omitempty"` // µs, for "X"
	PID  uint32            `json:"pid"`
	TID  uint32            `json:"tid"`
	Args map[string]string `json:"args,omitempty"`
	// ID and BP are a flow event's ("ph":"s" or "f") id and binding point.
	ID uint64 `json:"id,omitempty"`
	BP string `json:"bp,omitempty"`
}

// ChromeTrace is the top level of a Chrome trace event file.
type ChromeTrace struct {
	TraceEvents     []ChromeEvent `json:"traceEvents"`
	DisplayTimeUnit string        `json:"displayTimeUnit"`
}

// WriteChrome writes p as a Chrome trace event file (JSON object form), which
// Perfetto (ui.perfetto.dev) and chrome://tracing show as a flame-chart lane
// per thread along the time axis.
//
// Metadata events ("ph":"M") name each process ("process_name": the comm of
// its main thread) and thread ("thread_name": its comm). Each sample stands
// for the interval [time, time+period) of its thread. Samples are turned into
// nested complete events ("ph":"X", one per stack frame level, root at depth
// 0) by this merge rule, per thread in time order:
//
//   - Two consecutive samples of a thread are contiguous when the second
//     starts no later than half a period after the first one's interval ends;
//     otherwise the thread was off the CPU in between and every open event
//     ends where the first sample's interval ends.
//   - Between contiguous samples, the events of the frames the two stacks
//     share from the root down (same name, both kernel or both user) stay
//     open; the others end, and the second sample's remaining frames begin,
//     at the second sample's time.
//
// So consecutive samples with the same stack become one event per frame, and
// a caller stays one event while its callees change beneath it. An empty
// stack is the frame "[unknown]". ts and dur are in microseconds from the
// profile's start; events of a thread are ordered by ts, then depth (parents
// before children).
//
// Traced calls (culprit trace) are complete events of category "call",
// one per call on its thread, with the call's arguments and exclusive
// time in args.
func WriteChrome(w io.Writer, p *profile.Profile) error { return WriteChromeSched(w, p, nil) }

// WriteChromeSched is WriteChrome with the threads' scheduler states (nil:
// none): each interval off the CPU is a complete event of category
// "sched" named by its state ("runnable", "lock", "io", "sleep",
// "stopped"), and each wake-up that ended a wait is a flow arrow (category
// "wakeup") from a zero-length "wakes NAME" event on the waker's lane to
// the start of the woken thread's runnable interval.
func WriteChromeSched(w io.Writer, p *profile.Profile, tl *sched.Timeline) error {
	cw := newChromeWriter(w)
	tr := chromeTrace(p)
	tr.TraceEvents = append(tr.TraceEvents, schedEvents(p, tl)...)
	for _, e := range tr.TraceEvents {
		if err := cw.event(e); err != nil {
			return err
		}
	}
	return cw.close()
}

// chromeWriter writes a Chrome trace event file in the JSON object form,
// {"traceEvents":[...],"displayTimeUnit":"ms"}, one event at a time: the
// one writer of the format, for the sample timeline (WriteChrome) and for
// latency's inferred function instances (LatencyChrome), which can be
// millions and so give their events as JSON appended by hand (raw).
type chromeWriter struct {
	bw  *bufio.Writer
	n   int
	err error
}

func newChromeWriter(w io.Writer) *chromeWriter {
	c := &chromeWriter{bw: bufio.NewWriter(w)}
	_, c.err = c.bw.WriteString(`{"traceEvents":[`)
	return c
}

// event writes e.
func (c *chromeWriter) event(e ChromeEvent) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return c.raw(b)
}

// raw writes one event given as its JSON object.
func (c *chromeWriter) raw(obj []byte) error {
	if c.err != nil {
		return c.err
	}
	sep := ",\n"
	if c.n == 0 {
		sep = "\n"
	}
	c.n++
	if _, c.err = c.bw.WriteString(sep); c.err == nil {
		_, c.err = c.bw.Write(obj)
	}
	return c.err
}

// close ends the file and flushes it.
func (c *chromeWriter) close() error {
	if c.err != nil {
		return c.err
	}
	end := `],"displayTimeUnit":"ms"}` + "\n"
	if c.n > 0 {
		end = "\n" + end
	}
	if _, err := c.bw.WriteString(end); err != nil {
		return err
	}
	return c.bw.Flush()
}

type chromeThread struct{ pid, tid uint32 }

type openFrame struct {
	name   string
	kernel bool
	object string
	file   string
	start  uint64
	depth  int
}

func chromeTrace(p *profile.Profile) ChromeTrace {
	tr := ChromeTrace{TraceEvents: []ChromeEvent{}, DisplayTimeUnit: "ms"}
	samples := map[chromeThread][]profile.Sample{}
	var threads []chromeThread
	for _, s := range p.Samples {
		t := chromeThread{s.PID, s.TID}
		if _, ok := samples[t]; !ok {
			threads = append(threads, t)
		}
		samples[t] = append(samples[t], s)
	}
	calls := map[chromeThread][]int{}
	for i, c := range p.Calls {
		t := chromeThread{c.PID, c.TID}
		if _, ok := samples[t]; !ok {
			if _, ok := calls[t]; !ok {
				threads = append(threads, t)
			}
		}
		calls[t] = append(calls[t], i)
	}
	sort.Slice(threads, func(i, j int) bool {
		if threads[i].pid != threads[j].pid {
			return threads[i].pid < threads[j].pid
		}
		return threads[i].tid < threads[j].tid
	})
	seenPID := map[uint32]bool{}
	for _, t := range threads {
		if !seenPID[t.pid] {
			seenPID[t.pid] = true
			tr.TraceEvents = append(tr.TraceEvents, ChromeEvent{
				Name: "process_name", Ph: "M", PID: t.pid, TID: t.pid,
				Args: map[string]string{"name": p.ProcessName(t.pid, t.tid)},
			})
		}
		tr.TraceEvents = append(tr.TraceEvents, ChromeEvent{
			Name: "thread_name", Ph: "M", PID: t.pid, TID: t.tid,
			Args: map[string]string{"name": p.ThreadName(t.tid)},
		})
	}
	org := origin(p)
	us := func(ns uint64) float64 { return float64(ns-org) / 1e3 }
	for _, t := range threads {
		ss := samples[t]
		sort.SliceStable(ss, func(i, j int) bool { return ss[i].Time < ss[j].Time })
		var evs []ChromeEvent
		var depths []int
		var open []openFrame
		closeFrom := func(n int, at uint64) {
			for _, o := range open[n:] {
				end := at
				if end < o.start {
					end = o.start
				}
				args := map[string]string{"object": o.object}
				if o.file != "" {
					args["file"] = o.file
				}
				cat := "user"
				if o.kernel {
					cat = "kernel"
				}
				dur := float64(end-o.start) / 1e3
				evs = append(evs, ChromeEvent{
					Name: o.name, Cat: cat, Ph: "X",
					Ts: us(o.start), Dur: &dur,
					PID: t.pid, TID: t.tid, Args: args,
				})
				depths = append(depths, o.depth)
			}
			open = open[:n]
		}
		var lastEnd, lastPeriod uint64
		for i, s := range ss {
			per := period(p, s)
			frames := stackFrames(p, s.Stack)
			// Root first.
			for l, r := 0, len(frames)-1; l < r; l, r = l+1, r-1 {
				frames[l], frames[r] = frames[r], frames[l]
			}
			common := 0
			if i > 0 && s.Time <= lastEnd+lastPeriod/2 {
				for common < len(open) && common < len(frames) &&
					open[common].name == frames[common].Name() && open[common].kernel == frames[common].Kernel {
					common++
				}
				closeFrom(common, s.Time)
			} else {
				closeFrom(0, lastEnd)
			}
			for d := common; d < len(frames); d++ {
				f := frames[d]
				file := f.File
				if file != "" && f.Line > 0 {
					file = fmt.Sprintf("%s:%d", f.File, f.Line)
				}
				open = append(open, openFrame{name: f.Name(), kernel: f.Kernel, object: f.ObjectName(), file: file, start: s.Time, depth: d})
			}
			lastEnd, lastPeriod = s.Time+per, per
		}
		closeFrom(0, lastEnd)
		order := make([]int, len(evs))
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(a, b int) bool {
			ea, eb := evs[order[a]], evs[order[b]]
			if ea.Ts != eb.Ts {
				return ea.Ts < eb.Ts
			}
			return depths[order[a]] < depths[order[b]]
		})
		for _, i := range order {
			tr.TraceEvents = append(tr.TraceEvents, evs[i])
		}
		tr.TraceEvents = append(tr.TraceEvents, callEvents(p, t, calls[t], us)...)
	}
	return tr
}

// callEvents turns a thread's traced calls into complete events, in start
// order and parents before children; arguments, the exclusive time and
// calls that did not return are in args.
func callEvents(p *profile.Profile, t chromeThread, idx []int, us func(uint64) float64) []ChromeEvent {
	sort.SliceStable(idx, func(a, b int) bool {
		ca, cb := &p.Calls[idx[a]], &p.Calls[idx[b]]
		if ca.Start != cb.Start {
			return ca.Start < cb.Start
		}
		return ca.Depth < cb.Depth
	})
	evs := make([]ChromeEvent, 0, len(idx))
	for _, i := range idx {
		c := &p.Calls[i]
		pr := &p.Probes[c.Probe]
		dur := float64(c.Inclusive()) / 1e3
		args := map[string]string{"object": pr.Object, "exclusive_us": fmt.Sprintf("%.3f", float64(c.Exclusive())/1e3)}
		for _, a := range trace.Args(pr, c) {
			args[a.Name] = a.Value
		}
		if c.Unreturned() {
			args["returned"] = "no"
		}
		evs = append(evs, ChromeEvent{Name: pr.Function, Cat: "call", Ph: "X", Ts: us(c.Start), Dur: &dur,
			PID: t.pid, TID: t.tid, Args: args})
	}
	return evs
}

// schedEvents draws tl's intervals off the CPU and its wake-ups (see
// WriteChromeSched), threads in TID order.
func schedEvents(p *profile.Profile, tl *sched.Timeline) []ChromeEvent {
	if tl == nil {
		return nil
	}
	org := origin(p)
	us := func(ns uint64) float64 {
		if ns < org {
			return -float64(org-ns) / 1e3
		}
		return float64(ns-org) / 1e3
	}
	tids := make([]uint32, 0, len(tl.Threads))
	for tid := range tl.Threads {
		tids = append(tids, tid)
	}
	sort.Slice(tids, func(i, j int) bool { return tids[i] < tids[j] })
	var evs []ChromeEvent
	flow := uint64(0)
	for _, tid := range tids {
		th := tl.Threads[tid]
		for _, iv := range th.Intervals {
			if iv.State == sched.OnCPU || iv.State == sched.Unknown {
				continue
			}
			dur := float64(iv.Duration()) / 1e3
			var args map[string]string
			if iv.Waker != 0 {
				args = map[string]string{"woken_by": fmt.Sprintf("%s (tid %d)", p.ThreadName(iv.Waker), iv.Waker)}
			} else if iv.Interrupt {
				args = map[string]string{"woken_by": "an interrupt"}
			}
			evs = append(evs, ChromeEvent{Name: iv.State.String(), Cat: "sched", Ph: "X", Ts: us(iv.From), Dur: &dur,
				PID: th.PID, TID: tid, Args: args})
			w := tl.Threads[iv.Waker]
			if !iv.State.Blocked() || iv.Waker == 0 || w == nil {
				continue
			}
			flow++
			zero := 0.0
			at := us(iv.To)
			evs = append(evs,
				ChromeEvent{Name: fmt.Sprintf("wakes %s (tid %d)", th.Name, tid), Cat: "wakeup", Ph: "X", Ts: at, Dur: &zero, PID: w.PID, TID: iv.Waker},
				ChromeEvent{Name: "wakeup", Cat: "wakeup", Ph: "s", Ts: at, PID: w.PID, TID: iv.Waker, ID: flow},
				ChromeEvent{Name: "wakeup", Cat: "wakeup", Ph: "f", BP: "e", Ts: at, PID: th.PID, TID: tid, ID: flow})
		}
	}
	return evs
}
