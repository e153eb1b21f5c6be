package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/loader"
	"github.com/culprit-dev/culprit/internal/testutil"
)

type exprsJSON struct {
	Samples int           `json:"samples"`
	Exprs   []exprSummary `json:"exprs"`
}

type exprSummary struct {
	Expr     string  `json:"expr"`
	Function string  `json:"function"`
	Count    int     `json:"count"`
	Missing  int     `json:"missing"`
	Mean     float64 `json:"mean"`
	Min      float64 `json:"min"`
	Max      float64 `json:"max"`
	P50      float64 `json:"p50"`
	Names    []struct {
		Name  string  `json:"name"`
		Count int     `json:"count"`
		Share float64 `json:"share"`
	} `json:"names"`
}

func exprReport(t *testing.T, args ...string) exprsJSON {
	t.Helper()
	out := mustRun(t, append([]string{"report", "--exprs", "--format", "json"}, args...)...)
	var e exprsJSON
	if err := json.Unmarshal([]byte(out), &e); err != nil {
		t.Fatalf("report --exprs JSON: %v\n%s", err, out)
	}
	return e
}

// PCT's `profile -gdb -expr 'hier-test@worker@n' int-avg hier-test`: the
// time-weighted mean of n is (1e7·1 + 2e7·2)/3, and that of the loop counter
// i is half of it (PCT printed 8.38e+06).
func TestExprHierarchicalMean(t *testing.T) {
	testutil.NeedRoot(t)
	for _, c := range []struct{ collector, opt string }{{"perf", "-O2"}, {"perf", "-O0"}, {"ptrace", "-O2"}, {"ptrace", "-O0"}} {
		t.Run(c.collector+c.opt, func(t *testing.T) {
			bin := testutil.C(t, "hier"+c.opt, []string{"hier.c"}, c.opt, "-g")
			testHierarchicalMean(t, bin, c.collector)
		})
	}
}

// At -O0 worker keeps n and i in the red zone below rsp, which a perf
// sample's stack copy does not hold: the perf collector reads them from the
// BPF snapshot taken with the sample.
func testHierarchicalMean(t *testing.T, bin, collector string) {
	out := rec(t)
	mustRun(t, "record", "--collector", collector, "--expr", "hier*@worker@n", "--expr", "hier*@worker@i", "--expr", "hier*@dispatch_*@n", "-o", out, "--", bin, "8")
	e := exprReport(t, out)
	if len(e.Exprs) != 3 {
		t.Fatalf("want three expressions, got %+v", e.Exprs)
	}
	n, i, none := e.Exprs[0], e.Exprs[1], e.Exprs[2]
	// dispatch_N is on every stack but has no n: missing, never guessed.
	if none.Function != "dispatch_*" || none.Count != 0 || none.Missing < e.Samples*9/10 {
		t.Errorf("dispatch_*@n: %+v", none)
	}
	want := (1e7*1 + 2e7*2) / 3
	if n.Count < e.Samples*9/10 || math.Abs(n.Mean-want)/want > 0.10 || n.Min != 1e7 || n.Max != 2e7 {
		t.Errorf("n: %+v, want %d samples with a time-weighted mean of %.4g", n, e.Samples, want)
	}
	if math.Abs(i.Mean-want/2)/(want/2) > 0.10 {
		t.Errorf("i: mean %.4g, want about %.4g", i.Mean, want/2)
	}
}

// A struct field through a pointer, a pointer chain that is sometimes null,
// and (with the perf collector) a global outside the stack copy.
func TestExprStructThroughPointer(t *testing.T) {
	testutil.NeedRoot(t)
	for _, collector := range []string{"perf", "ptrace"} {
		for _, where := range []string{"stack", "heap"} {
			t.Run(collector+"/"+where, func(t *testing.T) { testStructThroughPointer(t, collector, where) })
		}
	}
}

