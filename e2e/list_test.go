package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/culprit-dev/culprit/internal/testutil"
)

type listingJSON struct {
	Samples  int `json:"samples"`
	Listings []struct {
		Function     string `json:"function"`
		Object       string `json:"object"`
		SelfSamples  int    `json:"self_samples"`
		TotalSamples int    `json:"total_samples"`
		Files        []struct {
			File    string `json:"file"`
			FoundAt string `json:"found_at"`
			Lines   []struct {
				Line         int     `json:"line"`
				Source       *string `json:"source"`
				SelfSamples  int     `json:"self_samples"`
				TotalSamples int     `json:"total_samples"`
			} `json:"lines"`
		} `json:"files"`
		Addresses []struct {
			SelfSamples int `json:"self_samples"`
		} `json:"addresses"`
	} `json:"listings"`
}

// TestList checks report --list (and --peek, --tree) on PCT's hierarchical program, built from a
// copy of its source that is then moved: the listing finds it through
// --source-path, puts worker's samples on its loop's two lines and main's on
// its two calls, 1/3 and 2/3.
func TestList(t *testing.T) {
	testutil.NeedRoot(t)
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join(testutil.Targets(), "hier.c"))
	if err != nil {
		t.Fatal(err)
	}
	built := filepath.Join(dir, "build")
	os.Mkdir(built, 0o755)
	if err := os.WriteFile(filepath.Join(built, "hier.c"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "hier")
	if out, err := exec.Command("gcc", "-O2", "-g", "-o", bin, filepath.Join(built, "hier.c")).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	out := rec(t)
	// About 0.15 s of CPU: at 4999 Hz some 750 samples, five times the
	// 150 the shares below need, however fast the machine runs the loop
	// (at the default rate a fast or busy machine gave 149).
	mustRun(t, "record", "-F", "4999", "-o", out, "--", bin, "6")
	srcLines := strings.Split(string(src), "\n")
	lineOf := func(text string) int {
		for i, l := range srcLines {
			if strings.Contains(l, text) {
				return i + 1
			}
		}
		t.Fatalf("hier.c has no line with %q", text)
		return 0
	}

	// Where it was built.
	text := mustRun(t, "report", "--list", "^worker$", out)
	if !strings.Contains(text, "ROUTINE worker in hier") || !strings.Contains(text, "void worker(long n) {") || !strings.Contains(text, "sink += i ^ (sink >> 3);") {
		t.Errorf("worker listing lacks its header or source:\n%s", text)
	}

	// Moved: found under --source-path by the file's trailing components.
	moved := filepath.Join(dir, "moved")
	if err := os.Rename(built, moved); err != nil {
		t.Fatal(err)
	}
	text = mustRun(t, "report", "--list", "^worker$", out)
	if !strings.Contains(text, "(source not found") {
		t.Errorf("moved source not reported missing:\n%s", text)
	}
	// A source newer than the program is flagged: its lines may have moved.
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(moved, "hier.c"), future, future); err != nil {
		t.Fatal(err)
	}
	if text := mustRun(t, "report", "--list", "^worker$", "--source-path", moved, out); !strings.Contains(text, "modified after hier was built") {
		t.Errorf("newer source not flagged:\n%s", text)
	}
	var l listingJSON
	js := mustRun(t, "report", "--list", "^(main|worker)$", "--source-path", "/nonexistent:"+moved, "--format", "json", out)
	if err := json.Unmarshal([]byte(js), &l); err != nil {
		t.Fatalf("listing JSON: %v\n%s", err, js)
	}
	if len(l.Listings) != 2 || l.Listings[0].Function != "worker" || l.Listings[1].Function != "main" || l.Samples < 150 {
		t.Fatalf("listings %+v", l)
	}
	w, m := l.Listings[0], l.Listings[1]
	if len(w.Files) != 1 || w.Files[0].FoundAt != filepath.Join(moved, "hier.c") {
		t.Fatalf("worker's source: %+v", w.Files)
	}
	loop, body, call1, call2 := lineOf("for (long i = 0; i < n; i++)"), lineOf("sink += i ^"), lineOf("dispatch_1();"), lineOf("dispatch_2();")
	counts := map[int][2]int{}
	for _, f := range append(w.Files, m.Files...) {
		for _, ln := range f.Lines {
			if ln.Source == nil || strings.TrimSpace(*ln.Source) != strings.TrimSpace(srcLines[ln.Line-1]) {
				t.Errorf("line %d: source %v, want %q", ln.Line, ln.Source, srcLines[ln.Line-1])
			}
			c := counts[ln.Line]
			counts[ln.Line] = [2]int{c[0] + ln.SelfSamples, c[1] + ln.TotalSamples}
		}
	}
	// worker's self samples lie on its loop (a few may be on its entry or
	// return); main's own lines have no self samples.
	if got := counts[loop][0] + counts[body][0]; got < w.SelfSamples*95/100 || w.SelfSamples < l.Samples*9/10 {
		t.Errorf("worker: %d of its %d self samples on lines %d and %d (of %d samples)", got, w.SelfSamples, loop, body, l.Samples)
	}
	n := float64(m.TotalSamples)
	if s1, s2 := float64(counts[call1][1])/n, float64(counts[call2][1])/n; s1 < 0.28 || s1 > 0.38 || s2 < 0.62 || s2 > 0.72 {
		t.Errorf("main's calls: dispatch_1 %.2f, dispatch_2 %.2f of main's samples, want 1/3 and 2/3 within 5 points", s1, s2)
	}

	// --peek: worker's callers, 1/3 and 2/3 of its samples.
	var pk struct {
		Peeks []struct {
			Function     string `json:"function"`
			TotalSamples int    `json:"total_samples"`
			Callers      []struct {
				Name    string `json:"name"`
				Samples int    `json:"samples"`
			} `json:"callers"`
		} `json:"peeks"`
	}
	js = mustRun(t, "report", "--peek", "^worker$", "--format", "json", out)
	if err := json.Unmarshal([]byte(js), &pk); err != nil {
		t.Fatalf("peek JSON: %v\n%s", err, js)
	}
	if len(pk.Peeks) != 1 || len(pk.Peeks[0].Callers) < 2 {
		t.Fatalf("peek: %+v", pk)
	}
	share := map[string]float64{}
	for _, c := range pk.Peeks[0].Callers {
		share[c.Name] = float64(c.Samples) / float64(pk.Peeks[0].TotalSamples)
	}
	if s1, s2 := share["dispatch_1"], share["dispatch_2"]; s1 < 0.28 || s1 > 0.38 || s2 < 0.62 || s2 > 0.72 {
		t.Errorf("worker's callers: %v, want dispatch_1 1/3 and dispatch_2 2/3 within 5 points", share)
	}
	if text := mustRun(t, "report", "--peek", "^dispatch_2$", out); !strings.Contains(text, "<- main") || !strings.Contains(text, "-> worker") {
		t.Errorf("dispatch_2's neighbours:\n%s", text)
	}
	if _, errs, code := run(t, "report", "--peek", "worker", "--list", "worker", out); code != 2 {
		t.Errorf("--peek with --list: exit %d, %s", code, errs)
	}

	// --tree: main's two branches, 1/3 and 2/3, each ending in worker.
	type node struct {
		Name     string  `json:"name"`
		Total    float64 `json:"total"`
		Self     float64 `json:"self"`
		Children []node  `json:"children"`
	}
	var tr struct {
		Samples int    `json:"samples"`
		Tree    []node `json:"tree"`
	}
	js = mustRun(t, "report", "--tree", "--format", "json", out)
	if err := json.Unmarshal([]byte(js), &tr); err != nil {
		t.Fatalf("tree JSON: %v\n%s", err, js)
	}
	var find func(ns []node, name string) *node
	find = func(ns []node, name string) *node {
		for i := range ns {
			if ns[i].Name == name {
				return &ns[i]
			}
			if f := find(ns[i].Children, name); f != nil {
				return f
			}
		}
		return nil
	}
	mainNode := find(tr.Tree, "main")
	if mainNode == nil {
		t.Fatalf("no main in the tree: %s", js)
	}
	d1, d2 := find(mainNode.Children, "dispatch_1"), find(mainNode.Children, "dispatch_2")
	if d1 == nil || d2 == nil || d1.Total < 0.28 || d1.Total > 0.38 || d2.Total < 0.62 || d2.Total > 0.72 ||
		find(d1.Children, "worker") == nil || find(d2.Children, "worker") == nil || mainNode.Self > 0.02 {
		t.Errorf("main's branches: %+v %+v", d1, d2)
	}
	if text := mustRun(t, "report", "--tree", out); !strings.Contains(text, "├─ dispatch_2") || !strings.Contains(text, "└─ worker") {
		t.Errorf("tree text:\n%s", text)
	}
	if _, _, code := run(t, "report", "--tree", "--callers", "2", out); code != 2 {
		t.Errorf("--tree with --callers: exit %d", code)
	}

	// Errors: a bad expression is a usage error; nothing matching names the
	// busiest functions; --list does not combine with --callers.
	if _, errs, code := run(t, "report", "--list", "(", out); code != 2 || !strings.Contains(errs, "--list") {
		t.Errorf("bad --list: exit %d, %s", code, errs)
	}
	if _, errs, code := run(t, "report", "--list", "wrker", out); code == 0 || !strings.Contains(errs, "worker (") {
		t.Errorf("unmatched --list: exit %d, %s", code, errs)
	}
	if _, errs, code := run(t, "report", "--list", "worker", "--callers", "2", out); code != 2 {
		t.Errorf("--list with --callers: exit %d, %s", code, errs)
	}
}
