// Package sched turns a recording's scheduler events into per-thread state
// timelines and walks critical paths across threads.
//
// A recording made with `culprit record --events wakeup` (or `culprit trace
// --sched`) holds, for every thread of the target, each switch onto a CPU
// (EventSwitchIn), each switch away with the kernel's prev_state and the
// blocking stack (EventSwitch), and each wake-up a thread of the target made
// (EventWakeup: waker, wakee, the waker's stack). States cuts each thread's
// time into intervals: on the CPU, runnable (preempted, or woken and waiting
// for a CPU), blocked on a lock (a futex wait: mutexes, condition variables,
// semaphores), blocked on I/O (any other sleep: pipes, sockets, disk, poll),
// sleeping (a timed sleep) or stopped, and names the thread whose wake-up
// ended each blocked interval.
//
// CriticalPath is VProfiler's Algorithm 2 (docs: the repaired version in the
// implementation notes) over those intervals: from an interval's end, back
// to its start, the time on the CPU of the thread that was holding things up,
// following wake-up edges into the waker while a thread was blocked, and
// caller-given hand-off edges (a queue's enqueue → dequeue) between threads.
//
// A wake-up no thread of the recorded processes made (an interrupt on
// another task or the idle task, another program, a kernel thread) is
// recorded as the wake-up of no thread (TID 0) where culprit's BPF
// program records the switches; with perf's events (--perf-events) it is
// not, and the blocked interval then ends when the thread next runs,
// with no runnable part, marked Unwoken; so does one the kernel delivered
// no event for (some kernels trace nothing while some tasks run), unless
// the thread's run delay at its switches away (culprit's BPF program
// records it) places the wake-up, or, where it did not grow, the run's
// account beyond its stamps: Interval.WakeFromRunDelay. A
// thread seen running while its timeline has it waiting had its switch
// onto a CPU unrecorded: the wait ends there. A wake-up from interrupt
// context names no thread either. A thread's first event may be a
// wake-up (a new thread's): it is runnable from there; without it, a new
// thread's first run (a sum_exec_runtime of 0 at its switch in) and the
// run delay at its switch away place the wait for a CPU before it.
package sched

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
)

// State is what a thread was doing during an interval.
type State uint8

const (
	Unknown  State = iota // before the thread's first scheduler event
	OnCPU                 // running
	Runnable              // preempted, or woken, and waiting for a CPU
	Lock                  // blocked in a futex wait (mutex, condition variable, semaphore)
	IO                    // blocked in any other wait (pipe, socket, poll, disk)
	Sleep                 // a timed sleep (nanosleep)
	Stopped               // stopped by a signal or a tracer
	// Queued is used by CriticalPath only: time an interval's work spent in
	// a caller-named queue between a hand-off's two ends.
	Queued
	numStates
)

var stateNames = [numStates]string{"unknown", "on-cpu", "runnable", "lock", "io", "sleep", "stopped", "queued"}

