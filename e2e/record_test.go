package e2e

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/loader"
	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/testutil"
)

// PCT's hierarchical test: worker <- dispatch_2 <- main must hold 2/3 of the
// samples and worker <- dispatch_1 <- main 1/3, within 5 points, whatever the
// build and unwinding mode. With -O2, worker is a frameless leaf even with
// -fno-omit-frame-pointer, where perf record -g loses dispatch_N.
func TestHierarchicalProfile(t *testing.T) {
	testutil.NeedRoot(t)
	cases := []struct {
		name  string
		flags []string
		mode  string
	}{
		{"O0-fp", []string{"-O0", "-g", "-fno-omit-frame-pointer"}, "fp"},
		{"O2-fp-frameless-leaf", []string{"-O2", "-g", "-fno-omit-frame-pointer"}, "fp"},
		{"O2-nofp-dwarf", []string{"-O2", "-g", "-fomit-frame-pointer"}, "dwarf"},
		{"O2-nofp-fp-mode", []string{"-O2", "-g", "-fomit-frame-pointer"}, "fp"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bin := testutil.C(t, "hier-"+c.name, []string{"hier.c"}, c.flags...)
			out := rec(t)
			mustRun(t, "record", "--call-graph", c.mode, "-o", out, "--", bin, "30")
			cl := callers(t, 3, out)
			if cl.Samples < 300 {
				t.Fatalf("only %d samples", cl.Samples)
			}
			d2 := cl.share("worker", "dispatch_2", "main")
			d1 := cl.share("worker", "dispatch_1", "main")
			t.Logf("%s: %d samples, worker<-dispatch_2<-main %.1f%%, worker<-dispatch_1<-main %.1f%%", c.name, cl.Samples, 100*d2, 100*d1)
			if math.Abs(d2-2.0/3) > 0.05 || math.Abs(d1-1.0/3) > 0.05 {
				t.Errorf("shares %.3f / %.3f, want 0.667 / 0.333 within 0.05\n%+v", d2, d1, cl.Callers)
			}
		})
	}
}

// In dwarf mode, -O2 code without frame pointers must unwind to main.
func TestDwarfModeReachesMain(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "inline-nofp", []string{"inline.c"}, "-O2", "-g", "-fomit-frame-pointer")
	out := rec(t)
	mustRun(t, "record", "--call-graph", "dwarf", "-o", out, "--", bin)
	f := flat(t, out)
	if f.Samples < 200 {
		t.Fatalf("only %d samples", f.Samples)
	}
	if m := f.total("main"); m < 0.95 {
		t.Errorf("main on %.1f%% of stacks, want ≥ 95%%", 100*m)
	}
}

// Functions that end in a call are jumps at -O2 (tailcall.c: check jumps to
// work, work to spin): their frames are recovered from the call before the
// return address above the gap, in both unwinding modes.
func TestTailCallFrames(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "tailcall", []string{"tailcall.c"}, "-O2", "-g", "-fno-omit-frame-pointer")
	for _, mode := range []string{"fp", "dwarf"} {
		t.Run(mode, func(t *testing.T) {
			out := rec(t)
			mustRun(t, "record", "--call-graph", mode, "-o", out, "--", bin, "2")
			cl := callers(t, 5, out)
			if cl.Samples < 100 {
				t.Fatalf("only %d samples", cl.Samples)
			}
			chain := cl.share("spin", "work", "check", "step", "run")
			t.Logf("%d samples, spin <- work <- check <- step <- run %.1f%%", cl.Samples, 100*chain)
			if chain < 0.8 {
				t.Errorf("spin <- work <- check <- step <- run has %.1f%% of the samples, want at least 80%%\n%+v", 100*chain, cl.Callers)
			}
			for _, r := range cl.Callers {
				if p := strings.Join(r.Path, " <- "); strings.Contains(p, "spin <- step") || strings.Contains(p, "work <- step") {
					t.Errorf("a path without the frames tail calls removed: %s (%.1f%%)", p, 100*r.Share)
				}
			}
		})
	}
}

// Inlined functions are frames of their own; GCC clones carry the source name.
func TestInlinedFramesAndClones(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "inline-O2", []string{"inline.c"}, "-O2", "-g")
	out := rec(t)
	mustRun(t, "record", "--call-graph", "dwarf", "-o", out, "--", bin)
	f := flat(t, out)
	if f.total("square_sum") < 0.2 {
		t.Errorf("inlined square_sum has %.1f%%, want a frame of its own", 100*f.total("square_sum"))
	}
	if f.total("compute") < f.total("square_sum") {
		t.Errorf("compute (%.3f) must include its inlined square_sum (%.3f)", f.total("compute"), f.total("square_sum"))
	}
	if f.total("scale") < 0.2 {
		t.Errorf("scale.constprop.0 not reported as scale: %+v", f.Entries)
	}
	for _, e := range f.Entries {
		if strings.Contains(e.Name, "constprop") {
			t.Errorf("clone suffix leaked into report: %s", e.Name)
		}
	}
	lines := mustRun(t, "report", "--by", "line", out)
	if !strings.Contains(lines, "inline.c:") {
		t.Errorf("--by line shows no inline.c lines:\n%s", lines)
	}
}

