package collector

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/rawfork"
)

// ErrCommandNotFound is wrapped when the command to profile does not exist.
var ErrCommandNotFound = errors.New("command not found")

// Child is a command started stopped at its exec: seized (PTRACE_SEIZE) by
// the thread that called Start, in its PTRACE_EVENT_EXEC stop, before its
// first instruction. A collector sets up its sampling on it, then either
// releases it (Release: the perf collector, an uprobe tracer) or goes on
// tracing it (the ptrace collector, from the same locked thread).
//
// Nothing about a Child kills or stops the command if culprit dies: it is
// not started under PTRACE_TRACEME, whose exec stop is a SIGTRAP that the
// kernel delivers (killing the command) when the tracer dies while the
// command waits in it, and PTRACE_O_EXITKILL is never set. Before its exec
// the child waits on a pipe from culprit; if culprit dies then, the pipe
// reads end-of-file and the command starts untraced. Once seized, the
// exec stop is a ptrace-event stop, which the kernel ends without a signal
// when the tracer is gone.
type Child struct {
	Pid    int
	Path   string // the executable, as exec.LookPath found it
	reaped bool
	// ended: it exited while culprit waited for its entry (RunToEntry),
	// with exit code code
	ended bool
	code  int
}

// Start starts argv (argv[0] looked up in PATH) stopped at its exec, with
// culprit's standard streams and environment. The calling goroutine must be
// locked to its thread (runtime.LockOSThread): it is the tracer, and every
// later ptrace request must come from it. options are PTRACE_O_* flags;
// PTRACE_O_TRACEEXEC is always added.
func Start(argv []string, options int) (*Child, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("no command given: use culprit record -- CMD [ARGS...]")
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrCommandNotFound, argv[0])
	}
	argv0, err := syscall.BytePtrFromString(path)
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	argvp, err := syscall.SlicePtrFromStrings(argv)
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	envp, err := syscall.SlicePtrFromStrings(os.Environ())
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	var gate, errp [2]int
	if err := unix.Pipe2(gate[:], unix.O_CLOEXEC); err != nil {
		return nil, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	if err := unix.Pipe2(errp[:], unix.O_CLOEXEC); err != nil {
		unix.Close(gate[0])
		unix.Close(gate[1])
		return nil, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	defer unix.Close(errp[0])

	// The child restores this thread's signal mask itself.
	pid, errno := rawfork.Fork(func(mask *uint64) (int, syscall.Errno) {
		return forkGated(argv0, &argvp[0], &envp[0], gate[0], gate[1], errp[1], mask)
	})
	runtime.KeepAlive(argv0)
	runtime.KeepAlive(argvp)
	runtime.KeepAlive(envp)
	unix.Close(gate[0])
	unix.Close(errp[1])
	if errno != 0 {
		unix.Close(gate[1])
		return nil, fmt.Errorf("starting %s: fork: %w", argv[0], errno)
	}
	c := &Child{Pid: pid, Path: path}
	if err := seize(pid, options|unix.PTRACE_O_TRACEEXEC); err != nil {
		tracer := tracerOf(pid)
		unix.Close(gate[1])
		c.Kill()
		if err == unix.EPERM && tracer != 0 {
			return nil, fmt.Errorf("starting %s: it is traced by process %d already (culprit under strace -f or a debugger?): %w", argv[0], tracer, err)
		}
		return nil, fmt.Errorf("starting %s: tracing it: %w", argv[0], err)
	}
	// Go: the child execs.
	unix.Write(gate[1], []byte{1})
	unix.Close(gate[1])
	var ws unix.WaitStatus
	for {
		if _, err := wait4(pid, &ws); err != nil {
			c.reaped = true
			return nil, fmt.Errorf("starting %s: %w", argv[0], err)
		}
		switch {
		case ws.Exited() || ws.Signaled():
			c.reaped = true
			var b [4]byte
			if n, _ := unix.Read(errp[0], b[:]); n == 4 {
				e := syscall.Errno(uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24)
				return nil, fmt.Errorf("starting %s: %w", argv[0], e)
			}
			return nil, fmt.Errorf("starting %s: it ended before its exec (status %#x)", argv[0], uint32(ws))
		case !ws.Stopped():
			continue
		case int(ws>>16)&0xff == unix.PTRACE_EVENT_EXEC:
			return c, nil
		}
		// A signal that reached it before its exec (Ctrl-C, say): it gets
		// the signal, as it would untraced. A group-stop is ended.
		sig := 0
		if int(ws>>16)&0xff == 0 {
			sig = int(ws.StopSignal())
		}
		if err := ptrace(unix.PTRACE_CONT, pid, 0, uintptr(sig)); err != nil && err != unix.ESRCH {
			c.Kill()
			return nil, fmt.Errorf("starting %s: %w", argv[0], err)
		}
	}
}

// Release detaches from the command, which runs on from where it stopped.
func (c *Child) Release() error {
	if c.ended {
		return nil
	}
	if err := ptrace(unix.PTRACE_DETACH, c.Pid, 0, 0); err != nil {
		return fmt.Errorf("releasing %s: %w", c.Path, err)
	}
	return nil
}

// Kill kills the command and reaps it (a start that failed).
func (c *Child) Kill() {
	if c.reaped {
		return
	}
	unix.Kill(c.Pid, unix.SIGKILL)
	var ws unix.WaitStatus
	wait4(c.Pid, &ws)
	c.reaped = true
}

// Wait waits for the released command to exit and returns its exit code
// (128+signal when a signal ended it).
func (c *Child) Wait() (int, error) {
	if c.ended {
		return c.code, nil
	}
	var ws unix.WaitStatus
	for {
		_, err := unix.Wait4(c.Pid, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return -1, fmt.Errorf("waiting for %s: %w", c.Path, err)
		}
		if ws.Exited() || ws.Signaled() {
			c.reaped = true
			return ExitCode(ws), nil
		}
	}
}

// Ended reports whether the command exited before its entry (RunToEntry):
// its exit code is Wait's, and its pid no longer names it.
func (c *Child) Ended() bool { return c.ended }

// RunToEntry runs the command from its exec stop to the first instruction
// of its executable (AT_ENTRY in its auxiliary vector), where the dynamic
// loader has mapped and relocated every library the executable needs
// (DT_NEEDED, LD_PRELOAD) and run their initializers, and leaves it
// stopped there, seized as before, to be released: a collector learns where
// the libraries are (their globals, say) before the program's own code
// runs, which the mmap records it reads later tell only after the fact.
// It puts a breakpoint (int3) at the entry, continues the command once,
// and at the breakpoint's stop puts the byte back and the instruction
// pointer on the entry; signals that reach the command meanwhile are
// delivered to it. A command without a dynamic loader (AT_BASE 0) is at
// its entry already.
//
// reached is false, with the breakpoint removed, when the command did not
// get there: it is stopped where it was after limit (initializers that run
// long, which the collector would not read meanwhile), or it exited (a
// library not found, a signal: Ended, its exit code kept for Wait).
func (c *Child) RunToEntry(limit time.Duration) (reached bool, err error) {
	entry, base, err := auxvEntry(c.Pid)
	if err != nil {
		return false, fmt.Errorf("running %s to its entry: %w", c.Path, err)
	}
	if base == 0 {
		return true, nil
	}
	var w [8]byte
	if _, err := unix.PtracePeekText(c.Pid, uintptr(entry), w[:]); err != nil {
		return false, fmt.Errorf("running %s to its entry: reading it: %w", c.Path, err)
	}
	trap := w
	trap[0] = 0xcc // int3
	if _, err := unix.PtracePokeText(c.Pid, uintptr(entry), trap[:]); err != nil {
		return false, fmt.Errorf("running %s to its entry: setting a breakpoint: %w", c.Path, err)
	}
	restore := func() error {
		if _, err := unix.PtracePokeText(c.Pid, uintptr(entry), w[:]); err != nil {
			return fmt.Errorf("running %s to its entry: removing the breakpoint: %w", c.Path, err)
		}
		return nil
	}
	sig := 0 // the signal to deliver as it goes on
	deadline := time.Now().Add(limit)
	interrupted := false
	for {
		if err := ptrace(unix.PTRACE_CONT, c.Pid, 0, uintptr(sig)); err != nil {
			// Only a command that is gone refuses (a SIGKILL from
			// elsewhere): its exit is the next wait's.
			if err != unix.ESRCH {
				restore()
				return false, fmt.Errorf("running %s to its entry: %w", c.Path, err)
			}
		}
		sig = 0
		var ws unix.WaitStatus
		for {
			// Polled, not waited for: after limit the command is
			// interrupted, which only this thread can ask.
			r, err := unix.Wait4(c.Pid, &ws, unix.WALL|unix.WNOHANG, nil)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return false, fmt.Errorf("running %s to its entry: %w", c.Path, err)
			}
			if r == c.Pid {
				break
			}
			if !interrupted && time.Now().After(deadline) {
				interrupted = true
				if err := ptrace(unix.PTRACE_INTERRUPT, c.Pid, 0, 0); err != nil && err != unix.ESRCH {
					return false, fmt.Errorf("running %s to its entry: %w", c.Path, err)
				}
			}
			time.Sleep(100 * time.Microsecond)
		}
		switch {
		case ws.Exited() || ws.Signaled():
			c.reaped, c.ended, c.code = true, true, ExitCode(ws)
			return false, nil
		case !ws.Stopped():
			continue
		case int(ws>>16)&0xff == 0 && ws.StopSignal() == unix.SIGTRAP:
			var regs unix.PtraceRegs
			if err := unix.PtraceGetRegs(c.Pid, &regs); err != nil {
				restore()
				return false, fmt.Errorf("running %s to its entry: %w", c.Path, err)
			}
			if regs.Rip != entry+1 {
				sig = int(unix.SIGTRAP) // not the breakpoint's: the command's own
				continue
			}
			if err := restore(); err != nil {
				return false, err
			}
			regs.Rip = entry
			if err := unix.PtraceSetRegs(c.Pid, &regs); err != nil {
				return false, fmt.Errorf("running %s to its entry: %w", c.Path, err)
			}
			return true, nil
		case int(ws>>16)&0xff == unix.PTRACE_EVENT_STOP && interrupted:
			return false, restore()
		case int(ws>>16)&0xff == 0:
			sig = int(ws.StopSignal())
		}
		// Other event stops (a group-stop) are ended, as in Start.
	}
}

