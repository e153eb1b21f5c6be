package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/testutil"
	"github.com/culprit-dev/culprit/internal/traceprog"
)

type traceJSON struct {
	Functions []struct {
		Function   string `json:"function"`
		Calls      int    `json:"calls"`
		Every      uint32 `json:"every"`
		Estimated  uint64 `json:"estimated_calls"`
		Unreturned int    `json:"unreturned"`
		Unwound    int    `json:"unwound"`
		Incl       struct {
			Total uint64 `json:"total_ns"`
		} `json:"inclusive"`
		Excl struct {
			Total uint64 `json:"total_ns"`
		} `json:"exclusive"`
		Callers []struct {
			Name  string `json:"name"`
			Calls int    `json:"calls"`
		} `json:"callers"`
	} `json:"functions"`
	Lost uint64 `json:"lost"`
}

type callsJSON struct {
	Calls []struct {
		Function string  `json:"function"`
		Start    float64 `json:"start_s"`
		Incl     uint64  `json:"inclusive_ns"`
		Excl     uint64  `json:"exclusive_ns"`
		InclCPU  *uint64 `json:"inclusive_cpu_ns"`
		Depth    uint32  `json:"depth"`
		TID      uint32  `json:"tid"`
		Unwound  bool    `json:"unwound"`
		Caller   string  `json:"caller"`
		Args     []struct {
			Name, Value string
		} `json:"args"`
		Ret string `json:"ret"`
	} `json:"calls"`
}

func (t traceJSON) calls(fn string) (calls, unreturned int) {
	for _, f := range t.Functions {
		if f.Function == fn {
			return f.Calls, f.Unreturned
		}
	}
	return 0, 0
}

// traceRun traces a command with culprit and returns the recording and
// the command's own output (its stdout is culprit's).
func traceRun(t *testing.T, flags []string, cmd ...string) (string, string) {
	t.Helper()
	out := rec(t)
	args := append(append([]string{"trace", "-o", out}, flags...), "--")
	stdout := mustRun(t, append(args, cmd...)...)
	return out, stdout
}

// counts reads the "count NAME N" lines a target prints.
func counts(t *testing.T, stdout string) map[string]int {
	t.Helper()
	m := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(stdout))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == "count" {
			n, err := strconv.Atoi(f[2])
			if err != nil {
				t.Fatalf("bad line %q", sc.Text())
			}
			m[f[1]] = n
		}
	}
	return m
}

func traceReport(t *testing.T, path string) traceJSON {
	t.Helper()
	var r traceJSON
	if err := json.Unmarshal([]byte(mustRun(t, "report", "--format", "json", path)), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// Every call of a traced function is counted, at -O0 and -O2: recursion,
// threads, calls longjmp leaves (counted as calls that did not return),
// and a library loaded with dlopen after the probes were set.
func TestTraceCountsEveryCall(t *testing.T) {
	testutil.NeedRoot(t)
	plugin := testutil.C(t, "libtraceplugin.so", []string{"traceplugin.c"}, "-shared", "-fPIC", "-O2", "-g")
	for _, opt := range []string{"-O0", "-O2"} {
		t.Run(opt, func(t *testing.T) {
			bin := testutil.C(t, "tracecalls", []string{"tracecalls.c"}, opt, "-g", "-pthread")
			out, stdout := traceRun(t, []string{"-f", "fib", "-f", "leaf", "-f", "thrower", "-f", "jumper", "-f", "tail_*", "--lib", plugin + ":plugin_*"},
				bin, "fib", "18", "leaf", "3000", "threads", "4", "700", "jump", "25", "tail", "400", "plugin", plugin, "300")
			want := counts(t, stdout)
			r := traceReport(t, out)
			if r.Lost != 0 {
				t.Errorf("%d calls lost", r.Lost)
			}
			// At -O2 tail_outer jumps to tail_inner: both return at once.
			for _, fn := range []string{"fib", "leaf", "thrower", "jumper", "tail_outer", "tail_inner", "plugin_work"} {
				got, unret := r.calls(fn)
				if got != want[fn] || want[fn] == 0 {
					t.Errorf("%s: %d calls traced, the program made %d", fn, got, want[fn])
				}
				wantUnret := 0
				if fn == "thrower" {
					wantUnret = want[fn] // longjmp leaves every one
				}
				if unret != wantUnret {
					t.Errorf("%s: %d calls did not return, want %d", fn, unret, wantUnret)
				}
			}
			// Exclusive time is inclusive minus the traced callees': fib's
			// recursion leaves its exclusive total well under its inclusive.
			for _, f := range r.Functions {
				if f.Excl.Total > f.Incl.Total {
					t.Errorf("%s: exclusive %d ns > inclusive %d ns", f.Function, f.Excl.Total, f.Incl.Total)
				}
			}
			var byCaller traceJSON
			if err := json.Unmarshal([]byte(mustRun(t, "report", "--by", "caller", "--format", "json", out)), &byCaller); err != nil {
				t.Fatal(err)
			}
			for _, f := range byCaller.Functions {
				if f.Function != "leaf" {
					continue
				}
				got := map[string]int{}
				for _, c := range f.Callers {
					got[c.Name] = c.Calls
				}
				if got["main"] != 3000 || got["worker"] != 4*700 || got["tail_inner"] != 400 {
					t.Errorf("leaf by caller: %v, want main 3000, worker 2800 and tail_inner 400", got)
				}
			}
		})
	}
}

// Every call is counted on threads that come and go by the hundred: more
// than the tracer has slots for shadow stacks (traceprog.Slots), so that
// later threads find their slot held by an ended one and keep their stack
// in the map instead, while two threads at a time may take slots at once.
func TestTraceThreadChurn(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "tracecalls", []string{"tracecalls.c"}, "-O2", "-g", "-pthread")
	threads := traceprog.Slots + traceprog.Slots/4
	out, stdout := traceRun(t, []string{"-f", "leaf"}, bin, "churn", strconv.Itoa(threads), "7", "leaf", "50")
	want := counts(t, stdout)["leaf"]
	r := traceReport(t, out)
	if r.Lost != 0 {
		t.Errorf("%d calls lost", r.Lost)
	}
	if got, unret := r.calls("leaf"); got != want || want != threads*7+50 || unret != 0 {
		t.Errorf("leaf: %d calls traced (%d did not return), the program made %d", got, unret, want)
	}
}

// Each call's duration lies between the program's own clock readings
// inside the call and its caller's around it, and --args records the
// arguments the program passed.
//
// Each side measures a different interval, so the test compares them
// where they nest, exactly: spin times itself from its first clock
// reading to its last, which the entry and return probes enclose; its
// caller times from before the call to after it, which encloses both
// probes. Between them lie the probes' own time and whatever the machine
// does there: a preemption, an interrupt, a hypervisor holding the
// virtual CPU (the last two no context switch shows). A margin over the
// inner reading alone (5% plus the time the tracer saw the thread off
// the CPU) failed on a busy machine with nothing measured wrongly.
// TestTraceCPUTime checks the time on and off the CPU.
func TestTraceDurationsAndArgs(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "tracecalls", []string{"tracecalls.c"}, "-O2", "-g", "-pthread")
	out, stdout := traceRun(t, []string{"-f", "spin", "-f", "args3", "-f", "keep", "--args"}, bin, "spin", "0", "1", "spin", "2", "8", "spin", "5", "3", "args", "6")
	var own, around []float64
	var args [][]string
	for _, l := range strings.Split(stdout, "\n") {
		f := strings.Fields(l)
		if len(f) == 2 && (f[0] == "spin" || f[0] == "spin-call") {
			v, _ := strconv.ParseFloat(f[1], 64)
			if f[0] == "spin" {
				own = append(own, v)
			} else {
				around = append(around, v)
			}
		}
		if len(f) == 4 && f[0] == "args" {
			args = append(args, f[1:])
		}
	}
	var spins callsJSON
	if err := json.Unmarshal([]byte(mustRun(t, "report", "--calls", "^spin$", "--top", "0", "--format", "json", out)), &spins); err != nil {
		t.Fatal(err)
	}
	sort.Slice(spins.Calls, func(i, j int) bool { return spins.Calls[i].Start < spins.Calls[j].Start })
	if len(spins.Calls) != len(own) || len(own) != 12 || len(around) != len(own) {
		t.Fatalf("%d spin calls traced, the program timed %d and %d (want 12)", len(spins.Calls), len(own), len(around))
	}
	known := 0
	for i, c := range spins.Calls {
		// The first call (0 ms) also carries the kernel's one-time
		// set-up of the probes (the process's page for probed
		// instructions): inside the probes, so between the two clocks.
		if float64(c.Incl) < own[i] || float64(c.Incl) > around[i] {
			t.Errorf("spin call %d: traced %d ns, the program measured %.0f ns inside the call and %.0f ns around it", i, c.Incl, own[i], around[i])
		}
		if c.InclCPU != nil {
			known++
		}
	}
	// The kernel does not show the tracer every context switch under
	// load: a call without one seen has no time on the CPU.
	if known < (len(own)-1)/2 {
		t.Errorf("%d of %d spin calls have their time off the CPU measured, want most", known, len(own))
	}
	var a callsJSON
	if err := json.Unmarshal([]byte(mustRun(t, "report", "--calls", "args3", "--top", "0", "--format", "json", out)), &a); err != nil {
		t.Fatal(err)
	}
	sort.Slice(a.Calls, func(i, j int) bool { return a.Calls[i].Start < a.Calls[j].Start })
	if len(a.Calls) != len(args) || len(args) != 6 {
		t.Fatalf("%d args3 calls traced, the program printed %d", len(a.Calls), len(args))
	}
	for i, c := range a.Calls {
		var got []string
		for _, x := range c.Args {
			got = append(got, x.Name+"="+x.Value)
		}
		want := []string{"a=" + args[i][0], "b=" + args[i][1], "c=" + args[i][2]}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("args3 call %d: %v, the program passed %v", i, got, want)
		}
		sum, _ := strconv.ParseInt(args[i][0], 10, 64)
		b, _ := strconv.ParseInt(args[i][1], 10, 64)
		cc, _ := strconv.ParseInt(args[i][2], 10, 64)
		if c.Ret != strconv.FormatInt(sum+b+cc, 10) {
			t.Errorf("args3 call %d returned %s, want %d", i, c.Ret, sum+b+cc)
		}
	}
	// keep is void: its calls show their arguments and no return value,
	// though RAX held b at each return.
	var k callsJSON
	if err := json.Unmarshal([]byte(mustRun(t, "report", "--calls", "^keep$", "--top", "0", "--format", "json", out)), &k); err != nil {
		t.Fatal(err)
	}
	sort.Slice(k.Calls, func(i, j int) bool { return k.Calls[i].Start < k.Calls[j].Start })
	if len(k.Calls) != len(args) {
		t.Fatalf("%d keep calls traced, the program made %d", len(k.Calls), len(args))
	}
	for i, c := range k.Calls {
		var got []string
		for _, x := range c.Args {
			got = append(got, x.Name+"="+x.Value)
		}
		if want := "a=" + args[i][0] + " b=" + args[i][1]; strings.Join(got, " ") != want || c.Ret != "" {
			t.Errorf("keep call %d: %v returning %q, want %s returning nothing", i, got, c.Ret, want)
		}
	}
	if txt := mustRun(t, "report", "--calls", "^keep$", "--top", "0", out); strings.Contains(txt, ") = ") || !strings.Contains(txt, "keep(a=-7, b=0)") {
		t.Errorf("report --calls of a void function:\n%s", txt)
	}
}