// GCC's partial inlining splits fill and walk (partial.c) into a head,
// inlined into their callers, and the rest, fill.part.0 and walk.part.0,
// which the heads call, or which GCC inlines back into inlined copies of
// walk's head. Each call of a split function is one frame of it: no
// fill <- fill, and walk's recursion to depth 3 is three walk frames deep,
// each depth spinning as long.
func TestPartialInliningOneFrame(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "partial", []string{"partial.c"}, "-O2", "-g")
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	syms, err := f.Symbols()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	parts := map[string]bool{}
	for _, s := range syms {
		if i := strings.Index(s.Name, ".part."); i > 0 {
			parts[s.Name[:i]] = true
		}
	}
	if !parts["fill"] || !parts["walk"] {
		t.Fatalf("gcc -O2 split no fill.part.N or walk.part.N (%v): the test needs partial inlining", parts)
	}
	for _, mode := range []string{"fp", "dwarf"} {
		t.Run(mode, func(t *testing.T) {
			out := rec(t)
			mustRun(t, "record", "--call-graph", mode, "-o", out, "--", bin, "2000")
			cl := callers(t, 8, out)
			if cl.Samples < 300 {
				t.Fatalf("only %d samples", cl.Samples)
			}
			var fill, fs, fm, walks float64
			depth := map[int]float64{}
			for _, r := range cl.Callers {
				p := strings.Join(r.Path, " <- ")
				if strings.Contains(p, "fill <- fill") {
					t.Errorf("the outlined part of fill reads as a call of fill: %s (%.1f%%)", p, 100*r.Share)
				}
				if len(r.Path) > 0 && r.Path[0] == "fill" {
					fill += r.Share
					switch {
					case strings.HasPrefix(p, "fill <- step <- main"):
						fs += r.Share
					case strings.HasPrefix(p, "fill <- main"):
						fm += r.Share
					}
				}
				if len(r.Path) > 0 && r.Path[0] == "walk" {
					n := 0
					for n < len(r.Path) && r.Path[n] == "walk" {
						n++
					}
					if n < len(r.Path) && r.Path[n] != "main" {
						t.Errorf("walk's recursion ends in %s, not main: %s", r.Path[n], p)
					}
					depth[n] += r.Share
					walks += r.Share
				}
			}
			t.Logf("%d samples: fill %.1f%% (<- step <- main %.1f%%, <- main %.1f%%), walk %.1f%% by depth %v",
				cl.Samples, 100*fill, 100*fs, 100*fm, 100*walks, depth)
			// step and main call fill as often; loose bounds for the
			// sampling noise of a few hundred samples.
			if fs < 0.2 || fm < 0.2 || fs+fm < fill-0.05 {
				t.Errorf("fill <- step <- main %.3f and fill <- main %.3f of fill's %.3f\n%+v", fs, fm, fill, cl.Callers)
			}
			if walks < 0.1 {
				t.Fatalf("walk has %.1f%% of the samples\n%+v", 100*walks, cl.Callers)
			}
			for n, s := range depth {
				if n < 1 || n > 3 {
					t.Errorf("walk %d frames deep on %.1f%% of the samples; it recurses 3 deep", n, 100*s)
				}
			}
			for n := 1; n <= 3; n++ {
				if depth[n] < walks/6 {
					t.Errorf("walk %d deep has %.3f of walk's %.3f, want about a third", n, depth[n], walks)
				}
			}
		})
	}
}

func TestThreadsAppear(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "threads", []string{"threads.c"}, "-O2", "-g", "-pthread")
	out := rec(t)
	mustRun(t, "record", "-o", out, "--", bin, "150000000")
	f := flat(t, out)
	for _, fn := range []string{"spin_a", "spin_b", "spin_c"} {
		if f.total(fn) < 0.15 {
			t.Errorf("%s has %.1f%% of samples, want each thread visible", fn, 100*f.total(fn))
		}
	}
}

// A forked child and the program it execs are sampled, and the exit code of
// the command is culprit's.
func TestForkExecAndExitCode(t *testing.T) {
	testutil.NeedRoot(t)
	fe := testutil.C(t, "forkexec", []string{"forkexec.c"}, "-O2", "-g")
	hier := testutil.C(t, "hier-O0", []string{"hier.c"}, "-O0", "-g")
	out := rec(t)
	// CPU time: parent_spin and child_spin about 45 ms each, then hier's
	// worker about 120 ms (4 rounds), against a few ms of exec and start-up:
	// the shares below hold with a margin of half or more whatever the load.
	_, errs, code := run(t, "record", "-o", out, "--", fe, hier, "4", "7")
	if code != 7 {
		t.Fatalf("exit code %d, want the command's 7\n%s", code, errs)
	}
	f := flat(t, out)
	for _, fn := range []string{"parent_spin", "child_spin", "worker"} {
		if f.total(fn) < 0.05 {
			t.Errorf("%s has %.1f%% of samples, want the forked and exec'd processes visible\n%+v", fn, 100*f.total(fn), f.Entries)
		}
	}

	// The tree's processes, and the samples of some of them. A process is
	// named by its comm (the first 15 bytes of the program's name) at each
	// sample: the child is forkexec until it execs hier.
	comm := func(path string) string { b := filepath.Base(path); return b[:min(len(b), 15)] }
	feComm, hierComm := comm(fe), comm(hier)
	procs := flat(t, "--by", "process", out)
	pids := map[string][]string{}
	sum := 0
	for _, e := range procs.Entries {
		sum += e.SelfSamples
		name, pid, _ := strings.Cut(strings.TrimSuffix(e.Name, "]"), "[")
		pids[name] = append(pids[name], pid)
	}
	if len(pids[feComm]) != 2 || len(pids[hierComm]) != 1 || len(procs.Entries) != 3 || sum != procs.Samples {
		t.Fatalf("--by process: want %s[parent], %s[child] and %s[child] covering all %d samples, got %+v", feComm, feComm, hierComm, procs.Samples, procs.Entries)
	}
	child := pids[hierComm][0]
	parent := pids[feComm][0]
	if parent == child {
		parent = pids[feComm][1]
	}
	if !slices.Contains(pids[feComm], child) {
		t.Fatalf("the child %s is not also %s before its exec: %+v", child, feComm, procs.Entries)
	}
	only := flat(t, "--pid", parent, out)
	if only.total("parent_spin") < 0.6 || only.total("child_spin") > 0 || only.total("worker") > 0 {
		t.Errorf("--pid %s: want parent_spin only, got %+v", parent, only.Entries)
	}
	kid := flat(t, "--pid", child, out)
	if kid.total("child_spin") < 0.1 || kid.total("worker") < 0.4 || kid.total("parent_spin") > 0 {
		t.Errorf("--pid %s: want child_spin and worker, got %+v", child, kid.Entries)
	}
	named := flat(t, "--comm", hierComm, out)
	if named.total("worker") < 0.9 || named.total("child_spin") > 0 || named.total("parent_spin") > 0 {
		t.Errorf("--comm %s: want the samples after the exec, got %+v", hierComm, named.Entries)
	}
	before := flat(t, "--comm", feComm, out)
	if before.total("parent_spin") < 0.1 || before.total("child_spin") < 0.1 || before.total("worker") > 0 {
		t.Errorf("--comm %s: want the samples before the exec, got %+v", feComm, before.Entries)
	}
	if named.Samples+before.Samples != f.Samples || only.Samples+kid.Samples != f.Samples {
		t.Errorf("selections do not add up to the %d samples: --comm %d + %d, --pid %d + %d", f.Samples, named.Samples, before.Samples, only.Samples, kid.Samples)
	}
	if _, errs, code := run(t, "report", "--pid", "4000000", out); code != 1 || !strings.Contains(errs, feComm+"["+parent+"]") {
		t.Errorf("--pid of no sampled process: exit %d, want 1 and the processes listed\n%s", code, errs)
	}
	if _, errs, code := run(t, "report", "--tid", "x", out); code != 2 || !strings.Contains(errs, "--tid") {
		t.Errorf("--tid x: exit %d, want 2 and a usage error\n%s", code, errs)
	}
	folded := mustRun(t, "export", "--format", "folded", "--pid", parent, "-o", "-", out)
	if !strings.Contains(folded, "parent_spin") || strings.Contains(folded, "worker") {
		t.Errorf("export --pid %s: want the parent's stacks only\n%s", parent, folded)
	}
}

