package ptracer

import (
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/perf"
	"github.com/culprit-dev/culprit/internal/rawfork"
)

// Thin wrappers around the system calls the collector makes at every stop.
// The per-sample ones (GETREGS, GETSIGINFO, CONT, process_vm_readv, read of
// the event count) do not block, so they use RawSyscall and skip the Go
// scheduler's bookkeeping; wait4 blocks and goes through Syscall.

const (
	ptraceOptions = unix.PTRACE_O_TRACEFORK | unix.PTRACE_O_TRACEVFORK |
		unix.PTRACE_O_TRACECLONE | unix.PTRACE_O_TRACEEXEC

	// stopSignal is what the collector's perf events send a sampled
	// thread. Its default action is to ignore it, so one left queued or
	// pending when culprit is gone (killed with SIGKILL, say) is harmless.
	// Go programs handle it (asynchronous preemption) and tolerate
	// spurious ones by design; a process that handles it is delivered
	// ours (see the package doc).
	stopSignal = unix.SIGURG

	fOwnerTID = 0 // F_OWNER_TID of struct f_owner_ex

	pollIn  = 1 // si_code POLL_IN: the first of the POLL_* codes
	pollHup = 6 // POLL_HUP, the last
)

func ptrace(req, pid int, addr, data uintptr) error {
	_, _, e := unix.RawSyscall6(unix.SYS_PTRACE, uintptr(req), uintptr(pid), addr, data, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

func seize(tid int) error { return ptrace(unix.PTRACE_SEIZE, tid, 0, ptraceOptions) }

func interrupt(tid int) error { return ptrace(unix.PTRACE_INTERRUPT, tid, 0, 0) }

func cont(tid, sig int) error { return ptrace(unix.PTRACE_CONT, tid, 0, uintptr(sig)) }

func listen(tid int) error { return ptrace(unix.PTRACE_LISTEN, tid, 0, 0) }

func detach(tid, sig int) error { return ptrace(unix.PTRACE_DETACH, tid, 0, uintptr(sig)) }

func getRegs(tid int, r *unix.PtraceRegs) error {
	return ptrace(unix.PTRACE_GETREGS, tid, 0, uintptr(unsafe.Pointer(r)))
}

func eventMsg(tid int) (uint64, error) {
	var m uint64
	err := ptrace(unix.PTRACE_GETEVENTMSG, tid, 0, uintptr(unsafe.Pointer(&m)))
	return m, err
}

// siginfo is the part of siginfo_t the collector reads (x86-64 layout).
type siginfo struct {
	Signo int32
	Errno int32
	Code  int32
	_     int32
	Addr  uint64 // si_addr (sigfault)
	Data  uint64 // si_perf_data: the event's sig_data for TRAP_PERF
	Type  uint32 // si_perf_type
	Flags uint32 // si_perf_flags
	_     [128 - 40]byte
}

func getSiginfo(tid int, si *siginfo) error {
	return ptrace(unix.PTRACE_GETSIGINFO, tid, 0, uintptr(unsafe.Pointer(si)))
}

// pendingSignals reads up to len(out) signals queued for the thread alone
// (PTRACE_PEEKSIGINFO without the shared flag), without dequeuing them.
func pendingSignals(tid int, out []siginfo) (int, error) {
	args := struct {
		Off   uint64
		Flags uint32
		Nr    int32
	}{0, 0, int32(len(out))}
	r, _, e := unix.RawSyscall6(unix.SYS_PTRACE, unix.PTRACE_PEEKSIGINFO, uintptr(tid),
		uintptr(unsafe.Pointer(&args)), uintptr(unsafe.Pointer(&out[0])), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// stopSignalBit is stopSignal's bit in a signal mask.
const stopSignalBit = uint64(1) << (stopSignal - 1)

// getSigmask and setSigmask read and set a stopped thread's blocked signals.
func getSigmask(tid int) (uint64, error) {
	var m uint64
	err := ptrace(unix.PTRACE_GETSIGMASK, tid, 8, uintptr(unsafe.Pointer(&m)))
	return m, err
}

func setSigmask(tid int, m uint64) error {
	return ptrace(unix.PTRACE_SETSIGMASK, tid, 8, uintptr(unsafe.Pointer(&m)))
}

// blocksStopSignal reports whether a thread blocks stopSignal, from the
// SigBlk line of its /proc status.
func blocksStopSignal(tid int) bool {
	v, ok := statusField(tid, "SigBlk")
	if !ok {
		return false
	}
	m, err := strconv.ParseUint(v, 16, 64)
	return err == nil && m&stopSignalBit != 0
}

// readMem reads the target's memory at addr into p with process_vm_readv.
// A range that runs into unmapped memory gives a short count, not an error.
func readMem(pid int, addr uint64, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	local := unix.Iovec{Base: &p[0], Len: uint64(len(p))}
	remote := unix.RemoteIovec{Base: uintptr(addr), Len: len(p)}
	n, _, e := unix.RawSyscall6(unix.SYS_PROCESS_VM_READV, uintptr(pid),
		uintptr(unsafe.Pointer(&local)), 1, uintptr(unsafe.Pointer(&remote)), 1, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// wait waits for any tracee (or child of the tracing thread) to change state.
// __WNOTHREAD keeps it from reaping children that other threads of culprit
// started: the tracer only sees its tracees and its own children.
func wait(status *unix.WaitStatus, nohang bool) (int, error) {
	opts := unix.WALL | unix.WNOTHREAD
	if nohang {
		opts |= unix.WNOHANG
	}
	for {
		pid, err := unix.Wait4(-1, status, opts, nil)
		if err == unix.EINTR {
			continue
		}
		return pid, err
	}
}

// openSignalClock opens a cpu-clock event on thread tid that sends the
// thread stopSignal every period ns of its CPU time: the event's owner
// (F_SETOWN_EX) is the thread itself and its signal (F_SETSIG) stopSignal,
// so the signal carries si_code POLL_IN and si_fd the event's descriptor.
// Unlike perf's sigtrap attribute, whose SIGTRAP kills the program when it
// is delivered after culprit died, a leftover stopSignal does nothing.
func openSignalClock(tid int, period uint64, excludeKernel bool) (int, error) {
	a := unix.PerfEventAttr{
		Type:   unix.PERF_TYPE_SOFTWARE,
		Config: unix.PERF_COUNT_SW_CPU_CLOCK,
		Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Sample: period,
		Bits:   unix.PerfBitExcludeHv,
	}
	if excludeKernel {
		a.Bits |= unix.PerfBitExcludeKernel
	}
	fd, err := perf.OpenTask(&a, tid, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return -1, err
	}
	owner := struct{ Type, PID int32 }{fOwnerTID, int32(tid)}
	if _, _, e := unix.Syscall(unix.SYS_FCNTL, uintptr(fd), unix.F_SETOWN_EX, uintptr(unsafe.Pointer(&owner))); e != 0 {
		unix.Close(fd)
		return -1, e
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETSIG, int(stopSignal)); err != nil {
		unix.Close(fd)
		return -1, err
	}
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err == nil {
		_, err = unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl|unix.O_ASYNC)
	}
	if err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// ours reports whether a signal is one of the collector's perf events':
// stopSignal with a POLL_* code (POLL_IN at an overflow). Signals sent by
// kill or tgkill, or by the kernel for out-of-band socket data, have other
// codes.
func ours(si *siginfo) bool {
	return si.Signo == int32(stopSignal) && si.Code >= pollIn && si.Code <= pollHup
}

// openCPUCounter opens a counting (not sampling) cpu-clock event on thread
// tid, for the poll mechanism.
func openCPUCounter(tid int, excludeKernel bool) (int, error) {
	a := unix.PerfEventAttr{
		Type:   unix.PERF_TYPE_SOFTWARE,
		Config: unix.PERF_COUNT_SW_CPU_CLOCK,
		Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Bits:   unix.PerfBitExcludeHv,
	}
	if excludeKernel {
		a.Bits |= unix.PerfBitExcludeKernel
	}
	return perf.OpenTask(&a, tid, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
}

// readCount reads a counting event's value (ns of CPU time for cpu-clock).
func readCount(fd int) (uint64, error) {
	var b [8]byte
	n, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), 8)
	if e != 0 {
		return 0, e
	}
	if n != 8 {
		return 0, fmt.Errorf("short read of a perf event: %d bytes", n)
	}
	return binary.LittleEndian.Uint64(b[:]), nil
}

// setPeriod changes an event's sample period (PERF_EVENT_IOC_PERIOD); the
// next interval starts when the thread next runs.
func setPeriod(fd int, period uint64) error {
	_, _, e := unix.RawSyscall(unix.SYS_IOCTL, uintptr(fd), unix.PERF_EVENT_IOC_PERIOD, uintptr(unsafe.Pointer(&period)))
	if e != 0 {
		return e
	}
	return nil
}

// openSchedstat opens /proc/PID/task/TID/schedstat, whose first field is the
// thread's CPU time in ns. The kernel brings it up to date only at scheduler
// ticks and switches, so it is the last resort.
func openSchedstat(pid, tid int) (int, error) {
	return unix.Open(fmt.Sprintf("/proc/%d/task/%d/schedstat", pid, tid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
}

func readSchedstat(fd int) (uint64, error) {
	var b [96]byte
	n, err := unix.Pread(fd, b[:], 0)
	if err != nil {
		return 0, err
	}
	var v uint64
	for _, c := range b[:n] {
		if c < '0' || c > '9' {
			break
		}
		v = v*10 + uint64(c-'0')
	}
	return v, nil
}

// statusField reads one field of /proc/TID/status (e.g. "Tgid", "TracerPid").
func statusField(tid int, name string) (string, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", tid))
	if err != nil {
		return "", false
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && k == name {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// catchesSignal reports whether process pid has a handler for sig (its
// bit in /proc/PID/status's SigCgt mask).
func catchesSignal(pid int, sig unix.Signal) bool {
	v, ok := statusField(pid, "SigCgt")
	if !ok {
		return false
	}
	m, err := strconv.ParseUint(v, 16, 64)
	return err == nil && m&(1<<(uint(sig)-1)) != 0
}

func tgidOf(tid int) (int, bool) {
	v, ok := statusField(tid, "Tgid")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	return n, err == nil
}

func tracerOf(tid int) int {
	v, _ := statusField(tid, "TracerPid")
	n, _ := strconv.Atoi(v)
	return n
}

// Sentinel: a child of the tracing thread that does nothing until it is
// killed. wait4 in the tracing thread cannot be interrupted from another
// goroutine (Go installs its signal handlers with SA_RESTART), so another
// goroutine that must wake the tracer (Ctrl-C, the stop channel, the end of
// the duration) kills the sentinel, whose exit ends the wait.

// forkSentinel forks the calling thread (through rawfork.Fork) into a
// process that blocks every signal, asks to be killed with its parent,
// closes its file descriptors and pauses forever.
func forkSentinel() (int, syscall.Errno) {
	parent := os.Getpid()
	return rawfork.Fork(func(*uint64) (int, syscall.Errno) { return sentinel(parent) })
}

// sentinel is forkSentinel's fork; the child runs only raw system calls
// (package rawfork), with every signal blocked from the fork on.
//
//go:nosplit
//go:norace
func sentinel(parent int) (int, syscall.Errno) {
	if pid, e := rawfork.Clone(); pid != 0 || e != 0 {
		return pid, e
	}
	syscall.RawSyscall6(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0, 0, 0, 0)
	rawfork.KeepOnly(-1, -1)
	if ppid, _, _ := syscall.RawSyscall(syscall.SYS_GETPPID, 0, 0, 0); int(ppid) != parent {
		rawfork.Exit(0) // the parent died before PDEATHSIG was set
	}
	for {
		syscall.RawSyscall(syscall.SYS_PAUSE, 0, 0, 0)
	}
}

// kernelSigaction is struct sigaction as rt_sigaction(2) takes it on x86-64.
type kernelSigaction struct {
	Handler  uintptr
	Flags    uint64
	Restorer uintptr
	Mask     uint64
}

const saNoCldStop = 1

// quietStops sets SA_NOCLDSTOP on culprit's SIGCHLD handler, so that the
// tracer is not sent a SIGCHLD (and does not run Go's signal handler) at
// every stop of a tracee; exits still raise SIGCHLD. It returns a function
// that restores the handler as it was.
func quietStops() (restore func()) {
	var old kernelSigaction
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(unix.SIGCHLD), 0, uintptr(unsafe.Pointer(&old)), 8, 0, 0); e != 0 {
		return func() {}
	}
	if old.Flags&saNoCldStop != 0 || old.Handler == 0 || old.Handler == 1 {
		return func() {} // already quiet, SIG_DFL or SIG_IGN: leave it
	}
	nw := old
	nw.Flags |= saNoCldStop
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(unix.SIGCHLD), uintptr(unsafe.Pointer(&nw)), 0, 8, 0, 0); e != 0 {
		return func() {}
	}
	return func() {
		unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(unix.SIGCHLD), uintptr(unsafe.Pointer(&old)), 0, 8, 0, 0)
	}
}
