package sched

import (
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
)

// ev builds a profile from scheduler events. Stack 0 is empty, 1 blocks in
// a futex wait, 2 in a pipe read, 3 in nanosleep.
type ev struct {
	t     uint64
	e     recording.Event
	tid   uint32
	arg   uint64
	stack int32
}

func prof(evs ...ev) *profile.Profile {
	p := &profile.Profile{
		Frames: []profile.Frame{{Function: "futex_wait", Kernel: true}, {Function: "__x64_sys_futex", Kernel: true},
			{Function: "pipe_read", Kernel: true}, {Function: "__x64_sys_read", Kernel: true}, {Function: "hrtimer_nanosleep", Kernel: true},
			{Function: "main"}},
		Stacks:  [][]int32{{}, {0, 1, 5}, {2, 3, 5}, {4, 5}},
		Threads: map[uint32]profile.Thread{},
	}
	for _, e := range evs {
		p.Samples = append(p.Samples, profile.Sample{Time: e.t, PID: 1, TID: e.tid, Event: e.e, Arg: e.arg, Stack: e.stack})
		p.Threads[e.tid] = profile.Thread{PID: 1, TID: e.tid, Comm: "t"}
	}
	return p
}

const (
	in   = recording.EventSwitchIn
	out  = recording.EventSwitch
	wake = recording.EventWakeup
)