func testStructThroughPointer(t *testing.T, collector, where string) {
	bin := testutil.C(t, "jobs", []string{"jobs.c"}, "-O2", "-g")
	out := rec(t)
	mustRun(t, "record", "--collector", collector, "--expr", "jobs*@process@j->size", "--expr", "jobs*@process@j->next->size",
		"--expr", "jobs*@process@cfg.limits[2]", "-o", out, "--", bin, "60", where)
	e := exprReport(t, out)
	if len(e.Exprs) != 3 {
		t.Fatalf("exprs: %+v", e.Exprs)
	}
	size, next, global := e.Exprs[0], e.Exprs[1], e.Exprs[2]
	// Jobs of 1e6, 2e6 and 7e6 iterations: time-weighted mean (1+4+49)/10 · 1e6.
	if want := 5.4e6; size.Count < e.Samples*9/10 || math.Abs(size.Mean-want)/want > 0.10 || size.Min != 1e6 || size.Max != 7e6 {
		t.Errorf("j->size: %+v, want a time-weighted mean of %.3g", size, want)
	}
	// The last job's next is NULL: 70% of the time, missing, never guessed.
	if frac := float64(next.Missing) / float64(next.Count+next.Missing); frac < 0.6 || frac > 0.8 {
		t.Errorf("j->next->size: %d values, %d missing; want about 70%% missing", next.Count, next.Missing)
	}
	// ptrace reads the stopped thread; the perf collector reads the global
	// and the heap from the copies its BPF program made at the sample.
	if global.Count < e.Samples*9/10 || global.Min != 30 || global.Max != 30 {
		t.Errorf("cfg.limits[2]: %+v, want 30 at every sample", global)
	}
}

// A rules file applies only to the programs it names: forkexec's own
// processes are sampled but capture nothing; the hier program it execs
// captures n and counts its ticks.
func TestRulesMatchOneProgram(t *testing.T) {
	testutil.NeedRoot(t)
	for _, collector := range []string{"perf", "ptrace"} {
		t.Run(collector, func(t *testing.T) { testRulesMatchOneProgram(t, collector) })
	}
}

func testRulesMatchOneProgram(t *testing.T, collector string) {
	fe := testutil.C(t, "forkexec", []string{"forkexec.c"}, "-O2", "-g")
	hier := testutil.C(t, "hier-O2", []string{"hier.c"}, "-O2", "-g")
	rules := filepath.Join(t.TempDir(), "hier.rules")
	os.WriteFile(rules, []byte("# only the exec'd program\nprogram hier-O2*\n  at worker\n    capture n\n    count ticks\n  at dispatch_2\n    count slow_path\n"), 0o644)
	out := rec(t)
	mustRun(t, "record", "--collector", collector, "--rules", rules, "-o", out, "--", fe, hier, "2")
	e := exprReport(t, out)
	byName := map[string]int{}
	for _, x := range e.Exprs {
		byName[x.Expr] = x.Count
	}
	f := flat(t, out)
	hierSamples := int(f.total("worker") * float64(f.Samples))
	if byName["n"] == 0 || byName["ticks"] != byName["n"] || byName["slow_path"] == 0 || byName["slow_path"] >= byName["ticks"] {
		t.Errorf("rule values: %v", byName)
	}
	if byName["ticks"] > hierSamples+2 {
		t.Errorf("%d ticks counted but only %d samples in worker: rules applied outside hier", byName["ticks"], hierSamples)
	}
	if f.total("parent_spin") == 0 || f.total("child_spin") == 0 {
		t.Errorf("forkexec's own processes must still be sampled: %+v", f.Entries)
	}
	// Bad rules are refused with file:line:column.
	os.WriteFile(rules, []byte("program hier\n  at worker\n    capture n +\n"), 0o644)
	_, stderr, code := run(t, "record", "--rules", rules, "-o", rec(t), "--", hier, "1")
	if code == 0 || !strings.Contains(stderr, "hier.rules:3:16") {
		t.Errorf("bad rules: exit %d, %q", code, stderr)
	}
}

