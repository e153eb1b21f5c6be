package e2e

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/culprit-dev/culprit/internal/loader"
	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/testutil"
)

// The ptrace collector (--collector ptrace) on the programs the perf
// collector is tested on: same reports, plus clean detaching.

// recordPtrace runs culprit record --collector ptrace with args and returns
// its exit code and stderr.
func recordPtrace(t *testing.T, args ...string) (int, string) {
	t.Helper()
	_, errs, code := run(t, append([]string{"record", "--collector", "ptrace"}, args...)...)
	return code, errs
}

// ptraceFree checks that no thread of pid is traced or stopped.
func ptraceFree(t *testing.T, pid int) {
	t.Helper()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatalf("process %d is gone: %v", pid, err)
	}
	for _, e := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, e.Name()))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			k, v, _ := strings.Cut(line, ":")
			v = strings.TrimSpace(v)
			if k == "State" && (strings.HasPrefix(v, "t") || strings.HasPrefix(v, "T")) {
				t.Errorf("thread %s of %d is %s after detaching", e.Name(), pid, v)
			}
			if k == "TracerPid" && v != "0" {
				t.Errorf("thread %s of %d is still traced by %s", e.Name(), pid, v)
			}
		}
	}
}

func TestPtraceHierarchicalProfile(t *testing.T) {
	testutil.NeedRoot(t)
	for _, c := range []struct {
		name  string
		flags []string
	}{
		{"O2-frameless-leaf", []string{"-O2", "-g", "-fno-omit-frame-pointer"}},
		{"O2-nofp", []string{"-O2", "-g", "-fomit-frame-pointer"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			bin := testutil.C(t, "hier-"+c.name, []string{"hier.c"}, c.flags...)
			out := rec(t)
			if code, errs := recordPtrace(t, "-o", out, "--", bin, "30"); code != 0 {
				t.Fatalf("exit %d\n%s", code, errs)
			}
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
			var first recording.Record
			var end *recording.End
			eachRecord(t, out, func(rec recording.Record) {
				if first == nil {
					first = rec
				}
				if e, ok := rec.(*recording.End); ok {
					end = e
				}
			})
			if m, ok := first.(*recording.Meta); !ok || m.Event != "ptrace-cpu-clock" || m.Extra["collector"] != "ptrace" {
				t.Errorf("first record %+v, want the ptrace collector's Meta", first)
			}
			if end == nil || end.ExitCode != 0 || int(end.Samples) != cl.Samples {
				t.Errorf("End record %+v, want exit code 0 and %d samples", end, cl.Samples)
			}
		})
	}
}

func TestPtraceThreads(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "threads", []string{"threads.c"}, "-O2", "-g", "-pthread")
	out := rec(t)
	if code, errs := recordPtrace(t, "-o", out, "--", bin, "150000000"); code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	f := flat(t, out)
	for _, fn := range []string{"spin_a", "spin_b", "spin_c"} {
		if f.total(fn) < 0.15 {
			t.Errorf("%s has %.1f%% of samples, want each thread visible", fn, 100*f.total(fn))
		}
	}
}

// A forked child and the program it execs are followed, and the command's
// exit code is culprit's.
func TestPtraceForkExecAndExitCode(t *testing.T) {
	testutil.NeedRoot(t)
	fe := testutil.C(t, "forkexec", []string{"forkexec.c"}, "-O2", "-g")
	hier := testutil.C(t, "hier-O0", []string{"hier.c"}, "-O0", "-g")
	out := rec(t)
	code, errs := recordPtrace(t, "-o", out, "--", fe, hier, "1", "7")
	if code != 7 {
		t.Fatalf("exit code %d, want the command's 7\n%s", code, errs)
	}
	f := flat(t, out)
	for _, fn := range []string{"parent_spin", "child_spin", "worker", "main"} {
		if f.total(fn) < 0.05 {
			t.Errorf("%s has %.1f%% of samples, want the forked and exec'd processes visible\n%+v", fn, 100*f.total(fn), f.Entries)
		}
	}
	// Every stack reaches _start: the exec'd program's mappings, read at its
	// exec and again when ld.so maps libc, are all known.
	start := 0.0
	for _, e := range f.Entries {
		if e.Name == "_start" { // one row per executable
			start += e.Total
		}
	}
	if s := start; s < 0.95 {
		t.Errorf("_start on %.1f%% of stacks, want ≥ 95%%", 100*s)
	}
}