// Go: entry probes after the stack check (a call that grows the stack is
// one call), return probes on RET instructions, stacks per goroutine.
func TestTraceGo(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.Go(t, "gotrace")
	out, stdout := traceRun(t, []string{"-f", "main.fib", "-f", "main.leaf", "-f", "main.args3", "--args"}, bin, "16", "3000", "4", "4")
	want := counts(t, stdout)
	r := traceReport(t, out)
	for _, fn := range []string{"fib", "leaf", "args3"} {
		got, unret := r.calls("main." + fn)
		if got != want[fn] || want[fn] == 0 || unret != 0 {
			t.Errorf("main.%s: %d calls traced (%d did not return), the program made %d", fn, got, unret, want[fn])
		}
	}
	var a callsJSON
	if err := json.Unmarshal([]byte(mustRun(t, "report", "--calls", "args3", "--top", "0", "--format", "json", out)), &a); err != nil {
		t.Fatal(err)
	}
	sort.Slice(a.Calls, func(i, j int) bool { return a.Calls[i].Start < a.Calls[j].Start })
	var printed []string
	for _, l := range strings.Split(stdout, "\n") {
		if f := strings.Fields(l); len(f) == 4 && f[0] == "args" {
			printed = append(printed, "a="+f[1]+" b="+f[2]+" c="+f[3])
		}
	}
	if len(a.Calls) != len(printed) {
		t.Fatalf("%d args3 calls traced, %d printed", len(a.Calls), len(printed))
	}
	for i, c := range a.Calls {
		var got []string
		for _, x := range c.Args {
			got = append(got, x.Name+"="+x.Value)
		}
		if strings.Join(got, " ") != printed[i] || c.Depth != 0 {
			t.Errorf("args3 call %d: %v at depth %d, the program passed %s", i, got, c.Depth, printed[i])
		}
	}
}

// #N records the first and every N-th call, counted across threads; the
// report estimates the calls made from them.
func TestTraceEveryNth(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "tracecalls", []string{"tracecalls.c"}, "-O2", "-g", "-pthread")
	out, _ := traceRun(t, []string{"-f", "leaf#10"}, bin, "leaf", "1001")
	r := traceReport(t, out)
	if len(r.Functions) != 1 || r.Functions[0].Calls != 101 || r.Functions[0].Estimated != 1001 || r.Functions[0].Every != 10 {
		t.Errorf("leaf#10 of 1001 calls: %+v, want 101 recorded, 1001 estimated", r.Functions)
	}
	// Four threads share one counter: each call takes its own number,
	// so exactly the calls numbered 0, 7, 14, ... of the 200,000 are kept.
	out, _ = traceRun(t, []string{"-f", "leaf#7"}, bin, "threads", "4", "50000")
	r = traceReport(t, out)
	if len(r.Functions) != 1 || r.Functions[0].Calls != (200000-1)/7+1 || r.Lost != 0 {
		t.Errorf("leaf#7 of 4×50,000 calls in threads: %+v (%d lost), want %d recorded", r.Functions, r.Lost, (200000-1)/7+1)
	}
}

