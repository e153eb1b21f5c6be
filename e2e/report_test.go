package e2e

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/culprit-dev/culprit/internal/loader"
	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/testutil"
)

// --from/--to select part of a run, counted from its first sample.
func TestTimeWindows(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "phases", []string{"phases.c"}, "-O2", "-g")
	out := rec(t)
	mustRun(t, "record", "-o", out, "--", bin, "0.6")
	// Where phase two starts, in seconds from the first sample (the phases
	// take equal CPU time; their wall time depends on the machine's load).
	p, err := loader.Load([]string{out}, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	start := -1.0
	for _, s := range p.Samples {
		for _, fi := range p.Stacks[s.Stack] {
			if p.Frames[fi].Function == "phase_two" && start < 0 {
				start = float64(s.Time-p.StartTime) / 1e9
			}
		}
	}
	start = math.Round(start*1000) / 1000 // the windows below are given in ms
	if start < 0.5 {
		t.Fatalf("phase_two starts at %.3f s, want after phase_one's 0.6 CPU seconds", start)
	}
	sec := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) + "s" }
	first := flat(t, "--to", sec(start-0.05), out)
	second := flat(t, "--from", sec(start+0.05), out)
	middle := flat(t, "--from", "0.2", "--to", "400ms", out)
	if first.total("phase_one") < 0.97 || first.total("phase_two") > 0 {
		t.Errorf("before %.3f s: phase_one %.2f, phase_two %.2f", start, first.total("phase_one"), first.total("phase_two"))
	}
	if second.total("phase_two") < 0.97 || second.total("phase_one") > 0 {
		t.Errorf("after %.3f s: phase_two %.2f, phase_one %.2f", start, second.total("phase_two"), second.total("phase_one"))
	}
	if middle.Samples == 0 || middle.Samples > 210 || middle.total("phase_one") < 0.97 {
		t.Errorf("0.2–0.4 s window: %d samples (at most ≈200 at 999 Hz), phase_one %.2f", middle.Samples, middle.total("phase_one"))
	}
	if all := flat(t, out); all.Samples != first.Samples+second.Samples+countBetween(p, start-0.05, start+0.05) {
		t.Errorf("windows do not partition the run: %d ≠ %d + %d + the samples between", all.Samples, first.Samples, second.Samples)
	}
}

func countBetween(p *profile.Profile, from, to float64) int {
	n := 0
	for _, s := range p.Samples {
		if t := float64(s.Time-p.StartTime) / 1e9; t >= from && t < to {
			n++
		}
	}
	return n
}

// Several recordings are merged.
func TestMergeRecordings(t *testing.T) {
	testutil.NeedRoot(t)
	hier := testutil.C(t, "hier-O0", []string{"hier.c"}, "-O0", "-g")
	threads := testutil.C(t, "threads", []string{"threads.c"}, "-O2", "-g", "-pthread")
	a, b := rec(t), rec(t)
	mustRun(t, "record", "-o", a, "--", hier, "2")
	mustRun(t, "record", "-o", b, "--", threads, "50000000")
	fa, fb, both := flat(t, a), flat(t, b), flat(t, a, b)
	if both.Samples != fa.Samples+fb.Samples {
		t.Errorf("merged %d samples, want %d + %d", both.Samples, fa.Samples, fb.Samples)
	}
	if both.total("worker") == 0 || both.total("spin_a") == 0 {
		t.Errorf("merged report lacks one of the runs: %+v", both.Entries)
	}
}

