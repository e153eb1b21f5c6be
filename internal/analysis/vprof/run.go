package vprof

import (
	"iter"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strings"

	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
)

// Analyzer accumulates runs, one profile at a time, so that a profile can be
// dropped once added; Result compares them.
type Analyzer struct {
	opt     Options
	funcs   []fn
	funcIdx map[funcKey]int32
	locs    []loc
	locIdx  map[loc]int32
	vars    []*variable
	varIdx  map[varKey]int32
	normal  []*runData
	buggy   []*runData

	blockOf     BlockFunc
	readsOf     ReadsFunc
	writesOf    WritesFunc
	decideOf    DecideFunc
	repairOf    RepairFunc
	guardOf     GuardFunc
	thresholdOf ThresholdFunc
	branchOf    BranchFunc
	shapeOf     ShapeFunc
	boundOf     BoundFunc
	loopCallOf  LoopCallFunc
	callOf      CallFunc
	paramOf     ParamFunc
	// inlined: the call edges some sample showed inlined (no call
	// instruction of the callee in the caller's code).
	inlined map[edge]bool
	// pointerCalls caches throughPointer.
	pointerCalls map[edge]bool
	pause        func()  // SetPause's (nil: none)
	blocks       []Block // distinct basic blocks where buggy values were read (Samples unused)
	blockIdx     map[blockKey]int32
	// ranges: the lengths of the ranges two pointers of one frame delimit
	// (docs/vprof.md, "A range longer than it was handed").
	ranges map[rangeKey]*rangeSamples
	// repeats: the calls that traces of buggy runs (AddCalls) show done
	// twice with the same arguments in one request.
	repeats []Repeat
}

// rangeKey is a pair of pointer locals of one function, of one type, by
// name (in the order of their names).
type rangeKey struct {
	fn         int32
	start, end string
}

// rangeSamples are the distances between two pointers, one per tick and
// frame where both were read, in the normal and the buggy runs; before and
// after say whether the second pointer was seen below and above the
// first: a range keeps its order in every sample.
type rangeSamples struct {
	normal, buggy nums
	before, after bool
	// apart says that an executable mapping lay between the two
	// pointers at some sample: they point into two objects.
	apart bool
	// shrinks and grows count the thread's next samples in the same
	// frame where one pointer stayed and the other moved, making the
	// range shorter or longer: a cursor consuming the range, or a walk
	// out from a fixed start.
	shrinks, grows int
}

// BlockFunc finds the basic block of machine code holding a file offset of
// an object (a value's PC, as profile.Frame gives it): the function symbol
// holding it and its ELF virtual addresses [start, end).
type BlockFunc func(object string, offset uint64) (function string, start, end uint64, ok bool)

type blockKey struct {
	object string
	start  uint64
}

// ReadsFunc says whether the machine code of the function holding a file
// offset of an object reads a global variable; known is false when it
// cannot tell.
type ReadsFunc func(object string, offset uint64, global string) (reads, known bool)

// SetReads has the differential method charge a global only to the
// functions whose code reads it (f decides; the analysis does not read
// machine code itself). Without it, or where f does not know, a global is
// charged to every function it was sampled in, as vProf does. Call it
// before adding runs.
func (a *Analyzer) SetReads(f ReadsFunc) { a.readsOf = f }

// WritesFunc says whether the machine code of the function holding a file
// offset of an object stores into a global variable; known is false when
// it cannot tell.
type WritesFunc func(object string, offset uint64, global string) (writes, known bool)

// SetWrites has the differential method take a global that differs
// between the runs as an input of a function that reads it only where
// that function does not store into it (docs/vprof.md, "Where a global
// is read"). Call it before adding runs.
func (a *Analyzer) SetWrites(f WritesFunc) { a.writesOf = f }

// DecideFunc names the function whose answer decides calls, from the
// machine code of the function holding a file offset of an object: with
// callee "", every entry into that function; otherwise its calls of
// callee. ok is false when no one function's answer guards them all.
type DecideFunc func(object string, offset uint64, callee string) (predicate string, ok bool)

// SetDeciders has the differential method credit a predicate with the
// calls its answer let through (docs/vprof.md, "A predicate decides the
// calls"); f reads the machine code. Call it before adding runs.
func (a *Analyzer) SetDeciders(f DecideFunc) { a.decideOf = f }

// RepairCheck is a check that decides to rewrite the state a loop is
// bounded by (RepairFunc): the function Check calls Callee, which
// rewrites the loop's members Bounds ("t->cap"), on a test of the
// members Tests, a threshold when Ordered.
type RepairCheck struct {
	Check   string
	Callee  string
	Ordered bool
	Bounds  []string
	Tests   []string
}

