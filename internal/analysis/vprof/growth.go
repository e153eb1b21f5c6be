package vprof

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// stackCounts are a run's CPU samples counted over their complete call
// stacks: per function, the samples whose stack holds it (inclusive) and
// those where it is the innermost frame (self); per call edge caller → callee,
// the samples whose stack holds that call. Each function and edge counts once
// per sample (recursion does not count twice).
type stackCounts struct {
	n     float64
	self  map[int32]float64
	own   map[int32]float64 // self, with a system library's or the kernel's samples given to their nearest caller outside them
	incl  map[int32]float64
	edges map[edge]float64
	paths []stackPath // the distinct stacks and their samples
}

type stackPath struct {
	fs []int32 // innermost first
	n  float64
}

type edge struct{ caller, callee int32 }

// heaviest is f's edge with the most samples, to a callee (out) or from a
// caller, leaving out recursion; 0 samples when it has none.
func (c *stackCounts) heaviest(f int32, out bool) (edge, float64) {
	var top edge
	var topN float64
	var topFar int32
	for e, n := range c.edges {
		near, far := e.callee, e.caller
		if out {
			near, far = e.caller, e.callee
		}
		if near != f || far == f {
			continue
		}
		// Of equal weight, the lower function index: the same answer
		// whatever order the map gives.
		if n > topN || (n == topN && n > 0 && far < topFar) {
			top, topN, topFar = e, n, far
		}
	}
	return top, topN
}

func newStackCounts() stackCounts {
	return stackCounts{self: map[int32]float64{}, own: map[int32]float64{}, incl: map[int32]float64{}, edges: map[edge]float64{}}
}

// add counts one sample whose stack holds the functions fs, innermost first;
// system says which functions are the C runtime's or the kernel's (nil:
// none).
func (c *stackCounts) add(fs []int32, system func(int32) bool) { c.addN(fs, 1, system) }

// addN counts w samples of one stack (add).
func (c *stackCounts) addN(fs []int32, w float64, system func(int32) bool) {
	c.n += w
	c.self[fs[0]] += w
	o := fs[0]
	if system != nil {
		for _, f := range fs {
			if !system(f) {
				o = f
				break
			}
		}
	}
	c.own[o] += w
	for i, f := range fs {
		if !slicesContains(fs[:i], f) {
			c.incl[f] += w
		}
		if i == 0 {
			continue
		}
		e := edge{caller: f, callee: fs[i-1]}
		dup := false
		for j := 1; j < i; j++ {
			if fs[j] == f && fs[j-1] == fs[i-1] {
				dup = true
				break
			}
		}
		if !dup {
			c.edges[e] += w
		}
	}
}

// outermost is the thread a stack ran in, by its outermost function
// outside the C runtime and the kernel (runtime): main, a start routine;
// −1 when every frame is the runtime's.
func outermost(fs []int32, runtime func(int32) bool) int32 {
	for i := len(fs) - 1; i >= 0; i-- {
		if runtime == nil || !runtime(fs[i]) {
			return fs[i]
		}
	}
	return -1
}

// sameThreadMix returns n's and b's samples with the threads whose work
// did not change (by their outermost function) compared as what they did,
// not as how long they ran, when another thread's work did change. A
// thread's work changed when one of its functions outside the runtime
// (system), other than the thread's outermost one, took a significantly
// different part of the thread's samples, by at least MixChange of them.
// When some thread's work changed, the unchanged threads are left out of
// both (they ran alongside the change, as long as it took or with more of
// the CPU, and their samples only dilute the changed threads' in the
// shares), unless the changed threads' time per run (perN and perB: the
// time a sample stands for, per run) grew by less than MixChange of the
// whole run's growth. When no thread's work changed, a thread that took
// more of the CPU is the change, and the samples are n's and b's.
func sameThreadMix(n, b *stackCounts, runtime, system func(int32) bool, perN, perB float64) (stackCounts, stackCounts) {
	type thread struct {
		n, b   float64
		nc, bc stackCounts
	}
	ts := map[int32]*thread{}
	get := func(t int32) *thread {
		if ts[t] == nil {
			ts[t] = &thread{nc: newStackCounts(), bc: newStackCounts()}
		}
		return ts[t]
	}
	for _, p := range n.paths {
		t := get(outermost(p.fs, runtime))
		t.n += p.n
		t.nc.addN(p.fs, p.n, system)
	}
	for _, p := range b.paths {
		t := get(outermost(p.fs, runtime))
		t.b += p.n
		t.bc.addN(p.fs, p.n, system)
	}
	changed := map[int32]bool{}
	for id, t := range ts {
		if t.n == 0 || t.b == 0 {
			// A thread only one kind of run has is a change when it took
			// a significant part, by at least MixChange, of that run's
			// samples.
			if s := share(t.n, n.n, t.b, b.n); math.Abs(s.Change) > ThreadErrs*s.Err && math.Abs(s.Change) >= MixChange {
				changed[id] = true
			}
			continue
		}
		for f := range t.bc.incl {
			if f == id || system(f) {
				continue
			}
			s := share(t.nc.incl[f], t.n, t.bc.incl[f], t.b)
			if math.Abs(s.Change) > ThreadErrs*s.Err && math.Abs(s.Change) >= MixChange {
				changed[id] = true
				break
			}
			// A part that held most of its thread cannot grow by
			// MixChange: its growth shows as the rest of the thread
			// shrinking to half or less.
			if s.Normal >= SaturatedShare && s.Change > ThreadErrs*s.Err && 1-s.Buggy <= (1-s.Normal)/2 {
				changed[id] = true
				break
			}
		}
		if changed[id] {
			continue
		}
		for f := range t.nc.incl {
			if f == id || system(f) || t.bc.incl[f] > 0 {
				continue
			}
			if s := share(t.nc.incl[f], t.n, 0, t.b); s.Normal >= MixChange && -s.Change > ThreadErrs*s.Err {
				changed[id] = true
				break
			}
		}
	}
	// A change of mix whose threads' time per run grew by less than
	// MixChange of the whole run's growth does not explain that growth:
	// the unchanged threads did the run's extra time themselves, not
	// alongside it, and stay in (limit_missing: the main thread, 1% of
	// the samples, parsed other requests, while the workers ran the same
	// scan three times as long).
	if len(changed) > 0 && perN > 0 && perB > 0 {
		var cn, cb float64
		for id := range changed {
			cn += ts[id].n
			cb += ts[id].b
		}
		if whole := b.n*perB - n.n*perN; whole > 0 && cb*perB-cn*perN < MixChange*whole {
			changed = nil
		}
	}
	outN, outB := newStackCounts(), newStackCounts()
	if len(changed) == 0 || n.n == 0 || b.n == 0 {
		outN.merge(*n)
		outB.merge(*b)
		return outN, outB
	}
	// Left out: the unchanged threads.
	for _, c := range []struct{ in, out *stackCounts }{{n, &outN}, {b, &outB}} {
		for _, p := range c.in.paths {
			if changed[outermost(p.fs, runtime)] {
				c.out.addN(p.fs, p.n, system)
				c.out.paths = append(c.out.paths, p)
			}
		}
	}
	if outN.n == 0 || outB.n == 0 {
		outN, outB = newStackCounts(), newStackCounts()
		outN.merge(*n)
		outB.merge(*b)
	}
	return outN, outB
}

// ThreadErrs is how many standard errors a change of a thread's mix must
// pass: every function of every thread is tested, so at two a thread
// with a few hundred samples shows a change by chance (docs/vprof.md,
// "Threads that only ran longer").
const ThreadErrs = 3

// MixChange is the part of a thread's samples by which one of its functions
// must change for the thread's work to count as changed (1/20).
const MixChange = 0.05

func slicesContains(xs []int32, x int32) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func (c *stackCounts) merge(o stackCounts) {
	c.n += o.n
	for f, x := range o.self {
		c.self[f] += x
	}
	for f, x := range o.own {
		c.own[f] += x
	}
	for f, x := range o.incl {
		c.incl[f] += x
	}
	for e, x := range o.edges {
		c.edges[e] += x
	}
	c.paths = append(c.paths, o.paths...)
}

// threadRoots are the functions that are the outermost frame outside the
// C runtime and the kernel (runtime) of every stack they are on: main and
// threads' start routines.
func (c *stackCounts) threadRoots(runtime func(int32) bool) map[int32]bool {
	roots, inner := map[int32]bool{}, map[int32]bool{}
	for _, p := range c.paths {
		outer := -1
		for i := len(p.fs) - 1; i >= 0; i-- {
			if runtime == nil || !runtime(p.fs[i]) {
				outer = i
				break
			}
		}
		if outer < 0 {
			continue
		}
		roots[p.fs[outer]] = true
		for _, f := range p.fs[:outer] {
			if f != p.fs[outer] {
				inner[f] = true
			}
		}
	}
	for f := range inner {
		delete(roots, f)
	}
	return roots
}

// under counts, for each function in tops, the samples in which each
// function appears below it (called from it, directly or not).
func (c *stackCounts) under(tops map[int32]bool) map[int32]map[int32]float64 {
	out := map[int32]map[int32]float64{}
	for f := range tops {
		out[f] = map[int32]float64{}
	}
	for _, p := range c.paths {
		for i := len(p.fs) - 1; i > 0; i-- {
			f := p.fs[i]
			if !tops[f] || slicesContains(p.fs[i+1:], f) {
				continue
			}
			seen := map[int32]bool{}
			for _, g := range p.fs[:i] {
				if g != f && !seen[g] {
					seen[g] = true
					out[f][g] += p.n
				}
			}
		}
	}
	return out
}

// Share is a function's share of the CPU samples in the normal and the
// buggy runs (pooled over the runs of each kind), the change, and its
// standard error (binomial): a change beyond two errors is significant, as
// in culprit diff.
type Share struct {
	Normal float64 `json:"normal"`
	Buggy  float64 `json:"buggy"`
	Change float64 `json:"change"`
	Err    float64 `json:"err"`
	// Time, when the share is saturated (growth.of): the function's time
	// per buggy run over its time per normal run; Change is then the
	// growth of its time as a part of the buggy run's time.
	Time float64 `json:"time,omitempty"`
}

// Grew says whether the share grew by more than two standard errors.
func (s Share) Grew() bool { return s.Change > 2*s.Err && s.Change > 0 }

// fell says whether a share shrank by more than two standard errors.
func fell(s Share) bool { return -s.Change > 2*s.Err && s.Change < 0 }

// SaturatedShare is the part of the normal runs' samples a function must
// hold for its share to be saturated: the rest of the run, from which any
// growth of its share must come, is smaller than the function itself
// (docs/vprof.md, "A share that cannot grow").
const SaturatedShare = 0.5

// growth measures a function's samples against all the samples
// compared, nN normal and nB buggy, pooled over the runs of each kind;
// rho is the time per normal run of those samples over the time per buggy
// run (0: unknown).
type growth struct {
	nN, nB, rho float64
	// whole says which functions hold the whole of their thread's time
	// (a thread's outermost function, the C runtime's and the kernel's
	// frames above it): their time grows with any longer run, and their
	// shares are never measured by time.
	whole func(int32) bool
}

// of is the share of normal and buggy samples of function f, and its
// change. A share that holds at least SaturatedShare of the normal
// samples, in a buggy run whose time per run is longer, is measured by
// time instead when that says it grew more: its change is the growth of
// its time per run as a part of the buggy run's time (buggy share − normal share × rho),
// significant beyond two errors of the two Poisson counts (docs/vprof.md,
// "A share that cannot grow"). A function that holds 99% of both runs,
// three times as long in the buggy one, grew by two thirds of the buggy
// run, which its share (99% → 99%) cannot show.
func (g growth) of(f int32, normal, buggy float64) Share {
	s := share(normal, g.nN, buggy, g.nB)
	if g.whole != nil && g.whole(f) || normal < SaturatedShare*g.nN {
		return s
	}
	t := g.byTime(normal, buggy)
	if t.Time == 0 || !t.Grew() || s.Grew() && s.Change >= t.Change {
		return s
	}
	return t
}

// byTime is the growth of a part of the runs (normal and buggy samples of
// nN and nB) read by its time per run: its buggy share less its normal one
// scaled by the runs' time ratio, in parts of a buggy run. The plain share
// (Time 0) when the ratio is unknown or says the buggy runs were not longer.
func (g growth) byTime(normal, buggy float64) Share {
	s := share(normal, g.nN, buggy, g.nB)
	if g.nN == 0 || g.nB == 0 || g.rho <= 0 || g.rho >= 1 {
		return s
	}
	t := s
	t.Change = s.Buggy - s.Normal*g.rho
	t.Err = math.Sqrt(buggy/(g.nB*g.nB) + normal*g.rho*g.rho/(g.nN*g.nN))
	if normal > 0 {
		t.Time = (buggy / g.nB) / (normal / g.nN * g.rho)
	}
	return t
}

// timeGrowth is a function's time per buggy run over its time per normal
// run, from its samples (normal and buggy of nN and nB) and the runs'
// time per sample; 0 when unknown.
func (g growth) timeGrowth(normal, buggy float64) float64 {
	if normal <= 0 || g.nN == 0 || g.nB == 0 || g.rho <= 0 {
		return 0
	}
	return (buggy / g.nB) / (normal / g.nN * g.rho)
}

// timePerSample is the CPU time a sample of runs stands for, per run: a
// count of their samples times it is that count's time per run (0 when
// the runs hold no CPU time or no sample).
func timePerSample(runs []*runData) float64 {
	var cpu, samples float64
	for _, r := range runs {
		cpu += r.info.CPU
		samples += r.stacks.n
	}
	if samples == 0 || len(runs) == 0 {
		return 0
	}
	return cpu / samples / float64(len(runs))
}

// timeRatio is the time per normal run of the samples compared (nN of
// them) over the time per buggy run (nB): each kind's CPU time per sample
// times the samples, over the number of runs. 0 when unknown.
func timeRatio(normal, buggy []*runData, nN, nB float64) float64 {
	tn, tb := timePerSample(normal)*nN, timePerSample(buggy)*nB
	if tn <= 0 || tb <= 0 {
		return 0
	}
	return tn / tb
}