func TestDlopenPlugin(t *testing.T) {
	testutil.NeedRoot(t)
	plugin := testutil.C(t, "plugin.so", []string{"plugin.c"}, "-O2", "-g", "-shared", "-fPIC")
	main := testutil.C(t, "dlmain", []string{"dlmain.c"}, "-O2", "-g", "-ldl")
	out := rec(t)
	mustRun(t, "record", "--call-graph", "dwarf", "-o", out, "--", main, plugin)
	f := flat(t, out)
	if f.total("plugin_inner") < 0.5 || f.total("plugin_work") < 0.5 {
		t.Errorf("dlopen'ed plug-in not symbolized: %+v", f.Entries)
	}
	objs := mustRun(t, "report", "--by", "object", out)
	if !strings.Contains(objs, "plugin.so") {
		t.Errorf("--by object does not show the plug-in:\n%s", objs)
	}
	// The plug-in carries its own DWARF: --values samples its variables
	// too (dlmain passes n = 300000000).
	vals := rec(t)
	mustRun(t, "record", "--values", "-o", vals, "--", main, plugin)
	var r struct {
		Samples int
		Exprs   []struct {
			Expr, Function string
			Count, Missing int
			Min, Max       float64
		}
	}
	if err := json.Unmarshal([]byte(mustRun(t, "report", "--exprs", "--format", "json", vals)), &r); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range r.Exprs {
		if e.Function == "plugin_inner" && e.Expr == "n" {
			found = true
			if e.Count < r.Samples*8/10 || e.Missing != 0 || e.Min != 300000000 || e.Max != 300000000 {
				t.Errorf("plugin_inner's n: %d of %d samples, %d missing, %g..%g; want most, none missing, 300000000", e.Count, r.Samples, e.Missing, e.Min, e.Max)
			}
		}
	}
	if !found {
		t.Errorf("record --values sampled no variable of the plug-in:\n%s", mustRun(t, "report", "--exprs", vals))
	}
}

func TestGoProgram(t *testing.T) {
	testutil.NeedRoot(t)
	for _, flags := range [][]string{nil, {"-ldflags=-s -w"}} {
		bin := testutil.Go(t, "gospin", flags...)
		out := rec(t)
		mustRun(t, "record", "-o", out, "--", bin, "200000000")
		f := flat(t, out)
		if f.total("main.spinAlpha") < 0.2 || f.total("main.spinBeta") < 0.2 {
			t.Errorf("Go functions missing (flags %v): %+v", flags, f.Entries)
		}
		// spinBeta runs under bigFrame's 4 KiB frame, beyond fp mode's
		// copy: Go keeps frame pointers, so its callers are not lost.
		if flags == nil {
			if f.total("main.bigFrame") < 0.2 || len(f.Warnings) > 0 {
				t.Errorf("bigFrame total %.2f, warnings %q", f.total("main.bigFrame"), f.Warnings)
			}
			if n := stackBytes(t, out); n != 4096 {
				t.Errorf("stack copy %d bytes for a Go program, want 4096", n)
			}
		}
	}
}

func TestKernelFrames(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "syscalls", []string{"syscalls.c"}, "-O2", "-g")
	out := rec(t)
	mustRun(t, "record", "-o", out, "--", bin, "1500000")
	all := flat(t, out)
	kernel := 0.0
	for _, e := range all.Entries {
		if e.Object == "[kernel.kallsyms]" {
			kernel += e.Self
		}
	}
	if kernel < 0.3 {
		t.Errorf("kernel frames hold %.1f%% self, want most of a write(2) loop", 100*kernel)
	}
	if all.total("write_many") < 0.9 {
		t.Errorf("write_many total %.2f: kernel samples must keep their user callers", all.total("write_many"))
	}
	ex := flat(t, "--kernel", "exclude", out)
	for _, e := range ex.Entries {
		if e.Object == "[kernel.kallsyms]" {
			t.Errorf("--kernel exclude shows kernel frame %s", e.Name)
		}
	}
	only := flat(t, "--kernel", "only", out)
	for _, e := range only.Entries {
		if e.Object != "[kernel.kallsyms]" && !strings.HasPrefix(e.Object, "[") {
			t.Errorf("--kernel only shows user frame %s (%s)", e.Name, e.Object)
		}
	}
}

// Attach twice to a running process, once for a wall-clock --duration and
// once until Ctrl-C; it keeps running and exits with its code.
func TestAttachDetach(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "sleeper", []string{"sleeper.c"}, "-O2", "-g")
	target := exec.Command(bin, "4", "3") // 4 s of CPU time
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	defer target.Process.Kill()
	pid := target.Process.Pid
	waitCPU(t, pid, 50*time.Millisecond)

	// --duration: whatever CPU time 700 ms of a busy machine give the
	// target, sampled at 999 Hz and no faster.
	dir := "/proc/" + strconv.Itoa(pid)
	c0, _ := cpuTime(dir)
	out := rec(t)
	mustRun(t, "record", "-p", strconv.Itoa(pid), "--duration", "700ms", "-o", out)
	c1, _ := cpuTime(dir)
	f := flat(t, out)
	if f.Samples == 0 || f.Samples > maxSamples(c1-c0+20*time.Millisecond) || f.total("busy") < 0.5 {
		t.Errorf("attach for 700ms: %d samples in %v of the target's CPU time, busy %.2f", f.Samples, c1-c0, f.total("busy"))
	}
	// Until Ctrl-C, sent once the recording holds 200 samples: all of them
	// are in it when culprit ends.
	out = rec(t)
	attachFor(t, pid, out, 200)
	f = flat(t, out)
	if f.Samples < 200 || f.total("busy") < 0.5 {
		t.Errorf("attach until 200 samples: %d samples, busy %.2f", f.Samples, f.total("busy"))
	}
	err := target.Wait()
	if target.ProcessState.ExitCode() != 3 {
		t.Errorf("target exit: %v (code %d), want it to run on and exit with 3", err, target.ProcessState.ExitCode())
	}
}