// --jitter varies the sampling intervals on both collectors. Each sample's
// period is the CPU time of its thread since the thread's previous sample:
// without jitter about 1 ms (999 Hz), with ±50% spread over 0.5–1.5 ms, so
// about 30% (ptrace: uniform) or 40% (perf: 2–6 ticks of 0.25 ms) are under
// 0.8 ms. CPU time does not depend on other load on the machine, so neither
// do these shares. Bound: with n ≥ 300 intervals the share's standard error
// is at most √(0.3·0.7/300) ≈ 0.026, and the 20% the test asks for lies
// 3.8 of them under 30%. A period is the CPU time of a span no longer than
// the wall-clock time between the samples (load only lengthens that), so a
// period much longer than its span is wrong.
func TestJitter(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "hier-O2", []string{"hier.c"}, "-O2", "-g")
	const nominal = 1e9 / 999.0
	measure := func(t *testing.T, collector string, args ...string) (short, long float64, e exprsJSON) {
		t.Helper()
		out := rec(t)
		mustRun(t, append(append([]string{"record", "--collector", collector, "--expr", "hier*@worker@n", "-o", out}, args...), "--", bin, "16")...)
		p, err := loader.Load([]string{out}, loader.Options{})
		if err != nil {
			t.Fatal(err)
		}
		last := map[uint32]uint64{} // TID → time of its previous sample
		var n, nshort, nlong int
		for _, s := range p.Samples {
			prev, seen := last[s.TID]
			last[s.TID] = s.Time
			if !seen || s.Time <= prev {
				continue // the first sample of a thread stands for its start
			}
			n++
			if float64(s.Period) < 0.8*nominal {
				nshort++
			}
			if float64(s.Period) > 1.25*float64(s.Time-prev)+0.1*nominal {
				nlong++
			}
		}
		if n < 300 {
			t.Fatalf("%s: only %d intervals: hier's 16 rounds take about 400 ms of CPU time", collector, n)
		}
		return float64(nshort) / float64(n), float64(nlong) / float64(n), exprReport(t, out)
	}
	for _, collector := range []string{"perf", "ptrace"} {
		t.Run(collector, func(t *testing.T) {
			plain, _, _ := measure(t, collector)
			jittered, long, e := measure(t, collector, "--jitter", "50")
			t.Logf("periods under 0.8 ms: %.0f%% plain, %.0f%% with ±50%%; longer than their span: %.0f%%", 100*plain, 100*jittered, 100*long)
			if plain > 0.05 || jittered < 0.2 {
				t.Errorf("periods under 0.8 ms: %.0f%% without jitter (want under 5%%), %.0f%% with ±50%% (want about 30%%)", 100*plain, 100*jittered)
			}
			if long > 0.05 {
				t.Errorf("%.0f%% of the jittered samples carry a period over 1.25 times the wall-clock time since the thread's previous sample", 100*long)
			}
			if want := (1e7*1 + 2e7*2) / 3; math.Abs(e.Exprs[0].Mean-want)/want > 0.10 {
				t.Errorf("time-weighted mean with jitter: %.4g, want %.4g", e.Exprs[0].Mean, want)
			}
		})
	}
}

