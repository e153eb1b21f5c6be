package vprof

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
)

// Roles of hier.c's functions in the Fig. 6a (MDEV-21826) shaped runs:
//
//	worker      recv_apply_hashed_log_recs: costly callee, normal-looking end_lsn
//	dispatch_2  recv_group_scan_log_recs: the cheap root cause, whose
//	            available_mem (cond, args) is ~5.1e5 in normal runs and 0 in
//	            buggy ones, so its loop repeats the work of worker
//	dispatch_1  another costly function with normal-looking values
//	main        the caller of both
//
// Each call of dispatch_2 takes 150 ticks in worker (available_mem read at
// depth 1, at the call site) and 5 in dispatch_2 itself; dispatch_1 takes 100
// ticks per call. The buggy run makes twice the calls.
func fig6a(t *testing.T, buggy bool) *profile.Profile {
	fx := newFixture(t)
	r := fx.create(t, "fig6a.rec")
	avail := r.variable("available_mem", "dispatch_2", "ulint", "cond,args", false)
	lsn := r.variable("end_lsn", "worker", "lsn_t", "loop", false)
	n := r.variable("n", "dispatch_1", "long", "args", false)
	calls := 10
	if buggy {
		calls = 20
	}
	k := int64(0)
	for c := 0; c < calls; c++ {
		am := int64(500000 + 2000*c)
		if buggy {
			am = 0
		}
		for i := 0; i < 150; i++ {
			k++
			r.tick(1, []string{"worker", "dispatch_2", "main"}, uint64(k%4), val{avail, 1, am}, val{lsn, 0, (k * 7919) % 1000})
		}
		for i := 0; i < 5; i++ {
			r.tick(1, []string{"dispatch_2", "main"}, 0, val{avail, 0, am})
		}
		for i := 0; i < 100; i++ {
			k++
			r.tick(1, []string{"dispatch_1", "main"}, 0, val{n, 0, (k * 31) % 97})
		}
	}
	return r.done()
}

func TestFig6aWrongConstraint(t *testing.T) {
	res := analyze(t, []*profile.Profile{fig6a(t, false)}, []*profile.Profile{fig6a(t, true)})

	am := res.variable(t, "available_mem")
	if am.Discount != 0 || am.Dimension != DimValue || !am.Anomalous {
		t.Errorf("available_mem: discount %g dimension %s anomalous %v, want 0 from the value dimension", am.Discount, am.Dimension, am.Anomalous)
	}
	lsn := res.variable(t, "end_lsn")
	if lsn.Discount != 0.8 || lsn.Anomalous {
		t.Errorf("end_lsn: discount %g anomalous %v, want DefaultDiscount 0.8 (same distributions)", lsn.Discount, lsn.Anomalous)
	}

	root := res.fn(t, "dispatch_2")
	if root.Rank != 1 {
		t.Errorf("dispatch_2 ranks %d, want 1st; ranking %v", root.Rank, res.names())
	}
	if root.Pattern != WrongConstraint {
		t.Errorf("dispatch_2 pattern %s, want wrong-constraint", root.Pattern)
	}
	if root.Dimension != DimValue || root.Discount != 0 || root.Variable != "available_mem" {
		t.Errorf("dispatch_2: discount %g %s variable %q", root.Discount, root.Dimension, root.Variable)
	}
	// Its own PC cost is small: 5 ticks per call; the variable cost counts
	// the ticks its variable was read at its call site.
	if got := root.PCCost; math.Abs(got-0.1) > 1e-9 {
		t.Errorf("dispatch_2 PC cost %gs, want 0.1s (100 ticks)", got)
	}
	if got := root.VarCost; math.Abs(got-3.1) > 1e-9 {
		t.Errorf("dispatch_2 variable cost %gs, want 3.1s (20 calls × 155 ticks)", got)
	}
	w := res.fn(t, "worker")
	if math.Abs(w.Raw-3.0) > 1e-9 || w.Discount != 0.8 || w.Dimension != DimDefault {
		t.Errorf("worker: raw %g discount %g %s, want 3s discounted by 0.8 (default)", w.Raw, w.Discount, w.Dimension)
	}
	if math.Abs(w.Calibrated-0.6) > 1e-9 {
		t.Errorf("worker calibrated %g, want 0.6", w.Calibrated)
	}
	// By PC cost alone dispatch_2 is third of four, behind both costly functions.
	if d1 := res.fn(t, "dispatch_1"); !(w.PCCost > d1.PCCost && d1.PCCost > root.PCCost) {
		t.Errorf("PC costs worker %g dispatch_1 %g dispatch_2 %g", w.PCCost, d1.PCCost, root.PCCost)
	}

	// Localisation: every buggy sample is outside the normal range, read at
	// dispatch_2's call of worker (depth 1) and in dispatch_2 itself.
	a := am.Anomaly
	if a == nil || a.Outside != a.Considered || a.Considered != 20*155 {
		t.Fatalf("anomaly %+v, want all 3100 buggy samples outside", a)
	}
	if a.NormalMin != 500000 || a.NormalMax != 518000 || a.BuggyMedian != 0 || a.NormalMedian < 5e5 || a.NormalMedian > 5.2e5 {
		t.Errorf("ranges: %+v", a)
	}
	if len(root.Lines) == 0 {
		t.Fatal("no lines")
	}
	total := 0
	for _, l := range root.Lines {
		total += l.Samples
		if !strings.HasSuffix(l.File, "hier.c") || l.Line <= 0 {
			t.Errorf("line %+v not in hier.c", l)
		}
	}
	// dispatch_2 is one line (hier.c:14): its call of worker and its own
	// PCs are on it.
	if total != 3100 || root.Lines[0].Line != 14 || root.Lines[0].Function != "dispatch_2" {
		t.Errorf("lines %+v: want the 3100 samples at hier.c:14 in dispatch_2", root.Lines)
	}

}

