package recorder

import (
	"fmt"
	"os/exec"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/collector"
	"github.com/culprit-dev/culprit/internal/perf"
	"github.com/culprit-dev/culprit/internal/proc"
	"github.com/culprit-dev/culprit/internal/recording"
)

// pollInterval bounds how long samples wait in the rings; the watermark wakes
// the recorder earlier when rings fill. Each round is a wake-up of the
// recorder: the runtime's poller thread returns from epoll_wait and hands
// the P to the loop's locked thread, which parks again after the drain,
// several thread switches that on a machine whose CPUs the target keeps
// busy preempt the target itself. Rounds are what the recorder costs a
// target that samples little; so the interval is as long as the last
// drain, which the command's caller waits for, and the rings allow: the
// perf and snapshot rings hold half a second at the full rate (ringSeconds),
// the system call program's ring (which wakes nobody) more than a tenth of
// a second of the fastest loop of system calls (sysRingBytes).
const pollInterval = 50 * time.Millisecond

// ErrCommandNotFound is wrapped when the command to profile does not exist.
var ErrCommandNotFound = collector.ErrCommandNotFound

// Launch runs argv under sampling and returns when it exits. The command's
// standard streams are the recorder's own. The command is started stopped
// at its exec (collector.Start), the events are opened on it, then it is
// released, so not one instruction of the command runs unsampled.
func Launch(o Options, argv []string) (Result, error) {
	if err := o.setDefaults(); err != nil {
		return Result{}, err
	}
	fastStart(&o)
	// First, as it is the longest to come: the thread that maps the rings
	// must be woken on the other CPU (up to 0.4 ms on an idle VM) and the
	// first perf event to be opened may wait for the kernel (holdRings).
	held := holdRings(o)
	defer held.release()
	if len(argv) == 0 {
		return Result{}, fmt.Errorf("no command given: use culprit record -- CMD [ARGS...]")
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return Result{}, fmt.Errorf("%w: %s", ErrCommandNotFound, argv[0])
	}
	// fp mode's stack copy depends on the program: read while it starts.
	stackBytes := make(chan int, 1)
	if o.autoStack {
		go func() {
			defer func() {
				if recover() != nil {
					stackBytes <- 8192
				}
			}()
			stackBytes <- stackFor(path)
		}()
	} else {
		stackBytes <- o.StackBytes
	}
	// Signals are caught in the background; the command is released only
	// once they are.
	relay := collector.CatchSignals()
	defer relay.Stop()
	// Only what the command's first instruction needs is done before it is
	// released (the output is created, so that a bad path fails before the
	// command runs); the rest follows while it runs: each millisecond here is
	// one the command waits at its exec.
	s, err := newSession(o, recording.Meta{Command: argv})
	if err != nil {
		return Result{}, err
	}

	// Ptrace requests must come from the thread that started the tracee.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	child, err := collector.Start(argv, 0)
	if err != nil {
		s.abandon()
		return Result{}, err
	}
	pid := child.Pid
	// A launched command lives and dies with culprit: on any way out before
	// its release (an error, a panic) it is killed and reaped.
	released := false
	defer func() {
		if !released {
			child.Kill()
		}
	}()
	// The mappings exec made, read while the rings may still be coming.
	first, err := readProcess(pid)
	if err != nil {
		s.warn("reading the mappings of %d: %v", pid, err)
	}
	s.adopt(held)
	s.o.StackBytes = <-stackBytes
	if err := s.followProcess(pid); err != nil {
		child.Kill()
		s.abandon()
		return Result{}, err
	}
	if err := s.openEvents([]int{pid}); err != nil {
		child.Kill()
		s.abandon()
		return Result{}, err
	}
	if err := s.planAtEntry(child, first.exe); err != nil {
		child.Kill()
		s.abandon()
		return Result{}, err
	}
	relay.Caught()
	if err := child.Release(); err != nil {
		child.Kill()
		s.abandon()
		return Result{}, err
	}
	released = true
	if !child.Ended() { // else its pid is no longer its own
		relay.Forward(pid)
		s.watch(pid) // a pidfd: also of a process that has already exited
	}
	s.begin()
	s.synthesize(first)
	defer oneCore()()
	s.startKernelSymbols()

	code, err := child.Run(s.pidfd, o.Duration, s.step, func() {
		// Stop sampling; the command runs on and its exit code is kept.
		for _, e := range s.events {
			e.Disable()
		}
	})
	if err != nil {
		s.warn("%v", err)
	}
	s.res.ExitCode = code
	return s.finish()
}

// entryLimit bounds the wait for a launched command's entry (planAtEntry):
// the dynamic loader takes a millisecond or two, tens under load; the
// libraries' initializers run before the entry too, and a long one would
// fill the rings, which nobody reads meanwhile (they hold half a second).
const entryLimit = 250 * time.Millisecond

