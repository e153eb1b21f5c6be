package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// TestCheckHookRuns installs culprit check's post-commit hook in a new
// repository with a build and a culprit run as its workload, then commits
// twice: each commit's hook stores a run of that commit, and the second
// commit's hook reports the function that turned quadratic.
func TestCheckHookRuns(t *testing.T) {
	testutil.NeedRoot(t)
	repo := t.TempDir()
	gitIn(t, repo, "init", "-q")
	gitIn(t, repo, "commit", "-q", "--allow-empty", "-m", "empty")
	build := "gcc -O1 -g -fno-omit-frame-pointer -o prog prog.c"
	work := culprit + " run -F 1999 --param n=3000 -- ./prog 3000"
	if out, stderr, code := inDir(t, repo, "check", "--install-hook", "--hook-run", build, "--hook-run", work); code != 0 || !strings.Contains(out, "installed") {
		t.Fatalf("check --install-hook: exit %d\n%s%s", code, out, stderr)
	}
	commit := func(scan, msg string) string {
		t.Helper()
		src := strings.NewReplacer("SCAN", scan, "CHECKSUM", "12000", "COMMENT", "").Replace(histProg)
		if err := os.WriteFile(filepath.Join(repo, "prog.c"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		gitIn(t, repo, "add", "prog.c")
		// git runs the hook; its output is the commit's.
		cmd := exec.Command("git", "commit", "-q", "-m", msg)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git commit: %v\n%s", err, out)
		}
		return string(out)
	}
	first := commit(scanLinear, "linear scan")
	if !strings.Contains(first, "no ancestor of HEAD has stored runs") {
		t.Errorf("first commit's hook: want check to say there is nothing to compare with\n%s", first)
	}
	// scan turns quadratic: at n = 3000, 13 times its linear work. The
	// hook runs each commit once, a minute apart, and a busy machine has
	// run the same code at a third of its speed for that long (setup,
	// unchanged, took 73 ms on the CPU in one run and 21 in the next), so
	// the change is far larger than that, and the test asks that it come
	// first, not that the unchanged functions keep their time.
	second := commit(scanSteep, "quadratic scan")
	if first := firstChange(second); first != "Degradation scan (prog)" {
		t.Errorf("second commit's hook: want scan's degradation first, got %q\n%s", first, second)
	}
	list, _, _ := inDir(t, repo, "history", "list")
	for _, rev := range []string{"HEAD", "HEAD~1"} {
		if h := gitIn(t, repo, "rev-parse", "--short=12", rev); !strings.Contains(list, h) {
			t.Errorf("no run stored for %s (%s):\n%s", rev, h, list)
		}
	}
}

// scanSteep is scanQuadratic with a steeper inner loop: 13 times
// scanLinear's work at n = 3000.
const scanSteep = scanLinear + "\n\tfor (long i = 0; i < n; i++)\n\t\tfor (long j = 0; j < n * 24; j++) h = h * 2862933555777941757UL + (unsigned long)j;"

// firstChange is the first change check's text report lists ("Degradation
// scan (prog)"), "" if none: check lists the largest change first.
func firstChange(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "Degradation ") || strings.HasPrefix(l, "Optimization ") {
			if i := strings.Index(l, ")"); i > 0 {
				return l[:i+1]
			}
		}
	}
	return ""
}
