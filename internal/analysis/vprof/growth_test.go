package vprof

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/profile"
)

func TestShareSignificance(t *testing.T) {
	// 5 of 2249 buggy samples against none of 1178 normal: within two
	// errors of the pooled proportion, not a growth.
	if s := share(0, 1178, 5, 2249); s.Grew() {
		t.Errorf("5/2249 vs 0/1178 grew: %+v", s)
	}
	// 10% of 2000 against 1% of 1000: far beyond.
	s := share(10, 1000, 200, 2000)
	if !s.Grew() || math.Abs(s.Change-0.09) > 1e-12 {
		t.Errorf("10%% vs 1%%: %+v", s)
	}
	want := math.Sqrt(210.0 / 3000 * (1 - 210.0/3000) * (1.0/1000 + 1.0/2000))
	if math.Abs(s.Err-want) > 1e-12 {
		t.Errorf("err %g, want %g", s.Err, want)
	}
	if s := share(300, 1000, 500, 2000); s.Grew() {
		t.Errorf("a share that fell grew: %+v", s)
	}
}

func TestStackCounts(t *testing.T) {
	c := newStackCounts()
	// main(0) → a(1) → b(2), twice; main → a → a → c(3) (recursion) once.
	c.add([]int32{2, 1, 0}, nil)
	c.add([]int32{2, 1, 0}, nil)
	c.add([]int32{3, 1, 1, 0}, nil)
	c.paths = []stackPath{{fs: []int32{2, 1, 0}, n: 2}, {fs: []int32{3, 1, 1, 0}, n: 1}}
	if c.n != 3 || c.incl[1] != 3 || c.incl[0] != 3 || c.self[2] != 2 || c.self[3] != 1 {
		t.Errorf("counts: n %g incl %v self %v", c.n, c.incl, c.self)
	}
	if c.edges[edge{1, 2}] != 2 || c.edges[edge{1, 1}] != 1 || c.edges[edge{1, 3}] != 1 || c.edges[edge{0, 1}] != 3 {
		t.Errorf("edges %v", c.edges)
	}
	u := c.under(map[int32]bool{1: true})
	if u[1][2] != 2 || u[1][3] != 1 || u[1][0] != 0 || u[1][1] != 0 {
		t.Errorf("under a: %v", u[1])
	}
}

func vr(normal, buggy []float64) *variable {
	v := &variable{normal: []*series{{values: numsOf(normal)}}, buggy: series{values: numsOf(buggy)}}
	d := func(xs []float64) (nums, nums) {
		var ds, durs []float64
		run := 1
		for i := 1; i < len(xs); i++ {
			ds = append(ds, xs[i]-xs[i-1])
			if xs[i] == xs[i-1] {
				run++
			} else {
				durs = append(durs, float64(run))
				run = 1
			}
		}
		return numsOf(ds), numsOf(append(durs, float64(run)))
	}
	v.normal[0].deltas, v.normal[0].durations = d(normal)
	v.buggy.deltas, v.buggy.durations = d(buggy)
	return v
}

func TestRunConstantAndProgress(t *testing.T) {
	if n, b, ok := runConstant(vr([]float64{64, 64, 64}, []float64{512, 512})); !ok || n != 64 || b != 512 {
		t.Errorf("run-constant: %g %g %v", n, b, ok)
	}
	if _, _, ok := runConstant(vr([]float64{64, 64}, []float64{512, 511})); ok {
		t.Error("a buggy value that changes is not run-constant")
	}
	if _, _, ok := runConstant(vr([]float64{7, 7}, []float64{7})); ok {
		t.Error("one value in both kinds of run is not an input that differs")
	}
	if !constant(vr([]float64{7, 7}, []float64{7})) || constant(vr([]float64{7, 8}, []float64{7})) {
		t.Error("constant")
	}
	// A counter that advances 100 per sample normally and 40 in the buggy run.
	var n, b []float64
	for i := 0; i < 50; i++ {
		n = append(n, float64(100*i))
		b = append(b, float64(40*i))
	}
	if !slower(vr(n, b)) || slower(vr(b, n)) {
		t.Error("slower")
	}
	// Values lasting 1 sample normally, 5 in the buggy run.
	var bl []float64
	for i := 0; i < 50; i++ {
		bl = append(bl, float64(i/5))
	}
	if !lastsLonger(vr(n, bl)) || lastsLonger(vr(bl, n)) {
		t.Error("lastsLonger")
	}
}

func TestClassify(t *testing.T) {
	a, _ := New(DefaultOptions())
	o := a.opt
	// A counter over the same range, advancing 100 per sample normally and
	// 40 in the buggy run.
	var n, b []float64
	for i := 0; i < 200; i++ {
		n = append(n, float64(100*i))
	}
	for i := 0; i < 500; i++ {
		b = append(b, float64(40*i))
	}
	cases := []struct {
		name  string
		v     *variable
		class varClass
	}{
		{"input global", vr(fill(64, 100), fill(512, 100)), classInput},
		{"slower loop counter", vr(n, b), classSlower},
		{"same values", vr(n, n), classNormal},
	}
	cases[0].v.src.Global = true
	cases[1].v.src.Tags = "loop"
	for _, c := range cases {
		comp := o.discountVar(c.v, 1)
		if got, _ := a.classify(c.v, comp); got != c.class {
			t.Errorf("%s: class %d, want %d (%+v)", c.name, got, c.class, comp.dims)
		}
	}
	// A cond local holding another constant in the buggy run is evidence:
	// its function decides on it.
	v := vr(fill(4096, 100), fill(0, 100))
	v.src.Tags = "cond"
	if got, _ := a.classify(v, o.discountVar(v, 1)); got != classAnomaly {
		t.Errorf("cond local: class %d, want evidence", got)
	}
	// A cond parameter holding, in each run, the value a global holds in
	// that run is that configuration passed on: an input (docs/vprof.md,
	// "Run-constant values are inputs"); not when it is no parameter, or
	// the global's values are others.
	for _, tc := range []struct {
		param    bool
		buggyCfg float64
		want     varClass
	}{{true, 450, classInput}, {false, 450, classAnomaly}, {true, 449, classAnomaly}} {
		a, _ := New(DefaultOptions())
		a.funcs = append(a.funcs, fn{name: "import_stream", object: "prog", at: 0x40, atOK: true})
		a.SetParams(func(object string, offset uint64, name string) (bool, bool) {
			return tc.param && object == "prog" && offset == 0x40 && name == "batch", true
		})
		g := vr(fill(1, 100), fill(tc.buggyCfg, 100))
		g.src.Global, g.src.Name = true, "cfg_batch"
		v := vr(fill(1, 100), fill(450, 100))
		v.src.Tags, v.src.Name, v.owner = "cond,args", "batch", 0
		a.vars = append(a.vars, g, v)
		if got, _ := a.classify(v, a.opt.discountVar(v, 1)); got != tc.want {
			t.Errorf("param %v, global 1 → %g: class %d, want %d", tc.param, tc.buggyCfg, got, tc.want)
		}
	}
	// Never sampled normally: a new path, no evidence.
	v = &variable{buggy: series{values: numsOf(fill(3, 50)), durations: numsOf([]float64{50})}}
	if got, _ := a.classify(v, o.discountVar(v, 1)); got != classNewPath {
		t.Errorf("buggy-only: class %d, want new path", got)
	}
}

func fill(x float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = x
	}
	return out
}

func TestWhyLine(t *testing.T) {
	f := FunctionResult{Name: "maybe_flush", Share: share(1, 1000, 108, 1000), Evidence: EvidenceInput,
		Input: "cfg_record_size", Pattern: WrongConstraint}
	got := why(&f)
	want := "11% of buggy time vs 0.1% normal; its code reads cfg_record_size, an input that differs → wrong-constraint"
	if got != want {
		t.Errorf("why:\n got %q\nwant %q", got, want)
	}
	if lr := lineRange([]Line{{File: "/s/cache.c", Line: 118}, {File: "/s/cache.c", Line: 112}, {File: "/s/x.c", Line: 9}}); lr != "cache.c:112–118" {
		t.Errorf("lineRange %q", lr)
	}
}

// A caller whose own code did the same while a larger part of its time went
// into one callee gets that callee as its calls and the missing-constraint
// pattern, and answers for its growth above the callee when the callee's
// only evidence is its own time.
func TestCallsTakeLonger(t *testing.T) {
	mk := func(buggy bool) *profile.Profile {
		fx := newFixture(t)
		r := fx.create(t, "calls.rec")
		n := r.variable("n", "dispatch_1", "long", "none", false)
		work := 100
		if buggy {
			work = 900
		}
		for i := 0; i < 300; i++ {
			r.tick(1, []string{"dispatch_1", "main"}, 0, val{n, 0, int64(i % 5)})
		}
		for i := 0; i < work; i++ {
			r.tick(1, []string{"worker", "dispatch_1", "main"}, 0, val{n, 1, int64(i % 5)})
		}
		for i := 0; i < 600; i++ {
			r.tick(1, []string{"main"}, 0)
		}
		return r.done()
	}
	res := analyzeWith(t, DefaultOptions(), []*profile.Profile{mk(false)}, []*profile.Profile{mk(true)})
	d := res.fn(t, "dispatch_1")
	if d.Calls == nil || d.Calls.Callee != "worker" || math.Abs(d.Calls.Normal-0.25) > 1e-9 || math.Abs(d.Calls.Buggy-0.75) > 1e-9 {
		t.Fatalf("dispatch_1 calls %+v, want worker 25%% → 75%%", d.Calls)
	}
	if d.Pattern != MissingConstraint || !strings.Contains(d.Why, "its calls of worker took 75% of its time vs 25% normally") {
		t.Errorf("dispatch_1: pattern %s, why %q", d.Pattern, d.Why)
	}
	// It answers for its growth, above a callee whose only evidence is its
	// own time (what more calls of it show).
	if w := res.fn(t, "worker"); w.Evidence != EvidenceOwnTime || w.Rank != d.Rank+1 || d.Through != "" ||
		d.Score <= (1-DefaultOptions().DefaultDiscount)*d.Share.Change {
		t.Errorf("worker: evidence %s rank %d; dispatch_1 rank %d through %q score %g", w.Evidence, w.Rank, d.Rank, d.Through, d.Score)
	}
	if m := res.fn(t, "main"); m.Calls != nil {
		t.Errorf("main, which did not grow, has calls %+v", m.Calls)
	}
	// A caller that calls worker once on every call of its own (outside
	// its loops, on no test) cannot have called it more: each call took
	// longer, and it ranks just below worker. Called in a loop, or on a
	// test, it ranks above as before.
	normal, buggy := mk(false), mk(true)
	for _, tc := range []struct {
		inLoop, guarded bool
		above           bool
	}{{false, false, false}, {true, false, true}, {false, true, true}} {
		res := analyzeHooked(t, normal, buggy, func(a *Analyzer) {
			a.SetLoopCalls(func(string, uint64, string) (bool, bool) { return tc.inLoop, true })
			a.SetGuards(func(string, uint64, string) (bool, bool, bool) { return tc.guarded, false, true })
		})
		d, w := res.fn(t, "dispatch_1"), res.fn(t, "worker")
		if above := d.Rank < w.Rank; above != tc.above || d.Calls == nil || (!tc.above && (d.Rank != w.Rank+1 || d.Through != "worker")) {
			t.Errorf("in loop %v, guarded %v: dispatch_1 rank %d through %q calls %+v, worker rank %d; want dispatch_1 above %v",
				tc.inLoop, tc.guarded, d.Rank, d.Through, d.Calls, w.Rank, tc.above)
		}
	}
}