// A recording is readable while being written and after the recorder is
// killed with SIGKILL.
func TestReadWhileWritingAndAfterKill(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "sleeper", []string{"sleeper.c"}, "-O2", "-g")
	out := rec(t)
	cmd := exec.Command(culprit, "record", "-o", out, "--", bin, "3")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Reports while it is written: 100 samples, then more.
	var first, second flatJSON
	waitFor(t, "a report of the recording in progress with 100 samples", func() bool {
		f, n := samplesSoFar(t, out)
		first = f
		return n >= 100
	})
	waitFor(t, "a later report with more samples", func() bool {
		f, n := samplesSoFar(t, out)
		second = f
		return n > first.Samples
	})
	cmd.Process.Signal(os.Kill)
	cmd.Wait()
	after := flat(t, out)
	if after.Samples < second.Samples {
		t.Errorf("after SIGKILL of the recorder: %d samples, had %d", after.Samples, second.Samples)
	}
	if after.total("busy") < 0.5 {
		t.Errorf("busy %.2f after kill", after.total("busy"))
	}
}

// A SIGTERM or SIGINT sent to culprit alone is passed on to the command;
// its death by that signal is culprit's exit code, and the recording ends
// complete. culprit runs in a session of its own, without a controlling
// terminal, as under a script or a supervisor: a SIGINT there cannot be a
// terminal's Ctrl-C, which would have reached the command by itself.
func TestSignalPassedToCommand(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "sleeper", []string{"sleeper.c"}, "-O2", "-g")
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(unix.SignalName(sig), func(t *testing.T) {
			out := rec(t)
			cmd := exec.Command(culprit, "record", "-o", out, "--", bin, "10")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			var errb bytes.Buffer
			cmd.Stderr = &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			waitFor(t, "100 samples in the recording", func() bool { _, n := samplesSoFar(t, out); return n >= 100 })
			// The command spins for 10 s of CPU time and exits 0 unless the
			// signal reaches it: the exit code says it did.
			cmd.Process.Signal(sig)
			err := cmd.Wait()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 128+int(sig) {
				t.Fatalf("culprit after %v: %v, want exit code %d\n%s", sig, err, 128+int(sig), errb.String())
			}
			_, stderr, code := run(t, "report", out)
			if code != 0 || strings.Contains(stderr, "no end record") {
				t.Errorf("report after %v: exit %d\n%s", sig, code, stderr)
			}
			// The samples seen before the signal, and more.
			if f := flat(t, out); f.Samples < 100 || f.total("busy") < 0.5 {
				t.Errorf("%d samples, busy %.2f", f.Samples, f.total("busy"))
			}
		})
	}
}

// glibc's vfork keeps its return address in rdi across the system call,
// where the parent (creating the child, waiting for it) and the child
// (leaving the kernel) spend their samples of it: the unwind takes the
// caller from rdi, in fp mode (which samples rdi for it) as in dwarf mode,
// so the samples in vfork have spawn as vfork's caller, not main (the
// frame-pointer chain skips spawn).
func TestVforkCaller(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "vforker", []string{"vforker.c"}, "-O2", "-g", "-fno-omit-frame-pointer")
	for _, mode := range []string{"fp", "dwarf"} {
		t.Run(mode, func(t *testing.T) {
			out := rec(t)
			mustRun(t, "record", "--call-graph", mode, "-o", out, "--", bin, "20000")
			folded := mustRun(t, "export", "--format", "folded", "-o", "-", out)
			in, called := 0, 0
			var wrong []string
			for _, fs := range foldedStacks(t, folded) {
				i := slices.IndexFunc(fs.Frames, func(f string) bool { return f == "__libc_vfork" || f == "__vfork" || f == "vfork" })
				if i < 0 {
					continue
				}
				in += fs.N
				if i > 0 && fs.Frames[i-1] == "spawn" {
					called += fs.N
				} else if len(wrong) < 3 {
					wrong = append(wrong, fs.Line)
				}
			}
			if in < 20 || called < in*95/100 {
				t.Errorf("%d of %d samples in vfork have spawn as its caller, want ≥ 95%% of 20 or more; others: %q", called, in, wrong)
			}
			t.Logf("%d of %d samples in vfork have spawn as its caller", called, in)
		})
	}
}

// stackBytes is the stack copy a recording was made with.
func stackBytes(t *testing.T, out string) int {
	n, _ := stackCopy(t, out)
	return n
}

// stackCopy is a recording's stack copy size and how it was sized
// (recording.ExtraStackCopy).
// callTree is a recording's call tree (report --tree), every node.
type callTree []callNode

type callNode struct {
	Name     string     `json:"name"`
	Kernel   bool       `json:"kernel"`
	Samples  int        `json:"total_samples"`
	Children []callNode `json:"children"`
}

func tree(t *testing.T, out string) callTree {
	t.Helper()
	var tr struct {
		Tree callTree `json:"tree"`
	}
	js := mustRun(t, "report", "--tree", "--min-share", "0", "--format", "json", out)
	if err := json.Unmarshal([]byte(js), &tr); err != nil {
		t.Fatalf("tree JSON: %v\n%s", err, js)
	}
	return tr.Tree
}

// oneNode counts the samples under the largest of name's nodes, and under
// all of them.
func (tr callTree) oneNode(name string) (one, all int) {
	var walk func([]callNode)
	walk = func(ns []callNode) {
		for _, n := range ns {
			if n.Name == name {
				one, all = max(one, n.Samples), all+n.Samples
				continue
			}
			walk(n.Children)
		}
	}
	walk(tr)
	return one, all
}

