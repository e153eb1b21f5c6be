package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// --usdt PROVIDER:BEGIN:END times the code between two USDT probes as a
// call: each pair's duration lies between the program's clock readings
// inside it and around it;
// nested pairs (a recursion) keep their depths; a begin whose end the
// code skipped (an early return) is counted as a call that did not
// return, and is retired when its function has returned, so it is not
// the caller of what runs next. LIB@ puts USDT pairs, USDT probes and
// --line in a library the program dlopens, their semaphores counted up
// there too. At -O2 the begins' frames are found by rsp, at -O0 by rbp.
func TestTraceUSDTPairs(t *testing.T) {
	testutil.NeedRoot(t)
	needSDT(t)
	lib := testutil.C(t, "libusdtpair.so", []string{"usdtpairlib.c"}, "-shared", "-fPIC", "-O2", "-g")
	src, err := os.ReadFile(filepath.Join(testutil.Targets(), "usdtpairlib.c"))
	if err != nil {
		t.Fatal(err)
	}
	line := 0
	for i, l := range strings.Split(string(src), "\n") {
		if strings.Contains(l, "/* LIB-LINE */") {
			line = i + 1
		}
	}
	lineSpec := "usdtpairlib.c:" + strconv.Itoa(line)
	const n, depth, tries, steps = 6, 4, 10, 50
	for _, opt := range []string{"-O2", "-O0"} {
		bin := testutil.C(t, "usdtpair"+opt, []string{"usdtpair.c"}, opt, "-g")
		out, stdout := traceRun(t, []string{"--args",
			"--usdt", "app:req_begin:req_end", "--usdt", "app:nest_begin:nest_end", "--usdt", "app:try_begin:try_end",
			"--usdt", lib + "@lib:step_begin:step_end", "--usdt", filepath.Base(lib) + "@lib:tick", "--line", lib + "@" + lineSpec,
		}, bin, strconv.Itoa(n), "2", strconv.Itoa(depth), strconv.Itoa(tries), lib, strconv.Itoa(steps))
		want := counts(t, stdout)
		if want["armed"] != n || want["lib:armed"] != steps {
			t.Errorf("%s: the pairs' semaphores were set in %d of %d requests and %d of %d library steps", opt, want["armed"], n, want["lib:armed"], steps)
		}
		r := traceReport(t, out)
		for fn, w := range map[string]int{"app:req_begin:req_end": want["app:req"], "app:nest_begin:nest_end": want["app:nest"],
			"lib:step_begin:step_end": want["lib:step"], "lib:tick": want["lib:tick"], lineSpec: want["lib:line"]} {
			if got, unret := r.calls(fn); got != w || unret != 0 || w == 0 {
				t.Errorf("%s: %s: %d calls recorded (%d did not return), the program counted %d", opt, fn, got, unret, w)
			}
		}
		// try_once returns before its end when i % 3 == 0.
		got, unret := r.calls("app:try_begin:try_end")
		if got-unret != want["app:try"] || unret != tries-want["app:try"] || want["app:try"] != tries-(tries+2)/3 {
			t.Errorf("%s: try pairs: %d calls, %d did not return; the program ended %d of %d", opt, got, unret, want["app:try"], tries)
		}

		// Each request's time lies between the program's clock readings
		// inside the pair and around it (TestTraceUSDTInterleavedPairs
		// says why not a margin over the inside alone); the first
		// request also takes the kernel's one-time set-up of the
		// process's page for probed instructions, inside its probes.
		var own [][2]float64
		for _, l := range strings.Split(stdout, "\n") {
			if f := strings.Fields(l); len(f) == 3 && f[0] == "req" {
				in, _ := strconv.ParseFloat(f[1], 64)
				out, _ := strconv.ParseFloat(f[2], 64)
				own = append(own, [2]float64{in, out})
			}
		}
		reqs := pairCalls(t, out, "^app:req_")
		if len(reqs.Calls) != len(own) || len(own) != n {
			t.Fatalf("%s: %d request pairs traced, the program timed %d (want %d)", opt, len(reqs.Calls), len(own), n)
		}
		for i, c := range reqs.Calls {
			if float64(c.Incl) < own[i][0] || float64(c.Incl) > own[i][1] {
				t.Errorf("%s: request %d: traced %d ns, the program measured %.0f ns inside it and %.0f ns around it", opt, i, c.Incl, own[i][0], own[i][1])
			}
			if c.Caller != "main" {
				t.Errorf("%s: request %d: caller %q, want main (the function the pair is in)", opt, i, c.Caller)
			}
			// The begin's USDT argument is the request's number.
			if got := pairArgs(c.Args); got != fmt.Sprintf("arg1=%d", i) {
				t.Errorf("%s: request %d: arguments %q, want arg1=%d (the begin probe's)", opt, i, got, i)
			}
			if c.Ret != "" {
				t.Errorf("%s: request %d: a return value %q", opt, i, c.Ret)
			}
		}
		for i, c := range pairCalls(t, out, "^app:try_").Calls {
			if got := pairArgs(c.Args); got != fmt.Sprintf("arg1=%d", i) {
				t.Errorf("%s: try pair %d: arguments %q, want arg1=%d", opt, i, got, i)
			}
		}
		nest := pairCalls(t, out, "^app:nest_")
		for i, c := range nest.Calls {
			// Sorted by start: the outermost (depth 0) first, each
			// holding the next.
			if int(c.Depth) != i || i > 0 && c.Incl >= nest.Calls[i-1].Incl {
				t.Errorf("%s: nested pair %d: depth %d, %d ns (the one around it: %d ns)", opt, i, c.Depth, c.Incl, nest.Calls[max(i-1, 0)].Incl)
			}
			if got := pairArgs(c.Args); got != fmt.Sprintf("arg1=%d", depth-i) {
				t.Errorf("%s: nested pair %d: arguments %q, want arg1=%d (nest's d)", opt, i, got, depth-i)
			}
		}
		// The last try_once left its pair open; the library's steps,
		// called from main after it returned, are not inside it.
		for _, c := range pairCalls(t, out, "^lib:step_").Calls {
			if c.Depth != 0 {
				t.Errorf("%s: a library step at depth %d under %q, want 0: an abandoned pair was not retired", opt, c.Depth, c.Caller)
				break
			}
		}
	}
	for _, bad := range []string{"app:req_begin:req_begin", "app:a:b:c", "@app:x", "app:"} {
		if _, errs, code := run(t, "trace", "--usdt", bad, "-o", rec(t), "--", "true"); code == 0 || !strings.Contains(errs, "--usdt") {
			t.Errorf("--usdt %s: exit %d, %s", bad, code, errs)
		}
	}
	bin := testutil.C(t, "usdtpair-O2", []string{"usdtpair.c"}, "-O2", "-g")
	if _, errs, code := run(t, "trace", "--usdt", "app:req_begin:nosuch", "-o", rec(t), "--", bin); code == 0 || !strings.Contains(errs, "no probe app:nosuch") {
		t.Errorf("--usdt app:req_begin:nosuch: exit %d, %s (want the probes it has)", code, errs)
	}
}

