package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/culprit-dev/culprit/internal/analysis/models"
	"github.com/culprit-dev/culprit/internal/testutil"
)

// histProg is the program of the test repository. Its scan function turns
// from linear to quadratic in n at the third commit; checksum gets four
// times faster at the fourth.
const histProg = `#include <stdio.h>
#include <stdlib.h>

static volatile unsigned long sink;

__attribute__((noinline)) void setup(long n) {
	unsigned long h = 1;
	for (long i = 0; i < n * 6000; i++) h = h * 6364136223846793005UL + (unsigned long)i;
	sink += h;
}

__attribute__((noinline)) void scan(long n) {
	unsigned long h = 3;
SCAN
	sink += h;
}

__attribute__((noinline)) void checksum(long n) {
	unsigned long h = 7;
	for (long i = 0; i < n * CHECKSUM; i++) h = h * 3202034522624059733UL + (unsigned long)i;
	sink += h;
}

int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 1000;
	setup(n);
	scan(n);
	checksum(n);
	printf("%lu\n", sink);
	return 0;
}
COMMENT`

// The smallest and largest input sizes of the test's runs.
const (
	small = "1000"
	large = "16000"
	reps  = 3 // runs of each commit at each size
)

const (
	scanLinear    = "\tfor (long i = 0; i < n * 6000; i++) h = h * 2862933555777941757UL + (unsigned long)i;"
	scanQuadratic = scanLinear + "\n\tfor (long i = 0; i < n; i++)\n\t\tfor (long j = 0; j < n * 6; j++) h = h * 2862933555777941757UL + (unsigned long)j;"
)

// gitIn runs git in dir as a fixed author and returns its trimmed output.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

type checkJSON struct {
	Base, Target string
	Pairs        int `json:"pairs"`
	Changes      []struct {
		Function   string   `json:"function"`
		Kind       string   `json:"kind"`
		Severity   *float64 `json:"severity"`
		Confidence float64  `json:"confidence"`
		Location   string   `json:"location"`
		Base       *struct {
			Kind string `json:"kind"`
		} `json:"base_model"`
		Target *struct {
			Kind string `json:"kind"`
		} `json:"target_model"`
		Methods []struct {
			Method  string `json:"method"`
			Verdict string `json:"verdict"`
		} `json:"methods"`
	} `json:"changes"`
}

// changes says each change of c with its models' kinds (the JSON's
// pointers print as addresses).
func (c checkJSON) changes() string {
	var b strings.Builder
	for _, ch := range c.Changes {
		base, tgt, sev := "none", "none", 0.0
		if ch.Base != nil {
			base = ch.Base.Kind
		}
		if ch.Target != nil {
			tgt = ch.Target.Kind
		}
		if ch.Severity != nil {
			sev = *ch.Severity
		}
		fmt.Fprintf(&b, "\n  %s %s %s → %s, severity %.2f, confidence %.2f, at %s", ch.Function, ch.Kind, base, tgt, sev, ch.Confidence, ch.Location)
	}
	return b.String()
}