func share(normal, nN, buggy, nB float64) Share {
	var s Share
	if nN > 0 {
		s.Normal = normal / nN
	}
	if nB > 0 {
		s.Buggy = buggy / nB
	}
	s.Change = s.Buggy - s.Normal
	if nN == 0 || nB == 0 {
		return s
	}
	// The two-proportion test's error: under the hypothesis of no change
	// both runs share one proportion, estimated from both.
	p := (normal + buggy) / (nN + nB)
	s.Err = math.Sqrt(p * (1 - p) * (1/nN + 1/nB))
	return s
}

// Evidence says why the differential method holds a function responsible.
type Evidence string

const (
	// EvidenceVariable: one of its variables behaves differently in a way
	// its slowdown does not explain (docs/vprof.md, "The differential
	// method").
	EvidenceVariable Evidence = "variable"
	// EvidenceOwnTime: its own code (self time) took a larger share.
	EvidenceOwnTime Evidence = "own-time"
	// EvidenceInput: its code reads a global that holds another value in
	// the buggy runs (an input that differs): it decides on that input.
	EvidenceInput Evidence = "input"
	// EvidenceNewPath: it never ran in the normal runs (no normal sample
	// has it on its stack) and took a significant share of the buggy runs:
	// the buggy input took a path the normal one never did.
	EvidenceNewPath Evidence = "new-path"
	// EvidenceDecides: it is the predicate whose answer decides every
	// call of a function that was called more often (Decides names it).
	EvidenceDecides Evidence = "decides"
	// EvidenceThreshold: the call that carries all of its growth is
	// guarded by an ordered comparison of its own made in a block that
	// reads a configuration global (one value in every run of both
	// kinds): a threshold set by the configuration let the work through
	// (Config names the global).
	EvidenceThreshold Evidence = "threshold"
	// EvidenceRepair: it decides, on a threshold on an object's members,
	// to rewrite the state that bounds a loop whose work per call grew,
	// and that rewrite did not run more often (Repair names them).
	EvidenceRepair Evidence = "repair"
	// EvidenceRange: two of its pointers delimit a range longer than
	// normally, and no function above it held such a range (Range).
	EvidenceRange Evidence = "range"
	// EvidenceRepeats: a trace shows it calling a function again, in the
	// same request and with the same arguments, after that call was
	// already made (Repeats names it): the work done twice is its growth.
	EvidenceRepeats Evidence = "repeats"
	// EvidenceNone: none of these; it only encloses the growth, if any.
	EvidenceNone Evidence = "none"
)

// Input is a variable that holds one value for the whole of each run and
// another in the buggy runs: a difference of the inputs (a configuration
// global, a parameter passed down), reported once rather than as an anomaly
// of every function that reads it.
type Input struct {
	Name     string  `json:"name"`
	Function string  `json:"function"` // declaring function, "#global" for globals
	Normal   float64 `json:"normal"`
	Buggy    float64 `json:"buggy"`
}

// varClass is what the differential method makes of a variable's anomaly.
type varClass uint8

const (
	classNormal  varClass = iota // no dimension told the runs apart
	classAnomaly                 // evidence
	classInput                   // run-constant: an input that differs
	classNewPath                 // sampled in the buggy runs only
	classSlower                  // only its progress slowed
)

// runConstant reports whether v holds one value in all normal runs and
// another one in all buggy runs, and the two values. A run may start with
// other values, in at most SettleShare of its samples: the program sets
// its configuration after it starts, and the samples taken before that
// (loading, parsing the command line) hold the initial value (xz's
// options, 0 in the first sample of a run of 96).
func runConstant(v *variable) (normal, buggy float64, ok bool) {
	if v.src.Pointer || v.buggy.values.len() == 0 {
		return 0, 0, false
	}
	buggy, ok = settled(&v.buggy)
	if !ok {
		return 0, 0, false
	}
	seen := false
	for _, s := range v.normal {
		if s == nil || s.values.len() == 0 {
			continue
		}
		x, ok := settled(s)
		if !ok || seen && x != normal {
			return 0, 0, false
		}
		normal, seen = x, true
	}
	return normal, buggy, seen && normal != buggy
}

// passedInput says whether a local is a formal parameter of its function
// that holds, in each run, the value a global holds in that run, both
// constant in every run and different between the two kinds: its caller
// passed that configuration on, and the parameter is the input, not a
// decision of the function's (docs/vprof.md, "Run-constant values are inputs").
func (a *Analyzer) passedInput(v *variable) bool {
	if v.src.Global || a.paramOf == nil || v.owner < 0 || int(v.owner) >= len(a.funcs) {
		return false
	}
	n, b, ok := runConstant(v)
	fn := a.funcs[v.owner]
	if !ok || !fn.atOK {
		return false
	}
	if param, known := a.paramOf(fn.object, fn.at, v.src.Name); !known || !param {
		return false
	}
	for _, g := range a.vars {
		if !g.src.Global {
			continue
		}
		if gn, gb, ok := runConstant(g); ok && gn == n && gb == b {
			return true
		}
	}
	return false
}

// SettleShare is the part of a run's samples of a run-constant variable
// that may come before it takes its value.
const SettleShare = 1.0 / 20

// settled returns the one value every run of s ends with, when each holds
// it from at most SettleShare of its samples on.
func settled(s *series) (float64, bool) {
	n := s.values.len()
	starts := s.starts
	if len(starts) == 0 {
		starts = []int{0}
	}
	var x float64
	for i, from := range starts {
		to := n
		if i+1 < len(starts) {
			to = starts[i+1]
		}
		if to <= from {
			continue
		}
		last := s.values.at(to - 1)
		if i > 0 && last != x {
			return 0, false
		}
		x = last
		j := to - 1
		for j >= from && s.values.at(j) == x {
			j--
		}
		// Values from..j come before the run settled.
		if float64(j+1-from) > SettleShare*float64(to-from) {
			return 0, false
		}
	}
	return x, true
}

// classify decides what a variable's comparison is evidence of, and returns
// the dimension to report (its index in c.dims). See docs/vprof.md.
func (a *Analyzer) classify(v *variable, c comparison) (varClass, int) {
	d := c.dims[c.chosen]
	if !d.Rejected {
		return classNormal, c.chosen
	}
	if d.unsampled() {
		return classNewPath, c.chosen
	}
	if identity(v.src.Type) {
		// It names which file, device, process or user, not how much:
		// it differs between any two runs, whatever their inputs.
		return classNormal, c.chosen
	}
	if clockReading(v) {
		// A time of the run (a start time, a deadline, a cached "now"):
		// it names when the run happened, and differs between any two
		// runs whatever their inputs.
		return classNormal, c.chosen
	}
	if constant(v) {
		// One value in every sample of both kinds of run: its durations are
		// the lengths of the runs, nothing the program did.
		return classNormal, c.chosen
	}
	t := parseTags(v.src.Tags)
	if _, _, ok := runConstant(v); ok && (v.src.Global || !t.cond || a.passedInput(v)) {
		return classInput, c.chosen
	}
	if t.args && !t.cond && !t.loop {
		// Only passed on: the values are the input's, flowing through to
		// the callee that decides on them, not a decision of this
		// function's (docs/vprof.md, "Values only passed on").
		return classNormal, c.chosen
	}
	if t.cond && !t.loop && a.sameBranches(v) {
		// Values beyond the normal ones that take the branches the normal
		// ones took: its function decided nothing differently on them
		// (docs/vprof.md, "Values that decide nothing new").
		return classNormal, c.chosen
	}
	// A delta anomaly that only says the variable advances more slowly
	// between samples is what any loop enclosing a slowdown shows: leave it
	// out and take the variable's next strongest dimension.
	best := -1
	for i, dim := range c.dims {
		if !dim.Rejected {
			continue
		}
		if dim.Dimension == DimDelta && slower(v) {
			continue
		}
		if dim.Dimension == DimDuration && (!lastsLonger(v) || !parseTags(v.src.Tags).loop) {
			// Values that change as often or more often say nothing about
			// a slowdown; a variable that does not step in a loop is
			// constant during a call, and lasting longer says only that
			// the call took longer. A loop variable lasting longer is a
			// loop lingering on one iteration (a missing constraint).
			continue
		}
		if best < 0 || strongerDim(dim, c.dims[best]) {
			best = i
		}
	}
	if best < 0 {
		return classSlower, c.chosen
	}
	return classAnomaly, best
}

// sameBranches reports whether a local's buggy values lie beyond its
// normal range (their median outside it) while taking, at every
// conditional use of it in its function's code, the directions its normal
// values took: every buggy value's outcomes are those of some normal
// value. Only comparisons with constants can be evaluated; a variable with
// any other use is not one (BranchFunc).
func (a *Analyzer) sameBranches(v *variable) bool {
	b, ok := a.branches(v)
	if !ok {
		return false
	}
	bs := make([]float64, 0, v.buggy.values.len())
	for i, n := 0, v.buggy.values.len(); i < n; i++ {
		x := v.buggy.values.at(i)
		o, ok := b.outcome(x)
		if !ok || !b.seen[o] {
			return false
		}
		bs = append(bs, x)
	}
	m := median(bs)
	return m < b.lo || m > b.hi
}

// newBranch reports whether a local's buggy median takes, at the
// conditional uses of it in its function's code, directions no normal
// value took: its function decided differently on it (docs/vprof.md, "A
// different mix of the usual values": a value below the normal range that
// decides something new is not merely less work). False when any use
// cannot be evaluated (BranchFunc).
func (a *Analyzer) newBranch(v *variable) bool {
	b, ok := a.branches(v)
	if !ok {
		return false
	}
	m := median(v.buggy.values.floats())
	o, ok := b.outcome(m)
	if !ok {
		// The median of an even count may fall between two values:
		// take the nearest sampled one below it.
		best := math.Inf(-1)
		for i, n := 0, v.buggy.values.len(); i < n; i++ {
			if x := v.buggy.values.at(i); x <= m && x > best {
				best = x
			}
		}
		if o, ok = b.outcome(best); !ok {
			return false
		}
	}
	return !b.seen[o]
}

// branchView is how a local's function decides on its values: the
// outcome (one direction bit per conditional use) of a value, and the
// outcomes and range of its normal values.
type branchView struct {
	outcome func(x float64) (uint64, bool)
	seen    map[uint64]bool // outcomes of the normal values
	lo, hi  float64         // the normal range
}

// branches evaluates a local's conditional uses at its normal values; ok
// is false when the code is not known, a use cannot be evaluated, or the
// variable has no normal or no buggy value.
func (a *Analyzer) branches(v *variable) (branchView, bool) {
	if a.branchOf == nil || v.src.Global || v.src.Pointer || strings.HasPrefix(v.src.Name, "*") {
		return branchView{}, false
	}
	out, ok := a.branchOf(v.src.Function, v.src.Name, v.src.File, v.src.Line)
	if !ok {
		return branchView{}, false
	}
	integer := func(x float64) (int64, bool) {
		switch {
		case x != math.Trunc(x) || math.IsInf(x, 0) || math.IsNaN(x) || x < -(1<<63):
			return 0, false
		case x >= 1<<63:
			if x >= 1<<64 {
				return 0, false
			}
			return int64(uint64(x)), true
		}
		return int64(x), true
	}
	memo := map[float64]uint64{}
	b := branchView{seen: map[uint64]bool{}, lo: math.Inf(1), hi: math.Inf(-1)}
	b.outcome = func(x float64) (uint64, bool) {
		if o, ok := memo[x]; ok {
			return o, true
		}
		n, ok := integer(x)
		if !ok {
			return 0, false
		}
		o, ok := out(n)
		if !ok {
			return 0, false
		}
		memo[x] = o
		return o, true
	}
	for _, s := range v.normal {
		if s == nil {
			continue
		}
		for i := 0; i < s.values.len(); i++ {
			x := s.values.at(i)
			o, ok := b.outcome(x)
			if !ok {
				return branchView{}, false
			}
			b.seen[o] = true
			b.lo, b.hi = math.Min(b.lo, x), math.Max(b.hi, x)
		}
	}
	if len(b.seen) == 0 || v.buggy.values.len() == 0 {
		return branchView{}, false
	}
	return b, true
}

// identityTypes are the C library's types whose values name an object
// rather than measure anything: an inode, a device, a process, thread,
// user or group, an IPC key, a clock or timer. Two runs get other ones
// whatever their inputs (a file written anew has another inode, a process
// another pid), so their differences are neither inputs nor anomalies
// (docs/vprof.md, "Identities are not inputs").
var identityTypes = map[string]bool{
	"ino_t": true, "ino64_t": true, "dev_t": true, "pid_t": true, "uid_t": true, "gid_t": true,
	"id_t": true, "key_t": true, "clockid_t": true, "timer_t": true, "pthread_t": true,
}

// identity says whether a variable of type typ (as the schema names it:
// DWARF's type name, qualifiers and the C library's leading underscores
// aside) holds an identity (identityTypes).
func identity(typ string) bool {
	for {
		t := strings.TrimPrefix(strings.TrimPrefix(typ, "const "), "volatile ")
		if t == typ {
			break
		}
		typ = t
	}
	return identityTypes[strings.TrimLeft(typ, "_")]
}

// constant says whether every sample of v, normal and buggy, holds one
// value.
func constant(v *variable) bool {
	if v.src.Pointer || v.buggy.values.len() == 0 {
		return false
	}
	x := v.buggy.values.at(0)
	for i, n := 0, v.buggy.values.len(); i < n; i++ {
		if y := v.buggy.values.at(i); y != x {
			return false
		}
	}
	for _, s := range v.normal {
		if s == nil {
			continue
		}
		for i, n := 0, s.values.len(); i < n; i++ {
			if y := s.values.at(i); y != x {
				return false
			}
		}
	}
	return true
}

// lastsLonger says whether v's buggy values last longer (in samples) than
// its normal ones: the median buggy duration is above the normal median.
func lastsLonger(v *variable) bool {
	var nd []float64
	for _, s := range v.normal {
		if s != nil {
			nd = s.durations.appendTo(nd)
		}
	}
	if len(nd) == 0 || v.buggy.durations.len() == 0 {
		return len(nd) == 0
	}
	return median(v.buggy.durations.floats()) > median(nd)
}

