package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// --diff-base @REV takes the older build from the store: a run of the
// older commit was stored, the program was then rebuilt at the same path
// from a source whose only change is a constant in tweak. Soft comparison
// does not see a changed constant; the git diff from that commit (taken by
// default with @REV) does.
func TestTraceDiffBaseStored(t *testing.T) {
	testutil.NeedRoot(t)
	t.Setenv("CULPRIT_ARCHIVE", t.TempDir())
	src, err := os.ReadFile(filepath.Join(testutil.Targets(), "difftrace.c"))
	if err != nil {
		t.Fatal(err)
	}
	repo := t.TempDir()
	gitIn(t, repo, "init", "-q")
	if err := os.WriteFile(filepath.Join(repo, "p.c"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, repo, "add", "p.c")
	gitIn(t, repo, "commit", "-q", "-m", "older")
	build := func() {
		t.Helper()
		if out, err := exec.Command("gcc", "-O2", "-g", "-o", filepath.Join(repo, "prog"), filepath.Join(repo, "p.c")).CombinedOutput(); err != nil {
			t.Fatalf("gcc: %v\n%s", err, out)
		}
	}
	build()
	older := filepath.Join(t.TempDir(), "older.rec")
	if _, stderr, code := inDir(t, repo, "trace", "-f", "main", "-o", older, "--", "./prog", "3"); code != 0 {
		t.Fatalf("trace of the older build: exit %d\n%s", code, stderr)
	}
	if _, stderr, code := inDir(t, repo, "history", "add", older); code != 0 {
		t.Fatalf("history add: exit %d\n%s", code, stderr)
	}
	newer := strings.Replace(string(src), "return a + 7;", "return a + 11;", 1)
	if newer == string(src) {
		t.Fatal("difftrace.c no longer has tweak's constant")
	}
	if err := os.WriteFile(filepath.Join(repo, "p.c"), []byte(newer), 0o644); err != nil {
		t.Fatal(err)
	}
	build() // the older build is gone from disk: only its archived copy is left
	out := filepath.Join(t.TempDir(), "t.rec")
	_, stderr, code := inDir(t, repo, "trace", "--diff-tracing", "soft", "--diff-base", "@HEAD", "-f", "*", "-o", out, "--", "./prog", "3")
	if code != 0 || !strings.Contains(stderr, "as run 1 of") {
		t.Fatalf("trace --diff-base @HEAD: exit %d\n%s", code, stderr)
	}
	if got := strings.Join(traced(t, out), " "); got != "main tweak" {
		t.Errorf("traced %s: want main and tweak (named by the hunk of git diff HEAD)\n%s", got, stderr)
	}
	// A commit without runs: an error that says what to store.
	gitIn(t, repo, "commit", "-qam", "newer")
	if _, stderr, code := inDir(t, repo, "trace", "--diff-tracing", "soft", "--diff-base", "@HEAD", "-f", "*", "-o", out, "--", "./prog", "3"); code != 1 || !strings.Contains(stderr, "no runs of HEAD") {
		t.Errorf("--diff-base @HEAD without runs: exit %d\n%s", code, stderr)
	}
}

// --stats @REV: the dynamic baseline starts from a stored trace of that
// commit, not from the last trace of this build (none here): leaf, called
// more than strict's hard limit in the stored trace, is left out.
func TestTraceStatsFromStore(t *testing.T) {
	testutil.NeedRoot(t)
	t.Setenv("CULPRIT_TRACE_STATS", t.TempDir()) // no earlier trace of the build
	bin := testutil.C(t, "tracecalls", []string{"tracecalls.c"}, "-O2", "-g", "-pthread")
	repo := t.TempDir()
	gitIn(t, repo, "init", "-q")
	if err := os.WriteFile(filepath.Join(repo, "README"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, repo, "add", "README")
	gitIn(t, repo, "commit", "-q", "-m", "one")
	args := []string{"-f", "leaf", "-f", "fib", "--", bin, "leaf", "100001", "fib", "5"}
	// Without stored statistics: a usage error, then an error naming what
	// to store.
	if _, stderr, code := inDir(t, repo, append([]string{"trace", "--dynamic-baseline", "strict", "--stats", "HEAD", "-o", filepath.Join(repo, "x.rec")}, args...)...); code != 2 || !strings.Contains(stderr, "@REV") {
		t.Errorf("--stats HEAD: exit %d\n%s", code, stderr)
	}
	if _, stderr, code := inDir(t, repo, append([]string{"trace", "--dynamic-baseline", "strict", "--stats", "@HEAD", "-o", filepath.Join(repo, "x.rec")}, args...)...); code != 1 || !strings.Contains(stderr, "no runs of HEAD") {
		t.Errorf("--stats @HEAD with nothing stored: exit %d\n%s", code, stderr)
	}
	first := filepath.Join(t.TempDir(), "first.rec")
	if _, stderr, code := inDir(t, repo, append([]string{"trace", "-o", first}, args...)...); code != 0 {
		t.Fatalf("trace: exit %d\n%s", code, stderr)
	}
	if _, stderr, code := inDir(t, repo, "history", "add", first); code != 0 {
		t.Fatalf("history add: exit %d\n%s", code, stderr)
	}
	if err := os.RemoveAll(os.Getenv("CULPRIT_TRACE_STATS")); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "t.rec")
	_, stderr, code := inDir(t, repo, append([]string{"trace", "--dynamic-baseline", "strict", "--stats", "@HEAD", "-o", out}, args...)...)
	if code != 0 || !strings.Contains(stderr, "dynamic baseline leaves out 1 functions (1 call_limit)") {
		t.Fatalf("--stats @HEAD: exit %d\n%s", code, stderr)
	}
	if got := strings.Join(traced(t, out), " "); got != "fib" {
		t.Errorf("traced %s, want fib only (leaf left out)", got)
	}
}

// --stats @REV with the pipelines: the hot functions are judged by the
// CPU samples of the trace stored for that commit, as by the build's pool
// without it. In tracewide nearly all the time is hot's, three levels
// down, where trimming leaves it out: the stored trace did not probe it,
// so its Dynamic Stats say nothing of it, but its samples do. The run
// is long enough (about 0.6 s, 60 samples at the first trace's 99 Hz) for
// hot's half of the time to show: at 20,000,000 calls the stored trace
// held 4-6 samples, and all of them fell in leaf00's loop about one run
// in sixteen.
func TestTraceKeepHotFromStore(t *testing.T) {
	testutil.NeedRoot(t)
	t.Setenv("CULPRIT_ARCHIVE", t.TempDir())
	stats := t.TempDir()
	t.Setenv("CULPRIT_TRACE_STATS", stats)
	bin := testutil.C(t, "tracewide", []string{"tracewide.c"}, "-O2", "-g")
	repo := t.TempDir()
	gitIn(t, repo, "init", "-q")
	if err := os.WriteFile(filepath.Join(repo, "README"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, repo, "add", "README")
	gitIn(t, repo, "commit", "-q", "-m", "one")
	first := filepath.Join(t.TempDir(), "first.rec")
	if _, stderr, code := inDir(t, repo, "trace", "--optimize", "basic", "-f", "*", "-o", first, "--", bin, "200000000"); code != 0 {
		t.Fatalf("trace: exit %d\n%s", code, stderr)
	}
	if got, _ := traceReport(t, first).calls("hot"); got != 0 {
		t.Fatalf("first trace: hot has %d calls recorded, want none (nothing says it is hot yet)", got)
	}
	if _, stderr, code := inDir(t, repo, "history", "add", first); code != 0 {
		t.Fatalf("history add: exit %d\n%s", code, stderr)
	}
	if err := os.RemoveAll(stats); err != nil { // the build's pool is gone: only the stored trace is left
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "t.rec")
	_, stderr, code := inDir(t, repo, "trace", "--optimize", "basic", "--stats", "@HEAD", "-f", "*", "-o", out, "--", bin, "200000000")
	if code != 0 || !strings.Contains(stderr, "the trace stored for HEAD by") {
		t.Fatalf("--stats @HEAD: exit %d\n%s", code, stderr)
	}
	// About 60 samples hold 0.6 of a function at 1%: the user is told.
	if !strings.Contains(stderr, "too few to see every function over 1%") {
		t.Errorf("--stats @HEAD: want the stored trace's samples called too few\n%s", stderr)
	}
	r := traceReport(t, out)
	if got, _ := r.calls("hot"); got < 200 {
		t.Errorf("hot has %d calls recorded, want it probed (at least its first 200)\n%s", got, stderr)
	}
	if got, _ := r.calls("main"); got != 1 {
		t.Errorf("main has %d calls, want 1", got)
	}
}
