package perf

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/rawfork"
)

// OpenTask is perf_event_open; events bound to a task (pid or tid not -1)
// are what every collector opens on its target. With FastStart, the first
// one a process opens asks the kernel for an expedited RCU grace period.
//
// Why: when no task-bound perf event has existed on the machine for about a
// second, the kernel has switched its scheduler perf hooks off, and the first
// task-bound event to be opened switches them on and then waits in
// synchronize_rcu() for every CPU to notice (kernel/events/core.c,
// account_event). On a 2-vCPU VM with HZ=250 that wait is 8 ms idle and
// 12–30 ms busy, and a launched command waits for it before running its
// first instruction. An expedited grace period takes 0.15–0.25 ms. Linux has
// no per-call way to ask for one; /sys/kernel/rcu_expedited (root only)
// makes every synchronize_rcu() expedited while it is 1, at the price of an
// interrupt on every CPU, which machines that isolate CPUs (nohz_full,
// isolcpus) are set up to avoid. So it is opt-in (culprit record
// --fast-start), refused on such machines, and the knob is 1 around that
// first open only: it is put back after the call, and by a guardian process
// if culprit dies inside the window.
func OpenTask(a *unix.PerfEventAttr, pid, cpu, group, flags int) (int, error) {
	if pid == -1 || !fastStart.Load() {
		return unix.PerfEventOpen(a, pid, cpu, group, flags)
	}
	first := false
	var fd int
	var err error
	expediteOnce.Do(func() {
		first = true
		expedite := expediteRCU
		if expediteHook != nil {
			expedite = expediteHook
		}
		restore := expedite(rcuExpedited)
		fd, err = unix.PerfEventOpen(a, pid, cpu, group, flags)
		restore()
	})
	if first {
		return fd, err
	}
	return unix.PerfEventOpen(a, pid, cpu, group, flags)
}

var (
	expediteOnce sync.Once
	fastStart    atomic.Bool
	restoreErr   atomic.Value // error: the knob could not be put back

	expediteHook func(knob string) (restore func()) // tests: stands in for expediteRCU
)

// FastStartError reports a failure to put the knob back after the
// expedited open (a guardian process tries again when culprit exits).
func FastStartError() error {
	err, _ := restoreErr.Load().(error)
	return err
}

// rcuExpedited is the kernel's switch for expedited grace periods.
const rcuExpedited = "/sys/kernel/rcu_expedited"

// cpuDir holds the kernel's lists of isolated and nohz_full CPUs.
const cpuDir = "/sys/devices/system/cpu"

// FastStart makes the first task-bound OpenTask of the process ask for an
// expedited RCU grace period. It refuses, and says why, on a machine with
// nohz_full or isolated CPUs, and when the knob is not writable.
func FastStart() error {
	if why := isolatedCPUs(cpuDir); why != "" {
		return fmt.Errorf("--fast-start is refused on this machine: it has %s, and an expedited grace period interrupts every CPU", why)
	}
	if err := unix.Access(rcuExpedited, unix.W_OK); err != nil {
		return fmt.Errorf("--fast-start needs root (to write %s): %w", rcuExpedited, err)
	}
	fastStart.Store(true)
	return nil
}

// isolatedCPUs names the CPUs the kernel keeps free of interrupts (the
// nohz_full and isolated lists under dir), "" when there are none.
func isolatedCPUs(dir string) string {
	var out []string
	for _, f := range []string{"nohz_full", "isolated"} {
		b, err := os.ReadFile(dir + "/" + f)
		if err != nil {
			continue
		}
		if v := strings.TrimSpace(string(b)); v != "" && v != "(null)" {
			out = append(out, f+" CPUs "+v)
		}
	}
	return strings.Join(out, " and ")
}

// expediteRCU sets the knob to 1 if it is 0 and returns what puts it back.
// A guardian process, forked first, puts it back if culprit dies before
// (killed with SIGKILL inside the window): it waits on a pipe whose only
// writer is culprit; a byte means culprit put the knob back itself,
// end-of-file that culprit is gone.
func expediteRCU(knob string) (restore func()) {
	none := func() {}
	fd, err := unix.Open(knob, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return none
	}
	var b [8]byte
	if n, err := unix.Pread(fd, b[:], 0); err != nil || n < 1 || b[0] != '0' {
		unix.Close(fd)
		return none
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		unix.Close(fd)
		return none
	}
	pid, errno := rawfork.Fork(func(*uint64) (int, syscall.Errno) { return forkGuardian(fd, p[0], p[1]) })
	unix.Close(p[0])
	if errno != 0 {
		unix.Close(p[1])
		unix.Close(fd)
		return none
	}
	go func() {
		defer func() { recover() }() // a collector goroutine never ends culprit
		var ws unix.WaitStatus
		for {
			if _, err := unix.Wait4(pid, &ws, 0, nil); err != unix.EINTR {
				return
			}
		}
	}()
	if _, err := unix.Pwrite(fd, []byte("1"), 0); err != nil {
		unix.Close(p[1])
		unix.Close(fd)
		return none
	}
	return func() {
		if _, err := unix.Pwrite(fd, []byte("0"), 0); err != nil {
			// Left to the guardian, which tries again at end-of-file.
			restoreErr.Store(fmt.Errorf("putting %s back to 0: %w", knob, err))
		} else {
			unix.Write(p[1], []byte{1})
		}
		unix.Close(p[1])
		unix.Close(fd)
	}
}

// forkGuardian forks the calling thread into the knob's guardian: it keeps
// only the knob's descriptor and the pipe's read end, with every signal
// blocked, waits for a byte or end-of-file, and at end-of-file writes "0"
// to the knob (as after a read that failed: the knob is not left at 1). It is called through rawfork.Fork and the child runs only
// raw system calls (package rawfork).
//
//go:nosplit
//go:norace
func forkGuardian(knob, r, w int) (int, syscall.Errno) {
	if pid, e := rawfork.Clone(); pid != 0 || e != 0 {
		return pid, e
	}
	rawfork.KeepOnly(knob, r) // w too
	// End-of-file (or a failed read): culprit is gone.
	if !rawfork.Await(r) {
		zero := [1]byte{'0'}
		syscall.RawSyscall6(syscall.SYS_PWRITE64, uintptr(knob), uintptr(unsafe.Pointer(&zero[0])), 1, 0, 0, 0)
	}
	rawfork.Exit(0)
	return 0, 0
}