// slower says whether the variable's buggy deltas are smaller in magnitude
// than its normal ones (medians of the absolute deltas).
func slower(v *variable) bool {
	var nd []float64
	for _, s := range v.normal {
		if s != nil {
			for i, n := 0, s.deltas.len(); i < n; i++ {
				nd = append(nd, math.Abs(s.deltas.at(i)))
			}
		}
	}
	if len(nd) == 0 || v.buggy.deltas.len() == 0 {
		return false
	}
	bd := make([]float64, v.buggy.deltas.len())
	for i := range bd {
		bd[i] = math.Abs(v.buggy.deltas.at(i))
	}
	return median(bd) < median(nd)
}

// differential ranks the functions by the growth of their inclusive share
// of CPU time between the normal and buggy runs, weighted by the evidence
// that they, not their callers or callees, changed behaviour
// (docs/vprof.md, "The differential method"). It fills in the ranking
// fields of fs (indexed like ids) and res's inputs that differ, and
// returns the predicates whose answer decides calls that grew but that
// no sample holds (docs/vprof.md, "A predicate decides the calls"): the
// caller ranks them too by running it again with them among ids.
func (a *Analyzer) differential(res *Result, ids []int32, fs []FunctionResult, comps []comparison, charged map[int32][]int32) (unseen []int32) {
	o := a.opt
	var nc, bc stackCounts
	nc, bc = newStackCounts(), newStackCounts()
	for _, r := range a.normal {
		nc.merge(r.stacks)
	}
	for _, r := range a.buggy {
		bc.merge(r.stacks)
	}
	// A thread whose work did not change is left out of the comparison
	// when another thread's work changed enough to lengthen the run
	// (docs/vprof.md, "Threads that only ran longer").
	nc, bc = sameThreadMix(&nc, &bc, func(f int32) bool { return a.system(f) || a.funcs[f].name == "_start" }, a.system,
		timePerSample(a.normal), timePerSample(a.buggy))
	// Shares of those samples; a saturated one by its time per run.
	roots := bc.threadRoots(func(f int32) bool {
		// _start is the C runtime's entry code (crt1.o), linked into the
		// executable itself.
		return a.system(f) || a.funcs[f].name == "_start"
	})
	gw := growth{nN: nc.n, nB: bc.n, rho: timeRatio(a.normal, a.buggy, nc.n, bc.n),
		whole: func(f int32) bool { return roots[f] || a.system(f) || a.funcs[f].name == "_start" }}
	// Classes of the variables, and the inputs that differ.
	classes := make([]varClass, len(a.vars))
	var clocks []string
	dims := make([]int, len(a.vars))
	for i, v := range a.vars {
		if v.result == nil {
			continue
		}
		classes[i], dims[i] = a.classify(v, comps[i])
		if classes[i] == classNormal && comps[i].dims[comps[i].chosen].Rejected && clockReading(v) {
			clocks = append(clocks, v.name())
		}
		if classes[i] == classInput {
			n, b, _ := runConstant(v)
			res.Inputs = append(res.Inputs, Input{Name: v.src.Name, Function: v.src.Function, Normal: n, Buggy: b})
		}
	}
	// The comparisons with the dimension each class rests on.
	chosen := make([]comparison, len(comps))
	for i := range comps {
		chosen[i] = comparison{dims: comps[i].dims, chosen: dims[i]}
	}
	var inputs []int
	for i := range a.vars {
		if classes[i] == classInput && a.vars[i].src.Global {
			inputs = append(inputs, i)
		}
	}
	if len(clocks) > 0 {
		sort.Strings(clocks)
		res.Notes = append(res.Notes, fmt.Sprintf("%s read as times of the runs on a clock (%s): they tell when each run happened, not what it was given; not used",
			variables(len(clocks)), list(clocks, 5)))
	}
	sort.Slice(res.Inputs, func(i, j int) bool {
		x, y := res.Inputs[i], res.Inputs[j]
		if x.Function != y.Function {
			return x.Function < y.Function
		}
		return x.Name < y.Name
	})

	idx := map[int32]int{}
	for i, f := range ids {
		idx[f] = i
	}
	// The functions the runs' schemas list a variable of: the others'
	// own time cannot tell a pattern.
	declares := map[string]bool{}
	for _, v := range a.vars {
		if !v.src.Global && v.src.Function != "" && v.src.Function != "#global" {
			declares[v.src.Function] = true
		}
	}
	// Growth, own-time growth and evidence.
	score := make([]float64, len(ids))
	timedShare := make([]Share, len(ids)) // a saturated share measured by time (Time > 0), or zero
	for i, f := range ids {
		fr := &fs[i]
		fr.Share = share(nc.incl[f], nc.n, bc.incl[f], bc.n)
		fr.SelfShare = share(nc.own[f], nc.n, bc.own[f], bc.n)
		fr.Evidence = EvidenceNone
		discount := o.DefaultDiscount
		// The strongest evidence among its variables.
		var anomalous []int32
		for _, vi := range charged[f] {
			if classes[vi] == classAnomaly {
				anomalous = append(anomalous, vi)
			}
		}
		if len(anomalous) > 0 {
			best := a.mostAnomalous(anomalous, chosen)
			// Of variables as anomalous as the strongest, one whose buggy
			// values lie outside its normal range is the more direct
			// evidence than one in another mix of its usual values
			// (docs/vprof.md, "A different mix of the usual values").
			if withinRange(a.localise(a.vars[best], chosen[best], -1)) {
				var outside []int32
				for _, vi := range anomalous {
					if vi == best || chosen[vi].dims[dims[vi]].Discount > chosen[best].dims[dims[best]].Discount {
						continue
					}
					if !withinRange(a.localise(a.vars[vi], chosen[vi], -1)) {
						outside = append(outside, vi)
					}
				}
				if len(outside) > 0 {
					best = a.mostAnomalous(outside, chosen)
				}
			}
			v := a.vars[best]
			c := comparison{dims: comps[best].dims, chosen: dims[best]}
			vr := *v.result
			vr.Dimension = c.dims[c.chosen].Dimension
			vr.Discount = c.dims[c.chosen].Discount
			vr.Anomalous = true
			vr.Anomaly = a.localise(v, c, f)
			if c.dims[c.chosen].Dimension != DimValue {
				// Whether its values, too, went beyond their range
				// (the patterns' rule 1 reads the values).
				for di, d := range c.dims {
					if d.Dimension == DimValue {
						vr.valuesBeyond = beyondNormal(a.localise(v, comparison{dims: c.dims, chosen: di}, f))
					}
				}
			}
			for _, d := range c.dims {
				if d.Dimension == DimDuration && d.Rejected {
					vr.lasting = lastsLonger(v)
				}
			}
			fr.Var = &vr
			fr.Variable = vr.Name
			fr.Dimension = vr.Dimension
			fr.Lines, fr.Blocks = vr.Anomaly.Lines, vr.Anomaly.Blocks
			fr.Evidence = EvidenceVariable
			discount = math.Min(discount, vr.Discount)
		}
		if fr.Evidence == EvidenceNone && fr.Share.Grew() {
			// The inputs that differ its code reads, wherever they were
			// sampled.
			for _, in := range inputs {
				if a.readsInput(f, a.vars[in].src.Name) {
					fr.Evidence, fr.Input = EvidenceInput, a.vars[in].src.Name
					discount = 0
					break
				}
			}
		}
		if fr.Evidence == EvidenceNone && nc.incl[f] < NewPathExpected && fr.Share.Grew() && absentBeyondChance(f, &nc, &bc) {
			fr.Evidence = EvidenceNewPath
			discount = 0
		}
		// A saturated share is read by time; so is its own code's part
		// of that growth (docs/vprof.md, "A share that cannot grow").
		// Not a share that fell significantly: it could show its change,
		// and showed that the growth lies elsewhere.
		if t := gw.of(f, nc.incl[f], bc.incl[f]); t.Time > 0 && !fell(fr.Share) {
			fr.timedWhole, fr.timedOwn = t, gw.byTime(nc.own[f], bc.own[f])
		}
		if ownWork(fr) {
			if fr.Evidence == EvidenceNone {
				fr.Evidence = EvidenceOwnTime
			}
			discount = 0
		}
		fr.Discount = discount
		if !declares[a.funcs[f].name] && !a.funcs[f].kernel {
			fr.Unsampled = UnsampledNotListed
			if !a.funcs[f].lines {
				fr.Unsampled = UnsampledNoDebugInfo
			}
		}
		fr.Pattern = a.pattern(fr)
		if in, p, ok := a.givenBound(f, fr, inputs, &bc); ok {
			fr.Input, fr.Pattern = in, p
		}
		if fr.Evidence != EvidenceNone && fr.Share.Grew() && newRecursion(f, fr, &nc, &bc) {
			// Its growth went into calls of itself the normal input never
			// needed: how its code decides that call says which
			// constraint failed (docs/vprof.md, "A recursion only the
			// buggy runs made").
			fr.NewRecursion = true
			fr.Pattern, _ = a.callPattern(f, a.funcs[f].name)
		}
		if t := gw.of(f, nc.incl[f], bc.incl[f]); t.Time > 0 && (fr.Evidence == EvidenceOwnTime ||
			fr.Evidence == EvidenceVariable && !lingering(fr)) {
			// A saturated share, measured by time: the function's own
			// code or variables say it changed, and its share could not
			// show how much it grew. Not a loop whose values only last
			// longer: an event loop's, whose iterations take longer
			// because what they call does ("Slower progress is an
			// effect"), grows by its callees' time as it encloses them.
			// Every rule below still reads the shares; the time measure
			// sets its score, and its share is shown as measured by time
			// once the ranking is made.
			timedShare[i] = t
		}
		if timedShare[i].Time > 0 {
			score[i] = (1 - discount) * timedShare[i].Change
		} else if fr.Share.Grew() {
			score[i] = (1 - discount) * fr.Share.Change
		}
	}
	// A function without evidence whose growth all goes through one callee
	// only encloses it: it ranks just below that callee.
	// So does a function whose only evidence is a different mix of its
	// usual values (docs/vprof.md, "A different mix of the usual values").
	// A saturated share is read by time here too: a wrapper that holds
	// all of both runs grew with what it encloses.
	through := make([]int, len(ids))
	// encloses gives the callee through which all of function i's growth
	// goes, or -1.
	encloses := func(i int) int {
		f := ids[i]
		whole := gw.of(f, nc.incl[f], bc.incl[f])
		if !whole.Grew() {
			return -1
		}
		top, topN := bc.heaviest(f, true)
		if topN == 0 {
			return -1
		}
		via := gw.of(f, nc.edges[top], topN)
		rest := share(nc.incl[f]-nc.edges[top], nc.n, bc.incl[f]-topN, bc.n)
		if j, ok := idx[top.callee]; ok && via.Grew() && !material(rest, whole) {
			return j
		}
		return -1
	}
	for i := range ids {
		through[i] = -1
		if fs[i].Evidence != EvidenceNone && !mixOnly(&fs[i]) {
			continue
		}
		if j := encloses(i); j >= 0 {
			through[i] = j
			fs[i].Through = fs[j].Name
		}
	}
	// A new route to old work: a function only the buggy runs reached
	// whose heaviest callee the normal runs reached through another
	// caller, which the buggy runs never reached, took that caller's
	// place. Its share grew from nothing because the route changed, not
	// because the work did: it answers for no more than the callee's
	// growth, and ranks just below it, as a function that only encloses
	// it (docs/vprof.md, "A new route to old work"). A route that adds
	// to the old one (whose caller the buggy runs still reach) is new
	// work its own (path_wrong's include cache).
	for i, f := range ids {
		fr := &fs[i]
		if fr.Evidence != EvidenceNewPath || ownWork(fr) {
			continue
		}
		top, topN := bc.heaviest(f, true)
		j, ok := idx[top.callee]
		if topN == 0 || !ok || top.callee == f || a.system(top.callee) || nc.incl[top.callee] < SameWorkSamples {
			continue
		}
		old, oldN := nc.heaviest(top.callee, false)
		if oldN == 0 || old.caller == f || bc.incl[old.caller] > 0 || roots[old.caller] {
			continue
		}
		if !gw.of(top.callee, nc.incl[top.callee], bc.incl[top.callee]).Grew() {
			continue
		}
		through[i], fr.Through = j, fs[j].Name
		fr.Replaces = a.funcs[old.caller].name
	}
	// A function that only encloses the callee carrying its growth, whose
	// call of it a threshold of its own guards, made in a block of its
	// code that reads a configuration global, decided on that threshold
	// to run the work: it answers for the growth, wrong-constraint, and
	// the work under it that only encloses or spends ranks below it
	// (docs/vprof.md, "A threshold on the configuration").
	var configs []int
	for i, v := range a.vars {
		if v.src.Global && v.result != nil && classes[i] == classNormal && constant(v) {
			configs = append(configs, i)
		}
	}
	thresholds := map[int32]bool{}
	for i, f := range ids {
		fr := &fs[i]
		via := through[i]
		if via < 0 || fr.Evidence != EvidenceNone || roots[f] || a.system(f) || len(configs) == 0 {
			continue
		}
		if p, known := a.callPattern(f, fs[via].Name); !known || p != WrongConstraint {
			continue
		}
		for _, vi := range configs {
			if a.thresholdReads(f, fs[via].Name, a.vars[vi].src.Name) {
				fr.Config = a.vars[vi].src.Name
				break
			}
		}
		if fr.Config == "" {
			continue
		}
		// A threshold decides the work it calls, not what that work
		// reaches through a pointer (a command table, a callback): the
		// data chose that. When a material part of its growth lies
		// behind such a call, it decided none of that growth.
		whole := gw.of(f, nc.incl[f], bc.incl[f])
		if part := gw.of(f, a.behindPointer(f, &nc), a.behindPointer(f, &bc)); material(part, whole) {
			fr.Config = ""
			continue
		}
		fr.Evidence, fr.Pattern, fr.Discount = EvidenceThreshold, WrongConstraint, 0
		score[i] = fr.Share.Change
		if t := gw.of(f, nc.incl[f], bc.incl[f]); t.Time > 0 {
			timedShare[i], score[i] = t, t.Change
		}
		through[i], fr.Through = -1, ""
		thresholds[f] = true
	}
	// A function without evidence of its own whose time went, more than
	// normally, into one callee: its own code did the same, but a call it
	// makes took a larger part of its time (docs/vprof.md, "Calls that
	// take longer"). It answers for its growth (discount 0), ranked just
	// below that callee.
	for i, f := range ids {
		fr := &fs[i]
		if fr.Evidence != EvidenceNone || !fr.Share.Grew() {
			continue
		}
		var best edge
		var bestCh Share
		for e, n := range bc.edges {
			if e.caller != f || e.callee == f {
				continue
			}
			if _, ok := idx[e.callee]; !ok {
				continue
			}
			// The callee must not have been most of its time already (a
			// wrapper's part only creeps from 98% to 100%).
			part := share(nc.edges[e], nc.incl[f], n, bc.incl[f])
			better := part.Change > bestCh.Change || (part.Change == bestCh.Change && part.Change > 0 && e.callee < best.callee)
			if part.Grew() && part.Normal <= MaxCallsPart && better {
				best, bestCh = e, part
			}
		}
		if bestCh.Change > 0 {
			fr.Calls = &Calls{Callee: fs[idx[best.callee]].Name, Normal: bestCh.Normal, Buggy: bestCh.Buggy}
			if fr.Pattern == NoPattern {
				fr.Pattern = MissingConstraint
			}
			// It answers for that growth, just below the callee; above it
			// when the callee's only evidence is its own time, which is
			// what more calls of it show (below).
			score[i] = fr.Share.Change
			through[i], fr.Through = idx[best.callee], fs[idx[best.callee]].Name
			// Above it when the callee's only evidence is its own time,
			// unless the caller makes exactly one call of it per call of
			// its own (outside its loops, on no test): then it cannot
			// have called it more, and each call of it took longer.
			if fs[idx[best.callee]].Evidence == EvidenceOwnTime && !a.oncePerCall(f, fs[idx[best.callee]].Name) {
				through[i], fr.Through = -1, ""
			}
		}
	}
	// A function whose own code did its growth while its loops covered the
	// same range as normally was called more often: the caller that called
	// it more decides, and it ranks below that caller (docs/vprof.md, "More
	// calls of the same work"). So does a function whose code does at most
	// a fixed amount of work per call (its loops run to constants): it
	// grew by what it was handed, more calls or items on which it ran to
	// its bound (docs/vprof.md, "Work bounded per call").
	calledMore := make([][]int, len(ids)) // function → the callers it ranks below for this
	newWork := map[int32]int{}            // new work → the caller that decided to run it
	modeOf := func(f int32) *Mode { return a.newMode(f, charged[f], comps) }
	// Whether a function, or a call edge (f its caller), grew: the
	// questions these walks ask of the work, of its callers and of their
	// calls. A saturated share cannot show it, and is read by time
	// (docs/vprof.md, "A share that cannot grow"): a checksum that holds
	// 97% of both runs, in a buggy run twice as long, was called more.
	grew := func(f int32, normal, buggy float64) bool { return gw.of(f, normal, buggy).Grew() }
	// ownGrew is ownWork with saturated shares by time: its own code's
	// growth against its whole growth.
	ownGrew := func(i int) bool {
		f := ids[i]
		return ownWork(&fs[i]) || material(gw.of(f, nc.own[f], bc.own[f]), gw.of(f, nc.incl[f], bc.incl[f]))
	}
	// answers gives the score of caller j, which answers for a growth
	// under it: its own growth, a saturated share by time.
	answers := func(j int) float64 {
		t := gw.of(ids[j], nc.incl[ids[j]], bc.incl[ids[j]])
		if t.Time > 0 {
			timedShare[j] = t
		}
		return t.Change
	}
	below := make([][]int, len(ids)) // function → the functions it ranks below
	// smallerOutside ranks caller j, which calls work i once on every call
	// of its own, below i when j's growth outside those calls is less than
	// i's: its own evidence explains at most that part (docs/vprof.md,
	// "Called once per call").
	smallerOutside := func(j, i int) {
		e := edge{ids[j], ids[i]}
		if rest := gw.of(ids[j], nc.incl[ids[j]]-nc.edges[e], bc.incl[ids[j]]-bc.edges[e]); rest.Change < gw.of(ids[i], nc.incl[ids[i]], bc.incl[ids[i]]).Change {
			below[j] = append(below[j], i)
		}
	}
	for i, g := range ids {
		gr := &fs[i]
		if !grew(g, nc.incl[g], bc.incl[g]) || a.system(g) {
			continue
		}
		// A recursive function makes more calls of itself on its own
		// (redis-keys-glob's matcher backtracking): its caller did not
		// decide them.
		if bc.edges[edge{g, g}] > 0 {
			continue
		}
		// New work: a function whose own code did its growth and that
		// the normal runs (almost) never reached has no normal work per
		// call to compare with; what changed is that it was called. The
		// first caller up its chain of heaviest callers that ran in the
		// normal runs, where the new path leaves the normal ones, decided
		// that when its code calls the path's entry directly on a test
		// of its own (docs/vprof.md, "New work its caller decided"). A
		// call through a pointer, or one the caller makes on every call
		// of its own, was decided elsewhere.
		if nc.incl[g] < SameWorkSamples && ownWork(gr) {
			if h, j, mode, ok := a.newPathEntry(g, idx, roots, &nc, &bc, grew, modeOf, 0); ok {
				c := &fs[j]
				// A new path entered on a test, which then calls g once on
				// every call of its own, down to g, made as many calls of
				// g as the caller made of the entry; a caller with
				// evidence of its own does not answer for calls made
				// once per call below it ("Called once per call"), on a
				// new path as on a normal one: g keeps its growth, its
				// missing check answers (docs/vprof.md, "New work its
				// caller decided").
				if d, ok := a.oncePerCallFrom(g, h, &bc, idx); ok && mode == nil && c.Evidence != EvidenceNone && !mixOnly(c) {
					gr.CalledBy = &CalledBy{Caller: fs[d].Name, New: true}
					gr.Pattern = MissingConstraint
					if fs[d].Evidence != EvidenceNone {
						smallerOutside(d, i)
					}
					continue
				}
				calledMore[i] = append(calledMore[i], j)
				c.CalledMore = &CalledMore{Callee: a.funcs[h].name, New: true}
				c.CalledMore.Mode = mode
				if p, known := a.callPattern(ids[j], a.funcs[h].name); known {
					c.Pattern = p
				}
				// A test that sent the calls down the new path instead of
				// the one the normal runs took chose between two ways to
				// do the same work: the check exists and chose wrong
				// (docs/vprof.md, "A test that chose another way").
				if x, ok := a.displaced(ids[j], h, &nc, &bc, gw); ok {
					c.CalledMore.Instead = a.funcs[x].name
					c.Pattern = WrongConstraint
				}
				c.Discount = 0
				score[j] = math.Max(score[j], answers(j))
				through[j], c.Through = -1, ""
				newWork[h] = j
				continue
			}
		}
		top, topN := bc.heaviest(g, false)
		j, ok := idx[top.caller]
		if topN == 0 || !ok || a.system(top.caller) || roots[top.caller] {
			continue
		}
		c := &fs[j]
		if !grew(top.caller, nc.incl[top.caller], bc.incl[top.caller]) || !grew(top.caller, nc.edges[top], topN) {
			continue
		}
		noneOwn := gr.Evidence == EvidenceOwnTime || gr.Evidence == EvidenceVariable && noMore(gr.Var)
		if !noneOwn && gr.Evidence != EvidenceNone {
			continue
		}
		var loopVar string
		if noneOwn && ownGrew(i) {
			if v, more, ok := a.loopWork(charged[g]); ok && !more {
				loopVar = v
			}
		}
		bounded := false
		if loopVar == "" {
			if bounded = a.bounded(g); !bounded {
				continue
			}
		}
		// A caller without evidence of its own whose code calls g
		// exactly once on every call of its own (outside its loops, on no
		// test) cannot have called it more: it was called more itself.
		// Its heaviest caller, whose calls of it grew and which has no
		// evidence of its own either, answers instead, and so on up; the
		// callers passed over rank below the one that answers with g
		// (docs/vprof.md, "Called once per call").
		callee, first := gr.Name, c.Name
		var passed []int
		// A caller that calls itself made more calls of itself on its own
		// (a recursion that revisits what it walked): it decided the
		// calls, and the walk stops there.
		recursive := func(j int) bool { return bc.edges[edge{ids[j], ids[j]}] > 0 }
		for hops := 0; hops < MaxOnceHops && (c.Evidence == EvidenceNone || mixOnly(c)) && !recursive(j) && a.oncePerCall(ids[j], callee); hops++ {
			up, upN := bc.heaviest(ids[j], false)
			k, ok := idx[up.caller]
			if upN == 0 || !ok || k == j || k == i || a.system(up.caller) || roots[up.caller] || slices.Contains(passed, k) {
				break
			}
			ck := &fs[k]
			if ck.Evidence != EvidenceNone && !mixOnly(ck) || !grew(up.caller, nc.incl[up.caller], bc.incl[up.caller]) || !grew(up.caller, nc.edges[up], upN) {
				break
			}
			passed = append(passed, j)
			callee, j, c, top = c.Name, k, ck, up
		}
		// The walk ended at a caller that again calls once on every call
		// of its own: no caller up the chain decided the calls (the next
		// one up has evidence of its own, is a thread's outermost
		// function, or its calls did not grow). The growth stays with g:
		// it did the same work per call on calls nobody chose to make
		// more of, so the check that skips its work is its own, and it
		// is missing (docs/vprof.md, "Called once per call"). Not when
		// a predicate's answer decides every entry into that caller: the
		// predicate decided the calls, and answers for them through it
		// ("A predicate decides the calls").
		if _, decided := a.decider(ids[j], callee); a.oncePerCall(ids[j], callee) && !decided && !recursive(j) {
			gr.CalledBy = &CalledBy{Caller: first, Variable: loopVar, Bounded: bounded}
			gr.Pattern = MissingConstraint
			// A direct caller with evidence of its own was called
			// more, as g was, and calls g on no test of its own: its
			// evidence explains at most its growth outside those
			// calls, and when that is less than g's, g's missing check
			// answers for the larger part (docs/vprof.md, "Called once
			// per call").
			if len(passed) == 0 && c.Evidence != EvidenceNone {
				smallerOutside(j, i)
			}
			continue
		}
		work := ""
		if callee != gr.Name {
			work = gr.Name
		}
		calledMore[i] = append(calledMore[i], j)
		for _, p := range passed {
			calledMore[p] = append(calledMore[p], j)
		}
		if c.Evidence == EvidenceNone || mixOnly(c) {
			// It answers for its growth, above the callee it called more.
			c.CalledMore = &CalledMore{Callee: callee, Work: work, Variable: loopVar, Bounded: bounded}
			if c.Pattern == NoPattern {
				c.Pattern, _ = a.callPattern(top.caller, callee)
			}
			score[j] = answers(j)
			through[j], c.Through = -1, ""
		}
	}
	// What runs under new work its caller decided is that decision's
	// work: every function whose growth all occurs under it ranks below
	// the caller.
	if len(newWork) > 0 {
		tops := map[int32]bool{}
		for g := range newWork {
			tops[g] = true
		}
		nu, bu := nc.under(tops), bc.under(tops)
		for g, ci := range newWork {
			// The path's entry, and what runs under it alone.
			below[idx[g]] = append(below[idx[g]], ci)
			for h, n := range bu[g] {
				j, ok := idx[h]
				if !ok || j == ci || h == g || !fs[j].Share.Grew() || fs[j].CalledBy != nil {
					continue
				}
				if outside := share(nc.incl[h]-nu[g][h], nc.n, bc.incl[h]-n, bc.n); !outside.Grew() {
					below[j] = append(below[j], ci)
				}
			}
		}
	}
	// A function whose growth went mostly into a callee only the buggy
	// runs reached, a call it did not decide on a test of its own (a call
	// through a pointer, or one it makes on every call), only reached the
	// new path: the path answers for the growth, and the function ranks
	// just below it (docs/vprof.md, "A new path it only reached").
	for i, f := range ids {
		if roots[f] || a.system(f) || fs[i].Evidence == EvidenceNewPath {
			continue
		}
		whole := gw.of(f, nc.incl[f], bc.incl[f])
		top, topN := bc.heaviest(f, true)
		j, ok := idx[top.callee]
		if !whole.Grew() || topN == 0 || !ok || top.callee == f || fs[j].Evidence != EvidenceNewPath {
			continue
		}
		if d, ok := newWork[top.callee]; ok && d == i {
			continue // it decided the path
		}
		if via := gw.of(f, nc.edges[top], topN); via.Grew() && 2*via.Change >= whole.Change {
			below[i] = append(below[i], j)
			fs[i].Reached = fs[j].Name
		}
	}
	// A function only the buggy runs reached did its work in what it
	// called: how it decides to call it says which constraint failed.
	for i, f := range ids {
		fr := &fs[i]
		if fr.Evidence != EvidenceNewPath || fr.Pattern != NoPattern {
			continue
		}
		if top, n := bc.heaviest(f, true); n > 0 {
			if j, ok := idx[top.callee]; ok && !a.system(top.callee) {
				if p, known := a.callPattern(f, fs[j].Name); known {
					fr.Pattern = p
				}
			}
		}
		// Its own code did the work (the C library's and the kernel's
		// time under it included), and it was entered through a
		// pointer (a callback), so no test of its caller decided the
		// calls: work the normal input never needed ran, and the check
		// that would have skipped it is the function's own
		// (docs/vprof.md, "Patterns": a callback's new work).
		if fr.Pattern == NoPattern && ownWork(fr) && !a.system(f) && !roots[f] {
			if up, n := bc.heaviest(f, false); n > 0 && a.throughPointer(up.caller, f) {
				fr.Pattern = MissingConstraint
			}
		}
	}
	// The calls a caller made more often were taken on a predicate's
	// answer: the predicate decided them, and ranks above the caller
	// (docs/vprof.md, "A predicate decides the calls").
	if a.decideOf != nil {
		byName := map[[2]string]int{}
		for i := range fs {
			byName[[2]string{fs[i].Name, fs[i].Object}] = i
		}
		for j, f := range ids {
			c := &fs[j]
			if c.CalledMore == nil || score[j] <= 0 {
				continue
			}
			p, ok := a.decider(f, c.CalledMore.Callee)
			if !ok {
				continue
			}
			pi, ok := byName[[2]string{p, c.Object}]
			if !ok {
				// A predicate cheap enough that no sample holds it: the
				// machine code names it all the same.
				if g := a.fn(p, c.Object); !slicesContains(unseen, g) {
					unseen = append(unseen, g)
				}
				continue
			}
			if pi == j || fs[pi].Evidence != EvidenceNone && fs[pi].Evidence != "" {
				continue
			}
			pr := &fs[pi]
			pr.Evidence, pr.Decides, pr.Pattern = EvidenceDecides, &Decides{Callee: c.Name}, WrongConstraint
			pr.Discount = 0
			score[pi] = math.Max(score[pi], score[j])
			through[pi], pr.Through = -1, ""
			below[j] = append(below[j], pi)
		}
	}
	// A loop whose own code did more of the work, bounded by the state of
	// an object, beside a check that decides to rewrite that state (a
	// rebuild, a resize, a compaction) on a test of the object's members,
	// a rewrite that did not run more often: the check let the state
	// degrade. It answers for the loop's growth and ranks just above it
	// (docs/vprof.md, "A repair that did not run").
	if a.repairOf != nil {
		a.repairs(ids, fs, idx, score, through, below, &unseen)
	}
	// A function that, in the same request, calls a function again with
	// the arguments of an earlier call (a trace of a buggy run shows it)
	// makes that work be done twice: it answers for its growth, and every
	// function whose growth all occurs under the repeated function (the
	// work, its first call and its repeat alike) ranks below it, as does
	// the caller of the first call when its growth all occurs under its
	// calls of that function (its call is the needed one) (docs/vprof.md,
	// "Work done twice").
	for _, r := range a.pooledRepeats() {
		xi, ok := byName(fs, r.Caller)
		if !ok {
			continue
		}
		fi, ok := byName(fs, r.Callee)
		if !ok || fi == xi || roots[ids[xi]] || a.system(ids[xi]) {
			continue
		}
		x := &fs[xi]
		if r.Part() < MinRepeatPart || !x.Share.Grew() || !fs[fi].Share.Grew() || x.Repeats != nil {
			continue
		}
		rr := r
		x.Repeats = &rr
		x.Evidence, x.Pattern, x.Discount = EvidenceRepeats, MissingConstraint, 0
		score[xi] = x.Share.Change
		through[xi], x.Through = -1, ""
		f := ids[fi]
		top := map[int32]bool{f: true}
		nu, bu := nc.under(top), bc.under(top)
		below[fi] = append(below[fi], xi)
		if j, ok := byName(fs, r.First); ok && j != xi && j != fi && fs[j].Share.Grew() && !roots[ids[j]] {
			e := edge{ids[j], f}
			outside := share(nc.incl[ids[j]]-nc.edges[e], nc.n, bc.incl[ids[j]]-bc.edges[e], bc.n)
			if !outside.Grew() {
				below[j] = append(below[j], xi)
			}
		}
		for g, n := range bu[f] {
			j, ok := idx[g]
			if !ok || j == xi || !fs[j].Share.Grew() {
				continue
			}
			outside := share(nc.incl[g]-nu[f][g], nc.n, bc.incl[g]-n, bc.n)
			if !outside.Grew() {
				below[j] = append(below[j], xi)
			}
		}
	}
	// Work that several callers ask for alike, whose every function does
	// the same work on each call (straight-line code, or loops over their
	// normal range), grew because it was asked for more: a caller whose
	// calls of it took a larger part of its time than normally answers
	// for that growth, and the work ranks below it (docs/vprof.md, "Work
	// several callers ask for").
	for wi, w := range ids {
		wr := &fs[wi]
		if !wr.Share.Grew() || a.system(w) || roots[w] {
			continue
		}
		var askers []int
		mixCalls := map[int]*Calls{} // askers whose only evidence is another mix of their usual values
		carriers := 0
		for e, n := range bc.edges {
			if e.callee != w || e.caller == w {
				continue
			}
			part := share(nc.edges[e], nc.n, n, bc.n)
			if !part.Grew() || part.Change < SharedPart*wr.Share.Change {
				continue
			}
			carriers++
			j, ok := idx[e.caller]
			if !ok || roots[e.caller] || a.system(e.caller) {
				continue
			}
			if fs[j].Calls != nil && fs[j].Calls.Callee == wr.Name {
				askers = append(askers, j)
				continue
			}
			// A caller whose only evidence is another mix of its usual
			// values handles other items, as an enclosing function does
			// ("A different mix of the usual values"): its calls of the
			// work taking a larger part of its time make it ask for more
			// as they do one without evidence ("Calls that take longer").
			if fs[j].Calls == nil && mixOnly(&fs[j]) && fs[j].Share.Grew() {
				if c := share(nc.edges[e], nc.incl[e.caller], n, bc.incl[e.caller]); c.Grew() && c.Normal <= MaxCallsPart {
					mixCalls[j] = &Calls{Callee: wr.Name, Normal: c.Normal, Buggy: c.Buggy}
					askers = append(askers, j)
				}
			}
		}
		if carriers < 2 || len(askers) == 0 {
			continue
		}
		top := map[int32]bool{w: true}
		nu, bu := nc.under(top), bc.under(top)
		work := []int{wi}
		for g, n := range bu[w] {
			j, ok := idx[g]
			if !ok || !fs[j].Share.Grew() {
				continue
			}
			if outside := share(nc.incl[g]-nu[w][g], nc.n, bc.incl[g]-n, bc.n); !outside.Grew() {
				work = append(work, j)
			}
		}
		worker, same := -1, true
		for _, j := range work {
			g := ids[j]
			if !ownWork(&fs[j]) || a.system(g) {
				continue
			}
			if _, more, ok := a.loopWork(charged[g]); !a.straight(g) && (!ok || more) {
				same = false
				break
			}
			if worker < 0 || fs[j].SelfShare.Change > fs[worker].SelfShare.Change {
				worker = j
			}
		}
		if !same || worker < 0 {
			continue
		}
		for _, x := range askers {
			xr := &fs[x]
			if xr.Asks != nil {
				continue
			}
			xr.Asks = &Asks{Callee: wr.Name, Callers: carriers, Worker: fs[worker].Name}
			if c := mixCalls[x]; c != nil {
				xr.Calls = c
			}
			score[x] = xr.Share.Change
			through[x], xr.Through = -1, ""
			for _, j := range work {
				if j != x {
					below[j] = append(below[j], x)
				}
			}
		}
	}
	// A function whose loop lingers on single iterations in the buggy runs
	// (a loop variable whose values last longer) spends the growth of what
	// it calls in those iterations: every function whose growth all occurs
	// under it ranks below it. A function that decides on an input that
	// differs spends the growth of the code it runs on that decision: the
	// functions whose only evidence is their own time and whose growth all
	// occurs under it rank below it, unless its own growth is less than
	// half of theirs (main reads every option, and its share cannot grow
	// by what it already holds).
	// A thread's outermost function (main, a start routine) reads the
	// options of everything its thread does: its reading one does not make
	// the work below its decision.
	lingers := map[int32]bool{}
	for i, f := range ids {
		if lingering(&fs[i]) && score[i] > 0 {
			lingers[f] = true
		}
		// A longer loop that calls nothing (a copy of the input's key
		// before the call) spent no callee's growth in its iterations.
		if (fs[i].Evidence == EvidenceInput && !roots[f] || longerLoop(&fs[i]) && a.callsInLoop(f, &bc)) && score[i] > 0 {
			lingers[f] = true
		}
		if fs[i].Calls != nil && through[i] < 0 && score[i] > 0 {
			lingers[f] = true
		}
	}
	if len(lingers) > 0 {
		nu, bu := nc.under(lingers), bc.under(lingers)
		for f := range lingers {
			fi := idx[f]
			for g, n := range bu[f] {
				j, ok := idx[g]
				if !ok || !fs[j].Share.Grew() {
					continue
				}
				// A function whose own growth is less than half of g's
				// cannot have spent g's growth, lingering or deciding: its
				// share, already near the whole run, could not grow by it
				// (an event loop whose loop variable lasts longer while
				// the work it dispatches grows).
				if 2*fs[fi].Share.Change < fs[j].Share.Change || !lingering(&fs[fi]) && !spends(&fs[j]) {
					continue
				}
				outside := share(nc.incl[g]-nu[f][g], nc.n, bc.incl[g]-n, bc.n)
				if !outside.Grew() {
					below[j] = append(below[j], idx[f])
				}
			}
		}
	}
	for i, cs := range calledMore {
		below[i] = append(below[i], cs...)
	}
	// A callee whose loops ran longer per call (a loop variable beyond its
	// normal range) did more work on each call: a caller whose growth all
	// occurs under it and whose evidence is a variable that neither
	// lingers nor steps beyond its range ranks below it (docs/vprof.md,
	// "More work per call stays with the callee").
	longer := map[int32]bool{}
	for i, g := range ids {
		if ownWork(&fs[i]) && fs[i].Share.Grew() && !a.system(g) {
			if _, more, ok := a.loopWork(charged[g]); ok && more {
				longer[g] = true
			}
		}
	}
	callers := map[int32]bool{}
	for i, f := range ids {
		if len(longer) > 0 && fs[i].Evidence == EvidenceVariable && fs[i].Share.Grew() && !longer[f] &&
			!lingering(&fs[i]) && !longerLoop(&fs[i]) {
			callers[f] = true
		}
	}
	if len(callers) > 0 {
		nu, bu := nc.under(callers), bc.under(callers)
		for f := range callers {
			for g := range longer {
				if g == f || bu[f][g] == 0 {
					continue
				}
				outside := share(nc.incl[f]-nu[f][g], nc.n, bc.incl[f]-bu[f][g], bc.n)
				if !outside.Grew() {
					below[idx[f]] = append(below[idx[f]], idx[g])
				}
			}
		}
	}
	// A callee that answers for more calls its own threshold let through
	// made the decision: a caller whose growth occurs under it (what grew
	// elsewhere is not material) and
	// whose evidence is a variable (the items it handles, which differ
	// with the input) ranks below it (docs/vprof.md, "A threshold below
	// decides").
	if len(thresholds) > 0 {
		// It takes the growth of the work it merely encloses (functions
		// that only enclose, spend or show another mix of their usual
		// values), not of a function under it with a claim of its own
		// (a variable beyond its range, an input, more calls it made,
		// work it asks for): it ranks below that one.
		merely := func(j int) bool {
			fj := &fs[j]
			if fj.Asks != nil || fj.CalledMore != nil {
				return false
			}
			return fj.Evidence == EvidenceNone || fj.Evidence == EvidenceOwnTime || mixOnly(fj) ||
				slightExcess(fj, gw.timeGrowth(nc.incl[ids[j]], bc.incl[ids[j]]))
		}
		nu, bu := nc.under(thresholds), bc.under(thresholds)
		claims := map[int32][]int32{} // threshold → the functions under it with claims of their own
		claimed := map[int32]bool{}
		for f := range thresholds {
			for h := range bu[f] {
				if j, ok := idx[h]; ok && fs[j].Share.Grew() && score[j] > 0 && !a.system(h) && !merely(j) {
					claims[f] = append(claims[f], h)
					claimed[h] = true
					below[idx[f]] = append(below[idx[f]], j)
				}
			}
		}
		cu := bc.under(claimed)
		for f := range thresholds {
			for h, n := range bu[f] {
				j, ok := idx[h]
				if !ok || !fs[j].Share.Grew() || score[j] <= 0 || a.system(h) || !merely(j) {
					continue
				}
				// Work that runs mostly under a function with a claim of
				// its own is that function's to explain, not the
				// threshold's.
				mine := true
				for _, c := range claims[f] {
					if 2*cu[c][h] >= bc.incl[h] {
						mine = false
						break
					}
				}
				if !mine {
					continue
				}
				if outside := share(nc.incl[h]-nu[f][h], nc.n, bc.incl[h]-n, bc.n); !outside.Grew() {
					below[j] = append(below[j], idx[f])
				}
			}
		}
	}
	deciders := map[int32]bool{}
	for i, g := range ids {
		if (fs[i].CalledMore != nil || thresholds[g]) && fs[i].Pattern == WrongConstraint && score[i] > 0 {
			deciders[g] = true
		}
	}
	if len(deciders) > 0 {
		enclosing := map[int32]bool{}
		for i, f := range ids {
			if fs[i].Evidence == EvidenceVariable && fs[i].Share.Grew() && !ownWork(&fs[i]) && !deciders[f] {
				enclosing[f] = true
			}
		}
		nu, bu := nc.under(enclosing), bc.under(enclosing)
		for f := range enclosing {
			for g := range deciders {
				if bu[f][g] == 0 {
					continue
				}
				outside := share(nc.incl[f]-nu[f][g], nc.n, bc.incl[f]-bu[f][g], bc.n)
				if !material(outside, fs[idx[f]].Share) {
					below[idx[f]] = append(below[idx[f]], idx[g])
				}
			}
		}
	}
	// A function two of whose pointers delimit a range longer than any
	// in the normal runs, below no function that held such a range, was
	// handed what it was handed normally and made the longer range its
	// callees work on: it answers for its growth, and every function whose
	// growth all occurs under it ranks below it (docs/vprof.md, "A range
	// longer than it was handed").
	if tops := a.grownRanges(idx, fs, roots, &bc, func(f int32) float64 { return gw.timeGrowth(nc.incl[f], bc.incl[f]) }); len(tops) > 0 {
		in := map[int32]bool{}
		for f := range tops {
			in[f] = true
		}
		nu, bu := nc.under(in), bc.under(in)
		for f, rg := range tops {
			fi := idx[f]
			fr := &fs[fi]
			fr.Range = rg
			if fr.Evidence == EvidenceNone {
				fr.Evidence = EvidenceRange
			}
			if fr.Pattern == NoPattern {
				fr.Pattern = MissingConstraint
			}
			fr.Discount = 0
			score[fi] = fr.Share.Change
			through[fi], fr.Through = -1, ""
			keep := below[fi][:0]
			for _, j := range below[fi] {
				if bu[f][ids[j]] == 0 {
					keep = append(keep, j)
				}
			}
			below[fi] = keep
			for g, n := range bu[f] {
				j, ok := idx[g]
				if !ok || j == fi || !fs[j].Share.Grew() {
					continue
				}
				outside := share(nc.incl[g]-nu[f][g], nc.n, bc.incl[g]-n, bc.n)
				if !outside.Grew() {
					below[j] = append(below[j], fi)
				}
			}
		}
	}
	// A thread's outermost function (main, a start routine) whose own code
	// did not do a material part of its growth, and a frame of the C
	// runtime or the kernel, only enclose the work under them: each ranks
	// below every function under it that has a score (docs/vprof.md,
	// "Frames that only enclose").
	enclosers := map[int32]bool{}
	for i, f := range ids {
		if score[i] > 0 && (roots[f] && !ownWork(&fs[i]) || a.system(f)) {
			enclosers[f] = true
		}
	}
	if len(enclosers) > 0 {
		bu := bc.under(enclosers)
		for f := range enclosers {
			for h := range bu[f] {
				if j, ok := idx[h]; ok && score[j] > 0 && !enclosers[h] {
					below[idx[f]] = append(below[idx[f]], j)
					// What it encloses no longer ranks below it.
					below[j] = slices.DeleteFunc(below[j], func(k int) bool { return k == idx[f] })
					if through[j] == idx[f] {
						through[j] = -1
					}
				}
			}
		}
	}
	// A share measured by time never lifts a function above a function
	// under it with evidence of its own that grew by at least half as
	// much as it did: by its share, where that is not saturated and shows
	// the growth, or by time, where it is saturated too. The time of the
	// function above grew by enclosing it (docs/vprof.md, "A share that
	// cannot grow").
	timed := map[int32]bool{}
	for i, f := range ids {
		if timedShare[i].Time > 0 && score[i] > 0 {
			timed[f] = true
		}
	}
	if len(timed) > 0 {
		bu := bc.under(timed)
		for f := range timed {
			for h := range bu[f] {
				j, ok := idx[h]
				carries := ok && (timedShare[j].Time == 0 && 2*fs[j].Share.Change >= fs[idx[f]].Share.Change ||
					timedShare[j].Time > 0 && 2*timedShare[j].Change >= timedShare[idx[f]].Change)
				if carries && score[j] > 0 && fs[j].Share.Grew() &&
					fs[j].Evidence != EvidenceNone && !mixOnly(&fs[j]) && through[j] < 0 &&
					!(spends(&fs[j]) && decidedNew(&fs[idx[f]])) &&
					!a.system(h) && !slices.Contains(below[j], idx[f]) {
					below[idx[f]] = append(below[idx[f]], j)
				}
			}
		}
	}
	// Shown as measured: a saturated share by time (ownWork then reads
	// the share it was measured from).
	for i := range ids {
		if timedShare[i].Time > 0 {
			fs[i].plain, fs[i].Share = fs[i].Share, timedShare[i]
		}
	}
	eff := make([]float64, len(ids))
	state := make([]uint8, len(ids)) // 0 new, 1 in progress, 2 done
	var resolve func(i int) float64
	resolve = func(i int) float64 {
		switch state[i] {
		case 2:
			return eff[i]
		case 1: // a cycle of pass-through functions: stop here
			return score[i]
		}
		state[i] = 1
		e := score[i]
		if j := through[i]; j >= 0 {
			e = math.Min(e, resolve(j)*(1-1e-9))
		}
		for _, j := range below[i] {
			if j != i && state[j] != 1 {
				e = math.Min(e, resolve(j)*(1-1e-9))
			}
		}
		eff[i], state[i] = e, 2
		return e
	}
	for i := range ids {
		fs[i].Score = resolve(i)
	}
	for i := range fs {
		fs[i].Why = why(&fs[i])
	}
	return unseen
}

