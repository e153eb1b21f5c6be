package e2e

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// TestTraceSampleStacks traces calls nested five deep (outer, rec four
// times, work) and checks the CPU samples kept in the trace: the return
// probes replace each traced call's return address on the stack with the
// kernel's trampoline, and culprit gives them back, so every sample in
// work has the whole chain main;outer;rec;rec;rec;rec;work, and every
// sample inside a traced call reaches main without an unknown frame. Built with frame pointers (the kernel's frame-pointer
// chain goes on past the trampolines) and without (the CFI unwinder of
// the stack copy stops at the first one; the stack goes on through the
// calls in flight). Also with many short calls, sampled at 9999 Hz, so
// that many samples fall in the probes' breakpoints: one taken before the
// kernel handled an entry probe's has its IP one byte past the probe, in
// the middle of the function's first instruction, whose unwind rule
// there is not the stack's; its callers must be right too.
func TestTraceSampleStacks(t *testing.T) {
	testutil.NeedRoot(t)
	for _, v := range []struct{ name, flag string }{
		{"fp", "-fno-omit-frame-pointer"},
		{"cfi", "-fomit-frame-pointer"},
	} {
		for _, w := range []struct {
			name  string
			flags []string
			args  []string
		}{
			// 999 Hz, not a build's first trace's default (99 Hz):
			// enough samples in work to check their stacks.
			{"spin", []string{"--cpu-sample", "999"}, []string{"3", "3000000", "40"}},
			{"calls", []string{"--cpu-sample", "9999"}, []string{"3", "300", "20000"}},
		} {
			t.Run(v.name+"/"+w.name, func(t *testing.T) {
				sampleStacks(t, v.flag, w.flags, w.args, w.name == "spin")
			})
		}
	}
}

func sampleStacks(t *testing.T, build string, flags, args []string, spin bool) {
	bin := testutil.C(t, "tracestack", []string{"tracestack.c"}, "-O2", "-g", build)
	out, stdout := traceRun(t, append([]string{"-f", "outer", "-f", "rec", "-f", "work"}, flags...), append([]string{bin}, args...)...)
	want := counts(t, stdout)
	if got, _ := traceReport(t, out).calls("work"); got != want["work"] || got == 0 {
		t.Fatalf("%d work calls traced, the program made %d", got, want["work"])
	}
	folded := mustRun(t, "export", "--format", "folded", "-o", "-", out)
	chain := "main;outer;rec;rec;rec;rec;work"
	inWork, inTraced, single, entryTraps := 0, 0, 0, 0
	for _, fs := range foldedStacks(t, folded) {
		l, n := fs.Line, fs.N
		var user []string
		entryTrap := false
		for _, f := range fs.Frames[1:] { // the first is the command
			if !strings.HasSuffix(f, "_[k]") {
				user = append(user, f)
			}
			entryTrap = entryTrap || f == "asm_exc_int3_[k]"
		}
		if len(user) < 2 {
			// Not unwound past the sampled IP at all (the
			// recorder did not know the mapping yet, say): no
			// return address, so nothing of the trace's to
			// check.
			single += n
			continue
		}
		stack := strings.Join(user, ";")
		traced := false
		for _, f := range user {
			traced = traced || f == "outer" || f == "rec" || f == "work"
		}
		if !traced {
			continue
		}
		inTraced += n
		if entryTrap {
			entryTraps += n
		}
		if strings.Contains(stack, "[unknown]") {
			t.Errorf("%d samples inside a traced call with an unknown frame: %s", n, l)
		}
		if !strings.Contains(stack+";", "main;outer;") {
			t.Errorf("%d samples inside a traced call do not reach main: %s", n, l)
		}
		if strings.HasSuffix(stack, ";work") || strings.Contains(stack, ";work;") {
			inWork += n
			if !strings.Contains(stack, chain) {
				t.Errorf("%d samples in work without the chain %s: %s", n, chain, l)
			}
		}
	}
	// work spins about 40 × 3 ms on the CPU: about 120 samples at
	// 999 Hz, on a busy machine too (the clock counts CPU time).
	if spin && inWork < 10 {
		t.Errorf("%d samples in work (%d inside traced calls, %d not unwound), want most of ~120:\n%.3000s", inWork, inTraced, single, folded)
	}
	// 120,000 calls trap 240,000 times, some 1 µs each: hundreds
	// of samples at 9999 Hz in the breakpoint's kernel code.
	if !spin && entryTraps < 10 {
		t.Errorf("%d samples inside traced calls in the breakpoint's exception (%d inside traced calls, %d not unwound), want hundreds:\n%.3000s", entryTraps, inTraced, single, folded)
	}
}

