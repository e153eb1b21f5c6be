package vprof

import (
	"math"
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
	v := &variable{normal: []*series{{values: normal}}, buggy: series{values: buggy}}
	d := func(xs []float64) (ds, durs []float64) {
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
		return ds, append(durs, float64(run))
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
	// Never sampled normally: a new path, no evidence.
	v = &variable{buggy: series{values: fill(3, 50), durations: []float64{50}}}
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
// pattern, and answers for its growth just below the callee.
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
	// It answers for its growth, just below the callee.
	if w := res.fn(t, "worker"); w.Evidence != EvidenceOwnTime || d.Rank != w.Rank+1 || d.Through != "worker" ||
		d.Score <= (1-DefaultOptions().DefaultDiscount)*d.Share.Change {
		t.Errorf("worker: evidence %s rank %d; dispatch_1 rank %d through %q score %g", w.Evidence, w.Rank, d.Rank, d.Through, d.Score)
	}
	if m := res.fn(t, "main"); m.Calls != nil {
		t.Errorf("main, which did not grow, has calls %+v", m.Calls)
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
}

// The C runtime's and the kernel's samples are their nearest caller's own
// time outside them.
func TestOwnTimeOfRuntimeCallers(t *testing.T) {
	a := &Analyzer{funcs: []fn{
		{name: "main", object: "/bin/prog"},
		{name: "compress", object: "/bin/prog"},
		{name: "memset", object: "/usr/lib/x86_64-linux-gnu/libc.so.6"},
		{name: "clear_page", object: "[kernel.kallsyms]", kernel: true},
		{name: "hist_add", object: "/opt/lib/libhist.so"},
	}}
	c := newStackCounts()
	c.add([]int32{3, 2, 1, 0}, a.system) // page fault in memset, called by compress
	c.add([]int32{2, 1, 0}, a.system)
	c.add([]int32{4, 0}, a.system) // a library of the program's own keeps its time
	if c.own[1] != 2 || c.own[2] != 0 || c.own[3] != 0 || c.own[4] != 1 || c.self[2] != 1 || c.self[3] != 1 {
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
}
