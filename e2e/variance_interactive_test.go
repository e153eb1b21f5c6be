package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// --interactive asks on the terminal before each breakdown, as VProfiler
// does: on a pseudo-terminal of its own, culprit asks whether to break
// process down (varpool dominant's first factor), and the answer decides
// whether its callees are probed in a second round. Without a terminal
// it refuses at once, rather than answering no to every question unasked.
func TestVarianceInteractive(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "varpool", []string{"varpool.c"}, "-O2", "-g", "-pthread")
	args := func(out string) []string {
		return []string{"variance", "--start", "handle", "--interactive", "--round-intervals", "500", "-o", out, "--", bin, "dominant", "4000", "4"}
	}
	for _, c := range []struct {
		answer string
		rounds int
	}{{"y", 2}, {"n", 1}} {
		t.Run("answer "+c.answer, func(t *testing.T) {
			out := rec(t)
			said, rest, code := onTerminal(t, args(out), "break process", c.answer)
			if code != 0 {
				t.Fatalf("culprit %v: exit %d\n%s%s", args(out), code, said, rest)
			}
			if !strings.Contains(said, "break process") || !strings.Contains(said, "[Y/n]") {
				t.Fatalf("culprit asked nothing about process on its terminal:\n%s\nits output:\n%s", said, rest)
			}
			var r varianceJSON
			if err := json.Unmarshal([]byte(mustRun(t, "variance", "-i", out, "--format", "json")), &r); err != nil {
				t.Fatal(err)
			}
			first := ""
			if len(r.Factors) > 0 {
				first = r.Factors[0].Names[0]
			}
			t.Logf("answered %s: %d rounds, first factor %s", c.answer, r.Rounds, first)
			if r.Rounds != c.rounds {
				t.Errorf("answered %s to breaking process down: %d rounds, want %d\n%s%s", c.answer, r.Rounds, c.rounds, said, rest)
			}
			if c.answer == "y" && first != "compute" {
				t.Errorf("process broken down: first factor %s, want compute (its callee)", first)
			}
		})
	}
	t.Run("no terminal", func(t *testing.T) {
		cmd := exec.Command(culprit, args(rec(t))...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // no controlling terminal
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() == 0 || !strings.Contains(stderr.String(), "--interactive") || !strings.Contains(stderr.String(), "terminal") ||
			strings.Contains(stderr.String(), "goroutine") {
			t.Errorf("--interactive without a terminal: %v, stderr %q; want an error saying it needs one", err, stderr.String())
		}
	})
}

// onTerminal runs culprit with args on a new pseudo-terminal as its
// controlling terminal (standard input, output and error elsewhere),
// answers answer to each question once the terminal shows prompt and "no"
// to any other, and returns what the terminal showed, culprit's standard
// output and error, and its exit code.
func onTerminal(t *testing.T, args []string, prompt, answer string) (string, string, int) {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer ptm.Close()
	if err := unix.IoctlSetPointerInt(int(ptm.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptm.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(culprit, args...)
	var out bytes.Buffer
	cmd.Stdout = &out
	// A question asked on standard error rather than on the terminal
	// is answered no there, so that the test fails rather than waits.
	errs, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.ExtraFiles = []*os.File{pts} // fd 3 in the child
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 3}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pts.Close()
	var mu sync.Mutex
	errDone := make(chan struct{})
	var stderr bytes.Buffer
	go func() {
		defer close(errDone)
		buf := make([]byte, 4096)
		answered := 0
		for {
			k, err := errs.Read(buf)
			stderr.Write(buf[:k])
			for q := strings.Count(stderr.String(), "[Y/n] "); answered < q; answered++ {
				ptm.Write([]byte("n\n"))
			}
			if err != nil {
				return
			}
		}
	}()
	var shown bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		answered := 0
		for {
			k, err := ptm.Read(buf)
			if k > 0 {
				mu.Lock()
				shown.Write(buf[:k])
				s := shown.String()
				mu.Unlock()
				// Each question ends with "[Y/n] ": answer the new ones.
				for q := strings.Count(s, "[Y/n] "); answered < q; answered++ {
					a := "n"
					if i := nthIndex(s, "[Y/n] ", answered); strings.Contains(s[strings.LastIndex(s[:i], "culprit:")+1:i], prompt) {
						a = answer
					}
					ptm.Write([]byte(a + "\n"))
				}
			}
			if err != nil {
				return // EIO once the last holder of the terminal is gone
			}
		}
	}()
	<-errDone // before Wait, which closes the pipe
	err = cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	ptm.Close()
	<-done
	mu.Lock()
	defer mu.Unlock()
	return shown.String(), out.String() + stderr.String(), code
}

// nthIndex is the index of the n-th (from 0) occurrence of sub in s.
func nthIndex(s, sub string, n int) int {
	at := 0
	for ; n >= 0; n-- {
		i := strings.Index(s[at:], sub)
		if i < 0 {
			return -1
		}
		at += i + len(sub)
	}
	return at - len(sub)
}
