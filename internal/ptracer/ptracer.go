// Package ptracer is culprit's ptrace collector. It samples CPU time of a
// launched command or a running process by stopping the sampled thread,
// reading its registers and live stack, unwinding it with CFI, optionally
// letting a hook evaluate program state while the thread is stopped, and
// resuming it. It follows fork, vfork, clone and exec, and always detaches
// cleanly (on the target's exit, Ctrl-C, the stop channel, the duration or
// an error), leaving the target running. Like the perf collector
// (internal/recorder) it only writes recordings.
//
// # How threads are stopped at CPU-time intervals
//
// The default mechanism ("signal") opens, for every traced thread, a
// cpu-clock perf event bound to that thread (pid=tid, cpu=-1) whose
// overflow signals the thread itself (O_ASYNC, F_SETOWN_EX to the thread,
// F_SETSIG SIGURG). Each time the thread has used one period of CPU time
// the kernel sends that very thread a SIGURG with si_code POLL_IN. As a
// tracee the thread stops in a signal-delivery-stop before any handler
// runs; the collector takes the sample there and resumes the thread with
// the signal suppressed, or delivered if the process has a SIGURG handler:
// a SIGURG sent while ours is pending (the Go runtime's preemption signal,
// say, which a busy machine makes likely by leaving the thread runnable
// with ours pending) is dropped by the kernel, so ours may stand for it
// too, and the Go runtime sends a thread no other until one reaches its
// handler. The kernel does the timing, exactly in the
// thread's CPU time, and only the sampled thread stops. The event's count
// (read(2)) gives the CPU time each sample stands for. At each sample the
// next interval is set (PERF_EVENT_IOC_PERIOD, with jitter if asked) less
// the CPU time the thread used between the overflow and its stop, so ticks
// stay one interval apart and the collector knows when the next is due.
//
// A stop can only come at a return to user mode, and a second overflow
// while our signal is pending is merged into it. That loses nothing when
// the thread spent the time in one kernel entry (a long system call such
// as a large munmap, a fault, an interrupt, or time the hypervisor took):
// the sample at its end has that user stack, and its Period covers the
// whole stretch. Ticks are lost, and counted in Lost records, only when
// the thread ran code the collector did not see: it blocked the signal
// (the late stop then ends a system call that changes the signal mask),
// or, in poll mode, the poller fell behind. A program's own SIGURG pending
// when our event overflows (the Go runtime's preemption signal) absorbs
// ours: its stop, if the thread's tick is due, is sampled as ours.
//
// The fallback ("poll"), used when the kernel refuses these events or an
// attached process has a thread that blocks SIGURG (such a thread never
// stops for it), wakes when a thread may have used its (jittered) interval,
// reads its CPU time (a counting perf event, else
// /proc/PID/task/TID/schedstat, only as fresh as the scheduler tick) and
// PTRACE_INTERRUPTs it if it did. It stops threads more cheaply, but its
// timing depends on culprit getting a CPU: with more runnable threads than
// CPUs it loses ticks (docs/performance.md).
//
// Samples carry no CPU number (Sample.CPU is 0): ptrace does not tell it.
//
// # Culprit killed
//
// If culprit is killed with SIGKILL (no cleanup possible), the kernel
// detaches its tracees and closes its perf events; whatever stop was
// pending must then be harmless. SIGURG's default action is to ignore it
// (and Go programs, which handle it for preemption, tolerate spurious
// ones), so a thread that sits in one of the collector's signal stops, or
// has one queued, runs on. Interrupt and group stops end without a signal,
// PTRACE_O_EXITKILL is never set, and a launched command is seized at its
// exec (collector.Start), not started under PTRACE_TRACEME. (perf's
// sigtrap attribute, used before, sends a SIGTRAP that killed the target
// in such a case.) A clean stop (Ctrl-C, SIGTERM, the duration, the stop
// channel, an error) also consumes queued signals before detaching.
package ptracer

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/collector"
	"github.com/culprit-dev/culprit/internal/proc"
	"github.com/culprit-dev/culprit/internal/recording"
)

// Sampling mechanisms (Options.Mechanism, Result.Mechanism).
const (
	MechanismAuto   = ""
	MechanismSignal = "signal" // per-thread cpu-clock perf events that signal the thread
	MechanismPoll   = "poll"   // schedstat polling and PTRACE_INTERRUPT
)

// Event is the Meta.Event of ptrace recordings.
const Event = "ptrace-cpu-clock"

