package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

type asmJSON struct {
	Listings []struct {
		Function     string `json:"function"`
		SelfSamples  int    `json:"self_samples"`
		TotalSamples int    `json:"total_samples"`
		Code         []struct {
			Function     string `json:"function"`
			Note         string `json:"note"`
			Instructions []struct {
				Text         string `json:"text"`
				Line         int    `json:"line"`
				SelfSamples  int    `json:"self_samples"`
				TotalSamples int    `json:"total_samples"`
			} `json:"instructions"`
		} `json:"code"`
	} `json:"listings"`
}

func asmOf(t *testing.T, args ...string) asmJSON {
	t.Helper()
	out := mustRun(t, append([]string{"report", "--asm", "--format", "json"}, args...)...)
	var a asmJSON
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		t.Fatalf("asm JSON: %v\n%s", err, out)
	}
	if len(a.Listings) != 1 {
		t.Fatalf("want one listing: %s", out)
	}
	return a
}

// TestAsm checks report --list --asm (perf annotate) on PCT's hierarchical
// program: worker's samples lie on the instructions of its loop, the call
// in dispatch_2 holds dispatch_2's samples, a stripped copy is annotated by
// its unwind tables, and a binary rebuilt since the recording is refused.
func TestAsm(t *testing.T) {
	testutil.NeedRoot(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "hier")
	src := filepath.Join(testutil.Targets(), "hier.c")
	gcc := func(out string, flags ...string) {
		if b, err := exec.Command("gcc", append(flags, "-o", out, src)...).CombinedOutput(); err != nil {
			t.Fatalf("gcc: %v\n%s", err, b)
		}
	}
	gcc(bin, "-O2", "-g")
	out := rec(t)
	mustRun(t, "record", "-o", out, "--", bin, "12") // about 300 ms of CPU time in worker

	w := asmOf(t, "--list", "^worker$", out)
	l := w.Listings[0]
	if len(l.Code) != 1 || l.Code[0].Function != "worker" || len(l.Code[0].Instructions) < 5 {
		t.Fatalf("worker's code: %+v", l.Code)
	}
	self, inLoop := 0, 0
	for _, in := range l.Code[0].Instructions {
		self += in.SelfSamples
		if in.Line == 9 || in.Line == 10 { // the for and the sink += lines of hier.c
			inLoop += in.SelfSamples
		}
	}
	// At 999 Hz of CPU time, about 300 samples in worker; half is the bound.
	if self != l.SelfSamples || inLoop < self*95/100 || self < 150 {
		t.Errorf("worker: %d self samples on its instructions (of %d), %d on its loop's lines", self, l.SelfSamples, inLoop)
	}

	// dispatch_2 calls worker and increments a counter itself: nearly all
	// of its samples are on the call (the callee's time, counted at the
	// call), and the few self samples its own instructions may get are true
	// samples, so "nearly all" is the bound.
	d := asmOf(t, "--list", "^dispatch_2$", out).Listings[0]
	var call string
	most := 0
	for _, in := range d.Code[0].Instructions {
		if in.TotalSamples > most {
			most, call = in.TotalSamples, in.Text
		}
	}
	if !strings.HasPrefix(call, "call") || !strings.Contains(call, "# worker") {
		t.Errorf("dispatch_2's samples are mostly on %q, want its call to worker: %+v", call, d.Code[0].Instructions)
	}
	if most < d.TotalSamples*95/100 {
		t.Errorf("the call holds %d of dispatch_2's %d samples", most, d.TotalSamples)
	}

	// Stripped: the function is named by its entry; its bounds come from
	// the unwind tables.
	stripped := filepath.Join(dir, "hier-stripped")
	if b, err := exec.Command("strip", "-o", stripped, bin).CombinedOutput(); err != nil {
		t.Fatalf("strip: %v\n%s", err, b)
	}
	sout := rec(t)
	mustRun(t, "record", "-o", sout, "--", stripped, "4")
	var top flatJSON
	if err := json.Unmarshal([]byte(mustRun(t, "report", "--format", "json", sout)), &top); err != nil || len(top.Entries) == 0 {
		t.Fatalf("stripped report: %v", err)
	}
	s := asmOf(t, "--list", "^"+strings.ReplaceAll(top.Entries[0].Name, "+", `\+`)+"$", sout).Listings[0]
	if len(s.Code) != 1 || s.Code[0].Note != "" || len(s.Code[0].Instructions) < 5 {
		t.Errorf("stripped code: %+v", s.Code)
	}

	// Rebuilt after recording: frames are not named (object+offset), and
	// the code on disk is not the recorded code, so none is shown.
	gcc(bin, "-O1", "-g")
	var rebuilt flatJSON
	if err := json.Unmarshal([]byte(mustRun(t, "report", "--format", "json", out)), &rebuilt); err != nil || len(rebuilt.Entries) == 0 {
		t.Fatalf("report after rebuilding: %v", err)
	}
	text := mustRun(t, "report", "--list", "^"+strings.ReplaceAll(rebuilt.Entries[0].Name, "+", `\+`)+"$", "--asm", out)
	if !strings.Contains(text, "(no code: ") || !strings.Contains(text, "changed since recording") || strings.Contains(text, "AT&T") {
		t.Errorf("rebuilt binary annotated:\n%s", text)
	}
	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}

	if _, errs, code := run(t, "report", "--asm", out); code != 2 || !strings.Contains(errs, "--list") {
		t.Errorf("--asm without --list: exit %d, %s", code, errs)
	}
}
