package collector

import (
	"fmt"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// loopNice is the nice value of a collector's loop thread while it runs.
// The kernel writes into fixed-size rings (and a traced thread waits in a
// stop) whatever the machine's load; the loop that empties them competes
// for a CPU with every runnable thread, and at nice 0 on a loaded machine
// (load 15 on 2 CPUs) it waited long enough for a ring of half a second to
// overflow. At -10 it is scheduled first when it wakes; it still sleeps in
// poll between rounds, so it takes no more CPU than before, only sooner.
const loopNice = -10

// prioritize pins the calling goroutine to its thread and raises that
// thread's scheduling priority to loopNice, when culprit may (root or
// CAP_SYS_NICE; otherwise nothing changes). It returns what puts the
// thread back as it was. Only this thread changes: threads the runtime
// creates later and the target (already started) keep their priority.
func prioritize() (restore func()) {
	runtime.LockOSThread()
	tid := unix.Gettid()
	// getpriority(2) returns 20 - nice.
	old, err := unix.Getpriority(unix.PRIO_PROCESS, tid)
	if err != nil || 20-old <= loopNice || unix.Setpriority(unix.PRIO_PROCESS, tid, loopNice) != nil {
		return runtime.UnlockOSThread
	}
	return func() {
		unix.Setpriority(unix.PRIO_PROCESS, tid, 20-old)
		runtime.UnlockOSThread()
	}
}

// Run waits for the released command to exit while a collector works, and
// returns its exit code (as Wait does). It is the loop of every collector
// that launched its target.
//
// step does one round of the collector's work: it waits up to its poll
// interval for data (and, given a pidfd of the command, for the pidfd to
// become readable), handles what came, and reports whether the command has
// exited. Without a pidfd (pidfd < 0; a kernel without pidfd_open) a
// goroutine waits for the command instead, and Run ends when it has reaped
// it, whatever step reports. With duration > 0, timeUp is called once when
// it has passed: the collector stops collecting, the command runs on, and
// Run still returns its exit code.
func (c *Child) Run(pidfd int, duration time.Duration, step func() (exited bool), timeUp func()) (int, error) {
	type exit struct {
		code int
		err  error
	}
	var exited chan exit
	if pidfd < 0 {
		exited = make(chan exit, 1)
		go func() {
			defer func() {
				if r := recover(); r != nil {
					exited <- exit{-1, fmt.Errorf("waiting for the command: %v", r)}
				}
			}()
			code, err := c.Wait()
			exited <- exit{code, err}
		}()
	}
	defer prioritize()()
	deadline, stopTimer := after(duration)
	defer stopTimer()
	for {
		select {
		case ex := <-exited:
			return ex.code, ex.err
		case <-deadline:
			deadline = nil
			timeUp()
		default:
		}
		if step() {
			if exited != nil {
				// The goroutine reaps it: its status is there, not here.
				ex := <-exited
				return ex.code, ex.err
			}
			// The pidfd is readable: the status is there to take (polling
			// on would find every fd ready and spin).
			return c.Wait()
		}
	}
}

// Follow is the loop of a collector attached to a running process: it
// calls step (as Run does) until step reports that the process has exited,
// stop is closed, or duration (when > 0) has passed. The process is not
// culprit's child: its exit status is not culprit's to take.
func Follow(stop <-chan struct{}, duration time.Duration, step func() (exited bool)) {
	defer prioritize()()
	deadline, stopTimer := after(duration)
	defer stopTimer()
	for {
		select {
		case <-stop:
			return
		case <-deadline:
			return
		default:
		}
		if step() {
			return
		}
	}
}

// after is a channel that receives once d has passed (nil, never, when d
// is not positive) and what stops its timer.
func after(d time.Duration) (<-chan time.Time, func() bool) {
	if d <= 0 {
		return nil, func() bool { return false }
	}
	t := time.NewTimer(d)
	return t.C, t.Stop
}