// oncePerCallFrom says whether every function on the chain of heaviest
// callers in the buggy runs from g up to h calls the next one down exactly
// once on every call of its own; d is g's direct caller on that chain.
func (a *Analyzer) oncePerCallFrom(g, h int32, bc *stackCounts, idx map[int32]int) (d int, ok bool) {
	if g == h {
		return 0, false
	}
	x := g
	for range maxNewPath {
		e, n := bc.heaviest(x, false)
		j, known := idx[e.caller]
		if n == 0 || !known || !a.oncePerCall(e.caller, a.funcs[x].name) {
			return 0, false
		}
		if x == g {
			d = j
		}
		if e.caller == h {
			return d, true
		}
		x = e.caller
	}
	return 0, false
}

// maxNewPath bounds the callers newPathEntry walks up.
const maxNewPath = 16

// newPathEntry follows the heaviest callers in the buggy runs up from
// new work g through the functions that, like it, fewer than
// SameWorkSamples normal samples hold, to the first that ran in the
// normal runs: it returns the entry h of that new path and the index of
// that caller, when the caller's share and its edge to h grew
// significantly (grew: a saturated share by time) and its code calls h
// directly on a test of its own (it decided to take the path). ok is false otherwise, or when the walk
// meets the C runtime, the kernel or a thread's outermost function.
//
// A caller that ran normally, but in a mode no normal call of it asked
// for (newMode: a parameter of its own that the normal samples saw at one
// value, but for fewer than SameWorkSamples, holds another in most buggy
// ones), was told by its own caller to
// do something new: the walk goes on up from it, and mode names that
// parameter. When the walk above it finds no caller that decided, that
// caller answers as before.
func (a *Analyzer) newPathEntry(g int32, idx map[int32]int, roots map[int32]bool, nc, bc *stackCounts, grew func(f int32, normal, buggy float64) bool, modeOf func(int32) *Mode, depth int) (h int32, j int, mode *Mode, ok bool) {
	h = g
	for range maxNewPath {
		e, n := bc.heaviest(h, false)
		c := e.caller
		if n == 0 || c == h || a.system(c) || roots[c] {
			return 0, 0, nil, false
		}
		j, ok := idx[c]
		if !ok {
			return 0, 0, nil, false
		}
		if nc.incl[c] >= SameWorkSamples {
			if !grew(c, nc.incl[c], bc.incl[c]) || !grew(c, nc.edges[e], n) || !a.guardedCall(c, a.funcs[h].name) {
				return 0, 0, nil, false
			}
			if depth < maxNewPath {
				if m := modeOf(c); m != nil {
					if h2, j2, m2, ok := a.newPathEntry(c, idx, roots, nc, bc, grew, modeOf, depth+1); ok {
						if m2 == nil && h2 == c {
							m2 = m
						}
						return h2, j2, m2, true
					}
				}
			}
			return h, j, nil, true
		}
		h = c
	}
	return 0, 0, nil, false
}

