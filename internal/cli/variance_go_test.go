package cli

import (
	"slices"
	"testing"

	"github.com/culprit-dev/culprit/internal/analysis/sched"
	"github.com/culprit-dev/culprit/internal/analysis/variance"
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