// String names the state as reports and JSON do.
func (s State) String() string {
	if s < numStates {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", s)
}

// Blocked reports whether s is a sleep some other party ends.
func (s State) Blocked() bool { return s == Lock || s == IO || s == Sleep }

// MarshalText makes states read as their names in JSON.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Interval is a stretch of one thread's time in one state.
type Interval struct {
	From, To uint64 // ns, sample clock; From < To, or equal for an instant
	State    State
	// Waker is, for a blocked interval ended by a recorded wake-up, the
	// thread that woke it (for Lock, the thread that released the lock or
	// signalled the condition); 0 when not known. Interrupt is set when
	// an interrupt (a timer, a device) woke it.
	Waker     uint32
	Interrupt bool
	// WakerStack is the waker's stack at the wake-up, and Stack the stack
	// at which the thread left the CPU (for blocked and preempted
	// intervals): indexes into the profile's Stacks, -1 when none.
	WakerStack int32
	Stack      int32
	// Open is set on a thread's last interval when the recording ended
	// during it (no event closed it).
	Open bool
	// Unwoken is set on a blocked interval that no recorded wake-up
	// ended: it ends where the thread was next seen running (its switch
	// onto a CPU, or, when that was not recorded either, its first CPU
	// sample or system call event after it). The wake-up came before, at
	// a time not known, so the interval holds the thread's wait for a CPU
	// after it too. A kernel may deliver no trace event at all while some
	// tasks run (docs/cli.md, culprit states): a timer's interrupt that
	// lands on such a task wakes a sleeper unseen, and the task's switch
	// to the next one is not seen either. The waker is never a thread of
	// the recorded processes (their wake-ups are made where they run, and
	// recorded), so no critical path loses an edge by it, but for one
	// case with perf's events alone: an exiting thread wakes its joiner
	// after its events ended.
	Unwoken bool
	// WakeFromRunDelay is set on an Unwoken interval that ends at its
	// wake-up as the kernel's own account places it: the recording has
	// the thread's run delay (schedstat's run_delay) at each switch away,
	// whose growth over the run after the wait is the time the thread
	// waited on a run queue before it (from the wake-up's enqueue to its
	// switch in); the Runnable interval of that length follows it. When
	// the switch in was not recorded either, the run starts at the first
	// evidence of it, and the wait for a CPU is placed before that: its
	// length is the kernel's, its place late by the part of the run
	// before the evidence. When the run delay did not grow over the run
	// (the kernel read no run queue clock from the queueing to the switch
	// in), the run's account beyond its stamps places the wake-up instead
	// (staleClock).
	WakeFromRunDelay bool
	// KernelLength is set on an OnCPU interval whose length is the
	// kernel's account of the run (its sum_exec_runtime's growth from the
	// switch onto a CPU that began it to the thread's next, or for the
	// thread's last run to the switch away that ended it), not its
	// stamps' (Timeline.KernelRuns); KernelNS is that account. The
	// interval is longer when the thread was seen running after it (a
	// wake-up it made, a sample): it ends at the last such event. The
	// kernel's account leaves out the time the CPU ran no task of its
	// own, which a VM's host took (steal): on a shared VM it is most of
	// such runs' excess. A run whose account began on a clock read at its
	// queueing (staleClock) is that account less the wait before its
	// switch in, which the account counted; KernelNS is still the account.
	KernelLength bool
	KernelNS     uint64
	// Woken is set on a blocked interval ended by a recorded wake-up
	// whose end the thread's run delay placed later (the recording has
	// it at each switch away): the wake-up's time (or, for one that came
	// while the thread was being switched away, that switch away's).
	// The interval then ends, and the thread's wait for a CPU begins,
	// where the kernel's run delay begins it: when the woken thread was
	// queued on a run queue, the Runnable interval after it as long as
	// the run delay's growth over the run that follows. The wake-up's
	// sched_waking event is stamped before the kernel has chosen a CPU
	// for the thread and queued it, and the switch in after the kernel
	// read the clock that ends the run delay and picked the thread: 5-16
	// µs a wake-up on average on a busy 2-CPU VM, tens of µs at times.
	// A wake-up the kernel queued the thread at no time for (the run
	// delay did not grow: the kernel reads its run queue's clock once
	// when a wake-up preempts the running task) leaves an empty
	// Runnable interval, unless the run's account beyond its stamps
	// places the queueing (staleClock).
	Woken uint64
}

// Duration is To - From.
func (iv Interval) Duration() uint64 { return iv.To - iv.From }

// Thread is one thread's timeline.
type Thread struct {
	PID, TID  uint32
	Name      string
	Intervals []Interval // in time order, contiguous
	// Source marks a waker that is not a thread (the Go runtime's
	// timers, its network poller): it has no timeline, and a wait it
	// ended is on a critical path as that wait (its timer's delay, the
	// I/O), in the waiter's state, not followed further.
	Source bool
}

// At returns the interval of th covering time t (From < t ≤ To, or the
// first interval for t at its From), and false when t is outside the
// timeline.
func (th *Thread) At(t uint64) (Interval, bool) {
	i, ok := th.index(t)
	if !ok {
		return Interval{}, false
	}
	return th.Intervals[i], true
}

func (th *Thread) index(t uint64) (int, bool) {
	iv := th.Intervals
	i := search(iv, t)
	if i < len(iv) && iv[i].From <= t && t <= iv[i].To {
		return i, true
	}
	return 0, false
}

// search returns the first interval whose To is ≥ t.
func search(iv []Interval, t uint64) int {
	i, _ := slices.BinarySearchFunc(iv, t, func(x Interval, t uint64) int { return cmp.Compare(x.To, t) })
	return i
}

// Timeline is every recorded thread's timeline.
type Timeline struct {
	Threads    map[uint32]*Thread
	Start, End uint64 // first and last scheduler event
	// Wakeups counts the recorded wake-ups, Switches the switches away
	// and SwitchIns the switches onto a CPU.
	Wakeups, Switches, SwitchIns int
	// Unwoken counts the blocked intervals no recorded wake-up ended
	// (Interval.Unwoken), and Unseen the times a thread ran with no switch
	// onto a CPU recorded (seen running by a sample while its timeline
	// had it waiting, or switching away while it did).
	Unwoken, Unseen int
	// WokenFromRunDelay counts the Unwoken intervals whose wake-up the
	// kernel's run delay placed (Interval.WakeFromRunDelay).
	WokenFromRunDelay int
	// FirstFromRunDelay counts the new threads whose wait for their
	// first CPU, no recorded wake-up beginning it, the kernel's run delay
	// placed (firstRun).
	FirstFromRunDelay int
	// KernelRuns counts the runs on a CPU whose length is the kernel's
	// own account (its sum_exec_runtime at the switches onto a CPU that
	// began the run and the thread's next, or the switch away that ended
	// the thread's last run; States).
	KernelRuns int
	Warnings   []string
	// Handoffs are the created-by edges the timeline knows itself (a Go
	// goroutine a timer armed by another started), which CriticalPath
	// follows with those its caller gives.
	Handoffs []Handoff
}

// Thread returns the timeline of tid, or nil.
func (tl *Timeline) Thread(tid uint32) *Thread { return tl.Threads[tid] }

// ErrNoEvents is returned by States for a recording without scheduler events.
var ErrNoEvents = fmt.Errorf("no switches onto a CPU and wake-ups in the recording: record with --events wakeup (culprit record) or --sched (culprit trace)")

// tstate is a thread's state while the events are replayed.
type tstate struct {
	th       *Thread
	cur      Interval // open interval (To not set)
	open     bool
	lastSeen uint64
	// A wake-up seen while the thread was still running: it went to sleep
	// and was woken before the kernel took it off the CPU.
	early      bool
	earlyWaker uint32
	earlyIRQ   bool
	earlyStack int32
	// runDelay is the thread's run delay (modulo 2^32) at its last
	// switch away, when hasRunDelay.
	runDelay    uint32
	hasRunDelay bool
	// runtime is, when hasRuntime, the thread's time on a CPU (the
	// kernel's sum_exec_runtime) before the run open in cur, which its
	// recorded switch onto a CPU began. ran is, when hasRan, the index in
	// th.Intervals of such a run since closed by a recorded switch away,
	// whose length its next switch onto a CPU tells (kernelRun), ranFrom
	// its runtime before it, and ranSeen the last event the thread made
	// while it ran.
	runtime, ranFrom uint64
	hasRuntime       bool
	// pendingRT is, when hasPending, the runtime the switch onto a CPU
	// that began the open run recorded, which gives the run before it
	// (ran) its kernel length at the open run's switch away.
	pendingRT  uint64
	hasPending bool
	// awayRT is, when hasAway, the runtime at the switch away that closed
	// ran, when that was the thread's last (profile.LastSwitchAway): no
	// switch onto a CPU after it tells ran's length, this does.
	awayRT  uint64
	hasAway bool
	ran     int
	hasRan  bool
	ranSeen uint64
	// flatRun is set when the run delay did not grow over ran (its
	// switch away and the one before both carry it): the kernel read no
	// clock between the thread's queueing and its switch in, whose stale
	// reading then began ran's account (staleClock). ranLead is the part
	// of ran's account, ns, that was the wait before its switch in.
	flatRun bool
	ranLead uint64
}

func (ts *tstate) close(t uint64) {
	if !ts.open {
		return
	}
	if t < ts.cur.From {
		t = ts.cur.From
	}
	ts.cur.To = t
	ts.th.Intervals = append(ts.th.Intervals, ts.cur)
	ts.open = false
}

func (ts *tstate) start(t uint64, st State) {
	ts.cur = Interval{From: t, State: st, WakerStack: -1, Stack: -1}
	ts.open = true
}

// States builds every thread's timeline from p's scheduler events. p must
// hold every event kind (loaded without merging, filtered with AllEvents).
func States(p *profile.Profile) (*Timeline, error) {
	if p.Merged {
		return nil, fmt.Errorf("scheduler states need the events in time order: load the recording without merging")
	}
	for _, m := range p.Metas {
		if n := m.Extra["event_period"]; n != "" && n != "1" {
			return nil, fmt.Errorf("the recording keeps one in %s scheduler events (--event-period): thread states need them all", n)
		}
	}
	if p.Streamed() && !p.MayHaveEvent(recording.EventSwitchIn) && !p.MayHaveEvent(recording.EventWakeup) {
		return nil, ErrNoEvents // known without reading the samples again
	}
	tl := &Timeline{Threads: map[uint32]*Thread{}}
	states := map[uint32]*tstate{}
	get := func(pid, tid uint32) *tstate {
		ts := states[tid]
		if ts == nil {
			th := &Thread{PID: pid, TID: tid, Name: p.ThreadName(tid)}
			if pid == 0 {
				if t, ok := p.Threads[tid]; ok {
					th.PID = t.PID
				}
			}
			ts = &tstate{th: th}
			states[tid] = ts
		}
		if ts.th.PID == 0 && pid != 0 {
			ts.th.PID = pid
		}
		return ts
	}
	cls := classifier{p: p, memo: map[int32]State{}}
	first := true
	// Samples are read in time order, from the recordings again when p is
	// streamed.
	err := p.EachSample(func(sp *profile.Sample) bool {
		s := *sp
		var ts *tstate
		switch s.Event {
		case recording.EventSwitchIn, recording.EventSwitch, recording.EventWakeup:
		case recording.EventCPU, recording.EventSyscallEnter, recording.EventSyscallExit:
			// The thread runs: evidence for a timeline that has not begun,
			// and of a switch onto a CPU not recorded when its timeline
			// has it waiting.
			if ts = states[s.TID]; ts != nil {
				ts.lastSeen = s.Time
				if ts.open && ts.cur.State != OnCPU && ts.cur.State != Stopped && s.Time > ts.cur.From {
					tl.Unseen++
					ts.runs(s.Time, tl)
					ts.hasRuntime, ts.hasRan, ts.hasPending = false, false, false
				}
			}
			return true
		default:
			return true
		}
		if first {
			tl.Start, first = s.Time, false
		}
		tl.End = max(tl.End, s.Time)
		switch s.Event {
		case recording.EventSwitchIn:
			tl.SwitchIns++
			ts = get(s.PID, s.TID)
			if ts.open && ts.cur.State == OnCPU {
				break // a repeated switch-in: keep the interval
			}
			ts.runs(s.Time, tl)
			// The last run's length by the kernel's account is known
			// now, and given at this run's switch away, once the run
			// delay has placed the wake-up of the wait before this run
			// (wokeBefore reads that wait as the stamps left it).
			rt, ok := s.ExecRuntime()
			if ok && ts.hasRan && ts.flatRun {
				ts.staleClock(rt, tl)
			}
			ts.pendingRT, ts.hasPending = rt, ok && ts.hasRan
			ts.runtime, ts.hasRuntime, ts.hasRan = rt, ok, false
		case recording.EventSwitch:
			tl.Switches++
			ts = get(s.PID, s.TID)
			if !ts.open {
				// Running since at least its last sample or the first event.
				from := s.Time
				if ts.lastSeen != 0 && ts.lastSeen < from {
					from = ts.lastSeen
				}
				ts.start(from, OnCPU)
				ts.hasRuntime = false
			}
			if ts.cur.State != OnCPU {
				// A switch away of a thread not seen switching in (an
				// event lost or cut, or not delivered): start again from
				// here.
				tl.Unseen++
				ts.runs(s.Time, tl)
				ts.hasRuntime, ts.hasRan, ts.hasPending = false, false, false
			}
			rd, ok := s.RunDelay()
			flat := ok && ts.hasRunDelay && rd == ts.runDelay && ts.hasRuntime
			switch {
			case ok && ts.hasRunDelay:
				ts.wokeBefore(uint64(rd-ts.runDelay), tl)
			case ok:
				ts.firstRun(uint64(rd), tl)
			}
			ts.runDelay, ts.hasRunDelay = rd, ok
			if ts.hasPending {
				ts.kernelRun(ts.pendingRT, tl)
				ts.hasPending = false
			}
			ts.close(s.Time)
			ts.ran, ts.ranFrom, ts.hasRan = len(ts.th.Intervals)-1, ts.runtime, ts.hasRuntime
			ts.flatRun, ts.ranLead = flat, 0
			ts.ranSeen, ts.hasRuntime = ts.cur.From, false
			ts.awayRT, ts.hasAway = p.LastSwitchAway(s.TID, s.Time)
			if ts.lastSeen > ts.ranSeen && ts.lastSeen <= s.Time {
				ts.ranSeen = ts.lastSeen
			}
			st := cls.state(s.SwitchState(), s.Stack)
			if st == Unknown { // exited
				ts.early = false
				break
			}
			ts.start(s.Time, st)
			ts.cur.Stack = s.Stack
			if ts.early && st == Runnable && s.SwitchState()&recording.TaskStateMask == 0 && s.SwitchState() != recording.TaskPreempted {
				ts.cur.Waker, ts.cur.Interrupt, ts.cur.WakerStack = ts.earlyWaker, ts.earlyIRQ, ts.earlyStack
			}
			// A wake-up seen while it ran ends a sleep it reports only if
			// no later one does (see EventSwitchIn).
			ts.early = ts.early && st.Blocked()
		case recording.EventWakeup:
			tl.Wakeups++
			wakee := uint32(s.Arg)
			irq := s.Arg&recording.WakeupInterrupt != 0
			var waker uint32
			if !irq {
				waker = s.TID
				if ws := states[s.TID]; ws != nil {
					ws.lastSeen = max(ws.lastSeen, s.Time)
				}
			}
			w := states[wakee]
			if w == nil {
				if _, ok := p.Threads[wakee]; !ok {
					// A thread outside the recorded processes, which a
					// recorded one woke (a server's client, the
					// recorder): nothing else of it is recorded, so it
					// has no timeline.
					break
				}
				w = get(0, wakee)
			}
			switch {
			case w.open && w.cur.State.Blocked() || w.open && w.cur.State == Stopped:
				w.cur.Waker, w.cur.Interrupt, w.cur.WakerStack = waker, irq, s.Stack
				w.close(s.Time)
				w.start(s.Time, Runnable)
				w.early = false
			case w.open && w.cur.State == OnCPU:
				w.early, w.earlyWaker, w.earlyIRQ, w.earlyStack = true, waker, irq, s.Stack
			case !w.open && len(w.th.Intervals) == 0:
				// A thread's first event (a new thread's first wake-up):
				// it waits for a CPU from here.
				w.start(s.Time, Runnable)
			}
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	if tl.SwitchIns == 0 && tl.Wakeups == 0 {
		return nil, ErrNoEvents
	}
	for tid, ts := range states {
		if ts.hasPending {
			// The run before the open one, whose switch away the
			// recording ended before.
			ts.kernelRun(ts.pendingRT, tl)
			ts.hasPending, ts.hasAway = false, false
		}
		ts.cur.Open = true
		ts.close(max(tl.End, ts.cur.From))
		if ts.hasRan && ts.hasAway {
			// The thread's last run: no switch onto a CPU after it.
			if ts.flatRun {
				ts.staleClock(ts.awayRT, tl)
			}
			ts.kernelRun(ts.awayRT, tl)
		}
		if len(ts.th.Intervals) > 0 {
			tl.Threads[tid] = ts.th
		}
	}
	if p.Lost > 0 {
		tl.Warnings = append(tl.Warnings, fmt.Sprintf("%d events were lost: the intervals around them may be wrong", p.Lost))
	}
	switch {
	case tl.Unwoken > 0 && tl.WokenFromRunDelay == tl.Unwoken:
		tl.Warnings = append(tl.Warnings, fmt.Sprintf("%d waits ended with no wake-up recorded (the kernel delivered none): each ends where the kernel's run delay places its wake-up", tl.Unwoken))
	case tl.Unwoken > 0:
		tl.Warnings = append(tl.Warnings, fmt.Sprintf("%d waits ended with no wake-up recorded (the kernel delivered none): %d end where the kernel's run delay places the wake-up, the others run to when their thread was next seen running, their wait for a CPU after the wake-up counted in them", tl.Unwoken, tl.WokenFromRunDelay))
	}
	if tl.Unseen > 0 {
		tl.Warnings = append(tl.Warnings, fmt.Sprintf("%d runs of a thread had no switch onto a CPU recorded: each starts at the first sample or switch away that shows the thread running", tl.Unseen))
	}
	return tl, nil
}

// runs ends the thread's wait at t, where it was seen running: its
// switch onto a CPU, or the first evidence of it running when that was not
// recorded.
func (ts *tstate) runs(t uint64, tl *Timeline) {
	switch {
	case ts.open && ts.cur.State.Blocked() && ts.early:
		// No wake-up came while it slept: the one seen just before it
		// left the CPU ended this sleep. It came while the kernel was
		// switching the thread away (the switch is stamped after the
		// state it reports was read), so the thread never slept: it
		// waited for a CPU.
		ts.cur.Waker, ts.cur.Interrupt, ts.cur.WakerStack = ts.earlyWaker, ts.earlyIRQ, ts.earlyStack
		ts.close(ts.cur.From)
		ts.start(ts.th.Intervals[len(ts.th.Intervals)-1].To, Runnable)
	case ts.open && ts.cur.State.Blocked():
		ts.cur.Unwoken = true
		tl.Unwoken++
	}
	ts.close(t)
	ts.start(t, OnCPU)
	ts.early = false
}

// kernelRun gives the thread's last closed run (ts.ran, followed by its
// waits up to the switch onto a CPU that began the open run, whose time
// on a CPU before that run is rt; or, for the thread's last run, rt its
// time at the switch away that closed it) its length by the kernel's
// account; it is called at the open run's switch away (or at the end of
// the recording when there is none), after the run delay placed
// the wake-up of the wait before it (wokeBefore), so that a run longer
// than its stamps takes from that wait's runnable part, not from where
// its wake-up can be placed. The length is rt less the time before the
// run (ts.ranFrom) and the wait before its switch in that the account
// counted (ts.ranLead, staleClock): the run ends that long after it began, and the wait
// after it begins there, so that the intervals still tile the thread's
// time. The stamps of the
// switches are later than the run queue's clock the kernel's account
// reads, each by the scheduler's work before the tracepoint (picking the
// next thread, balancing load when none is queued, the other programs on
// it): a switch away's late stamp made the run that much longer, a
// switch in's late stamp that much shorter. The end is kept before the
// open run's switch in (a run longer than its stamps takes from the waits after
// it, which may be left empty: a wait that a wake-up during the switch
// away ended, and the wait for a CPU after it), and no sooner than the
// last event that showed the thread running (a wake-up it made, a sample,
// a system call): the thread's waits and runs keep its own events, and a
// critical path that reaches a wake-up it made finds it running there.
func (ts *tstate) kernelRun(rt uint64, tl *Timeline) {
	iv := ts.th.Intervals
	k := ts.ran
	if k < 0 || k >= len(iv) || iv[k].State != OnCPU || rt < ts.ranFrom {
		return
	}
	end := iv[k].From + (rt - ts.ranFrom - min(ts.ranLead, rt-ts.ranFrom))
	end = min(max(end, ts.ranSeen, iv[k].From), iv[len(iv)-1].To)
	iv[k].To = end
	if k+1 < len(iv) { // none after a thread's exit
		iv[k+1].From = end
	}
	for j := k + 1; j < len(iv); j++ {
		iv[j].From, iv[j].To = max(iv[j].From, end), max(iv[j].To, end)
		if iv[j].Woken != 0 {
			// A wake-up stamped before the run's end by the kernel's
			// account came while the thread was being switched away.
			iv[j].Woken = min(max(iv[j].Woken, iv[j].From), iv[j].To)
		}
	}
	iv[k].KernelLength, iv[k].KernelNS = true, rt-ts.ranFrom
	tl.KernelRuns++
}

// wokeBefore places, at the thread's switch away, the wake-up of the
// wait before its run: d is the growth of its run delay since its
// previous switch away, the time it waited on a run queue before the run
// now ending. The wait, when no wake-up was recorded (Unwoken) and it
// ends where the run starts, ends d before that; the rest is Runnable. A
// d longer than the wait (a switch away between not recorded) places
// nothing. A wait a recorded wake-up ended, its Runnable interval up to
// the run's start longer than d, ends d before the run instead, at the
// thread's queueing (Interval.Woken).
func (ts *tstate) wokeBefore(d uint64, tl *Timeline) {
	n := len(ts.th.Intervals)
	if !ts.open || ts.cur.State != OnCPU || n == 0 {
		return
	}
	if n >= 2 {
		r, w := &ts.th.Intervals[n-1], &ts.th.Intervals[n-2]
		if r.State == Runnable && r.To == ts.cur.From && w.State.Blocked() && !w.Unwoken && w.To == r.From && d < r.Duration() {
			if w.Woken == 0 {
				w.Woken = w.To
			}
			w.To = r.To - d
			r.From = w.To
			return
		}
	}
	if d == 0 {
		return
	}
	ts.placeWake(n-1, ts.cur.From, d, tl)
}

// placeWake ends the unwoken wait at index i, which ends at end, d before
// that, with a Runnable interval from there to end: the kernel's account
// placed its wake-up. It places nothing, and says so, when the wait was
// woken or placed already, ends elsewhere, or is no longer than d.
func (ts *tstate) placeWake(i int, end, d uint64, tl *Timeline) bool {
	w := &ts.th.Intervals[i]
	if !w.Unwoken || w.WakeFromRunDelay || w.To != end || d >= w.Duration() {
		return false
	}
	w.To -= d
	w.WakeFromRunDelay = true
	tl.WokenFromRunDelay++
	ts.th.Intervals = slices.Insert(ts.th.Intervals, i+1, Interval{From: w.To, To: end, State: Runnable, WakerStack: -1, Stack: -1})
	return true
}

// staleClock places the wait for a CPU before the thread's last closed
// run (ts.ran) where the run delay did not grow over it (flatRun): rt is
// the thread's time on a CPU after that run (its next switch onto a CPU's,
// or its last switch away's). The kernel ends a wait for a CPU where the
// schedule that switches the thread in reads its run queue's clock, and
// a schedule that follows a wake-up which preempted the running task
// reads none (the wake-up asked it to skip the read: wakeup_preempt's
// rq_clock_skip_update): when nothing else read that clock since the
// thread was queued, the wait counts nothing, however long the preempted
// task took to reach the schedule (microseconds; on a VM whose host held
// the CPU, milliseconds), and the run, begun on that same stale reading,
// counts the wait instead. So the run's account longer than its stamps
// (by more than the stamps' lateness, which makes it shorter) is that
// wait: the wait ends that long before the switch in (an unwoken wait,
// a Runnable interval that long after it; a woken wait, its Runnable
// interval emptied by the run delay's zero growth, no sooner than its
// recorded wake-up), and the run's length is its account less that
// (ranLead, kernelRun); a wait for a CPU the stamps place (a
// preemption's) stays, and the run's length is its account less up to
// that wait. A run no longer than its stamps places nothing.
func (ts *tstate) staleClock(rt uint64, tl *Timeline) {
	iv := ts.th.Intervals
	k := ts.ran
	if k < 1 || k >= len(iv) || iv[k].State != OnCPU || rt < ts.ranFrom {
		return
	}
	run := iv[k]
	if rt-ts.ranFrom <= run.Duration() {
		return
	}
	lead := rt - ts.ranFrom - run.Duration()
	switch w := &iv[k-1]; {
	case ts.placeWake(k-1, run.From, lead, tl):
		ts.ran++
		ts.ranLead = lead
	case k >= 2 && w.State == Runnable && w.From == run.From && w.To == run.From:
		b := &iv[k-2]
		if !b.State.Blocked() || b.Unwoken || b.Woken == 0 || b.To != run.From {
			return
		}
		to := max(run.From-min(lead, run.From), b.Woken, b.From)
		if to >= run.From {
			return
		}
		b.To, w.From = to, to
		ts.ranLead = run.From - to
	case w.State == Runnable && w.To == run.From:
		// A wait for a CPU its stamps tell (a preemption's): the run
		// keeps its stamps' start.
		ts.ranLead = min(lead, w.Duration())
	}
}

// firstRun places, at a new thread's first switch away, its wait for a
// CPU from its creation when no recorded wake-up began its timeline (the
// recording lacks it, or it was not recorded: perf's events record no
// sched_wakeup_new): the run now ending is the thread's first (its
// switch onto a CPU carried a sum_exec_runtime of 0) and its timeline
// began there, so rd, its run delay at this switch away, is all the time
// it waited on a run queue since the kernel queued it at its creation,
// before this run. A Runnable interval that long is put before the run,
// from no sooner than the timeline's start.
func (ts *tstate) firstRun(rd uint64, tl *Timeline) {
	if !ts.open || ts.cur.State != OnCPU || len(ts.th.Intervals) != 0 || !ts.hasRuntime || ts.runtime != 0 || rd == 0 {
		return
	}
	from := tl.Start
	if ts.cur.From-tl.Start > rd {
		from = ts.cur.From - rd
	}
	if from >= ts.cur.From {
		return
	}
	ts.th.Intervals = append(ts.th.Intervals, Interval{From: from, To: ts.cur.From, State: Runnable, WakerStack: -1, Stack: -1})
	tl.FirstFromRunDelay++
}

// classifier turns a switch's prev_state and blocking stack into a State.
type classifier struct {
	p    *profile.Profile
	memo map[int32]State
}

func (c *classifier) state(prevState uint64, stack int32) State {
	st := prevState & recording.TaskStateMask
	switch {
	case st == 0:
		return Runnable
	case st&recording.TaskDead != 0:
		return Unknown
	case st&(recording.TaskStopped|recording.TaskTraced) != 0:
		return Stopped
	}
	if s, ok := c.memo[stack]; ok {
		return s
	}
	s := IO
	if stack >= 0 && int(stack) < len(c.p.Stacks) {
		s = c.fromStack(c.p.Stacks[stack])
	}
	c.memo[stack] = s
	return s
}

// fromStack tells a lock wait or a timed sleep from other sleeps by the
// functions of the blocking stack: the kernel's futex and nanosleep paths
// (or, for recordings without kernel frames, the C library's wrappers).
func (c *classifier) fromStack(st []int32) State {
	for _, fi := range st {
		name := c.p.Frames[fi].Function
		switch {
		case strings.Contains(name, "futex"), strings.Contains(name, "lll_lock_wait"):
			return Lock
		case strings.Contains(name, "nanosleep"):
			return Sleep
		case strings.HasPrefix(name, "__x64_sys_"), strings.HasPrefix(name, "__arm64_sys_"):
			return IO // the system call that slept, and it is neither
		}
	}
	return IO
}

// Summary is a thread's time by state over its timeline, and its blocked
// time by the thread that woke it.
type Summary struct {
	PID, TID uint32
	Name     string
	Time     map[State]uint64
	// Wakers lists, largest first, the blocked time each waker ended
	// (TID 0: an interrupt, or a waker no event shows: another program, a
	// kernel thread, a thread's exit). A wait the recording ended during
	// is in Time only.
	Wakers []WakerTime
}

// WakerTime is blocked time of one state that one waker ended.
type WakerTime struct {
	TID   uint32
	Name  string
	State State
	Time  uint64
	Waits int
}

// Summarize sums every thread's timeline, threads ordered by TID.
func (tl *Timeline) Summarize() []Summary {
	var out []Summary
	for _, th := range tl.Threads {
		s := Summary{PID: th.PID, TID: th.TID, Name: th.Name, Time: map[State]uint64{}}
		type key struct {
			tid uint32
			st  State
		}
		by := map[key]*WakerTime{}
		for _, iv := range th.Intervals {
			s.Time[iv.State] += iv.Duration()
			if !iv.State.Blocked() || iv.Open {
				continue
			}
			k := key{iv.Waker, iv.State}
			wt := by[k]
			if wt == nil {
				wt = &WakerTime{TID: iv.Waker, State: iv.State}
				if w := tl.Threads[iv.Waker]; w != nil {
					wt.Name = w.Name
				}
				by[k] = wt
			}
			wt.Time += iv.Duration()
			wt.Waits++
		}
		for _, wt := range by {
			s.Wakers = append(s.Wakers, *wt)
		}
		slices.SortFunc(s.Wakers, func(a, b WakerTime) int {
			if c := cmp.Compare(b.Time, a.Time); c != 0 {
				return c
			}
			return cmp.Or(cmp.Compare(a.TID, b.TID), cmp.Compare(a.State, b.State))
		})
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Summary) int { return cmp.Compare(a.TID, b.TID) })
	return out
}