// newMode returns the parameter of function f (a local of f that the
// machine code's debugging information names as a formal parameter) that
// at least SameWorkSamples normal samples saw at one value, and fewer
// than SameWorkSamples at any other, and whose values differ
// significantly in the buggy runs (the value test rejects the normal
// distribution), most buggy samples holding another: the normal calls of
// f were made in one mode (the few others are calls the normal runs
// hardly made, as new work is code they hardly ran), and the buggy calls
// in one the normal runs did not ask for. A value that varied normally (a
// size, a key) is data passed on, not a mode. Nil when f has none or the
// code cannot tell.
func (a *Analyzer) newMode(f int32, vars []int32, comps []comparison) *Mode {
	fn := a.funcs[f]
	if a.paramOf == nil || !fn.atOK {
		return nil
	}
	for _, vi := range vars {
		v := a.vars[vi]
		if v.src.Global || v.src.Pointer || v.owner != f || v.normalN < SameWorkSamples || int(vi) >= len(comps) {
			continue
		}
		for _, d := range comps[vi].dims {
			if d.Dimension != DimValue || !d.Rejected {
				continue
			}
			m, ok := v.mode()
			if !ok {
				continue
			}
			if param, known := a.paramOf(fn.object, fn.at, v.src.Name); known && param {
				return m
			}
		}
	}
	return nil
}