// Two pairs interleaved in one function (A's begin, B's begin, A's end,
// B's end): each end finds its own begin, though B's is on top when A's
// end comes, and every pair's time lies between the program's clock
// readings inside it and around it;
// A's exclusive time is the part before B began (B, begun inside it, is
// time in a traced callee). Two requests of one pair open at once, the
// first ending first, are told apart by the id their probes carry.
func TestTraceUSDTInterleavedPairs(t *testing.T) {
	testutil.NeedRoot(t)
	needSDT(t)
	const n = 5
	for _, opt := range []string{"-O2", "-O0"} {
		bin := testutil.C(t, "usdtoverlap"+opt, []string{"usdtoverlap.c"}, opt, "-g")
		flags := []string{"--usdt", "app:a_begin:a_end", "--usdt", "app:b_begin:b_end", "--usdt", "app:req_begin:req_end"}
		args := opt == "-O0" // ids are read with or without --args
		if args {
			flags = append(flags, "--args")
		}
		out, stdout := traceRun(t, flags, bin, strconv.Itoa(n), "2")
		want := counts(t, stdout)
		r := traceReport(t, out)
		for fn, w := range map[string]int{"a_begin:a_end": n, "b_begin:b_end": n, "req_begin:req_end": 2 * n} {
			if got, unret := r.calls("app:" + fn); got != want["app:"+fn[:strings.Index(fn, "_")]] || unret != 0 || got != w {
				t.Errorf("%s: pair %s: %d calls recorded (%d did not return), the program counted %d", opt, fn, got, unret, w)
			}
		}
		// The program reads its clock just before and just after each
		// probe: IN, from after a pair's begin to before its end, lies
		// inside the traced pair, and OUT, from before the begin to
		// after the end, around it. The traced time lies between them,
		// exactly: the probes' own time, and whatever the machine does
		// there (a preemption, an interrupt, a hypervisor holding the
		// virtual CPU), is in OUT and not in IN, so a margin over IN
		// alone fails on a busy machine for no fault of the tracer's.
		type span struct{ in, out float64 }
		own := map[string][]span{}
		for _, l := range strings.Split(stdout, "\n") {
			if f := strings.Fields(l); len(f) == 3 && f[0] != "count" {
				in, _ := strconv.ParseFloat(f[1], 64)
				out, _ := strconv.ParseFloat(f[2], 64)
				own[f[0]] = append(own[f[0]], span{in, out})
			}
		}
		between := func(traced uint64, s span) bool {
			return float64(traced) >= s.in && float64(traced) <= s.out
		}
		for _, fn := range []string{"a", "b"} {
			calls := pairCalls(t, out, "^app:"+fn+"_").Calls
			if len(calls) != n || len(own[fn]) != n || len(own["a-alone"]) != n {
				t.Fatalf("%s: %d %s pairs traced, the program timed %d", opt, len(calls), fn, len(own[fn]))
			}
			for i, c := range calls {
				if s := own[fn][i]; !between(c.Incl, s) {
					t.Errorf("%s: %s pair %d: traced %d ns, the program measured %.0f ns inside it and %.0f ns around it", opt, fn, i, c.Incl, s.in, s.out)
				}
				if s := own["a-alone"][i]; fn == "a" && !between(c.Excl, s) {
					t.Errorf("%s: a pair %d: exclusive %d ns, the program measured %.0f ns inside and %.0f ns around a_begin to b_begin", opt, i, c.Excl, s.in, s.out)
				}
				if fn == "b" && c.Excl != c.Incl {
					t.Errorf("%s: b pair %d: exclusive %d ns of %d: it has no traced callee", opt, i, c.Excl, c.Incl)
				}
				if c.Depth != 0 || c.Caller != "overlap" {
					t.Errorf("%s: %s pair %d: depth %d, caller %q, want 0 and overlap", opt, fn, i, c.Depth, c.Caller)
				}
			}
		}
		// By start: request 2i (the first), then 2i+1, which began
		// inside it and ended after it.
		reqs := pairCalls(t, out, "^app:req_").Calls
		if len(reqs) != 2*n || len(own["first"]) != n || len(own["second"]) != n {
			t.Fatalf("%s: %d requests traced, the program timed %d and %d", opt, len(reqs), len(own["first"]), len(own["second"]))
		}
		for i, c := range reqs {
			if s := own[[]string{"first", "second"}[i%2]][i/2]; !between(c.Incl, s) {
				t.Errorf("%s: request %d: traced %d ns, the program measured %.0f ns inside it and %.0f ns around it", opt, i, c.Incl, s.in, s.out)
			}
			if args {
				if got := pairArgs(c.Args); got != fmt.Sprintf("arg1=%d", i) {
					t.Errorf("%s: request %d: arguments %q, want arg1=%d (its id)", opt, i, got, i)
				}
			}
			if c.Depth != 0 || c.Caller != "byid" {
				t.Errorf("%s: request %d: depth %d, caller %q, want 0 and byid", opt, i, c.Depth, c.Caller)
			}
		}
	}
}

