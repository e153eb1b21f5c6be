package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The tests run on shared machines, where a wall-clock window holds any
// amount of a target's CPU time. So they wait for conditions (a process
// using so much CPU time, a recording holding so many samples) instead of
// sleeping fixed times, and size their checks in CPU time, which sampling
// at a CPU-clock frequency turns into samples whatever the load.

// waitTimeout bounds every wait: long enough for a machine many times
// overloaded, short of the test binary's timeout.
const waitTimeout = 2 * time.Minute

// waitFor polls cond every 10 ms until it holds; the test fails, saying
// what it waited for, if it does not within waitTimeout.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", waitTimeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// interrupt sends what, the command cmd runs, SIGINT (Ctrl-C) and waits
// for it to exit: the test fails, with stderr, if it does not within
// waitTimeout (it is killed then). It returns what cmd.Wait returned.
func interrupt(t *testing.T, what string, cmd *exec.Cmd, stderr func() string) error {
	t.Helper()
	cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(waitTimeout):
		cmd.Process.Kill()
		t.Fatalf("%s did not stop within %v of SIGINT\n%s", what, waitTimeout, stderr())
		return nil
	}
}

// cpuTime is the CPU time (user and system) that the process or thread
// whose /proc directory is dir has used, from its stat file (10 ms
// resolution); ok is false once it is gone.
func cpuTime(dir string) (d time.Duration, ok bool) {
	b, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return 0, false
	}
	f := strings.Fields(s[i+2:])
	if len(f) < 13 || f[0] == "Z" || f[0] == "X" {
		return 0, false
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+k) * 10 * time.Millisecond, true // USER_HZ is 100
}

// waitCPU waits until process pid has used d more CPU time than it had
// when called.
func waitCPU(t *testing.T, pid int, d time.Duration) {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d", pid)
	c0, ok := cpuTime(dir)
	if !ok {
		t.Fatalf("process %d is gone", pid)
	}
	waitFor(t, fmt.Sprintf("process %d to use %v of CPU time", pid, d), func() bool {
		c, ok := cpuTime(dir)
		if !ok {
			t.Fatalf("process %d ended before using %v of CPU time", pid, d)
		}
		return c-c0 >= d
	})
}

// waitThreadsCPU waits until each of the n threads of process pid has
// used d more CPU time than it had when called.
func waitThreadsCPU(t *testing.T, pid, n int, d time.Duration) {
	t.Helper()
	base := fmt.Sprintf("/proc/%d/task/", pid)
	var tids []string
	waitFor(t, fmt.Sprintf("process %d to have %d threads", pid, n), func() bool {
		es, err := os.ReadDir(base)
		if err != nil {
			t.Fatalf("process %d is gone", pid)
		}
		tids = tids[:0]
		for _, e := range es {
			tids = append(tids, e.Name())
		}
		return len(tids) >= n
	})
	c0 := map[string]time.Duration{}
	for _, tid := range tids {
		c0[tid], _ = cpuTime(base + tid)
	}
	waitFor(t, fmt.Sprintf("each thread of process %d to use %v of CPU time", pid, d), func() bool {
		for _, tid := range tids {
			c, ok := cpuTime(base + tid)
			if !ok {
				t.Fatalf("thread %s of process %d ended", tid, pid)
			}
			if c-c0[tid] < d {
				return false
			}
		}
		return true
	})
}

// waitSampling waits until the culprit process pid has opened n perf
// events, as both collectors do on the target's threads to sample them
// (the ptrace collector one per thread, after seizing it: the first one
// open says nothing of the other threads).
func waitSampling(t *testing.T, pid, n int) {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fd/", pid)
	waitFor(t, fmt.Sprintf("culprit (%d) to open %d perf events", pid, n), func() bool {
		es, err := os.ReadDir(dir)
		if err != nil {
			t.Fatalf("culprit (%d) is gone", pid)
		}
		open := 0
		for _, e := range es {
			if l, _ := os.Readlink(dir + e.Name()); l == "anon_inode:[perf_event]" {
				open++
			}
		}
		return open >= n
	})
}

// alive reports whether process pid exists and is neither a zombie nor
// dead (its parent has not reaped it yet, or it is not our child).
func alive(pid int) bool {
	_, ok := cpuTime(fmt.Sprintf("/proc/%d", pid))
	return ok
}

// attachFor runs culprit record -p pid -o out with args until the recording,
// still being written, holds n samples, then stops culprit as Ctrl-C would;
// the test fails if culprit does not end cleanly. Counted in samples, not in
// the CPU time /proc gives the process: that counts all of its time on a
// CPU, the kernel's included, where a collector may sample user time only
// (the ptrace collector's stops make much of it on a busy machine).
func attachFor(t *testing.T, pid int, out string, n int, args ...string) {
	t.Helper()
	cmd := exec.Command(culprit, append([]string{"record", "-p", strconv.Itoa(pid), "-o", out}, args...)...)
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitFor(t, fmt.Sprintf("the recording to hold %d samples", n), func() bool {
		_, got := samplesSoFar(t, out)
		return got >= n
	})
	if err := interrupt(t, "culprit", cmd, errb.String); err != nil {
		t.Fatalf("culprit after SIGINT: %v\n%s", err, errb.String())
	}
	noLoss(t, "", cmd.Args[1:])
}

// maxSamples is the most samples at 999 Hz of CPU time that d of CPU time
// can give: one per period, and a few for the timer ticks that land late.
func maxSamples(d time.Duration) int { return int(1.1*999*d.Seconds()) + 10 }

// samplesSoFar is the number of samples that culprit report reads from a
// recording in progress; 0 while report cannot read it yet (the recorder
// has not created it or written its header).
func samplesSoFar(t *testing.T, path string) (flatJSON, int) {
	t.Helper()
	out, _, code := run(t, "report", "--format", "json", path)
	var f flatJSON
	if code != 0 || json.Unmarshal([]byte(out), &f) != nil {
		return flatJSON{}, 0
	}
	return f, f.Samples
}