// mode returns v's values as a mode (docs/vprof.md, "A call in a new
// mode"): the value at least SameWorkSamples normal samples held, other
// values held by fewer than SameWorkSamples of them, and most buggy
// samples holding another value (beyond the localisation's margin of 5%
// of its magnitude). ok is false otherwise.
func (v *variable) mode() (m *Mode, ok bool) {
	counts := map[float64]int{}
	n := 0
	for _, s := range v.normal {
		if s == nil {
			continue
		}
		for i, k := 0, s.values.len(); i < k; i++ {
			counts[s.values.at(i)]++
			n++
		}
	}
	var m0 float64
	c0 := 0
	for x, c := range counts {
		if c > c0 || c == c0 && x < m0 {
			m0, c0 = x, c
		}
	}
	if c0 < SameWorkSamples || n-c0 >= SameWorkSamples {
		return nil, false
	}
	buggy := v.buggy.values.floats()
	margin := 0.05 * math.Abs(m0)
	other := 0
	for _, x := range buggy {
		if math.Abs(x-m0) > margin {
			other++
		}
	}
	if other*2 <= len(buggy) {
		return nil, false
	}
	return &Mode{Parameter: v.src.Name, Normal: m0, Buggy: median(buggy), Others: n - c0, Samples: n}, true
}

// MaxOnceHops is how many callers that call a function exactly once per
// call of their own the question who called it more passes over.
const MaxOnceHops = 8

// SharedPart is the part of a function's growth each of several callers
// must carry, through its calls of it, for that function to be work they
// ask for alike (docs/vprof.md, "Work several callers ask for").
const SharedPart = 0.25

// newRecursion says whether function f calls itself in the buggy runs
// and in no normal sample, while its normal samples were enough that,
// calling itself as often as in the buggy runs, it would have been seen
// doing so in at least NewPathExpected of them, and its calls of itself
// carry a material part of its growth.
func newRecursion(f int32, fr *FunctionResult, nc, bc *stackCounts) bool {
	e := edge{f, f}
	if nc.edges[e] > 0 || bc.edges[e] == 0 || bc.incl[f] == 0 {
		return false
	}
	if nc.incl[f]*bc.edges[e]/bc.incl[f] < NewPathExpected {
		return false
	}
	return material(share(0, nc.n, bc.edges[e], bc.n), fr.Share)
}

// SameWorkSamples is how many samples in each kind of run a loop variable
// needs for its range to say how much work a call did.
const SameWorkSamples = 10

// loopWork says, from a function's loop variables (locals, not pointers nor
// their targets)
// sampled in both kinds of run, how much work a call did: more when one's
// buggy values went beyond their normal range (beyondNormal on its values:
// its loop ran more iterations), the same when one's stayed within it and
// none went beyond. It returns the variable that says so; ok is false when
// no loop variable has enough samples.
func (a *Analyzer) loopWork(vars []int32) (name string, more, ok bool) {
	for _, vi := range vars {
		n, beyond, known := a.loopRange(a.vars[vi])
		if !known {
			continue
		}
		if beyond {
			return n, true, true
		}
		if !ok {
			name, ok = n, true
		}
	}
	return name, false, ok
}

// loopRange is loopWork for one variable.
func (a *Analyzer) loopRange(v *variable) (name string, beyond, ok bool) {
	// A pointer's target (*p, sampled with the pointer's tags) holds data
	// the loop walks over, not a count of its iterations.
	if v.src.Global || v.src.Pointer || strings.HasPrefix(v.src.Name, "*") || !parseTags(v.src.Tags).loop ||
		v.buggy.values.len() < SameWorkSamples {
		return "", false, false
	}
	var normal []float64
	for _, s := range v.normal {
		if s != nil {
			normal = s.values.appendTo(normal)
		}
	}
	if len(normal) < SameWorkSamples {
		return "", false, false
	}
	an := &Anomaly{Dimension: DimValue, HasNormal: true, NormalMin: normal[0], NormalMax: normal[0],
		NormalMedian: median(normal), BuggyMedian: median(v.buggy.values.floats())}
	for _, x := range normal {
		an.NormalMin, an.NormalMax = math.Min(an.NormalMin, x), math.Max(an.NormalMax, x)
	}
	hi := an.NormalMax + 0.05*math.Abs(an.NormalMax)
	for i, n := 0, v.buggy.values.len(); i < n; i++ {
		x := v.buggy.values.at(i)
		an.Considered++
		if x > hi {
			an.Outside++
		}
	}
	return v.src.Name, beyondNormal(an), true
}

// noMore says whether a variable's anomaly is in its values or steps and
// not above their normal range (beyondNormal): the same items in another
// mix, or smaller ones, but not more work.
func noMore(v *VariableResult) bool {
	if v == nil || v.Anomaly == nil {
		return false
	}
	an := v.Anomaly
	return (an.Dimension == DimValue || an.Dimension == DimDelta) && an.HasNormal && !beyondNormal(an)
}

// NewPathExpected is how many normal samples a function must have been
// expected to have, from its callers' normal samples, for their absence to
// mean it never ran (a Poisson count with that mean is 0 with probability
// below 5%).
const NewPathExpected = 3.0

// absentBeyondChance says whether function f, which fewer than
// NewPathExpected normal samples have on their stack, was absent from the
// normal runs beyond chance: its callers ran in the normal runs often
// enough that, calling it as often as in the buggy runs, it would have
// been expected in so many normal samples that a Poisson count of that
// mean is at most as large as its own with probability at most
// e^−NewPathExpected (for a function no normal sample holds: expected in
// at least NewPathExpected of them). A function without callers (a
// thread's first frame) is new whenever it is absent.
func absentBeyondChance(f int32, nc, bc *stackCounts) bool {
	var expected float64
	callers := false
	for e, n := range bc.edges {
		if e.callee != f || e.caller == f || bc.incl[e.caller] == 0 {
			continue
		}
		callers = true
		expected += nc.incl[e.caller] * n / bc.incl[e.caller]
	}
	if !callers {
		return nc.incl[f] == 0
	}
	// P(X ≤ k) for X ~ Poisson(expected), k the normal samples that hold f.
	k := int(nc.incl[f])
	term, cdf := math.Exp(-expected), 0.0
	for i := 0; i <= k; i++ {
		cdf += term
		term *= expected / float64(i+1)
	}
	return cdf <= math.Exp(-NewPathExpected)*(1+1e-9)
}

