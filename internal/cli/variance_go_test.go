package cli

import (
	"slices"
	"testing"

	"github.com/culprit-dev/culprit/internal/analysis/sched"
	"github.com/culprit-dev/culprit/internal/analysis/variance"
	"github.com/culprit-dev/culprit/internal/recording"
)

// A goroutine's timeline from its parks and the wake-ups that ended
// them: blocked until the waker readied it, runnable until the park
// returned; a park no wake-up ended (a timer's, the poller's) is blocked
// throughout, in the state its reason names. The critical path of the
// waiting goroutine goes through its waker.
func TestGoTimeline(t *testing.T) {
	a, b := uint32(variance.GoroutineLane|1), uint32(variance.GoroutineLane|2) // a waits for b
	reasons := []string{"", "chan receive", "sleep", "IO wait"}
	g := &variance.GoSched{
		Parks: []variance.GoPark{
			{Lane: a, Start: 100, End: 160, Reason: 1}, // a channel, until b sends at 150
			{Lane: a, Start: 200, End: 260, Reason: 2}, // a sleep: no wake-up seen
			{Lane: b, Start: 20, End: 90, Reason: 3},   // the network
		},
		Wakes: []variance.GoWake{{Time: 150, Waker: b, Wakee: a}},
		Goids: map[uint32]uint64{a: 7, b: 9},
	}
	calls := []variance.Call{{Start: 50, End: 300, TID: a}, {Start: 10, End: 155, TID: b}}
	tl, _ := goTimeline(g, calls, nil, variance.GoRuntime{Reasons: reasons, PollRG: -1, PollWG: -1}, nil, nil)
	want := []sched.Interval{
		{From: 50, To: 100, State: sched.OnCPU},
		{From: 100, To: 150, State: sched.Lock, Waker: b},
		{From: 150, To: 160, State: sched.Runnable},
		{From: 160, To: 200, State: sched.OnCPU},
		{From: 200, To: 260, State: sched.Sleep},
		{From: 260, To: 300, State: sched.OnCPU},
	}
	th := tl.Thread(a)
	if th == nil || th.Name != "goroutine 7" || len(th.Intervals) != len(want) {
		t.Fatalf("goroutine a: %+v", th)
	}
	for i, w := range want {
		got := th.Intervals[i]
		if got.From != w.From || got.To != w.To || got.State != w.State || got.Waker != w.Waker {
			t.Errorf("interval %d: %+v, want %+v", i, got, w)
		}
	}
	if bt := tl.Thread(b); bt == nil || bt.Intervals[1].State != sched.IO || bt.Intervals[1].Waker != 0 {
		t.Errorf("goroutine b: %+v", bt)
	}
	// a's wait from 100 to 150 is b's time on the path.
	path := tl.CriticalPath(90, sched.Point{TID: a, Time: 170}, nil)
	var onB uint64
	for _, s := range path {
		if s.TID == b {
			onB += s.Duration()
			if s.For != a || s.Wait != sched.Lock {
				t.Errorf("b's segment %+v does not stand for a's lock wait", s)
			}
		}
	}
	if onB != 50 {
		t.Errorf("b's time on a's path %d, want 50: %+v", onB, path)
	}
	// Unknown reasons (no table) are lock waits.
	if goState(2, nil) != sched.Lock || goState(2, reasons) != sched.Sleep {
		t.Error("goState")
	}
}

