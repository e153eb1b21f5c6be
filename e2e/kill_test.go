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
					// Half the kills in the start (the first 40 ms), half
					// in the run.
					delay := time.Duration(rng.Int64N(int64(40 * time.Millisecond)))
					if try%4 >= 2 {
						delay = 40*time.Millisecond + time.Duration(rng.Int64N(int64(300*time.Millisecond)))
					}
					c := exec.Command(culprit, args...)
					if err := c.Start(); err != nil {
						t.Fatal(err)
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
						for i := 0; i < 100 && pid == 0; i++ {
							if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
								pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
							} else {
								time.Sleep(5 * time.Millisecond)
							}
						}
					}
					if pid == 0 {
						continue // culprit died before it started the command
					}
					started++
					if err := threadStates(pid); err != nil {
						t.Errorf("try %d (killed after %v): %v", try, delay, err)
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
						t.Errorf("try %d (killed after %v): the target ended with %d, want its own %d", try, delay, got, code)
					}
					if after := knobAfter(before); after != before {
						t.Errorf("try %d (killed after %v): %s is %s, was %s", try, delay, rcuKnob, after, before)
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

func exitOf(ws unix.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	for i := 0; i < 400; i++ {
		if b, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(b), "\n") {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s was not written", path)
}