// mixOnly says whether a function's only evidence is a variable whose buggy
// values are its normal ones in another mix (the buggy median within the
// normal range, as a value or a step), or smaller values than normally,
// while its own code did not grow: the items it handles differ, as they do
// under any function whose input differs, and the extra time was spent in
// what it called on them; smaller values are less work, not more
// (docs/vprof.md, "A different mix of the usual values").
func mixOnly(fr *FunctionResult) bool {
	v := fr.Var
	if fr.Evidence != EvidenceVariable || v == nil || v.Anomaly == nil || ownWork(fr) {
		return false
	}
	an := v.Anomaly
	return !an.NewBranch && (withinRange(an) || an.Dimension == DimValue && an.HasNormal && an.BuggyMedian < an.NormalMin)
}

// behindPointer counts the samples of c whose stack runs from f (its
// outermost call) to the leaf through a call made through a pointer.
func (a *Analyzer) behindPointer(f int32, c *stackCounts) float64 {
	var n float64
	for _, p := range c.paths {
		top := -1
		for i := len(p.fs) - 1; i >= 0; i-- {
			if p.fs[i] == f {
				top = i
				break
			}
		}
		for k := top; k > 0; k-- {
			if a.throughPointer(p.fs[k], p.fs[k-1]) {
				n += p.n
				break
			}
		}
	}
	return n
}

// decidedNew says whether a function's evidence is a condition variable
// whose buggy values took branches of its code no normal value took.
func decidedNew(fr *FunctionResult) bool {
	v := fr.Var
	return fr.Evidence == EvidenceVariable && v != nil && v.Anomaly != nil && v.Anomaly.NewBranch
}

// withinRange says whether an anomaly's buggy median, as a value or a step,
// lies inside the normal range.
func withinRange(an *Anomaly) bool {
	return an != nil && (an.Dimension == DimValue || an.Dimension == DimDelta) && an.HasNormal &&
		an.BuggyMedian >= an.NormalMin && an.BuggyMedian <= an.NormalMax
}

// spends says whether a function only spends time it is given: its only
// evidence is its own time, its calls of a callee taking longer, or its
// calls of a callee it made more often (a callee doing the same or a
// bounded amount of work per call), which a decision above it may have
// made it make.
func spends(fr *FunctionResult) bool {
	return fr.Evidence == EvidenceOwnTime || fr.Evidence == EvidenceNone && fr.Calls != nil || fr.CalledMore != nil
}

// lingering says whether a function's evidence is a loop variable whose
// values last longer in the buggy runs.
func lingering(fr *FunctionResult) bool {
	v := fr.Var
	return fr.Evidence == EvidenceVariable && v != nil && v.Dimension == DimDuration && parseTags(v.Tags).loop
}

// longerLoop says whether a function's evidence is a loop variable whose
// values or steps went beyond the normal range: its loop ran more
// iterations.
func longerLoop(fr *FunctionResult) bool {
	v := fr.Var
	return fr.Evidence == EvidenceVariable && v != nil && v.Dimension != DimDuration && parseTags(v.Tags).loop && beyondNormal(v.Anomaly)
}

// beyondNormal says whether an anomaly's buggy values lie above the normal
// range: the buggy median beyond the normal maximum, or above the normal
// median with most buggy samples outside the normal range. The maximum of a
// few hundred normal samples is an extreme order statistic that one outlier
// moves; the second form reaches the same conclusion from the bulk of both
// runs, so fewer samples do not flip the pattern. A delta counts below the
// range too: a loop counter that restarts between two samples steps back by
// about its own size, so steps far larger than normal in either direction
// mean more iterations.
func beyondNormal(an *Anomaly) bool {
	if an == nil || !an.HasNormal {
		return false
	}
	bulk := an.Outside*2 > an.Considered
	return an.BuggyMedian > an.NormalMax || an.BuggyMedian > an.NormalMedian && bulk ||
		an.Dimension == DimDelta && an.BuggyMedian < an.NormalMin && bulk
}

// slightExcess says whether a function's only evidence is a value
// beyond its normal range by too little to be what made it grow (t: its
// time per buggy run over its time per normal run, growth.timeGrowth).
// Work that grows with a value at most as its square grew at most r²-fold
// a call when the value's buggy median is r times its normal one; when
// the function's time grew more than r⁴-fold, more calls (at least
// t/r²-fold) explain more of its growth than more work a call could: it
// did about the same work on more calls, as a function whose only
// evidence is its own time (docs/vprof.md, "A value a little beyond its
// range").
func slightExcess(fr *FunctionResult, t float64) bool {
	v := fr.Var
	if fr.Evidence != EvidenceVariable || v == nil || v.Anomaly == nil || t <= 1 {
		return false
	}
	an := v.Anomaly
	if an.Dimension != DimValue || !an.HasNormal || an.NormalMedian <= 0 || an.BuggyMedian <= an.NormalMedian {
		return false
	}
	return tooLittle(an.BuggyMedian, an.NormalMedian, t)
}

// tooLittle says whether a size r = buggy/normal times its normal one is
// too little a change to explain a time that grew t-fold: more than
// r⁴-fold (work at most quadratic in the size did at most r² times the
// work a call, so the calls grew more than the work a call could).
func tooLittle(buggy, normal, t float64) bool {
	r := buggy / normal
	return t > r*r*r*r
}

// material says whether part of a function's growth (its own code's, or
// that outside one call) is significant and at least OwnShare of the growth
// of its inclusive share: less is no part of what it did differently.
func material(part, whole Share) bool {
	return part.Grew() && part.Change >= OwnShare*whole.Change
}

// ownWork says whether a function's own code did a material part of its
// growth: its self share grew significantly, by at least OwnShare of the
// growth of its inclusive share.
func ownWork(fr *FunctionResult) bool {
	if fr.timedWhole.Time > 0 {
		// A saturated share: its own code's growth by time per run
		// against its share's, read the same way.
		return material(fr.timedOwn, fr.timedWhole)
	}
	if fr.Share.Time > 0 {
		// A share measured by time: its own code's part against the
		// share it was read from.
		return material(fr.SelfShare, fr.plain)
	}
	return material(fr.SelfShare, fr.Share)
}

// MaxCallsPart is the largest part of a function's normal time a callee
// may have taken for its growth there to count as the function's calls
// taking longer (3/4).
const MaxCallsPart = 0.75

// OwnShare is the part of a function's growth its own code must account
// for to count as evidence (1/20).
const OwnShare = 0.05

// givenBound is the pattern of a loop that ran to a bound it was given: a
// function whose loop ran more iterations than normally (longerLoop),
// whose own code did not do the extra work, and whose code reads an input
// that differs did as many iterations as that input asked for, and the
// time went into the call it makes in them (its heaviest callee in the
// buggy runs). Whether each item needed that call is its own code's
// decision: the pattern is how that call is decided (callPattern). It
// returns the input read; ok is false when the rule does not apply or the
// machine code does not tell (docs/vprof.md, "A loop run to a bound it was
// given").
func (a *Analyzer) givenBound(f int32, fr *FunctionResult, inputs []int, bc *stackCounts) (input string, p Pattern, ok bool) {
	if !longerLoop(fr) || ownWork(fr) {
		return "", NoPattern, false
	}
	for _, in := range inputs {
		if a.readsInput(f, a.vars[in].src.Name) {
			input = a.vars[in].src.Name
			break
		}
	}
	if input == "" {
		return "", NoPattern, false
	}
	top, n := bc.heaviest(f, true)
	if n == 0 || a.system(top.callee) {
		return "", NoPattern, false
	}
	p, known := a.callPattern(f, a.funcs[top.callee].name)
	return input, p, known
}

// callPattern is the pattern of a function that answers for calls of
// callee it made more often, or for the work of a callee on a path only
// the buggy runs took: wrong-constraint when a threshold of its own
// decides those calls (an ordered comparison guards them: the check
// exists and let them through), missing-constraint otherwise (no check of
// its own, or only tests of equality, presence or a flag, decides them: a
// check that would have skipped them is missing).
func (a *Analyzer) callPattern(f int32, callee string) (p Pattern, known bool) {
	fn := a.funcs[f]
	if a.guardOf == nil || !fn.atOK {
		return MissingConstraint, false
	}
	guarded, ordered, ok := a.guardOf(fn.object, fn.at, callee)
	if ok && guarded && ordered {
		return WrongConstraint, true
	}
	return MissingConstraint, ok
}

// displaced is the callee x of f, other than the new path's entry h, that
// took at least half of f's time in the normal runs (in at least
// SameWorkSamples of their samples), and whose calls from f took at most a
// quarter of their normal time per run in the buggy runs: the path the
// normal runs took where the buggy runs took h's. A new path added beside
// the normal work leaves the usual calls their time, however small a part
// of f's they become; one taken instead of it empties them.
func (a *Analyzer) displaced(f, h int32, nc, bc *stackCounts, gw growth) (int32, bool) {
	top, n := nc.heaviest(f, true)
	if n < SameWorkSamples || top.callee == h || a.system(top.callee) || 2*n < nc.incl[f] {
		return 0, false
	}
	t := gw.timeGrowth(n, bc.edges[top])
	return top.callee, bc.edges[top] == 0 || t > 0 && 4*t <= 1
}

// decider names the function whose answer decides f's calls of callee,
// or every entry into f, as the DecideFunc tells from an address inside f.
func (a *Analyzer) decider(f int32, callee string) (string, bool) {
	fn := a.funcs[f]
	if a.decideOf == nil || !fn.atOK {
		return "", false
	}
	if p, ok := a.decideOf(fn.object, fn.at, callee); ok {
		return p, true
	}
	return a.decideOf(fn.object, fn.at, "")
}

// readsInput says whether function f's code reads the global named name
// and does not store into it: a value it stores itself (a peak it keeps)
// is what it computed, not an input it was given.
func (a *Analyzer) readsInput(f int32, name string) bool {
	if !a.reads(f, name) {
		return false
	}
	fn := a.funcs[f]
	if a.writesOf == nil || !fn.atOK {
		return true
	}
	w, known := a.writesOf(fn.object, fn.at, name)
	return !(w && known)
}

// thresholdReads says whether the threshold that decides function f's
// calls of callee is made in a block of its code that reads the global
// named name (and f's code does not store into it), as the
// ThresholdFunc tells; false when it cannot tell.
func (a *Analyzer) thresholdReads(f int32, callee, name string) bool {
	fn := a.funcs[f]
	if a.thresholdOf == nil || !fn.atOK || !a.readsInput(f, name) {
		return false
	}
	r, known := a.thresholdOf(fn.object, fn.at, callee, name)
	return r && known
}

// reads says whether function f's code reads the global named name, as
// the ReadsFunc tells from an address inside f; false when it cannot tell.
func (a *Analyzer) reads(f int32, name string) bool {
	fn := a.funcs[f]
	if a.readsOf == nil || !fn.atOK {
		return false
	}
	r, known := a.readsOf(fn.object, fn.at, name)
	return r && known
}

// pattern infers the bug pattern from the evidence (docs/vprof.md).
func (a *Analyzer) pattern(fr *FunctionResult) Pattern {
	if fr.Var != nil {
		v := fr.Var
		t := parseTags(v.Tags)
		an := v.Anomaly
		beyond := beyondNormal(an)
		within := an != nil && an.HasNormal && an.BuggyMedian >= an.NormalMin && an.BuggyMedian <= an.NormalMax
		// The usual items in another mix: values inside their normal
		// range, or a loop counter's steps inside theirs (the steps of a
		// compared value say nothing of the items).
		mix := within && (v.Dimension == DimValue || v.Dimension == DimDelta && t.loop)
		switch {
		case t.cond && (v.Dimension == DimValue && beyond || v.valuesBeyond) && ownWork(fr):
			// A condition's values beyond their normal range where the
			// function's own code did more of the work: the work grew
			// with what it compares (a key, a count, a length), not with
			// a decision to run something else. The values say it even
			// when their steps, or how long they last, differed more.
			return Scalability
		case t.loop && v.Dimension == DimValue && beyond && v.lasting && !ownWork(fr):
			// A counter beyond its normal range that stopped there: its
			// values also last longer, while the function, its own code
			// no busier, kept running what it calls. The loop went on
			// after its count was reached: the check that should end it
			// is missing (a scan past its LIMIT).
			return MissingConstraint
		case t.loop && v.Dimension != DimDuration && beyond:
			// A loop counter beyond its normal range counted more
			// iterations: the loop ran over more items. Its cond tag is
			// most often its loop's own exit test, which decided nothing
			// wrong by stopping later (vProf's order: loop before cond).
			return Scalability
		case t.cond && v.Dimension == DimValue && !within:
			return WrongConstraint
		case v.Dimension == DimDuration:
			// Values that last longer: a loop lingering on some items.
			return MissingConstraint
		case mix && !ownWork(fr):
			// The same values (or a loop's steps) as normally, the time
			// spread differently over them, and the function's own code
			// no busier: its callees took longer on some items, which a
			// check should have skipped.
			return MissingConstraint
		case mix:
			// The usual values in another mix while the function's own
			// code did more of the work: its loops ran longer on the
			// items it always handles, which no decision of its own
			// explains (a condition's values in their normal range are
			// no wrong decision).
			return Scalability
		case t.cond:
			return WrongConstraint
		}
	}
	if fr.Evidence == EvidenceOwnTime && fr.Unsampled != "" {
		// Its own code did more work, and none of its variables was
		// sampled to say whether it worked longer on more items
		// (scalability) or decided wrongly what to work on: no pattern
		// rather than a guess (docs/vprof.md, "No variables where the
		// time goes").
		return NoPattern
	}
	if fr.Evidence == EvidenceOwnTime || (fr.Evidence == EvidenceVariable && ownWork(fr)) {
		return Scalability
	}
	if fr.Evidence == EvidenceInput {
		// It decides on an input that differs, and what it calls grew.
		return WrongConstraint
	}
	return NoPattern
}