// With the kernel's timeline of the threads, a goroutine's running
// stretch is in the states of the thread its park returned on: preempted
// there, runnable; in a blocking system call, blocked; where the kernel
// shows nothing, the runtime's on-cpu.
func TestGoTimelineKernel(t *testing.T) {
	a := uint32(variance.GoroutineLane | 1)
	g := &variance.GoSched{
		Parks: []variance.GoPark{
			{Lane: a, Start: 100, End: 160, Reason: 1, TID: 7}, // runs on thread 7 from 160
			{Lane: a, Start: 260, End: 280, Reason: 1, TID: 8},
		},
		Goids: map[uint32]uint64{a: 5},
	}
	calls := []variance.Call{{Start: 50, End: 300, TID: a}}
	kernel := &sched.Timeline{Threads: map[uint32]*sched.Thread{
		7: {TID: 7, Intervals: []sched.Interval{
			{From: 0, To: 170, State: sched.OnCPU},
			{From: 170, To: 190, State: sched.Runnable}, // preempted
			{From: 190, To: 200, State: sched.OnCPU},
			{From: 200, To: 230, State: sched.IO}, // a read that blocked
		}},
	}}
	tl, _ := goTimeline(g, calls, nil, variance.GoRuntime{PollRG: -1, PollWG: -1}, nil, kernel)
	want := []sched.Interval{
		{From: 50, To: 100, State: sched.OnCPU}, // its thread before the first park not known
		{From: 100, To: 160, State: sched.Lock},
		{From: 160, To: 170, State: sched.OnCPU},
		{From: 170, To: 190, State: sched.Runnable},
		{From: 190, To: 200, State: sched.OnCPU},
		{From: 200, To: 230, State: sched.IO},
		{From: 230, To: 260, State: sched.OnCPU}, // past the kernel's last interval
		{From: 260, To: 280, State: sched.Lock},
		{From: 280, To: 300, State: sched.OnCPU}, // thread 8: no kernel timeline
	}
	th := tl.Thread(a)
	if th == nil || len(th.Intervals) != len(want) {
		t.Fatalf("goroutine: %+v", th)
	}
	for i, w := range want {
		if got := th.Intervals[i]; got.From != w.From || got.To != w.To || got.State != w.State {
			t.Errorf("interval %d: %+v, want %+v", i, got, w)
		}
	}
}

