package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// TestFocusIgnoreHide checks pprof's three stack filters on PCT's
// hierarchical program, where worker is called by dispatch_1 for 1/3 of the
// time and by dispatch_2 for 2/3.
func TestFocusIgnoreHide(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "hier-O2", []string{"hier.c"}, "-O2", "-g")
	out := rec(t)
	mustRun(t, "record", "-o", out, "--", bin, "10")
	all := flat(t, out)
	if all.Samples < 150 {
		t.Fatalf("only %d samples", all.Samples)
	}
	n := float64(all.Samples)

	f1 := flat(t, "--focus", "dispatch_1", out)
	if s := float64(f1.Samples) / n; s < 0.25 || s > 0.42 || f1.total("dispatch_2") != 0 || f1.total("dispatch_1") != 1 {
		t.Errorf("--focus dispatch_1: %.2f of the samples, dispatch_2 %.2f, dispatch_1 %.2f; want 1/3, 0, 1",
			s, f1.total("dispatch_2"), f1.total("dispatch_1"))
	}
	ig := flat(t, "--ignore", "^dispatch_1$", out)
	if s := float64(ig.Samples) / n; s < 0.58 || s > 0.75 || ig.total("dispatch_1") != 0 {
		t.Errorf("--ignore dispatch_1: %.2f of the samples, dispatch_1 %.2f; want 2/3 and 0", s, ig.total("dispatch_1"))
	}
	if f1.Samples+ig.Samples != all.Samples {
		t.Errorf("focus and ignore of dispatch_1 do not partition the samples: %d + %d != %d", f1.Samples, ig.Samples, all.Samples)
	}
	// Hiding worker charges its time to its callers. Kernel frames are left
	// out of both views (charged to the user code below them): how many
	// samples land in the kernel (interrupts, preemption) depends on the
	// machine's load, and a kernel leaf keeps its self time.
	user := flat(t, "--kernel", "exclude", out)
	h := flat(t, "--kernel", "exclude", "--hide", "^worker$", out)
	selfOf := func(f flatJSON, name string) float64 {
		for _, e := range f.Entries {
			if e.Name == name {
				return e.Self
			}
		}
		return 0
	}
	if h.Samples != all.Samples || h.total("worker") != 0 || selfOf(h, "dispatch_2") < user.total("dispatch_2")-0.02 {
		t.Errorf("--hide worker: %d samples (of %d), worker %.2f, dispatch_2 self %.2f (its total was %.2f)",
			h.Samples, all.Samples, h.total("worker"), selfOf(h, "dispatch_2"), user.total("dispatch_2"))
	}
	// A source line selects too.
	if fl := flat(t, "--focus", `hier\.c:1[34]$`, out); fl.Samples < all.Samples*9/10 {
		t.Errorf("--focus on dispatch_1's and dispatch_2's lines kept %d of %d", fl.Samples, all.Samples)
	}

	folded := mustRun(t, "export", "--format", "folded", "-o", "-", "--focus", "dispatch_2", out)
	if strings.Contains(folded, "dispatch_1") || !strings.Contains(folded, "dispatch_2;worker") {
		t.Errorf("folded stacks focused on dispatch_2:\n%.1500s", folded)
	}

	// A file's base name selects, anchored or not.
	if fb := flat(t, "--focus", `^hier\.c$`, out); fb.Samples < all.Samples*9/10 {
		t.Errorf("--focus ^hier.c$ kept %d of %d", fb.Samples, all.Samples)
	}
	// diff takes them too, for both recordings.
	mustRun(t, "diff", "--focus", "dispatch_1", "--hide", "^worker$", out, out)

	// Bad regular expressions are usage errors naming the flag.
	for _, flag := range []string{"--focus", "--ignore", "--hide"} {
		if _, errs, code := run(t, "report", flag, "(", out); code != 2 || !strings.Contains(errs, flag+` "(": error parsing regexp`) {
			t.Errorf("bad %s: exit %d, %s", flag, code, errs)
		}
	}
	if _, errs, code := run(t, "export", "--format", "folded", "-o", "-", "--ignore", "a[", out); code != 2 || !strings.Contains(errs, "--ignore") {
		t.Errorf("export, bad --ignore: exit %d, %s", code, errs)
	}
	// Nothing left says so and names the busiest functions.
	if _, errs, code := run(t, "report", "--focus", "wrker", out); code == 0 ||
		!strings.Contains(errs, `no sample has a frame matching --focus "wrker"`) || !strings.Contains(errs, "worker (") {
		t.Errorf("--focus matching nothing: exit %d, %s", code, errs)
	}
	// In every command that takes --ignore. Every frame has a name with
	// a character in it; not every stack has main (the CPU's ticks also
	// find the program in the dynamic loader and its _init, before main).
	for _, cmd := range [][]string{{"report"}, {"diff", out}, {"export", "--format", "folded", "-o", filepath.Join(t.TempDir(), "x.folded")}} {
		args := append(append(cmd, "--ignore", "."), out)
		if _, errs, code := run(t, args...); code == 0 || !strings.Contains(errs, `--ignore "."`) || !strings.Contains(errs, "worker (") {
			t.Errorf("%s --ignore matching everything: exit %d, %s", cmd[0], code, errs)
		}
	}

	// latency infers lifetimes from consecutive events: --hide works there,
	// --focus and --ignore are refused with the reason.
	lat := mustRun(t, "latency", "--events", "cpu", "--top", "0", out)
	latHidden := mustRun(t, "latency", "--events", "cpu", "--top", "0", "--hide", "^worker$", out)
	if !strings.Contains(lat, "worker (") || strings.Contains(latHidden, "worker (") || !strings.Contains(latHidden, "dispatch_2 (") {
		t.Errorf("latency --hide ^worker$:\n%.1500s\nwithout:\n%.1500s", latHidden, lat)
	}
	for _, cmd := range [][]string{{"latency", "--focus", "worker", out}, {"contexts", "--base", out, "--buggy", out, "--ignore", "worker"}} {
		if _, errs, code := run(t, cmd...); code != 2 || !strings.Contains(errs, "not --focus or --ignore") {
			t.Errorf("%s: exit %d, %s", strings.Join(cmd, " "), code, errs)
		}
	}
}