// Fig. 6b (Redis-8668): numclients, a loop variable of the cheap root
// cause, takes values of about the same range in both runs but stays the
// same for 10 ticks at a time in the buggy run, where each iteration calls an
// expensive function.
func fig6b(t *testing.T, buggy bool) *profile.Profile {
	fx := newFixture(t)
	r := fx.create(t, "fig6b.rec")
	nc := r.variable("numclients", "dispatch_2", "int", "loop", false)
	key := r.variable("key", "worker", "long", "args", false)
	k := int64(0)
	for pass := 0; pass < 20; pass++ {
		for c := int64(99); c >= 0; c-- {
			hold := 1
			if buggy {
				if c < 40 { // the buggy run spends its time on the clients above 40
					continue
				}
				hold = 10
			}
			for h := 0; h < hold; h++ {
				k++
				r.tick(1, []string{"worker", "dispatch_2", "main"}, uint64(k%3), val{nc, 1, c}, val{key, 0, (k * 7) % 50})
			}
		}
	}
	return r.done()
}

func TestFig6bMissingConstraint(t *testing.T) {
	res := analyze(t, []*profile.Profile{fig6b(t, false)}, []*profile.Profile{fig6b(t, true)})
	nc := res.variable(t, "numclients")
	var value, duration DimResult
	for _, d := range nc.Dimensions {
		switch d.Dimension {
		case DimValue:
			value = d
		case DimDuration:
			duration = d
		}
	}
	if !value.Rejected || value.Discount <= 0 || value.Discount >= 0.8 {
		t.Errorf("value dimension %+v: want rejected with a discount strictly between 0 and 0.8", value)
	}
	if !duration.Rejected || duration.Discount != 0 {
		t.Errorf("duration dimension %+v: want discount 0", duration)
	}
	f := res.fn(t, "dispatch_2")
	if f.Rank != 1 || f.Pattern != MissingConstraint || f.Dimension != DimDuration || f.Discount != 0 {
		t.Errorf("dispatch_2: rank %d pattern %s %s %g; ranking %v", f.Rank, f.Pattern, f.Dimension, f.Discount, res.names())
	}
	if a := nc.Anomaly; a == nil || a.NormalMax != 1 || a.BuggyMedian != 10 || a.Outside != a.Considered {
		t.Errorf("anomaly %+v: want normal run lengths 1, buggy 10, all outside", a)
	}
	if w := res.fn(t, "worker"); w.Dimension != DimDefault || w.Discount != 0.8 {
		t.Errorf("worker %s %g, want default 0.8", w.Dimension, w.Discount)
	}
}

// Scalability (MDEV-23399): a loop variable of the costly function scans
// 100 entries per pass in normal runs and 10000 in buggy ones.
func scan(t *testing.T, buggy bool) *profile.Profile {
	fx := newFixture(t)
	r := fx.create(t, "scan.rec")
	scanned := r.variable("scanned", "dispatch_1", "unsigned", "loop", false)
	limit := r.variable("limit", "dispatch_1", "unsigned", "args", false)
	x := r.variable("x", "worker", "long", "none", false)
	n := int64(100)
	if buggy {
		n = 10000
	}
	ticks := 20000
	for i := 0; i < ticks; i++ {
		r.tick(1, []string{"dispatch_1", "main"}, uint64(i%5), val{scanned, 0, int64(i) % n}, val{limit, 0, 5})
		if i%4 == 0 {
			r.tick(1, []string{"worker", "dispatch_2", "main"}, 0, val{x, 0, int64(i/4) % 13})
		}
	}
	return r.done()
}

func TestScalability(t *testing.T) {
	res := analyze(t, []*profile.Profile{scan(t, false)}, []*profile.Profile{scan(t, true)})
	f := res.fn(t, "dispatch_1")
	if f.Rank != 1 || f.Pattern != Scalability || f.Dimension != DimValue || f.Variable != "scanned" {
		t.Errorf("dispatch_1: rank %d pattern %s %s %s; ranking %v", f.Rank, f.Pattern, f.Dimension, f.Variable, res.names())
	}
	a := f.Var.Anomaly
	if a.NormalMax != 99 || a.BuggyMedian < 4000 || a.OutsideFraction() < 0.98 {
		t.Errorf("anomaly %+v", a)
	}
	if limit := res.variable(t, "limit"); limit.Discount != 0.8 {
		t.Errorf("limit (constant 5 in both) discount %g, want 0.8", limit.Discount)
	}
}