// Attach twice to a running process, once for a wall-clock --duration and
// once until Ctrl-C; it runs on untraced and exits with its own code.
func TestPtraceAttachTwice(t *testing.T) {
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
	if code, errs := recordPtrace(t, "-p", strconv.Itoa(pid), "--duration", "700ms", "-o", out); code != 0 {
		t.Fatalf("attach for 700ms: exit %d\n%s", code, errs)
	}
	c1, _ := cpuTime(dir)
	ptraceFree(t, pid)
	f := flat(t, out)
	if f.Samples == 0 || f.Samples > maxSamples(c1-c0+20*time.Millisecond) || f.total("busy") < 0.5 {
		t.Errorf("attach for 700ms: %d samples in %v of the target's CPU time, busy %.2f", f.Samples, c1-c0, f.total("busy"))
	}
	// Until Ctrl-C, sent once the recording holds 200 samples: all of them
	// are in it when culprit ends.
	out = rec(t)
	attachFor(t, pid, out, 200, "--collector", "ptrace")
	ptraceFree(t, pid)
	f = flat(t, out)
	if f.Samples < 200 || f.total("busy") < 0.5 {
		t.Errorf("attach until 200 samples: %d samples, busy %.2f", f.Samples, f.total("busy"))
	}
	err := target.Wait()
	if target.ProcessState.ExitCode() != 3 {
		t.Errorf("target exit: %v (code %d), want it to run on and exit with 3", err, target.ProcessState.ExitCode())
	}
}

// Ctrl-C (SIGINT to culprit) during an attach detaches and leaves the
// target running, neither traced nor stopped; the recording is complete.
func TestPtraceCtrlC(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "threads", []string{"threads.c"}, "-O2", "-g", "-pthread")
	target := exec.Command(bin, "30000000000")
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { target.Process.Kill(); target.Wait() }()
	pid := target.Process.Pid
	waitThreadsCPU(t, pid, 3, 0)
	out := rec(t)
	cmd := exec.Command(culprit, "record", "--collector", "ptrace", "-p", strconv.Itoa(pid), "-o", out)
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Sampled until the recording, still being written, holds 100 samples
	// of each thread's spin function: counted in samples, not in CPU time
	// read from /proc, which counts all of a thread's time on a CPU, the
	// kernel's around each stop included (much of it on a busy machine),
	// where the collector samples user time.
	var seen map[string]int
	waitFor(t, "the recording to hold 100 samples of each spin function", func() bool {
		seen = spinSamples(out)
		return seen["spin_a"] >= 100 && seen["spin_b"] >= 100 && seen["spin_c"] >= 100
	})
	if err := interrupt(t, "culprit", cmd, errb.String); err != nil {
		t.Fatalf("culprit after SIGINT: %v\n%s", err, errb.String())
	}
	noLoss(t, "", cmd.Args[1:])
	ptraceFree(t, pid)
	// Still running: its CPU time grows.
	waitCPU(t, pid, 20*time.Millisecond)
	// Complete: every sample written before the signal is in it.
	final := spinSamples(out)
	for _, fn := range []string{"spin_a", "spin_b", "spin_c"} {
		if final[fn] < seen[fn] {
			t.Errorf("%s has %d samples, fewer than the %d the recording held before SIGINT", fn, final[fn], seen[fn])
		}
	}
}

// spinSamples counts the samples of each spin function of the threads
// program in recording rec, complete or still being written (nil when it
// cannot be read yet).
func spinSamples(rec string) map[string]int {
	p, err := loader.Load([]string{rec}, loader.Options{})
	if err != nil {
		return nil
	}
	n := map[string]int{}
	for _, s := range p.Samples {
		for _, fi := range p.Stacks[s.Stack] {
			if f := p.FrameAt(fi).Function; strings.HasPrefix(f, "spin_") {
				n[f]++
				break
			}
		}
	}
	return n
}

