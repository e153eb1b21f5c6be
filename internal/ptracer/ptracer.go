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
// The default mechanism ("sigtrap") opens, for every traced thread, a
// cpu-clock perf event bound to that thread (pid=tid, cpu=-1) with the
// sigtrap and remove_on_exec attributes (Linux 5.13+). Each time the thread
// has used one period of CPU time the kernel sends that very thread a
// SIGTRAP with si_code TRAP_PERF and our cookie in si_perf_data. As a tracee
// the thread stops in a signal-delivery-stop before any handler runs; the
// collector takes the sample there and resumes the thread with the signal
// suppressed. The kernel does the timing, exactly in the thread's CPU time,
// and only the sampled thread stops. The event's count (read(2)) gives the
// CPU time each sample stands for, so ticks the kernel merged (a second
// overflow while a SIGTRAP is still pending) show as Lost records. Jitter
// changes each thread's next period with PERF_EVENT_IOC_PERIOD.
//
// The fallback ("poll"), used when the kernel refuses sigtrap events or an
// attached process has a thread that blocks SIGTRAP (such a thread never
// stops for it), wakes when a thread may have used its (jittered) interval,
// reads its CPU time (a counting perf event, else
// /proc/PID/task/TID/schedstat, only as fresh as the scheduler tick) and
// PTRACE_INTERRUPTs it if it did. It stops threads more cheaply, but its
// timing depends on culprit getting a CPU: with more runnable threads than
// CPUs it loses ticks (docs/performance.md).
//
// Samples carry no CPU number (Sample.CPU is 0): ptrace does not tell it.
//
// # Hazard
//
// If culprit is killed with SIGKILL (no cleanup possible) while a thread sits
// in one of its SIGTRAP stops, or with a SIGTRAP still queued, the kernel
// detaches and delivers that SIGTRAP, which kills most programs. A clean
// stop (Ctrl-C, SIGTERM, the duration, the stop channel, an error) never
// does: perf events are closed first, queued SIGTRAPs are consumed (with
// SIGTRAP unblocked for that moment in threads that block it), and only
// then are threads detached. The poll mechanism has no such hazard.
package ptracer

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/proc"
	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/unwind"
)

// Sampling mechanisms (Options.Mechanism, Result.Mechanism).
const (
	MechanismAuto    = ""
	MechanismSigtrap = "sigtrap" // per-thread cpu-clock perf events that SIGTRAP the thread
	MechanismPoll    = "poll"    // schedstat polling and PTRACE_INTERRUPT
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
	// Mechanism picks how threads are stopped (MechanismAuto: sigtrap, else
	// poll).
	Mechanism string
	// OnStop, when set, is called at every sample while the thread is
	// stopped; the records it returns are written after the sample. See Stop.
	OnStop func(s *Stop) []recording.Record
}

// Stop is a thread stopped for a sample. It is valid only during the OnStop
// call: its slices are reused and the thread resumes after the call.
type Stop struct {
	Time uint64 // CLOCK_MONOTONIC ns, the recording's clock
	PID  int
	TID  int
	Exe  string // the process's executable (/proc/PID/exe when it was read)
	// Regs are the user registers of the innermost frame (PtraceRegs) and
	// the same in DWARF numbering (unwind.Regs: 0 rax ... 7 rsp, 8-15 r8-r15,
	// 16 rip).
	Regs  unix.PtraceRegs
	DWARF unwind.Regs
	// PCs is the unwound call chain, innermost first: PCs[0] is the exact
	// PC, the others return addresses. Complete reports that the outermost
	// frame was reached. The hook may shorten PCs (keep N frames); the sample
	// is written with what is left.
	PCs      []uint64
	Complete bool
	// Frames are the same frames with the registers CFI restores in each
	// and its CFA (unwind.UnwindFrames), for reading variables in callers.
	Frames []unwind.Frame
	// Stack is the copy of live stack read from StackSP (the thread's rsp).
	Stack   []byte
	StackSP uint64
	// Drop, set by the hook, leaves this sample out of the recording (the
	// hook's records are still written).
	Drop bool

	s *session
	p *process
}

// Mem reads len(buf) bytes of the stopped process's memory at addr; a short
// read is an error. It has the signature of state.Thread.Mem.
func (s *Stop) Mem(addr uint64, buf []byte) error {
	n, err := s.ReadMemory(addr, buf)
	if err == nil && n != len(buf) {
		err = fmt.Errorf("reading %d bytes at %#x of process %d: only %d readable", len(buf), addr, s.PID, n)
	}
	return err
}

// Object says which object file is mapped at pc in the stopped process and
// its load bias (runtime address = ELF address + bias), from the mappings
// the collector keeps (it implements state.Resolver).
func (s *Stop) Object(pc uint64) (path string, bias uint64, ok bool) {
	if s.p == nil {
		return "", 0, false
	}
	m, ok := s.p.space.Find(pc)
	if !ok || len(m.Path) == 0 || m.Path[0] != '/' {
		return "", 0, false
	}
	t := s.s.tables.Lookup(m.Path)
	if t == nil {
		return "", 0, false
	}
	bias, ok = t.Bias(m.Start, m.Offset)
	return m.Path, bias, ok
}

