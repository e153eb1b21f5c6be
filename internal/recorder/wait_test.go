package recorder

import (
	"os/exec"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The loop's wait, parked in the runtime's poller, ends when the target
// exits (its pidfd becomes readable), whether it exits while the loop
// waits or before the wait begins, and otherwise returns about once a
// poll interval: it neither misses the exit nor spins.
func TestWaitEndsAtTheExit(t *testing.T) {
	for _, exitFirst := range []bool{false, true} {
		cmd := exec.Command("sleep", "0.3")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		fd, err := unix.PidfdOpen(cmd.Process.Pid, 0)
		if err != nil {
			t.Fatalf("pidfd_open: %v", err)
		}
		if exitFirst {
			// Exited (not reaped) before the first wait.
			var si unix.Siginfo
			if err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &si, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
				t.Fatal(err)
			}
		}
		s := &session{pidfd: fd}
		start := time.Now()
		rounds := 0
		for !s.wait() {
			rounds++
			if time.Since(start) > 30*time.Second {
				t.Fatalf("exitFirst %v: the wait did not see the exit in 30 s (%d rounds)", exitFirst, rounds)
			}
		}
		took := time.Since(start)
		if s.waiter.failed || s.waiter.file == nil {
			t.Errorf("exitFirst %v: the wait fell back to poll(2)", exitFirst)
		}
		// Rounds end at the deadline, never sooner without an event: a
		// machine too busy to run the loop makes fewer, a spinning wait
		// thousands.
		if most := int(took/pollInterval) + 2; rounds > most {
			t.Errorf("exitFirst %v: %d rounds in %v, want at most %d (one a poll interval)", exitFirst, rounds, took, most)
		}
		if exitFirst && rounds != 0 {
			t.Errorf("the target had exited before the wait: %d rounds before it said so, want 0", rounds)
		}
		s.waiter.close()
		unix.Close(fd)
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
	}
}
