// Package e2e runs the culprit binary on real compiled programs with real
// perf events, as a user would, and checks what it records and reports.
package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/testutil"
)

var culprit string // path of the culprit binary built for the tests

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "culprit-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	culprit = filepath.Join(dir, "culprit")
	// A private, empty archive: copies a user archived must not name the
	// frames of binaries the tests change.
	os.Setenv("CULPRIT_ARCHIVE", filepath.Join(dir, "archive"))
	// Traces keep per-function statistics for the next; not in the user's cache.
	os.Setenv("CULPRIT_TRACE_STATS", filepath.Join(dir, "trace-stats"))
	// Built as the README builds it: static, without cgo.
	build := exec.Command("go", "build", "-o", culprit, "./cmd/culprit")
	build.Dir = testutil.Root()
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-trimpath") // see TestReadmeDemo
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building culprit: %v\n%s", err, out)
		os.Exit(1)
	}
	code := testutil.Run(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

// run runs culprit and returns stdout, stderr and the exit code.
func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return inDir(t, "", args...)
}

// inDir runs culprit in dir ("": the test's working directory) and returns
// stdout, stderr and the exit code.
func inDir(t *testing.T, dir string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(culprit, args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	release := lockCPU(t, unix.LOCK_SH) // see cpuLock
	err := cmd.Run()
	if release != nil {
		release()
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running culprit %v: %v", args, err)
	}
	if code == 0 {
		noLoss(t, dir, args)
	}
	return out.String(), errb.String(), code
}

// noLoss checks that a recording made by culprit record or culprit trace
// with args (run in dir) lost nothing; other commands are let through. A
// loss is a defect that silently thins what the test checks, on a busy
// machine as on an idle one. Only tests that shrink the rings
// (--mmap-pages) aim to lose. Left apart: throttling (the kernel's rate
// limit, counted apart) and, in a trace, calls nested deeper than the
// tracer's shadow stack holds (a fixed bound the tracer warns about, not a
// load the machine failed to keep up with).
func noLoss(t *testing.T, dir string, args []string) {
	t.Helper()
	if len(args) == 0 || (args[0] != "record" && args[0] != "trace") {
		return
	}
	path := ""
	for i, a := range args {
		if a == "--" {
			break
		}
		if a == "--mmap-pages" || strings.HasPrefix(a, "--mmap-pages=") {
			return
		}
		if (a == "-o" || a == "--output") && i+1 < len(args) {
			path = args[i+1]
		} else if v, ok := strings.CutPrefix(a, "--output="); ok {
			path = v
		} else if v, ok := strings.CutPrefix(a, "-o="); ok {
			path = v
		}
	}
	if path == "" || path == "-" {
		return
	}
	if !filepath.IsAbs(path) && dir != "" {
		path = filepath.Join(dir, path)
	}
	var lost, depth, end uint64
	eachRecord(t, path, func(rec recording.Record) {
		switch x := rec.(type) {
		case *recording.Lost:
			switch {
			case x.Reason == recording.LostThrottled:
			case x.Reason == recording.LostDepth && args[0] == "trace":
				depth += x.Count
			default:
				lost += x.Count
			}
		case *recording.End:
			end = x.Lost
		}
	})
	if lost != 0 || end > depth {
		t.Errorf("culprit %v lost records: %d in Lost records, %d in the End record (%d of them nested too deep); no test but those shrinking the rings may lose", args, lost, end, depth)
	}
}

// eachRecord calls f with each record of the recording at path, in
// order, and fails the test if the recording cannot be read to its end.
func eachRecord(t *testing.T, path string, f func(recording.Record)) {
	t.Helper()
	r, err := recording.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		f(rec)
	}
}

// mustRun runs culprit and fails the test on a non-zero exit.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, errs, code := run(t, args...)
	if code != 0 {
		t.Fatalf("culprit %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

type flatJSON struct {
	Samples int    `json:"samples"`
	Lost    uint64 `json:"lost"`
	Entries []struct {
		Name         string  `json:"name"`
		Object       string  `json:"object"`
		Self         float64 `json:"self"`
		Total        float64 `json:"total"`
		SelfSamples  int     `json:"self_samples"`
		TotalSamples int     `json:"total_samples"`
	} `json:"entries"`
	Warnings []string `json:"warnings"`
}

func flat(t *testing.T, args ...string) flatJSON {
	t.Helper()
	out := mustRun(t, append([]string{"report", "--format", "json"}, args...)...)
	var f flatJSON
	if err := json.Unmarshal([]byte(out), &f); err != nil {
		t.Fatalf("report JSON: %v\n%s", err, out)
	}
	return f
}

func (f flatJSON) total(name string) float64 {
	for _, e := range f.Entries {
		if e.Name == name {
			return e.Total
		}
	}
	return 0
}

type callersJSON struct {
	Samples int `json:"samples"`
	Callers []struct {
		Path    []string `json:"path"`
		Samples int      `json:"samples"`
		Share   float64  `json:"share"`
	} `json:"callers"`
}

func callers(t *testing.T, n int, args ...string) callersJSON {
	t.Helper()
	out := mustRun(t, append([]string{"report", "--format", "json", "--callers", fmt.Sprint(n)}, args...)...)
	var c callersJSON
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatalf("callers JSON: %v\n%s", err, out)
	}
	return c
}

// foldedStack is one line of export --format folded: its frames, root
// first (the first of them the command's name), and its sample count.
type foldedStack struct {
	Line   string
	Frames []string
	N      int
}

// foldedStacks parses the output of export --format folded; a line that
// is not one fails the test.
func foldedStacks(t *testing.T, folded string) []foldedStack {
	t.Helper()
	var out []foldedStack
	for _, l := range strings.Split(strings.TrimSpace(folded), "\n") {
		i := strings.LastIndexByte(l, ' ')
		if i < 0 {
			t.Fatalf("bad folded line %q", l)
		}
		n, err := strconv.Atoi(l[i+1:])
		if err != nil {
			t.Fatalf("bad folded line %q", l)
		}
		out = append(out, foldedStack{Line: l, Frames: strings.Split(l[:i], ";"), N: n})
	}
	return out
}

func (c callersJSON) share(path ...string) float64 {
	want := strings.Join(path, " <- ")
	for _, r := range c.Callers {
		if strings.Join(r.Path, " <- ") == want {
			return r.Share
		}
	}
	return 0
}

// rec is a path for the test's recording. It is removed with the test
// unless the tests run with -artifacts (go test -artifacts -outputdir
// DIR): then every test's recordings are kept under DIR, to read the one
// a rare failure left. Each call gives a path of its own.
func rec(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp(t.ArtifactDir(), "rec")
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "test.rec")
}