// A costly function whose values look normal is demoted below a cheap one
// whose values are anomalous.
func TestCostlyNormalDemoted(t *testing.T) {
	mk := func(buggy bool) *profile.Profile {
		fx := newFixture(t)
		r := fx.create(t, "demote.rec")
		n := r.variable("n", "dispatch_1", "long", "loop", false)
		ready := r.variable("ready", "main", "int", "cond", false)
		for i := 0; i < 1000; i++ {
			switch {
			case i%20 < 12: // 60%
				r.tick(1, []string{"dispatch_1", "main"}, 0, val{n, 0, int64(i) % 37})
			case i%20 < 15: // 15%
				v := int64(1 + i%3)
				if buggy {
					v = 0
				}
				r.tick(1, []string{"main"}, 0, val{ready, 0, v})
			default:
				r.tick(1, []string{"worker", "dispatch_2", "main"}, 0)
			}
		}
		return r.done()
	}
	res := analyze(t, []*profile.Profile{mk(false)}, []*profile.Profile{mk(true)})
	d1, m := res.fn(t, "dispatch_1"), res.fn(t, "main")
	if !(d1.PCCost > m.PCCost) {
		t.Fatalf("PC costs: dispatch_1 %g main %g", d1.PCCost, m.PCCost)
	}
	if !(m.Rank < d1.Rank) || m.Discount != 0 || d1.Discount != 0.8 {
		t.Errorf("main rank %d (discount %g) dispatch_1 rank %d (discount %g): want main above", m.Rank, m.Discount, d1.Rank, d1.Discount)
	}
	if math.Abs(d1.Calibrated-0.2*0.6) > 1e-9 || math.Abs(m.Calibrated-0.15) > 1e-9 {
		t.Errorf("calibrated dispatch_1 %g main %g", d1.Calibrated, m.Calibrated)
	}
	if m.Pattern != WrongConstraint {
		t.Errorf("main pattern %s", m.Pattern)
	}
	// worker and dispatch_2 have no variable and one run of each kind: no
	// discount.
	if w := res.fn(t, "worker"); w.Dimension != DimNone || w.Discount != 0 || w.Pattern != NoPattern {
		t.Errorf("worker %+v", w)
	}
}

// The variable cost counts value samples at distinct PCs per tick: several
// variables read at one PC count once; a global is charged to each function
// it was read in.
func TestVariableCostDistinctPCs(t *testing.T) {
	mk := func() *profile.Profile {
		fx := newFixture(t)
		r := fx.create(t, "pcs.rec")
		a := r.variable("a", "dispatch_2", "int", "cond", false)
		b := r.variable("b", "dispatch_2", "int", "none", false)
		g := r.variable("g", "#global", "int", "none", false)
		// Two variables at one PC: one sample.
		r.tick(1, []string{"worker", "dispatch_2", "main"}, 0, val{a, 1, 1}, val{b, 1, 2})
		// a and g at dispatch_2's call site, g also in worker: dispatch_2
		// once, worker once.
		r.tick(1, []string{"worker", "dispatch_2", "main"}, 0, val{a, 1, 1}, val{g, 0, 7}, val{g, 1, 7})
		// dispatch_2 at two PCs in one tick (it calls itself): twice.
		r.tick(1, []string{"dispatch_2", "dispatch_2", "main"}, 0, val{a, 0, 1}, val{a, 1, 1})
		// Another thread at the same PC in another tick.
		r.tick(2, []string{"worker", "dispatch_2", "main"}, 0, val{a, 1, 1})
		return r.done()
	}
	res := analyze(t, []*profile.Profile{mk()}, []*profile.Profile{mk()})
	d2 := res.fn(t, "dispatch_2")
	if math.Abs(d2.VarCost-0.005) > 1e-12 || math.Abs(d2.PCCost-0.001) > 1e-12 || math.Abs(d2.Raw-0.005) > 1e-12 {
		t.Errorf("dispatch_2: var cost %g PC cost %g raw %g, want 5ms, 1ms, 5ms", d2.VarCost, d2.PCCost, d2.Raw)
	}
	w := res.fn(t, "worker")
	if math.Abs(w.VarCost-0.001) > 1e-12 || math.Abs(w.PCCost-0.003) > 1e-12 {
		t.Errorf("worker: var cost %g PC cost %g, want 1ms and 3ms", w.VarCost, w.PCCost)
	}
	if d2.Variables != 3 || w.Variables != 1 {
		t.Errorf("variables charged: dispatch_2 %d (a, b, g), worker %d (g)", d2.Variables, w.Variables)
	}
	// The global was read twice in one tick: one sample for its distribution.
	if g := res.variable(t, "g"); g.BuggySamples != 1 {
		t.Errorf("g has %d buggy samples, want 1", g.BuggySamples)
	}
}