// RepairFunc names, from the machine code of an object, the functions of
// that object that decide, on a test of an object's members made once
// per call, to call a function that rewrites members the exit tests of a
// loop of the function holding file offset loop depend on (the two take
// the object through pointer parameters of one type); none when the code
// cannot tell.
type RepairFunc func(object string, loop uint64) []RepairCheck

// SetRepairs has the differential method credit a check that should have
// rewritten the state a loop that grew is bounded by (docs/vprof.md, "A
// repair that did not run"). Call it before adding runs.
func (a *Analyzer) SetRepairs(f RepairFunc) { a.repairOf = f }

// GuardFunc says how the machine code of the function holding a file
// offset of an object decides its calls of callee: guarded when a
// conditional jump of its own decides whether a call is reached, ordered
// when such a jump compares an order (a threshold) rather than equality;
// ok is false when it cannot tell.
type GuardFunc func(object string, offset uint64, callee string) (guarded, ordered, ok bool)

// ParamFunc says whether name is a formal parameter of the function
// holding a file offset of an object; known is false when it cannot tell.
type ParamFunc func(object string, offset uint64, name string) (param, known bool)

// SetParams has the differential method tell a function's parameters
// from its other locals (docs/vprof.md, "New work its caller decided":
// a call in a new mode). Call it before adding runs.
func (a *Analyzer) SetParams(f ParamFunc) { a.paramOf = f }

// SetGuards has the differential method tell a wrong constraint from a
// missing one by how a function decides the calls that grew
// (docs/vprof.md, "Patterns"). Call it before adding runs.
func (a *Analyzer) SetGuards(f GuardFunc) { a.guardOf = f }

// ThresholdFunc says whether an ordered comparison that decides the calls
// of callee in the function holding a file offset of an object is made in
// a basic block that reads a global variable; known is false when it
// cannot tell.
type ThresholdFunc func(object string, offset uint64, callee, global string) (reads, known bool)

// SetThresholds has the differential method take a function as deciding
// on a configuration global only where the threshold that decides its
// call reads that global (docs/vprof.md, "A threshold on the
// configuration"). Call it before adding runs.
func (a *Analyzer) SetThresholds(f ThresholdFunc) { a.thresholdOf = f }

// BranchFunc tells how the code of a local's declaring function (the
// local by function, name, declaring file and line) decides on its
// values: outcomes gives, for a value, the direction each of the
// function's conditional uses of the variable takes (one bit each); ok is
// false when some use cannot be evaluated (a comparison with another
// variable or a computed value) or the code is not known.
type BranchFunc func(function, variable, file string, line int) (outcomes func(x int64) (uint64, bool), ok bool)

// SetBranches has the differential method leave out, as evidence, a
// local whose buggy values lie beyond its normal range but take the
// branches its normal values took (docs/vprof.md, "Values that decide
// nothing new"). Call it before adding runs.
func (a *Analyzer) SetBranches(f BranchFunc) { a.branchOf = f }

// ShapeFunc says what the machine code of the function holding a file
// offset of an object is made of: whether it has a loop (an edge back to
// a block that dominates its source) and whether it calls or jumps to
// another function; known is false when it cannot tell.
type ShapeFunc func(object string, offset uint64) (loops, calls, known bool)

// SetShapes has the differential method tell code that does the same
// work on every call (no loop, no call: straight-line code) from code
// whose work per call may grow (docs/vprof.md, "Work several callers
// ask for"). Call it before adding runs.
func (a *Analyzer) SetShapes(f ShapeFunc) { a.shapeOf = f }

// BoundFunc says whether the machine code of the function holding a file
// offset of an object has a loop and does at most a fixed amount of work
// per call: its loops run to constants, and so do its callees' (or they
// have none); known is false when it cannot tell.
type BoundFunc func(object string, offset uint64) (bounded, known bool)

// SetBounds has the differential method hand the growth of a function
// whose work per call is bounded to the caller that handed it the work
// (docs/vprof.md, "Work bounded per call"). Call it before adding runs.
func (a *Analyzer) SetBounds(f BoundFunc) { a.boundOf = f }

// LoopCallFunc says whether the machine code of the function holding a
// file offset of an object calls callee from inside one of its loops;
// known is false when it cannot tell (no direct call of callee found: a
// call through a pointer or another object's stub).
type LoopCallFunc func(object string, offset uint64, callee string) (inLoop, known bool)

// SetLoopCalls has the differential method tell a loop that calls what
// grew from one that calls nothing (docs/vprof.md, "A longer loop takes
// the growth of what it calls"). Call it before adding runs.
func (a *Analyzer) SetLoopCalls(f LoopCallFunc) { a.loopCallOf = f }