// auxvEntry reads the entry point (AT_ENTRY) and the dynamic loader's base
// (AT_BASE, 0 without one) from a process's auxiliary vector.
func auxvEntry(pid int) (entry, base uint64, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/auxv")
	if err != nil {
		return 0, 0, err
	}
	for ; len(b) >= 16; b = b[16:] {
		k, v := binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:])
		switch k {
		case 9: // AT_ENTRY
			entry = v
		case 7: // AT_BASE
			base = v
		}
	}
	if entry == 0 {
		return 0, 0, fmt.Errorf("no AT_ENTRY in its auxiliary vector")
	}
	return entry, base, nil
}

// ExitCode is a wait status's exit code: 128+signal when a signal ended the
// process, -1 when it has not ended.
func ExitCode(ws unix.WaitStatus) int {
	switch {
	case ws.Exited():
		return ws.ExitStatus()
	case ws.Signaled():
		return 128 + int(ws.Signal())
	}
	return -1
}

func ptrace(req, pid int, addr, data uintptr) error {
	_, _, e := unix.RawSyscall6(unix.SYS_PTRACE, uintptr(req), uintptr(pid), addr, data, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// seize attaches to pid without stopping it. PTRACE_O_EXITKILL is never
// among the options: culprit's death must not kill what it traced.
func seize(pid, options int) error {
	return ptrace(unix.PTRACE_SEIZE, pid, 0, uintptr(options&^unix.PTRACE_O_EXITKILL))
}

func wait4(pid int, ws *unix.WaitStatus) (int, error) {
	for {
		r, err := unix.Wait4(pid, ws, unix.WALL, nil)
		if err != unix.EINTR {
			return r, err
		}
	}
}

// forkGated forks the calling thread into a child that waits until culprit
// writes to the gate pipe (or exits: end-of-file), then restores the
// signal mask and execs. If the exec fails it writes errno to errw and
// exits 127. It is called through rawfork.Fork (signals blocked) and the
// child runs only raw system calls (package rawfork). Handlers of signals
// are reset to the default before the mask is restored (ignored ones stay
// ignored, as across exec).
//
//go:nosplit
//go:norace
func forkGated(argv0 *byte, argv, envv **byte, gateR, gateW, errW int, mask *uint64) (int, syscall.Errno) {
	if pid, e := rawfork.Clone(); pid != 0 || e != 0 {
		return pid, e
	}
	rawfork.Close(gateW)
	rawfork.Await(gateR)
	var act sigaction
	for sig := uintptr(1); sig <= 64; sig++ {
		if sig == uintptr(syscall.SIGKILL) || sig == uintptr(syscall.SIGSTOP) || sig == 32 || sig == 33 {
			continue
		}
		if _, _, e := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, sig, 0, uintptr(unsafe.Pointer(&act)), 8, 0, 0); e != 0 {
			continue
		}
		if act.handler > 1 { // neither SIG_DFL nor SIG_IGN
			act = sigaction{}
			syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, sig, uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0)
		}
	}
	rawfork.SetMask(mask)
	_, _, e := syscall.RawSyscall(syscall.SYS_EXECVE, uintptr(unsafe.Pointer(argv0)), uintptr(unsafe.Pointer(argv)), uintptr(unsafe.Pointer(envv)))
	v := uint32(e)
	w := [4]byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)}
	syscall.RawSyscall(syscall.SYS_WRITE, uintptr(errW), uintptr(unsafe.Pointer(&w[0])), 4)
	rawfork.Exit(127)
	return 0, 0
}

// sigaction is struct sigaction as rt_sigaction(2) takes it on x86-64.
type sigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

// tracerOf is the TracerPid of a process, 0 when none or unknown.
func tracerOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "TracerPid:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}