// Ctrl-C during an attach stops recording and leaves the target running,
// neither stopped nor traced.
func TestAttachInterrupted(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "sleeper", []string{"sleeper.c"}, "-O2", "-g")
	target := exec.Command(bin, "3", "5")
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	defer target.Process.Kill()
	out := rec(t)
	cmd := exec.Command(culprit, "record", "-p", strconv.Itoa(target.Process.Pid), "-o", out)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Early reporting: the recording in progress reports, twice, growing.
	var mid1, mid2 flatJSON
	waitFor(t, "a report of the recording in progress", func() bool {
		f, n := samplesSoFar(t, out)
		mid1 = f
		return n > 0
	})
	waitFor(t, "a later report with more samples", func() bool {
		f, n := samplesSoFar(t, out)
		mid2 = f
		return n > mid1.Samples
	})
	if mid2.total("busy") < 0.5 {
		t.Errorf("reports mid-run: %d then %d samples, busy %.2f", mid1.Samples, mid2.Samples, mid2.total("busy"))
	}
	// 500 ms of the target's CPU time more: about 500 samples at 999 Hz.
	waitCPU(t, target.Process.Pid, 500*time.Millisecond)
	if err := interrupt(t, "culprit", cmd, func() string { return "" }); err != nil {
		t.Errorf("culprit after Ctrl-C: %v", err)
	} else {
		noLoss(t, "", cmd.Args[1:])
	}
	status, _ := os.ReadFile("/proc/" + strconv.Itoa(target.Process.Pid) + "/status")
	for _, line := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(line, "State:") && !strings.Contains(line, "R (running)") && !strings.Contains(line, "S (sleeping)") {
			t.Errorf("target after detach: %s", line)
		}
		if strings.HasPrefix(line, "TracerPid:") && strings.TrimSpace(strings.TrimPrefix(line, "TracerPid:")) != "0" {
			t.Errorf("target still traced: %s", line)
		}
	}
	if f := flat(t, out); f.Samples < 300 {
		t.Errorf("%d samples before Ctrl-C", f.Samples)
	}
	target.Wait()
	if code := target.ProcessState.ExitCode(); code != 5 {
		t.Errorf("target exit code %d, want 5", code)
	}
}