// under counts the samples through name whose stacks pass one of the
// entries on the way out, and those whose stacks do not.
func (tr callTree) under(name string, entries ...string) (in, out int) {
	var walk func([]callNode, bool)
	walk = func(ns []callNode, entered bool) {
		for _, n := range ns {
			switch {
			case n.Name == name && entered:
				in += n.Samples
			case n.Name == name:
				out += n.Samples
			default:
				walk(n.Children, entered || slices.Contains(entries, n.Name))
			}
		}
	}
	walk(tr, false)
	return in, out
}

func stackCopy(t *testing.T, out string) (int, string) {
	t.Helper()
	p, err := loader.Load([]string{out}, loader.Options{})
	if err != nil || len(p.Metas) == 0 {
		t.Fatalf("loading %s: %v", out, err)
	}
	return p.Metas[0].StackBytes, p.Metas[0].Extra[recording.ExtraStackCopy]
}

// userChain says who walked a recording's CPU samples' user chains
// (recording.ExtraUserChain).
func userChain(t *testing.T, out string) string {
	t.Helper()
	p, err := loader.Load([]string{out}, loader.Options{})
	if err != nil || len(p.Metas) == 0 {
		t.Fatalf("loading %s: %v", out, err)
	}
	return p.Metas[0].Extra[recording.ExtraUserChain]
}

// In fp mode a libc-heavy program (qsort and snprintf, whose libc frames
// keep no frame pointer) has complete stacks by default, built with frame
// pointers or without: each thread's copy ends where its earlier unwinds
// needed it to (the BPF sampling program makes it, 8 KiB until then);
// with --stack-size, or with values (which read caller frames from the
// same copy), perf copies the size given or 8 KiB, which holds its whole
// stack: the stacks reach main either way. Every sample is then in main,
// the dynamic loader's start or the exit (3000 rounds are some 600
// samples; the loader's start and the exit take about a millisecond,
// more under load), or lost callers and is counted so (below). Without
// frame pointers the stacks through main have one root, whoever copies
// them (with frame pointers, where the chain out of main ends depends on
// what libc's start code left in rbp): a sized copy that ended short of
// where the full copy's unwinds did would give the program's samples two,
// splitting main in trees and flame graphs. Every sample in the
// comparator qsort calls, or in the function calling snprintf, reaches
// main, with either copy. A 1 KiB
// copy reaches through libc only so far: samples in snprintf lose callers,
// and the recording says so and how to get them; dwarf mode reaches main.
func TestFPModeLibc(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "libcalls", []string{"libcalls.c"}, "-O2", "-g", "-fno-omit-frame-pointer")
	nofp := testutil.C(t, "libcalls-nofp", []string{"libcalls.c"}, "-O2", "-g", "-fomit-frame-pointer")
	out := rec(t)
	// Value sampling (which reads caller frames from the same copy) keeps
	// the stacks complete too.
	for _, c := range []struct {
		bin   string
		stack int
		flags []string
	}{{bin, 8192, nil}, {nofp, 8192, nil}, {nofp, 8192, []string{"--stack-size", "8192"}}, {nofp, 8192, []string{"--values"}}, {bin, 8192, []string{"--values"}}} {
		_, stderr, code := run(t, append(append([]string{"record", "-o", out}, c.flags...), "--", c.bin, "3000")...)
		if code != 0 {
			t.Fatalf("record: exit %d\n%s", code, stderr)
		}
		n, how := stackCopy(t, out)
		if n != c.stack {
			t.Errorf("%s %v: stack copy %d bytes, want %d", filepath.Base(c.bin), c.flags, n, c.stack)
		}
		if want := map[bool]string{true: recording.StackCopyThreadTop}[c.flags == nil]; how != want {
			t.Errorf("%s %v: stack copy sized %q, want %q", filepath.Base(c.bin), c.flags, how, want)
		}
		// The sampling program that copies the stack walks the user
		// chain too (the events leave it out).
		if want := map[bool]string{true: recording.UserChainBPF}[c.flags == nil]; userChain(t, out) != want {
			t.Errorf("%s %v: user chain walked by %q, want %q", filepath.Base(c.bin), c.flags, userChain(t, out), want)
		}
		f, tr, cut := flat(t, out), tree(t, out), truncated(t, out)
		if f.Samples < 300 {
			t.Errorf("%s %v: %d samples, want 300 or more", filepath.Base(c.bin), c.flags, f.Samples)
		}
		// The dynamic loader's start: _dl_start, or, where the chain
		// holds no frame of it (one CI sample: _start >
		// _dl_sysdep_start > dl_main > _dl_map_object_deps),
		// _dl_sysdep_start, which it calls to load the libraries. The C
		// library's start before it calls main is the program's start
		// too (samples under load: _start > __libc_start_main_impl >
		// __cxa_atexit in a page fault, or > _dl_runtime_resolve
		// binding a symbol); main itself runs under it, so a stack
		// cut short of main has neither.
		if n, paths := tr.outside("main", "_dl_start", "_dl_sysdep_start", "_dl_start_user", "__libc_start_main_impl", "__libc_start_main", "exit"); n > cut {
			t.Errorf("%s %v: %d of %d samples outside main, the loader's start and the exit (%s); %d lost callers", filepath.Base(c.bin), c.flags, n, f.Samples, paths, cut)
		}
		if one, all := tr.oneNode("main"); c.bin == nofp && one < all*99/100 {
			t.Errorf("%s %v: main's stacks have several roots: %d of %d samples under its largest node", filepath.Base(c.bin), c.flags, one, all)
		}
		tr.oneRoot(t, fmt.Sprintf("%s %v", filepath.Base(c.bin), c.flags), cut)
		for _, fn := range []string{"cmp", "formatting"} {
			if in, out := tr.under(fn, "main"); in == 0 || out > 0 {
				t.Errorf("%s %v: %d samples through %s reach main, %d do not", filepath.Base(c.bin), c.flags, in, fn, out)
			}
		}
		if strings.Contains(stderr, "lost callers") || strings.Contains(stderr, "lost outer callers") {
			t.Errorf("%s %v: warns of callers lost:\n%s", filepath.Base(c.bin), c.flags, stderr)
		}
	}

	_, stderr, code := run(t, "record", "--stack-size", "1024", "-o", out, "--", bin, "1000")
	if code != 0 {
		t.Fatalf("record: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "samples lost callers") || !strings.Contains(stderr, "--call-graph dwarf") {
		t.Errorf("--stack-size 1024: no warning about callers cut in libc:\n%s", stderr)
	}
	t.Logf("--stack-size 1024: main on %.1f%% of stacks; %s", 100*flat(t, out).total("main"), strings.TrimSpace(stderr))
	// The report says it too, in text (on stderr) and in JSON.
	if _, stderr, _ := run(t, "report", out); !strings.Contains(stderr, "samples lost callers") {
		t.Errorf("report does not warn about cut stacks:\n%s", stderr)
	}
	if f := flat(t, out); !slices.ContainsFunc(f.Warnings, func(w string) bool { return strings.Contains(w, "--call-graph dwarf") }) {
		t.Errorf("JSON warnings %q do not name dwarf mode", f.Warnings)
	}
	_, stderr, code = run(t, "record", "--call-graph", "dwarf", "-o", out, "--", bin, "1000")
	if code != 0 || strings.Contains(stderr, "lost callers") || strings.Contains(stderr, "incomplete") {
		t.Errorf("dwarf mode: exit %d, warns:\n%s", code, stderr)
	}
	f := flat(t, out)
	if m := f.total("main"); m < 0.95 {
		t.Errorf("dwarf mode: main on %.1f%% of stacks, want ≥ 95%%", 100*m)
	}
	if len(f.Warnings) > 0 {
		t.Errorf("dwarf mode: report warns %q", f.Warnings)
	}
	tree(t, out).oneRoot(t, "dwarf mode", truncated(t, out))
}