// ReadMemory reads the stopped process's memory at addr into p; it returns
// how many bytes were read (short at unmapped memory).
func (s *Stop) ReadMemory(addr uint64, p []byte) (int, error) {
	n, err := readMem(s.PID, addr, p)
	if err != nil {
		return 0, fmt.Errorf("reading %d bytes at %#x of process %d: %w", len(p), addr, s.PID, err)
	}
	return n, nil
}

// Result summarises a finished recording.
type Result struct {
	Samples   uint64
	Lost      uint64 // CPU-time ticks that got no sample of their own
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
var ErrCommandNotFound = errors.New("command not found")

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
	case MechanismAuto, MechanismSigtrap, MechanismPoll:
	default:
		return fmt.Errorf("unknown sampling mechanism %q: use sigtrap or poll", o.Mechanism)
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
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return Result{}, fmt.Errorf("%w: %s", ErrCommandNotFound, argv[0])
	}
	defer quietStops()()
	// Every ptrace request must come from the thread that attached, and the
	// command must be a child of that thread (wait4 uses __WNOTHREAD).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s, err := newSession(o, recording.Meta{Command: argv})
	if err != nil {
		return Result{}, err
	}
	defer s.cleanup()

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)

	// Started under PTRACE_TRACEME, the command stops at its exec before
	// running one instruction. A TRACEME tracee cannot be interrupted, so it
	// is handed over to a stop signal (PTRACE_DETACH with SIGSTOP), seized
	// in its group-stop, and continued with SIGCONT once its sampling is set
	// up. A SIGCONT with no handler (none can exist yet) does nothing.
	cmd := exec.Command(path, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	if err := cmd.Start(); err != nil {
		s.abandon()
		return Result{}, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	pid := cmd.Process.Pid
	defer cmd.Process.Release() // culprit reaps the command with wait4 itself
	s.child = pid
	if err := s.takeOver(pid); err != nil {
		unix.Kill(pid, unix.SIGKILL)
		var ws unix.WaitStatus
		unix.Wait4(pid, &ws, 0, nil)
		s.child = 0
		s.abandon()
		return Result{}, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	if err := testHook("launched", pid); err != nil {
		return Result{}, err
	}

	done := make(chan struct{})
	defer close(done)
	go func() {
		interrupted := false
		for {
			select {
			case <-done:
				return
			case sig := <-sigs:
				// A terminal's Ctrl-C reaches the command too; a signal sent to
				// culprit alone is passed on, and a second one kills.
				if interrupted {
					unix.Kill(pid, unix.SIGKILL)
				} else if sig != os.Interrupt {
					unix.Kill(pid, sig.(syscall.Signal))
				}
				interrupted = true
			}
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

// takeOver turns the stopped-at-exec TRACEME child into a seized tracee.
func (s *session) takeOver(pid int) error {
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil || !ws.Stopped() {
		return fmt.Errorf("it did not stop at exec (%v, status %#x)", err, uint32(ws))
	}
	if err := detach(pid, int(unix.SIGSTOP)); err != nil {
		return fmt.Errorf("handing the command over: %w", err)
	}
	if _, err := unix.Wait4(pid, &ws, unix.WUNTRACED, nil); err != nil || !ws.Stopped() {
		return fmt.Errorf("it did not stop (%v, status %#x)", err, uint32(ws))
	}
	if err := seize(pid); err != nil {
		unix.Kill(pid, unix.SIGCONT)
		return fmt.Errorf("seizing it: %w", err)
	}
	t := s.addThread(pid, pid, stStopped)
	p := s.addProcess(pid, 0)
	// The seized task re-traps at once in its group-stop.
	if _, err := wait4Tid(pid, &ws); err != nil || !ws.Stopped() {
		return fmt.Errorf("it did not re-trap after PTRACE_SEIZE (%v, status %#x)", err, uint32(ws))
	}
	s.describe(p, true)
	if err := s.chooseMechanism(t); err != nil {
		return err
	}
	s.arm(t)
	if err := unix.Kill(pid, unix.SIGCONT); err != nil {
		return fmt.Errorf("continuing it: %w", err)
	}
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

func exitCode(ws unix.WaitStatus) int {
	switch {
	case ws.Exited():
		return ws.ExitStatus()
	case ws.Signaled():
		return 128 + int(ws.Signal())
	}
	return -1
}

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
		// A thread that blocks SIGTRAP (sigfillset before sigwait, say)
		// never stops for the sigtrap mechanism.
		for _, t := range s.order {
			if blocksSigtrap(t.tid) {
				s.o.Mechanism = MechanismPoll
				s.warn("thread %d blocks SIGTRAP: sampling by polling each thread's CPU time instead of sigtrap perf events", t.tid)
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
