package render

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/culprit-dev/culprit/internal/analysis/sched"
	"github.com/culprit-dev/culprit/internal/analysis/trace"
	"github.com/culprit-dev/culprit/internal/analysis/variance"
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
	if err := writeChromeSamples(cw, p); err != nil {
		return err
	}
	for _, e := range schedEvents(p, tl) {
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

// writeChromeSamples writes the metadata, sample and call events of
// WriteChrome, thread by thread. A timeline of a million samples is
// millions of events, so none of them is held: a first pass over a
// thread's samples notes how many root frames each sample shares with the
// one before (or that the thread was off the CPU in between), and a second
// pass writes each event as its frame begins, in time order, its end found
// by looking ahead in those counts for the first sample that shares fewer
// frames. The counts are kept like the samples (endList: past heldBytes,
// in the temporary file). Each frame's JSON is made once.
func writeChromeSamples(cw *chromeWriter, p *profile.Profile) error {
	ts, err := byThread(p, true, nil)
	if err != nil {
		return err
	}
	defer ts.close()
	threads := slices.Clone(ts.threads)
	of := make(map[threadID]*sampleList, len(threads))
	for i, t := range ts.threads {
		of[t] = ts.lists[i]
	}
	calls := map[threadID][]int{}
	for i, c := range p.Calls {
		t := threadID{c.PID, c.TID}
		if _, ok := of[t]; !ok {
			if _, ok := calls[t]; !ok {
				threads = append(threads, t)
			}
		}
		calls[t] = append(calls[t], i)
	}
	sort.Slice(threads, func(i, j int) bool { return threadLess(threads[i], threads[j]) })
	seenPID := map[uint32]bool{}
	for _, t := range threads {
		if !seenPID[t.pid] {
			seenPID[t.pid] = true
			if err := cw.event(ChromeEvent{
				Name: "process_name", Ph: "M", PID: t.pid, TID: t.pid,
				Args: map[string]string{"name": p.ProcessName(t.pid, t.tid)},
			}); err != nil {
				return err
			}
		}
		if err := cw.event(ChromeEvent{
			Name: "thread_name", Ph: "M", PID: t.pid, TID: t.tid,
			Args: map[string]string{"name": p.ThreadName(t.tid)},
		}); err != nil {
			return err
		}
	}
	org := originOf(p, ts.first, ts.ok)
	tl := chromeTimeline{p: p, fj: chromeFrames{p: p, json: map[int32][2][]byte{}}, spill: ts.spill}
	for _, t := range threads {
		if l := of[t]; l != nil {
			if err := tl.write(cw, t, l, org); err != nil {
				return err
			}
			l.buf = nil
		}
		us := func(ns uint64) float64 { return float64(ns-org) / 1e3 }
		for _, e := range callEvents(p, t, calls[t], us) {
			if err := cw.event(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// chromeTimeline writes the events of threads' samples (see WriteChrome),
// its buffers reused from one thread to the next.
type chromeTimeline struct {
	p  *profile.Profile
	fj chromeFrames
	// recs holds per sample of the thread (and one after the last) the
	// two numbers the events' ends are found from: shared, how many root
	// frames the sample shares with the one before, or -1 when the thread
	// was off the CPU in between (and for the first sample); endAt, where
	// an event that ends at the sample ends: at its time, or where the
	// sample before's interval ends when the thread was off the CPU
	// before it (after the last sample: where its interval ends).
	recs  endList
	spill *spill
	// cur reads recs in order; look[d] ahead for the events of depth d.
	cur  endCursor
	look []endCursor
	// ends[d] is the sample at which the event of depth d begun last
	// ends: the first later one with shared < d+1 (the thread's sample
	// count: none).
	ends  []int
	group []chromeSpan // events that begin at one time, not yet written
	buf   []byte
}

// chromeSpan is one complete event of a sample timeline: frame is an
// index into Profile.Frames (-1: the "[unknown]" of an empty stack).
type chromeSpan struct {
	start, end uint64
	frame      int32
	depth      int32
}

// stack is a sample's frames, leaf first; an empty stack is the one frame
// "[unknown]".
func (tl *chromeTimeline) stack(i int32) []int32 {
	if st := tl.p.StackAt(i); len(st) > 0 {
		return st
	}
	return unknownStack
}

var unknownStack = []int32{-1}

// write writes the events of thread t, whose samples are l's.
func (tl *chromeTimeline) write(cw *chromeWriter, t threadID, l *sampleList, org uint64) error {
	// Two consecutive samples are contiguous when the second starts no
	// later than half a period after the first one's interval ends;
	// between them, the events of the frames the two stacks share from
	// the root down stay open.
	tl.recs.reset(tl.spill)
	tl.cur = endCursor{base: noBlock}
	for d := range tl.look {
		tl.look[d].base, tl.look[d].buf = noBlock, nil
	}
	var prev []int32
	var lastEnd, lastPeriod uint64
	if err := l.each(func(s tsample) {
		st := tl.stack(s.stack)
		n := int32(-1)
		if tl.recs.n > 0 && s.time <= lastEnd+lastPeriod/2 {
			n = 0
			for int(n) < len(prev) && int(n) < len(st) && tl.fj.same(prev[len(prev)-1-int(n)], st[len(st)-1-int(n)]) {
				n++
			}
		}
		end := s.time
		if n < 0 {
			end = lastEnd
		}
		tl.recs.add(n, end)
		prev, lastEnd, lastPeriod = st, s.time+s.period, s.period
	}); err != nil {
		return err
	}
	nsamples := tl.recs.n
	tl.recs.add(-1, lastEnd)
	tl.ends = tl.ends[:0]
	tl.group = tl.group[:0]
	tail := fmt.Appendf(nil, `,"pid":%d,"tid":%d,"args":`, t.pid, t.tid)
	var err error
	i := 0
	rerr := l.each(func(s tsample) {
		defer func() { i++ }()
		if err != nil {
			return
		}
		st := tl.stack(s.stack)
		if len(tl.group) > 0 && tl.group[0].start != s.time {
			if err = tl.flush(cw, tail, org); err != nil {
				return
			}
		}
		shared := tl.recs.sharedAt(&tl.cur, i)
		for d := max(shared, 0); int(d) < len(st); d++ {
			for len(tl.ends) <= int(d) {
				tl.ends = append(tl.ends, -1)
			}
			for len(tl.look) <= int(d) {
				tl.look = append(tl.look, endCursor{base: noBlock})
			}
			c := &tl.look[d]
			k := tl.ends[d]
			if k <= i {
				k = tl.recs.next(c, i+1, nsamples, d)
				tl.ends[d] = k
			}
			endAt := tl.recs.endAt(c, k)
			tl.group = append(tl.group, chromeSpan{start: s.time, end: max(endAt, s.time), frame: st[len(st)-1-int(d)], depth: d})
		}
	})
	if err != nil {
		return err
	}
	if rerr != nil {
		return rerr
	}
	if tl.recs.err != nil {
		return tl.recs.err
	}
	return tl.flush(cw, tail, org)
}

// flush writes the events in tl.group, which all begin at one time,
// parents before children.
func (tl *chromeTimeline) flush(cw *chromeWriter, tail []byte, org uint64) error {
	g := tl.group
	if !sort.SliceIsSorted(g, func(a, b int) bool { return g[a].depth < g[b].depth }) {
		sort.SliceStable(g, func(a, b int) bool { return g[a].depth < g[b].depth })
	}
	for _, sp := range g {
		head, args := tl.fj.get(sp.frame)
		b := append(tl.buf[:0], head...)
		b = appendJSONMicros(b, sp.start-org)
		b = append(b, `,"dur":`...)
		b = appendJSONMicros(b, sp.end-sp.start)
		b = append(b, tail...)
		b = append(b, args...)
		b = append(b, '}')
		tl.buf = b
		if err := cw.raw(b); err != nil {
			return err
		}
	}
	tl.group = g[:0]
	return nil
}

// chromeFrames makes the JSON of a frame's events once: the start of the
// object up to "ts": and its args.
type chromeFrames struct {
	p    *profile.Profile
	json map[int32][2][]byte
}

func (c *chromeFrames) frame(i int32) profile.Frame {
	if i < 0 {
		return unknownFrame
	}
	return c.p.FrameAt(i)
}

// same reports whether frames a and b are one event's: the same name, both
// kernel or both user.
func (c *chromeFrames) same(a, b int32) bool {
	if a == b {
		return true
	}
	fa, fb := c.frame(a), c.frame(b)
	return fa.Kernel == fb.Kernel && fa.Name() == fb.Name()
}

func (c *chromeFrames) get(i int32) (head, args []byte) {
	if j, ok := c.json[i]; ok {
		return j[0], j[1]
	}
	f := c.frame(i)
	cat := "user"
	if f.Kernel {
		cat = "kernel"
	}
	name, _ := json.Marshal(f.Name())
	head = fmt.Appendf(nil, `{"name":%s,"cat":%q,"ph":"X","ts":`, name, cat)
	a := map[string]string{"object": f.ObjectName()}
	if f.File != "" {
		a["file"] = f.File
		if f.Line > 0 {
			a["file"] = fmt.Sprintf("%s:%d", f.File, f.Line)
		}
	}
	args, _ = json.Marshal(a)
	c.json[i] = [2][]byte{head, args}
	return head, args
}

// appendJSONMicros appends ns/1000 as encoding/json writes float64(ns)/1e3,
// without the cost of finding a float's shortest form (latency's
// appendMicros always writes three decimals). Below 1e15 ns (the float's spacing under 0.0005) the
// decimal with at most three fraction digits is the one shortest number
// that reads back as the float, which is what encoding/json writes.
func appendJSONMicros(b []byte, ns uint64) []byte {
	if ns >= 1e15 {
		return appendJSONFloat(b, float64(ns)/1e3)
	}
	b = strconv.AppendUint(b, ns/1000, 10)
	r := ns % 1000
	if r == 0 {
		return b
	}
	b = append(b, '.', byte('0'+r/100), byte('0'+r/10%10), byte('0'+r%10))
	for b[len(b)-1] == '0' {
		b = b[:len(b)-1]
	}
	return b
}

// appendJSONFloat appends f as encoding/json writes a float64.
func appendJSONFloat(b []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// callEvents turns a thread's traced calls into complete events, in start
// order and parents before children; arguments, the exclusive time and
// calls that did not return are in args.
func callEvents(p *profile.Profile, t threadID, idx []int, us func(uint64) float64) []ChromeEvent {
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
			if iv.Woken != 0 { // the wait ends at the thread's queueing, after it
				at = us(iv.Woken)
			}
			evs = append(evs,
				ChromeEvent{Name: fmt.Sprintf("wakes %s (tid %d)", th.Name, tid), Cat: "wakeup", Ph: "X", Ts: at, Dur: &zero, PID: w.PID, TID: iv.Waker},
				ChromeEvent{Name: "wakeup", Cat: "wakeup", Ph: "s", Ts: at, PID: w.PID, TID: iv.Waker, ID: flow},
				ChromeEvent{Name: "wakeup", Cat: "wakeup", Ph: "f", BP: "e", Ts: at, PID: th.PID, TID: tid, ID: flow})
		}
	}
	return evs
}

// WriteChromeIntervals is WriteChromeSched with the intervals of a
// recording of culprit variance: each interval is an async slice
// (category "interval", named label, one id per interval) on its
// process's interval tracks; its critical path, when the recording has
// scheduler events, is nested in it as async slices of the same id, one
// per segment ("worker[12] on-cpu", "lock: holder[13] sleep" for a
// thread standing for the interval's wait, "queued"), and each step of
// the path from one thread to another is a flow arrow (category
// "critical_path") between zero-length events on the two threads' lanes.
// Without scheduler events a queue's hand-off is such an arrow.
func WriteChromeIntervals(w io.Writer, p *profile.Profile, tl *sched.Timeline, label string, spans []variance.Span) error {
	cw := newChromeWriter(w)
	if err := writeChromeSamples(cw, p); err != nil {
		return err
	}
	for _, e := range schedEvents(p, tl) {
		if err := cw.event(e); err != nil {
			return err
		}
	}
	for _, e := range intervalEvents(p, label, spans) {
		if err := cw.event(e); err != nil {
			return err
		}
	}
	return cw.close()
}

// intervalEvents draws the spans (see WriteChromeIntervals).
func intervalEvents(p *profile.Profile, label string, spans []variance.Span) []ChromeEvent {
	org := origin(p)
	us := func(ns uint64) float64 {
		if ns < org {
			return -float64(org-ns) / 1e3
		}
		return float64(ns-org) / 1e3
	}
	pids := map[uint32]uint32{}
	for _, c := range p.Calls {
		pids[c.TID] = c.PID
	}
	name := func(tid uint32) string { return fmt.Sprintf("%s[%d]", p.ThreadName(tid), tid) }
	// Flow ids above those of the wake-ups.
	flow := uint64(1) << 32
	zero := 0.0
	var evs []ChromeEvent
	for n, sp := range spans {
		if len(sp.Threads) == 0 {
			continue
		}
		id := uint64(n + 1)
		pid := pids[sp.Threads[0]]
		var threads []string
		for _, t := range sp.Threads {
			threads = append(threads, name(t))
		}
		evs = append(evs,
			ChromeEvent{Name: label, Cat: "interval", Ph: "b", Ts: us(sp.Start), PID: pid, TID: sp.Threads[0], ID: id,
				Args: map[string]string{"duration_us": fmt.Sprintf("%.3f", float64(sp.End-sp.Start)/1e3), "threads": strings.Join(threads, ", ")}})
		arrow := func(from, to uint32, at uint64, what string) {
			flow++
			t := us(at)
			evs = append(evs,
				ChromeEvent{Name: what + " → " + name(to), Cat: "critical_path", Ph: "X", Ts: t, Dur: &zero, PID: pids[from], TID: from},
				ChromeEvent{Name: what, Cat: "critical_path", Ph: "s", Ts: t, PID: pids[from], TID: from, ID: flow},
				ChromeEvent{Name: what + " from " + name(from), Cat: "critical_path", Ph: "X", Ts: t, Dur: &zero, PID: pids[to], TID: to},
				ChromeEvent{Name: what, Cat: "critical_path", Ph: "f", BP: "e", Ts: t, PID: pids[to], TID: to, ID: flow})
		}
		for i, sg := range sp.Path {
			what := name(sg.TID) + " " + sg.State
			switch {
			case sg.State == "queued":
				what = "queued"
			case sg.For != 0:
				what = sg.Wait + ": " + what
			}
			evs = append(evs,
				ChromeEvent{Name: what, Cat: "interval", Ph: "b", Ts: us(sg.From), PID: pid, TID: sp.Threads[0], ID: id},
				ChromeEvent{Name: what, Cat: "interval", Ph: "e", Ts: us(sg.To), PID: pid, TID: sp.Threads[0], ID: id})
			if i > 0 && sp.Path[i-1].TID != sg.TID {
				arrow(sp.Path[i-1].TID, sg.TID, sg.From, "critical path")
			}
		}
		if len(sp.Path) == 0 && sp.Queue[1] > 0 && len(sp.Threads) > 1 {
			arrow(sp.Threads[0], sp.Threads[len(sp.Threads)-1], sp.Queue[1], "hand-off")
		}
		evs = append(evs, ChromeEvent{Name: label, Cat: "interval", Ph: "e", Ts: us(sp.End), PID: pid, TID: sp.Threads[0], ID: id})
	}
	return evs
}