// diff compares two runs of a program rebuilt under another name, in which
// phase_two takes three times as long: its share grows beyond noise, its CPU
// time triples, and phase_one keeps its CPU time while its share shrinks.
func TestDiff(t *testing.T) {
	testutil.NeedRoot(t)
	v1 := testutil.C(t, "phases", []string{"phases.c"}, "-O2", "-g")
	v2 := testutil.C(t, "phases", []string{"phases.c"}, "-O1", "-g")
	base, cur := rec(t), rec(t)
	mustRun(t, "record", "-o", base, "--", v1, "0.3", "0.3")
	mustRun(t, "record", "-o", cur, "--", v2, "0.3", "0.9")
	var d struct {
		Base, New struct {
			Samples int    `json:"samples"`
			CPUNs   uint64 `json:"cpu_ns"`
		}
		RankedBy string `json:"ranked_by"`
		Entries  []struct {
			Name      string `json:"name"`
			Object    string `json:"object"`
			Base, New struct {
				SelfSamples int    `json:"self_samples"`
				TotalCPUNs  uint64 `json:"total_cpu_ns"`
			}
			TotalChange float64 `json:"total_change"`
			Significant bool    `json:"significant"`
		} `json:"entries"`
	}
	out := mustRun(t, "diff", "--total", "--kernel", "exclude", "--format", "json", base, cur)
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("diff JSON: %v\n%s", err, out)
	}
	if d.RankedBy != "total" || d.Base.Samples < 400 || d.New.Samples < 2*d.Base.Samples*8/10 || d.New.CPUNs < d.Base.CPUNs*16/10 {
		t.Fatalf("runs: %+v %+v ranked by %q", d.Base, d.New, d.RankedBy)
	}
	if len(d.Entries) < 2 || d.Entries[0].Name != "phase_one" && d.Entries[0].Name != "phase_two" {
		t.Fatalf("want the phases ranked first: %+v", d.Entries)
	}
	for _, e := range d.Entries[:2] {
		ratio := float64(e.New.TotalCPUNs) / float64(e.Base.TotalCPUNs)
		if !strings.Contains(e.Object, " → ") || !e.Significant {
			t.Errorf("%s: object %q (want the two builds' names joined by →), significant %v", e.Name, e.Object, e.Significant)
		}
		switch e.Name {
		case "phase_two":
			if e.TotalChange < 0.15 || ratio < 2.3 || ratio > 3.8 {
				t.Errorf("phase_two: share change %+.2f, CPU time ×%.2f; want about +0.25 and ×3", e.TotalChange, ratio)
			}
		case "phase_one":
			if e.TotalChange > -0.15 || ratio < 0.75 || ratio > 1.33 {
				t.Errorf("phase_one: share change %+.2f, CPU time ×%.2f; want about −0.25 and ×1", e.TotalChange, ratio)
			}
		}
	}
	if text := mustRun(t, "diff", base, cur); !strings.Contains(text, "phase_two [") || !strings.Contains(text, "* the change exceeds") {
		t.Errorf("text diff:\n%s", text)
	}
	// Line by line: main's call of phase_two grew, its call of phase_one
	// shrank; the lines carry their source.
	var dl struct {
		Listings []struct {
			Function string `json:"function"`
			Files    []struct {
				Lines []struct {
					Source      *string `json:"source"`
					TotalChange float64 `json:"total_change"`
					Significant bool    `json:"significant"`
				} `json:"lines"`
			} `json:"files"`
		} `json:"listings"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, "diff", "--list", "^main$", "--format", "json", base, cur)), &dl); err != nil || len(dl.Listings) != 1 {
		t.Fatalf("diff --list: %v %+v", err, dl)
	}
	calls := 0
	for _, f := range dl.Listings[0].Files {
		for _, l := range f.Lines {
			switch {
			case l.Source == nil:
				t.Errorf("a line of main without its source: %+v", l)
			case strings.Contains(*l.Source, "phase_two("):
				calls++
				if l.TotalChange < 0.15 || !l.Significant {
					t.Errorf("phase_two's call: %+v", l)
				}
			case strings.Contains(*l.Source, "phase_one("):
				calls++
				if l.TotalChange > -0.15 || !l.Significant {
					t.Errorf("phase_one's call: %+v", l)
				}
			}
		}
	}
	if calls != 2 {
		t.Errorf("%d of main's two calls found in diff --list", calls)
	}
	if text := mustRun(t, "diff", "--list", "^phase_two$", base, cur); !strings.Contains(text, "ROUTINE phase_two in phases") || !strings.Contains(text, "*") {
		t.Errorf("diff --list text:\n%s", text)
	}

	// The differential flame graph: phase_two red, phase_one blue, though
	// the two builds have different names.
	svg := filepath.Join(t.TempDir(), "diff.svg")
	mustRun(t, "diff", "--format", "svg", "-o", svg, base, cur)
	data, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	fill := regexp.MustCompile(`data-n="(phase_one|phase_two)"[^>]*><title>([^<]*)</title><rect [^>]*fill="rgb\((\d+),(\d+),(\d+)\)"`)
	found := 0
	for _, m := range fill.FindAllStringSubmatch(string(data), -1) {
		found++
		r, _ := strconv.Atoi(m[3])
		g, _ := strconv.Atoi(m[4])
		b, _ := strconv.Atoi(m[5])
		red := r == 255 && g == b && g < 200
		blue := b == 255 && r == g && r < 200
		if m[1] == "phase_two" && !red || m[1] == "phase_one" && !blue || strings.Contains(m[2], "not in base") {
			t.Errorf("%s: fill rgb(%d,%d,%d), tooltip %q; want phase_two deep red, phase_one deep blue, both in base", m[1], r, g, b, m[2])
		}
	}
	if found != 2 {
		t.Errorf("%d phase frames in the differential flame graph, want 2", found)
	}
	if _, errs, code := run(t, "diff", base); code != 2 || !strings.Contains(errs, "two recordings") {
		t.Errorf("diff with one file: exit %d\n%s", code, errs)
	}
}
