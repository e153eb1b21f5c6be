package collector

import (
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// start starts argv and releases it, as a collector does before Run.
func start(t *testing.T, argv ...string) *Child {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c, err := Start(argv, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Release(); err != nil {
		c.Kill()
		t.Fatal(err)
	}
	return c
}

// pollStep is a collector's round with nothing to collect: it waits on the
// pidfd (or sleeps, without one) and reports its readiness.
func pollStep(pidfd int, rounds *int) func() bool {
	return func() bool {
		*rounds++
		if pidfd < 0 {
			time.Sleep(5 * time.Millisecond)
			return false
		}
		fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
		unix.Poll(fds, 5)
		return fds[0].Revents&(unix.POLLIN|unix.POLLHUP) != 0
	}
}

// Run returns the command's own exit code, with a pidfd and without one,
// and 128+signal for a command a signal ended.
func TestRunExitCode(t *testing.T) {
	for _, tc := range []struct {
		name  string
		argv  []string
		code  int
		pidfd bool
	}{
		{"pidfd", []string{"sh", "-c", "exit 7"}, 7, true},
		{"no pidfd", []string{"sh", "-c", "exit 7"}, 7, false},
		{"signal", []string{"sh", "-c", "kill -TERM $$"}, 128 + int(unix.SIGTERM), true},
		{"signal, no pidfd", []string{"sh", "-c", "kill -TERM $$"}, 128 + int(unix.SIGTERM), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := start(t, tc.argv...)
			fd := -1
			if tc.pidfd {
				var err error
				if fd, err = unix.PidfdOpen(c.Pid, 0); err != nil {
					t.Fatalf("pidfd_open: %v", err)
				}
				defer unix.Close(fd)
			}
			rounds := 0
			code, err := c.Run(fd, 0, pollStep(fd, &rounds), func() { t.Error("timeUp called without a duration") })
			if err != nil || code != tc.code {
				t.Errorf("exit code %d (%v), want %d", code, err, tc.code)
			}
			// With a pidfd, only step can see the exit. Without one, a
			// command that exits before the loop's first round is
			// reaped without any: the goroutine's status comes first.
			if tc.pidfd && rounds == 0 {
				t.Error("step was never called")
			}
			if !c.reaped {
				t.Error("the command was not reaped")
			}
		})
	}
}

// With a duration, timeUp is called exactly once, after the duration, and
// Run goes on until the command exits, returning its exit code.
func TestRunDuration(t *testing.T) {
	for _, pidfd := range []bool{true, false} {
		c := start(t, "sh", "-c", "sleep 0.5; exit 3")
		fd := -1
		if pidfd {
			var err error
			if fd, err = unix.PidfdOpen(c.Pid, 0); err != nil {
				t.Fatalf("pidfd_open: %v", err)
			}
		}
		began := time.Now()
		var upAt []time.Duration
		rounds := 0
		code, err := c.Run(fd, 50*time.Millisecond, pollStep(fd, &rounds), func() {
			upAt = append(upAt, time.Since(began))
		})
		ended := time.Since(began)
		if fd >= 0 {
			unix.Close(fd)
		}
		if err != nil || code != 3 {
			t.Errorf("pidfd %v: exit code %d (%v), want 3", pidfd, code, err)
		}
		if len(upAt) != 1 {
			t.Fatalf("pidfd %v: timeUp called %d times, want once", pidfd, len(upAt))
		}
		if upAt[0] < 50*time.Millisecond {
			t.Errorf("pidfd %v: timeUp after %v, before the 50ms duration", pidfd, upAt[0])
		}
		// The command sleeps 0.5 s: Run cannot have returned before that.
		if ended < 500*time.Millisecond {
			t.Errorf("pidfd %v: Run returned after %v, before the command's 0.5s", pidfd, ended)
		}
	}
}

// Follow ends when step reports an exit, when stop is closed, or when the
// duration has passed, whichever comes first, and not before.
func TestFollow(t *testing.T) {
	idle := func(rounds *int) func() bool {
		return func() bool {
			*rounds++
			time.Sleep(time.Millisecond)
			return false
		}
	}
	// step reports the exit on its third round.
	rounds := 0
	Follow(nil, 0, func() bool { rounds++; return rounds == 3 })
	if rounds != 3 {
		t.Errorf("exit at round 3: Follow made %d rounds", rounds)
	}
	// stop closed after some rounds.
	stop := make(chan struct{})
	rounds = 0
	Follow(stop, 0, func() bool {
		if rounds++; rounds == 5 {
			close(stop)
		}
		return false
	})
	if rounds != 5 {
		t.Errorf("stop closed at round 5: Follow made %d rounds", rounds)
	}
	// The duration.
	rounds = 0
	began := time.Now()
	Follow(make(chan struct{}), 50*time.Millisecond, idle(&rounds))
	if d := time.Since(began); d < 50*time.Millisecond || rounds == 0 {
		t.Errorf("a 50ms duration: Follow returned after %v and %d rounds", d, rounds)
	}
}

// TestLoopPriority: the loop's thread runs at loopNice while it collects
// (when culprit may raise it) and is put back afterwards; the target keeps
// the priority it was started with.
func TestLoopPriority(t *testing.T) {
	testutil.NeedRoot(t)
	nice := func(who int) int {
		p, err := unix.Getpriority(unix.PRIO_PROCESS, who)
		if err != nil {
			t.Fatal(err)
		}
		return 20 - p
	}
	c := start(t, "sleep", "0.3")
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := nice(unix.Gettid())
	var inLoop, target int
	pidfd, _ := unix.PidfdOpen(c.Pid, 0)
	rounds := 0
	poll := pollStep(pidfd, &rounds)
	if _, err := c.Run(pidfd, 0, func() bool {
		if rounds == 0 {
			inLoop, target = nice(unix.Gettid()), nice(c.Pid)
		}
		return poll()
	}, func() {}); err != nil {
		t.Fatal(err)
	}
	if inLoop != loopNice || target != before {
		t.Errorf("nice in the loop %d (want %d), target's %d (want %d)", inLoop, loopNice, target, before)
	}
	if after := nice(unix.Gettid()); after != before {
		t.Errorf("nice after the loop %d, want %d as before", after, before)
	}
}