// A Go program relies on SIGURG for goroutine preemption: the collector
// must pass it on. On one P, two spinning goroutines then take turns at
// least every 10 ms of CPU time (the runtime preempts a goroutine after
// 10 ms of wall time, never less than its CPU time), so both show in the
// first 60 samples (60 ms of CPU time at 999 Hz) in which either runs;
// swallowed, one would run alone for hundreds of milliseconds. Counted in
// samples, not in a wall-clock window, which a busy machine fills with
// any amount of CPU time. They keep taking turns while both run. A
// preemption signal the kernel merged into a pending sample signal must
// reach the runtime too, or it never preempts that thread again (a busy
// machine leaves threads runnable with a signal pending for long): the
// goroutine running then keeps the CPU until it finishes, so its turn is
// the last one that ends. sysmon asks for a preemption after 10 ms of wall
// time (20 at most with its own sleep), which is never less CPU time, but
// on a busy machine sysmon's own thread can wait long to run, so a turn
// can exceed 60 samples; one that the goroutines took turns after was not
// a lost signal. The last turn to end must stay under 60 samples.
func TestPtraceGoProgram(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.Go(t, "gospin")
	out := rec(t)
	cmd := exec.Command(culprit, "record", "--collector", "ptrace", "-o", out, "--", bin, "400000000")
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	noLoss(t, "", cmd.Args[1:])
	all := flat(t, out)
	if all.total("main.spinAlpha") < 0.2 || all.total("main.spinBeta") < 0.2 {
		t.Errorf("Go functions missing: %+v", all.Entries)
	}
	p, err := loader.Load([]string{out}, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var a, b, n int
	var streak int  // consecutive samples of one goroutine
	var turns []int // the turns that ended, in order
	last := ""
	for _, s := range p.Samples {
		alpha, beta := false, false
		for _, fi := range p.Stacks[s.Stack] {
			switch p.FrameAt(fi).Function {
			case "main.spinAlpha":
				alpha = true
			case "main.spinBeta":
				beta = true
			}
		}
		if alpha == beta {
			continue
		}
		who := "main.spinAlpha"
		if beta {
			who = "main.spinBeta"
		}
		// A turn ends when the other goroutine runs; the last one,
		// after the other has finished, does not.
		if who == last {
			streak++
		} else {
			if streak > 0 {
				turns = append(turns, streak)
			}
			last, streak = who, 1
		}
		if n < 60 {
			n++
			if alpha {
				a++
			} else {
				b++
			}
		}
	}
	t.Logf("first %d samples in either: spinAlpha %d, spinBeta %d; turns (samples) %v", n, a, b, turns)
	if n < 60 || a < 9 || b < 9 {
		t.Errorf("goroutines did not take turns (first %d samples in either: spinAlpha %d, spinBeta %d): SIGURG not passed on?", n, a, b)
	}
	if len(turns) == 0 {
		t.Fatalf("no turn ended: one goroutine ran alone")
	}
	if end := turns[len(turns)-1]; end >= 60 {
		t.Errorf("one goroutine ran its last %d samples in a row and the other never ran again before it finished: a preemption signal was lost", end)
	}
}

func TestPtraceUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"record", "--collector", "dtrace", "--", "true"}, "use perf or ptrace"},
		{[]string{"record", "--collector", "ptrace", "--call-graph", "dwarf", "--", "true"}, "--call-graph"},
		{[]string{"record", "--collector", "ptrace", "--events", "cpu,sched", "--", "true"}, "--events"},
		{[]string{"record", "--collector", "ptrace", "--stack-size", "8192", "--", "true"}, "--stack-size"},
	} {
		_, errs, code := run(t, c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("culprit %s: exit %d, stderr %q; want 2 and %q", strings.Join(c.args, " "), code, errs, c.want)
		}
	}
	// The command's own signal death is culprit's exit code, as 128+signal.
	if os.Geteuid() == 0 {
		_, _, code := run(t, "record", "--collector", "ptrace", "-o", rec(t), "--", "sh", "-c", "kill -TERM $$")
		if code != 128+int(syscall.SIGTERM) {
			t.Errorf("exit code %d for a command killed by SIGTERM, want %d", code, 128+int(syscall.SIGTERM))
		}
	}
}