// callsInLoop says whether function f may call, from inside a loop, one
// of the functions it calls on the buggy runs' stacks; true unless the
// machine code says that every one of them is called outside its loops.
func (a *Analyzer) callsInLoop(f int32, bc *stackCounts) bool {
	fn := a.funcs[f]
	if a.loopCallOf == nil || !fn.atOK {
		return true
	}
	for e, n := range bc.edges {
		if e.caller != f || e.callee == f || n == 0 {
			continue
		}
		if in, known := a.loopCallOf(fn.object, fn.at, a.funcs[e.callee].name); in || !known {
			return true
		}
	}
	return false
}

// CallFunc says whether the machine code of the function holding a file
// offset of an object calls callee directly (a call or tail jump to its
// entry, or a stub that reaches it); known is false when it cannot tell
// (callee is not a function of that object).
type CallFunc func(object string, offset uint64, callee string) (direct, known bool)

// SetCalls has the differential method tell a call made through a
// pointer from a direct one (docs/vprof.md, "A threshold on the
// configuration": a threshold does not decide the work behind a call
// through a pointer). Call it before adding runs.
func (a *Analyzer) SetCalls(f CallFunc) { a.callOf = f }

// throughPointer says whether caller calls callee through a pointer: the
// samples show the call, no sample showed callee inlined into it, and
// caller's machine code makes no direct call of it; false when the code
// cannot tell.
func (a *Analyzer) throughPointer(caller, callee int32) bool {
	e := edge{caller, callee}
	if v, ok := a.pointerCalls[e]; ok {
		return v
	}
	fn := a.funcs[caller]
	v := false
	if a.callOf != nil && fn.atOK && !a.inlined[e] && caller != callee && !fn.kernel && !a.funcs[callee].kernel {
		direct, known := a.callOf(fn.object, fn.at, a.funcs[callee].name)
		v = known && !direct
	}
	if a.pointerCalls == nil {
		a.pointerCalls = map[edge]bool{}
	}
	a.pointerCalls[e] = v
	return v
}

// oncePerCall says whether function f's machine code calls callee once
// on every call of f: outside its loops, on no test of its own (a
// conditional jump that decides whether the call is reached); false when
// the code cannot tell.
func (a *Analyzer) oncePerCall(f int32, callee string) bool {
	fn := a.funcs[f]
	if a.loopCallOf == nil || a.guardOf == nil || !fn.atOK {
		return false
	}
	inLoop, known := a.loopCallOf(fn.object, fn.at, callee)
	if !known || inLoop {
		return false
	}
	guarded, _, ok := a.guardOf(fn.object, fn.at, callee)
	return ok && !guarded
}

// guardedCall says whether function f's machine code calls callee
// directly on a test of its own (a conditional jump that decides whether
// the call is reached); false when the code cannot tell.
func (a *Analyzer) guardedCall(f int32, callee string) bool {
	fn := a.funcs[f]
	if a.guardOf == nil || !fn.atOK {
		return false
	}
	guarded, _, ok := a.guardOf(fn.object, fn.at, callee)
	return ok && guarded
}

// bounded says whether function f's code does at most a fixed amount of
// work per call (BoundFunc); false when the machine code cannot tell.
func (a *Analyzer) bounded(f int32) bool {
	fn := a.funcs[f]
	if a.boundOf == nil || !fn.atOK {
		return false
	}
	b, known := a.boundOf(fn.object, fn.at)
	return known && b
}

// straight says whether function f's code has neither a loop nor a call,
// so that each call of it does the same bounded work; false when the
// machine code cannot tell.
func (a *Analyzer) straight(f int32) bool {
	fn := a.funcs[f]
	if a.shapeOf == nil || !fn.atOK {
		return false
	}
	loops, calls, known := a.shapeOf(fn.object, fn.at)
	return known && !loops && !calls
}

// SetBlocks has localisation report the basic blocks where anomalous values
// were read, found by f (the analysis does not read machine code itself).
// Call it before adding runs.
func (a *Analyzer) SetBlocks(f BlockFunc) { a.blockOf = f }

// SetPause has the analysis call f at regular steps: every pauseEvery
// samples or values it reads (a streamed run's reading pauses with it)
// and before each variable it compares. A caller that runs the analysis
// in the background blocks in f while more urgent work runs, so that the
// analysis gives up the CPU there (culprit view: while requests are
// answered). f may be called from several goroutines at once. Call it
// before adding runs.
func (a *Analyzer) SetPause(f func()) { a.pause = f }

// pauseEvery is how many samples or values are read between calls of the
// pause hook: about a millisecond of reading.
const pauseEvery = 1 << 14

// eachSample is p.EachSample, pausing every pauseEvery samples.
func (a *Analyzer) eachSample(p *profile.Profile, yield func(*profile.Sample) bool) error {
	return eachPaused(a.pause, p.EachSample, yield)
}