// Waits the runtime's sources ended: a timer's wait is a sleep, but for
// its part before another goroutine armed the timer (that goroutine's, a
// lock wait); the poller's is I/O, on a source named by its descriptor.
// On the critical path a source's wait is a segment of the source's, in
// the wait's state, and the path does not go on through it. A
// goroutine's wake-up names the function that made it (its site) and the
// probed calls the waker had open, innermost first.
func TestGoTimelineSources(t *testing.T) {
	a, b, c := uint32(variance.GoroutineLane|1), uint32(variance.GoroutineLane|2), uint32(variance.GoroutineLane|3)
	net := variance.NetpollLane(9)
	g := &variance.GoSched{
		Parks: []variance.GoPark{
			{Lane: a, Start: 100, End: 210, Reason: 1}, // a timer's channel, armed by b at 150
			{Lane: a, Start: 300, End: 360, Reason: 3}, // the network
			{Lane: a, Start: 400, End: 460, Reason: 1}, // c's send
		},
		Wakes: []variance.GoWake{
			{Time: 200, Waker: variance.LaneTimer, Wakee: a, Armed: b, ArmedAt: 150},
			{Time: 350, Waker: net, Wakee: a},
			{Time: 450, Waker: c, Wakee: a, Site: 0x401000},
		},
		Goids: map[uint32]uint64{a: 7, b: 9, c: 11},
	}
	probes := []variance.Probe{{Function: "main.handle"}, {Function: "main.loop"}, {Function: "main.step"}}
	calls := []variance.Call{{Start: 50, End: 500, TID: a}, {Start: 10, End: 160, TID: b},
		{Start: 400, End: 480, TID: c, Probe: 1}, {Start: 440, End: 452, TID: c, Probe: 2}, {Start: 453, End: 455, TID: c, Probe: 2}}
	name := func(pc uint64) string {
		if pc == 0x401000 {
			return "main.send"
		}
		return ""
	}
	tl, funcs := goTimeline(g, calls, probes, variance.GoRuntime{Reasons: []string{"", "chan receive", "sleep", "IO wait"}, PollRG: -1, PollWG: -1}, name, nil)
	want := []sched.Interval{
		{From: 50, To: 100, State: sched.OnCPU},
		{From: 100, To: 150, State: sched.Lock, Waker: b},
		{From: 150, To: 200, State: sched.Sleep, Waker: variance.LaneTimer},
		{From: 200, To: 210, State: sched.Runnable},
		{From: 210, To: 300, State: sched.OnCPU},
		{From: 300, To: 350, State: sched.IO, Waker: net},
		{From: 350, To: 360, State: sched.Runnable},
		{From: 360, To: 400, State: sched.OnCPU},
		{From: 400, To: 450, State: sched.Lock, Waker: c},
	}
	th := tl.Thread(a)
	if th == nil || len(th.Intervals) < len(want) {
		t.Fatalf("goroutine a: %+v", th)
	}
	for i, w := range want {
		if got := th.Intervals[i]; got.From != w.From || got.To != w.To || got.State != w.State || got.Waker != w.Waker {
			t.Errorf("interval %d: %+v, want %+v", i, got, w)
		}
	}
	if ws := th.Intervals[8].WakerStack; ws < 0 || int(ws) >= len(funcs) || !slices.Equal(funcs[ws], []string{"main.send", "main.step", "main.loop"}) {
		t.Errorf("c's wake-up stack %d of %v", ws, funcs)
	}
	for lane, n := range map[uint32]string{variance.LaneTimer: "(timer)", net: "(netpoll) fd 9"} {
		if src := tl.Thread(lane); src == nil || !src.Source || src.Name != n || len(src.Intervals) != 0 {
			t.Errorf("source %s: %+v", n, src)
		}
	}
	got := tl.CriticalPath(90, sched.Point{TID: a, Time: 370}, nil)
	wantPath := []sched.Segment{
		{TID: a, From: 90, To: 100, State: sched.OnCPU},
		{TID: b, From: 100, To: 150, State: sched.OnCPU, For: a, Wait: sched.Lock},
		{TID: variance.LaneTimer, From: 150, To: 200, State: sched.Sleep, For: a, Wait: sched.Sleep},
		{TID: a, From: 200, To: 210, State: sched.Runnable},
		{TID: a, From: 210, To: 300, State: sched.OnCPU},
		{TID: net, From: 300, To: 350, State: sched.IO, For: a, Wait: sched.IO},
		{TID: a, From: 350, To: 360, State: sched.Runnable},
		{TID: a, From: 360, To: 370, State: sched.OnCPU},
	}
	if !slices.Equal(got, wantPath) {
		t.Errorf("path\n%+v, want\n%+v", got, wantPath)
	}
}

// Refinement never proposes Go's stack-growth functions, which every Go
// function calls from its prologue and which do not return.
func TestProbeable(t *testing.T) {
	for f, want := range map[string]bool{"main.work": true, "runtime.morestack_noctxt.abi0": false, "runtime.morestack.abi0": false, "runtime.chansend1": true, "_start": false} {
		if probeable(f) != want {
			t.Errorf("probeable(%q) = %v", f, !want)
		}
	}
}