// planAtEntry installs the memory plan of a launched command (the globals
// copied at its samples) once the sampling program is loaded, before the
// command runs: where it copies libraries' globals, after running the
// command to its executable's entry (collector.Child.RunToEntry), when the
// dynamic loader has mapped every library the executable needs; its
// samples then carry them from the program's first instruction on, where
// a plan renewed from the libraries' mmap records, read at the recorder's
// next drain (50 ms later, more under load), missed them until then.
// Libraries opened later (dlopen) keep that path. A command that ended
// before its entry (a library missing) has no plan; one whose
// initializers ran past entryLimit gets it where it was stopped.
func (s *session) planAtEntry(child *collector.Child, exe string) error {
	pid := uint32(child.Pid)
	if s.snap == nil || s.mem == nil || exe == "" || !s.mem.Wants(exe) {
		return nil
	}
	if _, err := child.RunToEntry(entryLimit); err != nil {
		return err
	}
	if child.Ended() {
		return nil
	}
	s.replan(pid, exe)
	return nil
}

// oneCore limits the recorder to one core while the target runs. With more,
// the Go runtime's garbage-collection workers spread onto the cores the
// target runs on and slow it down (measured: 2.8% → 0.9% of a CPU-bound run
// at 999 Hz on 2 vCPUs; see docs/performance.md). Before the target is
// released, Launch uses two: the rings are prepared while the command starts
// (holdRings), and with one P a goroutine in a long system call holds it
// until the runtime's monitor hands it over, up to milliseconds later. It
// returns what puts the setting back.
func oneCore() (restore func()) {
	n := runtime.GOMAXPROCS(1)
	return func() { runtime.GOMAXPROCS(n) }
}

// step is one round of the collector's loop (collector.Child.Run,
// collector.Follow): it waits for data or the target's exit, drains the
// rings unless the target has exited (finish drains what is left) and
// reports whether it has.
func (s *session) step() bool {
	if s.wait() {
		return true
	}
	if err := s.drain(); err != nil {
		s.warn("writing the recording: %v", err)
	}
	return false
}

// watch opens a pidfd on the target, if the kernel allows.
func (s *session) watch(pid int) {
	if fd, err := unix.PidfdOpen(pid, 0); err == nil {
		s.pidfd = fd
	}
}

// Attach samples the running process pid (all its threads, and the threads
// and children it creates) until stop is closed, the duration ends or the
// process exits, then detaches leaving it running.
func Attach(o Options, pid int, stop <-chan struct{}) (Result, error) {
	if err := o.setDefaults(); err != nil {
		return Result{}, err
	}
	if pid <= 0 || !proc.Exists(pid) {
		return Result{}, fmt.Errorf("no process with PID %d: %w", pid, proc.ErrNoProcess)
	}
	if o.autoStack {
		o.StackBytes = stackFor(proc.Exe(pid))
	}
	fastStart(&o)
	s, err := newSession(o, recording.Meta{AttachPID: pid, Command: proc.Cmdline(pid)})
	if err != nil {
		return Result{}, err
	}
	if err := s.decideStacks(); err != nil {
		s.abandon()
		return Result{}, err
	}
	s.begin()
	defer oneCore()()
	if err := s.followProcess(pid); err != nil {
		s.abandon()
		return Result{}, err
	}
	// Open on every thread; threads created meanwhile are picked up by
	// listing again until the list is stable (later ones are inherited).
	opened := map[int]bool{}
	for round := 0; round < 10; round++ {
		tids, err := proc.Tasks(pid)
		if err != nil {
			s.abandon()
			return Result{}, fmt.Errorf("attaching to %d: %w", pid, err)
		}
		var fresh []int
		for _, t := range tids {
			if !opened[t] {
				fresh = append(fresh, t)
				opened[t] = true
			}
		}
		if len(fresh) == 0 {
			break
		}
		if err := s.openEvents(fresh); err != nil {
			s.abandon()
			return Result{}, fmt.Errorf("attaching to %d: %w", pid, err)
		}
	}
	first, err := readProcess(pid)
	if err != nil {
		s.warn("reading the mappings of %d: %v", pid, err)
	}
	s.synthesize(first)
	s.watch(pid)
	s.startKernelSymbols()
	collector.Follow(stop, o.Duration, func() bool {
		// A process that exited: finish drains what is left.
		return s.step() || !proc.Exists(pid)
	})
	return s.finish()
}

// fastStart turns perf.FastStart on when asked; a refusal is said as a
// warning, and recording goes on at the normal pace.
func fastStart(o *Options) {
	if !o.FastStart {
		return
	}
	if err := perf.FastStart(); err != nil {
		o.warnings = append(o.warnings, err.Error())
	}
}
