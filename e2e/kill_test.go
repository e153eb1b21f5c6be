package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/testutil"
)

const rcuKnob = "/sys/kernel/rcu_expedited"

// knobAfter reads rcuKnob once it reads want, or after 200 ms: other
// culprit processes on the machine may set it for a fraction of a
// millisecond.
func knobAfter(want string) string {
	var v string
	for i := 0; i < 40; i++ {
		b, _ := os.ReadFile(rcuKnob)
		if v = strings.TrimSpace(string(b)); v == want {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	return v
}

// threadStates checks that no thread of pid is traced or stopped.
func threadStates(pid int) error {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return err
	}
	for _, e := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, e.Name()))
		if err != nil {
			continue // the thread ended
		}
		for _, line := range strings.Split(string(b), "\n") {
			k, v, _ := strings.Cut(line, ":")
			v = strings.TrimSpace(v)
			switch {
			case k == "TracerPid" && v != "0":
				return fmt.Errorf("thread %s is traced by %s", e.Name(), v)
			case k == "State" && (strings.HasPrefix(v, "t") || strings.HasPrefix(v, "T")):
				return fmt.Errorf("thread %s is stopped (%s)", e.Name(), v)
			}
		}
	}
	return nil
}

// Profiling never harms what it profiles: culprit killed with SIGKILL at a
// random moment of its start or of its run, with either collector,
// launching or attached, leaves the target running, untraced, finishing
// with its own exit code, and rcu_expedited as it was.
func TestSIGKILLLeavesTargetAlone(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "longrun", []string{"longrun.c"}, "-O2", "-g", "-pthread")
	_, err := os.Stat(rcuKnob)
	testutil.Need(t, err == nil, rcuKnob+" is missing")
	// Launched targets outlive culprit: they become the test's children,
	// so that their exit status can be read.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	defer reapOrphans(t, -1)
	const tries = 25 // per collector and mode: 50 kills under ptrace
	const runFor = 0.5
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	dir := t.TempDir()
	for _, coll := range []string{"perf", "ptrace"} {
		for _, mode := range []string{"launch", "attach"} {
			t.Run(coll+"-"+mode, func(t *testing.T) {
				harmed, started := 0, 0
				for try := 0; try < tries; try++ {
					before := knobAfter("0")
					pidFile := filepath.Join(dir, fmt.Sprintf("%s-%s-%d.pid", coll, mode, try))
					code := 10 + try%50
					targetArgs := []string{strconv.FormatFloat(runFor, 'f', -1, 64), strconv.Itoa(code), pidFile}
					args := []string{"record", "--collector", coll, "-o", filepath.Join(dir, "k.rec")}
					if try%2 == 1 {
						args = append(args, "--fast-start")
					}
					var target *exec.Cmd
					if mode == "attach" {
						target = exec.Command(bin, targetArgs...)
						if err := target.Start(); err != nil {
							t.Fatal(err)
						}
						waitFile(t, pidFile)
						args = append(args, "-p", strconv.Itoa(target.Process.Pid), "--duration", "10s")
					} else {
						args = append(append(args, "--", bin), targetArgs...)
					}
					// Half the kills in culprit's start (its first 40 ms),
					// half in the run: a launched command has written its
					// pid, an attached one has had 40 ms to be taken.
					run := try%4 >= 2
					delay := time.Duration(rng.Int64N(int64(40 * time.Millisecond)))
					if run {
						delay = time.Duration(rng.Int64N(int64(300 * time.Millisecond)))
					}
					c := exec.Command(culprit, args...)
					if err := c.Start(); err != nil {
						t.Fatal(err)
					}
					if run && target == nil {
						waitFile(t, pidFile)
					} else if run {
						time.Sleep(40 * time.Millisecond)
					}
					time.Sleep(delay)
					c.Process.Kill()
					c.Wait()

					pid := 0
					if target != nil {
						pid = target.Process.Pid
					} else {
						// Started before culprit died (or released by its
						// death): it writes its pid.
						for i := 0; i < 60 && pid == 0; i++ {
							if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
								pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
							} else {
								time.Sleep(5 * time.Millisecond)
							}
						}
					}
					if pid == 0 {
						// No pid: culprit died before it forked the
						// command, or the command died before its main
						// (as when a SIGTRAP at its exec killed it), or it
						// is late. What culprit left is now the test's.
						n, bad := reapOrphans(t, code)
						started += n
						harmed += len(bad)
						for _, b := range bad {
							t.Errorf("try %d (killed %v into the %s): %s", try, delay, phase(run), b)
						}
						continue
					}
					started++
					if err := threadStates(pid); err != nil {
						t.Errorf("try %d (killed %v into the %s): %v", try, delay, phase(run), err)
					}
					var got int
					if target != nil {
						target.Wait()
						got = exitOf(unix.WaitStatus(target.ProcessState.Sys().(syscall.WaitStatus)))
					} else {
						var ws unix.WaitStatus
						if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil {
							t.Fatalf("try %d: waiting for the command: %v", try, err)
						}
						got = exitOf(ws)
					}
					if got != code {
						harmed++
						t.Errorf("try %d (killed %v into the %s): the target ended with %d, want its own %d", try, delay, phase(run), got, code)
					}
					if after := knobAfter(before); after != before {
						t.Errorf("try %d (killed %v into the %s): %s is %s, was %s", try, delay, phase(run), rcuKnob, after, before)
					}
				}
				t.Logf("%d tries, %d targets started, %d harmed", tries, started, harmed)
				if started < tries/2 {
					t.Errorf("only %d of %d targets started before culprit was killed", started, tries)
				}
			})
		}
	}
}