// A generic container: the list behind a union's void * (and behind a
// global void *) is read through a cast to a typedef'd struct and to the
// struct tag, and sizeof and &/* evaluate; the sampled lengths and capacities are those the program
// printed, weighted by the time spent on each.
func TestExprCastOfVoidPointer(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "generic", []string{"generic.c"}, "-O2", "-g")
	for _, collector := range []string{"perf", "ptrace"} {
		t.Run(collector, func(t *testing.T) {
			out := rec(t)
			stdout := mustRun(t, "record", "--collector", collector,
				"--expr", "generic*@consume@((list*)de->v.val)->len",
				"--expr", "generic*@consume@((struct list *)de->v.val)->cap",
				"--expr", "generic*@consume@sizeof(list) + sizeof(struct dictentry)",
				"--expr", "generic*@consume@(&de->v)->s64 == (long)*&de->v.val",
				"--expr", "generic*@consume@((list *)last)->cap",
				"--expr", "generic*@consume@de->phase",
				"--expr", "generic*@consume@current",
				"-o", out, "--", bin, "20")
			var lens, caps []float64
			share := map[string]float64{} // of the time, by phase: work is proportional to the length
			var total float64
			for _, line := range strings.Split(stdout, "\n") {
				var key, phase string
				var l, c float64
				if n, _ := fmt.Sscanf(line, "entry %s len %g cap %g phase %s", &key, &l, &c, &phase); n == 4 {
					lens, caps = append(lens, l), append(caps, c)
					share[phase] += l
					total += l
				}
			}
			if len(lens) != 3 {
				t.Fatalf("the program printed %q, want three entries", stdout)
			}
			e := exprReport(t, out)
			if len(e.Exprs) != 7 {
				t.Fatalf("exprs: %+v", e.Exprs)
			}
			check := func(s exprSummary, vals []float64) {
				// Work is proportional to the length: time-weighted mean Σl²/Σl.
				var sum, sq float64
				for _, v := range vals {
					sum, sq = sum+v, sq+v*v
				}
				lo, hi := slices.Min(vals), slices.Max(vals)
				if s.Count < e.Samples*9/10 || s.Min < lo || s.Max != hi || math.Abs(s.Mean-sq/sum)/(sq/sum) > 0.10 {
					t.Errorf("%s: %+v, want values among %v with a time-weighted mean of %.4g", s.Expr, s, vals, sq/sum)
				}
			}
			check(e.Exprs[0], lens)
			check(e.Exprs[1], caps)
			check(e.Exprs[4], caps) // through a global void *
			// struct list {long; long; pointer} and struct dictentry {pointer; union of 8; enum, padded}.
			if s := e.Exprs[2]; s.Count < e.Samples*9/10 || s.Min != 24+24 || s.Max != 24+24 {
				t.Errorf("sizes: %+v, want 48", s)
			}
			if s := e.Exprs[3]; s.Count < e.Samples*9/10 || s.Min != 1 || s.Max != 1 {
				t.Errorf("union members: %+v, want 1 (true) at every sample", s)
			}
			// Enums by name, with the share of the time each was seen: a
			// share of n samples has a standard error of at most 0.5/√n;
			// allow three (plus one sample's worth).
			tol := 1.5/math.Sqrt(float64(e.Samples)) + 1/float64(e.Samples)
			for _, s := range e.Exprs[5:] {
				if s.Count < e.Samples*9/10 || len(s.Names) != 3 {
					t.Errorf("%s: %+v, want a value by name at most samples", s.Expr, s)
					continue
				}
				for _, n := range s.Names {
					if want := share[n.Name] / total; math.Abs(n.Share-want) > tol {
						t.Errorf("%s: %s %.2f of the time, want %.2f (the program printed %q)", s.Expr, n.Name, n.Share, want, stdout)
					}
				}
			}
		})
	}
}

// A name that exists nowhere in the program is refused before the command
// runs (exit 2, with the close name that does exist), column included; a
// program pattern that matches only what the command may exec is a warning.
func TestExprMisspelledNames(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "generic", []string{"generic.c"}, "-O2", "-g")
	base := filepath.Base(bin) // generic-HASH
	for _, c := range []struct{ spec, want string }{
		{"generic*@consume@nosuchvar", `no variable nosuchvar in consume`},
		{"generic*@consume@de->phse", `column 20: struct dictentry has no field phse: did you mean "phase"?`},
		{"generic*@consume@de->v.(val", `column 24: want a field name after "."`},
		{"generic*@consume@de->v.val->len", `column 27: de->v.val points to void: cast it to the type it points to`},
		{"generic*@consume@de->phase->x", `column 27: de->phase has type enum phase, not a pointer`},
		{"generic*@consme@de", `no function consme in ` + base + `: did you mean "consume"?`},
		{"gneeric" + base[7:] + "@consume@de", `the program pattern "gneeric` + base[7:] + `" does not match ` + base + `, the program sampled: did you mean "` + base + `"?`},
		{"generic*@consume@((lsit *)de->v.val)->len", `no type lsit * in ` + base + `: did you mean "list"?`},
	} {
		out := rec(t)
		stdout, stderr, code := run(t, "record", "--expr", c.spec, "-o", out, "--", bin, "1")
		if code != 2 || !strings.Contains(stderr, c.want) || strings.Contains(stdout, "entry ") {
			t.Errorf("--expr %s: exit %d, stderr %q, stdout %q; want exit 2 before the program runs, saying %q", c.spec, code, stderr, stdout, c.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("--expr %s: a recording was written", c.spec)
		}
	}
	_, stderr, code := run(t, "record", "--expr", "hier*@worker@n", "-o", rec(t), "--", bin, "1")
	if code != 0 || !strings.Contains(stderr, `warning: --expr "hier*@worker@n": the program pattern "hier*" does not match `+base) {
		t.Errorf("a pattern for a program not yet exec'd: exit %d, stderr %q; want a warning naming it", code, stderr)
	}
}