// The Chrome trace has one slice per call on its thread; diff compares two
// traced runs per function.
func TestTraceExportAndDiff(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "tracecalls", []string{"tracecalls.c"}, "-O2", "-g", "-pthread")
	a, _ := traceRun(t, []string{"-f", "fib", "-f", "leaf"}, bin, "fib", "10", "threads", "2", "50")
	b, _ := traceRun(t, []string{"-f", "fib", "-f", "leaf"}, bin, "fib", "12", "threads", "2", "50")
	chrome := filepath.Join(t.TempDir(), "t.json")
	mustRun(t, "export", "--format", "chrome", "-o", chrome, a)
	data, err := os.ReadFile(chrome)
	if err != nil {
		t.Fatal(err)
	}
	var tr struct {
		TraceEvents []struct {
			Name string `json:"name"`
			Ph   string `json:"ph"`
			Cat  string `json:"cat"`
			TID  uint32 `json:"tid"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(data, &tr); err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	tids := map[uint32]bool{}
	for _, e := range tr.TraceEvents {
		if e.Ph == "X" && e.Cat == "call" {
			n[e.Name]++
			if e.Name == "leaf" {
				tids[e.TID] = true
			}
		}
	}
	if n["fib"] != 177 || n["leaf"] != 100 || len(tids) != 2 {
		t.Errorf("chrome slices: %v on %d threads, want fib 177, leaf 100 on 2 threads", n, len(tids))
	}
	d := mustRun(t, "diff", a, b)
	if !strings.Contains(d, "fib") || !strings.Contains(d, "177") || !strings.Contains(d, "465") {
		t.Errorf("diff of traced runs does not show fib's 177 and 465 calls:\n%s", d)
	}
}

// Nothing stays attached: not after a normal end, nor after culprit is
// killed while its target runs on; -p traces a running process for
// --duration and leaves it running.
func TestTraceLeavesNothing(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "tracecalls", []string{"tracecalls.c"}, "-O2", "-g", "-pthread")
	target := exec.Command(bin, "spin", "20", "1000")
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { target.Process.Kill(); target.Wait() }()
	out := rec(t)
	start := time.Now()
	mustRun(t, "trace", "-f", "spin", "-p", strconv.Itoa(target.Process.Pid), "--duration", "2s", "-o", out)
	ran := time.Since(start)
	r := traceReport(t, out)
	// Calls of at least 20 ms of wall-clock time each, one after another:
	// the probes live only while culprit runs (a little past --duration
	// while they are detached, longer on a busy machine), so at most
	// ran/20ms + 1 calls can end while they are attached; calls counted
	// from before the attach would give up to 1000.
	if got, _ := r.calls("spin"); got < 1 || got > int(ran/(20*time.Millisecond))+1 {
		t.Errorf("-p for 2 s of 20 ms calls: %d spin calls while culprit ran %v", got, ran)
	}
	if err := target.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the target did not survive the trace: %v", err)
	}

	// Without the CPU samples a trace loads exactly the entry, return and
	// context-switch programs; with them (the default) also the
	// programs that follow the process and filter the per-CPU samples.
	for _, c := range []struct {
		flags []string
		want  int
		exact bool
	}{{[]string{"--cpu-sample", "0"}, 3, true}, {nil, 4, false}} {
		args := append(append([]string{"trace"}, c.flags...), "-f", "spin", "-p", strconv.Itoa(target.Process.Pid), "-o", rec(t))
		cmd := exec.Command(culprit, args...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// How long culprit takes to set its probes depends on the
		// machine's load: the -p trace above measured it (its start, 2 s
		// of tracing and the end), so twice that bounds it.
		deadline := time.Now().Add(max(5*time.Second, 2*ran))
		for len(culpritPrograms(t, cmd.Process.Pid)) < c.want && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if p := culpritPrograms(t, cmd.Process.Pid); len(p) < c.want || c.exact && len(p) != c.want {
			t.Errorf("%v while tracing: %v loaded, want %d programs (the entry, return and context-switch programs; the samples' with them)", c.flags, p, c.want)
		}
		cmd.Process.Signal(os.Kill)
		cmd.Wait()
		deadline = time.Now().Add(max(2*time.Second, ran))
		for len(culpritPrograms(t, cmd.Process.Pid)) > 0 && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if p := culpritPrograms(t, cmd.Process.Pid); len(p) != 0 {
			t.Errorf("%v after SIGKILL of culprit: %v still loaded", c.flags, p)
		}
	}
	if ev, err := os.ReadFile("/sys/kernel/tracing/uprobe_events"); err == nil && strings.Contains(string(ev), filepath.Base(bin)) {
		t.Errorf("uprobe_events still names %s:\n%s", bin, ev)
	}
}

// culprit trace -p on a program started from a shell (not culprit's
// child, nor the test's: the shell exits and leaves it to init) whose
// worker threads all run before culprit attaches: every call each thread
// makes once the probes are set is recorded, as the program counts them,
// and inner's calls are named as work's. A trace while none is called
// says so.
func TestTraceAttachRunningThreads(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "attachpool", []string{"attachpool.c"}, "-O2", "-g", "-pthread")
	const workers, n = 4, 20000
	progOut := filepath.Join(t.TempDir(), "out")
	sh := exec.Command("sh", "-c", `"$0" "$1" "$2" >"$3" 2>&1 </dev/null & echo $!`, bin, strconv.Itoa(workers), strconv.Itoa(n), progOut)
	b, err := sh.Output()
	if err != nil {
		t.Fatalf("starting attachpool from sh: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("sh gave no PID: %q", b)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	// Every worker has run before culprit starts.
	waitFor(t, "attachpool's workers to run", func() bool {
		b, _ := os.ReadFile(progOut)
		return strings.Contains(string(b), "ready")
	})
	// Until the signal no traced function is called, and a trace then
	// says so rather than leave an empty recording unexplained.
	_, errs, code := run(t, "trace", "-f", "work", "-p", strconv.Itoa(pid), "--duration", "300ms", "--cpu-sample", "0", "-o", rec(t))
	if code != 0 || !strings.Contains(errs, "0 calls of 1 functions") || !strings.Contains(errs, "no traced function was called in the") {
		t.Errorf("-p while work is not called: exit %d, %s", code, errs)
	}
	out := rec(t)
	tr := exec.Command(culprit, "trace", "-f", "work", "-f", "inner", "-p", strconv.Itoa(pid), "-o", out)
	var errb strings.Builder
	tr.Stderr = &errb
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	defer tr.Process.Kill()
	// The probes are set once culprit holds the entry probes of both
	// functions: their uprobe-multi link (after the uretprobe-multi link
	// of their returns), or the session link that has both ends (the
	// kernel writes the breakpoints into the running process before the
	// link is made).
	waitFor(t, "culprit to set its probes", func() bool { return entryProbes(tr.Process.Pid) >= 2 })
	if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	var stdout string
	waitFor(t, "attachpool to make its calls", func() bool {
		b, _ := os.ReadFile(progOut)
		stdout = string(b)
		return strings.Contains(stdout, "done")
	})
	tr.Process.Signal(os.Interrupt)
	if err := tr.Wait(); err != nil {
		t.Fatalf("culprit trace -p: %v\n%s", err, errb.String())
	}
	want := counts(t, stdout)
	r := traceReport(t, out)
	for _, fn := range []string{"work", "inner"} {
		if got, unret := r.calls(fn); got != want[fn] || want[fn] != workers*n || unret != 0 {
			t.Errorf("%s: %d calls recorded (%d did not return), the program made %d\n%s", fn, got, unret, want[fn], errb.String())
		}
	}
	var byCaller traceJSON
	if err := json.Unmarshal([]byte(mustRun(t, "report", "--by", "caller", "--format", "json", out)), &byCaller); err != nil {
		t.Fatal(err)
	}
	for _, f := range byCaller.Functions {
		if f.Function == "inner" && (len(f.Callers) != 1 || f.Callers[0].Name != "work" || f.Callers[0].Calls != workers*n) {
			t.Errorf("inner's callers %+v, want work for all %d", f.Callers, workers*n)
		}
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Errorf("attachpool did not survive the trace: %v", err)
	}
}

// entryProbes counts the entry probes of the uprobe-multi BPF links
// process pid holds (a session link's are both ends'; a uretprobe-multi
// link's, returns only, are not counted).
func entryProbes(pid int) int {
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fdinfo", pid))
	n := 0
	for _, fd := range fds {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%s", pid, fd.Name()))
		if err != nil || !strings.Contains(string(b), "link_type:\tuprobe_multi\n") {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "uprobe_cnt:\t"); ok {
				c, _ := strconv.Atoi(v)
				n += c
			}
		}
	}
	return n
}

// Ctrl-C (SIGINT) of culprit trace -p ends the trace cleanly: the
// recording is complete, the target runs on, and no probe or BPF program
// stays behind.
func TestTraceInterruptLeavesNothing(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "tracecalls", []string{"tracecalls.c"}, "-O2", "-g", "-pthread")
	target := exec.Command(bin, "spin", "20", "1000")
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { target.Process.Kill(); target.Wait() }()
	out := rec(t)
	// Without the CPU samples beside the probes, whose programs
	// TestTraceLeavesNothing counts: exactly the trace's own three.
	cmd := exec.Command(culprit, "trace", "--cpu-sample", "0", "-f", "spin", "-p", strconv.Itoa(target.Process.Pid), "-o", out)
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(culpritPrograms(t, cmd.Process.Pid)) < 3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if p := culpritPrograms(t, cmd.Process.Pid); len(p) != 3 {
		t.Fatalf("while tracing: %v loaded, want the entry, return and context-switch programs", p)
	}
	cmd.Process.Signal(os.Interrupt)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("culprit trace after SIGINT: %v\n%s", err, errb.String())
	}
	// The kernel frees a closed program after a grace period.
	deadline = time.Now().Add(2 * time.Second)
	for len(culpritPrograms(t, cmd.Process.Pid)) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if p := culpritPrograms(t, cmd.Process.Pid); len(p) != 0 {
		t.Errorf("after SIGINT: %v still loaded", p)
	}
	if ev, err := os.ReadFile("/sys/kernel/tracing/uprobe_events"); err == nil && strings.Contains(string(ev), filepath.Base(bin)) {
		t.Errorf("uprobe_events still names %s:\n%s", bin, ev)
	}
	if err := target.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the target did not survive the trace: %v", err)
	}
	if _, rerr, code := run(t, "report", out); code != 0 {
		t.Errorf("report of the interrupted trace: exit %d, %s", code, rerr)
	}
}

// -f '*' traces every function of the program but its entry point (not
// called: a return probe there would overwrite argc), and the program runs
// as it does untraced.
func TestTraceEveryFunction(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "tracecalls", []string{"tracecalls.c"}, "-O2", "-g", "-pthread")
	out, stdout := traceRun(t, []string{"-f", "*"}, bin, "fib", "6", "tail", "10")
	want := counts(t, stdout)
	r := traceReport(t, out)
	if got, _ := r.calls("main"); got != 1 {
		t.Errorf("main: %d calls", got)
	}
	if got, _ := r.calls("_start"); got != 0 {
		t.Errorf("_start traced: %d calls", got)
	}
	for _, fn := range []string{"fib", "tail_outer", "leaf"} {
		if got, unret := r.calls(fn); got != want[fn] || unret != 0 {
			t.Errorf("%s: %d calls (%d did not return), the program made %d", fn, got, unret, want[fn])
		}
	}
	_, errs, code := run(t, "trace", "-f", "_start", "-o", rec(t), "--", bin)
	if code != 2 && code != 1 || !strings.Contains(errs, "entry point") {
		t.Errorf("-f _start: exit %d, %s", code, errs)
	}
}

// --timed-sampling records calls only in alternate phases: of 1 ms calls
// spanning at least 0.4 s of wall-clock time (8 phases of 50 ms), some are
// recorded and some are not.
func TestTraceTimedSampling(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "tracecalls", []string{"tracecalls.c"}, "-O2", "-g", "-pthread")
	out, stdout := traceRun(t, []string{"--timed-sampling", "20", "-f", "spin"}, bin, "spin", "1", "400")
	made := counts(t, stdout)["spin"]
	got, unret := traceReport(t, out).calls("spin")
	if made != 400 || got == 0 || got >= made || unret != 0 {
		t.Errorf("timed sampling: %d of %d calls recorded (%d did not return)", got, made, unret)
	}
}

// --dynamic-probing N removes a function's probes once it has made more
// than N calls (checked every 100 ms); --reattach sets them again later.
// 200,000 traced calls take more than 0.2 s at any per-call cost a
// uprobe pair has (≥ 1.6 µs), so the check comes before they end.
func TestTraceDynamicProbing(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "tracecalls", []string{"tracecalls.c"}, "-O2", "-g", "-pthread")
	out, _ := traceRun(t, []string{"--dynamic-probing", "1000", "-f", "leaf", "-f", "spin"}, bin, "leaf", "200000", "spin", "1", "3")
	r := traceReport(t, out)
	if got, _ := r.calls("leaf"); got <= 1000 || got >= 200000 {
		t.Errorf("leaf: %d calls recorded, want its probes removed after 1000", got)
	}
	if got, _ := r.calls("spin"); got != 3 {
		t.Errorf("spin: %d calls, want all 3 (under the threshold)", got)
	}
	// Two bursts of leaf calls with a gap between them: removed in each,
	// set again in the gap. How many times the probes come and go within
	// a burst depends on its wall-clock length (a busy machine stretches
	// it); the gap lasts as long as the first burst plus 1 s, longer than
	// any wait set in that burst (each wait doubles the last, so the last
	// is at most the time since the first removal plus 100 ms) plus one
	// check.
	out = rec(t)
	_, errs, code := run(t, "trace", "--dynamic-probing", "1000", "--reattach", "--probing-wait", "100ms", "-f", "leaf", "-f", "spin", "-o", out,
		"--", bin, "leaf", "200000", "gap", "1000", "leaf", "200000")
	if code != 0 || !strings.Contains(errs, "dynamic probing removed probes") {
		t.Errorf("reattach: exit %d, %s", code, errs)
	}
	before, after := leafBursts(t, out)
	if before <= 1000 || before >= 200000 || after <= 1000 || after >= 200000 {
		t.Errorf("reattach: %d leaf calls recorded before the gap, %d after; want more than 1000 and fewer than 200000 in each", before, after)
	}
}

// A call still running when dynamic probing removes its function's entry
// probe returns through the return probe, which stays while the call is
// open: it is recorded with its duration, not as a call that did not
// return. gate(N) lasts while 200,000 quick calls of gate are made (more
// than 0.2 s traced, so the check every 5 ms removes the probes well
// before) and 50 ms after they end.
func TestTraceDynamicProbingOpenCall(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "tracecalls", []string{"tracecalls.c"}, "-O2", "-g", "-pthread")
	out := rec(t)
	stdout, errs, code := run(t, "trace", "--dynamic-probing", "1000", "--probing-check", "5ms", "--probing-wait", "10m", "-f", "gate", "-o", out,
		"--", bin, "open", "200000")
	if code != 0 || !strings.Contains(errs, "dynamic probing removed probes") {
		t.Fatalf("exit %d, %s", code, errs)
	}
	var own int64
	for _, l := range strings.Split(stdout, "\n") {
		if v, ok := strings.CutPrefix(l, "open "); ok {
			own, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	r := traceReport(t, out)
	got, unret := r.calls("gate")
	if got <= 1000 || got >= 200001 || unret != 0 || own <= 0 {
		t.Fatalf("gate: %d calls recorded (want its probes removed after 1000), %d did not return; own duration %d ns", got, unret, own)
	}
	var slow callsJSON
	if err := json.Unmarshal([]byte(mustRun(t, "report", "--calls", "^gate$", "--top", "1", "--format", "json", out)), &slow); err != nil {
		t.Fatal(err)
	}
	if len(slow.Calls) != 1 || float64(slow.Calls[0].Incl) < 0.95*float64(own) || float64(slow.Calls[0].Incl) > float64(own) {
		t.Errorf("the open call of gate: %+v, its own clock says %d ns", slow.Calls, own)
	}
}

// leafBursts counts the recorded calls of leaf that started before the
// recording's one spin call and after it.
func leafBursts(t *testing.T, path string) (before, after int) {
	t.Helper()
	names := map[uint32]string{}
	var leaf []uint64
	var gap *recording.Call
	eachRecord(t, path, func(rec recording.Record) {
		switch x := rec.(type) {
		case *recording.Probe:
			names[x.ID] = x.Function
		case *recording.Call:
			switch names[x.Probe] {
			case "leaf":
				leaf = append(leaf, x.Start)
			case "spin":
				if gap != nil {
					t.Fatalf("%s: more than one spin call", path)
				}
				gap = x
			}
		}
	})
	if gap == nil {
		t.Fatalf("%s: no spin call", path)
	}
	for _, s := range leaf {
		switch {
		case s < gap.Start:
			before++
		case s > gap.End:
			after++
		default:
			t.Errorf("a leaf call at %d, during the spin call (%d–%d)", s, gap.Start, gap.End)
		}
	}
	return before, after
}

// Each trace keeps Perun's Dynamic Stats of its functions by build-id;
// --dynamic-baseline reads those of an earlier trace of the same build and
// leaves out, here, a function called more than strict's hard limit
// (100,000 calls).
func TestTraceDynamicBaseline(t *testing.T) {
	testutil.NeedRoot(t)
	t.Setenv("CULPRIT_TRACE_STATS", t.TempDir())
	bin := testutil.C(t, "tracecalls", []string{"tracecalls.c"}, "-O2", "-g", "-pthread")
	args := []string{"trace", "--dynamic-baseline", "strict", "-f", "leaf", "-f", "fib", "-o", rec(t), "--", bin, "leaf", "100001", "fib", "5"}
	_, errs, code := run(t, args...)
	if code != 0 || !strings.Contains(errs, "no earlier trace") || !strings.Contains(errs, "calls of 2 functions") {
		t.Fatalf("first trace: exit %d, %s", code, errs)
	}
	out := rec(t)
	args[8] = out
	_, errs, code = run(t, args...)
	if code != 0 || !strings.Contains(errs, "leaves out 1 functions (1 call_limit)") || !strings.Contains(errs, "calls of 1 functions") {
		t.Fatalf("second trace: exit %d, %s", code, errs)
	}
	r := traceReport(t, out)
	if got, _ := r.calls("leaf"); got != 0 {
		t.Errorf("leaf traced %d times after the baseline left it out", got)
	}
	if got, _ := r.calls("fib"); got != 15 {
		t.Errorf("fib: %d calls, want 15", got)
	}
}

// --call-graph-shaping match leaves out what main cannot reach by direct
// calls (worker is only passed to pthread_create); --optimize basic trims
// the lower levels too.
func TestTraceCallGraphShaping(t *testing.T) {
	testutil.NeedRoot(t)
	t.Setenv("CULPRIT_TRACE_STATS", t.TempDir())
	bin := testutil.C(t, "tracecalls", []string{"tracecalls.c"}, "-O2", "-g", "-pthread")
	out := rec(t)
	_, errs, code := run(t, "trace", "--call-graph-shaping", "match", "-f", "*", "-o", out, "--", bin, "threads", "2", "10", "fib", "5")
	if code != 0 || !strings.Contains(errs, "call-graph shaping (match) keeps") {
		t.Fatalf("exit %d, %s", code, errs)
	}
	r := traceReport(t, out)
	if got, _ := r.calls("worker"); got != 0 {
		t.Errorf("worker traced %d times: main does not call it", got)
	}
	if got, _ := r.calls("fib"); got != 15 {
		t.Errorf("fib: %d calls, want 15", got)
	}
	if got, _ := r.calls("leaf"); got != 20 {
		t.Errorf("leaf: %d calls, want 20", got)
	}
	_, errs, code = run(t, "trace", "--optimize", "basic", "-f", "*", "-o", rec(t), "--", bin, "fib", "5")
	if code != 0 || !strings.Contains(errs, "call-graph shaping (strict) keeps") {
		t.Errorf("--optimize basic: exit %d, %s", code, errs)
	}
}

// --dynamic-sampling chooses every-N-th-call sampling per function: from
// its call-graph level on the first trace of a build; the report's
// estimate of the calls made is within N of the count.
func TestTraceDynamicSampling(t *testing.T) {
	testutil.NeedRoot(t)
	t.Setenv("CULPRIT_TRACE_STATS", t.TempDir())
	bin := testutil.C(t, "tracecalls", []string{"tracecalls.c"}, "-O2", "-g", "-pthread")
	out := rec(t)
	_, errs, code := run(t, "trace", "--dynamic-sampling", "strict", "-f", "leaf", "-f", "main", "-o", out, "--", bin, "leaf", "3000")
	if code != 0 || !strings.Contains(errs, "dynamic sampling (initial") {
		t.Fatalf("exit %d, %s", code, errs)
	}
	for _, f := range traceReport(t, out).Functions {
		switch f.Function {
		case "leaf":
			if f.Every < 2 || f.Estimated+uint64(f.Every) < 3000 || f.Estimated > 3000+uint64(f.Every) {
				t.Errorf("leaf: 1 in %d recorded, %d calls estimated, 3000 made", f.Every, f.Estimated)
			}
		case "main":
			if f.Calls != 1 {
				t.Errorf("main (level 0, every call): %d calls", f.Calls)
			}
		}
	}
}

// traced lists the functions a recording has calls of.
func traced(t *testing.T, path string) []string {
	t.Helper()
	var out []string
	for _, f := range traceReport(t, path).Functions {
		out = append(out, f.Function)
	}
	sort.Strings(out)
	return out
}

// --diff-tracing traces what changed since an older build: a new function,
// one whose control-flow graph changed and, only under strict comparison,
// one whose operand changed; not one renamed with the same code, nor one
// left alone. main is always traced. Every call of what is traced is
// counted.
func TestTraceDiffTracing(t *testing.T) {
	testutil.NeedRoot(t)
	older := testutil.C(t, "difftrace-old", []string{"difftrace.c"}, "-O2", "-g")
	newer := testutil.C(t, "difftrace-new", []string{"difftrace.c"}, "-O2", "-g", "-DNEWER")
	for _, tc := range []struct {
		mode string
		want []string
	}{
		{"soft", []string{"added", "body", "main"}},
		{"semi-strict", []string{"added", "body", "main"}},
		{"strict", []string{"added", "body", "main", "tweak"}},
	} {
		out := rec(t)
		_, errs, code := run(t, "trace", "--diff-tracing", tc.mode, "--diff-base", older, "-f", "*", "-o", out, "--", newer, "40")
		if code != 0 || !strings.Contains(errs, "functions changed") {
			t.Fatalf("%s: exit %d, %s", tc.mode, code, errs)
		}
		r := traceReport(t, out)
		if got := traced(t, out); strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%s: traced %v, want %v", tc.mode, got, tc.want)
		}
		for _, fn := range tc.want {
			if n, _ := r.calls(fn); fn != "main" && n != 40 {
				t.Errorf("%s: %s called %d times, want 40", tc.mode, fn, n)
			}
		}
	}
	// No older build: a usage error that says what to give.
	_, errs, code := run(t, "trace", "--diff-tracing", "soft", "-f", "*", "-o", rec(t), "--", newer, "1")
	if code != 2 || !strings.Contains(errs, "--diff-base") {
		t.Errorf("without --diff-base: exit %d, %s", code, errs)
	}
}

// --diff-git REV also counts as changed the functions the hunks of git
// diff name: soft comparison does not see a new constant in tweak, the
// source diff does.
func TestTraceDiffGit(t *testing.T) {
	testutil.NeedRoot(t)
	git := testutil.NeedTool(t, "git")
	src, err := os.ReadFile(filepath.Join(testutil.Targets(), "difftrace.c"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sh := func(name string, args ...string) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, b)
		}
	}
	// The newer source changes one constant of tweak.
	older := string(src)
	newer := strings.Replace(older, "return a + 7;", "return a + 11;", 1)
	if err := os.WriteFile(filepath.Join(dir, "p.c"), []byte(older), 0o644); err != nil {
		t.Fatal(err)
	}
	sh("gcc", "-O2", "-g", "-o", "old", "p.c")
	sh(git, "init", "-q")
	sh(git, "add", "p.c")
	sh(git, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "older")
	if err := os.WriteFile(filepath.Join(dir, "p.c"), []byte(newer), 0o644); err != nil {
		t.Fatal(err)
	}
	sh("gcc", "-O2", "-g", "-o", "new", "p.c")
	out := rec(t)
	cmd := exec.Command(culprit, "trace", "--diff-tracing", "soft", "--diff-base", "old", "--diff-git", "HEAD", "-f", "*", "-o", out, "--", "./new", "3")
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if got := strings.Join(traced(t, out), " "); got != "main tweak" {
		t.Errorf("traced %s: want main and tweak (named by a hunk)", got)
	}
}

// --static-baseline constant leaves out functions whose machine code has
// no loop and calls only such functions (args3); it keeps those with a
// loop (leaf), recursion (fib) or calls it cannot see into (spin calls
// clock_gettime through the PLT), and main, on the protected top level.
func TestTraceStaticBaseline(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "tracecalls", []string{"tracecalls.c"}, "-O2", "-g", "-pthread")
	out := rec(t)
	_, errs, code := run(t, "trace", "--static-baseline", "constant", "-f", "args3", "-f", "leaf", "-f", "fib", "-f", "spin", "-f", "main",
		"-o", out, "--", bin, "args", "3", "leaf", "10", "fib", "5", "spin", "1", "1")
	if code != 0 || !strings.Contains(errs, "static baseline leaves out 1 functions") {
		t.Fatalf("exit %d, %s", code, errs)
	}
	if got := strings.Join(traced(t, out), " "); got != "fib leaf main spin" {
		t.Errorf("traced %s, want fib leaf main spin", got)
	}
	_, errs, code = run(t, "trace", "--static-baseline", "fast", "-f", "leaf", "-o", rec(t), "--", bin)
	if code != 2 || !strings.Contains(errs, "constant, linear") {
		t.Errorf("--static-baseline fast: exit %d, %s", code, errs)
	}
}

// Pruning leaves out the bottom of the call graph: in tracecalls, the
// functions that call no other traced one deep down (leaf under
// tail_inner, fib) while main stays; the advanced and full pipelines run
// with what they can, saying which method is off and why.
func TestTracePruningAndPipelines(t *testing.T) {
	testutil.NeedRoot(t)
	t.Setenv("CULPRIT_TRACE_STATS", t.TempDir())
	bin := testutil.C(t, "tracecalls", []string{"tracecalls.c"}, "-O2", "-g", "-pthread")
	out := rec(t)
	_, errs, code := run(t, "trace", "--call-graph-shaping", "prune", "-f", "*", "-o", out, "--", bin, "tail", "3", "fib", "4")
	if code != 0 || !strings.Contains(errs, "call-graph shaping (prune) keeps") {
		t.Fatalf("prune: exit %d, %s", code, errs)
	}
	got := traced(t, out)
	if !slices.Contains(got, "main") || slices.Contains(got, "leaf") {
		t.Errorf("prune traced %v: want main, not the bottom function leaf", got)
	}
	for _, p := range []string{"advanced", "full"} {
		out := rec(t)
		_, errs, code := run(t, "trace", "--optimize", p, "-f", "*", "-o", out, "--", bin, "fib", "5")
		if code != 0 || !strings.Contains(errs, "diff tracing is off: no older build") || !strings.Contains(errs, "dynamic sampling") {
			t.Errorf("--optimize %s: exit %d, %s", p, code, errs)
		}
		if p == "full" && !strings.Contains(errs, "static baseline leaves out") {
			t.Errorf("--optimize full: no static baseline in %s", errs)
		}
	}
	_, errs, code = run(t, "trace", "--optimize", "full", "--no-optimize", "static-baseline", "--no-optimize", "dynamic-sampling", "-f", "*", "-o", rec(t), "--", bin, "fib", "5")
	if code != 0 || strings.Contains(errs, "static baseline") || strings.Contains(errs, "dynamic sampling") {
		t.Errorf("--no-optimize: exit %d, %s", code, errs)
	}
	_, errs, code = run(t, "trace", "--optimize", "full", "--no-optimize", "magic", "-f", "*", "-o", rec(t), "--", bin)
	if code != 2 || !strings.Contains(errs, "dynamic-probing") {
		t.Errorf("--no-optimize magic: exit %d, %s", code, errs)
	}
}

// --depth 2 records only calls with fewer than two traced calls open
// below them: of fib(5)'s 15 calls, fib(5), fib(4) and fib(3).
func TestTraceDepth(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "tracecalls", []string{"tracecalls.c"}, "-O2", "-g", "-pthread")
	out, _ := traceRun(t, []string{"--depth", "2", "-f", "fib"}, bin, "fib", "5")
	if got, _ := traceReport(t, out).calls("fib"); got != 3 {
		t.Errorf("--depth 2: %d fib calls recorded, want 3", got)
	}
	_, errs, code := run(t, "trace", "--depth", "-1", "-f", "fib", "-o", rec(t), "--", bin)
	if code != 2 || !strings.Contains(errs, "--depth") {
		t.Errorf("--depth -1: exit %d, %s", code, errs)
	}
}

// --strategy userspace traces the program's own functions and not the
// helpers the compiler and C runtime add; u_sampled samples them 1 in 20,
// the first call kept.
func TestTraceStrategy(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "tracecalls", []string{"tracecalls.c"}, "-O2", "-g", "-pthread")
	out, stdout := traceRun(t, []string{"--strategy", "userspace"}, bin, "leaf", "50", "fib", "6")
	want := counts(t, stdout)
	r := traceReport(t, out)
	for _, fn := range []string{"leaf", "fib", "main"} {
		if got, _ := r.calls(fn); fn != "main" && got != want[fn] || fn == "main" && got != 1 {
			t.Errorf("userspace: %s traced %d times, want %d", fn, got, want[fn])
		}
	}
	for _, f := range r.Functions {
		if strings.HasPrefix(f.Function, "__") || f.Function == "frame_dummy" || f.Function == "_init" {
			t.Errorf("userspace traced the helper %s", f.Function)
		}
	}
	// What runs before main (the C runtime's _init, frame_dummy from
	// .init_array) and after exit has symbols of no size: all traces
	// them, each once.
	out, _ = traceRun(t, []string{"--strategy", "all"}, bin, "leaf", "5")
	r = traceReport(t, out)
	for _, fn := range []string{"_init", "frame_dummy", "_fini", "main"} {
		if got, _ := r.calls(fn); got != 1 {
			t.Errorf("all: %s traced %d times, want 1", fn, got)
		}
	}
	out, _ = traceRun(t, []string{"--strategy", "u_sampled"}, bin, "leaf", "50")
	for _, f := range traceReport(t, out).Functions {
		if f.Function == "leaf" && (f.Calls != 3 || f.Every != 20) {
			t.Errorf("u_sampled: leaf %d calls recorded 1 in %d, want 3 (calls 1, 21, 41) 1 in 20", f.Calls, f.Every)
		}
	}
}

// --args formats a return value by its DWARF type: narrow returns an int
// in EAX, so -7 is 0xfffffff9 in RAX and shown as -7. half returns a
// double in XMM0, which probes cannot read: its calls show their argument
// and say that the result is not recorded, not what RAX held (a).
func TestTraceTypedReturn(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "tracecalls", []string{"tracecalls.c"}, "-O2", "-g", "-pthread")
	out, stdout := traceRun(t, []string{"-f", "narrow", "-f", "half", "--args"}, bin, "args", "4")
	var h callsJSON
	if err := json.Unmarshal([]byte(mustRun(t, "report", "--calls", "^half$", "--top", "0", "--format", "json", out)), &h); err != nil {
		t.Fatal(err)
	}
	if len(h.Calls) != 4 {
		t.Errorf("%d half calls traced, the program made 4", len(h.Calls))
	}
	for i, c := range h.Calls {
		if len(c.Args) != 1 || c.Args[0].Name != "a" || c.Ret != "(double, not recorded)" {
			t.Errorf("half call %d: arguments %+v returning %q, want a and (double, not recorded)", i, c.Args, c.Ret)
		}
	}
	var want []string
	for _, l := range strings.Split(stdout, "\n") {
		if v, ok := strings.CutPrefix(l, "narrow "); ok {
			want = append(want, v)
		}
	}
	var a callsJSON
	if err := json.Unmarshal([]byte(mustRun(t, "report", "--calls", "narrow", "--top", "0", "--format", "json", out)), &a); err != nil {
		t.Fatal(err)
	}
	sort.Slice(a.Calls, func(i, j int) bool { return a.Calls[i].Start < a.Calls[j].Start })
	var got []string
	for _, c := range a.Calls {
		got = append(got, c.Ret)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") || len(want) != 4 {
		t.Errorf("narrow returned %v, the program printed %v", got, want)
	}
}

// --usdt records each hit of a USDT probe, its semaphore set while traced
// (the program builds app:costly's arguments only then, and counts it);
// --line records each time a source line's code is reached.
func TestTracePointProbes(t *testing.T) {
	testutil.NeedRoot(t)
	needSDT(t)
	bin := testutil.C(t, "usdtprog", []string{"usdtprog.c"}, "-O2", "-g")
	src, err := os.ReadFile(filepath.Join(testutil.Targets(), "usdtprog.c"))
	if err != nil {
		t.Fatal(err)
	}
	line := 0
	for i, l := range strings.Split(string(src), "\n") {
		if strings.Contains(l, "/* LINE-PROBE */") {
			line = i + 1
		}
	}
	spec := "usdtprog.c:" + strconv.Itoa(line)
	out, stdout := traceRun(t, []string{"--usdt", "app:tick", "--usdt", "app:costly", "--line", spec}, bin, "41")
	want := counts(t, stdout)
	r := traceReport(t, out)
	for fn, w := range map[string]int{"app:tick": want["app:tick"], "app:costly": want["app:costly"], spec: want["line"]} {
		if got, _ := r.calls(fn); got != w || w == 0 {
			t.Errorf("%s: %d hits recorded, the program counted %d", fn, got, w)
		}
	}
	if want["app:costly"] != 20 {
		t.Errorf("app:costly ran %d times: its semaphore was not set while traced", want["app:costly"])
	}
	_, errs, code := run(t, "trace", "--usdt", "app:nosuch", "-o", rec(t), "--", bin)
	if code == 0 || !strings.Contains(errs, "app:tick") {
		t.Errorf("--usdt app:nosuch: exit %d, %s (want the probes it has)", code, errs)
	}
	_, errs, code = run(t, "trace", "--line", "usdtprog.c:2", "-o", rec(t), "--", bin)
	if code == 0 || !strings.Contains(errs, "no code for line 2") {
		t.Errorf("--line on a comment: exit %d, %s", code, errs)
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// The pipelines keep the functions that took over 1% of the exclusive
// time of an earlier trace (without CPU samples), whatever the methods say: leaf, called more
// than strict dynamic baseline's hard limit, stays with --optimize basic
// and goes with --keep-hot 0.
func TestTraceKeepHot(t *testing.T) {
	testutil.NeedRoot(t)
	t.Setenv("CULPRIT_TRACE_STATS", t.TempDir())
	bin := testutil.C(t, "tracecalls", []string{"tracecalls.c"}, "-O2", "-g", "-pthread")
	trace := func(extra ...string) (string, string) {
		out := rec(t)
		// Without CPU samples the exclusive times of the traces decide.
		args := append(append([]string{"trace", "--optimize", "basic", "--cpu-sample", "0"}, extra...), "-f", "leaf", "-f", "fib", "-o", out, "--", bin, "leaf", "100001", "fib", "5")
		_, errs, code := run(t, args...)
		if code != 0 {
			t.Fatalf("exit %d, %s", code, errs)
		}
		return out, errs
	}
	trace() // the first trace of the build: statistics only
	out, errs := trace("--no-optimize", "dynamic-probing")
	// leaf; fib's 15 calls too when the machine is busy enough that one
	// of them is preempted (exclusive times are wall-clock time).
	if !regexp.MustCompile(`culprit: [12] functions over 1% of the exclusive time`).MatchString(errs) {
		t.Errorf("second trace: %s", errs)
	}
	if got, _ := traceReport(t, out).calls("leaf"); got != 100001 {
		t.Errorf("leaf: %d calls recorded, want all 100001 (it is hot)", got)
	}
	// The statistics are now of every call: over the hard limit. (A trace
	// that probes leaf dynamically records only some of its calls, and
	// its statistics would say so.) Left out, leaf keeps them.
	out, _ = trace("--keep-hot", "0")
	if got, _ := traceReport(t, out).calls("leaf"); got != 0 {
		t.Errorf("--keep-hot 0: leaf traced %d times, want left out (call_limit)", got)
	}
	// By default the pipeline probes it dynamically: removed after 200
	// calls (checked every 20 ms), set again after 1 s.
	out, errs = trace()
	if !strings.Contains(errs, "probed dynamically: removed after 200 calls") {
		t.Errorf("fourth trace: %s", errs)
	}
	if got, _ := traceReport(t, out).calls("leaf"); got <= 200 || got >= 100001 {
		t.Errorf("leaf probed dynamically: %d calls recorded, want over 200 and fewer than all 100001\n%s", got, errs)
	}
}

// --hot-from judges which functions are hot by an untraced sampling
// profile: leaf, called 300,000 times for a few per cent of the run, is
// kept by the basic pipeline and probed dynamically, its probes removed
// after 200 calls; without dynamic probing every call is recorded. The
// run's other work is a 30 ms spin: its time is the clock's, so leaf's
// 1-3 ms stay well over 1% of the run however fast the machine is (and
// more on a busy one, where the spin gets less of the CPU).
func TestTraceHotFrom(t *testing.T) {
	testutil.NeedRoot(t)
	t.Setenv("CULPRIT_TRACE_STATS", t.TempDir())
	bin := testutil.C(t, "tracecalls", []string{"tracecalls.c"}, "-O2", "-g", "-pthread")
	work := []string{bin, "leaf", "300000", "spin", "30", "1"}
	ref := rec(t)
	if _, errs, code := run(t, append([]string{"record", "-F", "4999", "-o", ref, "--"}, work...)...); code != 0 {
		t.Fatalf("record: exit %d, %s", code, errs)
	}
	trace := func(extra ...string) (traceJSON, string) {
		out := rec(t)
		args := append(append([]string{"trace", "--optimize", "basic", "--hot-from", ref}, extra...), "-f", "leaf", "-f", "spin", "-f", "main", "-o", out, "--")
		_, errs, code := run(t, append(args, work...)...)
		if code != 0 {
			t.Fatalf("trace %v: exit %d, %s", extra, code, errs)
		}
		return traceReport(t, out), errs
	}
	r, errs := trace()
	if !strings.Contains(errs, "of the run's time by") || !strings.Contains(errs, "probed dynamically: removed after 200 calls") ||
		!strings.Contains(errs, "dynamic probing removed probes") || !strings.Contains(errs, "leaf") {
		t.Errorf("stderr:\n%s", errs)
	}
	if got, _ := r.calls("leaf"); got <= 200 || got >= 300000 {
		t.Errorf("leaf: %d calls recorded, want over 200 and fewer than 300000\n%s", got, errs)
	}
	if got, _ := r.calls("spin"); got != 1 {
		t.Errorf("spin: %d calls recorded, want 1", got)
	}
	r, errs = trace("--no-optimize", "dynamic-probing")
	if got, _ := r.calls("leaf"); got != 300000 {
		t.Errorf("without dynamic probing, leaf: %d calls recorded, want all 300000\n%s", got, errs)
	}
	if _, errs, code := run(t, "trace", "--hot-from", ref, "-f", "leaf", "-o", rec(t), "--", bin, "leaf", "1"); code != 2 || !strings.Contains(errs, "--hot-from goes with") {
		t.Errorf("--hot-from alone: exit %d, %s", code, errs)
	}
}

// --probe-budget bounds the functions probed after every method to a
// share of those matched (at least 10), in trimming's order: main, then
// level 1, then level 2 by how much each reaches. The functions
// --keep-hot protects count toward it and stay, however deep: hot, where
// tracewide spends its time, three levels down.
// When the functions kept as hot fill the probe budget by themselves,
// the budget still leaves main probed: it costs one call and times the
// run (twelve functions of about 8% each, a budget of 10).
func TestTraceProbeBudgetKeepsRoot(t *testing.T) {
	testutil.NeedRoot(t)
	t.Setenv("CULPRIT_TRACE_STATS", t.TempDir())
	bin := testutil.C(t, "tracehotwide", []string{"tracehotwide.c"}, "-O2", "-g")
	ref := rec(t)
	if _, errs, code := run(t, "record", "-F", "4999", "-o", ref, "--", bin, "20000000"); code != 0 {
		t.Fatalf("record: exit %d, %s", code, errs)
	}
	out := rec(t)
	_, errs, code := run(t, "trace", "--optimize", "basic", "--hot-from", ref, "--no-optimize", "dynamic-probing", "-f", "*", "-o", out, "--", bin, "1000")
	// The hot functions alone are over the budget's 10 (the least it
	// allows), which is what would leave main out.
	if code != 0 || !strings.Contains(errs, "12 functions over 1%") {
		t.Fatalf("exit %d, %s (want the twelve spins kept as hot)", code, errs)
	}
	r := traceReport(t, out)
	if got, _ := r.calls("main"); got != 1 {
		t.Errorf("main: %d calls recorded, want 1: the budget left the root out\n%s", got, errs)
	}
	for k := 0; k < 12; k++ {
		if got, _ := r.calls("spin" + strconv.Itoa(k)); got != 1 {
			t.Errorf("spin%d: %d calls recorded, want 1 (over 1%% of the run: kept)\n%s", k, got, errs)
		}
	}
}

// Keep-hot on C++: the samples of an untraced run name both instances
// of a class template's member alike (geo::Accum::add), so when that
// name is hot both are kept, with every call, though only
// geo::Accum<long>::add spins; svc::note, called as often from the same
// caller but cold, is left out with it (four calls down from main, in a
// call graph wide enough that trimming and the probe budget leave the
// lower levels out), and main stays.
func TestTraceKeepHotCXXInstances(t *testing.T) {
	testutil.NeedRoot(t)
	t.Setenv("CULPRIT_TRACE_STATS", t.TempDir())
	bin := testutil.CXX(t, "cxxhot", []string{"cxxhot.cc"}, "-O2", "-g")
	ref := rec(t)
	if _, errs, code := run(t, "record", "-F", "4999", "-o", ref, "--", bin, "20000"); code != 0 {
		t.Fatalf("record: exit %d, %s", code, errs)
	}
	out := rec(t)
	stdout, errs, code := run(t, "trace", "--optimize", "basic", "--hot-from", ref, "--no-optimize", "dynamic-probing", "-f", "*", "-o", out, "--", bin, "3000")
	// Both instances are over 1%; another function can be too by its
	// samples' noise on a busy machine (the run's loader, a page fault),
	// so the calls below, not the count, say what was kept.
	if code != 0 || !strings.Contains(errs, "functions over 1% of the run's time") {
		t.Fatalf("exit %d, %s (want the two instances of add kept as hot)", code, errs)
	}
	want := counts(t, stdout)
	r := traceReport(t, out)
	for fn, n := range map[string]int{"geo::Accum<long>::add(long, long)": want["add_long"], "geo::Accum<double>::add(double, long)": want["add_double"]} {
		if got, _ := r.calls(fn); got != n || n != 3000 {
			t.Errorf("%s: %d calls recorded, the program made %d: want every one (its name is hot)\n%s", fn, got, n, errs)
		}
	}
	for _, fn := range []string{"svc::note", "svc::apply"} {
		if got, _ := r.calls(fn); got != 0 || want["note"] != 3000 {
			t.Errorf("%s: %d calls recorded, want none: it is cold, three or four calls down\n%s", fn, got, errs)
		}
	}
	if got, _ := r.calls("main"); got != 1 {
		t.Errorf("main: %d calls recorded, want 1\n%s", got, errs)
	}
}

func TestTraceProbeBudget(t *testing.T) {
	testutil.NeedRoot(t)
	t.Setenv("CULPRIT_TRACE_STATS", t.TempDir())
	bin := testutil.C(t, "tracewide", []string{"tracewide.c"}, "-O2", "-g")
	written := regexp.MustCompile(`calls of (\d+) functions written`)
	probed := func(errs string) int {
		m := written.FindStringSubmatch(errs)
		if m == nil {
			t.Fatalf("no summary line in:\n%s", errs)
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	mids := func(r traceJSON, errs string) {
		t.Helper()
		for _, f := range []string{"main", "mid0", "mid1", "mid2", "mid3", "mid4", "mid5"} {
			if got, _ := r.calls(f); got != 1 {
				t.Errorf("%s: %d calls recorded, want 1 (the top levels come first)\n%s", f, got, errs)
			}
		}
	}
	out := rec(t)
	_, errs, code := run(t, "trace", "--probe-budget", "10", "-f", "*", "-o", out, "--", bin, "1000")
	if code != 0 || !strings.Contains(errs, "the probe budget (10% of") {
		t.Fatalf("exit %d, %s", code, errs)
	}
	if n := probed(errs); n != 10 {
		t.Errorf("%d functions probed, want 10 (the least the budget allows)\n%s", n, errs)
	}
	r := traceReport(t, out)
	mids(r, errs)
	if got, _ := r.calls("hot"); got != 0 {
		t.Errorf("hot: %d calls recorded, want none: it is three levels down", got)
	}

	ref := rec(t)
	if _, errs, code := run(t, "record", "-F", "4999", "-o", ref, "--", bin, "20000000"); code != 0 {
		t.Fatalf("record: exit %d, %s", code, errs)
	}
	out = rec(t)
	_, errs, code = run(t, "trace", "--optimize", "basic", "--hot-from", ref, "--no-optimize", "dynamic-probing", "-f", "*", "-o", out, "--", bin, "20000")
	if code != 0 || !strings.Contains(errs, "the probe budget (10% of") {
		t.Fatalf("exit %d, %s", code, errs)
	}
	if n := probed(errs); n != 10 {
		t.Errorf("basic pipeline: %d functions probed, want 10\n%s", n, errs)
	}
	r = traceReport(t, out)
	mids(r, errs)
	if got, _ := r.calls("hot"); got != 20000 {
		t.Errorf("hot: %d calls recorded, want all 20000: it is over 1%% of the run\n%s", got, errs)
	}
	_, errs, code = run(t, "trace", "--optimize", "basic", "--no-optimize", "call-graph-shaping", "--probe-budget", "0", "-f", "*", "-o", rec(t), "--", bin, "1")
	if code != 0 || strings.Contains(errs, "probe budget") || probed(errs) <= 10 {
		t.Errorf("--probe-budget 0: exit %d, %s", code, errs)
	}
}

// Every trace samples the CPU beside its probes and pools the samples by
// build: the next pipeline keeps what they say is over 1% of the run with
// no profile given. In tracewide nearly all the time is hot's, three
// levels down, where trimming leaves it out: the first basic trace (no
// samples yet) does not probe it, the second does. A build's first trace
// samples at 99 Hz, and the pool holds only what it took: hot has about
// half of an untraced run's samples (culprit record), so a 27 ms run
// (20,000,000 calls) pools 2 or 3 samples and misses hot one time in five,
// and the second trace then rightly leaves it out. 200,000,000 calls take
// some 270 ms of the CPU, whatever the load (the samples count the
// program's CPU time): about 27 samples, none of them hot's one time in a
// billion.
func TestTraceKeepHotFromSamples(t *testing.T) {
	testutil.NeedRoot(t)
	dir := t.TempDir()
	t.Setenv("CULPRIT_TRACE_STATS", dir)
	bin := testutil.C(t, "tracewide", []string{"tracewide.c"}, "-O2", "-g")
	trace := func() (traceJSON, string) {
		out := rec(t)
		_, errs, code := run(t, "trace", "--optimize", "basic", "-f", "*", "-o", out, "--", bin, "200000000")
		if code != 0 {
			t.Fatalf("exit %d, %s", code, errs)
		}
		return traceReport(t, out), errs
	}
	r, errs := trace()
	if got, _ := r.calls("hot"); got != 0 || !strings.Contains(errs, "time kept for choosing the next trace's hot functions") {
		t.Fatalf("first trace: hot has %d calls recorded, want none (no samples yet)\n%s", got, errs)
	}
	// The next trace's rate comes from what a sample costs here: it is
	// measured once the pool is kept, and kept beside it.
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	i := slices.IndexFunc(files, func(f string) bool { return strings.HasSuffix(f, ".cpu.json") })
	if len(files) != 3 || i < 0 || !slices.Contains(files, filepath.Join(dir, "sample-cost.json")) {
		t.Fatalf("files kept: %v, want the stats, the pooled samples and the cost of a sample", files)
	}
	var pool struct {
		Samples int            `json:"samples"`
		Counts  map[string]int `json:"counts"`
	}
	if data, err := os.ReadFile(files[i]); err != nil || json.Unmarshal(data, &pool) != nil {
		t.Fatalf("reading the pool %s: %v", files[i], err)
	}
	// The premise: the pool shows hot over 1% of the run.
	if n := pool.Counts["hot"]; n == 0 || float64(n) <= 0.01*float64(pool.Samples) {
		t.Fatalf("the first trace pooled %d samples, %d of them hot's: want hot over 1%%\n%s", pool.Samples, n, errs)
	}
	r, errs = trace()
	if got, _ := r.calls("hot"); got < 200 || !strings.Contains(errs, "of the time of 1 earlier traces by") {
		t.Errorf("second trace: hot has %d calls recorded, want it probed (at least its first 200)\n%s", got, errs)
	}
	if got, _ := r.calls("main"); got != 1 {
		t.Errorf("second trace: main has %d calls, want 1", got)
	}
}

// --trap-budget in trace is variance's: over the budget every probe is
// removed for a pause, the calls made then are not recorded, and the
// report says so. 300,000 traced calls take over 0.3 s at any per-call
// cost a uprobe pair has (≥ 1 µs), so the first 50 ms window ends while
// leaf is being called, far over 2,000 traps a second.
func TestTraceTrapBudget(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "tracecalls", []string{"tracecalls.c"}, "-O2", "-g", "-pthread")
	out := rec(t)
	stdout, errs, code := run(t, "trace", "--trap-budget", "2000", "--window", "50ms", "-f", "leaf", "-o", out, "--", bin, "leaf", "300000")
	if code != 0 || !strings.Contains(errs, "over the budget of 2000 (--trap-budget)") {
		t.Fatalf("exit %d, %s", code, errs)
	}
	made := counts(t, stdout)["leaf"]
	got, _ := traceReport(t, out).calls("leaf")
	if made != 300000 || got == 0 || got >= made {
		t.Errorf("%d of %d leaf calls recorded, want some but not all", got, made)
	}
	// Every view of the trace says so, and says each warning once (the
	// samples taken in the probes' traps bring warnings of their own).
	budget := "to keep within a trap budget (--trap-budget): calls made then are not counted"
	for _, args := range [][]string{{"report", out}, {"report", "--calls", "leaf", out}} {
		_, rerr, code := run(t, args...)
		if code != 0 || strings.Count(rerr, budget) != 1 {
			t.Errorf("%s: exit %d, want the trap budget's warning once: %s", strings.Join(args[:len(args)-1], " "), code, rerr)
		}
		seen := map[string]bool{}
		for _, l := range strings.Split(strings.TrimSpace(rerr), "\n") {
			if l != "" && seen[l] {
				t.Errorf("%s: %q printed twice", strings.Join(args[:len(args)-1], " "), l)
			}
			seen[l] = true
		}
	}
	if _, errs, code := run(t, "trace", "--trap-budget", "100", "--dynamic-probing", "10", "-f", "leaf", "-o", rec(t), "--", bin, "leaf", "1"); code != 2 || !strings.Contains(errs, "use one") {
		t.Errorf("--trap-budget with --dynamic-probing: exit %d, %s", code, errs)
	}
}

// --args --read records struct members through pointer parameters,
// named by their path: each begin and finish call's j->req->hdr.id (two
// pointer steps and a nested member, offsets from DWARF) is one of the
// ids the program printed, each id once per function.
func TestTraceArgsStructFields(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "varfields", []string{"varfields.c"}, "-O2", "-g", "-pthread")
	out, stdout := traceRun(t, []string{"--args", "--read", "j->req->hdr.id", "-f", "begin", "-f", "finish"}, bin, "40")
	want := map[string]bool{}
	for _, l := range strings.Split(stdout, "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "lat" {
			want[f[1]] = true
		}
	}
	if len(want) != 40 {
		t.Fatalf("the program printed %d ids, want 40", len(want))
	}
	var a callsJSON
	if err := json.Unmarshal([]byte(mustRun(t, "report", "--calls", "^(begin|finish)$", "--top", "0", "--format", "json", out)), &a); err != nil {
		t.Fatal(err)
	}
	seen := map[string]map[string]bool{"begin": {}, "finish": {}}
	for _, c := range a.Calls {
		for _, x := range c.Args {
			if x.Name == "j->req->hdr.id" {
				if !want[x.Value] || seen[c.Function][x.Value] {
					t.Errorf("%s: j->req->hdr.id=%s, not one of the program's ids or seen twice", c.Function, x.Value)
				}
				seen[c.Function][x.Value] = true
			}
		}
	}
	for fn, ids := range seen {
		if len(ids) != 40 {
			t.Errorf("%s: %d calls with j->req->hdr.id, want 40", fn, len(ids))
		}
	}
	if _, errs, code := run(t, "trace", "--read", "j->prio", "-f", "begin", "-o", rec(t), "--", bin, "4"); code != 2 || !strings.Contains(errs, "--read goes with --args") {
		t.Errorf("--read without --args: exit %d, %s", code, errs)
	}
}

// A function the kernel will not probe (its first instruction has a lock
// prefix) is left out with a warning that names it; the others are traced.
func TestTraceRefusedProbe(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "lockprefix", []string{"lockprefix.c"}, "-O2", "-g")
	out := rec(t)
	_, stderr, code := run(t, "trace", "-f", "bump", "-f", "locked_inc", "-f", "main", "-o", out, "--", bin, "300")
	if code != 0 || !strings.Contains(stderr, "refused the probes of 1 of the functions (locked_inc)") {
		t.Fatalf("trace: exit %d\n%s", code, stderr)
	}
	r := traceReport(t, out)
	if got, _ := r.calls("bump"); got != 300 {
		t.Errorf("bump: %d calls traced, want 300", got)
	}
	if got, _ := r.calls("main"); got != 1 {
		t.Errorf("main: %d calls traced, want 1", got)
	}
	// Alone, it is an error that says why.
	_, stderr, code = run(t, "trace", "-f", "locked_inc", "-o", rec(t), "--", bin, "3")
	if code == 0 || !strings.Contains(stderr, "refused to probe locked_inc") {
		t.Errorf("trace of only the refused function: exit %d\n%s", code, stderr)
	}
}

// A trace whose probes cost the program more than its own code warns,
// with the function called most and what cuts the traps; one whose
// probes cost little does not. leaf(10) takes a few ns against the two
// traps' 0.5-10 µs, so 300,000 traced calls spend far more time in the
// traps than in the program however busy the machine (a busier one slows
// the traps too); 3 calls of a 30 ms spin spend almost none there. The
// samples are taken at 999 Hz: the warning wants 20 or more, and where
// the traps are fast the calls take 0.2 s, 19 samples at the first
// trace's default 99 Hz.
func TestTraceWarnsProbeCost(t *testing.T) {
	testutil.NeedRoot(t)
	t.Setenv("CULPRIT_TRACE_STATS", t.TempDir())
	bin := testutil.C(t, "tracecalls", []string{"tracecalls.c"}, "-O2", "-g", "-pthread")
	out := rec(t)
	_, errs, code := run(t, "trace", "-f", "leaf", "--cpu-sample", "999", "-o", out, "--", bin, "leaf", "300000")
	if code != 0 || !strings.Contains(errs, "the probes cost the program more time than its own code") ||
		!strings.Contains(errs, "leaf (300000 calls)") || !strings.Contains(errs, "--dynamic-probing N") {
		t.Errorf("hot leaf: exit %d, want a warning naming leaf:\n%s", code, errs)
	}
	_, errs, code = run(t, "trace", "-f", "spin", "--cpu-sample", "999", "-o", out, "--", bin, "spin", "30", "3")
	if code != 0 || strings.Contains(errs, "the probes cost") {
		t.Errorf("three spins: exit %d, want no cost warning:\n%s", code, errs)
	}
}

// A C++ program is traced by the names its profile shows (svc::handle,
// geo::Accum*), each call counted, the report naming them so; the two
// instances of a template member are told apart by their full names. The
// names without their outer scopes (handle, Accum::add) select the same
// functions and nothing else.
func TestTraceCXXNames(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.CXX(t, "cxxtrace", []string{"cxxtrace.cc"}, "-O2", "-g", "-pthread")
	// The same functions named in full, and by their names without the
	// scopes around them (as gdb takes them): both of Accum's add
	// overloads by their short name, handle without its namespace.
	for _, pats := range [][]string{{"svc::handle", "geo::Accum*"}, {"handle", "Accum::add"}} {
		out := rec(t)
		args := []string{"trace", "-o", out}
		for _, p := range pats {
			args = append(args, "-f", p)
		}
		stdout, stderr, code := run(t, append(args, "--", bin, "500")...)
		if code != 0 {
			t.Fatalf("%q: exit %d\n%s", pats, code, stderr)
		}
		want := counts(t, stdout)
		r := traceReport(t, out)
		wantCalls := map[string]int{
			"svc::handle":                     want["handle"],
			"geo::Accum<long>::add(long)":     want["handle"] - want["thrown"],
			"geo::Accum<double>::add(double)": want["handle"] - want["thrown"],
		}
		for fn, n := range wantCalls {
			if got, unret := r.calls(fn); got != n || n == 0 || unret != 0 {
				t.Errorf("%q: %s: %d calls traced (%d did not return), the program made %d", pats, fn, got, unret, n)
			}
		}
		for _, f := range r.Functions {
			if _, ok := wantCalls[f.Function]; !ok {
				t.Errorf("%q: %s traced too", pats, f.Function)
			}
		}
	}
	// A member's bare name traces it in every class: area both
	// overriders (one call of either per request that parsed), nothing
	// else.
	out := rec(t)
	stdout, stderr, code := run(t, "trace", "-o", out, "-f", "area", "--", bin, "500")
	if code != 0 {
		t.Fatalf("-f area: exit %d\n%s", code, stderr)
	}
	want := counts(t, stdout)
	r := traceReport(t, out)
	square, _ := r.calls("geo::Square::area")
	strip, _ := r.calls("geo::Strip::area")
	if parsed := want["handle"] - want["thrown"]; square == 0 || strip == 0 || square+strip != parsed || len(r.Functions) != 2 {
		t.Errorf("-f area: Square::area %d and Strip::area %d calls traced (%d functions), want %d in all, some of each, nothing else", square, strip, len(r.Functions), parsed)
	}
}

// Exceptions unwind through traced C++ calls and the program runs on as
// untraced: same output, exit 0 (a uretprobe's trampoline in the stack
// would make the unwinder give up and the runtime call std::terminate).
// At -O0 and -O2, every call of each function is counted, and the calls
// an exception left are counted as such, ended at the catch or clean-up
// that the unwinding reached (flag unwound): parse throws, nest's
// recursion destroys a string at each level on the way up, handle
// catches and then sleeps 30 ms, which a call ended only at the next
// traced event would include. A function that ends by a tail call (at
// -O2: check jumps to parse, finish to scale, nest(0) to check) ends at
// the jump, so an exception after it does not leave it.
func TestTraceCXXExceptions(t *testing.T) {
	testutil.NeedRoot(t)
	for _, opt := range []string{"-O0", "-O2"} {
		t.Run(opt, func(t *testing.T) {
			bin := testutil.CXX(t, "cxxunwind"+opt, []string{"cxxunwind.cc"}, opt, "-g", "-pthread")
			plain, err := exec.Command(bin, "40").Output()
			if err != nil {
				t.Fatal(err)
			}
			out := rec(t)
			stdout, stderr, code := run(t, "trace", "-o", out, "-f", "svc::*", "--", bin, "40")
			if code != 0 || stdout != string(plain) {
				t.Fatalf("traced: exit %d, output\n%s\nuntraced:\n%s\n%s", code, stdout, plain, stderr)
			}
			want := counts(t, stdout)
			thrown := want["thrown"]
			if thrown == 0 {
				t.Fatal("the program threw nothing")
			}
			r := traceReport(t, out)
			unwound := map[string]int{}
			for _, f := range r.Functions {
				unwound[f.Function] = f.Unwound
				if f.Unwound != f.Unreturned {
					t.Errorf("%s: %d calls did not return, %d of them by exceptions (want all)", f.Function, f.Unreturned, f.Unwound)
				}
			}
			for _, fn := range []string{"handle", "nest", "check", "parse", "finish"} {
				if got, _ := r.calls("svc::" + fn); got != want[fn] {
					t.Errorf("svc::%s: %d calls traced, the program made %d", fn, got, want[fn])
				}
			}
			// Calls an exception left: parse's always; each level of
			// nest but the innermost, which may have jumped to check.
			// scale, a leaf, keeps its uretprobe (no exception can
			// pass through it) beside the others' RET probes, and is
			// called once by each finish (at -O2 by a tail call).
			if got, unret := r.calls("svc::scale"); got != want["finish"] || unret != 0 {
				t.Errorf("svc::scale: %d calls traced (%d did not return), the program made %d", got, unret, want["finish"])
			}
			if unwound["svc::parse"] != thrown || unwound["svc::handle"] != 0 || unwound["svc::finish"] != 0 {
				t.Errorf("calls left by exceptions %v, want parse %d, handle and finish none", unwound, thrown)
			}
			if n := unwound["svc::nest"]; n != 3*thrown && n != 4*thrown {
				t.Errorf("nest: %d calls left by exceptions, want 3 or 4 per exception (%d)", n, thrown)
			}
			if opt == "-O0" && (unwound["svc::nest"] != 4*thrown || unwound["svc::check"] != thrown) {
				t.Errorf("-O0 (no tail calls): calls left by exceptions %v, want nest %d, check %d", unwound, 4*thrown, thrown)
			}
			// Each ended when the unwinding reached the catch or a
			// clean-up, at least the catch's 30 ms sleep before the
			// call of handle it was made in (a busier machine only
			// widens the gap).
			var c callsJSON
			if err := json.Unmarshal([]byte(mustRun(t, "report", "--calls", "^svc::(parse|nest|check|handle)$", "--top", "0", "--format", "json", out)), &c); err != nil {
				t.Fatal(err)
			}
			type span struct{ start, end float64 }
			handles := map[uint32][]span{}
			for _, call := range c.Calls {
				if call.Function == "svc::handle" {
					handles[call.TID] = append(handles[call.TID], span{call.Start, call.Start + float64(call.Incl)/1e9})
				}
			}
			late, seen := 0, 0
			for _, call := range c.Calls {
				if !call.Unwound {
					continue
				}
				end := call.Start + float64(call.Incl)/1e9
				for _, h := range handles[call.TID] {
					if h.start <= call.Start && call.Start < h.end {
						seen++
						if end > h.end-0.030 {
							late++
						}
					}
				}
			}
			if n := unwound["svc::parse"] + unwound["svc::nest"] + unwound["svc::check"]; seen != n || late > 0 {
				t.Errorf("of %d calls left by exceptions, %d lie in a call of handle and %d of those end less than 30 ms before it: not ended at the unwinding", n, seen, late)
			}
		})
	}
}