// why says in one line why a function ranks where it does.
func why(f *FunctionResult) string {
	pct := func(x float64) string {
		x *= 100
		switch {
		case x == 0:
			return "0%"
		case math.Abs(x) < 1:
			return fmt.Sprintf("%.1f%%", x)
		}
		return fmt.Sprintf("%.0f%%", x)
	}
	var b strings.Builder
	s := f.Share
	fmt.Fprintf(&b, "%s of buggy time vs %s normal", pct(s.Buggy), pct(s.Normal))
	if s.Time > 0 {
		// Its share is saturated: its time per run says how it grew.
		fmt.Fprintf(&b, ", %s× its normal time per run (a share that cannot grow)", strconv.FormatFloat(s.Time, 'f', 1, 64))
	}
	if !s.Grew() && f.Decides == nil && f.Repair == nil {
		// A predicate's own time need not grow: its answer is its part.
		b.WriteString(" (no significant growth)")
	}
	if ownWork(f) {
		fmt.Fprintf(&b, "; own code %s vs %s", pct(f.SelfShare.Buggy), pct(f.SelfShare.Normal))
	}
	if v := f.Var; v != nil && f.Evidence != "" && v.Anomaly != nil {
		an := v.Anomaly
		what := ""
		switch an.Dimension {
		case DimDelta:
			what = " (change per sample)"
		case DimDuration:
			what = " (samples a value lasts)"
		}
		kind := strings.ReplaceAll(v.Tags, "|", ",")
		if kind == "" || kind == "none" {
			kind = "variable"
		}
		if an.HasNormal {
			fmt.Fprintf(&b, "; %s%s: normal %s..%s, buggy median %s (%s)", v.Name, what, num(an.NormalMin), num(an.NormalMax), num(an.BuggyMedian), kind)
			if an.NewBranch {
				b.WriteString(", a branch no normal value took")
			}
		} else {
			fmt.Fprintf(&b, "; %s%s: buggy median %s, never sampled normally (%s)", v.Name, what, num(an.BuggyMedian), kind)
		}
	}
	if f.Evidence == EvidenceInput {
		fmt.Fprintf(&b, "; its code reads %s, an input that differs", f.Input)
	} else if f.Input != "" {
		fmt.Fprintf(&b, "; its loop ran to a bound it was given (its code reads %s, an input that differs)", f.Input)
	}
	if f.Evidence == EvidenceThreshold {
		fmt.Fprintf(&b, "; a threshold of its own decides its calls of the work that grew, and its code reads %s, a configuration value", f.Config)
	}
	if f.Evidence == EvidenceNewPath {
		if f.Share.Normal > 0 {
			fmt.Fprintf(&b, "; hardly ran in the normal runs (fewer than %d of their samples hold it, far fewer than its callers' calls predict)", int(NewPathExpected))
		} else {
			b.WriteString("; never ran in the normal runs")
		}
		if f.Replaces != "" {
			fmt.Fprintf(&b, ", where %s, which the buggy runs never reached, made the calls it makes", f.Replaces)
		}
	}
	if f.Through != "" && f.Calls == nil {
		fmt.Fprintf(&b, "; encloses %s, which carries its growth", f.Through)
	}
	if f.Reached != "" {
		fmt.Fprintf(&b, "; most of its growth went into %s, a path only the buggy runs took, which it did not decide on a test of its own", f.Reached)
	}
	if c := f.CalledMore; c != nil && c.New && c.Mode != nil {
		fmt.Fprintf(&b, "; its code decides, on a test of its own, to call %s with %s %s (%s), a path to new work that the normal runs hardly ran (fewer than %d of their samples hold it)",
			c.Callee, c.Mode.Parameter, num(c.Mode.Buggy), c.Mode.normalCalls(), SameWorkSamples)
	} else if c != nil && c.New {
		fmt.Fprintf(&b, "; its code decides, on a test of its own, to call %s, a path to new work that the normal runs hardly ran (fewer than %d of their samples hold it)", c.Callee, SameWorkSamples)
	}
	if c := f.CalledMore; c != nil && c.New && c.Instead != "" {
		fmt.Fprintf(&b, ", instead of %s, which took most of its time normally: the test chose another way to do the same work", c.Instead)
	} else if c != nil && !c.New {
		what := c.Callee
		if c.Work != "" {
			what = c.Work
			fmt.Fprintf(&b, "; called %s more often, which calls %s exactly once per call", c.Callee, c.Work)
		}
		if c.Bounded {
			fmt.Fprintf(&b, "; handed %s more work, whose loops run at most a fixed number of times per call (more calls, or calls run to that bound)", what)
		} else if c.Work != "" {
			fmt.Fprintf(&b, ", whose loops did the same work per call (%s in its normal range)", c.Variable)
		} else {
			fmt.Fprintf(&b, "; called %s more often, whose loops did the same work per call (%s in its normal range)", c.Callee, c.Variable)
		}
	}
	if c := f.CalledBy; c != nil {
		fmt.Fprintf(&b, "; called more often through %s, which calls it once on every call of its own", c.Caller)
		switch {
		case c.New:
			b.WriteString(", on a path the normal runs hardly ran, entered by a caller on evidence of its own that answers for that decision, not for these calls")
		case c.Bounded:
			b.WriteString(", and no caller above answers for the calls; its loops run at most a fixed number of times per call")
		default:
			b.WriteString(", and no caller above answers for the calls")
			fmt.Fprintf(&b, "; its loops did the same work per call (%s in its normal range)", c.Variable)
		}
		b.WriteString(", so the check that would skip its work is its own")
	}
	if r := f.Range; r != nil {
		fmt.Fprintf(&b, "; its pointers %s..%s lie %s bytes apart (normally at most %s)", r.Start, r.End, num(r.BuggyMedian), num(r.NormalMax))
	}
	if r := f.Repair; r != nil {
		fmt.Fprintf(&b, "; its test of %s decides to call %s, which rewrites %s, the bounds of %s's loop, whose own code grew; %s did not run more often",
			strings.Join(r.Tests, ", "), r.Callee, strings.Join(r.Bounds, ", "), r.Loop, r.Callee)
	}
	if d := f.Decides; d != nil {
		if s.Normal == 0 && s.Buggy == 0 {
			// Named by the machine code alone.
			b.WriteString("; no sample holds it (too short to be sampled)")
		}
		fmt.Fprintf(&b, "; its answer decides every call of %s, which ran more often", d.Callee)
	}
	if f.NewRecursion {
		b.WriteString("; calls itself, which it did in no normal run")
	}
	if k := f.Asks; k != nil {
		fmt.Fprintf(&b, "; asks for %s, which %d callers ask for alike and whose code does the same work per call (%s)", k.Callee, k.Callers, k.Worker)
	}
	if r := f.Repeats; r != nil {
		fmt.Fprintf(&b, "; calls %s again with the arguments %s already called it with in the same request (%d of its %d calls, %s of %s's time in a trace)",
			r.Callee, r.First, r.Repeats, r.Calls, pct(r.Part()), r.Callee)
	} else if c := f.Calls; c != nil {
		fmt.Fprintf(&b, "; its calls of %s took %s of its time vs %s normally", c.Callee, pct(c.Buggy), pct(c.Normal))
	}
	if f.Evidence == EvidenceOwnTime && f.Pattern == NoPattern {
		switch f.Unsampled {
		case UnsampledNoDebugInfo:
			b.WriteString("; no debug information for its code (built without -g): no variables, pattern unknown")
		case UnsampledNotListed:
			b.WriteString("; the schema lists none of its variables: pattern unknown")
		}
	}
	if f.Pattern != NoPattern && f.Pattern != "" {
		fmt.Fprintf(&b, " → %s", f.Pattern)
	}
	if len(f.Lines) > 0 {
		b.WriteString("; lines " + lineRange(f.Lines))
	}
	return b.String()
}

// lineRange names the lines of the most frequent file: "cache.c:112–118".
func lineRange(ls []Line) string {
	file := ls[0].File
	if file == "" {
		return ls[0].String()
	}
	lo, hi := ls[0].Line, ls[0].Line
	for _, l := range ls {
		if l.File == file && l.Line > 0 {
			lo, hi = min(lo, l.Line), max(hi, l.Line)
		}
	}
	base := file
	if i := strings.LastIndexByte(base, '/'); i >= 0 {
		base = base[i+1:]
	}
	if lo == hi {
		return fmt.Sprintf("%s:%d", base, lo)
	}
	return fmt.Sprintf("%s:%d–%d", base, lo, hi)
}

// num formats a value compactly: integers as they are below a million,
// others with three significant digits.
func num(x float64) string {
	if x == math.Trunc(x) && math.Abs(x) < 1e6 {
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return strconv.FormatFloat(x, 'g', 3, 64)
}

// FormatValue formats a variable's value as the why lines do.
func FormatValue(x float64) string { return num(x) }

// RangeMargin is how far beyond the longest normal range (a fraction of
// it) a buggy range's median must lie, as the localisation's margin.
const RangeMargin = 0.05

// grownRanges returns the functions whose share grew, two of whose pointer
// locals delimit a range (never negative, sampled at least SameWorkSamples
// times in each kind of run) whose buggy median lies beyond its longest
// normal length, and above which no other such function lies in any buggy
// stack: the top of the grown ranges. A thread's outermost function and
// the C runtime's are left out.
func (a *Analyzer) grownRanges(idx map[int32]int, fs []FunctionResult, roots map[int32]bool, bc *stackCounts, timeGrowth func(int32) float64) map[int32]*Range {
	grown := map[int32]*Range{}
	for k, rs := range a.ranges {
		if rs.before && rs.after || rs.apart || rs.shrinks > rs.grows || rs.normal.len() < SameWorkSamples || rs.buggy.len() < SameWorkSamples {
			continue
		}
		j, ok := idx[k.fn]
		if !ok || a.system(k.fn) || roots[k.fn] || !fs[j].Share.Grew() {
			continue
		}
		nmax := slices.Max(rs.normal.floats())
		bmed := median(rs.buggy.floats())
		if bmed <= nmax+RangeMargin*math.Abs(nmax) {
			continue
		}
		// A range a little longer than normally, in a function whose
		// time grew far more, is no claim, as a value a little beyond
		// its range is not (slightExcess): pointers into two unrelated
		// objects, whose distance is where the address space placed
		// them, come out so.
		if nmed := median(rs.normal.floats()); nmed > 0 && tooLittle(bmed, nmed, timeGrowth(k.fn)) {
			continue
		}
		r := &Range{Start: k.start, End: k.end, NormalMax: nmax, BuggyMedian: bmed}
		if rs.before {
			r.Start, r.End = k.end, k.start
		}
		if old, ok := grown[k.fn]; !ok || r.BuggyMedian/math.Max(r.NormalMax, 1) > old.BuggyMedian/math.Max(old.NormalMax, 1) {
			grown[k.fn] = r
		}
	}
	if len(grown) == 0 {
		return nil
	}
	tops := maps.Clone(grown)
	for _, p := range bc.paths {
		for i, f := range p.fs {
			if grown[f] == nil {
				continue
			}
			for _, g := range p.fs[i+1:] {
				if g != f && grown[g] != nil {
					delete(tops, f)
				}
			}
		}
	}
	return tops
}

// pooledRepeats adds up the repeats of the traces by caller and callee,
// the most repeat time first.
func (a *Analyzer) pooledRepeats() []Repeat {
	type pair struct{ caller, callee string }
	sum := map[pair]*Repeat{}
	var order []pair
	for _, r := range a.repeats {
		k := pair{r.Caller, r.Callee}
		s := sum[k]
		if s == nil {
			s = &Repeat{Caller: r.Caller, Callee: r.Callee, First: r.First}
			sum[k] = s
			order = append(order, k)
		}
		s.Calls += r.Calls
		s.Repeats += r.Repeats
		s.Time += r.Time
		s.RepeatTime += r.RepeatTime
		s.CalleeTime += r.CalleeTime
	}
	out := make([]Repeat, 0, len(order))
	for _, k := range order {
		out = append(out, *sum[k])
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].RepeatTime > out[j].RepeatTime })
	return out
}

// byName finds a function of the executable by name (the first of that
// name in fs: a trace names functions without their object).
func byName(fs []FunctionResult, name string) (int, bool) {
	if name == "" {
		return 0, false
	}
	for i := range fs {
		if fs[i].Name == name {
			return i, true
		}
	}
	return 0, false
}

// repairs credits the checks that should have rewritten the state a loop
// that grew is bounded by: for a function whose share grew and whose own
// code did a material part of it (its loops did more work per call), every
// function of its object (in the ranking, or added to unseen for the
// next pass when no sample holds it) whose code decides, on a test of
// the members of an object of the type the loop walks, made once per
// call, to call a function that rewrites members the loop's exit tests
// depend on (RepairFunc), while that function's share did not grow: the
// repair did not run more often although the loop it bounds did more.
// The check answers for the loop's growth (discount 0, evidence repair)
// and ranks just above it, with wrong-constraint. Only a threshold (an
// ordered comparison) makes such a check: a repair is decided by how far
// the state has gone, and a wrong bound lets it go further; a test of
// presence or equality (is a member set, which mode) decides by what
// the object is or holds, and does not fail to fire because the state
// degraded.
func (a *Analyzer) repairs(ids []int32, fs []FunctionResult, idx map[int32]int, score []float64, through []int, below [][]int, unseen *[]int32) {
	for li, l := range ids {
		lr := &fs[li]
		fl := a.funcs[l]
		if score[li] <= 0 || !lr.Share.Grew() || !ownWork(lr) || !fl.atOK || a.system(l) {
			continue
		}
		for _, rc := range a.repairOf(fl.object, fl.at) {
			if rc.Check == lr.Name || rc.Check == "" || !rc.Ordered {
				continue
			}
			if g, ok := a.funcIdx[funcKey{name: rc.Callee, object: objectBase(fl.object)}]; ok {
				if ri, ok := idx[g]; ok && fs[ri].Share.Grew() {
					continue // the repair ran more often: it is no check that failed to fire
				}
			}
			p := a.fn(rc.Check, fl.object)
			pi, ok := idx[p]
			if !ok {
				// A check cheap enough that no sample holds it: the
				// machine code names it all the same.
				if !slicesContains(*unseen, p) {
					*unseen = append(*unseen, p)
				}
				continue
			}
			pr := &fs[pi]
			if pr.Evidence != EvidenceNone && pr.Evidence != EvidenceVariable && pr.Evidence != "" {
				continue
			}
			pr.Evidence, pr.Discount = EvidenceRepair, 0
			pr.Repair = &Repair{Loop: lr.Name, Callee: rc.Callee, Bounds: rc.Bounds, Tests: rc.Tests}
			pr.Pattern = WrongConstraint
			score[pi] = math.Max(score[pi], score[li])
			through[pi], pr.Through = -1, ""
			below[li] = append(below[li], pi)
		}
	}
}
