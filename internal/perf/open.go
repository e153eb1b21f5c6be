package perf

import (
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// OpenTask is perf_event_open; events bound to a task (pid or tid not -1)
// are what every collector opens on its target. The first one a process
// opens asks the kernel for an expedited RCU grace period.
//
// Why: when no task-bound perf event has existed on the machine for about a
// second, the kernel has switched its scheduler perf hooks off, and the first
// task-bound event to be opened switches them on and then waits in
// synchronize_rcu() for every CPU to notice (kernel/events/core.c,
// account_event). On a 2-vCPU VM with HZ=250 that wait is 8 ms idle and
// 12–30 ms busy, and the command to profile waits for it before running its
// first instruction. An expedited grace period takes 0.15–0.25 ms. Linux has
// no per-call way to ask for one; /sys/kernel/rcu_expedited (root only)
// makes every synchronize_rcu() expedited while it is 1. OpenTask sets it to
// 1 around that first open only, and puts back the value it found, so the
// window is the open's own duration; it changes nothing when the file is not
// writable, already 1, or CULPRIT_RCU_NORMAL=1 is set in the environment.
// A recorder killed inside that window (a fraction of a millisecond) would
// leave the knob at 1, which makes grace periods faster at the price of an
// IPI to each CPU; docs/performance.md says so.
func OpenTask(a *unix.PerfEventAttr, pid, cpu, group, flags int) (int, error) {
	if pid == -1 {
		return unix.PerfEventOpen(a, pid, cpu, group, flags)
	}
	first := false
	var fd int
	var err error
	expediteOnce.Do(func() {
		first = true
		restore := expediteRCU()
		fd, err = unix.PerfEventOpen(a, pid, cpu, group, flags)
		restore()
	})
	if first {
		return fd, err
	}
	return unix.PerfEventOpen(a, pid, cpu, group, flags)
}

var expediteOnce sync.Once

// rcuExpedited is the kernel's switch for expedited grace periods.
const rcuExpedited = "/sys/kernel/rcu_expedited"

// expediteRCU sets rcuExpedited to 1 if it is 0 and returns what puts it back.
func expediteRCU() (restore func()) {
	none := func() {}
	if os.Getenv("CULPRIT_RCU_NORMAL") == "1" {
		return none
	}
	fd, err := unix.Open(rcuExpedited, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return none
	}
	var b [8]byte
	if n, err := unix.Pread(fd, b[:], 0); err != nil || n < 1 || b[0] != '0' {
		unix.Close(fd)
		return none
	}
	if _, err := unix.Pwrite(fd, []byte("1"), 0); err != nil {
		unix.Close(fd)
		return none
	}
	return func() {
		unix.Pwrite(fd, []byte("0"), 0)
		unix.Close(fd)
	}
}