// Options configure a ptrace recording.
type Options struct {
	Output    string        // recording file (default culprit.rec)
	Frequency int           // samples per second of CPU time per thread (default 999)
	Duration  time.Duration // stop after this long (0: until the command exits or stop)
	Tool      string        // "culprit <version>", stored in the recording
	// Jitter varies each sampling interval at random by up to ±Jitter
	// percent (0 to 90), so sampling cannot run in lock step with periodic
	// code.
	Jitter float64
	// StackBytes is how much live stack is read from SP per sample
	// (default 32768).
	StackBytes int
	// Mechanism picks how threads are stopped (MechanismAuto: signal, else
	// poll).
	Mechanism string
	// FastStart cuts the wait for the kernel's first task-bound perf event
	// by an expedited RCU grace period (perf.FastStart).
	FastStart bool
	// State, when set, samples program state (expressions, rules, vProf
	// values) at every sample while the thread is stopped: it reads the
	// whole memory of the process as it is at the sample.
	State collector.State
}

// Result summarises a finished recording.
type Result struct {
	Samples   uint64
	Lost      uint64 // CPU-time ticks the thread spent in its own code that got no sample of their own
	Truncated uint64 // samples whose stack did not unwind to its outermost frame
	Bytes     int64
	ExitCode  int // the launched command's exit code (128+signal if killed); -1 when attached or unknown
	Mechanism string
	// CostMedian and CostP99 are the collector's time per sample, from the
	// stop being reported to the thread being resumed (registers, stack,
	// unwinding, hook, writing).
	CostMedian, CostP99 time.Duration
	Warnings            []string
}

// ErrCommandNotFound is wrapped when the command to profile does not exist.
var ErrCommandNotFound = collector.ErrCommandNotFound

func (o *Options) setDefaults() error {
	if o.Frequency == 0 {
		o.Frequency = 999
	}
	if o.Frequency < 1 || o.Frequency > 20000 {
		return fmt.Errorf("frequency %d Hz is out of range for the ptrace collector: use 1 to 20000", o.Frequency)
	}
	if o.Jitter < 0 || o.Jitter > 90 {
		return fmt.Errorf("jitter %g%% is out of range: use 0 to 90", o.Jitter)
	}
	if o.StackBytes == 0 {
		o.StackBytes = 32768
	}
	if o.StackBytes < 64 || o.StackBytes > 1<<20 {
		return fmt.Errorf("stack size %d is out of range: use 64 to 1048576 bytes", o.StackBytes)
	}
	switch o.Mechanism {
	case MechanismAuto, MechanismSignal, MechanismPoll:
	default:
		return fmt.Errorf("unknown sampling mechanism %q: use signal or poll", o.Mechanism)
	}
	if o.Output == "" {
		o.Output = "culprit.rec"
	}
	return nil
}