// The last of a global struct's 120 fields, read at each sample from the
// copy the BPF program made of exactly its bytes, equals what the program
// set it to: BASE + the round, as it prints.
func TestExprLastFieldOfBigGlobal(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "bigglobal", []string{"bigglobal.c"}, "-O2", "-g")
	const rounds = 5
	out := rec(t)
	stdout := mustRun(t, "record", "--expr", "bigglobal*@spin@big.f119", "--expr", "bigglobal*@spin@big.f0",
		"-o", out, "--", bin, strconv.Itoa(rounds), "7000")
	var base, n, parity int64
	if _, err := fmt.Sscan(stdout, &base, &n, &parity); err != nil || base != 7000 || n != rounds {
		t.Fatalf("bigglobal printed %q", stdout)
	}
	e := exprReport(t, out)
	if len(e.Exprs) != 2 {
		t.Fatalf("exprs: %+v", e.Exprs)
	}
	last, first := e.Exprs[0], e.Exprs[1]
	in := last.Count + last.Missing
	if in < 50 {
		t.Fatalf("only %d samples in spin", in)
	}
	// A sample whose process had no plan yet (the first ones) is missing,
	// never wrong.
	if last.Missing*20 > in || last.Min < float64(base+1) || last.Max > float64(base+rounds) {
		t.Errorf("big.f119: %+v; want values in %d…%d at (nearly) every sample", last, base+1, base+rounds)
	}
	if first.Count != last.Count || first.Min != float64(base) || first.Max != float64(base) {
		t.Errorf("big.f0: %+v, want %d wherever big.f119 was read", first, base)
	}
}

// Forty fields of the global struct 16 bytes apart are forty pieces of
// memory to copy at each sample (the plan merges only ranges at most 8
// bytes apart), beyond the 32 an earlier collector copied: each reads the
// value the program set, BASE + k for field k.
func TestExprManyPiecesOfBigGlobal(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "bigglobal", []string{"bigglobal.c"}, "-O2", "-g")
	const rounds, base = 3, 5000
	out := rec(t)
	args := []string{"record", "-o", out}
	var fields []int
	for k := 0; k < 119; k += 3 {
		fields = append(fields, k)
		args = append(args, "--expr", fmt.Sprintf("bigglobal*@spin@big.f%d", k))
	}
	if len(fields) <= 32 {
		t.Fatalf("%d pieces: the test needs more than 32", len(fields))
	}
	stdout := mustRun(t, append(args, "--", bin, strconv.Itoa(rounds), strconv.Itoa(base))...)
	if !strings.HasPrefix(stdout, fmt.Sprintf("%d %d ", base, rounds)) {
		t.Fatalf("bigglobal printed %q", stdout)
	}
	e := exprReport(t, out)
	if len(e.Exprs) != len(fields) {
		t.Fatalf("%d exprs, want %d: %+v", len(e.Exprs), len(fields), e.Exprs)
	}
	for _, x := range e.Exprs {
		var k int
		if _, err := fmt.Sscanf(x.Expr, "big.f%d", &k); err != nil {
			t.Fatalf("expr %q", x.Expr)
		}
		in := x.Count + x.Missing
		if in < 50 {
			t.Fatalf("%s: only %d samples in spin", x.Expr, in)
		}
		// A sample whose process had no plan yet (the first ones) is
		// missing, never wrong.
		if want := float64(base + k); x.Missing*20 > in || x.Min != want || x.Max != want {
			t.Errorf("%s: %+v; want %v at (nearly) every sample", x.Expr, x, want)
		}
	}
}