// eachValue is p.EachValue, pausing every pauseEvery values.
func (a *Analyzer) eachValue(p *profile.Profile, yield func(*profile.Value) bool) error {
	return eachPaused(a.pause, p.EachValue, yield)
}

// eachPaused calls each with yield, and pause (when set) every pauseEvery
// items.
func eachPaused[T any](pause func(), each func(func(T) bool) error, yield func(T) bool) error {
	if pause == nil {
		return each(yield)
	}
	n := 0
	return each(func(x T) bool {
		if n++; n%pauseEvery == 0 {
			pause()
		}
		return yield(x)
	})
}

// block returns the index of the basic block holding a frame's address,
// −1 when unknown.
func (a *Analyzer) block(f profile.Frame) int32 {
	if a.blockOf == nil || f.Kernel || !strings.HasPrefix(f.Object, "/") {
		return -1
	}
	fn, start, end, ok := a.blockOf(f.Object, f.Offset)
	if !ok {
		return -1
	}
	k := blockKey{f.Object, start}
	if i, ok := a.blockIdx[k]; ok {
		return i
	}
	if a.blockIdx == nil {
		a.blockIdx = map[blockKey]int32{}
	}
	i := int32(len(a.blocks))
	a.blocks = append(a.blocks, Block{Object: f.Object, Function: fn, Start: Address(start), End: Address(end)})
	a.blockIdx[k] = i
	return i
}

// New returns an Analyzer with options o (see DefaultOptions).
func New(o Options) (*Analyzer, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	if o.MaxTestSamples == 0 {
		o.MaxTestSamples = 1000
	}
	return &Analyzer{opt: o, funcIdx: map[funcKey]int32{}, locIdx: map[loc]int32{}, varIdx: map[varKey]int32{}, inlined: map[edge]bool{}}, nil
}

// runData is what the analysis keeps of one run.
type runData struct {
	info    Run
	pcCost  map[int32]float64 // function → ns of CPU time (self)
	varCost map[int32]float64 // function → ns: value samples at distinct PCs per tick
	stacks  stackCounts       // CPU samples counted over complete call stacks
	// A buggy run's profile and its sources' variables (−1: none), read
	// again to localise anomalies.
	p      *profile.Profile
	srcVar []int32
}

// raw returns the run's raw cost of f, in ns.
func (r *runData) raw(f int32) float64 { return math.Max(r.pcCost[f], r.varCost[f]) }

// series are the samples of one variable in one dimension set.
type series struct {
	values    nums // one per variable, thread and tick
	deltas    nums // value minus the previous one of the same variable and thread
	durations nums // lengths of runs of equal consecutive values
	// starts holds, per run pooled in the series, the index in values of
	// its first value.
	starts []int
	// clocks counts, per clock and unit (clockBit), the values that read
	// as that clock at their sample's time (clockMatch).
	clocks [clockKinds]int32
}

// runSchemas returns the schema identities of a run's variables, sorted;
// nil when one of its variables carries none (a recording older than
// format 1.4), since the run's schema is then unknown.
func runSchemas(srcs []recording.ValueSource, isVar []bool) []string {
	var ids []string
	for i, vs := range srcs {
		if !isVar[i] {
			continue
		}
		if vs.Schema == "" {
			return nil
		}
		if !slices.Contains(ids, vs.Schema) {
			ids = append(ids, vs.Schema)
		}
	}
	slices.Sort(ids)
	return ids
}

// variable is one schema variable across runs.
type variable struct {
	src      recording.ValueSource
	inNormal []bool          // per normal run: in its schema
	inBuggy  int             // buggy runs whose schema has it
	normal   []*series       // per normal run (nil: no sample)
	buggy    series          // every buggy run
	buggyN   int             // samples in buggy runs
	funcs    map[int32]int   // functions (of the PCs) it was sampled in, in buggy runs
	readIn   map[int32]bool  // globals: of funcs, those whose code reads it or that nobody could tell
	owner    int32           // for locals: the declaring function, −1 until seen
	normalN  int             // samples in normal runs
	result   *VariableResult // set by Result
	// where is where the buggy samples outside the normal range were
	// read, per dimension (DimValue, DimDelta, DimDuration); set by Result.
	where [3]where
}

func (a *Analyzer) fn(name, object string) int32 {
	k := funcKey{name: name, object: objectBase(object)}
	if i, ok := a.funcIdx[k]; ok {
		return i
	}
	i := int32(len(a.funcs))
	a.funcs = append(a.funcs, fn{name: name, object: object})
	a.funcIdx[k] = i
	return i
}