// A goroutine time.AfterFunc's timer started is, before its first call,
// the timer's sleep since the arming, then runnable from its creation;
// the wait of a goroutine it ends is on the critical path as its work,
// then that sleep, and a path that reaches back before the arming goes
// on in the goroutine that armed the timer (a created-by edge).
func TestGoTimelineAfterFunc(t *testing.T) {
	probes := []recording.Probe{
		{ID: 1, Function: "main.handle"},
		{ID: 2, Function: "runtime.gopark", Params: []string{"unlockf:p8:func()", "lock:p8:void *", "reason:u1:runtime.waitReason"}},
		{ID: 3, Function: "runtime.ready", Params: []string{"gp:p8:runtime.g *", "traceskip:i8:int", "next:u1:bool", "gp->goid:u8:uint64"}},
		{ID: 4, Function: "runtime.(*timer).modify", Params: []string{"t:p8:runtime.timer *", "when:i8:int64"}},
		{ID: 5, Function: "runtime.(*timer).unlockAndRun", Params: []string{"t:p8:runtime.timer *", "now:i8:int64"}},
		{ID: 6, Function: "time.goFunc", Params: []string{"arg:p8:interface {}", "seq:u8:uintptr", "delta:i8:int64"}},
		{ID: 7, Function: "runtime.runqput", Params: []string{"pp:p8:runtime.p *", "gp:p8:runtime.g *", "next:u1:bool", "gp->goid:u8:uint64"}},
		{ID: 8, Function: "runtime.closechan", Params: []string{"c:p8:runtime.hchan *"}},
		{ID: 9, Function: "main.work"},
	}
	const g0 = 0xc000001000
	const tm = 0x7000
	calls := []recording.Call{
		// Goroutine 7 (handle, 10 to 400) arms tm at 20 and waits on a
		// channel from 50 to 320.
		{Start: 10, End: 400, Probe: 1, Goroutine: 7, TID: 100},
		{Start: 20, End: 21, Probe: 4, Goroutine: 7, TID: 100, Args: []uint64{tm, 1000}},
		{Start: 50, End: 320, Probe: 2, Goroutine: 7, TID: 100, Args: []uint64{1, 0x9000, 1}},
		// tm fires at 200; its goFunc queues goroutine 20 at 210, which
		// runs work from 240 and closes the channel at 300.
		{Start: 200, End: 230, Probe: 5, Goroutine: g0, TID: 102, Args: []uint64{tm, 200}},
		{Start: 205, End: 225, Probe: 6, Goroutine: g0, TID: 102, Args: []uint64{1, 0, 0}},
		{Start: 210, End: 211, Probe: 7, Goroutine: g0, TID: 102, Args: []uint64{1, 2, 1, 20}},
		{Start: 240, End: 290, Probe: 9, Goroutine: 20, TID: 103},
		{Start: 295, End: 310, Probe: 8, Goroutine: 20, TID: 103},
		{Start: 300, End: 301, Probe: 3, Goroutine: g0, TID: 103, Args: []uint64{1, 0, 1, 7}},
	}
	in := variance.FromRecords(variance.Spec{Start: "main.handle", End: "main.handle"}, calls, probes, nil, nil)
	lane := map[uint64]uint32{}
	for l, g := range in.Go.Goids {
		lane[g] = l
	}
	a, f := lane[7], lane[20]
	tl, _ := goTimeline(in.Go, in.Calls, in.Probes, variance.GoRuntime{Reasons: []string{"", "chan receive"}, PollRG: -1, PollWG: -1}, nil, nil)
	want := []sched.Interval{
		{From: 20, To: 210, State: sched.Sleep, Waker: variance.LaneTimer},
		{From: 210, To: 240, State: sched.Runnable},
		{From: 240, To: 300, State: sched.OnCPU}, // to its last event, the wake-up
	}
	th := tl.Thread(f)
	if th == nil || len(th.Intervals) != len(want) {
		t.Fatalf("the AfterFunc's goroutine: %+v", th)
	}
	for i, w := range want {
		if got := th.Intervals[i]; got.From != w.From || got.To != w.To || got.State != w.State || got.Waker != w.Waker {
			t.Errorf("interval %d: %+v, want %+v", i, got, w)
		}
	}
	// Goroutine 7's wait, 50 to 300: the goroutine's work and runnable
	// time, and before them the timer's sleep since 50; 7 runs 10 to 50
	// and 320 to 400, runnable from the wake-up to 320.
	by := map[uint32]map[sched.State]uint64{}
	for _, s := range tl.CriticalPath(10, sched.Point{TID: a, Time: 400}, nil) {
		if by[s.TID] == nil {
			by[s.TID] = map[sched.State]uint64{}
		}
		by[s.TID][s.State] += s.Duration()
	}
	if by[f][sched.OnCPU] != 60 || by[f][sched.Runnable] != 30 || by[variance.LaneTimer][sched.Sleep] != 160 ||
		by[a][sched.OnCPU] != 120 || by[a][sched.Runnable] != 20 {
		t.Errorf("path by goroutine and state: %v", by)
	}
	// From before the arming, the goroutine's path goes on in the one
	// that armed the timer.
	path := tl.CriticalPath(5, sched.Point{TID: f, Time: 300}, nil)
	for _, s := range path {
		if s.From < 20 && s.TID != a || s.From >= 20 && s.TID == a || s.From == 20 && s.TID != variance.LaneTimer {
			t.Errorf("path from before the arming: %+v", path)
			break
		}
	}
}