// A program whose time is the dynamic loader's lazy binding (lazymain
// calls each of 1000 library functions once through its PLT, and execs
// itself again, 300 times): the resolver keeps no frame pointer and, once
// it has realigned rsp for the CPU's extended state, keeps its CFA in
// rbx. In fp mode every sample in it reaches the PLT's caller (call_all,
// again; before main, the loader's start binding the C library's calls,
// or the C library's start, __libc_start_main, binding its own calls
// into the loader, one run in ten or so):
// the kernel's frame-pointer chain skips that caller, and the unwind of
// the copy needs rbx, which fp mode samples. A sample that still lost it
// must be marked as having lost callers.
func TestFPModeLazyBinding(t *testing.T) {
	testutil.NeedRoot(t)
	lib := testutil.C(t, "liblazylib.so", []string{"lazylib.c"}, "-O2", "-g", "-shared", "-fPIC")
	bin := testutil.C(t, "lazymain", []string{"lazymain.c"}, "-O2", "-g", "-fno-omit-frame-pointer", "-Wl,-z,lazy",
		"-Wl,--no-as-needed", lib, "-Wl,-rpath,"+filepath.Dir(lib))
	t.Setenv("LD_BIND_NOW", "") // empty: lazy binding
	out := rec(t)
	if _, stderr, code := run(t, "record", "-o", out, "--", bin, "300"); code != 0 {
		t.Fatalf("record: exit %d\n%s", code, stderr)
	}
	// The samples marked as having lost callers, by thread and time.
	type key struct {
		tid  uint32
		time uint64
	}
	cut := map[key]bool{}
	eachRecord(t, out, func(r recording.Record) {
		if s, ok := r.(*recording.Sample); ok && s.Truncated {
			cut[key{s.TID, s.Time}] = true
		}
	})
	p, err := loader.Load([]string{out}, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	in, lost, marked := 0, 0, 0
	for _, s := range p.Samples {
		resolver, caller := false, false
		for _, fi := range p.Stacks[s.Stack] {
			switch f := p.Frames[fi].Function; {
			case strings.HasPrefix(f, "_dl_runtime_resolve"):
				resolver = true
			case resolver && (f == "call_all" || f == "again" || f == "_dl_start" || f == "__libc_start_main_impl" || f == "__libc_start_main"):
				caller = true
			}
		}
		n := 1 + int(s.More)
		switch {
		case !resolver:
		case caller:
			in += n
		case cut[key{s.TID, s.Time}]:
			marked += n
		default:
			lost += n
		}
	}
	if lost > 0 {
		t.Errorf("%d samples in the lazy-binding resolver lost its caller unmarked, %d reach it, %d are marked as having lost callers", lost, in, marked)
	}
	// 300 runs of 1000 bindings are some 0.2 s of CPU time here, tens of
	// samples in the resolver on a machine three times faster.
	if in < 10 {
		t.Errorf("only %d samples in the lazy-binding resolver reach its caller (_dl_runtime_resolve_*: the dynamic loader's symbols come with libc6-dbg)", in)
	}
	t.Logf("%d samples in the resolver reach its caller; %d lost it, marked so", in, marked)
}

// oneRoot checks that every stack of a single-threaded program ends at
// its thread's outermost frame, whichever way its unwind ended: the
// program's _start, or before main the dynamic loader's entry code
// (_start, and _dl_start_user after its first call returns) — never a
// bare main or a frame in between. The exceptions are the samples the
// recorder marked as having lost callers (cut, from the recording). A
// sample in the dynamic loader's lazy-binding resolver (its frame holds
// the CPU's extended state, its CFA is rbx-based) is no exception: fp
// mode samples rbx, and its unwind reaches the outermost frame.
func (tr callTree) oneRoot(t *testing.T, what string, cut int) {
	t.Helper()
	var roots []string
	elsewhere := 0
	for _, n := range tr {
		roots = append(roots, fmt.Sprintf("%s (%d samples)", n.Name, n.Samples))
		if n.Name != "_start" && n.Name != "_dl_start_user" {
			elsewhere += n.Samples
		}
	}
	if elsewhere > cut {
		t.Errorf("%s: stacks of one thread do not all end at its outermost frame: roots %s; %d samples lost callers", what, strings.Join(roots, ", "), cut)
	}
}

// truncated counts the samples of the recording at path that the recorder
// marked as having lost callers.
func truncated(t *testing.T, path string) int {
	t.Helper()
	n := 0
	eachRecord(t, path, func(r recording.Record) {
		if s, ok := r.(*recording.Sample); ok && s.Truncated {
			n++
		}
	})
	return n
}

// outside counts the samples whose stacks pass through none of names,
// leaving out those whose user stack is _start alone: the process's first
// instructions (the dynamic loader's entry) are the loader's start too.
// It also says the first few such stacks.
func (tr callTree) outside(names ...string) (int, string) {
	n := 0
	var paths []string
	var walk func(ns []callNode, start bool, path []string)
	walk = func(ns []callNode, start bool, path []string) {
		for _, c := range ns {
			if slices.Contains(names, c.Name) || start && c.Kernel {
				continue
			}
			p := append(slices.Clip(path), c.Name)
			self := c.Samples
			for _, k := range c.Children {
				self -= k.Samples
			}
			if n += self; self > 0 && len(paths) < 5 {
				paths = append(paths, strings.Join(p, " > "))
			}
			walk(c.Children, false, p)
		}
	}
	for _, r := range tr {
		if r.Name == "_start" {
			walk(r.Children, true, []string{r.Name})
		} else {
			walk([]callNode{r}, false, nil)
		}
	}
	return n, strings.Join(paths, "; ")
}

// Threads of a libc-heavy program without frame pointers, each a few
// frames deep (libthreads.c): an 8 KiB copy holds every stack whole, from
// libc's frames to _start or clone, and so does the copy sized per thread
// by default, from a thread's first samples to its last: every stack
// through main reaches _start, every one through a thread's function
// reaches start_thread, and each has one node in the call tree; every
// sample in the threads' work reaches main or the thread's function, and
// every other sample is in the dynamic loader's start (_dl_start,
// _dl_start_user), libc's start before main (__libc_start_main's own
// calls, such as registering the exit handlers), the program's exit, a
// thread's creation (clone3) or
// end (start_thread after the thread's function, do_exit), or lost
// callers. How many fall there depends on the machine (page faults of a
// virtual machine under load make the loader's start slow), not on the
// recorder.
func TestFPModeThreads(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "libthreads-nofp", []string{"libthreads.c"}, "-O2", "-g", "-fomit-frame-pointer", "-pthread")
	out := rec(t)
	for _, sized := range []bool{true, false} {
		args := []string{"record", "-o", out}
		if !sized {
			args = append(args, "--stack-size", "8192")
		}
		_, stderr, code := run(t, append(args, "--", bin, "4000")...)
		if code != 0 {
			t.Fatalf("record: exit %d\n%s", code, stderr)
		}
		if _, how := stackCopy(t, out); how != map[bool]string{true: recording.StackCopyThreadTop}[sized] {
			t.Errorf("sized %v: stack copy %q", sized, how)
		}
		if strings.Contains(stderr, "lost") {
			t.Errorf("sized %v: warns:\n%s", sized, stderr)
		}
		f, tr := flat(t, out), tree(t, out)
		for _, c := range [][2]string{{"main", "_start"}, {"thread", "start_thread"}} {
			if in, out := tr.under(c[0], c[1]); in < f.Samples/10 || out > 0 {
				t.Errorf("sized %v: %d samples through %s reach %s, %d do not", sized, in, c[0], c[1], out)
			}
			if one, all := tr.oneNode(c[0]); one < all*99/100 {
				t.Errorf("sized %v: %s's stacks have several roots: %d of %d samples under its largest node", sized, c[0], one, all)
			}
		}
		if in, out := tr.under("work", "main", "thread"); in == 0 || out > 0 {
			t.Errorf("sized %v: %d samples through work reach main or thread, %d do not", sized, in, out)
		}
		if f.Samples < 300 {
			t.Errorf("sized %v: %d samples, want 300 or more", sized, f.Samples)
		}
		n, paths := tr.outside("main", "thread", "_dl_start", "_dl_start_user", "__libc_start_main_impl", "__libc_start_main", "exit", "clone3", "start_thread", "do_exit")
		if cut := truncated(t, out); n > cut {
			t.Errorf("sized %v: %d of %d samples outside main, the threads, the loader's and libc's start, exits and thread creation (%s); %d lost callers",
				sized, n, f.Samples, paths, cut)
		}
	}
}