func states(t *testing.T, p *profile.Profile) *Timeline {
	t.Helper()
	tl, err := States(p)
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

func TestStatesClassifyAndWakers(t *testing.T) {
	tl := states(t, prof(
		ev{10, in, 2, 0, 0},
		ev{20, out, 2, recording.TaskInterruptible, 1}, // 2 waits on a futex
		ev{25, in, 3, 0, 0},
		ev{40, wake, 3, 2, 0}, // 3 wakes 2
		ev{45, out, 3, recording.TaskPreempted, 0},
		ev{50, in, 2, 0, 0},
		ev{60, out, 2, recording.TaskInterruptible, 2}, // 2 reads a pipe
		ev{70, wake, 3, 2 | recording.WakeupInterrupt, 0},
		ev{75, in, 2, 0, 0},
		ev{80, out, 2, recording.TaskInterruptible, 3}, // 2 sleeps
		ev{90, in, 2, 0, 0},                            // no wake-up seen
		ev{95, out, 2, recording.TaskUninterruptible, 0},
		ev{99, in, 3, 0, 0},
	))
	want := []Interval{
		{From: 10, To: 20, State: OnCPU},
		{From: 20, To: 40, State: Lock, Waker: 3},
		{From: 40, To: 50, State: Runnable},
		{From: 50, To: 60, State: OnCPU},
		{From: 60, To: 70, State: IO, Interrupt: true},
		{From: 70, To: 75, State: Runnable},
		{From: 75, To: 80, State: OnCPU},
		{From: 80, To: 90, State: Sleep},
		{From: 90, To: 95, State: OnCPU},
		{From: 95, To: 99, State: IO, Open: true},
	}
	got := tl.Thread(2).Intervals
	if len(got) != len(want) {
		t.Fatalf("thread 2: %+v", got)
	}
	for i, w := range want {
		g := got[i]
		if g.From != w.From || g.To != w.To || g.State != w.State || g.Waker != w.Waker || g.Interrupt != w.Interrupt || g.Open != w.Open {
			t.Errorf("interval %d: got %+v, want %+v", i, g, w)
		}
	}
	if th3 := tl.Thread(3).Intervals; th3[0].State != OnCPU || th3[0].From != 25 || th3[1].State != Runnable || th3[1].From != 45 {
		t.Errorf("thread 3: %+v", th3)
	}
	sum := tl.Summarize()
	if len(sum) != 2 || sum[0].TID != 2 || sum[0].Time[Lock] != 20 || sum[0].Wakers[0].TID != 3 || sum[0].Wakers[0].Time != 20 {
		t.Errorf("summary: %+v", sum)
	}
}

// A wake-up that comes before the sleeper left the CPU makes its switch
// away report a runnable state: the waker is kept on that interval.
func TestStatesEarlyWakeup(t *testing.T) {
	tl := states(t, prof(
		ev{10, in, 2, 0, 0},
		ev{15, in, 3, 0, 0},
		ev{18, wake, 3, 2, 0},
		ev{20, out, 2, recording.TaskRunning, 1},
		ev{30, in, 2, 0, 0},
	))
	iv, ok := tl.Thread(2).At(25)
	if !ok || iv.State != Runnable || iv.Waker != 3 {
		t.Errorf("at 25: %+v %v", iv, ok)
	}
}

// A wake-up stamped just before the switch away that reports a sleep, and
// no wake-up after it: the thread was woken while the kernel switched it
// away, and waited for a CPU, not for its waker.
func TestStatesWakeupDuringSwitch(t *testing.T) {
	tl := states(t, prof(
		ev{10, in, 2, 0, 0},
		ev{15, in, 3, 0, 0},
		ev{19, wake, 3, 2, 0},
		ev{20, out, 2, recording.TaskInterruptible, 1},
		ev{30, in, 2, 0, 0},
		// Woken early, then a sleep that a later wake-up ends.
		ev{40, wake, 3, 2, 0},
		ev{41, out, 2, recording.TaskInterruptible, 1},
		ev{50, wake, 3, 2, 0},
		ev{55, in, 2, 0, 0},
	))
	got := tl.Thread(2).Intervals
	want := []Interval{
		{From: 10, To: 20, State: OnCPU},
		{From: 20, To: 20, State: Lock, Waker: 3},
		{From: 20, To: 30, State: Runnable},
		{From: 30, To: 41, State: OnCPU},
		{From: 41, To: 50, State: Lock, Waker: 3},
		{From: 50, To: 55, State: Runnable},
	}
	if len(got) < len(want) {
		t.Fatalf("thread 2: %+v", got)
	}
	for i, w := range want {
		g := got[i]
		if g.From != w.From || g.To != w.To || g.State != w.State || g.Waker != w.Waker {
			t.Errorf("interval %d: got %+v, want %+v", i, g, w)
		}
	}
}

// A wait no recorded wake-up ended is marked, and counted: ended by the
// thread's switch onto a CPU, or, when that was not recorded either (the
// kernel delivered neither), by the first sample of it running or its
// switch away.
func TestStatesUnwoken(t *testing.T) {
	tl := states(t, prof(
		ev{10, in, 2, 0, 0},
		ev{20, out, 2, recording.TaskInterruptible, 3}, // sleeps
		ev{30, in, 2, 0, 0},                            // no wake-up
		ev{40, out, 2, recording.TaskInterruptible, 3},
		ev{52, recording.EventCPU, 2, 0, 0}, // runs, no switch-in
		ev{60, out, 2, recording.TaskPreempted, 0},
		ev{65, recording.EventSyscallExit, 2, 0, 0}, // runs again
		ev{70, out, 2, recording.TaskInterruptible, 1},
		ev{80, out, 2, recording.TaskInterruptible, 1}, // no switch-in, no wake-up
		ev{90, wake, 3, 2, 0},
		ev{95, in, 2, 0, 0},
	))
	got := tl.Thread(2).Intervals
	want := []Interval{
		{From: 10, To: 20, State: OnCPU},
		{From: 20, To: 30, State: Sleep, Unwoken: true},
		{From: 30, To: 40, State: OnCPU},
		{From: 40, To: 52, State: Sleep, Unwoken: true},
		{From: 52, To: 60, State: OnCPU},
		{From: 60, To: 65, State: Runnable},
		{From: 65, To: 70, State: OnCPU},
		{From: 70, To: 80, State: Lock, Unwoken: true},
		{From: 80, To: 80, State: OnCPU},
		{From: 80, To: 90, State: Lock, Waker: 3},
		{From: 90, To: 95, State: Runnable},
	}
	if len(got) < len(want) {
		t.Fatalf("thread 2: %+v", got)
	}
	for i, w := range want {
		g := got[i]
		if g.From != w.From || g.To != w.To || g.State != w.State || g.Waker != w.Waker || g.Unwoken != w.Unwoken {
			t.Errorf("interval %d: got %+v, want %+v", i, g, w)
		}
	}
	if tl.Unwoken != 3 || tl.Unseen != 3 || len(tl.Warnings) != 2 {
		t.Errorf("%d unwoken, %d unseen, warnings %q", tl.Unwoken, tl.Unseen, tl.Warnings)
	}
}

// The path through a lock wait is the holder's; through the holder's own
// wait, its waker's; a hand-off jumps to the thread that queued the work.
func TestCriticalPath(t *testing.T) {
	tl := states(t, prof(
		ev{0, in, 4, 0, 0},
		ev{0, in, 3, 0, 0},
		ev{5, out, 3, recording.TaskInterruptible, 2}, // 3 waits for 4 (a pipe)
		ev{10, in, 2, 0, 0},
		ev{20, out, 2, recording.TaskInterruptible, 1}, // 2 waits for 3 (a lock)
		ev{30, wake, 4, 3, 0},
		ev{30, out, 4, recording.TaskInterruptible, 2},
		ev{32, in, 3, 0, 0},
		ev{50, wake, 3, 2, 0},
		ev{55, in, 2, 0, 0},
		ev{60, out, 2, recording.TaskPreempted, 0},
		ev{61, in, 2, 0, 0},
		ev{70, out, 2, recording.TaskInterruptible, 2},
	))
	path := tl.CriticalPath(10, Point{TID: 2, Time: 70}, nil)
	want := []Segment{
		{TID: 4, From: 20, To: 30, State: OnCPU, For: 3, Wait: IO},
		{TID: 3, From: 30, To: 32, State: Runnable, For: 2, Wait: Lock},
		{TID: 3, From: 32, To: 50, State: OnCPU, For: 2, Wait: Lock},
		{TID: 2, From: 50, To: 55, State: Runnable},
		{TID: 2, From: 55, To: 60, State: OnCPU},
		{TID: 2, From: 60, To: 61, State: Runnable},
		{TID: 2, From: 61, To: 70, State: OnCPU},
	}
	// 10–20: thread 2 on the CPU, first.
	want = append([]Segment{{TID: 2, From: 10, To: 20, State: OnCPU}}, want...)
	if len(path) != len(want) {
		t.Fatalf("path %+v", path)
	}
	for i := range want {
		if path[i] != want[i] {
			t.Errorf("segment %d: got %+v, want %+v", i, path[i], want[i])
		}
	}
	own, wait := Split(path)
	if own[OnCPU] != 10+10+18+5+9 || wait[Lock] != 20 || wait[IO] != 10 {
		t.Errorf("split: own %v wait %v", own, wait)
	}

	// Thread 2 took work at 56 that thread 4 queued at 2.
	path = tl.CriticalPath(0, Point{TID: 2, Time: 70}, []Handoff{{From: Point{TID: 4, Time: 2}, To: Point{TID: 2, Time: 56}}})
	want = []Segment{
		{TID: 4, From: 0, To: 2, State: OnCPU},
		{TID: 2, From: 2, To: 56, State: Queued},
		{TID: 2, From: 56, To: 60, State: OnCPU},
		{TID: 2, From: 60, To: 61, State: Runnable},
		{TID: 2, From: 61, To: 70, State: OnCPU},
	}
	if len(path) != len(want) {
		t.Fatalf("hand-off path %+v", path)
	}
	for i := range want {
		if path[i] != want[i] {
			t.Errorf("hand-off segment %d: got %+v, want %+v", i, path[i], want[i])
		}
	}
}

func TestStatesRefuses(t *testing.T) {
	if _, err := States(prof(ev{1, recording.EventCPU, 2, 0, 0})); err != ErrNoEvents {
		t.Errorf("no events: %v", err)
	}
	p := prof(ev{1, in, 2, 0, 0})
	p.Metas = []recording.Meta{{Extra: map[string]string{"event_period": "10"}}}
	if _, err := States(p); err == nil {
		t.Error("a recording of one in 10 events was accepted")
	}
}

// A thread whose first event is a wake-up (a new thread's first, by the
// thread that created it) waits for a CPU from there; a wake-up of no
// thread (TID 0: made outside the recorded processes) ends a sleep with
// no waker, the wait for a CPU after it runnable.
func TestStatesFirstWakeupAndOutsideWaker(t *testing.T) {
	p := prof(
		ev{10, in, 2, 0, 0},
		ev{20, wake, 2, 5, 0}, // 2 creates 5, which waits for a CPU
		ev{40, in, 5, 0, 0},
		ev{50, out, 5, recording.TaskInterruptible, 3}, // 5 sleeps
		ev{80, wake, 0, 5, 0},                          // a timer's interrupt elsewhere
		ev{95, in, 5, 0, 0},
		ev{99, out, 2, recording.TaskPreempted, 0},
	)
	delete(p.Threads, 0)
	tl := states(t, p)
	th := tl.Thread(5)
	want := []Interval{
		{From: 20, To: 40, State: Runnable},
		{From: 40, To: 50, State: OnCPU},
		{From: 50, To: 80, State: Sleep},
		{From: 80, To: 95, State: Runnable},
	}
	if th == nil || len(th.Intervals) < len(want) {
		t.Fatalf("thread 5: %+v", th)
	}
	for i, w := range want {
		if got := th.Intervals[i]; got.From != w.From || got.To != w.To || got.State != w.State || got.Waker != 0 {
			t.Errorf("interval %d: %+v, want %+v", i, got, w)
		}
	}
}

// A wait no wake-up ended ends where the thread's run delay at its
// switches away places the wake-up: its growth over the run after the
// wait is the wait for a CPU before it. A growth of 0 (the kernel counted
// no wait) or longer than the wait (a switch away not recorded) places
// nothing.
func TestStatesWakeFromRunDelay(t *testing.T) {
	tl := states(t, prof(
		ev{10, in, 2, 0, 0},
		ev{20, out, 2, awayDelay(recording.TaskInterruptible, 1<<32-4), 3}, // sleeps
		ev{40, in, 2, 0, 0}, // no wake-up
		ev{50, out, 2, awayDelay(recording.TaskPreempted, 2), 0}, // waited 6 for a CPU (modulo 2^32)
		ev{55, in, 2, 0, 0},
		ev{60, out, 2, awayDelay(recording.TaskInterruptible, 7), 3}, // the preemption's 5
		ev{70, in, 2, 0, 0},
		ev{80, out, 2, awayDelay(recording.TaskInterruptible, 7), 3}, // no wait counted
		ev{90, in, 2, 0, 0},
		ev{95, out, 2, awayDelay(recording.TaskInterruptible, 50), 3}, // more than the wait
	))
	want := []Interval{
		{From: 10, To: 20, State: OnCPU},
		{From: 20, To: 34, State: Sleep, Unwoken: true, WakeFromRunDelay: true},
		{From: 34, To: 40, State: Runnable},
		{From: 40, To: 50, State: OnCPU},
		{From: 50, To: 55, State: Runnable},
		{From: 55, To: 60, State: OnCPU},
		{From: 60, To: 70, State: Sleep, Unwoken: true},
		{From: 70, To: 80, State: OnCPU},
		{From: 80, To: 90, State: Sleep, Unwoken: true},
		{From: 90, To: 95, State: OnCPU},
	}
	got := tl.Thread(2).Intervals
	if len(got) < len(want) {
		t.Fatalf("thread 2: %+v", got)
	}
	for i, w := range want {
		g := got[i]
		if g.From != w.From || g.To != w.To || g.State != w.State || g.Unwoken != w.Unwoken || g.WakeFromRunDelay != w.WakeFromRunDelay {
			t.Errorf("interval %d: got %+v, want %+v", i, g, w)
		}
	}
	if tl.Unwoken != 3 || tl.WokenFromRunDelay != 1 || len(tl.Warnings) != 1 || !strings.Contains(tl.Warnings[0], "1 end where the kernel's run delay places") {
		t.Errorf("%d unwoken, %d placed, warnings %q", tl.Unwoken, tl.WokenFromRunDelay, tl.Warnings)
	}
}

// A new thread's wait for its first CPU, when no recorded wake-up began
// its timeline, is placed by its run delay at its first switch away: the
// run that switch ends is its first (its switch onto a CPU carried a
// sum_exec_runtime of 0), so the run delay is all its wait since the
// kernel queued it at its creation. Not before the timeline's start; not
// for a thread that ran before (one already running when the recording
// began), nor where the creation's wake-up was recorded.
func TestStatesFirstRunFromRunDelay(t *testing.T) {
	tl := states(t, prof(
		ev{5, in, 9, 0, 0}, // the creator, running throughout
		ev{10, wake, 9, 5, 0},
		ev{20, in, 3, inRuntime(0), 0},
		ev{20, in, 4, inRuntime(7), 0},
		ev{20, in, 5, inRuntime(0), 0},
		ev{30, out, 3, awayDelay(recording.TaskInterruptible, 50), 3}, // longer than the recording
		ev{30, out, 4, awayDelay(recording.TaskInterruptible, 6), 3},
		ev{30, out, 5, awayDelay(recording.TaskInterruptible, 8), 3},
		ev{40, in, 2, inRuntime(0), 0},
		ev{50, out, 2, awayDelay(recording.TaskInterruptible, 12), 3},
	))
	for _, c := range []struct {
		tid  uint32
		want []Interval
	}{
		{2, []Interval{{From: 28, To: 40, State: Runnable}, {From: 40, To: 50, State: OnCPU}}},
		{3, []Interval{{From: 5, To: 20, State: Runnable}, {From: 20, To: 30, State: OnCPU}}},
		{4, []Interval{{From: 20, To: 30, State: OnCPU}}},
		{5, []Interval{{From: 10, To: 20, State: Runnable}, {From: 20, To: 30, State: OnCPU}}},
	} {
		got := tl.Thread(c.tid).Intervals
		if len(got) != len(c.want)+1 {
			t.Errorf("thread %d: %+v", c.tid, got)
			continue
		}
		for i, w := range c.want {
			if g := got[i]; g.From != w.From || g.To != w.To || g.State != w.State {
				t.Errorf("thread %d, interval %d: got %+v, want %+v", c.tid, i, g, w)
			}
		}
		if last := got[len(got)-1]; last.State != Sleep || !last.Open {
			t.Errorf("thread %d: last interval %+v", c.tid, last)
		}
	}
	if tl.FirstFromRunDelay != 2 || tl.Unwoken != 0 || len(tl.Warnings) != 0 {
		t.Errorf("%d first waits placed, %d unwoken, warnings %q", tl.FirstFromRunDelay, tl.Unwoken, tl.Warnings)
	}
}

// A wait a recorded wake-up ended lasts, where the thread's run delay
// is recorded at its switches away, to the thread's queueing as the
// kernel's run delay places it: its growth over the run after the wait
// is the Runnable interval before the run, the wake-up kept in Woken
// (also one that came while the thread was being switched away). A
// growth of 0 (the kernel's run queue clock not read again between the
// queueing and the switch in) leaves an empty Runnable interval; a growth
// longer than the stamps' wait, and a preemption's wait, keep the stamps.
// A critical path through the wait follows the waker up to the wake-up,
// the thread itself from there.
func TestStatesQueuedFromRunDelay(t *testing.T) {
	tl := states(t, prof(
		ev{5, in, 3, 0, 0}, // the waker, running throughout
		ev{10, in, 2, 0, 0},
		ev{20, out, 2, awayDelay(recording.TaskInterruptible, 100), 1},
		ev{30, wake, 3, 2, 0},
		ev{40, in, 2, 0, 0},
		ev{50, out, 2, awayDelay(recording.TaskInterruptible, 104), 1}, // queued 4 before the switch in
		ev{60, wake, 3, 2, 0},
		ev{70, in, 2, 0, 0},
		ev{80, out, 2, awayDelay(recording.TaskInterruptible, 104), 1}, // no wait counted
		ev{90, wake, 3, 2, 0},
		ev{95, in, 2, 0, 0},
		ev{100, out, 2, awayDelay(recording.TaskPreempted, 120), 0}, // 16: more than the stamps' 5
		ev{105, in, 2, 0, 0},
		ev{110, out, 2, awayDelay(recording.TaskInterruptible, 123), 1}, // the preemption's 3
		ev{115, wake, 3, 2, 0},
		ev{120, in, 2, 0, 0},
		ev{125, wake, 3, 2, 0}, // while 2 still runs
		ev{130, out, 2, awayDelay(recording.TaskInterruptible, 125), 1},
		ev{140, in, 2, 0, 0},
		ev{150, out, 2, awayDelay(recording.TaskInterruptible, 129), 1},
	))
	want := []Interval{
		{From: 10, To: 20, State: OnCPU},
		{From: 20, To: 36, State: Lock, Waker: 3, Woken: 30},
		{From: 36, To: 40, State: Runnable},
		{From: 40, To: 50, State: OnCPU},
		{From: 50, To: 70, State: Lock, Waker: 3, Woken: 60},
		{From: 70, To: 70, State: Runnable},
		{From: 70, To: 80, State: OnCPU},
		{From: 80, To: 90, State: Lock, Waker: 3},
		{From: 90, To: 95, State: Runnable},
		{From: 95, To: 100, State: OnCPU},
		{From: 100, To: 105, State: Runnable},
		{From: 105, To: 110, State: OnCPU},
		{From: 110, To: 118, State: Lock, Waker: 3, Woken: 115},
		{From: 118, To: 120, State: Runnable},
		{From: 120, To: 130, State: OnCPU},
		{From: 130, To: 136, State: Lock, Waker: 3, Woken: 130},
		{From: 136, To: 140, State: Runnable},
		{From: 140, To: 150, State: OnCPU},
		{From: 150, To: 150, State: Lock, Open: true},
	}
	got := tl.Thread(2).Intervals
	if len(got) != len(want) {
		t.Fatalf("thread 2: %+v", got)
	}
	for i, w := range want {
		g := got[i]
		if g.From != w.From || g.To != w.To || g.State != w.State || g.Waker != w.Waker || g.Woken != w.Woken || g.Unwoken || g.Open != w.Open {
			t.Errorf("interval %d: got %+v, want %+v", i, g, w)
		}
	}
	if tl.Unwoken != 0 || len(tl.Warnings) != 0 {
		t.Errorf("%d unwoken, warnings %q", tl.Unwoken, tl.Warnings)
	}
	path := tl.CriticalPath(20, Point{TID: 2, Time: 40}, nil)
	wantPath := []Segment{
		{TID: 3, From: 20, To: 30, State: OnCPU, For: 2, Wait: Lock},
		{TID: 2, From: 30, To: 36, State: Lock, Waker: 3},
		{TID: 2, From: 36, To: 40, State: Runnable},
	}
	if len(path) != len(wantPath) {
		t.Fatalf("path %+v", path)
	}
	for i := range wantPath {
		if path[i] != wantPath[i] {
			t.Errorf("segment %d: got %+v, want %+v", i, path[i], wantPath[i])
		}
	}
	// A path ending during the wake-up's latency is the thread's own
	// after the wake-up.
	path = tl.CriticalPath(25, Point{TID: 2, Time: 33}, nil)
	wantPath = []Segment{
		{TID: 3, From: 25, To: 30, State: OnCPU, For: 2, Wait: Lock},
		{TID: 2, From: 30, To: 33, State: Lock, Waker: 3},
	}
	if len(path) != len(wantPath) {
		t.Fatalf("path %+v", path)
	}
	for i := range wantPath {
		if path[i] != wantPath[i] {
			t.Errorf("segment %d: got %+v, want %+v", i, path[i], wantPath[i])
		}
	}
}

// A run's length is the kernel's account of it where the switches onto
// a CPU carry the thread's sum_exec_runtime: its growth from the switch in
// that began the run to the thread's next, the stamps of both late by the
// scheduler's work before the tracepoint. The run ends that long after it
// began, the wait after it begins there: a run whose switch away was
// stamped late is shorter than its stamps, one whose switch in was is
// longer, over the waits after it if need be (a wait a wake-up during its
// switch away ended, then empty); no longer than up to its next switch
// in, no shorter than up to the last wake-up it made. A run no switch in began (a sample showed it)
// has no account, nor the run before it. Without the kernel's values
// (older recordings) every run is as its stamps say.
func TestStatesKernelRunLength(t *testing.T) {
	events := func(kernel bool) *profile.Profile {
		at := func(ns uint64) uint64 {
			if kernel {
				return inRuntime(ns)
			}
			return 0
		}
		return prof(
			ev{100, in, 2, at(1000), 0},
			ev{130, out, 2, recording.TaskInterruptible, 1}, // 20 by the kernel
			ev{150, wake, 3, 2, 0},
			ev{160, in, 2, at(1020), 0},
			ev{170, out, 2, recording.TaskPreempted, 0}, // 14 by the kernel
			ev{180, in, 2, at(1034), 0},
			ev{190, out, 2, recording.TaskPreempted, 0}, // 100 by the kernel, 15 at most
			ev{195, in, 2, at(1134), 0},
			ev{198, wake, 2, 3, 0},
			ev{200, out, 2, recording.TaskInterruptible, 1}, // 1 by the kernel, 3 at least
			ev{210, in, 2, at(1135), 0},
			ev{220, out, 2, recording.TaskInterruptible, 1},
			ev{230, recording.EventCPU, 2, 0, 0}, // ran, no switch in recorded
			ev{240, out, 2, recording.TaskInterruptible, 1},
			ev{250, in, 2, at(2000), 0},
			ev{258, wake, 3, 2, 0}, // while 2 still runs
			ev{260, out, 2, recording.TaskInterruptible, 1},
			ev{270, in, 2, at(2015), 0}, // 15 by the kernel
			ev{280, out, 2, recording.TaskInterruptible, 1},
		)
	}
	check := func(t *testing.T, tl *Timeline, want []Interval, runs int) {
		t.Helper()
		got := tl.Thread(2).Intervals
		if len(got) != len(want) {
			t.Fatalf("thread 2: %+v", got)
		}
		for i, w := range want {
			if g := got[i]; g.From != w.From || g.To != w.To || g.State != w.State || g.Waker != w.Waker || g.KernelLength != w.KernelLength || g.KernelNS != w.KernelNS {
				t.Errorf("interval %d: got %+v, want %+v", i, g, w)
			}
		}
		if tl.KernelRuns != runs {
			t.Errorf("%d runs of the kernel's length, want %d", tl.KernelRuns, runs)
		}
	}
	t.Run("kernel", func(t *testing.T) {
		check(t, states(t, events(true)), []Interval{
			{From: 100, To: 120, State: OnCPU, KernelLength: true, KernelNS: 20},
			{From: 120, To: 150, State: Lock, Waker: 3},
			{From: 150, To: 160, State: Runnable},
			{From: 160, To: 174, State: OnCPU, KernelLength: true, KernelNS: 14},
			{From: 174, To: 180, State: Runnable},
			{From: 180, To: 195, State: OnCPU, KernelLength: true, KernelNS: 100},
			{From: 195, To: 195, State: Runnable},
			{From: 195, To: 198, State: OnCPU, KernelLength: true, KernelNS: 1},
			{From: 198, To: 210, State: Lock},
			{From: 210, To: 220, State: OnCPU},
			{From: 220, To: 230, State: Lock},
			{From: 230, To: 240, State: OnCPU},
			{From: 240, To: 250, State: Lock},
			{From: 250, To: 265, State: OnCPU, KernelLength: true, KernelNS: 15},
			{From: 265, To: 265, State: Lock, Waker: 3},
			{From: 265, To: 270, State: Runnable},
			{From: 270, To: 280, State: OnCPU},
			{From: 280, To: 280, State: Lock},
		}, 5)
	})
	t.Run("stamps", func(t *testing.T) {
		check(t, states(t, events(false)), []Interval{
			{From: 100, To: 130, State: OnCPU},
			{From: 130, To: 150, State: Lock, Waker: 3},
			{From: 150, To: 160, State: Runnable},
			{From: 160, To: 170, State: OnCPU},
			{From: 170, To: 180, State: Runnable},
			{From: 180, To: 190, State: OnCPU},
			{From: 190, To: 195, State: Runnable},
			{From: 195, To: 200, State: OnCPU},
			{From: 200, To: 210, State: Lock},
			{From: 210, To: 220, State: OnCPU},
			{From: 220, To: 230, State: Lock},
			{From: 230, To: 240, State: OnCPU},
			{From: 240, To: 250, State: Lock},
			{From: 250, To: 260, State: OnCPU},
			{From: 260, To: 260, State: Lock, Waker: 3},
			{From: 260, To: 270, State: Runnable},
			{From: 270, To: 280, State: OnCPU},
			{From: 280, To: 280, State: Lock},
		}, 0)
	})
}

// TestStatesLastRunFromSwitchAway: a thread's last run, which no switch
// onto a CPU follows, takes the kernel's length from the run time its
// switch away recorded (profile.LastSwitchAway), the wait after it
// starting there; so does a thread's run before it exits. A run before an
// open one takes its length from the open run's switch in though the
// recording ends before its switch away. Without the switch away's value
// the last run keeps its stamps.
func TestStatesLastRunFromSwitchAway(t *testing.T) {
	build := func(away bool) *profile.Profile {
		p := prof(
			ev{100, in, 2, inRuntime(1000), 0},
			ev{100, in, 6, inRuntime(0), 0},
			ev{130, out, 2, recording.TaskInterruptible, 1}, // 20 by the kernel
			ev{150, out, 6, recording.TaskInterruptible, 1}, // 30 by the kernel
			ev{150, wake, 3, 2, 0},
			ev{160, in, 2, inRuntime(1020), 0},
			ev{170, in, 6, inRuntime(30), 0}, // runs to the end
			ev{175, recording.EventCPU, 2, 0, 0},
			ev{190, out, 2, recording.TaskInterruptible, 1}, // 2's last: 12 by the kernel, 15 at least
			ev{200, in, 5, inRuntime(500), 0},
			ev{240, out, 5, recording.TaskDead, 0}, // exits: 10 by the kernel
			ev{250, in, 7, 0, 0},
			ev{260, out, 7, recording.TaskInterruptible, 1}, // no run time before the run
			ev{300, wake, 3, 4, 0},
		)
		if away {
			for _, a := range []recording.Sample{
				{Time: 130, TID: 2, ExecRuntime: 1020},
				{Time: 190, TID: 2, ExecRuntime: 1032},
				{Time: 150, TID: 6, ExecRuntime: 30},
				{Time: 240, TID: 5, ExecRuntime: 510},
				{Time: 260, TID: 7, ExecRuntime: 90},
			} {
				a.Event, a.HasExecRuntime = recording.EventSwitch, true
				p.NoteSwitchAway(&a)
			}
		}
		return p
	}
	check := func(t *testing.T, tl *Timeline, tid uint32, want []Interval) {
		t.Helper()
		got := tl.Thread(tid).Intervals
		if len(got) != len(want) {
			t.Fatalf("thread %d: %+v", tid, got)
		}
		for i, w := range want {
			if g := got[i]; g.From != w.From || g.To != w.To || g.State != w.State || g.KernelLength != w.KernelLength || g.KernelNS != w.KernelNS {
				t.Errorf("thread %d, interval %d: got %+v, want %+v", tid, i, g, w)
			}
		}
	}
	t.Run("switch away", func(t *testing.T) {
		tl := states(t, build(true))
		check(t, tl, 2, []Interval{
			{From: 100, To: 120, State: OnCPU, KernelLength: true, KernelNS: 20},
			{From: 120, To: 150, State: Lock},
			{From: 150, To: 160, State: Runnable},
			{From: 160, To: 175, State: OnCPU, KernelLength: true, KernelNS: 12},
			{From: 175, To: 300, State: Lock},
		})
		check(t, tl, 5, []Interval{{From: 200, To: 210, State: OnCPU, KernelLength: true, KernelNS: 10}})
		check(t, tl, 6, []Interval{
			{From: 100, To: 130, State: OnCPU, KernelLength: true, KernelNS: 30},
			{From: 130, To: 170, State: Lock},
			{From: 170, To: 300, State: OnCPU},
		})
		check(t, tl, 7, []Interval{{From: 250, To: 260, State: OnCPU}, {From: 260, To: 300, State: Lock}})
		if tl.KernelRuns != 4 {
			t.Errorf("%d runs of the kernel's length, want 4", tl.KernelRuns)
		}
	})
	t.Run("stamps", func(t *testing.T) {
		tl := states(t, build(false))
		check(t, tl, 2, []Interval{
			{From: 100, To: 120, State: OnCPU, KernelLength: true, KernelNS: 20},
			{From: 120, To: 150, State: Lock},
			{From: 150, To: 160, State: Runnable},
			{From: 160, To: 190, State: OnCPU},
			{From: 190, To: 300, State: Lock},
		})
		check(t, tl, 5, []Interval{{From: 200, To: 240, State: OnCPU}})
		if tl.KernelRuns != 2 {
			t.Errorf("%d runs of the kernel's length, want 2", tl.KernelRuns)
		}
	})
}

// TestStatesWaitInRunAccount: where the run delay did not grow over a
// run, the kernel read no run-queue clock from the thread's queueing to
// its switch in (the schedule after a wake-up that preempted the running
// task reads none), and the run's account, begun on that reading, is
// longer than its stamps by the wait: an unwoken wait ends that long
// before the switch in, a Runnable interval after it; a woken wait's
// Runnable interval, which the run delay left empty, is that long (from
// no sooner than its wake-up); and the run keeps its stamps' start and
// length, its account (KernelNS) the kernel's. A run no longer than its
// stamps places nothing; a preemption's wait keeps its stamps.
func TestStatesWaitInRunAccount(t *testing.T) {
	tl := states(t, prof(
		ev{5, in, 3, 0, 0}, // the waker, running throughout
		ev{10, in, 2, inRuntime(1000), 0},
		ev{20, out, 2, awayDelay(recording.TaskInterruptible, 100), 3},
		ev{40, in, 2, inRuntime(1010), 0},                              // no wake-up recorded
		ev{50, out, 2, awayDelay(recording.TaskInterruptible, 100), 3}, // no wait counted
		ev{70, in, 2, inRuntime(1026), 0},                              // 16 by the kernel: 6 of it the wait
		ev{80, out, 2, awayDelay(recording.TaskInterruptible, 100), 3},
		ev{90, in, 2, inRuntime(1036), 0}, // 10, as its stamps: the wait before it not placed
		ev{100, out, 2, awayDelay(recording.TaskInterruptible, 100), 1},
		ev{105, wake, 3, 2, 0},
		ev{110, in, 2, inRuntime(1046), 0},
		ev{120, out, 2, awayDelay(recording.TaskPreempted, 100), 0}, // no wait counted
		ev{130, in, 2, inRuntime(1059), 0},                          // 13: 3 of it the wait
		ev{140, out, 2, awayDelay(recording.TaskInterruptible, 100), 3},
		ev{150, in, 2, inRuntime(1073), 0}, // 14: 4 of it the preemption's wait
		ev{160, out, 2, awayDelay(recording.TaskInterruptible, 100), 3},
	))
	want := []Interval{
		{From: 10, To: 20, State: OnCPU, KernelLength: true, KernelNS: 10},
		{From: 20, To: 34, State: Sleep, Unwoken: true, WakeFromRunDelay: true},
		{From: 34, To: 40, State: Runnable},
		{From: 40, To: 50, State: OnCPU, KernelLength: true, KernelNS: 16},
		{From: 50, To: 70, State: Sleep, Unwoken: true},
		{From: 70, To: 80, State: OnCPU, KernelLength: true, KernelNS: 10},
		{From: 80, To: 90, State: Sleep, Unwoken: true},
		{From: 90, To: 100, State: OnCPU, KernelLength: true, KernelNS: 10},
		{From: 100, To: 107, State: Lock, Waker: 3, Woken: 105},
		{From: 107, To: 110, State: Runnable},
		{From: 110, To: 120, State: OnCPU, KernelLength: true, KernelNS: 13},
		{From: 120, To: 130, State: Runnable},
		{From: 130, To: 140, State: OnCPU, KernelLength: true, KernelNS: 14},
		{From: 140, To: 150, State: Sleep, Unwoken: true},
		{From: 150, To: 160, State: OnCPU},
		{From: 160, To: 160, State: Sleep, Open: true},
	}
	sameIntervals(t, tl.Thread(2).Intervals, want)
	if tl.Unwoken != 4 || tl.WokenFromRunDelay != 1 {
		t.Errorf("%d unwoken, %d placed", tl.Unwoken, tl.WokenFromRunDelay)
	}
}

// A run the kernel's account makes end after a recorded wake-up moves the
// wait after it past that wake-up: the wake-up came while the thread was
// being switched away, and the wait's Woken is its start, never before it,
// so that a critical path through the wait is the thread's own from there.
func TestStatesWokenNotBeforeWait(t *testing.T) {
	tl := states(t, prof(
		ev{5, in, 3, 0, 0}, // the waker, running throughout
		ev{10, in, 2, inRuntime(1000), 0},
		ev{20, out, 2, awayDelay(recording.TaskInterruptible, 100), 1},
		ev{22, wake, 3, 2, 0},
		ev{40, in, 2, inRuntime(1016), 0},                              // 16 by the kernel: past the wake-up
		ev{50, out, 2, awayDelay(recording.TaskInterruptible, 104), 3}, // queued 4 before the switch in
	))
	want := []Interval{
		{From: 10, To: 26, State: OnCPU, KernelLength: true, KernelNS: 16},
		{From: 26, To: 36, State: Lock, Waker: 3, Woken: 26},
		{From: 36, To: 40, State: Runnable},
		{From: 40, To: 50, State: OnCPU},
		{From: 50, To: 50, State: Sleep, Open: true},
	}
	sameIntervals(t, tl.Thread(2).Intervals, want)
	path := tl.CriticalPath(26, Point{TID: 2, Time: 36}, nil)
	if len(path) != 1 || path[0].TID != 2 || path[0].From != 26 || path[0].To != 36 {
		t.Errorf("path %+v, want the thread's own wait 26-36", path)
	}
}

// sameIntervals compares a thread's intervals with want, field by field
// but for the stacks and the waker's interrupt flag.
func sameIntervals(t *testing.T, got, want []Interval) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d intervals, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.From != w.From || g.To != w.To || g.State != w.State || g.Waker != w.Waker || g.Woken != w.Woken || g.Unwoken != w.Unwoken ||
			g.WakeFromRunDelay != w.WakeFromRunDelay || g.KernelLength != w.KernelLength || g.KernelNS != w.KernelNS || g.Open != w.Open {
			t.Errorf("interval %d: got %+v, want %+v", i, g, w)
		}
	}
}