// A global is charged to every function where it was read, by the function
// of the PC: an anomalous global lowers the discount of each.
func TestGlobalCharged(t *testing.T) {
	mk := func(buggy bool) *profile.Profile {
		fx := newFixture(t)
		r := fx.create(t, "global.rec")
		g := r.variable("pool_free", "#global", "ulint", "none", false)
		n := r.variable("n", "dispatch_1", "long", "none", false)
		v := int64(256)
		if buggy {
			v = 85
		}
		for i := 0; i < 300; i++ {
			r.tick(1, []string{"worker", "dispatch_2", "main"}, 0, val{g, 0, v}, val{g, 1, v})
			r.tick(1, []string{"dispatch_1", "main"}, 0, val{n, 0, int64(i % 7)})
			r.tick(1, []string{"main"}, 0)
		}
		return r.done()
	}
	res := analyze(t, []*profile.Profile{mk(false)}, []*profile.Profile{mk(true)})
	for _, name := range []string{"worker", "dispatch_2"} {
		if f := res.fn(t, name); f.Discount != 0 || f.Variable != "pool_free" || f.Dimension != DimValue {
			t.Errorf("%s: discount %g from %q (%s), want 0 from pool_free", name, f.Discount, f.Variable, f.Dimension)
		}
	}
	if f := res.fn(t, "dispatch_1"); f.Discount != 0.8 || f.Variable != "n" {
		t.Errorf("dispatch_1: discount %g from %q", f.Discount, f.Variable)
	}
	if f := res.fn(t, "main"); f.Variables != 0 || f.Dimension != DimNone {
		t.Errorf("main: %d variables, %s", f.Variables, f.Dimension)
	}
}

// Pointers are compared by duration only: other addresses with the same
// run lengths look normal; longer runs do not.
func TestPointerDurationOnly(t *testing.T) {
	mk := func(buggy bool) *profile.Profile {
		fx := newFixture(t)
		r := fx.create(t, "ptr.rec")
		job := r.variable("job", "dispatch_1", "struct job *", "args", true)
		node := r.variable("node", "worker", "struct node *", "loop", true)
		baseAddr := int64(0x5555_0000_1000)
		hold := 1
		if buggy {
			baseAddr = 0x7f00_1234_0000
			hold = 20
		}
		for i := 0; i < 2000; i++ {
			r.tick(1, []string{"dispatch_1", "main"}, 0, val{job, 0, baseAddr + int64(i/5)*64})
			r.tick(1, []string{"worker", "dispatch_2", "main"}, 0, val{node, 0, baseAddr + int64(i/hold)*32})
		}
		return r.done()
	}
	res := analyze(t, []*profile.Profile{mk(false)}, []*profile.Profile{mk(true)})
	job := res.variable(t, "job")
	if len(job.Dimensions) != 1 || job.Dimensions[0].Dimension != DimDuration {
		t.Fatalf("job dimensions %+v, want duration only", job.Dimensions)
	}
	if job.Discount != 0.8 || job.Anomalous {
		t.Errorf("job: discount %g, want 0.8 (same run lengths, other addresses)", job.Discount)
	}
	node := res.variable(t, "node")
	if node.Discount != 0 || node.Dimension != DimDuration {
		t.Errorf("node: discount %g %s, want 0 from duration", node.Discount, node.Dimension)
	}
	// A loop pointer that stays the same: missing constraint.
	if f := res.fn(t, "worker"); f.Pattern != MissingConstraint {
		t.Errorf("worker pattern %s", f.Pattern)
	}
}

// Rule 4: the most costly function with only pointers, all normal, is a
// scalability suspect.
func TestRule4(t *testing.T) {
	mk := func() *profile.Profile {
		fx := newFixture(t)
		r := fx.create(t, "rule4.rec")
		list := r.variable("list", "worker", "struct list *", "none", true)
		for i := 0; i < 600; i++ {
			r.tick(1, []string{"worker", "dispatch_2", "main"}, 0, val{list, 0, 0x1000 + int64(i/3)*16})
			if i%3 == 0 {
				r.tick(1, []string{"dispatch_1", "main"}, 0)
			}
		}
		return r.done()
	}
	res := analyze(t, []*profile.Profile{mk()}, []*profile.Profile{mk()})
	f := res.fn(t, "worker")
	if f.Dimension != DimDefault || f.Discount != 0.8 || f.Pattern != Scalability || f.Var.Dimension != DimDuration {
		t.Errorf("worker: %s %g %s (variable dimension %s)", f.Dimension, f.Discount, f.Pattern, f.Var.Dimension)
	}
}