// TestTraceAttachedSampleStacks traces the nested calls of tracestack in a
// running process (-p) for a while and checks that no CPU sample kept in
// the trace has an unknown frame or the return probes' trampoline
// ([uretprobe]) in place of a caller: the samples end before the probes
// are removed, since a call entered while they are being removed can have
// its return probe armed and no record to give its return address back.
// Every sample inside a traced call, outside the probes' own page, reaches
// main.
func TestTraceAttachedSampleStacks(t *testing.T) {
	testutil.NeedRoot(t)
	for _, v := range []struct{ name, flag string }{
		{"fp", "-fno-omit-frame-pointer"},
		{"cfi", "-fomit-frame-pointer"},
	} {
		t.Run(v.name, func(t *testing.T) {
			bin := testutil.C(t, "tracestack", []string{"tracestack.c"}, "-O2", "-g", v.flag)
			target := exec.Command(bin, "3", "3000000", "1000000")
			if err := target.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { target.Process.Kill(); target.Wait() }()
			out := rec(t)
			// 999 Hz, not the default: that depends on the build's pool,
			// which earlier tests of the same build fill (99 Hz for a
			// build's first trace and once its pool is full).
			mustRun(t, "trace", "--cpu-sample", "999", "-f", "outer", "-f", "rec", "-f", "work", "-p", strconv.Itoa(target.Process.Pid), "--duration", "2s", "-o", out)
			folded := mustRun(t, "export", "--format", "folded", "-o", "-", out)
			inWork := 0
			for _, fs := range foldedStacks(t, folded) {
				l, n := fs.Line, fs.N
				var user []string
				for _, f := range fs.Frames[1:] { // the first is the command
					if !strings.HasSuffix(f, "_[k]") {
						user = append(user, f)
					}
				}
				stack := strings.Join(user, ";")
				if strings.Contains(stack, "[unknown]") || strings.Contains(stack, "[uretprobe]") {
					t.Errorf("%d samples with an unknown or trampoline frame: %s", n, l)
				}
				traced := slices.ContainsFunc(user, func(f string) bool { return f == "outer" || f == "rec" || f == "work" })
				if !traced || strings.HasPrefix(user[len(user)-1], "[uprobes]") {
					continue
				}
				if !strings.Contains(stack+";", "main;outer;") {
					t.Errorf("%d samples inside a traced call do not reach main: %s", n, l)
				}
				if strings.HasSuffix(stack, ";work") {
					inWork += n
				}
			}
			// work spins on the CPU most of the 2 s the target runs:
			// hundreds of samples at 999 Hz on an idle machine. The
			// samples count the target's CPU time, and on a busy
			// machine (load 20 on two cores) it gets a tenth of a core
			// or less, some tens of samples: enough to check.
			if inWork < 10 {
				t.Errorf("%d samples in work, want tens at least:\n%.3000s", inWork, folded)
			}
		})
	}
}