// TestHistoryCheck builds a git repository of five commits of a C program,
// stores runs of each at three input sizes, and checks that culprit check
// names exactly the function that turned quadratic and the one that got
// faster, with their model changes, on SQLite (culprit run) and on
// PostgreSQL (the same recordings added with history add).
func TestHistoryCheck(t *testing.T) {
	testutil.NeedRoot(t)
	repo := t.TempDir()
	recs := t.TempDir()
	gitIn(t, repo, "init", "-q")
	// Sizes four times apart: with three sizes only 3× apart, run-to-run
	// noise of 10% in CPU time (a busy two-core machine) made a line look
	// logarithmic or quadratic in one fit of one run per size in twenty;
	// 4× apart, in one in 170 (simulated with models.Best), and less
	// again on medians of three runs. The quadratic scan is 2× the
	// linear one at the smallest size, 5× and 17× at the others: each
	// size's three runs on each side then stay apart, as the check's
	// Mann–Whitney test of three runs against three needs (at 1.5× the
	// smallest size's runs overlapped at a load of 20 on two cores, and
	// with two of three sizes overlapping the combined Z stays under 3).
	sizes := []string{small, "4000", large}
	type version struct{ scan, checksum, comment, extra string }
	versions := []version{
		{scanLinear, "12000", "", ""},
		{scanLinear, "12000", "", "README.md"}, // documentation only
		{scanQuadratic, "12000", "", ""},       // scan: linear → quadratic
		{scanQuadratic, "3000", "", ""},        // checksum: 4× faster
		{scanQuadratic, "3000", "/* n: the input size */\n", ""},
	}
	var commits []string
	for i, v := range versions {
		src := strings.NewReplacer("SCAN", v.scan, "CHECKSUM", v.checksum, "COMMENT", v.comment).Replace(histProg)
		if err := os.WriteFile(filepath.Join(repo, "prog.c"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		if v.extra != "" {
			os.WriteFile(filepath.Join(repo, v.extra), []byte("prog: a test program\n"), 0o644)
		}
		gitIn(t, repo, "add", "prog.c")
		if v.extra != "" {
			gitIn(t, repo, "add", v.extra)
		}
		gitIn(t, repo, "commit", "-q", "-m", "version "+string(rune('1'+i)))
		commits = append(commits, gitIn(t, repo, "rev-parse", "HEAD"))
		// The build output is untracked: it does not make the tree dirty.
		// Each commit's binary is kept for the runs below; the last one
		// is also ./prog, for the runs at HEAD.
		for _, out := range []string{filepath.Join(repo, "build", commits[i][:12], "prog"), filepath.Join(repo, "prog")} {
			os.MkdirAll(filepath.Dir(out), 0o755)
			if b, err := exec.Command("gcc", "-O1", "-g", "-fno-omit-frame-pointer", "-o", out, filepath.Join(repo, "prog.c")).CombinedOutput(); err != nil {
				t.Fatalf("gcc: %v\n%s", err, b)
			}
		}
	}
	branch := gitIn(t, repo, "symbolic-ref", "--short", "HEAD")
	// Three runs of each commit at each size, interleaved, each round
	// starting at another commit. On a shared virtual machine the same
	// code's CPU time grows 15% as load drifts over the test, and 2–3×
	// for a second now and then: run in commit order, the drift reads as
	// a change between commits, and one run alone can be a burst; the
	// check takes the median of three runs.
	added := make([][]string, len(versions)) // per commit: recording files
	round := 0
	for _, n := range sizes {
		for r := range reps {
			for k := range versions {
				i := (round + k) % len(versions)
				gitIn(t, repo, "checkout", "-q", commits[i])
				rec := filepath.Join(recs, fmt.Sprintf("c%d-%s-%d.rec", i+1, n, r))
				bin := "./" + filepath.Join("build", commits[i][:12], "prog")
				if _, stderr, code := inDir(t, repo, "run", "-F", "1999", "-o", rec, "--param", "n="+n, "--", bin, n); code != 0 {
					t.Fatalf("culprit run at commit %d, n=%s: exit %d\n%s", i+1, n, code, stderr)
				}
				added[i] = append(added[i], rec)
			}
			round++
		}
	}
	gitIn(t, repo, "checkout", "-q", branch)

	// A modified tracked file: run refuses, unless --dirty.
	os.WriteFile(filepath.Join(repo, "prog.c"), []byte("/* edited */\n"), 0o644)
	_, stderr, code := inDir(t, repo, "run", "--", "./prog", "10")
	if code != 2 || !strings.Contains(stderr, "uncommitted changes to prog.c") || !strings.Contains(stderr, "--dirty") {
		t.Errorf("run in a dirty tree: exit %d, stderr:\n%s", code, stderr)
	}
	_, stderr, code = inDir(t, repo, "run", "--dirty", "--workload", "dirty", "--", "./prog", "3000")
	if code != 0 || !strings.Contains(stderr, "stored as run 46") {
		t.Fatalf("run --dirty: exit %d\n%s", code, stderr)
	}
	gitIn(t, repo, "checkout", "prog.c")
	list, _, _ := inDir(t, repo, "history", "list")
	if !strings.Contains(list, commits[4][:12]+"+dirty") || strings.Count(list, "\n") != 47 {
		t.Errorf("history list:\n%s", list)
	}
	if out, _, code := inDir(t, repo, "history", "rm", "46"); code != 0 || !strings.Contains(out, "removed 1 runs") {
		t.Errorf("history rm: %d %s", code, out)
	}

	// runsOf logs what a wrong model was fitted on: each stored run's
	// samples and CPU time, and scan's fits at the commits involved.
	runsOf := func(t *testing.T, store string, revs ...string) {
		t.Helper()
		args := []string{"history", "list"}
		if store != "" {
			args = append(args, "--store", store)
		}
		out, _, _ := inDir(t, repo, args...)
		t.Logf("stored runs:\n%s", out)
		for _, rev := range revs {
			args := []string{"models", "--func", "^scan$"}
			if store != "" {
				args = append(args, "--store", store)
			}
			out, errs, _ := inDir(t, repo, append(args, rev)...)
			t.Logf("models of scan at %.12s:\n%s%s", rev, out, errs)
		}
	}
	check := func(t *testing.T, store string, spec string, wantCode int) checkJSON {
		t.Helper()
		args := []string{"check", "--format", "json", spec}
		if store != "" {
			args = append(args, "--store", store)
		}
		out, stderr, code := inDir(t, repo, args...)
		if code != wantCode {
			if a, b, ok := strings.Cut(spec, ".."); ok {
				runsOf(t, store, a, b)
			}
			t.Fatalf("check %s: exit %d, want %d\n%s\n%s", spec, code, wantCode, out, stderr)
		}
		var c checkJSON
		if err := json.Unmarshal([]byte(out), &c); err != nil {
			t.Fatalf("check %s: %v\n%s", spec, err, out)
		}
		if c.Pairs != 3 {
			t.Errorf("check %s: %d pairs, want 3", spec, c.Pairs)
		}
		return c
	}
	verify := func(t *testing.T, store string) {
		c := check(t, store, commits[1]+".."+commits[2], 1)
		if len(c.Changes) != 1 || c.Changes[0].Function != "scan" || c.Changes[0].Kind != "degradation" ||
			c.Changes[0].Base == nil || c.Changes[0].Base.Kind != "linear" || c.Changes[0].Target.Kind != "quadratic" {
			t.Errorf("check version 2..3: want scan degraded linear → quadratic and nothing else, got:%s", c.changes())
			runsOf(t, store, commits[1], commits[2])
		} else if !strings.Contains(c.Changes[0].Location, "n="+large) || c.Changes[0].Confidence < 0.8 {
			t.Errorf("scan's degradation: location %q, confidence %.2f", c.Changes[0].Location, c.Changes[0].Confidence)
		}
		c = check(t, store, commits[2]+".."+commits[3], 0)
		if len(c.Changes) != 1 || c.Changes[0].Function != "checksum" || c.Changes[0].Kind != "optimization" ||
			c.Changes[0].Base.Kind != "linear" || c.Changes[0].Target.Kind != "linear" {
			t.Errorf("check version 3..4: want checksum optimized and nothing else, got:%s", c.changes())
		} else if s := *c.Changes[0].Severity; s > -0.6 || s < -0.9 {
			t.Errorf("checksum's severity %.2f, want about -0.75", s)
		}
		c = check(t, store, commits[0]+".."+commits[4], 1)
		got := map[string]string{}
		for _, ch := range c.Changes {
			got[ch.Function] = ch.Kind
		}
		if len(got) != 2 || got["scan"] != "degradation" || got["checksum"] != "optimization" {
			t.Errorf("check version 1..5: %+v", c.Changes)
			runsOf(t, store, commits[0], commits[4])
		}
		// The default: HEAD against its nearest stored ancestor (a comment changed).
		c = check(t, store, "HEAD", 0)
		if len(c.Changes) != 0 {
			t.Errorf("check HEAD: %+v", c.Changes)
		}
	}
	t.Run("sqlite", func(t *testing.T) {
		verify(t, "")
		out, _, code := inDir(t, repo, "check", "--format", "junit", commits[1]+".."+commits[2])
		if code != 1 || !strings.Contains(out, `<failure message="degradation scan`) || !strings.Contains(out, "linear → quadratic") {
			t.Errorf("junit: exit %d\n%s", code, out)
		}
		out, _, code = inDir(t, repo, "check", commits[1]+".."+commits[2])
		if code != 1 || !strings.Contains(out, "Degradation scan (prog)") || !strings.Contains(out, "linear → quadratic") {
			t.Errorf("check text: exit %d\n%s", code, out)
		}
		var m struct {
			Functions []struct {
				Function string `json:"function"`
				Best     struct {
					Kind string  `json:"kind"`
					R2   float64 `json:"r2"`
				} `json:"best"`
			} `json:"functions"`
		}
		out, stderr, code := inDir(t, repo, "models", "--format", "json")
		if code != 0 || json.Unmarshal([]byte(out), &m) != nil {
			t.Fatalf("models: exit %d\n%s\n%s", code, out, stderr)
		}
		kinds := map[string]string{}
		for _, f := range m.Functions {
			kinds[f.Function] = f.Best.Kind
		}
		if kinds["scan"] != "quadratic" || kinds["setup"] != "linear" || kinds["checksum"] != "linear" {
			t.Errorf("models of HEAD: %v", kinds)
			runsOf(t, "", "HEAD")
		}
		if out, _, code := inDir(t, repo, "models", "--format", "svg", "--func", "^scan$"); code != 0 || !strings.Contains(out, "<svg") || !strings.Contains(out, "scan: quadratic") {
			t.Errorf("models svg: exit %d\n%.300s", code, out)
		}
		viewHistory(t, repo, added[4][0], commits[2], commits[0])
		// Stored runs read as @REV by the other commands.
		out, stderr, code = inDir(t, repo, "report", "@HEAD:n="+large)
		if code != 0 || !strings.Contains(out, "scan") {
			t.Errorf("report @HEAD:n=%s: exit %d\n%s\n%s", large, code, out, stderr)
		}
		out, stderr, code = inDir(t, repo, "diff", "@"+commits[1]+":n="+large, "@"+commits[2]+":n="+large)
		if _, after, _ := strings.Cut(out, "name (self)\n"); code != 0 || !strings.HasSuffix(strings.SplitN(after, "\n", 2)[0], " scan") {
			t.Errorf("diff of stored runs: exit %d\n%s\n%s", code, out, stderr)
		}
		if _, stderr, code := inDir(t, repo, "report", "@HEAD"); code != 0 || !strings.Contains(stderr, "names 9 runs") {
			t.Errorf("report @HEAD (three runs): exit %d, stderr %s", code, stderr)
		}
		if _, stderr, code := inDir(t, repo, "report", "@nosuchrev"); code != 1 || !strings.Contains(stderr, "not a commit") {
			t.Errorf("report @nosuchrev: exit %d, stderr %s", code, stderr)
		}
		if out, _, code := inDir(t, repo, "history", "show", "@HEAD:n="+large); code != 0 || !strings.Contains(out, "params     n="+large) || !strings.Contains(out, "scan (prog)") {
			t.Errorf("history show: exit %d\n%s", code, out)
		}
		// Sampled runs' statistics: one group per pairing key, a
		// function's self time across its runs.
		if out, _, code := inDir(t, repo, "history", "stats", "HEAD", "--func", "^scan$"); code != 0 || strings.Count(out, "self CPU time per run") != 3 ||
			strings.Count(out, "scan (prog)") != 3 || !strings.Contains(out, "n="+large) {
			t.Errorf("history stats of sampled runs: exit %d\n%s", code, out)
		}
		var runs []struct {
			Commit string `json:"commit"`
		}
		if out, _, code := inDir(t, repo, "history", "list", "--format", "json"); code != 0 || json.Unmarshal([]byte(out), &runs) != nil || len(runs) != 45 {
			t.Errorf("history list --format json: exit %d, %d runs\n%.500s", code, len(runs), out)
		}
		// The removed dirty run's recording is younger than gc's grace period.
		if out, _, code := inDir(t, repo, "history", "gc"); code != 0 || !strings.HasPrefix(out, "deleted 0 recordings") {
			t.Errorf("history gc: exit %d: %s", code, out)
		}
		// Traced calls are stored as the run's call statistics (Dynamic Stats).
		traced := filepath.Join(recs, "traced.rec")
		if _, stderr, code := inDir(t, repo, "trace", "-f", "scan", "-f", "setup", "-o", traced, "--", "./prog", "1000"); code != 0 {
			t.Fatalf("trace: exit %d\n%s", code, stderr)
		}
		if _, stderr, code := inDir(t, repo, "history", "add", "--workload", "traced", traced); code != 0 {
			t.Fatalf("history add of a trace: exit %d\n%s", code, stderr)
		}
		var shown struct {
			Traced []struct {
				Name  string `json:"name"`
				Calls int64  `json:"calls"`
				Total int64  `json:"inclusive_total_ns"`
			} `json:"traced"`
		}
		out, _, code = inDir(t, repo, "history", "show", "--format", "json", "@HEAD:workload=traced")
		if code != 0 || json.Unmarshal([]byte(out), &shown) != nil || len(shown.Traced) != 2 {
			t.Fatalf("history show of a trace: exit %d\n%s", code, out)
		}
		for _, f := range shown.Traced {
			if f.Calls != 1 || f.Total <= 0 || (f.Name != "scan" && f.Name != "setup") {
				t.Errorf("traced function %+v", f)
			}
		}
		if out, _, code := inDir(t, repo, "history", "rm", "@HEAD:workload=traced"); code != 0 || !strings.Contains(out, "removed 1 runs") {
			t.Errorf("history rm of the trace: %d %s", code, out)
		}
		// The post-commit hook: written, replaced by culprit, never over a foreign hook.
		hook := filepath.Join(repo, ".git", "hooks", "post-commit")
		for range 2 {
			if out, stderr, code := inDir(t, repo, "check", "--install-hook", "--hook-run", "true"); code != 0 || !strings.Contains(out, "installed") {
				t.Fatalf("check --install-hook: exit %d\n%s%s", code, out, stderr)
			}
		}
		if b, err := os.ReadFile(hook); err != nil || !strings.Contains(string(b), "true ||") || !strings.Contains(string(b), "' check ||") {
			t.Errorf("hook:\n%s", b)
		}
		os.WriteFile(hook, []byte("#!/bin/sh\necho mine\n"), 0o755)
		if _, stderr, code := inDir(t, repo, "check", "--install-hook", "--hook-run", "true"); code == 0 || !strings.Contains(stderr, "not written by culprit") {
			t.Errorf("a foreign hook was replaced: exit %d, %s", code, stderr)
		}
		// x from a sampled expression: scan's n, read in its frame.
		for range reps {
			for _, n := range sizes {
				if _, stderr, code := inDir(t, repo, "run", "--workload", "ex", "-F", "1999", "--expr", "prog@scan@n", "--", "./prog", n); code != 0 {
					t.Fatalf("run --expr: exit %d\n%s", code, stderr)
				}
			}
		}
		out, stderr, code = inDir(t, repo, "models", "--workload", "ex", "--x", "expr:n", "--func", "^scan$", "--format", "json")
		var em struct {
			X         string `json:"x"`
			Functions []struct {
				X    []float64 `json:"x"`
				Best struct {
					Kind string `json:"kind"`
				} `json:"best"`
			} `json:"functions"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &em) != nil || len(em.Functions) != 1 {
			t.Fatalf("models --x expr:n: exit %d\n%s\n%s", code, out, stderr)
		}
		if f := em.Functions[0]; f.Best.Kind != "quadratic" || len(f.X) != 3 || f.X[0] != 1000 || f.X[2] != 16000 {
			t.Errorf("scan against its sampled n: %+v", f)
		}
		if out, _, code := inDir(t, repo, "history", "rm", "@HEAD:workload=ex"); code != 0 || !strings.Contains(out, "removed 9 runs") {
			t.Errorf("history rm: %d %s", code, out)
		}
		// diagnose reads stored runs of sampled values as @REV too.
		for _, n := range []string{small, large} {
			if _, stderr, code := inDir(t, repo, "run", "--workload", "vals", "--values", "--param", "n="+n, "--", "./prog", n); code != 0 {
				t.Fatalf("run --values: exit %d\n%s", code, stderr)
			}
		}
		out, stderr, code = inDir(t, repo, "diagnose", "--normal", "@HEAD:workload=vals,n="+small, "--buggy", "@HEAD:workload=vals,n="+large, "--format", "json")
		var dj struct {
			Normal    []struct{ Path string } `json:"normal"`
			Buggy     []struct{ Path string } `json:"buggy"`
			Functions []struct {
				Name string `json:"name"`
				Rank int    `json:"rank"`
			} `json:"functions"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &dj) != nil || len(dj.Normal) != 1 || len(dj.Buggy) != 1 {
			t.Fatalf("diagnose of stored runs: exit %d\n%.600s\n%s", code, out, stderr)
		}
		scanRank := 0
		for _, f := range dj.Functions {
			if f.Name == "scan" {
				scanRank = f.Rank
			}
		}
		if scanRank != 1 {
			t.Errorf("diagnose of stored runs ranks the quadratic scan %d, want 1st\n%.600s", scanRank, out)
		}
		largestThenEmpty(t, repo)
	})
	t.Run("postgres", func(t *testing.T) {
		t.Setenv("XDG_CACHE_HOME", t.TempDir()) // recordings read back are copied there
		pg := testutil.Postgres(t)
		for i, files := range added {
			for j, f := range files {
				if _, stderr, code := inDir(t, repo, "history", "add", "--store", pg, "--commit", commits[i], "--param", "n="+sizes[j/reps], f); code != 0 {
					t.Fatalf("history add: exit %d\n%s", code, stderr)
				}
			}
		}
		verify(t, pg)
		// culprit run stores into PostgreSQL as into SQLite.
		if _, stderr, code := inDir(t, repo, "run", "--store", pg, "-F", "1999", "--workload", "pgrun", "--param", "n=1000", "--", "./prog", "1000"); code != 0 ||
			!strings.Contains(stderr, "stored as run") {
			t.Errorf("run --store postgres: exit %d\n%s", code, stderr)
		}
		if out, _, _ := inDir(t, repo, "history", "list", "--store", pg); !strings.Contains(out, "pgrun") {
			t.Errorf("history list from PostgreSQL has no pgrun run:\n%s", out)
		}
		// Recordings come back out of the database.
		if out, stderr, code := inDir(t, repo, "report", "--store", pg, "@HEAD:n="+large); code != 0 || !strings.Contains(out, "scan") {
			t.Errorf("report from PostgreSQL: exit %d\n%s\n%s", code, out, stderr)
		}
		largestThenEmpty(t, repo, "--store", pg)
		// The recordings of the removed runs are deleted at once: a run and
		// its recording are written in one transaction.
		if out, _, code := inDir(t, repo, "history", "gc", "--store", pg); code != 0 || !strings.HasPrefix(out, "deleted 46 recordings (") {
			t.Errorf("history gc after rm --all: exit %d: %s", code, out)
		}
	})
}

// TestModelsCallOrder fits traced calls' times against their order: one
// point per returned call, each function with its best model; a recording
// without enough calls is refused with the reason. The trace runs with a
// busy loop per CPU: calls are timed on the CPU, and fitted robustly, so
// preemptions do not decide the model. insert_sorted shifts one more
// element at each call, with about 16 ns of CPU work per element: 10,000
// calls, one in 10 traced, make it grow by some 170 µs from first to last,
// against about 9 µs of uprobe traps in every call whose cost varies by up
// to 3 µs on a busy machine, so the line explains nearly all of its
// variance (R² 0.994 against 0.94 for the next model; with a quarter of
// that work per element, 0.97 against 0.95, and the exponential won once
// in CI on a loaded machine). lookup does the same work at every call; its traps may slow a
// little as the array grows (it is small, 80 KB, to keep that small), so
// the test asks that lookup's fitted growth be small next to
// insert_sorted's, not that its model be constant.
func TestModelsCallOrder(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "callgrowth", []string{"callgrowth.c"}, "-O1", "-g")
	rec := filepath.Join(t.TempDir(), "t.rec")
	stop := busyLoops(runtime.NumCPU())
	release := quietCPU(t) // no other e2e session's sampling slows it half way
	mustRun(t, "trace", "-f", "insert_sorted#10", "-f", "lookup#10", "-o", rec, "--", bin, "10000")
	release()
	stop()
	var m struct {
		X         string `json:"x"`
		Functions []struct {
			Function string    `json:"function"`
			X        []float64 `json:"x"`
			Best     struct {
				Kind string  `json:"kind"`
				B0   float64 `json:"b0"`
				B1   float64 `json:"b1"`
			} `json:"best"`
			Fits []struct{} `json:"fits"`
		} `json:"functions"`
	}
	out := mustRun(t, "models", "--x", "call-order", "--format", "json", rec)
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	calls, kinds, growth := map[string]int{}, map[string]string{}, map[string]float64{}
	for _, f := range m.Functions {
		calls[f.Function] = len(f.X)
		kinds[f.Function] = f.Best.Kind
		// All six fit: power and exponential need every time positive,
		// and no call's time on the CPU is 0 (its probes ran on the CPU;
		// one a recording has off the CPU all along is read as lost,
		// and left out below).
		if f.Best.Kind == "" || len(f.Fits) != 6 || f.X[0] < 1 || f.X[len(f.X)-1] > 1000 || !sort.Float64sAreSorted(f.X) {
			t.Errorf("%s: best %q, %d fits, x %v..%v", f.Function, f.Best.Kind, len(f.Fits), f.X[0], f.X[len(f.X)-1])
			continue
		}
		best := models.Fit{Kind: -1, B0: f.Best.B0, B1: f.Best.B1}
		for _, k := range models.Kinds {
			if k.String() == f.Best.Kind {
				best.Kind = k
			}
		}
		growth[f.Function] = best.Eval(f.X[len(f.X)-1]) - best.Eval(f.X[0])
	}
	// 10000 calls of each; every 10th is traced. A call during which a
	// context switch reached no consumer (the kernel drops some on a busy
	// machine) has no time on the CPU and is left out of the fit, as is
	// one its recording has off the CPU for all its duration.
	lost := map[string]int{}
	for _, fn := range []string{"insert_sorted", "lookup"} {
		var c struct {
			Calls []struct {
				Lost bool `json:"cpu_lost"`
			}
		}
		if err := json.Unmarshal([]byte(mustRun(t, "report", "--calls", "^"+fn+"$", "--top", "0", "--format", "json", rec)), &c); err != nil {
			t.Fatal(err)
		}
		for _, x := range c.Calls {
			if x.Lost {
				lost[fn]++
			}
		}
	}
	if m.X != "call" || calls["insert_sorted"] != 1000-lost["insert_sorted"] || calls["lookup"] != 1000-lost["lookup"] ||
		lost["insert_sorted"]+lost["lookup"] > 20 {
		t.Errorf("x %q, calls %v, without time on the CPU %v; want 1000 in all", m.X, calls, lost)
	}
	t.Logf("best models %v; fitted growth from first to last call: %.2g s insert_sorted, %.2g s lookup", kinds, growth["insert_sorted"], growth["lookup"])
	// lookup may also come out a little faster towards the end (once on
	// an idle machine: -4.6 µs against insert_sorted's +38 µs, R² 0.56):
	// its first calls find the array cold. Growth is what it must not
	// show; a decline is bounded by a quarter of insert_sorted's growth.
	if g, gi := growth["lookup"], growth["insert_sorted"]; kinds["insert_sorted"] != "linear" || !(g < gi/10) || !(g > -gi/4) {
		t.Errorf("best models %v, want insert_sorted linear, lookup growing less than a tenth as much\n%s", kinds, mustRun(t, "models", "--x", "call-order", rec))
	}
	one := filepath.Join(t.TempDir(), "one.rec")
	mustRun(t, "trace", "-f", "main", "-o", one, "--", bin)
	if _, stderr, code := run(t, "models", "--x", "call-order", one); code != 1 || !strings.Contains(stderr, "3 or more calls") {
		t.Errorf("one call: exit %d, %s", code, stderr)
	}
}

// viewHistory checks culprit view's pages of the store, run in repo on
// one of its recordings: the stored runs and HEAD's check show what
// culprit history list and culprit check print, the models page what
// culprit models prints, with a curve per function. Then without a
// recording: the commit list's links open the check of the commit that
// degraded and the models of the first, as the commands print them.
func viewHistory(t *testing.T, repo, rec, degraded, first string) {
	t.Helper()
	ctx := chrome(t)
	base, _ := startViewIn(t, repo, rec)
	same := func(page, got, want string) {
		t.Helper()
		if strings.TrimSpace(got) != strings.TrimSpace(want) {
			t.Errorf("%s page shows\n%s\nwant what the command prints:\n%s", page, got, want)
		}
	}
	// No parameter of the store's pages (a commit) opens a file.
	noFileRead(t, base, newSecrets(t))
	list, _, _ := inDir(t, repo, "history", "list")
	same("stored runs", openPage(t, ctx, base, "history", "runs"), list)
	check, _, _ := inDir(t, repo, "check")
	same("HEAD's check", eval[string](t, ctx, `document.querySelector("#check pre").textContent`), check)
	models, _, _ := inDir(t, repo, "models")
	same("models", openPage(t, ctx, base, "models", "models"), models)
	curves := eval[[]string](t, ctx, `Array.from(document.querySelectorAll("#curves svg text")).map(e => e.textContent).filter(s => s.includes(": "))`)
	if !strings.Contains(strings.Join(curves, "\n"), "scan: quadratic") {
		t.Errorf("models page: no curve titled scan: quadratic among %q", curves)
	}

	// Without a recording, in the repository: the store's pages alone,
	// each stored commit a link to its check and its models.
	base, _ = startViewIn(t, repo)
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"history"),
		chromedp.WaitVisible(chromedp.CSS(`#commits a.check`))); err != nil {
		t.Fatalf("history page without a recording: %v", err)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("#commits a.check").length`); n != 5 {
		t.Errorf("history page lists %d commits with runs, want 5", n)
	}
	// A link followed: until the page shown is the link's (put in place
	// or loaded; the page before may have a rev too).
	follow := func(sel string) {
		t.Helper()
		href := eval[string](t, ctx, `(() => { const a = document.querySelector('`+sel+`'); a.click(); return a.href; })()`)
		waitJS(t, ctx, `location.href === `+strconv.Quote(href)+` && document.readyState == "complete" && document.querySelector("#commits") != null`)
	}
	follow(`#commits a.check[data-rev="` + degraded + `"]`)
	check, _, _ = inDir(t, repo, "check", degraded)
	same("check of the degrading commit", eval[string](t, ctx, `document.querySelector("#check pre").textContent`), check)
	if !strings.Contains(check, "scan") {
		t.Errorf("check of %.12s names no scan:\n%s", degraded, check)
	}
	follow(`#commits a.models[data-rev="` + first + `"]`)
	models, _, _ = inDir(t, repo, "models", first)
	same("models of the first commit", eval[string](t, ctx, `document.querySelector("#models pre").textContent`), models)
	if !strings.Contains(models, "scan") || !strings.Contains(models, "linear") {
		t.Errorf("models of %.12s:\n%s", first, models)
	}
	// Each put in place of the other.
	stepsInPlace(t, ctx, base,
		inPlaceStep{"history", has(`#commits a.check`), clickJS(`#nav a[href="models"]`), has(`#models pre`)},
		inPlaceStep{"models", has(`#models pre`), clickJS(`#commits a.check`), has(`#check pre`)},
	)
	for _, bad := range []string{"models?rev=HEAD", "history?rev=--output=x", "history?rev=0000000000"} {
		if code, _ := get(t, base+bad); code != http.StatusBadRequest {
			t.Errorf("GET %s: %d, want 400", bad, code)
		}
	}
}