// TestSchemaIdentity: variables sampled in one kind of run only are a quiet
// note when the recordings say every run had the same schema (their code
// did not run), and a warning to use one schema when they say the schemas
// differ.
func TestSchemaIdentity(t *testing.T) {
	const idA, idB = "0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"
	mk := func(buggy bool, schema string) *profile.Profile {
		fx := newFixture(t)
		r := fx.create(t, "schema.rec")
		r.schema = schema
		n := r.variable("n", "dispatch_1", "long", "loop", false)
		var only uint32
		if buggy {
			only = r.variable("clust_index", "worker", "int", "cond", false)
		} else {
			only = r.variable("old_var", "helper", "int", "cond", false)
		}
		for i := 0; i < 400; i++ {
			r.tick(1, []string{"dispatch_1", "main"}, 0, val{n, 0, int64(i % 10)})
			if buggy {
				r.tick(1, []string{"worker", "dispatch_2", "main"}, 0, val{only, 0, int64(i % 3)})
			} else if i%2 == 0 {
				r.tick(1, []string{"helper", "main"}, 0, val{only, 0, int64(i % 3)})
			}
		}
		return r.done()
	}
	schemaWarnings := func(res *Result) (n int) {
		for _, w := range res.Warnings {
			if strings.Contains(w, "schema") {
				n++
			}
		}
		return n
	}

	same := analyze(t, []*profile.Profile{mk(false, idA)}, []*profile.Profile{mk(true, idA)})
	if n := schemaWarnings(same); n != 0 || len(same.Notes) != 2 {
		t.Errorf("the same schema: warnings %q, notes %q; want no schema warning and two notes", same.Warnings, same.Notes)
	}
	if !strings.Contains(strings.Join(same.Notes, "\n"), "worker:clust_index") || !strings.Contains(strings.Join(same.Notes, "\n"), "helper:old_var") {
		t.Errorf("notes %q: want the variables named", same.Notes)
	}
	if ci := same.variable(t, "clust_index"); !ci.InNormalSchema || !ci.Anomalous || ci.Discount != 0 {
		t.Errorf("clust_index, of the normal runs' schema but not run there: %+v", ci)
	}
	if got := same.Normal[0].Schemas; len(got) != 1 || got[0] != idA {
		t.Errorf("normal run's schemas %q, want [%s]", got, idA)
	}

	other := analyze(t, []*profile.Profile{mk(false, idA)}, []*profile.Profile{mk(true, idB)})
	if n := schemaWarnings(other); n != 2 || len(other.Notes) != 0 {
		t.Errorf("different schemas: warnings %q, notes %q; want two schema warnings", other.Warnings, other.Notes)
	}
	for _, w := range other.Warnings {
		if !strings.Contains(w, "record both with the same --values=SCHEMA") || !strings.Contains(w, "another schema") {
			t.Errorf("warning %q: want it to say the schemas differ and what to do", w)
		}
	}
	if ci := other.variable(t, "clust_index"); ci.InNormalSchema || !ci.Anomalous {
		t.Errorf("clust_index, of the buggy runs' schema only: %+v", ci)
	}

	// Recordings without schema identities: the analysis cannot tell.
	unknown := analyze(t, []*profile.Profile{mk(false, "")}, []*profile.Profile{mk(true, idA)})
	if n := schemaWarnings(unknown); n != 2 || len(unknown.Notes) != 0 || !strings.Contains(unknown.Warnings[0], "if the runs used different schemas") {
		t.Errorf("unknown schemas: warnings %q, notes %q", unknown.Warnings, unknown.Notes)
	}
}

// Edge cases of the notes (vProf's code): a variable never sampled in the
// normal runs is anomalous (discount 0); one never sampled in the buggy runs
// is not; too few samples are not tested; names about processes, threads
// and time have no value dimension.
func TestEdgeCases(t *testing.T) {
	mk := func(buggy bool) *profile.Profile {
		fx := newFixture(t)
		r := fx.create(t, "edge.rec")
		n := r.variable("n", "dispatch_1", "long", "loop", false)
		tc := r.variable("thread_count", "dispatch_1", "int", "cond", false)
		var only, few uint32
		if buggy {
			only = r.variable("clust_index", "worker", "int", "cond", false)
		} else {
			only = r.variable("old_var", "worker", "int", "cond", false)
		}
		few = r.variable("few", "dispatch_2", "int", "cond", false)
		once := r.variable("once", "main", "int", "cond", false)
		r.tick(1, []string{"main"}, 0, val{once, 0, 7})
		for i := 0; i < 400; i++ {
			if buggy && i%40 == 0 {
				r.tick(1, []string{"main"}, 0, val{once, 0, 7})
			}
			r.tick(1, []string{"dispatch_1", "main"}, 0, val{n, 0, int64(i % 10)}, val{tc, 0, int64(i % 4)})
			if buggy || i%2 == 0 {
				r.tick(1, []string{"worker", "dispatch_2", "main"}, 0, val{only, 0, int64(i % 3)})
			}
		}
		r.tick(1, []string{"dispatch_2", "main"}, 0, val{few, 0, 1})
		return r.done()
	}
	res := analyze(t, []*profile.Profile{mk(false)}, []*profile.Profile{mk(true)})
	ci := res.variable(t, "clust_index")
	if ci.Discount != 0 || !ci.Anomalous || ci.InNormalSchema {
		t.Errorf("clust_index (buggy runs only): %+v", ci)
	}
	if len(res.OnlyBuggy) != 1 || res.OnlyBuggy[0] != "worker:clust_index" || len(res.OnlyNormal) != 1 || len(res.Warnings) != 2 {
		t.Errorf("schema: only buggy %v, only normal %v, warnings %q", res.OnlyBuggy, res.OnlyNormal, res.Warnings)
	}
	if ov := res.variable(t, "old_var"); ov.Discount != 0.8 || ov.Anomalous {
		t.Errorf("old_var (normal runs only): %+v", ov)
	}
	few := res.variable(t, "few")
	if few.Discount != 0.8 || few.Anomalous || few.Dimensions[0].Note == "" {
		t.Errorf("few: %+v", few)
	}
	// Sampled once in the normal run: no delta there, which is too few
	// samples to test, not an anomaly.
	if once := res.variable(t, "once"); once.Anomalous || once.Discount != 0.8 {
		t.Errorf("once: %+v", once.Dimensions)
	}
	tc := res.variable(t, "thread_count")
	for _, d := range tc.Dimensions {
		if d.Dimension == DimValue {
			t.Errorf("thread_count has a value dimension")
		}
	}
	if f := res.fn(t, "worker"); f.Variable != "clust_index" || f.Discount != 0 {
		t.Errorf("worker: %q %g", f.Variable, f.Discount)
	}
}