// A process another tool traces with return probes, recorded by culprit
// record -p: the stack holds the kernel's trampoline in the return
// address slot of every traced call in flight, and the kernel's own
// frame-pointer chain has the real addresses in the order of its return
// instances. Samples inside a traced call reach main through outer,
// with no trampoline frame left, but for the few the kernel's walk
// cannot give every address (below). Here the other tool is a culprit
// trace in another process. Every function keeps a frame pointer (-O0:
// GCC's -O2 leaves a leaf such as work without one even with
// -fno-omit-frame-pointer): the kernel's walk then meets every trampoline
// and gives back every return address; from a frameless traced leaf it
// skips the leaf's own, and the outermost one stays a trampoline
// (docs/design.md).
func TestRecordTracedProcess(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "tracestack-o0", []string{"tracestack.c"}, "-O0", "-g", "-fno-omit-frame-pointer")
	target := exec.Command(bin, "3", "3000000", "1000000")
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { target.Process.Kill(); target.Wait() }()
	pid := strconv.Itoa(target.Process.Pid)
	tr := exec.Command(culprit, "trace", "-f", "outer", "-f", "rec", "-f", "work", "-p", pid, "--duration", "60s", "--cpu-sample", "0", "-o", rec(t))
	var trOut strings.Builder
	tr.Stderr = &trOut
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { tr.Process.Signal(os.Interrupt); tr.Wait() }()
	// The probes are armed once the kernel has made the trampoline's page.
	for i := 0; ; i++ {
		if maps, _ := os.ReadFile("/proc/" + pid + "/maps"); strings.Contains(string(maps), "[uprobes]") {
			break
		}
		if i == 300 {
			t.Fatalf("the trace set no probes in 30 s:\n%s", trOut.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	out := rec(t)
	mustRun(t, "record", "-p", pid, "--duration", "2s", "-o", out)
	folded := mustRun(t, "export", "--format", "folded", "-o", "-", out)
	inWork, bad := 0, 0
	for _, fs := range foldedStacks(t, folded) {
		l, n := fs.Line, fs.N
		var user []string
		trap := false
		for _, f := range fs.Frames[1:] { // the first is the command
			if !strings.HasSuffix(f, "_[k]") {
				user = append(user, f)
			} else if strings.HasPrefix(f, "asm_exc_int3") {
				trap = true
			}
		}
		stack := strings.Join(user, ";")
		if !strings.HasSuffix(stack, ";work") || trap {
			// The probes' traps and trampoline: their own frames. In
			// the trap at work's entry the probed push has not run,
			// and the caller's frame may be junk (docs/design.md).
			continue
		}
		inWork += n
		if strings.Contains(stack, "[uretprobe]") || !strings.Contains(stack, ";main;outer;rec;rec;rec;rec;work") {
			bad += n
			t.Logf("%d samples in work do not reach main: %s", n, l)
		}
	}
	if inWork < 50 {
		t.Errorf("%d samples in work, want hundreds:\n%.3000s", inWork, folded)
	}
	// In work's prologue and epilogue (rbp not yet or no longer its
	// frame) the kernel's walk skips a frame, as from a frameless leaf,
	// and gives one return address fewer: main's stays a trampoline.
	// Those are two or three instructions of work's loop.
	if bad*50 > inWork {
		t.Errorf("%d of %d samples in work do not reach main, want at most 2%%", bad, inWork)
	}
}

// A trace attached to threads that call a traced function back to back
// (testdata/targets/attachwindow.c): the first call of each thread after
// the function's breakpoint goes in stays in flight for three seconds,
// sampled. A call whose return probe is set before its entry probe
// (separate links, the returns' first) has the trampoline in place of its
// return address and no record to give it back: its samples would show a
// [uretprobe] frame. The target's 4,096 other functions, traced too, put
// their return probes between the function's two, which makes that
// window a good part of the half second the probes take to set: with
// separate links, three of five runs had such samples (hundreds). Uprobe
// session links set both at once: every sample inside held must reach
// worker, and none show the trampoline. Without frame pointers only: the
// kernel's frame-pointer chain gives back return addresses itself.
func TestTraceAttachWindow(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "attachwindow", []string{"attachwindow.c"}, "-O2", "-g", "-fomit-frame-pointer", "-pthread")
	target := exec.Command(bin, "8", "3")
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { target.Process.Kill(); target.Wait() }()
	time.Sleep(200 * time.Millisecond) // the threads started
	out := rec(t)
	mustRun(t, "trace", "--cpu-sample", "999", "-f", "held", "-f", "pad_*", "-p", strconv.Itoa(target.Process.Pid), "--duration", "4s", "-o", out)
	folded := mustRun(t, "export", "--format", "folded", "-o", "-", out)
	inHeld := 0
	for _, l := range strings.Split(strings.TrimSpace(folded), "\n") {
		i := strings.LastIndexByte(l, ' ')
		n, err := strconv.Atoi(l[i+1:])
		if i < 0 || err != nil {
			t.Fatalf("bad folded line %q", l)
		}
		if strings.Contains(l, "[uretprobe]") {
			t.Errorf("%d samples with a trampoline frame: %s", n, l)
		}
		if strings.Contains(l, ";held;spin") {
			inHeld += n
			if !strings.Contains(l, ";worker;held;spin") {
				t.Errorf("%d samples in held not called from worker: %s", n, l)
			}
		}
	}
	// Eight threads spin in held for most of the 4 s traced: hundreds
	// of samples at 999 Hz on an idle machine, tens on a busy one.
	if inHeld < 10 {
		t.Errorf("%d samples in held, want tens at least:\n%.3000s", inHeld, folded)
	}
}