// A C program built with frame pointers whose time is in a library built
// without them (bigframe.c, bigframelib.c: rbp holds the library's data,
// so the frame-pointer chain sampled there leads nowhere), below a frame
// of its own holding a 6,000-byte buffer: from a sample in the library to
// main's frame is more than 8 KiB, so only a copy that long finds the
// callers. By default the copy is sized per thread: the thread's first
// full copies end in the caller's frame and it gets a reach beyond them,
// so all but the samples before the recorder's first drain (20 ms in,
// later on a busy machine) reach main: at least 99% of those from the
// run's second second on, and every one through the library's function
// reaches its caller; with perf's 8 KiB copy they stop in the caller's
// frame and the recording says the callers were lost (it said nothing
// when the copy ended in a frame keeping rbp the chain did not reach).
func TestFPModeLargeFrames(t *testing.T) {
	testutil.NeedRoot(t)
	lib := testutil.C(t, "libbigframe.so", []string{"bigframelib.c"}, "-O2", "-g", "-fomit-frame-pointer", "-shared", "-fPIC")
	bin := testutil.C(t, "bigframe", []string{"bigframe.c"}, "-O2", "-g", "-fno-omit-frame-pointer", "-Wl,--no-as-needed", lib, "-Wl,-rpath,"+filepath.Dir(lib))
	out := rec(t)
	_, stderr, code := run(t, "record", "-o", out, "--", bin, "400")
	if code != 0 {
		t.Fatalf("record: exit %d\n%s", code, stderr)
	}
	if _, how := stackCopy(t, out); how != recording.StackCopyThreadTop {
		t.Errorf("stack copy %q, want sized per thread", how)
	}
	if strings.Contains(stderr, "lost") {
		t.Errorf("warns:\n%s", stderr)
	}
	f, tr := flat(t, out), tree(t, out)
	if late := flat(t, "--from", "1s", out); late.total("main") < 0.99 || late.Samples < 300 {
		t.Errorf("from 1 s on: main on %.1f%% of %d stacks, want ≥ 99%% of 300 or more", 100*late.total("main"), late.Samples)
	}
	t.Logf("main on %.1f%% of all %d stacks", 100*f.total("main"), f.Samples)
	if in, out := tr.under("sort_block", "compress_stream"); in < f.Samples/2 || out > 0 {
		t.Errorf("%d samples through sort_block reach compress_stream, %d do not", in, out)
	}
	_, stderr, code = run(t, "record", "--stack-size", "8192", "-o", out, "--", bin, "40")
	if code != 0 {
		t.Fatalf("record --stack-size 8192: exit %d\n%s", code, stderr)
	}
	if m := flat(t, out).total("main"); m > 0.5 || !strings.Contains(stderr, "samples lost callers") {
		t.Errorf("--stack-size 8192: main on %.1f%% of stacks, warnings:\n%s", 100*m, stderr)
	}
}