// system says whether function f is the kernel's or the C runtime's
// (profile.RuntimeObject), or a PLT stub (f@plt, in any object): its own
// time is the work of its nearest caller outside them. A stub is the
// second half of its caller's call of a library function: it jumps there
// and does nothing of its own (docs/vprof.md, "The C runtime and the
// kernel do what they are asked").
func (a *Analyzer) system(f int32) bool {
	fn := a.funcs[f]
	return fn.kernel || fn.object == profile.KernelObject || profile.RuntimeObject(fn.object) || strings.HasSuffix(fn.name, "@plt")
}

func (a *Analyzer) loc(f profile.Frame) int32 {
	l := loc{file: f.File, line: f.Line, function: f.Name()}
	if i, ok := a.locIdx[l]; ok {
		return i
	}
	i := int32(len(a.locs))
	a.locs = append(a.locs, l)
	a.locIdx[l] = i
	return i
}

// AddNormal adds a normal run; AddBuggy a buggy one. info names the run
// (Path, Executable); the counts are filled in. A run without value samples
// of program variables is a *NoValuesError.
func (a *Analyzer) AddNormal(p *profile.Profile, info Run) error { return a.add(p, info, false) }

// AddCalls adds a trace of a buggy run (culprit trace --args, every call
// of the functions it names): the differential method holds a function
// that repeats a call already made in the same request with the same
// arguments responsible for the growth of that work (Repeats; docs/vprof.md,
// "Work done twice"). The trace's samples are not used (its probes slow
// the program down). It fails with ErrNoArgs when the trace holds no
// arguments.
func (a *Analyzer) AddCalls(p *profile.Profile) error {
	r, err := Repeats(p)
	if err != nil {
		return err
	}
	a.repeats = append(a.repeats, r...)
	return nil
}

// AddBuggy adds a buggy run (see AddNormal).
func (a *Analyzer) AddBuggy(p *profile.Profile, info Run) error { return a.add(p, info, true) }

// stState follows one variable in one thread.
type stState struct {
	time  uint64 // of the last sample kept
	value float64
	bits  uint64
	kind  recording.ValueKind
	run   int // length of the current run of equal values
	has   bool
	// in: while localising, where the samples of the current run were
	// read; seen: how the sample of the current tick compared with the
	// normal range in the value and delta dimensions (outside it, or
	// over-represented in it), for the same variable read again in other
	// frames of that tick.
	in   []placeCount
	seen [2]struct{ counted, outside, over bool }
}

// step is what one sample of a variable adds to its series.
type step struct {
	x        float64 // the value, when kept (not a pointer's, not NaN)
	kept     bool
	delta    float64 // the value minus the thread's previous one
	hasDelta bool
	closed   int  // the length of the run of equal values the sample ended
	close    bool // a run ended
	newRun   bool // the sample starts a run
}

// next takes value v into the state of its variable in its thread and says
// what it adds to the series (pointer: the variable holds addresses, whose
// values and deltas are not compared).
func (st *stState) next(v *profile.Value, pointer bool) step {
	x := v.Float64()
	// A signed integer beyond ±2^53 is no quantity: no count, size, index
	// or length of a program comes near 9·10^15, and the bit patterns a
	// local holds before it is first written (stack garbage, a register
	// reused) mostly lie there. Such a value is compared as a NaN is
	// (docs/vprof.md, "Values that are no quantity").
	if v.Type == recording.ValueInt && math.Abs(x) > 1<<53 {
		x = math.NaN()
	}
	// A NaN has no value to compare (NaN ≠ NaN: every NaN would be a
	// value of its own, and two runs of a constant NaN disjoint); it
	// counts only in the durations, which compare bits.
	nan := math.IsNaN(x)
	var s step
	if !pointer && !nan {
		s.x, s.kept = x, true
	}
	same := st.has && st.bits == v.Bits && st.kind == v.Type
	if st.has && !pointer && !nan && !math.IsNaN(st.value) {
		if d := x - st.value; !math.IsNaN(d) { // ±Inf − ±Inf has none
			s.delta, s.hasDelta = d, true
		}
	}
	if st.has && !same {
		s.closed, s.close = st.run, true
	}
	if same {
		st.run++
	} else {
		st.run, s.newRun = 1, true
	}
	st.time, st.value, st.bits, st.kind, st.has = v.Time, x, v.Bits, v.Type, true
	return s
}

// walker follows every variable of a run in each of its threads.
type walker struct {
	srcVar []int32 // source → variable, −1: not a variable
	states [][]stState
	tids   [][]uint32
}

func newWalker(srcVar []int32, vars int) *walker {
	return &walker{srcVar: srcVar, states: make([][]stState, vars), tids: make([][]uint32, vars)}
}