// pairArgs renders a call's arguments as NAME=VALUE, comma separated.
func pairArgs(args []struct{ Name, Value string }) string {
	var vals []string
	for _, a := range args {
		vals = append(vals, a.Name+"="+a.Value)
	}
	return strings.Join(vals, ",")
}

// pairCalls lists the calls of the functions matching re, by start.
func pairCalls(t *testing.T, rec, re string) callsJSON {
	t.Helper()
	var a callsJSON
	if err := json.Unmarshal([]byte(mustRun(t, "report", "--calls", re, "--top", "0", "--format", "json", rec)), &a); err != nil {
		t.Fatal(err)
	}
	sort.SliceStable(a.Calls, func(i, j int) bool { return a.Calls[i].Start < a.Calls[j].Start })
	return a
}

// The CPU samples a trace takes beside its probes are kept in its
// recording: report still shows the calls, and --by, --tree, --callers
// and export read the samples as a profile's, where the untraced function
// that burned the time shows. Without them (--cpu-sample 0) the sample
// views say so.
func TestTraceKeepsCPUSamples(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "tracecalls", []string{"tracecalls.c"}, "-O2", "-g", "-pthread")
	out := rec(t)
	stdout, errs, code := run(t, "trace", "-o", out, "-f", "fib", "--", bin, "fib", "15", "spin", "30", "4")
	if code != 0 {
		t.Fatalf("trace: exit %d: %s", code, errs)
	}
	m := regexp.MustCompile(`written to .* with (\d+) CPU samples;`).FindStringSubmatch(errs)
	if m == nil {
		t.Fatalf("culprit did not say how many CPU samples it kept: %s", errs)
	}
	kept, _ := strconv.Atoi(m[1])
	want := counts(t, stdout)
	if got, _ := traceReport(t, out).calls("fib"); got != want["fib"] || got == 0 {
		t.Errorf("report on the trace: %d fib calls, the program counted %d", got, want["fib"])
	}
	f := flat(t, "--by", "function", out)
	if f.Samples != kept || kept == 0 {
		t.Errorf("report --by function on the trace: %d samples, culprit said it kept %d", f.Samples, kept)
	}
	spin := 0
	for _, e := range f.Entries {
		if e.Name == "spin" {
			spin = e.TotalSamples
		}
	}
	// spin (not traced) ran 4 × 30 ms on the CPU: at 999 Hz about 120
	// samples; any at all shows they are the program's.
	if spin == 0 {
		t.Errorf("report --by function on the trace: no sample in spin, which ran 120 ms on the CPU: %+v", f.Entries)
	}
	if folded := mustRun(t, "export", "--format", "folded", "-o", "-", out); !strings.Contains(folded, ";spin") {
		t.Errorf("export --format folded of the trace has no stack through spin:\n%.2000s", folded)
	}
	out0 := rec(t)
	if _, errs, code := run(t, "trace", "--cpu-sample", "0", "-o", out0, "-f", "fib", "--", bin, "fib", "5"); code != 0 {
		t.Fatalf("trace --cpu-sample 0: exit %d: %s", code, errs)
	}
	if _, errs, code := run(t, "report", "--tree", out0); code == 0 || !strings.Contains(errs, "--cpu-sample 0") {
		t.Errorf("report --tree on a trace without samples: exit %d, %s", code, errs)
	}
}