// A wait the network poller ended is the writer's until its write, when
// the kernel says who that was: the poller's thread waited for I/O
// until a thread of the program woke it, then ran to the readiness
// without waiting again, and the goroutine that thread ran at the
// wake-up (the last whose park returned on it, not parked since) is the
// writer; the rest is the poller's. A poller woken by an interrupt is
// I/O from outside the program: the whole wait is the poller's.
func TestGoTimelineNetWriter(t *testing.T) {
	a, b := uint32(variance.GoroutineLane|1), uint32(variance.GoroutineLane|2)
	net := variance.NetpollLane(9)
	g := &variance.GoSched{
		Parks: []variance.GoPark{
			{Lane: a, Start: 100, End: 300, Reason: 3},        // the network
			{Lane: b, Start: 20, End: 80, Reason: 1, TID: 60}, // b runs on thread 60 from 80
			{Lane: a, Start: 400, End: 600, Reason: 3},        // the network again
		},
		Wakes: []variance.GoWake{
			{Time: 250, Waker: net, Wakee: a, Poller: 50},
			{Time: 550, Waker: net, Wakee: a, Poller: 50},
		},
		Goids: map[uint32]uint64{a: 7, b: 9},
	}
	calls := []variance.Call{{Start: 50, End: 700, TID: a}, {Start: 10, End: 260, TID: b}}
	kernel := &sched.Timeline{Threads: map[uint32]*sched.Thread{
		50: {TID: 50, Intervals: []sched.Interval{
			{From: 0, To: 200, State: sched.IO, Waker: 60}, // epoll_wait, until thread 60's write
			{From: 200, To: 210, State: sched.Runnable},
			{From: 210, To: 270, State: sched.OnCPU},
			{From: 270, To: 500, State: sched.IO, Interrupt: true},
			{From: 500, To: 560, State: sched.OnCPU},
		}},
	}}
	tl, _ := goTimeline(g, calls, nil, variance.GoRuntime{Reasons: []string{"", "chan receive", "sleep", "IO wait"}, PollRG: -1, PollWG: -1}, nil, kernel)
	want := []sched.Interval{
		{From: 50, To: 100, State: sched.OnCPU},
		{From: 100, To: 200, State: sched.IO, Waker: b},
		{From: 200, To: 250, State: sched.IO, Waker: net},
		{From: 250, To: 300, State: sched.Runnable},
		{From: 300, To: 400, State: sched.OnCPU},
		{From: 400, To: 550, State: sched.IO, Waker: net},
		{From: 550, To: 600, State: sched.Runnable},
	}
	th := tl.Thread(a)
	if th == nil || len(th.Intervals) < len(want) {
		t.Fatalf("goroutine a: %+v", th)
	}
	for i, w := range want {
		if got := th.Intervals[i]; got.From != w.From || got.To != w.To || got.State != w.State || got.Waker != w.Waker {
			t.Errorf("interval %d: %+v, want %+v", i, got, w)
		}
	}
	// On the path the writer's time stands for a's I/O wait.
	var onB uint64
	for _, s := range tl.CriticalPath(90, sched.Point{TID: a, Time: 300}, nil) {
		if s.TID == b {
			onB += s.Duration()
			if s.For != a || s.Wait != sched.IO {
				t.Errorf("b's segment %+v does not stand for a's I/O wait", s)
			}
		}
	}
	if onB != 100 {
		t.Errorf("b's time on a's path %d, want 100", onB)
	}
}