// reapOrphans waits for the test's children (what culprit left when it
// died, reparented to the test) until none is left, for at most 3 s. It
// returns how many ended with the command's exit code, and describes those
// that ended otherwise: culprit's own helpers exit 0 (the rcu_expedited
// guardian) or die of SIGKILL (the ptrace collector's sentinel, by its
// parent-death signal); anything else is a harmed command.
func reapOrphans(t *testing.T, code int) (int, []string) {
	t.Helper()
	n := 0
	var bad []string
	// A process left running is waited for until it ends: on a loaded
	// machine a 0.5 s command can take many seconds. One that stays
	// stopped or traced across two looks a second apart is harmed at once;
	// one that neither ends nor stops within a minute is stuck.
	deadline := time.Now().Add(time.Minute)
	stopped := map[int]bool{}
	nextLook := time.Now().Add(time.Second)
	for {
		var ws unix.WaitStatus
		// Children in this process group only: what culprit left (it runs
		// in the group), not a helper another test started in a group of
		// its own (testutil's PostgreSQL watcher lives as long as the test
		// binary).
		pid, err := unix.Wait4(0, &ws, unix.WNOHANG|unix.WALL, nil)
		if err != nil {
			return n, bad // ECHILD: nothing left
		}
		if pid == 0 {
			if time.Now().After(deadline) {
				return n, append(bad, "a process culprit left neither ended nor wrote its pid within a minute")
			}
			if time.Now().After(nextLook) {
				nextLook = time.Now().Add(time.Second)
				now := map[int]bool{}
				for _, c := range children() {
					if err := threadStates(c); err != nil {
						if stopped[c] {
							unix.Kill(c, unix.SIGKILL)
							bad = append(bad, fmt.Sprintf("process %d that culprit left: %v", c, err))
							continue
						}
						now[c] = true
					}
				}
				stopped = now
			}
			time.Sleep(5 * time.Millisecond)
			continue
		}
		switch got := exitOf(ws); {
		case got == code:
			n++
		case got == 0 || got == 128+int(unix.SIGKILL):
		default:
			bad = append(bad, fmt.Sprintf("process %d that culprit left ended with %d (the command's own code is %d)", pid, got, code))
		}
	}
}

// children lists the processes in the test's process group whose parent
// is the test (see reapOrphans).
func children() []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	self, group := os.Getpid(), unix.Getpgrp()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The fields after the command's name, which ends at the last ')'.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		// state ppid pgrp ...
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 2 {
			ppid, _ := strconv.Atoi(f[1])
			pgrp, _ := strconv.Atoi(f[2])
			if ppid == self && pgrp == group {
				out = append(out, pid)
			}
		}
	}
	return out
}

func phase(run bool) string {
	if run {
		return "run"
	}
	return "start"
}

func exitOf(ws unix.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	for i := 0; i < 2000; i++ {
		if b, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(b), "\n") {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s was not written", path)
}