// A function that decides on an input that differs ranks above the code it
// runs on that decision: a callee whose only evidence is its own time and
// whose growth all occurs under it ranks below it.
func TestInputTakesGrowth(t *testing.T) {
	fx := newFixture(t)
	mk := func(buggy bool) *profile.Profile {
		r := fx.create(t, "input.rec")
		cfg := r.variable("cfg_limit", "#global", "long", "none", false)
		limit, work := int64(64), 10
		if buggy {
			limit, work = 512, 900
		}
		for i := 0; i < 300; i++ {
			r.tick(1, []string{"dispatch_1", "main"}, 0, val{cfg, 1, limit})
		}
		for i := 0; i < work; i++ {
			r.tick(1, []string{"worker", "dispatch_1", "main"}, 0, val{cfg, 2, limit})
		}
		for i := 0; i < 600; i++ {
			r.tick(1, []string{"main"}, 0, val{cfg, 0, limit})
		}
		return r.done()
	}
	a, err := New(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	d := fx.funcs["dispatch_1"]
	a.SetReads(func(object string, off uint64, global string) (bool, bool) {
		return global == "cfg_limit" && off >= d.off && off < d.off+d.size, true
	})
	if err := a.AddNormal(mk(false), Run{Path: "normal"}); err != nil {
		t.Fatal(err)
	}
	if err := a.AddBuggy(mk(true), Run{Path: "buggy"}); err != nil {
		t.Fatal(err)
	}
	res, err := a.Result()
	if err != nil {
		t.Fatal(err)
	}
	df, w := res.fn(t, "dispatch_1"), res.fn(t, "worker")
	if df.Evidence != EvidenceInput || w.Evidence != EvidenceOwnTime {
		t.Fatalf("evidence: dispatch_1 %s, worker %s", df.Evidence, w.Evidence)
	}
	if w.Share.Change <= df.Share.Change || df.Rank != 1 || w.Rank != 2 {
		t.Errorf("ranks: dispatch_1 %d (growth %.3f), worker %d (growth %.3f); want the deciding function first",
			df.Rank, df.Share.Change, w.Rank, w.Share.Change)
	}
	// A global the function also stores into (a peak it keeps) is what
	// it computed, not an input it was given: no input evidence.
	normal, buggy := mk(false), mk(true)
	for _, writes := range []bool{false, true} {
		res := analyzeHooked(t, normal, buggy, func(a *Analyzer) {
			a.SetReads(func(object string, off uint64, global string) (bool, bool) {
				return global == "cfg_limit" && off >= d.off && off < d.off+d.size, true
			})
			a.SetWrites(func(object string, off uint64, global string) (bool, bool) {
				return writes && global == "cfg_limit" && off >= d.off && off < d.off+d.size, true
			})
		})
		df, w := res.fn(t, "dispatch_1"), res.fn(t, "worker")
		if input := df.Evidence == EvidenceInput; input == writes || strings.Contains(df.Why, "an input that differs") == writes {
			t.Errorf("writes %v: dispatch_1 evidence %s rank %d (%q), worker rank %d", writes, df.Evidence, df.Rank, df.Why, w.Rank)
		}
	}
}

// The C runtime's and the kernel's samples, and a PLT stub's (in the
// program or in a library of its own), are their nearest caller's own
// time outside them.
func TestOwnTimeOfRuntimeCallers(t *testing.T) {
	a := &Analyzer{funcs: []fn{
		{name: "main", object: "/bin/prog"},
		{name: "compress", object: "/bin/prog"},
		{name: "memset", object: "/usr/lib/x86_64-linux-gnu/libc.so.6"},
		{name: "clear_page", object: "[kernel.kallsyms]", kernel: true},
		{name: "hist_add", object: "/opt/lib/libhist.so"},
		{name: "memcmp@plt", object: "/bin/prog"},
		{name: "hist_add@plt", object: "/bin/prog"},
	}}
	c := newStackCounts()
	c.add([]int32{3, 2, 1, 0}, a.system) // page fault in memset, called by compress
	c.add([]int32{2, 1, 0}, a.system)
	c.add([]int32{4, 0}, a.system) // a library of the program's own keeps its time
	c.add([]int32{5, 1, 0}, a.system)
	c.add([]int32{6, 0}, a.system)
	if c.own[0] != 1 || c.own[1] != 3 || c.own[2] != 0 || c.own[3] != 0 || c.own[4] != 1 || c.own[5] != 0 || c.own[6] != 0 ||
		c.self[2] != 1 || c.self[3] != 1 || c.self[5] != 1 || c.self[6] != 1 {
		t.Errorf("own %v, self %v", c.own, c.self)
	}
}

// A function whose loop variable went beyond its normal range ran more
// iterations: the own-time callee whose growth all occurs under it ranks
// below it.
func TestLongerLoopTakesGrowth(t *testing.T) {
	mk := func(buggy bool) *profile.Profile {
		fx := newFixture(t)
		r := fx.create(t, "loop.rec")
		no := r.variable("no", "dispatch_1", "long", "loop,cond", false)
		pages, work := 256, 10
		if buggy {
			pages, work = 1024, 900
		}
		g := lcg(7)
		for i := 0; i < 300; i++ {
			r.tick(1, []string{"dispatch_1", "main"}, 0, val{no, 0, g.intn(int64(pages))})
		}
		for i := 0; i < work; i++ {
			r.tick(1, []string{"worker", "dispatch_1", "main"}, 0, val{no, 1, g.intn(int64(pages))})
		}
		for i := 0; i < 600; i++ {
			r.tick(1, []string{"main"}, 0)
		}
		return r.done()
	}
	res := analyzeWith(t, DefaultOptions(), []*profile.Profile{mk(false)}, []*profile.Profile{mk(true)})
	d, w := res.fn(t, "dispatch_1"), res.fn(t, "worker")
	if d.Evidence != EvidenceVariable || d.Variable != "no" || w.Evidence != EvidenceOwnTime {
		t.Fatalf("evidence: dispatch_1 %s (%s), worker %s", d.Evidence, d.Variable, w.Evidence)
	}
	if w.Share.Change <= d.Share.Change || d.Rank != 1 || w.Rank != 2 {
		t.Errorf("ranks: dispatch_1 %d (growth %.3f), worker %d (growth %.3f); want the longer loop first",
			d.Rank, d.Share.Change, w.Rank, w.Share.Change)
	}
	// The same when the machine code calls worker inside the loop; but a
	// loop that calls nothing (the call after it) spent none of worker's
	// growth, and worker, whose growth is larger, ranks first.
	normal, buggy := mk(false), mk(true)
	for _, inLoop := range []bool{true, false} {
		res := analyzeHooked(t, normal, buggy, func(a *Analyzer) {
			a.SetLoopCalls(func(string, uint64, string) (bool, bool) { return inLoop, true })
		})
		d, w := res.fn(t, "dispatch_1"), res.fn(t, "worker")
		if want := map[bool]int{true: 1, false: 2}[inLoop]; d.Rank != want || w.Rank != 3-want {
			t.Errorf("worker called in the loop %v: dispatch_1 rank %d, worker rank %d; want dispatch_1 %d", inLoop, d.Rank, w.Rank, want)
		}
	}
}

// analyzeHooked is analyzeHooks with one normal and one buggy run.
func analyzeHooked(t testing.TB, normal, buggy *profile.Profile, hook func(a *Analyzer)) *Result {
	t.Helper()
	return analyzeHooks(t, hook, []*profile.Profile{normal}, []*profile.Profile{buggy})
}

// A function whose only evidence is its usual values in another mix (the
// buggy median inside the normal range), or values below that range, and
// whose own code did not grow ranks just below the callee that carries its
// growth.
func TestMixRanksBelowCallee(t *testing.T) {
	for _, below := range []bool{false, true} {
		mk := func(buggy bool) *profile.Profile {
			fx := newFixture(t)
			r := fx.create(t, "mix.rec")
			i := r.variable("i", "dispatch_1", "long", "loop,cond", false)
			mod, base, work := int64(10), int64(0), 100
			if below {
				base = 5
			}
			if buggy {
				mod, base, work = 3, 0, 900
				if below {
					mod = 2
				}
			}
			for k := 0; k < 300; k++ {
				r.tick(1, []string{"dispatch_1", "main"}, 0, val{i, 0, base + int64(k)%mod})
			}
			for k := 0; k < work; k++ {
				r.tick(1, []string{"worker", "dispatch_1", "main"}, 0, val{i, 1, base + int64(k)%mod})
			}
			for k := 0; k < 600; k++ {
				r.tick(1, []string{"main"}, 0)
			}
			return r.done()
		}
		res := analyzeWith(t, DefaultOptions(), []*profile.Profile{mk(false)}, []*profile.Profile{mk(true)})
		d, w := res.fn(t, "dispatch_1"), res.fn(t, "worker")
		if d.Evidence != EvidenceVariable || d.Var == nil || d.Var.Anomaly == nil {
			t.Fatalf("below %v: dispatch_1: evidence %s, variable %+v", below, d.Evidence, d.Var)
		}
		if an := d.Var.Anomaly; an.BuggyMedian > an.NormalMax || (an.BuggyMedian < an.NormalMin) != below {
			t.Fatalf("below %v: dispatch_1's anomaly is not the one tested: %+v", below, an)
		}
		if d.Through != "worker" || d.Rank != w.Rank+1 || !strings.Contains(d.Why, "encloses worker") {
			t.Errorf("below %v: dispatch_1 rank %d through %q (%s); worker rank %d", below, d.Rank, d.Through, d.Why, w.Rank)
		}
	}
}

// A saturated share is read by time when a function whose only evidence is
// another mix of its values passes its growth to the callee that carries
// it: a wrapper that holds the whole run in both kinds, handed smaller
// items, ranks just below the callee whose time grew.
func TestMixSaturatedRanksBelowCallee(t *testing.T) {
	mk := func(buggy bool) *profile.Profile {
		fx := newFixture(t)
		r := fx.create(t, "mixsat.rec")
		n := r.variable("len", "dispatch_1", "long", "cond,args", false)
		size, work := int64(4096), 540
		if buggy {
			size, work = 128, 1740
		}
		for k := 0; k < 60; k++ {
			r.tick(1, []string{"dispatch_1", "main"}, 0, val{n, 0, size})
		}
		for k := 0; k < work; k++ {
			r.tick(1, []string{"worker", "dispatch_1", "main"}, 0, val{n, 1, size})
		}
		return r.done()
	}
	res := analyzeWith(t, DefaultOptions(), []*profile.Profile{mk(false)}, []*profile.Profile{mk(true)})
	d, w := res.fn(t, "dispatch_1"), res.fn(t, "worker")
	if d.Evidence != EvidenceVariable || !mixOnly(&d) || d.Share.Time == 0 {
		t.Fatalf("dispatch_1: evidence %s, share %+v: not the saturated mix tested", d.Evidence, d.Share)
	}
	if d.Through != "worker" || d.Rank != w.Rank+1 {
		t.Errorf("dispatch_1 rank %d through %q (%s); worker rank %d", d.Rank, d.Through, d.Why, w.Rank)
	}
}

// A condition below its normal range that takes a branch no normal value
// took decided something new: it is not another mix of the usual values,
// and a callee whose only evidence is its own time does not hold it down
// when its share is read by time (e2e TestSchemaRoundTrip: recv_scan_log,
// available 1065 → 0 against a threshold of 64, above the checksum
// crc32c, whose variables the edited schema leaves out). Where the code
// cannot tell (no branch known) it stays a mix and ranks below the callee.
func TestNewBranchAnswers(t *testing.T) {
	mk := func(buggy bool) *profile.Profile {
		fx := newFixture(t)
		r := fx.create(t, "newbranch.rec")
		av := r.variable("available", "dispatch_1", "long", "cond", false)
		x, own, work := int64(1065), 60, 160
		if buggy {
			x, own, work = 0, 200, 2400
		}
		for k := 0; k < own; k++ {
			r.tick(1, []string{"dispatch_1", "main"}, 0, val{av, 0, x})
		}
		for k := 0; k < work; k++ {
			r.tick(1, []string{"worker", "dispatch_1", "main"}, 0, val{av, 1, x})
		}
		for k := 0; k < 200; k++ {
			r.tick(1, []string{"dispatch_2", "main"}, 0)
		}
		return r.done()
	}
	for _, known := range []bool{true, false} {
		res := analyzeHooked(t, mk(false), mk(true), func(a *Analyzer) {
			a.SetBranches(func(function, variable, file string, line int) (func(int64) (uint64, bool), bool) {
				return func(x int64) (uint64, bool) {
					if x < 64 {
						return 1, true
					}
					return 0, true
				}, known
			})
		})
		s, c := res.fn(t, "dispatch_1"), res.fn(t, "worker")
		if s.Evidence != EvidenceVariable || s.Var == nil || s.Var.Anomaly == nil || s.Share.Time == 0 || c.Evidence != EvidenceOwnTime {
			t.Fatalf("known %v: dispatch_1 evidence %s share %+v variable %+v; worker %s: not the case tested", known, s.Evidence, s.Share, s.Var, c.Evidence)
		}
		if s.Var.Anomaly.NewBranch != known {
			t.Errorf("known %v: new branch %v", known, s.Var.Anomaly.NewBranch)
		}
		if known && (s.Rank != 1 || c.Rank != 2) {
			t.Errorf("dispatch_1 rank %d (%s), worker rank %d; want 1st and 2nd", s.Rank, s.Why, c.Rank)
		}
		if !known && s.Rank != c.Rank+1 {
			t.Errorf("branches unknown: dispatch_1 rank %d (%s), worker rank %d; want just below it", s.Rank, s.Why, c.Rank)
		}
	}
}

// A condition's values beyond their normal range are scalability where the
// function's own code did the extra work, wrong-constraint where its callee
// did.
func TestConditionBeyondRangePattern(t *testing.T) {
	mk := func(buggy, own bool) *profile.Profile {
		fx := newFixture(t)
		r := fx.create(t, "cond.rec")
		key := r.variable("key", "dispatch_1", "long", "cond,args", false)
		base, self, work := int64(0), 300, 100
		if buggy {
			base = 1000
			if own {
				self = 1500
			} else {
				work = 1500
			}
		}
		g := lcg(3)
		for k := 0; k < self; k++ {
			r.tick(1, []string{"dispatch_1", "main"}, 0, val{key, 0, base + g.intn(100)})
		}
		for k := 0; k < work; k++ {
			r.tick(1, []string{"worker", "dispatch_1", "main"}, 0, val{key, 1, base + g.intn(100)})
		}
		for k := 0; k < 600; k++ {
			r.tick(1, []string{"main"}, 0)
		}
		return r.done()
	}
	for _, c := range []struct {
		own  bool
		want Pattern
	}{{true, Scalability}, {false, WrongConstraint}} {
		res := analyzeWith(t, DefaultOptions(), []*profile.Profile{mk(false, c.own)}, []*profile.Profile{mk(true, c.own)})
		if d := res.fn(t, "dispatch_1"); d.Evidence != EvidenceVariable || d.Variable != "key" || d.Pattern != c.want {
			t.Errorf("own work %v: dispatch_1 evidence %s (%s), pattern %s, want %s", c.own, d.Evidence, d.Variable, d.Pattern, c.want)
		}
	}
}

// A condition whose buggy values are its normal ones in another mix (the
// buggy median inside the normal range) is no wrong decision: where the
// function's own code did the extra work its loops ran longer on the usual
// items (scalability), where its callee did, the callee took longer on
// items a check should have skipped (missing-constraint).
func TestConditionWithinRangePattern(t *testing.T) {
	mk := func(buggy, own bool) *profile.Profile {
		fx := newFixture(t)
		r := fx.create(t, "mix.rec")
		key := r.variable("key", "dispatch_1", "long", "cond,args", false)
		self, work := 300, 100
		if buggy {
			if own {
				self = 1500
			} else {
				work = 1500
			}
		}
		g := lcg(5)
		// Normal values spread over 0..999, buggy ones mostly 400..599:
		// inside the normal range, another mix.
		next := func() int64 {
			if buggy && g.intn(10) < 9 {
				return 400 + g.intn(200)
			}
			return g.intn(1000)
		}
		for k := 0; k < self; k++ {
			r.tick(1, []string{"dispatch_1", "main"}, 0, val{key, 0, next()})
		}
		for k := 0; k < work; k++ {
			r.tick(1, []string{"worker", "dispatch_1", "main"}, 0, val{key, 1, next()})
		}
		for k := 0; k < 600; k++ {
			r.tick(1, []string{"main"}, 0)
		}
		return r.done()
	}
	for _, c := range []struct {
		own  bool
		want Pattern
	}{{true, Scalability}, {false, MissingConstraint}} {
		res := analyzeWith(t, DefaultOptions(), []*profile.Profile{mk(false, c.own)}, []*profile.Profile{mk(true, c.own)})
		d := res.fn(t, "dispatch_1")
		if d.Evidence != EvidenceVariable || d.Var == nil || d.Var.Anomaly == nil {
			t.Errorf("own work %v: dispatch_1 evidence %s (%s)", c.own, d.Evidence, d.Variable)
			continue
		}
		an := d.Var.Anomaly
		if an.BuggyMedian < an.NormalMin || an.BuggyMedian > an.NormalMax {
			t.Errorf("own work %v: not a mix of the usual values: %+v", c.own, an)
		}
		if d.Pattern != c.want {
			t.Errorf("own work %v: dispatch_1 pattern %s from %s (%s), want %s", c.own, d.Pattern, d.Variable, an.Dimension, c.want)
		}
	}
}

// A thread's outermost function reads the options of everything its thread
// does: its reading one that differs does not rank it above the work that
// grew under it.
func TestThreadRootTakesNoGrowth(t *testing.T) {
	fx := newFixture(t)
	mk := func(buggy bool) *profile.Profile {
		r := fx.create(t, "root.rec")
		cfg := r.variable("cfg_limit", "#global", "long", "none", false)
		limit, work := int64(64), 10
		if buggy {
			limit, work = 512, 900
		}
		for i := 0; i < 400; i++ {
			r.tick(1, []string{"main"}, 0, val{cfg, 0, limit})
		}
		for i := 0; i < work; i++ {
			r.tick(1, []string{"worker", "main"}, 0, val{cfg, 1, limit})
		}
		// A second thread whose work changes too (so that neither thread
		// keeps its normal share: "Threads that only ran longer").
		for i := 0; i < 900; i++ {
			if buggy && i%3 == 0 {
				r.tick(2, []string{"dispatch_1", "dispatch_2"}, 0)
			} else {
				r.tick(2, []string{"dispatch_2"}, 0)
			}
		}
		return r.done()
	}
	a, err := New(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	m := fx.funcs["main"]
	a.SetReads(func(object string, off uint64, global string) (bool, bool) {
		return global == "cfg_limit" && off >= m.off && off < m.off+m.size, true
	})
	if err := a.AddNormal(mk(false), Run{Path: "normal"}); err != nil {
		t.Fatal(err)
	}
	if err := a.AddBuggy(mk(true), Run{Path: "buggy"}); err != nil {
		t.Fatal(err)
	}
	res, err := a.Result()
	if err != nil {
		t.Fatal(err)
	}
	mf, w := res.fn(t, "main"), res.fn(t, "worker")
	if mf.Evidence != EvidenceInput || w.Evidence != EvidenceOwnTime || 2*mf.Share.Change < w.Share.Change {
		t.Fatalf("main: evidence %s growth %.3f; worker: evidence %s growth %.3f", mf.Evidence, mf.Share.Change, w.Evidence, w.Share.Change)
	}
	if mf.Rank < w.Rank {
		t.Errorf("main (a thread's outermost function) ranks %d, above worker %d", mf.Rank, w.Rank)
	}
}

// A thread whose work did not change keeps its normal share of the buggy
// samples when another thread's work changed: a background thread that
// only ran longer while the other thread did more work does not grow. When
// no thread's work changed, a thread that took more of the CPU grows.
func TestThreadThatOnlyRanLonger(t *testing.T) {
	mk := func(buggy, mainChanges bool) *profile.Profile {
		fx := newFixture(t)
		r := fx.create(t, "threads.rec")
		key := r.variable("key", "dispatch_1", "long", "cond", false)
		work, bg := 100, 300
		if buggy {
			bg = 3000
			if mainChanges {
				work = 900
			}
		}
		for i := 0; i < 300; i++ {
			r.tick(1, []string{"dispatch_1", "main"}, 0, val{key, 0, int64(i % 7)})
		}
		for i := 0; i < work; i++ {
			r.tick(1, []string{"worker", "dispatch_1", "main"}, 0, val{key, 1, int64(i % 7)})
		}
		for i := 0; i < bg; i++ {
			r.tick(2, []string{"dispatch_2"}, 0)
		}
		return r.done()
	}
	for _, mainChanges := range []bool{true, false} {
		res := analyzeWith(t, DefaultOptions(), []*profile.Profile{mk(false, mainChanges)}, []*profile.Profile{mk(true, mainChanges)})
		bg, w := res.fn(t, "dispatch_2"), res.fn(t, "worker")
		if mainChanges {
			if bg.Share.Grew() || bg.Score > 0 {
				t.Errorf("the background thread grew: %+v, score %g", bg.Share, bg.Score)
			}
			if !w.Share.Grew() || w.Rank != 1 {
				t.Errorf("worker: share %+v, rank %d, want the growth and rank 1", w.Share, w.Rank)
			}
			continue
		}
		if !bg.Share.Grew() || bg.Rank != 1 {
			t.Errorf("no thread's work changed: dispatch_2 share %+v rank %d, want its growth and rank 1", bg.Share, bg.Rank)
		}
	}
}

// A small thread whose mix changed by chance (a tenth of its 110 samples,
// two standard errors, not ThreadErrs) does not leave out the thread that
// holds the run and did more of the same work.
func TestThreadChangeByChance(t *testing.T) {
	smallThreadChange(t, [2][4]int{{85, 25, 900, 100}, {117, 17, 3000, 300}})
}

// A small thread whose mix changed for real, but whose time per run grew
// by far less than a twentieth of the run's growth, did not make the run
// longer: the thread that did the extra time, with its usual mix, stays
// in the comparison (limit_missing: the main thread, 1% of the samples,
// parsed other requests; the workers ran the same scan three times as
// long, and were left out).
func TestThreadChangeTooSmall(t *testing.T) {
	smallThreadChange(t, [2][4]int{{40, 60, 900, 100}, {150, 50, 3000, 333}})
}

// smallThreadChange records a small main thread (main's own samples, then
// dispatch_1's) beside a thread doing the run's work (worker's, then its
// start routine dispatch_2's own), counts[0] in the normal run and
// counts[1] in the buggy one, and checks that the working thread stays in
// the comparison with its growth.
func smallThreadChange(t *testing.T, counts [2][4]int) {
	t.Helper()
	mk := func(buggy bool) *profile.Profile {
		fx := newFixture(t)
		r := fx.create(t, "small.rec")
		key := r.variable("key", "dispatch_1", "long", "cond", false)
		c := counts[0]
		if buggy {
			c = counts[1]
		}
		for i := 0; i < c[0]; i++ {
			r.tick(1, []string{"main"}, 0)
		}
		for i := 0; i < c[1]; i++ {
			r.tick(1, []string{"dispatch_1", "main"}, 0, val{key, 0, int64(i % 7)})
		}
		for i := 0; i < c[2]; i++ {
			r.tick(2, []string{"worker", "dispatch_2"}, 0)
		}
		for i := 0; i < c[3]; i++ {
			r.tick(2, []string{"dispatch_2"}, 0)
		}
		return r.done()
	}
	res := analyzeWith(t, DefaultOptions(), []*profile.Profile{mk(false)}, []*profile.Profile{mk(true)})
	if w := res.fn(t, "worker"); w.Share.Normal < 0.5 || !w.Share.Grew() {
		t.Errorf("worker: share %+v, want its thread kept (over half of both runs) and its growth", w.Share)
	}
}

// A part that held most of its thread cannot grow by MixChange: the rest
// of the thread shrinking to half or less says its work changed, and a
// thread that only ran longer beside it is left out (cache_missing: the
// write-back, 95% of the main thread normally and 99% buggy, ranked 9th
// below the readers, which got more of a loaded machine's CPU).
func TestThreadSaturatedPartChanged(t *testing.T) {
	mk := func(buggy bool) *profile.Profile {
		fx := newFixture(t)
		r := fx.create(t, "threadsat.rec")
		key := r.variable("key", "dispatch_1", "long", "cond", false)
		own, work, bg := 15, 300, 300
		if buggy {
			own, work, bg = 4, 1000, 3000
		}
		for i := 0; i < own; i++ {
			r.tick(1, []string{"dispatch_1", "main"}, 0, val{key, 0, int64(i % 7)})
		}
		for i := 0; i < work; i++ {
			r.tick(1, []string{"worker", "dispatch_1", "main"}, 0, val{key, 1, int64(i % 7)})
		}
		for i := 0; i < bg; i++ {
			r.tick(2, []string{"dispatch_2"}, 0)
		}
		return r.done()
	}
	res := analyzeWith(t, DefaultOptions(), []*profile.Profile{mk(false)}, []*profile.Profile{mk(true)})
	bg, w := res.fn(t, "dispatch_2"), res.fn(t, "worker")
	if bg.Score > 0 || w.Rank != 1 {
		t.Errorf("dispatch_2 (only ran longer): share %+v score %g; worker rank %d, want 1st", bg.Share, bg.Score, w.Rank)
	}
}

// A callee absent from the normal runs is new only when its callers ran
// there often enough for its absence not to be chance.
func TestNewPathNeedsExpectedSamples(t *testing.T) {
	mk := func(buggy bool, callerTicks int) *profile.Profile {
		fx := newFixture(t)
		r := fx.create(t, "new.rec")
		n := r.variable("n", "main", "long", "none", false)
		for i := 0; i < callerTicks; i++ {
			r.tick(1, []string{"dispatch_1", "main"}, 0, val{n, 1, 1})
		}
		if buggy {
			for i := 0; i < 300; i++ {
				r.tick(1, []string{"worker", "dispatch_1", "main"}, 0, val{n, 2, 1})
			}
		}
		for i := 0; i < 600; i++ {
			r.tick(1, []string{"main"}, 0, val{n, 0, 1})
		}
		return r.done()
	}
	for _, c := range []struct {
		callerTicks int
		want        Evidence
	}{{2, EvidenceOwnTime}, {300, EvidenceNewPath}} {
		res := analyzeWith(t, DefaultOptions(), []*profile.Profile{mk(false, c.callerTicks)}, []*profile.Profile{mk(true, c.callerTicks)})
		if w := res.fn(t, "worker"); w.Evidence != c.want {
			t.Errorf("caller with %d normal samples: worker's evidence %s, want %s", c.callerTicks, w.Evidence, c.want)
		}
	}
}

// A function a few normal samples hold, far fewer than its callers' calls
// predict, hardly ran there: new-path as if none held it. As many where
// its callers ran little is chance.
func TestNewPathHardlyRan(t *testing.T) {
	mk := func(buggy bool, callerTicks, normalWork int) *profile.Profile {
		fx := newFixture(t)
		r := fx.create(t, "hardly.rec")
		n := r.variable("n", "main", "long", "none", false)
		for i := 0; i < callerTicks; i++ {
			r.tick(1, []string{"dispatch_1", "main"}, 0, val{n, 1, 1})
		}
		work := normalWork
		if buggy {
			work = 300
		}
		for i := 0; i < work; i++ {
			r.tick(1, []string{"worker", "dispatch_1", "main"}, 0, val{n, 2, 1})
		}
		for i := 0; i < 600; i++ {
			r.tick(1, []string{"main"}, 0, val{n, 0, 1})
		}
		return r.done()
	}
	for _, c := range []struct {
		callerTicks, normalWork int
		want                    Evidence
	}{{300, 1, EvidenceNewPath}, {300, 2, EvidenceNewPath}, {3, 1, EvidenceOwnTime}, {300, 3, EvidenceOwnTime}} {
		res := analyzeWith(t, DefaultOptions(), []*profile.Profile{mk(false, c.callerTicks, c.normalWork)}, []*profile.Profile{mk(true, c.callerTicks, c.normalWork)})
		w := res.fn(t, "worker")
		if w.Evidence != c.want {
			t.Errorf("caller with %d normal samples, worker with %d: evidence %s, want %s", c.callerTicks, c.normalWork, w.Evidence, c.want)
		}
		if w.Evidence == EvidenceNewPath && !strings.Contains(w.Why, "hardly ran in the normal runs") {
			t.Errorf("why: %q", w.Why)
		}
	}
}

// A function only the buggy runs reached, whose work the normal runs
// reached through a caller the buggy runs never did, replaced that route:
// it ranks below the work. One that adds a route beside the old one keeps
// the growth it brought.
func TestNewRouteToOldWork(t *testing.T) {
	mk := func(buggy, keepOld bool) *profile.Profile {
		fx := newFixture(t)
		r := fx.create(t, "route.rec")
		n := r.variable("n", "main", "long", "none", false)
		for i := 0; i < 300; i++ {
			if !buggy || keepOld {
				r.tick(1, []string{"worker", "dispatch_1", "main"}, 0, val{n, 2, 1})
			}
		}
		if buggy {
			for i := 0; i < 900; i++ {
				r.tick(1, []string{"worker", "dispatch_2", "main"}, 0, val{n, 2, 1})
			}
		}
		for i := 0; i < 600; i++ {
			r.tick(1, []string{"main"}, 0, val{n, 0, 1})
		}
		return r.done()
	}
	for _, keepOld := range []bool{false, true} {
		res := analyzeWith(t, DefaultOptions(), []*profile.Profile{mk(false, keepOld)}, []*profile.Profile{mk(true, keepOld)})
		d, w := res.fn(t, "dispatch_2"), res.fn(t, "worker")
		if d.Evidence != EvidenceNewPath {
			t.Fatalf("old route kept %v: dispatch_2's evidence %s, want new-path", keepOld, d.Evidence)
		}
		if !keepOld {
			if d.Replaces != "dispatch_1" || d.Through != "worker" || d.Rank != w.Rank+1 || !strings.Contains(d.Why, "where dispatch_1, which the buggy runs never reached") {
				t.Errorf("replaced route: dispatch_2 rank %d replaces %q through %q (%s); worker rank %d", d.Rank, d.Replaces, d.Through, d.Why, w.Rank)
			}
			continue
		}
		if d.Replaces != "" || d.Through != "" || d.Rank != 1 {
			t.Errorf("added route: dispatch_2 rank %d replaces %q through %q; want 1st, its own", d.Rank, d.Replaces, d.Through)
		}
	}
}

// A function whose own code grew a little and whose growth went mostly
// into a callee only the buggy runs ran (a state machine reaching a
// parser through a pointer) only reached the new path: the path ranks
// above it, and the function says so. Where the callee ran in the normal
// runs too, it is no new path and the function keeps its place.
func TestReachedNewPath(t *testing.T) {
	mk := func(buggy, ranBefore bool) *profile.Profile {
		fx := newFixture(t)
		r := fx.create(t, "reached.rec")
		n := r.variable("n", "main", "long", "none", false)
		tick := func(st ...string) { r.tick(1, st, 0, val{n, uint8(len(st) - 1), 1}) }
		own := 20
		if buggy {
			own = 100
		}
		for i := 0; i < own; i++ {
			tick("dispatch_1", "main")
		}
		work, rest := 300, 600 // the buggy run is longer: the rest's share shrinks
		if buggy {
			work, rest = 450, 200
		}
		for i := 0; i < work; i++ {
			tick("worker", "dispatch_1", "main")
		}
		paths := 0
		if buggy {
			paths = 500
		} else if ranBefore {
			paths = 200
		}
		for i := 0; i < paths; i++ {
			tick("dispatch_2", "dispatch_1", "main")
		}
		for i := 0; i < rest; i++ {
			tick("main")
		}
		return r.done()
	}
	for _, ranBefore := range []bool{false, true} {
		res := analyzeWith(t, DefaultOptions(), []*profile.Profile{mk(false, ranBefore)}, []*profile.Profile{mk(true, ranBefore)})
		d, p := res.fn(t, "dispatch_1"), res.fn(t, "dispatch_2")
		if ranBefore {
			if d.Reached != "" || p.Evidence == EvidenceNewPath {
				t.Errorf("a path the normal runs ran: dispatch_1 reached %q, dispatch_2's evidence %s", d.Reached, p.Evidence)
			}
			continue
		}
		if p.Evidence != EvidenceNewPath || d.Evidence != EvidenceOwnTime {
			t.Fatalf("evidence: dispatch_2 %s, dispatch_1 %s; want new-path and own-time", p.Evidence, d.Evidence)
		}
		if d.Reached != "dispatch_2" || d.Rank != p.Rank+1 || !strings.Contains(d.Why, "dispatch_2, a path only the buggy runs took") {
			t.Errorf("dispatch_1 rank %d reached %q (%s); dispatch_2 rank %d", d.Rank, d.Reached, d.Why, p.Rank)
		}
	}
}

// loopWork: a loop variable whose buggy values stay in the normal range
// says the loops did no more work per call, one beyond it (in the median or
// the bulk) that they did more; a pointer, its target, a global, a variable
// without the loop tag or with too few samples says nothing.
func TestLoopWork(t *testing.T) {
	seq := func(lo, hi, step float64) []float64 {
		var xs []float64
		for x := lo; x <= hi; x += step {
			xs = append(xs, x)
		}
		return xs
	}
	mk := func(name, tags string, normal, buggy []float64) *variable {
		v := vr(normal, buggy)
		v.src.Name, v.src.Tags = name, tags
		return v
	}
	a := &Analyzer{}
	a.vars = []*variable{
		mk("i", "loop|cond", seq(0, 1000, 10), seq(100, 500, 5)),                           // same range, another mix
		mk("j", "loop|cond", seq(0, 1000, 10), seq(800, 5000, 20)),                         // beyond: more iterations
		mk("k", "cond", seq(0, 1000, 10), seq(100, 500, 5)),                                // not a loop variable
		mk("n", "loop", seq(0, 1000, 10), seq(100, 140, 10)),                               // too few buggy samples
		mk("m", "loop", seq(0, 1000, 10), append(seq(0, 400, 10), seq(1100, 3000, 10)...)), // the bulk beyond
	}
	ptr := mk("p", "loop", seq(0, 1000, 10), seq(100, 500, 5))
	ptr.src.Pointer = true
	glob := mk("g", "loop", seq(0, 1000, 10), seq(100, 500, 5))
	glob.src.Global = true
	target := mk("*p", "loop", seq(0, 1000, 10), seq(100, 500, 5))
	a.vars = append(a.vars, ptr, glob, target)
	for i, want := range []struct {
		ok, more bool
	}{{true, false}, {true, true}, {false, false}, {false, false}, {true, true}, {false, false}, {false, false}, {false, false}} {
		name, more, ok := a.loopWork([]int32{int32(i)})
		if ok != want.ok || more != want.more || ok && name != a.vars[i].src.Name {
			t.Errorf("%s: loopWork %q more %v ok %v, want more %v ok %v", a.vars[i].src.Name, name, more, ok, want.more, want.ok)
		}
	}
	// One loop going beyond its range is more work, whatever the others do.
	if name, more, ok := a.loopWork([]int32{2, 0, 1}); !ok || !more || name != "j" {
		t.Errorf("among several: %q more %v ok %v, want j, more", name, more, ok)
	}
	if name, more, ok := a.loopWork([]int32{2, 0, 3}); !ok || more || name != "i" {
		t.Errorf("among several in range: %q more %v ok %v, want i, not more", name, more, ok)
	}
}

// A caller whose growth outside one callee is significant but immaterial
// (below OwnShare of its growth) encloses that callee: with another mix of
// its usual values as its only evidence it ranks just below it, not above.
func TestImmaterialGrowthEncloses(t *testing.T) {
	mk := func(buggy bool) *profile.Profile {
		fx := newFixture(t)
		r := fx.create(t, "encl.rec")
		at := r.variable("at", "dispatch_1", "long", "cond", false)
		i := r.variable("i", "worker", "long", "loop", false)
		own, work := 2, 100
		if buggy {
			own, work = 25, 900
		}
		v := func(k int) int64 { // all of 0..999 normally, 100..299 in the buggy run
			if buggy {
				return 100 + int64(k*37%200)
			}
			return int64(k * 37 % 1000)
		}
		for k := 0; k < own; k++ {
			r.tick(1, []string{"dispatch_1", "main"}, 0, val{at, 0, v(k)})
		}
		for k := 0; k < work; k++ {
			r.tick(1, []string{"worker", "dispatch_2", "dispatch_1", "main"}, 0, val{at, 2, v(k)}, val{i, 0, int64(k % 50)})
		}
		for k := 0; k < 600; k++ {
			r.tick(1, []string{"main"}, 0)
		}
		return r.done()
	}
	res := analyzeWith(t, DefaultOptions(), []*profile.Profile{mk(false)}, []*profile.Profile{mk(true)})
	d1, d2 := res.fn(t, "dispatch_1"), res.fn(t, "dispatch_2")
	if !d1.SelfShare.Grew() || ownWork(&d1) {
		t.Fatalf("dispatch_1's own growth %+v of %+v: want significant and immaterial", d1.SelfShare, d1.Share)
	}
	if !mixOnly(&d1) {
		t.Fatalf("dispatch_1: evidence %s, variable %+v: want another mix of its usual values", d1.Evidence, d1.Var)
	}
	if d1.Through != "dispatch_2" || d1.Rank != d2.Rank+1 {
		t.Errorf("dispatch_1 rank %d through %q (%s); dispatch_2 rank %d (%s)", d1.Rank, d1.Through, d1.Why, d2.Rank, d2.Why)
	}
}

// Of two variables equally anomalous, the one whose buggy values lie outside
// its normal range is a function's evidence, not one in another mix of its
// usual values, even with more samples.
func TestOutsideRangeBeforeMix(t *testing.T) {
	mk := func(buggy bool) *profile.Profile {
		fx := newFixture(t)
		r := fx.create(t, "outside.rec")
		mix := r.variable("mix", "dispatch_1", "long", "cond", false)
		lim := r.variable("lim", "dispatch_1", "long", "cond", false)
		work := 100
		if buggy {
			work = 900
		}
		m := func(k int) int64 { // even 0..998 normally, odd 101..299 in the buggy run
			if buggy {
				return 101 + 2*int64(k%100)
			}
			return 2 * int64(k*37%500)
		}
		l := func(k int) int64 { // 60..69 normally, 500..509 in the buggy run
			if buggy {
				return 500 + int64(k%10)
			}
			return 60 + int64(k%10)
		}
		for k := 0; k < 300; k++ {
			vals := []val{{mix, 0, m(k)}}
			if k%3 == 0 {
				vals = append(vals, val{lim, 0, l(k)})
			}
			r.tick(1, []string{"dispatch_1", "main"}, 0, vals...)
		}
		for k := 0; k < work; k++ {
			r.tick(1, []string{"worker", "dispatch_1", "main"}, 0, val{mix, 1, m(k)})
		}
		for k := 0; k < 600; k++ {
			r.tick(1, []string{"main"}, 0)
		}
		return r.done()
	}
	res := analyzeWith(t, DefaultOptions(), []*profile.Profile{mk(false)}, []*profile.Profile{mk(true)})
	d := res.fn(t, "dispatch_1")
	mv, lv := res.variable(t, "mix"), res.variable(t, "lim")
	if mv.Discount != 0 || lv.Discount != 0 || mv.BuggySamples <= lv.BuggySamples {
		t.Fatalf("want both anomalous (discounts %g, %g), mix with more samples (%d, %d)", mv.Discount, lv.Discount, mv.BuggySamples, lv.BuggySamples)
	}
	if d.Evidence != EvidenceVariable || d.Var == nil || d.Var.Name != "lim" || d.Pattern != WrongConstraint {
		t.Errorf("dispatch_1: evidence %s variable %q pattern %s (%s); want lim, wrong-constraint", d.Evidence, d.Variable, d.Pattern, d.Why)
	}
}

// When one thread's work changed, the threads whose work did not are left
// out of the comparison: a change inside the main thread is measured among
// its own samples, not diluted by readers that run, unchanged, for as long
// as it does (the readers took more of the buggy CPU here; with their
// normal share of it the write-back's growth, 94% to 99% of the main
// thread, was 2 points of the whole against an error of 2.3).
func TestUnchangedThreadsLeftOut(t *testing.T) {
	// main's own code: other work; dispatch_1 → worker: the write-back;
	// dispatch_2, a thread of its own: the readers.
	mk := func(buggy bool) *profile.Profile {
		fx := newFixture(t)
		r := fx.create(t, "threads.rec")
		i0 := r.variable("r", "main", "int", "loop", false)
		other, write, readers := 11, 163, 331
		if buggy {
			other, write, readers = 5, 840, 1806
		}
		for i := 0; i < other; i++ {
			r.tick(1, []string{"main"}, 0, val{i0, 0, int64(i % 7)})
		}
		for i := 0; i < write; i++ {
			r.tick(1, []string{"worker", "dispatch_1", "main"}, 0)
		}
		for i := 0; i < readers; i++ {
			r.tick(2, []string{"dispatch_2"}, 0)
		}
		return r.done()
	}
	res := analyzeWith(t, DefaultOptions(), []*profile.Profile{mk(false)}, []*profile.Profile{mk(true)})
	w, rd := res.fn(t, "dispatch_1"), res.fn(t, "dispatch_2")
	if !w.Share.Grew() {
		t.Errorf("dispatch_1 (the write-back): share %+v, want a significant growth", w.Share)
	}
	if rd.Share.Grew() || rd.Score > 0 || rd.Rank < w.Rank {
		t.Errorf("dispatch_2 (the readers): share %+v, score %g, rank %d (dispatch_1 %d); want no growth, below", rd.Share, rd.Score, rd.Rank, w.Rank)
	}
}

// A caller that called a callee more often (the callee's loop did the same
// work per call) answers for it; a predicate whose answer decides every
// entry into that caller ranks above it, wrong-constraint; without one,
// the caller's pattern says whether a threshold of its own decides the
// calls (wrong-constraint) or nothing does (missing-constraint).
func TestPredicateDecidesCalls(t *testing.T) {
	fx := newFixture(t)
	mk := func(buggy bool) *profile.Profile {
		r := fx.create(t, "pred.rec")
		i := r.variable("i", "worker", "long", "loop|cond", false)
		calls := 200
		if buggy {
			calls = 800
		}
		for k := 0; k < calls; k++ {
			r.tick(1, []string{"worker", "dispatch_1", "main"}, 0, val{i, 0, int64(k % 50)})
		}
		for k := 0; k < 600; k++ {
			r.tick(1, []string{"main"}, 0)
		}
		for k := 0; k < 3; k++ {
			r.tick(1, []string{"dispatch_2", "main"}, 0)
		}
		return r.done()
	}
	normal, buggy := mk(false), mk(true)
	run := func(decide DecideFunc, guard GuardFunc) *Result {
		res := analyzeHooked(t, normal, buggy, func(a *Analyzer) {
			a.SetDeciders(decide)
			a.SetGuards(guard)
		})
		return res
	}
	noDecider := func(string, uint64, string) (string, bool) { return "", false }
	for _, tc := range []struct {
		guarded, ordered bool
		want             Pattern
	}{{false, false, MissingConstraint}, {true, false, MissingConstraint}, {true, true, WrongConstraint}} {
		res := run(noDecider, func(_ string, off uint64, callee string) (bool, bool, bool) {
			if fx.in("dispatch_1", off) && callee == "worker" {
				return tc.guarded, tc.ordered, true
			}
			return false, false, false
		})
		d := res.fn(t, "dispatch_1")
		if d.CalledMore == nil || d.CalledMore.Callee != "worker" || d.Rank != 1 || d.Pattern != tc.want {
			t.Errorf("guarded %v ordered %v: dispatch_1 rank %d, called more %+v, pattern %s; want 1st, worker, %s",
				tc.guarded, tc.ordered, d.Rank, d.CalledMore, d.Pattern, tc.want)
		}
	}
	res := run(func(_ string, off uint64, callee string) (string, bool) {
		if fx.in("dispatch_1", off) && callee == "" {
			return "dispatch_2", true
		}
		return "", false
	}, nil)
	p, d := res.fn(t, "dispatch_2"), res.fn(t, "dispatch_1")
	if p.Rank != 1 || d.Rank != 2 || p.Evidence != EvidenceDecides || p.Pattern != WrongConstraint ||
		p.Decides == nil || p.Decides.Callee != "dispatch_1" || p.Score != d.Share.Change {
		t.Errorf("predicate: rank %d evidence %s pattern %s decides %+v score %g; dispatch_1 rank %d growth %g",
			p.Rank, p.Evidence, p.Pattern, p.Decides, p.Score, d.Rank, d.Share.Change)
	}
	if !strings.Contains(p.Why, "its answer decides every call of dispatch_1") || strings.Contains(p.Why, "no significant growth") ||
		strings.Contains(p.Why, "no sample holds it") {
		t.Errorf("why: %q", p.Why)
	}
	// A predicate no sample holds (a cheap test between two samples) is
	// ranked all the same: the machine code names it.
	res = run(func(_ string, off uint64, callee string) (string, bool) {
		if fx.in("dispatch_1", off) && callee == "" {
			return "gate", true
		}
		return "", false
	}, nil)
	d = res.fn(t, "dispatch_1")
	g := res.fn(t, "gate")
	if g.Rank != 1 || d.Rank != 2 || g.Evidence != EvidenceDecides || g.Pattern != WrongConstraint ||
		g.Share.Normal != 0 || g.Share.Buggy != 0 || g.Object != d.Object || g.Score != d.Share.Change {
		t.Errorf("unsampled predicate: rank %d evidence %s pattern %s share %+v object %q score %g; dispatch_1 rank %d object %q growth %g",
			g.Rank, g.Evidence, g.Pattern, g.Share, g.Object, g.Score, d.Rank, d.Object, d.Share.Change)
	}
	if !strings.Contains(g.Why, "no sample holds it") || !strings.Contains(g.Why, "its answer decides every call of dispatch_1") {
		t.Errorf("unsampled predicate's why: %q", g.Why)
	}
	names := map[string]int{}
	for _, f := range res.Functions {
		names[f.Name]++
	}
	if names["gate"] != 1 || names["dispatch_1"] != 1 || names["main"] != 1 {
		t.Errorf("functions ranked: %v; want each once", names)
	}
	// Without a predicate no function is added.
	res = run(noDecider, nil)
	for _, f := range res.Functions {
		if f.Name == "gate" {
			t.Errorf("gate ranked without a decider: %+v", f)
		}
	}
}

// A callee whose code does at most a fixed amount of work per call (a
// wait whose polls run to a constant) grew by what its caller handed it:
// the caller answers for the growth and ranks above it, its pattern how
// it decides the calls (here none: missing-constraint). Without the
// machine code's word the callee, whose own code did the work, keeps the
// first place.
func TestBoundedCalleeHandsGrowthUp(t *testing.T) {
	fx := newFixture(t)
	mk := func(buggy bool) *profile.Profile {
		r := fx.create(t, "bounded.rec")
		i0 := r.variable("i", "main", "long", "loop|cond", false)
		// The caller was mostly its calls of worker already (a loop
		// over items, each handed to the wait), so that its part does
		// not say it asked for more.
		waits := 300
		if buggy {
			waits = 1500
		}
		for k := 0; k < waits; k++ {
			r.tick(1, []string{"worker", "dispatch_1", "main"}, 0)
		}
		for k := 0; k < 50; k++ {
			r.tick(1, []string{"dispatch_1", "main"}, 0)
		}
		for k := 0; k < 600; k++ {
			r.tick(1, []string{"main"}, 0, val{i0, 0, int64(k % 7)})
		}
		return r.done()
	}
	normal, buggy := mk(false), mk(true)
	run := func(bound BoundFunc) *Result {
		res := analyzeHooked(t, normal, buggy, func(a *Analyzer) {
			a.SetBounds(bound)
			a.SetGuards(func(string, uint64, string) (bool, bool, bool) { return false, false, true })
		})
		return res
	}
	res := run(func(_ string, off uint64) (bool, bool) { return fx.in("worker", off), true })
	w, d := res.fn(t, "worker"), res.fn(t, "dispatch_1")
	if d.Rank != 1 || w.Rank != 2 || d.CalledMore == nil || !d.CalledMore.Bounded || d.CalledMore.Callee != "worker" ||
		d.Pattern != MissingConstraint || d.Score != d.Share.Change {
		t.Errorf("bounded worker: dispatch_1 rank %d called more %+v pattern %s score %g (growth %g); worker rank %d",
			d.Rank, d.CalledMore, d.Pattern, d.Score, d.Share.Change, w.Rank)
	}
	if !strings.Contains(d.Why, "handed worker more work, whose loops run at most a fixed number of times per call") {
		t.Errorf("why: %q", d.Why)
	}
	res = run(func(string, uint64) (bool, bool) { return false, true })
	w, d = res.fn(t, "worker"), res.fn(t, "dispatch_1")
	if w.Rank != 1 || d.Rank < 2 || d.CalledMore != nil {
		t.Errorf("unbounded worker: worker rank %d, dispatch_1 rank %d called more %+v; want worker 1st", w.Rank, d.Rank, d.CalledMore)
	}
}

// A decision on an input takes the growth of what it runs, a caller that
// handed a bounded callee more work included: that caller made its calls
// because the decision ran it.
func TestInputTakesCalledMore(t *testing.T) {
	fx := newFixture(t)
	mk := func(buggy bool) *profile.Profile {
		r := fx.create(t, "input-bounded.rec")
		cfg := r.variable("cfg_limit", "#global", "long", "none", false)
		limit, work := int64(64), 10
		if buggy {
			limit, work = 512, 900
		}
		for i := 0; i < 300; i++ {
			r.tick(1, []string{"dispatch_1", "main"}, 0, val{cfg, 1, limit})
		}
		for i := 0; i < work; i++ {
			r.tick(1, []string{"worker", "dispatch_2", "dispatch_1", "main"}, 0, val{cfg, 3, limit})
		}
		for i := 0; i < 600; i++ {
			r.tick(1, []string{"main"}, 0, val{cfg, 0, limit})
		}
		return r.done()
	}
	res := analyzeHooked(t, mk(false), mk(true), func(a *Analyzer) {
		a.SetReads(func(_ string, off uint64, global string) (bool, bool) {
			return global == "cfg_limit" && fx.in("dispatch_1", off), true
		})
		a.SetBounds(func(_ string, off uint64) (bool, bool) { return fx.in("worker", off), true })
	})
	d1, d2, w := res.fn(t, "dispatch_1"), res.fn(t, "dispatch_2"), res.fn(t, "worker")
	if d1.Evidence != EvidenceInput || d2.CalledMore == nil || !d2.CalledMore.Bounded {
		t.Fatalf("evidence: dispatch_1 %s, dispatch_2 called more %+v", d1.Evidence, d2.CalledMore)
	}
	if d2.Share.Change <= d1.Share.Change || d1.Rank != 1 || d2.Rank != 2 || w.Rank != 3 {
		t.Errorf("ranks: dispatch_1 %d (growth %.3f), dispatch_2 %d (growth %.3f), worker %d; want the deciding function first",
			d1.Rank, d1.Share.Change, d2.Rank, d2.Share.Change, w.Rank)
	}
}

// A variable whose buggy values all lie in its normal range, in another
// mix, is localised where the values the buggy runs over-represent were
// read: here the one value that took more than half of the buggy samples
// (a tenth of the normal ones), most of them read at the caller's call
// site, and none of the other values.
func TestLocaliseOverRepresented(t *testing.T) {
	mk := func(buggy bool) *profile.Profile {
		fx := newFixture(t)
		r := fx.create(t, "mix.rec")
		k := r.variable("k", "worker", "long", "cond", false)
		x := uint32(1)
		for i := 0; i < 1000; i++ {
			x = x*1103515245 + 12345 // a fixed sequence: deltas over the whole range
			v := int64(x>>16) % 10
			if buggy && i%2 == 0 && v != 7 {
				r.tick(1, []string{"worker", "dispatch_1", "main"}, 0, val{k, 1, 7})
				continue
			}
			r.tick(1, []string{"worker", "dispatch_1", "main"}, 0, val{k, 0, v})
		}
		return r.done()
	}
	res := analyze(t, []*profile.Profile{mk(false)}, []*profile.Profile{mk(true)})
	w := res.fn(t, "worker")
	if w.Var == nil || w.Var.Anomaly == nil || !w.Var.Anomalous {
		t.Fatalf("worker: no anomalous variable: %+v", w.Var)
	}
	an := w.Var.Anomaly
	sevens, moved := 0, 0 // the buggy samples of 7; those read in dispatch_1
	x := uint32(1)
	for i := 0; i < 1000; i++ {
		x = x*1103515245 + 12345
		v := int64(x>>16) % 10
		if i%2 == 0 && v != 7 {
			moved++
		}
		if i%2 == 0 || v == 7 {
			sevens++
		}
	}
	if an.Dimension != DimValue || an.Outside != 0 || an.Over != sevens {
		t.Errorf("%s: outside %d, over-represented %d; want value, 0 and the %d samples of 7", an.Dimension, an.Outside, an.Over, sevens)
	}
	total := 0
	for _, l := range an.Lines {
		total += l.Samples
	}
	if len(an.Lines) == 0 || an.Lines[0].Function != "dispatch_1" || an.Lines[0].Samples != moved || total != an.Over {
		t.Errorf("lines %+v (total %d): want dispatch_1's call site first with %d samples, %d in all", an.Lines, total, moved, an.Over)
	}
}

// A function only the buggy runs reached gets its pattern from how its
// code decides the call of its heaviest callee: a threshold →
// wrong-constraint, no guard or equality only → missing-constraint, not
// known → none.
func TestNewPathPattern(t *testing.T) {
	fx := newFixture(t)
	mk := func(buggy bool) *profile.Profile {
		r := fx.create(t, "newpat.rec")
		n := r.variable("n", "main", "long", "none", false)
		if buggy {
			for i := 0; i < 300; i++ {
				r.tick(1, []string{"worker", "dispatch_2", "main"}, 0, val{n, 2, 1})
			}
		}
		for i := 0; i < 600; i++ {
			r.tick(1, []string{"main"}, 0, val{n, 0, 1})
		}
		return r.done()
	}
	normal, buggy := mk(false), mk(true)
	d2 := fx.funcs["dispatch_2"]
	for _, tc := range []struct {
		guarded, ordered, known bool
		want                    Pattern
	}{
		{true, true, true, WrongConstraint},
		{true, false, true, MissingConstraint},
		{false, false, true, MissingConstraint},
		{false, false, false, NoPattern},
	} {
		res := analyzeHooked(t, normal, buggy, func(a *Analyzer) {
			a.SetGuards(guardIn(d2, "worker", tc.guarded, tc.ordered, tc.known))
		})
		if d := res.fn(t, "dispatch_2"); d.Evidence != EvidenceNewPath || d.Pattern != tc.want {
			t.Errorf("guarded %v ordered %v known %v: dispatch_2 evidence %s pattern %s, want new-path, %s",
				tc.guarded, tc.ordered, tc.known, d.Evidence, d.Pattern, tc.want)
		}
	}
}

// A caller with variable evidence whose growth all occurs under a callee
// that answers for more calls its own threshold let through ranks below
// that callee; when no threshold decides them, the caller keeps its place.
func TestThresholdBelowDecides(t *testing.T) {
	fx := newFixture(t)
	mk := func(buggy bool) *profile.Profile {
		r := fx.create(t, "thr.rec")
		i := r.variable("i", "worker", "long", "loop|cond", false)
		at := r.variable("at", "dispatch_2", "long", "cond", false)
		calls, base := 200, int64(0)
		if buggy {
			calls, base = 800, 100
		}
		for k := 0; k < calls; k++ {
			r.tick(1, []string{"worker", "dispatch_1", "dispatch_2", "main"}, 0, val{i, 0, int64(k % 50)}, val{at, 2, base + int64(k%10)})
		}
		for k := 0; k < 600; k++ {
			r.tick(1, []string{"main"}, 0)
		}
		return r.done()
	}
	normal, buggy := mk(false), mk(true)
	d1 := fx.funcs["dispatch_1"]
	for _, ordered := range []bool{true, false} {
		res := analyzeHooked(t, normal, buggy, func(a *Analyzer) {
			a.SetGuards(guardIn(d1, "worker", true, ordered, true))
		})
		d, c := res.fn(t, "dispatch_1"), res.fn(t, "dispatch_2")
		if c.Evidence != EvidenceVariable || d.CalledMore == nil {
			t.Fatalf("dispatch_2 evidence %s, dispatch_1 called more %+v: the setting is not the one tested", c.Evidence, d.CalledMore)
		}
		if ordered && (d.Rank != 1 || c.Rank <= d.Rank) || !ordered && c.Rank > d.Rank {
			t.Errorf("threshold %v: dispatch_1 rank %d, dispatch_2 rank %d", ordered, d.Rank, c.Rank)
		}
	}
}

// A function two of whose pointers delimit a longer range than any in the
// normal runs, with no such function above it, made the longer range its
// callee works on: it ranks above that callee, whose own time grew. Two
// pointers whose order changes from sample to sample delimit no range (how
// the function then ranks is other rules' business).
func TestRangeLongerThanHanded(t *testing.T) {
	mk := func(buggy, ordered bool) *profile.Profile {
		fx := newFixture(t)
		r := fx.create(t, "range.rec")
		start := r.variable("start", "dispatch_1", "const char *", "args", true)
		end := r.variable("end", "dispatch_1", "const char *", "args", true)
		g := lcg(11)
		work := 100
		if buggy {
			work = 700
		}
		const at = 0x7f0000000000
		for i := 0; i < 300; i++ {
			r.tick(1, []string{"dispatch_1", "main"}, 0, val{start, 0, at}, val{end, 0, at + 8192})
		}
		for i := 0; i < work; i++ {
			s, n := int64(at), int64(8192)
			if buggy {
				n = 8192 * (1 + int64(i))
			}
			e := s + n
			if !ordered && g.intn(2) == 0 {
				s, e = e, s
			}
			r.tick(1, []string{"worker", "dispatch_1", "main"}, 0, val{start, 1, s}, val{end, 1, e})
		}
		for i := 0; i < 600; i++ {
			r.tick(1, []string{"main"}, 0)
		}
		return r.done()
	}
	for _, ordered := range []bool{true, false} {
		res := analyzeWith(t, DefaultOptions(), []*profile.Profile{mk(false, ordered)}, []*profile.Profile{mk(true, ordered)})
		d, w := res.fn(t, "dispatch_1"), res.fn(t, "worker")
		if w.Evidence != EvidenceOwnTime {
			t.Fatalf("ordered %v: worker's evidence %s, want own-time", ordered, w.Evidence)
		}
		if !ordered {
			if d.Range != nil || d.Evidence == EvidenceRange {
				t.Errorf("unordered pointers: dispatch_1 has a range %+v (evidence %s)", d.Range, d.Evidence)
			}
			continue
		}
		if d.Range == nil || d.Range.Start != "start" || d.Range.End != "end" || d.Range.NormalMax != 8192 {
			t.Fatalf("dispatch_1's range: %+v, want start..end, normally at most 8192", d.Range)
		}
		if d.Rank != 1 || w.Rank != 2 || d.Pattern != MissingConstraint {
			t.Errorf("ranks: dispatch_1 %d (%s, %s), worker %d; want dispatch_1 first", d.Rank, d.Evidence, d.Pattern, w.Rank)
		}
		if !strings.Contains(d.Why, "start..end lie") {
			t.Errorf("why: %q", d.Why)
		}
	}
}

// Two pointers into unrelated objects (a heap buffer, a stack array) come
// in the same order in every sample, and their distance is where the
// address space placed the objects: a distance a little longer than
// normally, in a function whose time grew far more, is no range that grew.
func TestDistantPointersNoRange(t *testing.T) {
	mk := func(buggy bool) *profile.Profile {
		fx := newFixture(t)
		r := fx.create(t, "distant.rec")
		body := r.variable("body", "dispatch_1", "const char *", "args", true)
		query := r.variable("query", "dispatch_1", "const char *", "args", true)
		heap, stack, work := int64(0x555556000000), int64(0x7ffc10000000), 100
		if buggy {
			heap, stack, work = 0x520000000000, 0x7fff00000000, 700
		}
		g := lcg(5)
		for i := 0; i < 300+work; i++ {
			st := []string{"dispatch_1", "main"}
			if i >= 300 {
				st = []string{"worker", "dispatch_1", "main"}
			}
			r.tick(1, st, 0, val{body, 0, heap + g.intn(4096)}, val{query, 0, stack + g.intn(256)})
		}
		for i := 0; i < 600; i++ {
			r.tick(1, []string{"main"}, 0)
		}
		return r.done()
	}
	res := analyzeWith(t, DefaultOptions(), []*profile.Profile{mk(false)}, []*profile.Profile{mk(true)})
	if d := res.fn(t, "dispatch_1"); d.Range != nil || d.Evidence == EvidenceRange {
		t.Errorf("dispatch_1 has a range %+v (evidence %s)", d.Range, d.Evidence)
	}
}

// Two pointers on either side of an executable mapping point into two
// objects (a heap buffer below the program, a stack array above its
// libraries): however much their distance grew, they delimit no range.
// The same pointers with nothing mapped between them do.
func TestPointersAcrossMappingNoRange(t *testing.T) {
	mk := func(buggy, across bool) *profile.Profile {
		fx := newFixture(t)
		r := fx.create(t, "across.rec")
		lo := r.variable("body", "dispatch_1", "const char *", "args", true)
		hi := r.variable("query", "dispatch_1", "const char *", "args", true)
		below := int64(base) - 0x10000000 // a heap below the program
		if !across {
			below = int64(base) + int64(fx.size) + 0x1000 // above it, as the other
		}
		above, work := int64(base)+int64(fx.size)+0x20000000, 100
		if buggy {
			above, work = int64(base)+int64(fx.size)+0x20000000*40, 700
		}
		for i := 0; i < 300+work; i++ {
			st := []string{"dispatch_1", "main"}
			if i >= 300 {
				st = []string{"worker", "dispatch_1", "main"}
			}
			r.tick(1, st, 0, val{lo, 0, below}, val{hi, 0, above})
		}
		for i := 0; i < 600; i++ {
			r.tick(1, []string{"main"}, 0)
		}
		return r.done()
	}
	for _, across := range []bool{true, false} {
		res := analyzeWith(t, DefaultOptions(), []*profile.Profile{mk(false, across)}, []*profile.Profile{mk(true, across)})
		d := res.fn(t, "dispatch_1")
		if has := d.Range != nil && d.Evidence == EvidenceRange; has == across {
			t.Errorf("mapping between the pointers %v: dispatch_1's range %+v (evidence %s)", across, d.Range, d.Evidence)
		}
	}
}

// A cursor that consumes what it was handed (the next separator's
// position up to the buffer's fixed end) makes the range shorter from one
// sample to the next: a longer one was handed, not made, and is no claim;
// the callee whose own time grew ranks first. The same pointers walking
// out from a fixed start (the range longer at each sample) made it.
// (How the function then ranks is other rules' business.)
func TestConsumedRangeNoClaim(t *testing.T) {
	mk := func(buggy, consume bool) *profile.Profile {
		fx := newFixture(t)
		r := fx.create(t, "cursor.rec")
		cur := r.variable("amp", "dispatch_1", "const char *", "args", true)
		end := r.variable("end", "dispatch_1", "const char *", "args", true)
		const at = 0x7f0000000000
		n, work := int64(800), 100
		if buggy {
			n, work = 800*60, 700
		}
		for i := 0; i < 300; i++ {
			r.tick(1, []string{"dispatch_1", "main"}, 0, val{cur, 0, at + 400}, val{end, 0, at + 800})
		}
		for i := 0; i < work; i++ {
			step := int64(i%50) * n / 50 // 50 samples a call
			c, e := int64(at)+step, int64(at)+n
			if !consume {
				c, e = at, int64(at)+step+1
			}
			r.tick(1, []string{"worker", "dispatch_1", "main"}, 0, val{cur, 1, c}, val{end, 1, e})
		}
		for i := 0; i < 600; i++ {
			r.tick(1, []string{"main"}, 0)
		}
		return r.done()
	}
	for _, consume := range []bool{true, false} {
		res := analyzeWith(t, DefaultOptions(), []*profile.Profile{mk(false, consume)}, []*profile.Profile{mk(true, consume)})
		d := res.fn(t, "dispatch_1")
		if has := d.Range != nil && d.Evidence == EvidenceRange; has == consume {
			t.Errorf("consumed %v: dispatch_1's range %+v (evidence %s)", consume, d.Range, d.Evidence)
		}
	}
}

// A global read in several functions gives each of them the lines where it
// was read while charged to it, not every line it was read at: worker's
// lines are worker's, dispatch_2's its call site, in both methods. The
// variable's own anomaly places each sample once, in its innermost frame.
func TestGlobalLinesPerFunction(t *testing.T) {
	fx := newFixture(t)
	mk := func(buggy bool) *profile.Profile {
		r := fx.create(t, "lines.rec")
		g := r.variable("g_state", "#global", "long", "cond", false)
		off, work := int64(0), 200
		if buggy {
			off, work = 1000, 900
		}
		for i := 0; i < work; i++ {
			r.tick(1, []string{"worker", "dispatch_2", "main"}, 0, val{g, 0, off + int64(i%50)}, val{g, 1, off + int64(i%50)})
		}
		for i := 0; i < 300; i++ {
			r.tick(1, []string{"dispatch_1", "main"}, 0, val{g, 0, off + int64(i%50)})
		}
		return r.done()
	}
	normal, buggy := mk(false), mk(true)
	for _, o := range []Options{paperOptions(), DefaultOptions()} {
		res := analyzeWith(t, o, []*profile.Profile{normal}, []*profile.Profile{buggy})
		want := map[string]int{"worker": 900, "dispatch_2": 900, "dispatch_1": 300}
		for name, n := range want {
			f := res.fn(t, name)
			if f.Variable != "g_state" {
				t.Errorf("%s: %s: evidence from %q, want g_state", o.Method, name, f.Variable)
				continue
			}
			total := 0
			for _, l := range f.Lines {
				total += l.Samples
				if l.Function != name {
					t.Errorf("%s: %s has a line of %s: %+v", o.Method, name, l.Function, l)
				}
			}
			if total != n {
				t.Errorf("%s: %s's lines hold %d samples, want its own %d: %+v", o.Method, name, total, n, f.Lines)
			}
		}
		if o.method() == MethodVprof {
			in := map[string]int{}
			for _, l := range res.variable(t, "g_state").Anomaly.Lines {
				in[l.Function] += l.Samples
			}
			if len(in) != 2 || in["worker"] != 900 || in["dispatch_1"] != 300 {
				t.Errorf("g_state's anomaly places its samples %v, want worker 900, dispatch_1 300", in)
			}
		}
	}
}

// Identities (an inode, a pid) differ between any two runs: not inputs that
// differ, not anomalies; a size read from the same struct stays an input.
func TestIdentityNotInput(t *testing.T) {
	fx := newFixture(t)
	mk := func(buggy bool) *profile.Profile {
		r := fx.create(t, "identity.rec")
		ino := r.variable("istat.st_ino", "#global", "__ino_t", "none", false)
		size := r.variable("istat.st_size", "#global", "__off_t", "none", false)
		child := r.variable("child", "worker", "pid_t", "cond", false)
		inode, sz, pid, work := int64(886357), int64(6_000_000), int64(4000), 200
		if buggy {
			inode, sz, pid, work = 885605, 500_000, 91000, 900
		}
		for i := 0; i < work; i++ {
			r.tick(1, []string{"worker", "dispatch_2", "main"}, 0, val{child, 0, pid + int64(i%7)}, val{ino, 0, inode}, val{size, 0, sz})
		}
		for i := 0; i < 300; i++ {
			r.tick(1, []string{"dispatch_1", "main"}, 0, val{ino, 0, inode}, val{size, 0, sz})
		}
		return r.done()
	}
	res := analyzeWith(t, DefaultOptions(), []*profile.Profile{mk(false)}, []*profile.Profile{mk(true)})
	var names []string
	for _, in := range res.Inputs {
		names = append(names, in.Name)
	}
	if !slices.Equal(names, []string{"istat.st_size"}) {
		t.Errorf("inputs that differ %v, want istat.st_size only", names)
	}
	if w := res.fn(t, "worker"); w.Variable == "child" || w.Variable == "istat.st_ino" {
		t.Errorf("worker's evidence is the identity %q (%s)", w.Variable, w.Evidence)
	}
	for _, typ := range []string{"__pid_t", "const uid_t", "volatile __dev_t", "pthread_t"} {
		if !identity(typ) {
			t.Errorf("%q is not an identity", typ)
		}
	}
	for _, typ := range []string{"__off_t", "size_t", "time_t", "long", "pid_t *"} {
		if identity(typ) {
			t.Errorf("%q is an identity", typ)
		}
	}
}

func TestSettledRunConstant(t *testing.T) {
	// One sample of 0 before the program set its option, of 96.
	n := append([]float64{0}, fill(128, 95)...)
	if nv, bv, ok := runConstant(vr(n, fill(273, 900))); !ok || nv != 128 || bv != 273 {
		t.Errorf("set after the first sample: %g %g %v, want 128 273 true", nv, bv, ok)
	}
	// Set after a tenth of the run: not one value for the run.
	late := append(fill(0, 10), fill(128, 90)...)
	if _, _, ok := runConstant(vr(late, fill(273, 900))); ok {
		t.Error("a value set after a tenth of the run is run-constant")
	}
	// A value that changes back is not settled, wherever the change.
	back := append(append(fill(128, 50), 7), fill(128, 49)...)
	if _, _, ok := runConstant(vr(back, fill(273, 900))); ok {
		t.Error("a value that changes in the middle of the run is run-constant")
	}
	// Two buggy runs pooled: each may start with its own prefix, both
	// must end on the same value.
	v := vr(fill(64, 100), append(append([]float64{0}, fill(512, 99)...), append([]float64{0}, fill(512, 99)...)...))
	v.buggy.starts = []int{0, 100}
	if _, bv, ok := runConstant(v); !ok || bv != 512 {
		t.Errorf("two buggy runs with a prefix each: %g %v", bv, ok)
	}
	v = vr(fill(64, 100), append(fill(512, 100), fill(511, 100)...))
	v.buggy.starts = []int{0, 100}
	if _, _, ok := runConstant(v); ok {
		t.Error("two buggy runs ending on other values are run-constant")
	}
}

func TestClockWindow(t *testing.T) {
	const start, wall = 3_600e9, 1_790_000_000e9 - 3_600e9 // an hour after boot
	w := runClockWindow{start: start, wall: wall, hasWall: true}
	at := uint64(start + 2e9)
	cases := []struct {
		name string
		x    float64
		kind int // bit expected set; −1: none
	}{
		{"monotonic ms at start", 3_600_000, 1},
		{"monotonic ns now", float64(at), 3},
		{"wall s", 1_790_000_001, len(clockUnits)},
		{"wall µs", 1_790_000_001.5e6, len(clockUnits) + 2},
		{"a size", 67_108_864, -1},
		{"monotonic ms a minute before the run", 3_540_000, -1},
		{"zero", 0, -1},
	}
	for _, c := range cases {
		m := w.match(c.x, at)
		if c.kind < 0 && m != 0 || c.kind >= 0 && m&(1<<c.kind) == 0 {
			t.Errorf("%s: match %08b, want bit %d", c.name, m, c.kind)
		}
	}
	// A minute after boot, the monotonic clock in seconds or milliseconds
	// is a small number, as counts are: not taken for a clock.
	early := runClockWindow{start: 60e9}
	if m := early.match(61_000, uint64(65e9)); m != 0 {
		t.Errorf("a minute after boot, 61000 reads as a clock (%08b)", m)
	}
}

func TestClockReadingNotInput(t *testing.T) {
	fx := newFixture(t)
	const wall = 1_790_000_000e9
	mk := func(buggy bool) *profile.Profile {
		// Two runs half a minute apart, on a machine up for an hour.
		start := uint64(3_600e9)
		preset, size, work := int64(1), int64(4096), 200
		if buggy {
			start += 30e9
			preset, size, work = 9, 65536, 900
		}
		r := fx.createAt(t, "clock.rec", start, wall+int64(start))
		startMs := r.variable("start_ms", "#global", "uint64_t", "none", false)
		deadline := r.variable("deadline", "#global", "uint64_t", "cond", false)
		nowUs := r.variable("now_us", "#global", "uint64_t", "cond", false)
		pre := r.variable("preset", "#global", "uint32_t", "none", false)
		sz := r.variable("dict_size", "#global", "uint32_t", "none", false)
		for i := 0; i < work+300; i++ {
			ms, dl, p := int64(start/1e6+2), (wall+int64(start))/1e9+1, preset
			if i == 0 {
				// Before the program read the clock and its options.
				ms, dl, p = 0, 0, 6
			}
			vals := []val{{startMs, 0, ms}, {deadline, 0, dl}, {nowUs, 0, int64(r.now / 1e3)}, {pre, 0, p}, {sz, 0, size}}
			if i < work {
				r.tick(1, []string{"worker", "dispatch_2", "main"}, 0, vals...)
			} else {
				r.tick(1, []string{"dispatch_1", "main"}, 0, vals...)
			}
		}
		return r.done()
	}
	res := analyzeWith(t, DefaultOptions(), []*profile.Profile{mk(false)}, []*profile.Profile{mk(true)})
	var names []string
	for _, in := range res.Inputs {
		names = append(names, in.Name)
	}
	if !slices.Equal(names, []string{"dict_size", "preset"}) {
		t.Errorf("inputs that differ %v, want dict_size and preset", names)
	}
	if w := res.fn(t, "worker"); w.Variable == "now_us" || w.Variable == "deadline" {
		t.Errorf("worker's evidence is the clock reading %q (%s)", w.Variable, w.Evidence)
	}
	note := ""
	for _, n := range res.Notes {
		if strings.Contains(n, "clock") {
			note = n
		}
	}
	for _, name := range []string{"deadline", "now_us"} {
		if !strings.Contains(note, name) {
			t.Errorf("no note names the clock reading %s: %q", name, res.Notes)
		}
	}
}

// A loop that ran more iterations, whose own code did not do them and whose
// code reads an input that differs, ran to a bound it was given: its
// pattern is how it decides the call it makes in each iteration. A loop
// that reads no input that differs keeps the pattern of its variable.
func TestLoopRunToGivenBound(t *testing.T) {
	fx := newFixture(t)
	mk := func(buggy bool) *profile.Profile {
		r := fx.create(t, "bound.rec")
		no := r.variable("no", "dispatch_1", "long", "loop,cond", false)
		cfg := r.variable("cfg_pages", "#global", "long", "none", false)
		pages, work := int64(256), 10
		if buggy {
			pages, work = 1024, 900
		}
		g := lcg(7)
		for i := 0; i < 300; i++ {
			r.tick(1, []string{"dispatch_1", "main"}, 0, val{no, 0, g.intn(pages)}, val{cfg, 0, pages})
		}
		for i := 0; i < work; i++ {
			r.tick(1, []string{"worker", "dispatch_1", "main"}, 0, val{no, 1, g.intn(pages)}, val{cfg, 0, pages})
		}
		for i := 0; i < 600; i++ {
			r.tick(1, []string{"main"}, 0, val{cfg, 0, pages})
		}
		return r.done()
	}
	normal, buggy := mk(false), mk(true)
	d := fx.funcs["dispatch_1"]
	in := func(off uint64) bool { return off >= d.off && off < d.off+d.size }
	for _, tc := range []struct {
		reads, guarded, ordered bool
		want                    Pattern
		input                   string
	}{
		{true, false, false, MissingConstraint, "cfg_pages"},
		{true, true, false, MissingConstraint, "cfg_pages"},
		{true, true, true, WrongConstraint, "cfg_pages"},
		// Its extent not given by an input: the loop variable's own
		// pattern (a counter beyond its normal range: more iterations,
		// whatever its cond tag, the loop's own exit test).
		{false, false, false, Scalability, ""},
	} {
		res := analyzeHooked(t, normal, buggy, func(a *Analyzer) {
			a.SetReads(func(_ string, off uint64, global string) (bool, bool) {
				return tc.reads && global == "cfg_pages" && in(off), true
			})
			a.SetGuards(func(_ string, off uint64, callee string) (bool, bool, bool) {
				if in(off) && callee == "worker" {
					return tc.guarded, tc.ordered, true
				}
				return false, false, false
			})
		})
		if len(res.Inputs) != 1 || res.Inputs[0].Name != "cfg_pages" {
			t.Fatalf("inputs %+v, want cfg_pages", res.Inputs)
		}
		f := res.fn(t, "dispatch_1")
		if f.Evidence != EvidenceVariable || f.Variable != "no" || f.Rank != 1 {
			t.Fatalf("dispatch_1: evidence %s (%s), rank %d", f.Evidence, f.Variable, f.Rank)
		}
		if f.Pattern != tc.want || f.Input != tc.input {
			t.Errorf("reads %v guarded %v ordered %v: pattern %s, input %q; want %s, %q (why: %s)",
				tc.reads, tc.guarded, tc.ordered, f.Pattern, f.Input, tc.want, tc.input, f.Why)
		}
	}
}

// A function whose only evidence is its own time takes the pattern
// scalability when the schema lists variables of it that look as normally
// (its loops ran longer on what they always handle), and none when no
// variable of it could be sampled: not listed, or no debug information for
// its code (built without -g) — which the why line says.
func TestOwnTimeWithoutVariables(t *testing.T) {
	for _, c := range []struct {
		name            string
		debug, listed   bool
		pattern         Pattern
		unsampled, says string
	}{
		{"listed", true, true, Scalability, "", "→ scalability"},
		{"not listed", true, false, NoPattern, UnsampledNotListed, "the schema lists none of its variables: pattern unknown"},
		{"no debug information", false, false, NoPattern, UnsampledNoDebugInfo, "no debug information for its code (built without -g)"},
	} {
		mk := func(buggy bool) *profile.Profile {
			fx := newFixtureDebug(t, c.debug)
			r := fx.create(t, "own.rec")
			n := r.variable("n", "dispatch_1", "long", "none", false)
			var vals []val
			if c.listed {
				vals = append(vals, val{r.variable("k", "worker", "long", "none", false), 0, 3})
			}
			work := 100
			if buggy {
				work = 900
			}
			for i := 0; i < 300; i++ {
				r.tick(1, []string{"dispatch_1", "main"}, 0, val{n, 0, int64(i % 5)})
			}
			for i := 0; i < work; i++ {
				r.tick(1, []string{"worker", "dispatch_1", "main"}, 0, append(vals, val{n, 1, int64(i % 5)})...)
			}
			for i := 0; i < 600; i++ {
				r.tick(1, []string{"main"}, 0)
			}
			return r.done()
		}
		res := analyzeWith(t, DefaultOptions(), []*profile.Profile{mk(false)}, []*profile.Profile{mk(true)})
		w := res.fn(t, "worker")
		if w.Evidence != EvidenceOwnTime {
			t.Fatalf("%s: worker's evidence %s, want own-time: the setting is not the one tested", c.name, w.Evidence)
		}
		if w.Pattern != c.pattern || w.Unsampled != c.unsampled || !strings.Contains(w.Why, c.says) {
			t.Errorf("%s: worker pattern %s, unsampled %q, why %q; want %s, %q, saying %q", c.name, w.Pattern, w.Unsampled, w.Why, c.pattern, c.unsampled, c.says)
		}
	}
}

// A cond local whose buggy values lie beyond its normal range but take the
// branches its normal values took decided nothing differently: no
// evidence (docs/vprof.md, "Values that decide nothing new").
func TestSameBranches(t *testing.T) {
	// The code tests the variable for −1 (an error) and 0 (the end).
	errEnd := func(x int64) (uint64, bool) {
		var o uint64
		if x == -1 {
			o |= 1
		}
		if x == 0 {
			o |= 2
		}
		return o, true
	}
	below16 := func(x int64) (uint64, bool) {
		if x < 16 {
			return 1, true
		}
		return 0, true
	}
	var spread []float64
	for i := 0; i < 100; i++ {
		spread = append(spread, float64(i%50+1))
	}
	for _, tc := range []struct {
		name          string
		normal, buggy []float64
		branches      func(int64) (uint64, bool)
		known         bool
		want          varClass
	}{
		{"a length only tested for errors", fill(35, 100), fill(15911, 100), errEnd, true, classNormal},
		{"the same, spread", spread, fill(15911, 100), errEnd, true, classNormal},
		{"a value reaching the end test", fill(35, 100), fill(0, 100), errEnd, true, classAnomaly},
		{"a threshold crossed", fill(1065, 100), fill(0, 100), below16, true, classAnomaly},
		{"a comparison with another variable", fill(35, 100), fill(15911, 100), nil, false, classAnomaly},
		{"a mix of the usual values", spread, fill(25, 100), errEnd, true, classAnomaly},
	} {
		a, _ := New(DefaultOptions())
		a.SetBranches(func(function, variable, file string, line int) (func(int64) (uint64, bool), bool) {
			if function != "f" || variable != "x" {
				t.Errorf("%s: asked for %s:%s", tc.name, function, variable)
			}
			return tc.branches, tc.known
		})
		v := vr(tc.normal, tc.buggy)
		v.src.Tags, v.src.Function, v.src.Name = "cond", "f", "x"
		if got, _ := a.classify(v, a.opt.discountVar(v, 1)); got != tc.want {
			t.Errorf("%s: class %d, want %d", tc.name, got, tc.want)
		}
	}
}

// analyzeHooks is analyzeWith with the machine code's answers given by
// set (the hooks the CLI fills from schema.Code).
func analyzeHooks(t testing.TB, set func(*Analyzer), normal, buggy []*profile.Profile) *Result {
	t.Helper()
	a, err := New(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	set(a)
	for _, p := range normal {
		if err := a.AddNormal(p, Run{Path: "normal"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range buggy {
		if err := a.AddBuggy(p, Run{Path: "buggy"}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := a.Result()
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Work that two callers ask for alike (dispatch_2, entered from
// dispatch_1 and from main, each carrying half of its growth), whose
// only worker does the same work on every call, grew because it was
// asked for more: dispatch_1, whose calls of it took 75% of its time
// instead of 25%, answers for it and ranks above the work. When the
// worker's code may do more per call (a loop, or a loop variable beyond
// its normal range), or only one caller asks for it, the work keeps its
// place (docs/vprof.md, "Work several callers ask for").
func TestWorkSeveralCallersAskFor(t *testing.T) {
	fx := newFixture(t)
	mk := func(buggy, twoCallers, beyond, mix bool) *profile.Profile {
		r := fx.create(t, "asks.rec")
		n := r.variable("n", "dispatch_1", "long", "none", false)
		// nv is dispatch_1's n: its usual values in another mix (0 to 4
		// normally, mostly 0 and 1 buggy) or the same.
		nv := func(i int) int64 {
			if buggy && mix {
				return int64(i % 5 / 3)
			}
			return int64(i % 5)
		}
		k := r.variable("k", "worker", "long", "loop", false)
		work := 100
		if buggy {
			work = 900
		}
		kv := func(i int) int64 {
			if buggy && beyond {
				return int64(100 + i%10)
			}
			return int64(i % 10)
		}
		for i := 0; i < 300; i++ {
			r.tick(1, []string{"dispatch_1", "main"}, 0, val{n, 0, nv(i)})
		}
		for i := 0; i < work; i++ {
			r.tick(1, []string{"worker", "dispatch_2", "dispatch_1", "main"}, 0, val{k, 0, kv(i)}, val{n, 2, nv(i)})
			if twoCallers {
				r.tick(1, []string{"worker", "dispatch_2", "main"}, 0, val{k, 0, kv(i)})
			}
		}
		for i := 0; i < 600; i++ {
			r.tick(1, []string{"main"}, 0)
		}
		return r.done()
	}
	w := fx.funcs["worker"]
	shapes := func(loops bool) func(*Analyzer) {
		return func(a *Analyzer) {
			a.SetShapes(func(_ string, off uint64) (bool, bool, bool) {
				if off >= w.off && off < w.off+w.size {
					return loops, false, true
				}
				return true, true, true
			})
		}
	}
	for _, c := range []struct {
		name                           string
		twoCallers, beyond, loops, mix bool
		asks                           bool
	}{
		{"straight worker", true, false, false, false, true},
		{"loop in range", true, false, true, false, true},
		{"loop beyond its range", true, true, true, false, false},
		{"one caller", false, false, false, false, false},
		// A caller whose only evidence is its usual values in another
		// mix asks as one without evidence does.
		{"caller's values in another mix", true, false, false, true, true},
		{"one caller, its values in another mix", false, false, false, true, false},
	} {
		res := analyzeHooks(t, shapes(c.loops), []*profile.Profile{mk(false, c.twoCallers, c.beyond, c.mix)}, []*profile.Profile{mk(true, c.twoCallers, c.beyond, c.mix)})
		d1, d2, wk := res.fn(t, "dispatch_1"), res.fn(t, "dispatch_2"), res.fn(t, "worker")
		if c.mix {
			if !mixOnly(&d1) {
				t.Fatalf("%s: dispatch_1 evidence %s %+v, want only its usual values in another mix: the setting is not the one tested", c.name, d1.Evidence, d1.Var)
			}
			if !c.asks {
				if d1.Asks != nil || d1.Calls != nil || d1.Rank < d2.Rank {
					t.Errorf("%s: dispatch_1 rank %d asks %+v calls %+v, above dispatch_2 (rank %d)", c.name, d1.Rank, d1.Asks, d1.Calls, d2.Rank)
				}
				continue
			}
		} else if d1.Calls == nil || d1.Calls.Callee != "dispatch_2" {
			t.Fatalf("%s: dispatch_1 calls %+v, want dispatch_2: the setting is not the one tested", c.name, d1.Calls)
		}
		if !c.asks {
			if d1.Asks != nil || d1.Rank < d2.Rank {
				t.Errorf("%s: dispatch_1 rank %d asks %+v, above dispatch_2 (rank %d)", c.name, d1.Rank, d1.Asks, d2.Rank)
			}
			continue
		}
		if d1.Asks == nil || d1.Asks.Callee != "dispatch_2" || d1.Asks.Callers != 2 || d1.Asks.Worker != "worker" ||
			d1.Calls == nil || d1.Calls.Callee != "dispatch_2" {
			t.Errorf("%s: dispatch_1 asks %+v calls %+v, want dispatch_2 of 2 callers, worker", c.name, d1.Asks, d1.Calls)
		}
		if d1.Rank != 1 || d2.Rank < d1.Rank || wk.Rank < d1.Rank || d1.Pattern != MissingConstraint ||
			!strings.Contains(d1.Why, "asks for dispatch_2, which 2 callers ask for alike") {
			t.Errorf("%s: dispatch_1 rank %d pattern %s why %q; dispatch_2 %d, worker %d", c.name, d1.Rank, d1.Pattern, d1.Why, d2.Rank, wk.Rank)
		}
	}
}

// A function whose growth went into calls of itself that no normal run
// made takes its pattern from how its code decides that call; a
// recursion the normal runs made too says nothing of the kind (docs/vprof.md,
// "A recursion only the buggy runs made").
func TestNewRecursion(t *testing.T) {
	fx := newFixture(t)
	mk := func(buggy, normalRecurses bool) *profile.Profile {
		r := fx.create(t, "recur.rec")
		k := r.variable("k", "worker", "long", "loop", false)
		work := 200
		if buggy {
			work = 900
		}
		for i := 0; i < work; i++ {
			stack := []string{"worker", "dispatch_1", "main"}
			if (buggy || normalRecurses) && i%2 == 0 {
				stack = []string{"worker", "worker", "worker", "dispatch_1", "main"}
			}
			r.tick(1, stack, 0, val{k, 0, int64(i % 10)})
		}
		for i := 0; i < 600; i++ {
			r.tick(1, []string{"main"}, 0)
		}
		return r.done()
	}
	w := fx.funcs["worker"]
	guards := func(ordered bool) func(*Analyzer) {
		return func(a *Analyzer) {
			a.SetGuards(guardIn(w, "worker", true, ordered, true))
		}
	}
	for _, c := range []struct {
		name                    string
		normalRecurses, ordered bool
		want                    Pattern
		recursion               bool
	}{
		{"equality decides", false, false, MissingConstraint, true},
		{"threshold decides", false, true, WrongConstraint, true},
		{"normal runs recurse", true, true, Scalability, false},
	} {
		res := analyzeHooks(t, guards(c.ordered), []*profile.Profile{mk(false, c.normalRecurses)}, []*profile.Profile{mk(true, c.normalRecurses)})
		wk := res.fn(t, "worker")
		if wk.Evidence != EvidenceOwnTime {
			t.Fatalf("%s: worker's evidence %s, want own-time: the setting is not the one tested", c.name, wk.Evidence)
		}
		if wk.NewRecursion != c.recursion || wk.Pattern != c.want ||
			c.recursion && !strings.Contains(wk.Why, "calls itself, which it did in no normal run") {
			t.Errorf("%s: worker new recursion %v pattern %s why %q, want %v, %s", c.name, wk.NewRecursion, wk.Pattern, wk.Why, c.recursion, c.want)
		}
	}
}

// A loop whose variable lasts longer in the buggy runs spends the growth
// of what it calls in those iterations, and its callee ranks below it;
// not when its own growth is less than half of the callee's: an event
// loop, already near the whole run, cannot have grown by it
// (docs/vprof.md, "A lingering loop takes its callees' growth").
func TestLingeringLoopTakesGrowth(t *testing.T) {
	fx := newFixture(t)
	mk := func(buggy, eventLoop bool) *profile.Profile {
		r := fx.create(t, "linger.rec")
		i := r.variable("i", "dispatch_1", "long", "loop", false)
		own, work, idle := 300, 100, 600
		if eventLoop {
			own, work, idle = 900, 100, 20
		}
		if buggy {
			work = 900
			if eventLoop {
				work, idle = 1500, 0
			}
		}
		// Normally i steps at every sample; in the buggy runs each value
		// lasts ten samples.
		k := 0
		iv := func() int64 {
			k++
			if buggy {
				return int64((k / 10) % 50)
			}
			return int64(k % 50)
		}
		for n := 0; n < own; n++ {
			r.tick(1, []string{"dispatch_1", "main"}, 0, val{i, 0, iv()})
		}
		for n := 0; n < work; n++ {
			r.tick(1, []string{"worker", "dispatch_1", "main"}, 0, val{i, 1, iv()})
		}
		for n := 0; n < idle; n++ {
			r.tick(1, []string{"main"}, 0)
		}
		return r.done()
	}
	for _, eventLoop := range []bool{false, true} {
		res := analyzeWith(t, DefaultOptions(), []*profile.Profile{mk(false, eventLoop)}, []*profile.Profile{mk(true, eventLoop)})
		d, w := res.fn(t, "dispatch_1"), res.fn(t, "worker")
		if d.Var == nil || d.Var.Dimension != DimDuration || d.Evidence != EvidenceVariable || !d.Share.Grew() {
			t.Fatalf("event loop %v: dispatch_1 evidence %s, variable %+v, share %+v: the setting is not the one tested", eventLoop, d.Evidence, d.Var, d.Share)
		}
		if below := w.Rank > d.Rank; below == eventLoop {
			t.Errorf("event loop %v: worker rank %d, dispatch_1 rank %d (growth %.3f against %.3f)", eventLoop, w.Rank, d.Rank, d.Share.Change, w.Share.Change)
		}
	}
}

// Rule 1 of the patterns reads a condition's values: when its steps set
// its discount, values beyond their normal range in a function whose own
// code did the work still say scalability (libxml2-schema-unique's i,
// whose steps differed more in two pairs of three); without them the
// steps alone do not.
func TestConditionValuesBeyondWhateverDimension(t *testing.T) {
	a, err := New(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, beyond := range []bool{true, false} {
		fr := &FunctionResult{
			Share:     share(130, 1000, 900, 1000),
			SelfShare: share(70, 1000, 310, 1000),
			Evidence:  EvidenceVariable,
			Var: &VariableResult{Name: "i", Tags: "cond", Dimension: DimDelta, Anomalous: true, valuesBeyond: beyond,
				Anomaly: &Anomaly{Dimension: DimDelta, HasNormal: true, NormalMin: -4, NormalMax: 4, NormalMedian: 0, BuggyMedian: 4}},
		}
		if !ownWork(fr) {
			t.Fatalf("own work: self %+v of %+v", fr.SelfShare, fr.Share)
		}
		if p := a.pattern(fr); (p == Scalability) != beyond {
			t.Errorf("values beyond %v: pattern %s", beyond, p)
		}
	}
}

// A function that holds nearly all of its thread in both kinds of run
// cannot show its growth as a share: three times as long in the buggy
// run, its share moves from 98% to 99%.
// Its time per run says how it grew, and with a variable of its own
// beyond its normal range it ranks first (docs/vprof.md, "A share that
// cannot grow").
func TestSaturatedShare(t *testing.T) {
	fx := newFixture(t)
	stuck := true
	mk := func(buggy bool) *profile.Profile {
		r := fx.create(t, "saturated.rec")
		found := r.variable("found", "dispatch_1", "int", "loop,cond", false)
		// Its loop's time is in what it calls. Its own code grew from
		// 0.2% to 1% of the samples, a third of its share's growth
		// (97% to 99.7%), but by time per run under a fiftieth of its
		// 3-fold growth: not a material part (a twentieth) of what it did.
		own, work, rest := 2, 968, 30
		if buggy {
			own, work, rest = 30, 2960, 10
		}
		k := 0
		fv := func() int64 {
			k++
			if buggy && stuck {
				return 10
			}
			if buggy {
				return int64(10 + k%7)
			}
			return int64(k % 7)
		}
		for n := 0; n < own; n++ {
			r.tick(2, []string{"dispatch_1", "dispatch_2"}, 0, val{found, 0, fv()})
		}
		for n := 0; n < work; n++ {
			r.tick(2, []string{"worker", "dispatch_1", "dispatch_2"}, 0, val{found, 1, fv()})
		}
		for n := 0; n < rest; n++ {
			r.tick(2, []string{"dispatch_2"}, 0)
		}
		return r.done()
	}
	res := analyzeWith(t, DefaultOptions(), []*profile.Profile{mk(false)}, []*profile.Profile{mk(true)})
	d, w, root := res.fn(t, "dispatch_1"), res.fn(t, "worker"), res.fn(t, "dispatch_2")
	if !d.SelfShare.Grew() || ownWork(&d) {
		t.Errorf("dispatch_1: own code %+v grew by a material part of its growth by time", d.SelfShare)
	}
	if d.Evidence != EvidenceVariable || d.Share.Time < 2.9 || d.Share.Time > 3.2 || d.Rank != 1 {
		t.Errorf("dispatch_1: evidence %s share %+v rank %d, want its time (3×) and rank 1", d.Evidence, d.Share, d.Rank)
	}
	if !strings.Contains(d.Why, "× its normal time per run (a share that cannot grow)") {
		t.Errorf("dispatch_1 why %q", d.Why)
	}
	// Its counter stopped beyond its normal range (its values last
	// longer) while it kept calling worker: the loop went on after its
	// count was reached, missing-constraint. A counter that keeps
	// stepping beyond its range is not that.
	if d.Pattern != MissingConstraint {
		t.Errorf("dispatch_1: pattern %s, want missing-constraint", d.Pattern)
	}
	stuck = false
	if p := analyzeWith(t, DefaultOptions(), []*profile.Profile{mk(false)}, []*profile.Profile{mk(true)}).fn(t, "dispatch_1").Pattern; p == MissingConstraint {
		t.Errorf("a counter stepping beyond its range: pattern %s", p)
	}
	stuck = true
	if w.Rank < 2 {
		t.Errorf("worker: share %+v rank %d, want a rank below dispatch_1", w.Share, w.Rank)
	}
	// The thread's outermost function holds its whole time: never measured
	// by time.
	if root.Share.Time != 0 || root.Rank < w.Rank {
		t.Errorf("dispatch_2 (the thread's start): share %+v rank %d", root.Share, root.Rank)
	}
}

// Two saturated shares, one under the other, are both read by time: the
// caller's growth by time holds the callee's, so a callee with evidence of
// its own that carries at least half of it keeps the caller below it, as
// an unsaturated callee's share does (a bytecode interpreter whose own
// code shrank, above the matcher whose time grew 4-fold, and its other
// work).
func TestSaturatedCalleeByTime(t *testing.T) {
	fx := newFixture(t)
	mk := func(buggy bool) *profile.Profile {
		r := fx.create(t, "satcallee.rec")
		n := r.variable("len", "dispatch_1", "int", "cond,args", false)
		own, work, other, rest, length := 60, 700, 20, 220, int64(29)
		if buggy {
			own, work, other, rest, length = 30, 2800, 200, 30, 44
		}
		for k := 0; k < other; k++ {
			r.tick(2, []string{"dispatch_2", "dispatch_1", "main"}, 0, val{n, 1, length})
		}
		for k := 0; k < own; k++ {
			r.tick(2, []string{"dispatch_1", "main"}, 0, val{n, 0, length})
		}
		for k := 0; k < work; k++ {
			r.tick(2, []string{"worker", "dispatch_1", "main"}, 0, val{n, 1, length})
		}
		for k := 0; k < rest; k++ {
			r.tick(2, []string{"main"}, 0)
		}
		return r.done()
	}
	res := analyzeWith(t, DefaultOptions(), []*profile.Profile{mk(false)}, []*profile.Profile{mk(true)})
	d, w := res.fn(t, "dispatch_1"), res.fn(t, "worker")
	if d.Share.Time == 0 || d.Evidence != EvidenceVariable || w.Share.Time == 0 {
		t.Fatalf("dispatch_1 share %+v evidence %s, worker share %+v: not the setting tested", d.Share, d.Evidence, w.Share)
	}
	if w.Rank != 1 || d.Rank < 2 {
		t.Errorf("worker share %+v rank %d, dispatch_1 share %+v rank %d; want worker 1st", w.Share, w.Rank, d.Share, d.Rank)
	}
}

// A saturated share that fell significantly showed its change: the
// function is not read by time, and its own code, which kept pace with a
// run three times as long less than the rest did, is no evidence.
func TestFallenShareNotByTime(t *testing.T) {
	fx := newFixture(t)
	mk := func(buggy bool) *profile.Profile {
		r := fx.create(t, "fallen.rec")
		i0 := r.variable("i", "main", "long", "loop|cond", false)
		worker, grown, rest := 600, 300, 100
		if buggy {
			worker, grown, rest = 1350, 1500, 150
		}
		for k := 0; k < worker; k++ {
			r.tick(1, []string{"worker", "main"}, 0)
		}
		for k := 0; k < grown; k++ {
			r.tick(1, []string{"dispatch_1", "main"}, 0)
		}
		for k := 0; k < rest; k++ {
			r.tick(1, []string{"main"}, 0, val{i0, 0, int64(k % 7)})
		}
		return r.done()
	}
	res := analyzeWith(t, DefaultOptions(), []*profile.Profile{mk(false)}, []*profile.Profile{mk(true)})
	w, d := res.fn(t, "worker"), res.fn(t, "dispatch_1")
	if w.Share.Time != 0 || w.Evidence == EvidenceOwnTime || d.Rank != 1 || w.Rank < d.Rank {
		t.Errorf("worker (60%% → 45%%, 2.25× its time): share %+v evidence %s rank %d; dispatch_1 rank %d", w.Share, w.Evidence, w.Rank, d.Rank)
	}
}

// A function that only encloses the work that grew, whose call of it an
// ordered comparison of its own guards and whose code reads a
// configuration global (one value in every run of both kinds), decided
// on that threshold: it answers for the growth above the work, with the
// wrong-constraint pattern. Not when the guard tests equality, when its
// code reads no configuration global, nor when the threshold's block does
// not read it, nor when the work lies behind a call through a pointer
// (docs/vprof.md, "A threshold on the configuration").
func TestThresholdOnConfiguration(t *testing.T) {
	fx := newFixture(t)
	mk := func(buggy bool) *profile.Profile {
		r := fx.create(t, "threshold.rec")
		cfg := r.variable("cfg_min_keys", "#global", "long", "cond", false)
		work := 200
		if buggy {
			work = 900
		}
		for i := 0; i < 600; i++ {
			r.tick(1, []string{"main"}, 0, val{cfg, 0, 4096})
		}
		for i := 0; i < work; i++ {
			r.tick(1, []string{"worker", "dispatch_1", "main"}, 0, val{cfg, 0, 4096})
		}
		for i := 0; i < 20; i++ {
			r.tick(1, []string{"dispatch_1", "main"}, 0, val{cfg, 0, 4096})
		}
		return r.done()
	}
	normal, buggy := mk(false), mk(true)
	d1 := fx.funcs["dispatch_1"]
	for _, tc := range []struct {
		ordered, reads, compares, pointer bool
	}{{true, true, true, false}, {false, true, true, false}, {true, false, false, false}, {true, true, false, false}, {true, true, true, true}} {
		res := analyzeHooked(t, normal, buggy, func(a *Analyzer) {
			thresholdHooks(d1, tc.ordered, tc.reads, tc.compares)(a)
			a.SetCalls(func(_ string, off uint64, callee string) (bool, bool) {
				if off >= d1.off && off < d1.off+d1.size && callee == "worker" {
					return !tc.pointer, true
				}
				return false, false
			})
		})
		d, w := res.fn(t, "dispatch_1"), res.fn(t, "worker")
		if !tc.ordered || !tc.reads || !tc.compares || tc.pointer {
			if d.Evidence == EvidenceThreshold || d.Rank < w.Rank {
				t.Errorf("ordered %v reads %v compares %v through a pointer %v: dispatch_1 evidence %s rank %d above worker %d",
					tc.ordered, tc.reads, tc.compares, tc.pointer, d.Evidence, d.Rank, w.Rank)
			}
			continue
		}
		if d.Evidence != EvidenceThreshold || d.Config != "cfg_min_keys" || d.Pattern != WrongConstraint || d.Rank != 1 || w.Rank != 2 {
			t.Errorf("dispatch_1: evidence %s config %q pattern %s rank %d; worker rank %d", d.Evidence, d.Config, d.Pattern, d.Rank, w.Rank)
		}
		if !strings.Contains(d.Why, "a threshold of its own decides its calls of the work that grew, and its code reads cfg_min_keys") {
			t.Errorf("dispatch_1 why %q", d.Why)
		}
	}
}

// A threshold's own code is cheap: where its share is saturated and read
// by time, own code that grew by an immaterial part of that growth does
// not keep it from deciding (bloom_wrong's sst_get, own code 0.1% → 0.3%
// of a share that held 94–97% of both runs).
func TestThresholdCheapOwnCode(t *testing.T) {
	fx := newFixture(t)
	mk := func(buggy bool) *profile.Profile {
		r := fx.create(t, "thresholdown.rec")
		cfg := r.variable("cfg_min_keys", "#global", "long", "cond", false)
		own, work := 2, 410
		if buggy {
			own, work = 30, 1610
		}
		for i := 0; i < 20; i++ {
			r.tick(1, []string{"main"}, 0, val{cfg, 0, 4096})
		}
		for i := 0; i < work; i++ {
			r.tick(1, []string{"worker", "dispatch_1", "main"}, 0, val{cfg, 0, 4096})
		}
		for i := 0; i < own; i++ {
			r.tick(1, []string{"dispatch_1", "main"}, 0, val{cfg, 0, 4096})
		}
		return r.done()
	}
	res := analyzeHooked(t, mk(false), mk(true), thresholdHooks(fx.funcs["dispatch_1"], true, true, true))
	d, w := res.fn(t, "dispatch_1"), res.fn(t, "worker")
	if !d.SelfShare.Grew() || d.Share.Time == 0 {
		t.Fatalf("dispatch_1: self share %+v, share %+v: not the saturated share with own growth tested", d.SelfShare, d.Share)
	}
	if d.Evidence != EvidenceThreshold || d.Rank != 1 || w.Rank != 2 {
		t.Errorf("dispatch_1: evidence %s rank %d (%s); worker rank %d", d.Evidence, d.Rank, d.Why, w.Rank)
	}
}

// A callback only the buggy runs called, whose own code did the work:
// no test of its caller decided the calls (it calls it through a
// pointer), so the check that would have skipped the work is its own,
// missing-constraint. Called directly, it says nothing of the pattern.
func TestNewCallbackMissingConstraint(t *testing.T) {
	fx := newFixture(t)
	mk := func(buggy bool) *profile.Profile {
		r := fx.create(t, "callback.rec")
		x := r.variable("x", "dispatch_1", "long", "cond", false)
		for i := 0; i < 300; i++ {
			r.tick(1, []string{"dispatch_1", "main"}, 0, val{x, 0, int64(i % 5)})
		}
		if buggy {
			for i := 0; i < 400; i++ {
				r.tick(1, []string{"worker", "dispatch_1", "main"}, 0)
			}
		}
		return r.done()
	}
	d1 := fx.funcs["dispatch_1"]
	for _, pointer := range []bool{true, false} {
		res := analyzeHooked(t, mk(false), mk(true), func(a *Analyzer) {
			a.SetCalls(func(_ string, off uint64, callee string) (bool, bool) {
				if off >= d1.off && off < d1.off+d1.size && callee == "worker" {
					return !pointer, true
				}
				return false, false
			})
		})
		w := res.fn(t, "worker")
		want := NoPattern
		if pointer {
			want = MissingConstraint
		}
		if w.Evidence != EvidenceNewPath || w.Pattern != want {
			t.Errorf("through a pointer %v: worker evidence %s pattern %s; want new-path, %s", pointer, w.Evidence, w.Pattern, want)
		}
	}
}

// thresholdHooks has function d1's call of worker guarded by a test
// (ordered: a threshold), its code read cfg_min_keys (reads) and the
// guard's block compare with it (compares).
func thresholdHooks(d1 elfFunc, ordered, reads, compares bool) func(*Analyzer) {
	return func(a *Analyzer) {
		in := func(off uint64) bool { return off >= d1.off && off < d1.off+d1.size }
		a.SetGuards(func(_ string, off uint64, callee string) (bool, bool, bool) {
			if in(off) && callee == "worker" {
				return true, ordered, true
			}
			return false, false, false
		})
		a.SetReads(func(_ string, off uint64, global string) (bool, bool) {
			return reads && in(off) && global == "cfg_min_keys", true
		})
		a.SetThresholds(func(_ string, off uint64, callee, global string) (bool, bool) {
			return compares && in(off) && callee == "worker" && global == "cfg_min_keys", true
		})
	}
}

// A thread's outermost function encloses everything its thread does: with
// a variable of its own that behaves differently, but no material growth
// of its own code, it ranks below every function under it that has a
// score (docs/vprof.md, "Frames that only enclose").
func TestEnclosersRankLast(t *testing.T) {
	fx := newFixture(t)
	mk := func(buggy bool) *profile.Profile {
		r := fx.create(t, "enclosers.rec")
		x := r.variable("x", "main", "long", "cond", false)
		work, own2, work2 := 100, 300, 300
		if buggy {
			work, own2, work2 = 900, 540, 60
		}
		xv := func(i int) int64 {
			if buggy {
				return 100
			}
			return int64(i % 6)
		}
		for i := 0; i < 300; i++ {
			r.tick(1, []string{"main"}, 0, val{x, 0, xv(i)})
		}
		for i := 0; i < work; i++ {
			r.tick(1, []string{"worker", "dispatch_1", "main"}, 0, val{x, 2, xv(i)})
		}
		for i := 0; i < own2; i++ {
			r.tick(2, []string{"dispatch_2"}, 0)
		}
		for i := 0; i < work2; i++ {
			r.tick(2, []string{"worker", "dispatch_2"}, 0)
		}
		return r.done()
	}
	res := analyzeWith(t, DefaultOptions(), []*profile.Profile{mk(false)}, []*profile.Profile{mk(true)})
	m, w, d := res.fn(t, "main"), res.fn(t, "worker"), res.fn(t, "dispatch_1")
	if m.Evidence != EvidenceVariable || !m.Share.Grew() || w.Score <= 0 || d.Score <= 0 {
		t.Fatalf("main: evidence %s share %+v; worker score %g, dispatch_1 score %g: not the setting tested", m.Evidence, m.Share, w.Score, d.Score)
	}
	if m.Rank < w.Rank || m.Rank < d.Rank {
		t.Errorf("main (the thread's outermost function) ranks %d, above worker %d or dispatch_1 %d", m.Rank, w.Rank, d.Rank)
	}
}

// A share measured by time does not lift a function above a callee whose
// share is not saturated and grew: the callee's share shows the growth,
// and the caller's time grew by enclosing it (docs/vprof.md, "A share
// that cannot grow").
func TestSaturatedBelowGrownCallee(t *testing.T) {
	fx := newFixture(t)
	mk := func(buggy bool) *profile.Profile {
		r := fx.create(t, "saturated2.rec")
		key := r.variable("key", "dispatch_1", "long", "cond", false)
		work := 200
		if buggy {
			work = 1500
		}
		kv := func(i int) int64 {
			if buggy {
				return int64(100 + i%7)
			}
			return int64(i % 7)
		}
		for i := 0; i < 300; i++ {
			r.tick(2, []string{"dispatch_1", "dispatch_2"}, 0, val{key, 0, kv(i)})
		}
		for i := 0; i < work; i++ {
			r.tick(2, []string{"worker", "dispatch_1", "dispatch_2"}, 0, val{key, 1, kv(i)})
		}
		for i := 0; i < 10; i++ {
			r.tick(2, []string{"dispatch_2"}, 0)
		}
		return r.done()
	}
	res := analyzeWith(t, DefaultOptions(), []*profile.Profile{mk(false)}, []*profile.Profile{mk(true)})
	d, w := res.fn(t, "dispatch_1"), res.fn(t, "worker")
	if d.Share.Time == 0 || d.Share.Change <= w.Share.Change || w.Share.Time != 0 || !w.Share.Grew() {
		t.Fatalf("dispatch_1 share %+v, worker share %+v: not the setting tested", d.Share, w.Share)
	}
	if d.Rank < w.Rank {
		t.Errorf("dispatch_1 (saturated, measured by time) ranks %d above worker %d, whose share grew", d.Rank, w.Rank)
	}
}

// New work a caller decided: a callee whose own code did its growth and
// that fewer than SameWorkSamples normal samples hold ranks below the
// caller that ran normally and calls it on a test of its own; the
// caller's pattern is its guard's. Without such a test (or when the code
// cannot tell) the callee keeps the first place.
func TestNewWorkCallerDecides(t *testing.T) {
	fx := newFixture(t)
	mk := func(buggy bool, normalWork int) *profile.Profile {
		r := fx.create(t, "newwork.rec")
		i0 := r.variable("i", "main", "long", "loop|cond", false)
		work := normalWork
		if buggy {
			work = 900
		}
		for k := 0; k < work; k++ {
			r.tick(1, []string{"worker", "dispatch_1", "main"}, 0)
		}
		for k := 0; k < 300; k++ {
			r.tick(1, []string{"dispatch_1", "main"}, 0)
		}
		for k := 0; k < 600; k++ {
			r.tick(1, []string{"main"}, 0, val{i0, 0, int64(k % 7)})
		}
		return r.done()
	}
	d1 := fx.funcs["dispatch_1"]
	for _, tc := range []struct {
		normalWork              int
		guarded, ordered, known bool
		decides                 bool
		want                    Pattern
	}{
		{0, true, false, true, true, MissingConstraint},
		{0, true, true, true, true, WrongConstraint},
		{5, true, true, true, true, WrongConstraint},
		{0, false, false, true, false, NoPattern},
		{0, false, false, false, false, NoPattern},
		{40, true, true, true, false, NoPattern},
	} {
		normal, buggy := mk(false, tc.normalWork), mk(true, tc.normalWork)
		res := analyzeHooked(t, normal, buggy, func(a *Analyzer) {
			a.SetGuards(guardIn(d1, "worker", tc.guarded, tc.ordered, tc.known))
		})
		w, d := res.fn(t, "worker"), res.fn(t, "dispatch_1")
		name := fmt.Sprintf("normal work %d, guarded %v ordered %v known %v", tc.normalWork, tc.guarded, tc.ordered, tc.known)
		if !tc.decides {
			if d.CalledMore != nil && d.CalledMore.New {
				t.Errorf("%s: dispatch_1 called more %+v; want no new work", name, d.CalledMore)
			}
			if tc.normalWork == 0 && (w.Rank != 1 || d.CalledMore != nil) {
				t.Errorf("%s: worker rank %d, dispatch_1 rank %d called more %+v; want worker 1st", name, w.Rank, d.Rank, d.CalledMore)
			}
			continue
		}
		if d.Rank != 1 || w.Rank != 2 || d.CalledMore == nil || !d.CalledMore.New || d.CalledMore.Callee != "worker" ||
			d.Pattern != tc.want || d.Discount != 0 {
			t.Errorf("%s: dispatch_1 rank %d called more %+v pattern %s discount %g; worker rank %d; want dispatch_1 1st, %s",
				name, d.Rank, d.CalledMore, d.Pattern, d.Discount, w.Rank, tc.want)
		}
		if !strings.Contains(d.Why, "decides, on a test of its own, to call worker, a path to new work") {
			t.Errorf("%s: why: %q", name, d.Why)
		}
	}
}

// A test that chose another way: the caller's new path took the calls
// the normal runs made through another callee, which the buggy runs
// hardly made: wrong-constraint, on a test of equality or a flag too. A
// new path added beside the usual callee, which keeps its time per run
// (however small a part of the caller's it becomes), stays
// missing-constraint.
func TestNewWorkInstead(t *testing.T) {
	fx := newFixture(t)
	mk := func(buggy, keep bool) *profile.Profile {
		r := fx.create(t, "instead.rec")
		i0 := r.variable("i", "main", "long", "loop|cond", false)
		usual, added := 400, 900
		if keep {
			// The usual calls keep their time, a ninth of the
			// function's now: its part shrank, their time did not.
			added = 3000
		}
		if buggy {
			for k := 0; k < added; k++ {
				r.tick(1, []string{"worker", "dispatch_1", "main"}, 0)
			}
			if !keep {
				usual = 3
			}
		}
		for k := 0; k < usual; k++ {
			r.tick(1, []string{"dispatch_2", "dispatch_1", "main"}, 0)
		}
		for k := 0; k < 30; k++ {
			r.tick(1, []string{"dispatch_1", "main"}, 0)
		}
		for k := 0; k < 600; k++ {
			r.tick(1, []string{"main"}, 0, val{i0, 0, int64(k % 7)})
		}
		return r.done()
	}
	d1 := fx.funcs["dispatch_1"]
	for _, keep := range []bool{false, true} {
		res := analyzeHooked(t, mk(false, keep), mk(true, keep), func(a *Analyzer) {
			a.SetGuards(guardIn(d1, "worker", true, false, true)) // a test of equality
		})
		d := res.fn(t, "dispatch_1")
		if d.CalledMore == nil || !d.CalledMore.New || d.CalledMore.Callee != "worker" || d.Rank != 1 {
			t.Fatalf("kept %v: dispatch_1 rank %d called more %+v: not the setting tested", keep, d.Rank, d.CalledMore)
		}
		want, instead := WrongConstraint, "dispatch_2"
		if keep {
			want, instead = MissingConstraint, ""
		}
		if d.Pattern != want || d.CalledMore.Instead != instead {
			t.Errorf("kept %v: dispatch_1 pattern %s instead of %q; want %s, %q (%s)", keep, d.Pattern, d.CalledMore.Instead, want, instead, d.Why)
		}
		if !keep && !strings.Contains(d.Why, "instead of dispatch_2, which took most of its time normally") {
			t.Errorf("why: %q", d.Why)
		}
	}
}

// New work below a path only the buggy runs took: the first caller that
// ran normally, whose test decides the call of the path's entry, answers,
// and the entry and the work rank below it.
func TestNewWorkPathEntry(t *testing.T) {
	fx := newFixture(t)
	mk := func(buggy bool) *profile.Profile {
		r := fx.create(t, "newpath.rec")
		i0 := r.variable("i", "main", "long", "loop|cond", false)
		if buggy {
			for k := 0; k < 900; k++ {
				r.tick(1, []string{"worker", "dispatch_2", "dispatch_1", "main"}, 0)
			}
			for k := 0; k < 100; k++ {
				r.tick(1, []string{"dispatch_2", "dispatch_1", "main"}, 0)
			}
		}
		for k := 0; k < 300; k++ {
			r.tick(1, []string{"dispatch_1", "main"}, 0)
		}
		for k := 0; k < 600; k++ {
			r.tick(1, []string{"main"}, 0, val{i0, 0, int64(k % 7)})
		}
		return r.done()
	}
	normal, buggy := mk(false), mk(true)
	d1 := fx.funcs["dispatch_1"]
	res := analyzeHooked(t, normal, buggy, func(a *Analyzer) {
		a.SetGuards(guardIn(d1, "dispatch_2", true, true, true))
	})
	d, e, w := res.fn(t, "dispatch_1"), res.fn(t, "dispatch_2"), res.fn(t, "worker")
	if d.Rank != 1 || d.CalledMore == nil || !d.CalledMore.New || d.CalledMore.Callee != "dispatch_2" ||
		d.Pattern != WrongConstraint || e.Rank < 2 || w.Rank < 2 {
		t.Errorf("dispatch_1 rank %d called more %+v pattern %s; dispatch_2 rank %d, worker rank %d; want dispatch_1 1st deciding dispatch_2, wrong-constraint",
			d.Rank, d.CalledMore, d.Pattern, e.Rank, w.Rank)
	}
}

// New work under a caller that ran normally, but only with one value of a
// parameter: the buggy calls pass another, so its own caller decided the
// new work, and answers when its test decides the call. A few normal
// samples (fewer than SameWorkSamples) in the buggy mode are calls the
// normal runs hardly made, and the caller still answers; a parameter that
// varied normally, or that as many normal samples held in another value,
// is data passed on, and the caller of the new work answers as before.
func TestNewWorkCallerMode(t *testing.T) {
	fx := newFixture(t)
	// others: normal samples of dispatch_2 passing the buggy mode, 2; -1:
	// the mode varies over 0, 1, 2.
	mk := func(buggy bool, others int) *profile.Profile {
		r := fx.create(t, "newmode.rec")
		i0 := r.variable("i", "main", "long", "loop|cond", false)
		m := r.variable("mode", "dispatch_2", "int", "cond|args", false)
		mode := func(k int) int64 {
			switch {
			case buggy:
				return 2
			case others < 0:
				return int64(k % 3)
			case k < others:
				return 2
			}
			return 0
		}
		if buggy {
			for k := 0; k < 900; k++ {
				r.tick(1, []string{"worker", "dispatch_2", "dispatch_1", "main"}, 0, val{m, 1, mode(k)})
			}
		}
		n := 300
		if buggy {
			n = 100
		}
		for k := 0; k < n; k++ {
			r.tick(1, []string{"dispatch_2", "dispatch_1", "main"}, 0, val{m, 0, mode(k)})
		}
		for k := 0; k < 300; k++ {
			r.tick(1, []string{"dispatch_1", "main"}, 0)
		}
		for k := 0; k < 600; k++ {
			r.tick(1, []string{"main"}, 0, val{i0, 0, int64(k % 7)})
		}
		return r.done()
	}
	d1, d2 := fx.funcs["dispatch_1"], fx.funcs["dispatch_2"]
	in := func(off uint64, f elfFunc) bool { return off >= f.off && off < f.off+f.size }
	for _, tc := range []struct {
		params bool
		others int    // normal samples in the buggy mode; -1: the mode varies
		want   string // the function that answers for the new work
		normal string // what the why line says the normal calls passed
	}{
		{true, 0, "dispatch_1", "every normal call passed 0"},
		{false, 0, "dispatch_2", ""},
		{true, -1, "dispatch_2", ""},
		{true, SameWorkSamples - 1, "dispatch_1", fmt.Sprintf("the normal calls passed 0 in %d of 300 samples", 300-SameWorkSamples+1)},
		{true, SameWorkSamples, "dispatch_2", ""},
	} {
		normal, buggy := mk(false, tc.others), mk(true, tc.others)
		res := analyzeHooked(t, normal, buggy, func(a *Analyzer) {
			a.SetGuards(func(_ string, off uint64, callee string) (bool, bool, bool) {
				if in(off, d1) && callee == "dispatch_2" || in(off, d2) && callee == "worker" {
					return true, true, true
				}
				return false, false, false
			})
			if tc.params {
				a.SetParams(func(_ string, off uint64, name string) (bool, bool) {
					return in(off, d2) && name == "mode", true
				})
			}
		})
		name := fmt.Sprintf("params %v, normal samples in another mode %d", tc.params, tc.others)
		c, w := res.fn(t, tc.want), res.fn(t, "worker")
		if c.CalledMore == nil || !c.CalledMore.New || c.Discount != 0 || c.Rank >= w.Rank {
			t.Errorf("%s: %s rank %d called more %+v discount %g, worker rank %d; want %s answering for the new work above worker",
				name, tc.want, c.Rank, c.CalledMore, c.Discount, w.Rank, tc.want)
			continue
		}
		if tc.want != "dispatch_1" {
			if d := res.fn(t, "dispatch_1"); d.CalledMore != nil {
				t.Errorf("%s: dispatch_1 called more %+v; want none", name, d.CalledMore)
			}
			continue
		}
		d := res.fn(t, "dispatch_2")
		if c.Rank != 1 || d.Rank <= c.Rank || c.CalledMore.Callee != "dispatch_2" || c.CalledMore.Mode == nil ||
			c.CalledMore.Mode.Parameter != "mode" || c.CalledMore.Mode.Normal != 0 || c.CalledMore.Mode.Buggy != 2 ||
			c.CalledMore.Mode.Others != max(tc.others, 0) {
			t.Errorf("%s: dispatch_1 rank %d called more %+v mode %+v, dispatch_2 rank %d; want dispatch_1 1st calling dispatch_2 with mode 2",
				name, c.Rank, c.CalledMore, c.CalledMore.Mode, d.Rank)
		}
		if want := "to call dispatch_2 with mode 2 (" + tc.normal + ")"; !strings.Contains(c.Why, want) {
			t.Errorf("%s: why: %q, want it to say %q", name, c.Why, want)
		}
	}
}

// A caller whose code calls a function exactly once on every call of its
// own (outside its loops, on no test) cannot have called it more: the
// question who did passes up to its caller, which answers for the growth
// and ranks above both (docs/vprof.md, "Called once per call").
func TestOncePerCallPassesUp(t *testing.T) {
	fx := newFixture(t)
	normal, buggy := onceChain(t, fx, false), onceChain(t, fx, true)
	for _, c := range []struct {
		name       string
		wrapInLoop bool // dispatch_2 calls worker in a loop
		answers    string
	}{
		{"once per call", false, "dispatch_1"},
		{"in a loop", true, "dispatch_2"},
	} {
		res := analyzeHooked(t, normal, buggy, func(a *Analyzer) {
			a.SetLoopCalls(func(_ string, off uint64, _ string) (bool, bool) {
				return fx.in("dispatch_1", off) || c.wrapInLoop && fx.in("dispatch_2", off), true
			})
			a.SetGuards(func(string, uint64, string) (bool, bool, bool) { return false, false, true })
		})
		d1, d2, w := res.fn(t, "dispatch_1"), res.fn(t, "dispatch_2"), res.fn(t, "worker")
		if w.Evidence != EvidenceOwnTime && w.Evidence != EvidenceVariable {
			t.Fatalf("%s: worker evidence %s: the setting is not the one tested", c.name, w.Evidence)
		}
		x, other := d1, d2
		want := CalledMore{Callee: "dispatch_2", Work: "worker", Variable: "k"}
		if c.answers == "dispatch_2" {
			x, other = d2, d1
			want = CalledMore{Callee: "worker", Variable: "k"}
		}
		if x.CalledMore == nil || *x.CalledMore != want || x.Rank != 1 || w.Rank < x.Rank || other.CalledMore != nil {
			t.Errorf("%s: %s rank %d called more %+v (want %+v); %s rank %d called more %+v; worker rank %d",
				c.name, x.Name, x.Rank, x.CalledMore, want, other.Name, other.Rank, other.CalledMore, w.Rank)
		}
		if c.answers == "dispatch_1" && (d2.Rank < d1.Rank || !strings.Contains(d1.Why, "called dispatch_2 more often, which calls worker exactly once per call")) {
			t.Errorf("%s: dispatch_2 rank %d above dispatch_1 %d, or why %q", c.name, d2.Rank, d1.Rank, d1.Why)
		}
	}
}

// onceChain records main → dispatch_1 → dispatch_2 → worker, whose loop
// counter k stays in its range while the buggy run calls it nine times as
// often (900 samples in worker against 100), beside 300 in dispatch_1's
// own code and 600 in main's.
func onceChain(t *testing.T, fx *fixture, buggy bool) *profile.Profile {
	r := fx.create(t, "once.rec")
	k := r.variable("k", "worker", "long", "loop", false)
	work := 100
	if buggy {
		work = 900
	}
	for i := 0; i < 300; i++ {
		r.tick(1, []string{"dispatch_1", "main"}, 0)
	}
	for i := 0; i < work; i++ {
		r.tick(1, []string{"worker", "dispatch_2", "dispatch_1", "main"}, 0, val{k, 0, int64(i % 10)})
	}
	for i := 0; i < 600; i++ {
		r.tick(1, []string{"main"}, 0)
	}
	return r.done()
}

// A caller that calls the work once per call of its own but calls itself
// made more calls of itself on its own (a recursion that revisits what it
// walked): it answers for the calls, not the caller above it, whose loop
// called it as often as normally.
func TestOncePerCallRecursiveCaller(t *testing.T) {
	fx := newFixture(t)
	mk := func(buggy bool) *profile.Profile {
		r := fx.create(t, "recursive.rec")
		k := r.variable("k", "worker", "long", "loop", false)
		work, depth := 100, 1
		if buggy {
			work, depth = 900, 4
		}
		for i := 0; i < 300; i++ {
			r.tick(1, []string{"dispatch_1", "main"}, 0)
		}
		for i := 0; i < work; i++ {
			st := []string{"worker"}
			for d := 0; d <= i%depth; d++ {
				st = append(st, "dispatch_2")
			}
			st = append(st, "dispatch_1", "main")
			r.tick(1, st, 0, val{k, 0, int64(i % 10)})
		}
		for i := 0; i < 600; i++ {
			r.tick(1, []string{"main"}, 0)
		}
		return r.done()
	}
	res := analyzeHooked(t, mk(false), mk(true), func(a *Analyzer) {
		a.SetLoopCalls(func(_ string, off uint64, _ string) (bool, bool) { return fx.in("dispatch_1", off), true })
		a.SetGuards(func(string, uint64, string) (bool, bool, bool) { return false, false, true })
	})
	d1, d2, w := res.fn(t, "dispatch_1"), res.fn(t, "dispatch_2"), res.fn(t, "worker")
	if w.Evidence != EvidenceOwnTime && w.Evidence != EvidenceVariable {
		t.Fatalf("worker evidence %s: the setting is not the one tested", w.Evidence)
	}
	if d2.CalledMore == nil || d2.CalledMore.Callee != "worker" || d1.CalledMore != nil || d2.Rank != 1 || w.Rank < d2.Rank {
		t.Errorf("dispatch_2 rank %d called more %+v; dispatch_1 rank %d called more %+v; worker rank %d called by %+v",
			d2.Rank, d2.CalledMore, d1.Rank, d1.CalledMore, w.Rank, w.CalledBy)
	}
}

// A function called more often through callers that each call it once
// per call of their own, up to one that cannot answer for the calls (a
// thread's outermost function, or a caller with evidence of its own),
// keeps its growth: no intermediary answers for it, and its pattern is
// the missing check of its own (docs/vprof.md, "Called once per call").
func TestOncePerCallNobodyAnswers(t *testing.T) {
	fx := newFixture(t)
	mk := func(buggy bool) *profile.Profile {
		r := fx.create(t, "nobody.rec")
		k := r.variable("k", "worker", "long", "loop", false)
		p := r.variable("p", "dispatch_1", "long", "cond", false)
		work, base := 100, int64(0)
		if buggy {
			work, base = 900, 1000
		}
		for i := 0; i < 300; i++ {
			r.tick(1, []string{"dispatch_1", "main"}, 0, val{p, 0, base + int64(i%10)})
		}
		for i := 0; i < work; i++ {
			r.tick(1, []string{"worker", "dispatch_2", "dispatch_1", "main"}, 0, val{k, 0, int64(i % 10)}, val{p, 2, base + int64(i%10)})
		}
		for i := 0; i < 600; i++ {
			r.tick(1, []string{"main"}, 0)
		}
		return r.done()
	}
	for _, c := range []struct {
		name           string
		normal, buggy  *profile.Profile
		d1Loop         bool // dispatch_1 calls dispatch_2 in a loop
		wantEvidenceD1 Evidence
	}{
		// dispatch_2 and dispatch_1 call once per call; main, the
		// thread's outermost function, cannot answer.
		{"up to the thread's outermost function", onceChain(t, fx, false), onceChain(t, fx, true), false, EvidenceNone},
		// dispatch_1 calls in a loop but has evidence of its own (p beyond
		// its range): the walk stops below it at dispatch_2.
		{"up to a caller with evidence", mk(false), mk(true), true, EvidenceVariable},
	} {
		res := analyzeHooked(t, c.normal, c.buggy, func(a *Analyzer) {
			a.SetLoopCalls(func(_ string, off uint64, _ string) (bool, bool) {
				return c.d1Loop && fx.in("dispatch_1", off), true
			})
			a.SetGuards(func(string, uint64, string) (bool, bool, bool) { return false, false, true })
		})
		d1, d2, w := res.fn(t, "dispatch_1"), res.fn(t, "dispatch_2"), res.fn(t, "worker")
		if w.Evidence != EvidenceOwnTime && w.Evidence != EvidenceVariable || d1.Evidence != c.wantEvidenceD1 {
			t.Fatalf("%s: worker evidence %s, dispatch_1 evidence %s: the setting is not the one tested", c.name, w.Evidence, d1.Evidence)
		}
		if d1.CalledMore != nil || d2.CalledMore != nil {
			t.Errorf("%s: an intermediary answers for the calls: dispatch_1 %+v, dispatch_2 %+v", c.name, d1.CalledMore, d2.CalledMore)
		}
		want := CalledBy{Caller: "dispatch_2", Variable: "k"}
		if w.Rank != 1 || w.CalledBy == nil || *w.CalledBy != want || w.Pattern != MissingConstraint {
			t.Errorf("%s: worker rank %d called by %+v (want %+v) pattern %s; dispatch_2 rank %d, dispatch_1 rank %d",
				c.name, w.Rank, w.CalledBy, want, w.Pattern, d2.Rank, d1.Rank)
		}
		if !strings.Contains(w.Why, "called more often through dispatch_2, which calls it once on every call of its own") {
			t.Errorf("%s: why %q", c.name, w.Why)
		}
	}
}

// New work reached through a function that calls it once on every call
// of its own, on a path a caller entered on a test of its own: a caller
// whose own variable went beyond its range does not answer for the calls
// made once per call below it, as on a path the normal runs took ("Called
// once per call"), so the work keeps its growth and its missing check
// answers. A caller with no evidence of its own decided the path, and
// answers as before ("New work its caller decided").
func TestNewWorkOncePerCallBelow(t *testing.T) {
	fx := newFixture(t)
	mk := func(buggy, own bool) *profile.Profile {
		r := fx.create(t, "newonce.rec")
		p := r.variable("p", "dispatch_1", "long", "cond,args", false)
		work, base := 4, int64(0)
		if buggy {
			work = 900
			if own {
				base = 1000
			}
		}
		for i := 0; i < 300; i++ {
			r.tick(1, []string{"dispatch_1", "main"}, 0, val{p, 0, base + int64(i%10)})
		}
		for i := 0; i < work; i++ {
			r.tick(1, []string{"worker", "dispatch_2", "dispatch_1", "main"}, 0, val{p, 2, base + int64(i%10)})
		}
		for i := 0; i < 600; i++ {
			r.tick(1, []string{"main"}, 0)
		}
		return r.done()
	}
	d1, d2 := fx.funcs["dispatch_1"], fx.funcs["dispatch_2"]
	for _, own := range []bool{true, false} {
		res := analyzeHooked(t, mk(false, own), mk(true, own), func(a *Analyzer) {
			a.SetLoopCalls(func(string, uint64, string) (bool, bool) { return false, true })
			a.SetGuards(func(o string, off uint64, c string) (bool, bool, bool) {
				if g, ord, ok := guardIn(d1, "dispatch_2", true, false, true)(o, off, c); ok {
					return g, ord, ok
				}
				return guardIn(d2, "worker", false, false, true)(o, off, c)
			})
		})
		r1, w := res.fn(t, "dispatch_1"), res.fn(t, "worker")
		if own {
			if r1.Evidence != EvidenceVariable {
				t.Fatalf("dispatch_1 evidence %s: not the setting tested", r1.Evidence)
			}
			want := CalledBy{Caller: "dispatch_2", New: true}
			if w.Rank != 1 || w.CalledBy == nil || *w.CalledBy != want || w.Pattern != MissingConstraint || r1.CalledMore != nil {
				t.Errorf("caller with evidence: worker rank %d called by %+v pattern %s; dispatch_1 rank %d called more %+v; want worker 1st called by %+v, missing-constraint",
					w.Rank, w.CalledBy, w.Pattern, r1.Rank, r1.CalledMore, want)
			}
			if !strings.Contains(w.Why, "a path the normal runs hardly ran") {
				t.Errorf("why %q", w.Why)
			}
			continue
		}
		if r1.Rank != 1 || r1.CalledMore == nil || !r1.CalledMore.New || r1.CalledMore.Callee != "dispatch_2" || w.CalledBy != nil {
			t.Errorf("caller without evidence: dispatch_1 rank %d called more %+v; worker called by %+v; want dispatch_1 1st deciding dispatch_2",
				r1.Rank, r1.CalledMore, w.CalledBy)
		}
	}
}

// A direct caller that calls the work once per call, with evidence of
// its own (its own time, or a variable beyond its range) but a growth
// outside those calls less than the work's, was called more as the work
// was: it ranks below the work, whose missing check answers for the
// growth (docs/vprof.md, "Called once per call"). One whose own code
// grew more than the work keeps its place.
func TestOncePerCallOwnTimeCaller(t *testing.T) {
	fx := newFixture(t)
	mk := func(buggy bool, own int, withVar bool) *profile.Profile {
		r := fx.create(t, "ownonce.rec")
		k := r.variable("k", "worker", "long", "loop", false)
		a := r.variable("active", "dispatch_2", "long", "cond", false)
		work, mine := 100, 20
		if buggy {
			work, mine = 900, own
		}
		for i := 0; i < 300; i++ {
			r.tick(1, []string{"dispatch_1", "main"}, 0)
		}
		for i := 0; i < mine; i++ {
			if !withVar {
				r.tick(1, []string{"dispatch_2", "dispatch_1", "main"}, 0)
				continue
			}
			v := int64(1143)
			if buggy {
				v = 32000 + int64(i%1000)
			}
			r.tick(1, []string{"dispatch_2", "dispatch_1", "main"}, 0, val{a, 0, v})
		}
		for i := 0; i < work; i++ {
			r.tick(1, []string{"worker", "dispatch_2", "dispatch_1", "main"}, 0, val{k, 0, int64(i % 10)})
		}
		for i := 0; i < 600; i++ {
			r.tick(1, []string{"main"}, 0)
		}
		return r.done()
	}
	for _, c := range []struct {
		own         int
		withVar     bool
		evidence    Evidence
		workerFirst bool
	}{{150, false, EvidenceOwnTime, true}, {2000, false, EvidenceOwnTime, false}, {150, true, EvidenceVariable, true}} {
		res := analyzeHooked(t, mk(false, c.own, c.withVar), mk(true, c.own, c.withVar), func(a *Analyzer) {
			a.SetLoopCalls(func(string, uint64, string) (bool, bool) { return false, true })
			a.SetGuards(func(string, uint64, string) (bool, bool, bool) { return false, false, true })
		})
		d2, w := res.fn(t, "dispatch_2"), res.fn(t, "worker")
		if d2.Evidence != c.evidence || w.CalledBy == nil || w.CalledBy.Caller != "dispatch_2" {
			t.Fatalf("own %d: dispatch_2 evidence %s, worker called by %+v: the setting is not the one tested", c.own, d2.Evidence, w.CalledBy)
		}
		if got := w.Rank < d2.Rank; got != c.workerFirst {
			t.Errorf("own %d: worker rank %d, dispatch_2 rank %d; want worker first: %v", c.own, w.Rank, d2.Rank, c.workerFirst)
		}
	}
}

// The once-per-call walk on shares that cannot grow: the work (worker,
// its loop counter in its normal range, the bytes it reads in another
// mix) holds 97% of both runs and the buggy run is three times as long,
// so no share grows while every time per run does. The questions the walk
// asks (did the work grow, its own code, its callers, their calls) read
// such shares by time, and dispatch_1, which calls the once-per-call
// dispatch_2 in a loop, answers for the growth (docs/vprof.md, "A share
// that cannot grow").
func TestOncePerCallSaturated(t *testing.T) {
	fx := newFixture(t)
	mk := func(buggy bool) *profile.Profile {
		r := fx.create(t, "oncesat.rec")
		k := r.variable("k", "worker", "long", "loop", false)
		b := r.variable("*d", "worker", "unsigned char", "cond", false)
		x := 1
		if buggy {
			x = 3
		}
		for i := 0; i < 20*x; i++ {
			r.tick(1, []string{"dispatch_1", "main"}, 0)
		}
		for i := 0; i < 970*x; i++ {
			d := int64(20 + i%10)
			if buggy {
				d = int64(i % 3)
			}
			r.tick(1, []string{"worker", "dispatch_2", "dispatch_1", "main"}, 0, val{k, 0, int64(i % 10)}, val{b, 0, d})
		}
		for i := 0; i < 10*x; i++ {
			r.tick(1, []string{"main"}, 0)
		}
		return r.done()
	}
	res := analyzeHooked(t, mk(false), mk(true), func(a *Analyzer) {
		a.SetLoopCalls(func(_ string, off uint64, _ string) (bool, bool) { return fx.in("dispatch_1", off), true })
		a.SetGuards(func(string, uint64, string) (bool, bool, bool) { return false, false, true })
	})
	d1, w := res.fn(t, "dispatch_1"), res.fn(t, "worker")
	if w.Evidence != EvidenceVariable || w.Share.Time == 0 || w.plain.Grew() {
		t.Fatalf("worker evidence %s share %+v (plain %+v): the setting is not the one tested", w.Evidence, w.Share, w.plain)
	}
	want := CalledMore{Callee: "dispatch_2", Work: "worker", Variable: "k"}
	if d1.CalledMore == nil || *d1.CalledMore != want || d1.Rank != 1 || w.Rank < d1.Rank || d1.Pattern != MissingConstraint {
		t.Errorf("dispatch_1 rank %d called more %+v (want %+v) pattern %s; worker rank %d",
			d1.Rank, d1.CalledMore, want, d1.Pattern, w.Rank)
	}
	if d1.Share.Time == 0 || !strings.Contains(d1.Why, "× its normal time per run") {
		t.Errorf("dispatch_1 share %+v why %q: want its growth by time", d1.Share, d1.Why)
	}
}

// A predicate whose answer decides every entry into the once-per-call
// caller where the walk ends decided the calls: that caller answers for
// them as before, and the function keeps no growth of its own for them.
func TestOncePerCallPredicateDecides(t *testing.T) {
	fx := newFixture(t)
	d1f := fx.funcs["dispatch_1"]
	res := analyzeHooked(t, onceChain(t, fx, false), onceChain(t, fx, true), func(a *Analyzer) {
		a.SetLoopCalls(func(string, uint64, string) (bool, bool) { return false, true })
		a.SetGuards(func(string, uint64, string) (bool, bool, bool) { return false, false, true })
		a.SetDeciders(func(_ string, off uint64, _ string) (string, bool) {
			return "main", off >= d1f.off && off < d1f.off+d1f.size
		})
	})
	d1, w := res.fn(t, "dispatch_1"), res.fn(t, "worker")
	if w.CalledBy != nil || d1.CalledMore == nil || d1.CalledMore.Callee != "dispatch_2" {
		t.Errorf("worker called by %+v, dispatch_1 called more %+v: want dispatch_1 to answer for the calls", w.CalledBy, d1.CalledMore)
	}
}

// A check that decides, on a threshold, to rewrite the state a loop is
// bounded by, and did not (the rewrite ran no more often), answers for the
// loop's growth when the loop's own code did more work per call: it ranks
// just above the loop, with wrong-constraint (docs/vprof.md, "A repair
// that did not run"). A test of presence or equality makes no such check.
func TestRepairThatDidNotRun(t *testing.T) {
	fx := newFixture(t)
	mk := func(buggy bool) *profile.Profile {
		r := fx.create(t, "repair.rec")
		i := r.variable("i", "worker", "long", "loop|cond", false)
		calls, bound := 200, 50
		if buggy {
			calls, bound = 800, 500
		}
		for k := 0; k < calls; k++ {
			r.tick(1, []string{"worker", "dispatch_1", "main"}, 0, val{i, 0, int64(k % bound)})
		}
		for k := 0; k < 600; k++ {
			r.tick(1, []string{"main"}, 0)
		}
		for k := 0; k < 3; k++ {
			r.tick(1, []string{"dispatch_2", "main"}, 0)
		}
		return r.done()
	}
	normal, buggy := mk(false), mk(true)
	run := func(repair RepairFunc) *Result {
		return analyzeHooked(t, normal, buggy, func(a *Analyzer) { a.SetRepairs(repair) })
	}
	// dispatch_2 tests the object worker's loop walks and decides to call
	// rewrite (no sample holds it: it did not run more often).
	checkBy := func(name, callee string, ordered bool) RepairFunc {
		return func(_ string, loop uint64) []RepairCheck {
			if fx.in("worker", loop) {
				return []RepairCheck{{Check: name, Callee: callee, Ordered: ordered, Bounds: []string{"s->len"}, Tests: []string{"s->dead", "s->cap"}}}
			}
			return nil
		}
	}
	check := func(callee string, ordered bool) RepairFunc { return checkBy("dispatch_2", callee, ordered) }
	res := run(check("rewrite", true))
	p, w := res.fn(t, "dispatch_2"), res.fn(t, "worker")
	if p.Rank != 1 || w.Rank != 2 || p.Evidence != EvidenceRepair || p.Pattern != WrongConstraint || p.Discount != 0 ||
		p.Repair == nil || p.Repair.Loop != "worker" || p.Repair.Callee != "rewrite" || p.Score < w.Score {
		t.Errorf("check rank %d evidence %s pattern %s repair %+v score %g; loop rank %d score %g; want 1st above worker, wrong-constraint",
			p.Rank, p.Evidence, p.Pattern, p.Repair, p.Score, w.Rank, w.Score)
	}
	if !strings.Contains(p.Why, "its test of s->dead, s->cap decides to call rewrite, which rewrites s->len, the bounds of worker's loop") ||
		strings.Contains(p.Why, "no significant growth") {
		t.Errorf("why: %q", p.Why)
	}
	// Without the machine code's answer, when the rewrite itself ran more
	// often (dispatch_1's share grew: the check fired), and when the test
	// is one of presence or equality, the check keeps its place below the
	// loop.
	for name, repair := range map[string]RepairFunc{
		"no answer":     func(string, uint64) []RepairCheck { return nil },
		"rewrite grew":  check("dispatch_1", true),
		"not ordered":   check("rewrite", false),
		"no hook (nil)": nil,
	} {
		res := run(repair)
		p, w := res.fn(t, "dispatch_2"), res.fn(t, "worker")
		if w.Rank != 1 || p.Rank <= w.Rank || p.Evidence == EvidenceRepair || p.Repair != nil {
			t.Errorf("%s: check rank %d evidence %s repair %+v; loop rank %d; want the loop 1st and no repair", name, p.Rank, p.Evidence, p.Repair, w.Rank)
		}
	}
	// A check no sample holds is ranked all the same: the machine code
	// names it.
	res = run(checkBy("gate", "rewrite", true))
	g, w := res.fn(t, "gate"), res.fn(t, "worker")
	if g.Rank != 1 || w.Rank != 2 || g.Evidence != EvidenceRepair || g.Pattern != WrongConstraint ||
		g.Share.Normal != 0 || g.Share.Buggy != 0 || g.Object != w.Object {
		t.Errorf("unsampled check: rank %d evidence %s pattern %s share %+v object %q; loop rank %d object %q",
			g.Rank, g.Evidence, g.Pattern, g.Share, g.Object, w.Rank, w.Object)
	}
}

// A function under a threshold whose only claim is a value beyond its
// normal range by too little to explain its growth (block sizes 4% larger,
// its time 4.5 times as long) did about the same work on more calls: the
// threshold that let the calls through ranks above it. A value far
// beyond its range (ten times as large) is more work per call, and the
// function keeps its place above the threshold (docs/vprof.md, "A value a
// little beyond its range").
func TestSlightExcessUnderThreshold(t *testing.T) {
	for _, tc := range []struct {
		buggyN      int64
		workerFirst bool
	}{{501, false}, {5000, true}} {
		fx := newFixture(t)
		mk := func(buggy bool) *profile.Profile {
			r := fx.create(t, "slight.rec")
			cfg := r.variable("cfg_min_keys", "#global", "long", "cond", false)
			n := r.variable("n", "worker", "long", "cond", false)
			work := 200
			if buggy {
				work = 900
			}
			for i := 0; i < 600; i++ {
				r.tick(1, []string{"main"}, 0, val{cfg, 0, 4096})
			}
			for i := 0; i < work; i++ {
				v := int64(476 + i%15)
				if buggy {
					v = tc.buggyN + int64(i%3)
				}
				r.tick(1, []string{"worker", "dispatch_1", "main"}, 0, val{cfg, 0, 4096}, val{n, 0, v})
			}
			for i := 0; i < 20; i++ {
				r.tick(1, []string{"dispatch_1", "main"}, 0, val{cfg, 0, 4096})
			}
			return r.done()
		}
		normal, buggy := mk(false), mk(true)
		d1 := fx.funcs["dispatch_1"]
		res := analyzeHooked(t, normal, buggy, thresholdHooks(d1, true, true, true))
		d, w := res.fn(t, "dispatch_1"), res.fn(t, "worker")
		if w.Evidence != EvidenceVariable || w.Variable != "n" || d.Evidence != EvidenceThreshold {
			t.Fatalf("buggy n %d: worker evidence %s variable %q, dispatch_1 evidence %s: not the setting tested", tc.buggyN, w.Evidence, w.Variable, d.Evidence)
		}
		if got := w.Rank < d.Rank; got != tc.workerFirst {
			t.Errorf("buggy n %d: worker rank %d, dispatch_1 (the threshold) rank %d; want worker first: %v", tc.buggyN, w.Rank, d.Rank, tc.workerFirst)
		}
	}
}