// awayDelay is the argument of a switch away in state that carries the
// thread's run delay.
func awayDelay(state, delay uint64) uint64 {
	return profile.SwitchArg(&recording.Sample{Event: recording.EventSwitch, Arg: state, RunDelay: delay, HasRunDelay: true})
}

// inRuntime is the argument of a switch onto a CPU that carries the
// thread's time on a CPU so far (ns).
func inRuntime(ns uint64) uint64 {
	return profile.SwitchArg(&recording.Sample{Event: recording.EventSwitchIn, ExecRuntime: ns, HasExecRuntime: true})
}

// A thread outside the recorded processes that a recorded one woke (a
// server's client) has no timeline: only its wake-up is recorded, and a
// timeline from it would have it waiting for a CPU to the end.
func TestStatesOutsideWakeeHasNoTimeline(t *testing.T) {
	p := prof(
		ev{10, in, 2, 0, 0},
		ev{20, wake, 2, 9, 0}, // 2 wakes 9, a thread of another program
		ev{30, out, 2, recording.TaskPreempted, 0},
	)
	tl := states(t, p)
	if th := tl.Thread(9); th != nil {
		t.Errorf("thread 9, not recorded, has a timeline: %+v", th)
	}
	if tl.Thread(2) == nil {
		t.Error("thread 2 has no timeline")
	}
}