// Two locals of one name in one function (the second, say, of an inlined
// callee) are two variables, told apart by their declaring line. A variable
// anomalous by the test beats, at equal discount, one anomalous only because
// the normal run never sampled it.
func TestSameNameAndUnsampledTie(t *testing.T) {
	mk := func(buggy bool) *profile.Profile {
		fx := newFixture(t)
		r := fx.create(t, "names.rec")
		b10 := r.variableAt("b", "dispatch_1", "long", "loop", 10, false)
		b20 := r.variableAt("b", "dispatch_1", "long", "loop", 20, false)
		rare := r.variable("rare", "dispatch_1", "int", "cond", false)
		for i := 0; i < 500; i++ {
			v20 := int64(i % 5)
			if buggy {
				v20 = 1000 + int64(i%50)
			}
			r.tick(1, []string{"dispatch_1", "main"}, 0, val{b10, 0, int64(i % 7)}, val{b20, 0, v20})
			if buggy && i%200 == 0 {
				r.tick(1, []string{"dispatch_1", "main"}, 0, val{rare, 0, 1})
			}
		}
		return r.done()
	}
	res := analyze(t, []*profile.Profile{mk(false)}, []*profile.Profile{mk(true)})
	var b10, b20 *VariableResult
	for _, v := range res.Variables {
		if v.Name == "b" && v.Line == 10 {
			b10 = v
		}
		if v.Name == "b" && v.Line == 20 {
			b20 = v
		}
	}
	if b10 == nil || b20 == nil || b10.Discount != 0.8 || b20.Discount != 0 || !b20.Anomalous {
		t.Fatalf("b@10 %+v\nb@20 %+v", b10, b20)
	}
	if rare := res.variable(t, "rare"); rare.Discount != 0 || !rare.Anomalous {
		t.Errorf("rare: %+v", rare)
	}
	f := res.fn(t, "dispatch_1")
	if f.Var != b20 || f.Pattern != Scalability {
		t.Errorf("dispatch_1's variable %s@%d (%s), want b@20", f.Var.Name, f.Var.Line, f.Pattern)
	}
}

// The hist-discounter: with two runs of each kind, a function without
// variables that ranks higher in the normal runs is discounted fully; one
// seen only in the buggy runs not at all.
func TestHistDiscounter(t *testing.T) {
	mk := func(buggy bool, seed int) *profile.Profile {
		fx := newFixture(t)
		r := fx.create(t, "hist.rec")
		n := r.variable("n", "dispatch_1", "long", "loop", false)
		d1 := 100 + seed
		if buggy {
			d1 = 1000 + seed
		}
		for i := 0; i < 300; i++ {
			r.tick(1, []string{"main"}, 0)
		}
		for i := 0; i < d1; i++ {
			r.tick(1, []string{"dispatch_1", "main"}, 0, val{n, 0, int64(i % 9)})
		}
		if buggy {
			for i := 0; i < 50; i++ {
				r.tick(1, []string{"worker", "dispatch_2", "main"}, 0)
			}
		}
		return r.done()
	}
	res := analyze(t, []*profile.Profile{mk(false, 0), mk(false, 1)}, []*profile.Profile{mk(true, 0), mk(true, 1)})
	if !res.History {
		t.Fatal("hist-discounter off")
	}
	m := res.fn(t, "main")
	if m.Dimension != DimHistory || m.Discount != 1 || m.History == nil || m.History.H != 4 || m.History.C != 4 || m.Calibrated != 0 {
		t.Errorf("main: %+v", m)
	}
	w := res.fn(t, "worker")
	if w.Dimension != DimHistory || w.Discount != 0 || w.History.H != 0 || w.History.C != 4 {
		t.Errorf("worker: %+v %+v", w, w.History)
	}
	if d := res.fn(t, "dispatch_1"); d.Dimension == DimHistory || d.Rank != 1 {
		t.Errorf("dispatch_1 (has a variable): %s rank %d", d.Dimension, d.Rank)
	}
}

func TestNoValues(t *testing.T) {
	fx := newFixture(t)
	r := fx.create(t, "novalues.rec")
	for i := 0; i < 10; i++ {
		r.tick(1, []string{"worker", "dispatch_2", "main"}, 0)
	}
	p := r.done()
	a, _ := New(paperOptions())
	err := a.AddBuggy(p, Run{Path: "bug.rec"})
	var nv *NoValuesError
	if !errors.As(err, &nv) || nv.Samples != 10 || !strings.Contains(err.Error(), "culprit record --values -o bug.rec") {
		t.Fatalf("err = %v", err)
	}
	if _, err := a.Result(); !errors.Is(err, ErrNoRuns) {
		t.Errorf("Result with no runs: %v", err)
	}
}