// variable returns the variable of value v, −1 when v is not a sample of
// one.
func (w *walker) variable(v *profile.Value) int32 {
	if v.Source < 0 || int(v.Source) >= len(w.srcVar) || v.Missing() {
		return -1
	}
	return w.srcVar[v.Source]
}

// state returns the state of variable vi in v's thread, nil when v is not
// the first sample of vi in its thread at its time: the distributions take
// one sample per variable, thread and tick (a global read in several
// frames of one sample counts once). Few threads per variable: a linear
// search beats a map.
func (w *walker) state(vi int32, v *profile.Value) *stState {
	st := w.thread(vi, v)
	if st.has && st.time == v.Time {
		return nil
	}
	return st
}

// thread returns the state of variable vi in v's thread, made when new.
func (w *walker) thread(vi int32, v *profile.Value) *stState {
	var st *stState
	for j, tid := range w.tids[vi] {
		if tid == v.TID {
			st = &w.states[vi][j]
			break
		}
	}
	if st == nil {
		w.tids[vi] = append(w.tids[vi], v.TID)
		w.states[vi] = append(w.states[vi], stState{})
		st = &w.states[vi][len(w.states[vi])-1]
	}
	return st
}

func (a *Analyzer) add(p *profile.Profile, info Run, buggy bool) error {
	r := &runData{info: info, pcCost: map[int32]float64{}, varCost: map[int32]float64{}, stacks: newStackCounts()}
	// Count first: a run without variable values changes nothing.
	isVar := make([]bool, len(p.ValueSources))
	for i, vs := range p.ValueSources {
		isVar[i] = vs.Class == recording.SourceVariable
	}
	var values, other int
	perSource := make([]int, len(p.ValueSources))
	counts, err := p.ValueCounts()
	if err != nil {
		return err
	}
	for i, c := range counts {
		if i >= len(isVar) {
			break
		}
		if !isVar[i] {
			other += c.All
		} else {
			values += c.Present
			perSource[i] = c.Present
		}
	}
	cpu := p.EventCounts()[recording.EventCPU]
	r.info.Samples, r.info.Values = cpu, values
	if values == 0 {
		return &NoValuesError{Path: info.Path, Samples: cpu, Other: other}
	}
	// The run's variables. Sources that differ only in line or tags are one
	// variable.
	srcVar := make([]int32, len(p.ValueSources)) // −1: not a variable
	distinct := map[int32]bool{}
	for i, vs := range p.ValueSources {
		srcVar[i] = -1
		if !isVar[i] {
			continue
		}
		k := keyOf(vs)
		vi, ok := a.varIdx[k]
		if !ok {
			vi = int32(len(a.vars))
			a.vars = append(a.vars, &variable{src: vs, owner: -1, funcs: map[int32]int{}, readIn: map[int32]bool{}})
			a.varIdx[k] = vi
		}
		srcVar[i] = vi
		if distinct[vi] {
			continue
		}
		distinct[vi] = true
		v := a.vars[vi]
		if buggy {
			v.inBuggy++
		} else {
			for len(v.inNormal) <= len(a.normal) {
				v.inNormal = append(v.inNormal, false)
			}
			v.inNormal[len(a.normal)] = true
		}
	}
	r.info.Variables = len(distinct)
	r.info.Schemas = runSchemas(p.ValueSources, isVar)
	// Room for the samples (at most one per value).
	count := map[int32]int{}
	for i, vi := range srcVar {
		if vi >= 0 {
			count[vi] += perSource[i]
		}
	}
	for vi, n := range count {
		va := a.vars[vi]
		var ser *series
		if buggy {
			ser = &va.buggy
		} else {
			for len(va.normal) <= len(a.normal) {
				va.normal = append(va.normal, nil)
			}
			ser = &series{}
			va.normal[len(a.normal)] = ser
		}
		if !va.src.Pointer {
			ser.values.grow(n)
			ser.deltas.grow(n)
		}
		ser.starts = append(ser.starts, ser.values.len())
	}
	clock := runClock(p)

	period, err := a.defaultPeriod(p)
	if err != nil {
		return err
	}
	// PC cost: the innermost frame of every CPU sample; stack counts: every
	// function and call edge of its complete stack.
	stackFn := map[int32][]int32{} // stack → functions, innermost first
	perStack := map[int32]float64{}
	var total float64
	err = a.eachSample(p, func(s *profile.Sample) bool {
		if s.Event != recording.EventCPU {
			return true
		}
		fs, ok := stackFn[s.Stack]
		if !ok {
			st := p.StackAt(s.Stack)
			if len(st) == 0 {
				fs = []int32{a.fn(profile.Unknown, "")}
			} else {
				fs = make([]int32, len(st))
				below := false // the frame below was inlined into this one
				for i, fi := range st {
					fr := p.FrameAt(fi)
					fs[i] = a.fn(fr.Name(), fr.Object)
					if fr.Kernel {
						a.funcs[fs[i]].kernel = true
					}
					if f := &a.funcs[fs[i]]; !f.atOK && !fr.Kernel && fr.Offset > 0 && !fr.Inlined {
						f.at, f.atOK = fr.Offset, true
					}
					if !fr.Kernel && fr.Line > 0 {
						a.funcs[fs[i]].lines = true
					}
					if below {
						a.inlined[edge{fs[i], fs[i-1]}] = true
					}
					below = fr.Inlined
				}
			}
			stackFn[s.Stack] = fs
		}
		f := fs[0]
		r.stacks.add(fs, a.system)
		perStack[s.Stack]++
		per := float64(s.Period)
		if per == 0 {
			per = period
		}
		r.pcCost[f] += per
		total += per
		return true
	})
	if err != nil {
		return err
	}
	r.info.CPU = total / 1e9
	for st, n := range perStack {
		r.stacks.paths = append(r.stacks.paths, stackPath{fs: stackFn[st], n: n})
	}

	// Values, in time order.
	type owned struct {
		tid   uint32
		pc    uint64
		owner int32
	}
	owners := map[int64]int32{} // source<<32 | frame index → function
	reads := map[int64]bool{}   // globals: source<<32 | frame index → read by the function's code (or unknown)
	var tick []owned            // the values of one sample time
	tickTime := uint64(0)
	// The samples at the time of the values being charged, read along
	// with the values (both come in time order).
	var sampleErr error
	nextSample, stopSamples := iter.Pull(func(yield func(profile.Sample) bool) {
		sampleErr = a.eachSample(p, func(s *profile.Sample) bool { return yield(*s) })
	})
	defer stopSamples()
	var at []profile.Sample // the samples of time atTime
	atTime, ahead, hasAhead := uint64(0), profile.Sample{}, false
	ahead, hasAhead = nextSample()
	periodAt := func(t uint64, tid uint32) float64 {
		if len(at) == 0 || atTime != t {
			at = at[:0]
			for hasAhead && ahead.Time < t {
				ahead, hasAhead = nextSample()
			}
			for hasAhead && ahead.Time == t {
				at = append(at, ahead)
				ahead, hasAhead = nextSample()
			}
			atTime = t
		}
		for _, s := range at {
			if s.TID == tid && s.Event == recording.EventCPU && s.Period > 0 {
				return float64(s.Period)
			}
		}
		return period
	}
	// The pointer locals of one tick, for the ranges two of them delimit.
	type framePtr struct {
		pid   uint32
		tid   uint32
		depth uint8
		owner int32
		vi    int32
		at    uint64
	}
	var ptrs []framePtr
	// The two pointers of each range at the thread's last sample of it,
	// by frame depth.
	type rangeAt struct {
		k     rangeKey
		tid   uint32
		depth uint8
	}
	lastAt := map[rangeAt][2]uint64{}
	flush := func() {
		for i, x := range ptrs {
			for _, y := range ptrs[i+1:] {
				if x.tid != y.tid || x.depth != y.depth || x.owner != y.owner || x.vi == y.vi {
					continue
				}
				vx, vy := a.vars[x.vi], a.vars[y.vi]
				if vx.src.Type != vy.src.Type || vx.src.Name == vy.src.Name {
					continue
				}
				if vy.src.Name < vx.src.Name {
					x, y, vx, vy = y, x, vy, vx
				}
				k := rangeKey{fn: x.owner, start: vx.src.Name, end: vy.src.Name}
				if a.ranges == nil {
					a.ranges = map[rangeKey]*rangeSamples{}
				}
				rs := a.ranges[k]
				if rs == nil {
					rs = &rangeSamples{}
					a.ranges[k] = rs
				}
				if !rs.apart && p.ExecBetween(x.pid, x.at, y.at) {
					rs.apart = true
				}
				ka := rangeAt{k: k, tid: x.tid, depth: x.depth}
				if was, ok := lastAt[ka]; ok && (was[0] == x.at) != (was[1] == y.at) {
					if absDiff(x.at, y.at) < absDiff(was[0], was[1]) {
						rs.shrinks++
					} else {
						rs.grows++
					}
				}
				lastAt[ka] = [2]uint64{x.at, y.at}
				d := int64(y.at - x.at)
				switch {
				case d > 0:
					rs.after = true
				case d < 0:
					rs.before = true
					d = -d
				}
				if buggy {
					rs.buggy.add(float64(d))
				} else {
					rs.normal.add(float64(d))
				}
			}
		}
		ptrs = ptrs[:0]
		// Value samples with distinct PCs per tick: several variables read
		// at one PC in one sample count once for the function.
		for i, o := range tick {
			dup := false
			for _, q := range tick[:i] {
				if q.tid == o.tid && q.pc == o.pc && q.owner == o.owner {
					dup = true
					break
				}
			}
			if !dup {
				r.varCost[o.owner] += periodAt(tickTime, o.tid)
			}
		}
		tick = tick[:0]
	}
	w := newWalker(srcVar, len(a.vars))
	normalIdx := len(a.normal)
	err = a.eachValue(p, func(v *profile.Value) bool {
		vi := w.variable(v)
		if vi < 0 {
			return true
		}
		va := a.vars[vi]
		// The function the value is charged to: a local's own function, a
		// global's the function of the PC it was read at.
		fi := v.FrameIndex()
		ok := int64(v.Source)<<32 | int64(uint32(fi))
		owner, seen := owners[ok]
		if !seen {
			fr := p.FrameAt(fi)
			if fi < 0 {
				fr = profile.Frame{Function: profile.Unknown, Object: profile.Unknown}
			}
			vs := p.ValueSources[v.Source]
			if !vs.Global && vs.Function != "" && vs.Function != "#global" {
				owner = a.fn(vs.Function, fr.Object)
			} else {
				owner = a.fn(fr.Name(), fr.Object)
				read, known := true, false
				if a.readsOf != nil && fi >= 0 && !fr.Kernel {
					read, known = a.readsOf(fr.Object, fr.Offset, vs.Name)
				}
				reads[ok] = read || !known
			}
			owners[ok] = owner
		}
		if va.owner < 0 && !va.src.Global {
			va.owner = owner
		}
		if buggy {
			va.funcs[owner]++
			if va.src.Global && reads[ok] {
				va.readIn[owner] = true
			}
		}
		if v.Time != tickTime {
			flush()
			tickTime = v.Time
		}
		tick = append(tick, owned{tid: v.TID, pc: v.PC, owner: owner})
		if va.src.Pointer && !va.src.Global {
			ptrs = append(ptrs, framePtr{pid: v.PID, tid: v.TID, depth: v.Depth, owner: owner, vi: vi, at: v.Bits})
		}

		st := w.state(vi, v)
		if st == nil {
			return true
		}
		var ser *series
		if buggy {
			ser = &va.buggy
			va.buggyN++
		} else {
			for len(va.normal) <= normalIdx {
				va.normal = append(va.normal, nil)
			}
			if va.normal[normalIdx] == nil {
				va.normal[normalIdx] = &series{}
			}
			ser = va.normal[normalIdx]
			va.normalN++
		}
		s := st.next(v, va.src.Pointer)
		if s.kept {
			ser.values.add(s.x)
			for m := clock.match(s.x, v.Time); m != 0; m &= m - 1 {
				ser.clocks[bits.TrailingZeros32(m)]++
			}
		}
		if s.hasDelta {
			ser.deltas.add(s.delta)
		}
		if s.close {
			ser.durations.add(float64(s.closed))
		}
		return true
	})
	if err != nil {
		return err
	}
	flush()
	stopSamples()
	if sampleErr != nil {
		return sampleErr
	}
	// Close the open runs.
	for vi := range w.states {
		va := a.vars[vi]
		for j := range w.states[vi] {
			st := &w.states[vi][j]
			if !st.has {
				continue
			}
			if buggy {
				va.buggy.durations.add(float64(st.run))
			} else {
				va.normal[normalIdx].durations.add(float64(st.run))
			}
		}
	}
	if buggy {
		r.p, r.srcVar = p, srcVar
	}
	if buggy {
		a.buggy = append(a.buggy, r)
	} else {
		a.normal = append(a.normal, r)
	}
	return nil
}

// defaultPeriod is the CPU time a sample stands for when its record does not
// say: the median period of the run's CPU samples, else 1/frequency, else
// 1 ms.
func (a *Analyzer) defaultPeriod(p *profile.Profile) (float64, error) {
	var ps []float64
	i := 0
	err := a.eachSample(p, func(s *profile.Sample) bool {
		if s.Event == recording.EventCPU && s.Period > 0 {
			ps = append(ps, float64(s.Period))
		}
		i++
		return i <= 10001
	})
	if err != nil {
		return 0, err
	}
	if len(ps) > 0 {
		sort.Float64s(ps)
		return ps[len(ps)/2], nil
	}
	for _, m := range p.Metas {
		if m.Frequency > 0 {
			return 1e9 / float64(m.Frequency), nil
		}
	}
	return 1e6, nil
}

// absDiff is |a − b|.
func absDiff(a, b uint64) uint64 { return max(a, b) - min(a, b) }