// A frame holding a large array the thread never writes (memcached's
// transmit and its 16 KiB of iovecs) puts pages that are not in memory
// between a sample's stack pointer and the thread's outer frames: a copy
// through them faults, and, where it ended at the first such page, every
// sample below the frame lost its callers (1,698 of 1,700 here). The
// sampling program copies such a range page by page, leaving the missing
// pages out of the unwind, and a copy may reach 24 KiB: the samples under
// transmit reach the thread's entry from the recorder's first drain on.
func TestFPModeUnwrittenFrame(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "holeframe", []string{"holeframe.c"}, "-O2", "-g", "-fomit-frame-pointer", "-pthread")
	out := rec(t)
	_, stderr, code := run(t, "record", "-o", out, "--", bin, "9000")
	if code != 0 {
		t.Fatalf("record: exit %d\n%s", code, stderr)
	}
	if strings.Contains(stderr, "lost") {
		t.Errorf("warns:\n%s", stderr)
	}
	late := flat(t, "--from", "1s", out)
	if w, s := late.total("worker"), late.total("start_thread"); w < 0.99 || s < 0.99 || late.Samples < 300 {
		t.Errorf("from 1 s on: worker on %.1f%%, start_thread on %.1f%% of %d stacks, want both ≥ 99%% of 300 or more", 100*w, 100*s, late.Samples)
	}
	// Over the whole run, the samples before the recorder's first drain
	// (a full copy, whose unwind ends in transmit's frame) do not.
	in, cut := tree(t, out).under("transmit", "start_thread")
	if in == 0 || cut > in/10 {
		t.Errorf("%d samples through transmit reach start_thread, %d do not", in, cut)
	}
	t.Logf("%d samples through transmit reach start_thread, %d do not", in, cut)
}

// --stack-size 0 copies no stack: the frame-pointer chain alone, as perf
// record -g, which loses a frameless leaf's caller; the recording says so.
func TestNoStackCopy(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "hier-O2-fp", []string{"hier.c"}, "-O2", "-g", "-fno-omit-frame-pointer")
	out := rec(t)
	_, stderr, code := run(t, "record", "--stack-size", "0", "-o", out, "--", bin, "20")
	if code != 0 || !strings.Contains(stderr, "--stack-size 0") {
		t.Errorf("record: exit %d, warnings:\n%s", code, stderr)
	}
	if n := stackBytes(t, out); n != 0 {
		t.Errorf("stack copy %d bytes, want none", n)
	}
	if s := callers(t, 2, out).share("worker", "main"); s < 0.95 {
		t.Errorf("worker <- main on %.1f%% of samples, want the frame-pointer chain alone (≥ 95%%)", 100*s)
	}
}

// TestNoLostSamples: a CPU's ring holds at least half a second of the
// largest samples at the rate recorded (ringPages), and a thread is sampled
// at most 999 times per second of its CPU time. hier with 4 rounds is one
// thread of about 0.1 s of CPU time: even if culprit never drained before
// the command ended, every ring would hold all its samples, so none may be
// lost, in any mode, however busy the machine. Conversely, a ring too small
// for one sample loses them all, and report says so.
func TestNoLostSamples(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "hier-O2", []string{"hier.c"}, "-O2", "-g")
	dir := t.TempDir()
	for _, mode := range [][]string{
		{},
		{"--values"},
		{"--expr", "hier*@worker@n"},
		{"--call-graph", "dwarf"},
		{"--events", "cpu,syscalls,sched"},
		{"--values", "--call-graph", "dwarf"},
	} {
		rec := filepath.Join(dir, "r.rec")
		args := append(append([]string{"record", "-o", rec}, mode...), "--", bin, "4")
		_, stderr, code := run(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", mode, code, stderr)
		}
		f := flat(t, rec)
		// 4 rounds are about 100 ms of CPU time (TestJitter: 16 take 400 ms).
		if f.Samples < 30 || f.Lost != 0 || strings.Contains(stderr, " lost)") {
			t.Errorf("record %v: %d samples, %d lost; want 30 or more and none lost\n%s", mode, f.Samples, f.Lost, stderr)
		}
	}

	// One page cannot hold a sample with 4 KiB of stack: every one of the
	// program's is lost, and record and report say so. The kernel reports a
	// drop only with the next record that fits (a small one: an exit, a
	// mapping), so the count it reports can fall short of every sample the
	// run took. A tick while the process's memory is torn down at its exit
	// has no user stack to copy and fits: such a sample can be written, in
	// the kernel, never in the program's functions.
	rec := filepath.Join(dir, "small.rec")
	_, stderr, code := run(t, "record", "--mmap-pages", "1", "--expr", "hier*@worker@n", "-o", rec, "--", bin, "4")
	if code != 0 || !strings.Contains(stderr, " lost)") {
		t.Fatalf("a 1-page ring: exit %d, want the summary to count lost samples\n%s", code, stderr)
	}
	f := flat(t, rec)
	if f.Lost == 0 || f.total("worker")+f.total("main") > 0 {
		t.Errorf("a 1-page ring: %d samples written (worker %.0f%%, main %.0f%%), %d lost; want none of the program's written and some lost",
			f.Samples, 100*f.total("worker"), 100*f.total("main"), f.Lost)
	}
	for _, view := range [][]string{{"--exprs"}, {"--callers", "2"}, {"--peek", "worker"}} {
		// Said with the figures, or with the error that nothing matched
		// (a kernel sample at the exit can be all that was written).
		out, stderr, _ := run(t, append([]string{"report", rec}, view...)...)
		if !strings.Contains(out+stderr, "samples lost while recording") {
			t.Errorf("report %v of a recording that lost samples: no word of them\n%s%s", view, out, stderr)
		}
	}
}