func TestSchemaMismatch(t *testing.T) {
	mk := func(name string) *profile.Profile {
		fx := newFixture(t)
		r := fx.create(t, "schema.rec")
		v := r.variable(name, "dispatch_1", "long", "loop", false)
		for i := 0; i < 20; i++ {
			r.tick(1, []string{"dispatch_1", "main"}, 0, val{v, 0, int64(i)})
		}
		return r.done()
	}
	a, _ := New(paperOptions())
	if err := a.AddNormal(mk("alpha"), Run{}); err != nil {
		t.Fatal(err)
	}
	if err := a.AddBuggy(mk("beta"), Run{}); err != nil {
		t.Fatal(err)
	}
	_, err := a.Result()
	var se *SchemaError
	if !errors.As(err, &se) || se.Normal != 1 || se.Buggy != 1 {
		t.Fatalf("err = %v", err)
	}
}

func TestJSON(t *testing.T) {
	res := analyze(t, []*profile.Profile{fig6a(t, false)}, []*profile.Profile{fig6a(t, true)})
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Functions []struct {
			Rank       int      `json:"rank"`
			Name       string   `json:"name"`
			Calibrated *float64 `json:"calibrated"`
			Raw        *float64 `json:"raw"`
			Discount   *float64 `json:"discount"`
			Dimension  string   `json:"dimension"`
			Variable   *string  `json:"variable"`
			Pattern    string   `json:"pattern"`
			Lines      []Line   `json:"lines"`
		} `json:"functions"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if len(doc.Functions) != 3 {
		t.Fatalf("doc: %+v", doc)
	}
	for i, f := range doc.Functions {
		if f.Rank != i+1 || f.Calibrated == nil || f.Raw == nil || f.Discount == nil || f.Variable == nil || f.Lines == nil {
			t.Errorf("function %d: %+v", i, f)
		}
		switch f.Dimension {
		case "value", "delta", "duration", "history", "default", "none":
		default:
			t.Errorf("dimension %q", f.Dimension)
		}
		switch f.Pattern {
		case "missing-constraint", "scalability", "wrong-constraint", "none":
		default:
			t.Errorf("pattern %q", f.Pattern)
		}
	}
	if f := doc.Functions[0]; f.Name != "dispatch_2" || f.Pattern != "wrong-constraint" || *f.Variable != "available_mem" || len(f.Lines) == 0 {
		t.Errorf("first: %+v", f)
	}
}

// Odd input must not panic: values without frames, missing, NaN and
// infinite floats, huge unsigned values, deep frames, values of
// expressions, a profile built by hand.
func TestOddInput(t *testing.T) {
	fx := newFixture(t)
	mk := func() *profile.Profile {
		r := fx.create(t, "odd.rec")
		f := r.variable("f", "dispatch_1", "double", "loop", false)
		u := r.variable("u", "#global", "unsigned long", "cond", false)
		r.id++
		r.write(&recording.ValueSource{ID: r.id, Class: recording.SourceExpression, Name: "a+b", Function: "worker"})
		expr := r.id
		for i := 0; i < 50; i++ {
			r.tick(1, []string{"dispatch_1", "main"}, 0, val{u, 0, -1}, val{u, 9, -2}, val{expr, 0, 3})
			bits := []uint64{math.Float64bits(math.NaN()), math.Float64bits(math.Inf(1)), math.Float64bits(math.Inf(-1)), math.Float64bits(float64(i))}[i%4]
			r.write(&recording.Value{Time: r.now, PID: r.pid, TID: 1, Source: f, Type: recording.ValueFloat, PC: 0, Bits: bits})
			r.write(&recording.Value{Time: r.now, PID: r.pid, TID: 1, Source: f, Type: recording.ValueMissing})
			r.write(&recording.Value{Time: r.now + 5, PID: 99, TID: 99, Source: u, Depth: 255, PC: 0xffffffff81000000, Bits: 1})
		}
		return r.done()
	}
	res := analyze(t, []*profile.Profile{mk()}, []*profile.Profile{mk()})
	if len(res.Functions) == 0 {
		t.Fatal("no functions")
	}
	// A profile made by hand: values with no symbolized PC, sources out of
	// range, no samples.
	p := &profile.Profile{
		ValueSources: []recording.ValueSource{{Class: recording.SourceVariable, Name: "x", Function: "f"}},
		Values: []profile.Value{{Time: 1, TID: 1, Source: 0, Bits: 1}, {Time: 2, TID: 1, Source: 5, Bits: 2},
			{Time: 3, TID: 1, Source: -1}, {Time: 4, TID: 1, Source: 0, Bits: 3}},
	}
	a, _ := New(paperOptions())
	if err := a.AddNormal(p, Run{}); err != nil {
		t.Fatal(err)
	}
	if err := a.AddBuggy(p, Run{}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Result(); err != nil {
		t.Fatal(err)
	}
}

func TestOptions(t *testing.T) {
	for _, o := range []Options{{Alpha: 0, DefaultDiscount: 0.8}, {Alpha: 0.05, DefaultDiscount: 1.5}, {Alpha: 0.05, DefaultDiscount: 0.8, ValidDiscount: -1}} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
	// DefaultDiscount and ValidDiscount are used as given.
	o := paperOptions()
	o.DefaultDiscount, o.ValidDiscount = 0.5, 0.6
	d := o.compareDim(DimValue, []float64{1, 2, 3, 4, 5, 6}, []float64{1, 2, 3, 4, 5, 6}, true)
	if d.Discount != 0.5 || d.Rejected {
		t.Errorf("same samples: %+v", d)
	}
	x := []float64{1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}
	y := []float64{1, 1, 1, 2, 2, 2, 3, 3, 3, 9, 9, 9, 9, 9, 9}
	d = o.compareDim(DimValue, x, y, true)
	if !d.Rejected || d.Discount != 0 { // 1 − H ≈ 0.4 < 0.6
		t.Errorf("shifted samples: %+v", d)
	}
}

func TestThin(t *testing.T) {
	xs := make([]float64, 10000)
	for i := range xs {
		xs[i] = float64((i * 7919) % 10000)
	}
	th := thin(xs, 100)
	if len(th) != 100 || th[0] != 50 || th[99] != 9950 {
		t.Errorf("thin: %v … %v", th[0], th[len(th)-1])
	}
	if got := thin(xs[:10], 100); len(got) != 10 {
		t.Errorf("short input thinned")
	}
	if m := median([]float64{5, 1, 4, 2, 3}); m != 3 {
		t.Errorf("median %g", m)
	}
	if m := median([]float64{4, 1, 3, 2}); m != 2 {
		t.Errorf("lower median %g", m)
	}
}

// A global holding NaN in every sample of both runs (redis's R_Nan) is
// constant, not anomalous: NaN ≠ NaN must not make every sample a value of
// its own and the two runs disjoint.
func TestNaNConstant(t *testing.T) {
	mk := func(buggy bool) *profile.Profile {
		fx := newFixture(t)
		r := fx.create(t, "nan.rec")
		g := r.variable("R_Nan", "#global", "double", "none", false)
		n := r.variable("n", "worker", "long", "loop", false)
		for i := 0; i < 300; i++ {
			r.tick(1, []string{"worker", "main"}, 0, val{n, 0, int64(i % 7)})
			r.write(&recording.Value{Time: r.now, PID: r.pid, TID: 1, Source: g, Depth: 0,
				Type: recording.ValueFloat, PC: fx.pc("worker", 4), Bits: math.Float64bits(math.NaN())})
		}
		return r.done()
	}
	res := analyze(t, []*profile.Profile{mk(false)}, []*profile.Profile{mk(true)})
	if f := res.fn(t, "worker"); f.Discount != 0.8 {
		t.Errorf("worker: discount %g from %q (%s), want 0.8: a constant NaN is no anomaly", f.Discount, f.Variable, f.Dimension)
	}
}

// TestPause: the pause hook is called before each variable is compared
// and while the runs are read (scan's runs have 25,000 samples and 45,000
// values each, more than pauseEvery), and the analysis gives the result it
// gives without it.
func TestPause(t *testing.T) {
	normal, buggy := scan(t, false), scan(t, true)
	want := analyze(t, []*profile.Profile{normal}, []*profile.Profile{buggy})

	a, err := New(paperOptions())
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	a.SetPause(func() { calls.Add(1) })
	if err := a.AddNormal(normal, Run{Path: "normal0"}); err != nil {
		t.Fatal(err)
	}
	read := calls.Load()
	if err := a.AddBuggy(buggy, Run{Path: "buggy0"}); err != nil {
		t.Fatal(err)
	}
	got, err := a.Result()
	if err != nil {
		t.Fatal(err)
	}
	if read < 2 {
		t.Errorf("pause called %d times while the normal run (45,000 values) was read, want at least 2 (every %d)", read, pauseEvery)
	}
	if n := calls.Load(); n < 2*read+int64(len(want.Variables)) {
		t.Errorf("pause called %d times in all, want at least %d: twice the normal run's %d (the buggy run read, then located) and once per variable (%d)",
			n, 2*read+int64(len(want.Variables)), read, len(want.Variables))
	}
	wj, _ := json.Marshal(want)
	gj, _ := json.Marshal(got)
	if string(wj) != string(gj) {
		t.Errorf("result with a pause differs:\n%s\nwithout:\n%s", gj, wj)
	}
}

// A signed local that holds stack garbage before it is first written
// (values beyond ±2^53 in some samples, its real value in the others) is
// compared on its real values only: the same in both runs, no anomaly.
func TestGarbageIsNoQuantity(t *testing.T) {
	mk := func(buggy bool) *profile.Profile {
		fx := newFixture(t)
		r := fx.create(t, "garbage.rec")
		keys := r.variable("numkeys", "dispatch_1", "long long", "cond,args", false)
		i0 := r.variable("i", "main", "long", "loop|cond", false)
		for k := int64(0); k < 400; k++ {
			v := k % 3
			if !buggy && k%4 == 0 {
				v = -4600000000000000000 + k*1000003 // garbage, before the write
			}
			r.tick(1, []string{"dispatch_1", "main"}, 0, val{keys, 0, v}, val{i0, 1, k % 7})
		}
		return r.done()
	}
	res := analyze(t, []*profile.Profile{mk(false)}, []*profile.Profile{mk(true)})
	if v := res.variable(t, "numkeys"); v.Anomalous {
		t.Errorf("numkeys: anomalous (discount %g, dimension %s): its garbage counted as values", v.Discount, v.Dimension)
	}
}
