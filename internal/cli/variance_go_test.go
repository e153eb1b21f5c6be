package cli

import (
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

// Refinement never proposes Go's stack-growth functions, which every Go
// function calls from its prologue and which do not return.
func TestProbeable(t *testing.T) {
	for f, want := range map[string]bool{"main.work": true, "runtime.morestack_noctxt.abi0": false, "runtime.morestack.abi0": false, "runtime.chansend1": true, "_start": false} {
		if probeable(f) != want {
			t.Errorf("probeable(%q) = %v", f, !want)
		}
	}
}