// busyLoops keeps n goroutines spinning, as a busy machine's other work
// would, until the returned function is called.
func busyLoops(n int) (stop func()) {
	var done atomic.Bool
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for x := 0; !done.Load(); x++ {
			}
		}()
	}
	return func() {
		done.Store(true)
		wg.Wait()
	}
}

// largestThenEmpty lists a store's runs by size, the largest first, checks
// --top against the whole list, then removes every run.
func largestThenEmpty(t *testing.T, repo string, store ...string) {
	t.Helper()
	type run struct {
		ID   int64 `json:"id"`
		Size int64 `json:"size"`
	}
	list := func(flags ...string) []run {
		t.Helper()
		var runs []run
		out, stderr, code := inDir(t, repo, append(append([]string{"history", "list", "--format", "json"}, store...), flags...)...)
		if code != 0 || json.Unmarshal([]byte(out), &runs) != nil {
			t.Fatalf("history list %v: exit %d\n%s\n%s", flags, code, out, stderr)
		}
		return runs
	}
	all, top := list(), list("--sort", "size", "--top", "3")
	if len(all) < 4 || len(top) != 3 {
		t.Fatalf("history list --sort size --top 3: %d runs of %d", len(top), len(all))
	}
	for _, r := range all {
		if r.Size <= 0 || r.Size > top[0].Size {
			t.Errorf("run %d of %d bytes, the largest listed has %d", r.ID, r.Size, top[0].Size)
		}
	}
	if top[0].Size < top[1].Size || top[1].Size < top[2].Size {
		t.Errorf("--sort size: sizes %d, %d, %d, want the largest first", top[0].Size, top[1].Size, top[2].Size)
	}
	if _, stderr, code := inDir(t, repo, append([]string{"history", "rm", "--all", "12"}, store...)...); code != 2 || !strings.Contains(stderr, "not both") {
		t.Errorf("history rm --all 12: exit %d, %s", code, stderr)
	}
	out, stderr, code := inDir(t, repo, append([]string{"history", "rm", "--all"}, store...)...)
	if want := fmt.Sprintf("removed %d runs", len(all)); code != 0 || !strings.Contains(out, want) {
		t.Errorf("history rm --all: exit %d, %q, want %q\n%s", code, out, want, stderr)
	}
	if out, stderr, _ := inDir(t, repo, append([]string{"history", "list"}, store...)...); out != "" || !strings.Contains(stderr, "no runs stored") {
		t.Errorf("history list after rm --all: %q %q", out, stderr)
	}
}