// Launch runs argv under the collector and returns when it exits (or, with
// a duration, when the duration ends and the command has exited). The
// command's standard streams are culprit's own, and its exit code is kept.
func Launch(o Options, argv []string) (Result, error) {
	if err := o.setDefaults(); err != nil {
		return Result{}, err
	}
	if len(argv) == 0 {
		return Result{}, fmt.Errorf("no command given: use culprit record -- CMD [ARGS...]")
	}
	if _, err := exec.LookPath(argv[0]); err != nil {
		return Result{}, fmt.Errorf("%w: %s", ErrCommandNotFound, argv[0])
	}
	defer quietStops()()
	// Every ptrace request must come from the thread that attached, and the
	// command must be a child of that thread (wait4 uses __WNOTHREAD).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	relay := collector.CatchSignals()
	defer relay.Stop()
	s, err := newSession(o, recording.Meta{Command: argv})
	if err != nil {
		return Result{}, err
	}
	defer s.cleanup()

	// The command waits seized at its exec before running one instruction
	// (collector.Start); its sampling is set up there, then it runs.
	child, err := collector.Start(argv, ptraceOptions)
	if err != nil {
		s.abandon()
		return Result{}, err
	}
	pid := child.Pid
	s.child = pid
	relay.Caught()
	relay.Forward(pid)
	if err := s.takeOver(pid); err != nil {
		child.Kill()
		s.child = 0
		s.abandon()
		return Result{}, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	if err := testHook("launched", pid); err != nil {
		return Result{}, err
	}
	if o.Duration > 0 {
		t := time.AfterFunc(o.Duration, s.wake)
		defer t.Stop()
	}
	if err := s.run(); err != nil {
		return Result{}, err
	}
	s.detachAll()
	if s.child != 0 {
		// Sampling stopped before the command ended: it runs on, and its
		// exit code is still culprit's.
		var ws unix.WaitStatus
		for {
			_, err := unix.Wait4(s.child, &ws, 0, nil)
			if err != unix.EINTR {
				break
			}
		}
		s.res.ExitCode = exitCode(ws)
		s.child = 0
	}
	return s.finish()
}

// takeOver sets up the sampling of the command seized at its exec and
// resumes it.
func (s *session) takeOver(pid int) error {
	t := s.addThread(pid, pid, stStopped)
	p := s.addProcess(pid, 0)
	s.describe(p, true)
	if err := s.chooseMechanism(t); err != nil {
		return err
	}
	s.arm(t)
	s.resume(t)
	return s.w.Flush()
}

// wait4Tid waits for one tracee.
func wait4Tid(tid int, ws *unix.WaitStatus) (int, error) {
	for {
		pid, err := unix.Wait4(tid, ws, unix.WALL, nil)
		if err != unix.EINTR {
			return pid, err
		}
	}
}

func exitCode(ws unix.WaitStatus) int { return collector.ExitCode(ws) }

// Attach samples the running process pid (all its threads, and the threads
// and processes it creates) until stop is closed, the duration ends or the
// process exits, then detaches, leaving it running as it was.
func Attach(o Options, pid int, stop <-chan struct{}) (Result, error) {
	if err := o.setDefaults(); err != nil {
		return Result{}, err
	}
	if pid <= 0 || !proc.Exists(pid) {
		return Result{}, fmt.Errorf("no process with PID %d: %w", pid, proc.ErrNoProcess)
	}
	if tgid, ok := tgidOf(pid); ok && tgid != pid {
		pid = tgid // a thread id: trace its whole process
	}
	if pid == os.Getpid() {
		return Result{}, fmt.Errorf("culprit cannot trace itself")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer quietStops()()
	s, err := newSession(o, recording.Meta{AttachPID: pid, Command: proc.Cmdline(pid)})
	if err != nil {
		return Result{}, err
	}
	defer s.cleanup()
	if err := s.seizeProcess(pid); err != nil {
		s.detachAll()
		s.abandon()
		return Result{}, fmt.Errorf("attaching to %d: %w", pid, err)
	}
	if err := testHook("attached", pid); err != nil {
		return Result{}, err
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		defer func() { recover() }() // a collector goroutine never ends culprit
		select {
		case <-stop:
			s.wake()
		case <-done:
		}
	}()
	if o.Duration > 0 {
		t := time.AfterFunc(o.Duration, s.wake)
		defer t.Stop()
	}
	if err := s.run(); err != nil {
		return Result{}, err
	}
	s.detachAll()
	return s.finish()
}

// seizeProcess seizes every thread of pid, listing them again until no new
// one appears (threads that seized threads create are attached by the
// kernel), then sets up their sampling.
func (s *session) seizeProcess(pid int) error {
	p := s.addProcess(pid, 0)
	me := os.Getpid()
	for round := 0; ; round++ {
		tids, err := proc.Tasks(pid)
		if err != nil {
			return err
		}
		fresh := 0
		for _, tid := range tids {
			if s.threads[tid] != nil {
				continue
			}
			err := seize(tid)
			switch {
			case err == nil:
				s.addThread(pid, tid, stRunning)
				fresh++
			case err == unix.ESRCH:
				// It exited meanwhile.
			case err == unix.EPERM && tracerOf(tid) == me:
				// Created by a seized thread: attached by the kernel, its
				// first stop is on the way.
				s.addThread(pid, tid, stNew)
			case err == unix.EPERM:
				if t := tracerOf(tid); t != 0 {
					return fmt.Errorf("thread %d is already traced by process %d (a debugger?): %w", tid, t, err)
				}
				return fmt.Errorf("not permitted to trace thread %d (run as root, or as its owner with kernel.yama.ptrace_scope=0): %w", tid, err)
			default:
				return fmt.Errorf("seizing thread %d: %w", tid, err)
			}
		}
		if fresh == 0 {
			break
		}
		if round > 100 {
			return fmt.Errorf("the threads of %d keep changing", pid)
		}
	}
	if len(s.threads) == 0 {
		return fmt.Errorf("no threads left: %w", proc.ErrNoProcess)
	}
	s.describe(p, false)
	var first *thread
	for _, t := range s.order {
		if t.state == stRunning {
			first = t
			break
		}
	}
	if first == nil {
		first = s.order[0]
	}
	if s.o.Mechanism == MechanismAuto {
		// A thread that blocks stopSignal (sigfillset before sigwait, say)
		// never stops for the signal mechanism.
		for _, t := range s.order {
			if blocksStopSignal(t.tid) {
				s.o.Mechanism = MechanismPoll
				s.warn("thread %d blocks SIGURG: sampling by polling each thread's CPU time instead of signalling perf events", t.tid)
				break
			}
		}
	}
	if err := s.chooseMechanism(first); err != nil {
		return err
	}
	for _, t := range s.order {
		if t.state == stRunning {
			s.arm(t)
		}
	}
	return s.w.Flush()
}

// testHooks lets tests inject failures at named points ("launched",
// "attached"); nil outside tests.
var testHooks func(point string, pid int) error

func testHook(point string, pid int) error {
	if testHooks == nil {
		return nil
	}
	return testHooks(point, pid)
}
