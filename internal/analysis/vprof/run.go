package vprof

import (
	"iter"
	"math"
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

	blockOf  BlockFunc
	readsOf  ReadsFunc
	blocks   []Block // distinct basic blocks where buggy values were read (Samples unused)
	blockIdx map[blockKey]int32
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

// SetBlocks has localisation report the basic blocks where anomalous values
// were read, found by f (the analysis does not read machine code itself).
// Call it before adding runs.
func (a *Analyzer) SetBlocks(f BlockFunc) { a.blockOf = f }

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
	return &Analyzer{opt: o, funcIdx: map[funcKey]int32{}, locIdx: map[loc]int32{}, varIdx: map[varKey]int32{}}, nil
}

// runData is what the analysis keeps of one run.
type runData struct {
	info    Run
	pcCost  map[int32]float64 // function → ns of CPU time (self)
	varCost map[int32]float64 // function → ns: value samples at distinct PCs per tick
	stacks  stackCounts       // CPU samples counted over complete call stacks
}

// raw returns the run's raw cost of f, in ns.
func (r *runData) raw(f int32) float64 { return math.Max(r.pcCost[f], r.varCost[f]) }

// series are the samples of one variable in one dimension set.
type series struct {
	values    []float64 // one per variable, thread and tick
	deltas    []float64 // value minus the previous one of the same variable and thread
	durations []float64 // lengths of runs of equal consecutive values
}

// bsample is a buggy-run sample of a variable, kept for localisation. Its
// value and delta are those of the buggy series (variable.buggy), kept
// there once.
type bsample struct {
	value int32 // index into buggy.values, −1: none kept (NaN, pointer)
	delta int32 // index into buggy.deltas, −1: none
	run   int32 // index into variable.runs
	loc   int32 // index into Analyzer.locs, −1 unknown
	block int32 // index into Analyzer.blocks, −1 unknown
}

// valueAt and deltaAt are a buggy sample's value (NaN when none was kept)
// and delta (ok false when it has none).
func (v *variable) valueAt(s bsample) float64 {
	if s.value < 0 {
		return math.NaN()
	}
	return v.buggy.values[s.value]
}

func (v *variable) deltaAt(s bsample) (float64, bool) {
	if s.delta < 0 {
		return 0, false
	}
	return v.buggy.deltas[s.delta], true
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
	inNormal []bool    // per normal run: in its schema
	inBuggy  int       // buggy runs whose schema has it
	normal   []*series // per normal run (nil: no sample)
	buggy    series    // every buggy run
	bs       []bsample
	runs     []int32         // run lengths of the buggy samples
	funcs    map[int32]int   // functions (of the PCs) it was sampled in, in buggy runs
	readIn   map[int32]bool  // globals: of funcs, those whose code reads it or that nobody could tell
	owner    int32           // for locals: the declaring function, −1 until seen
	normalN  int             // samples in normal runs
	result   *VariableResult // set by Result
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
// (profile.RuntimeObject): its own time is the work of its nearest caller
// outside them.
func (a *Analyzer) system(f int32) bool {
	fn := a.funcs[f]
	return fn.kernel || fn.object == profile.KernelObject || profile.RuntimeObject(fn.object)
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

// AddBuggy adds a buggy run (see AddNormal).
func (a *Analyzer) AddBuggy(p *profile.Profile, info Run) error { return a.add(p, info, true) }

// stState follows one variable in one thread.
type stState struct {
	time  uint64 // of the last sample kept
	value float64
	bits  uint64
	kind  recording.ValueKind
	run   int   // length of the current run of equal values
	runID int32 // buggy: index into variable.runs
	has   bool
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
			va.bs = slices.Grow(va.bs, n)
			va.runs = slices.Grow(va.runs, n/4)
		} else {
			for len(va.normal) <= len(a.normal) {
				va.normal = append(va.normal, nil)
			}
			ser = &series{}
			va.normal[len(a.normal)] = ser
		}
		if !va.src.Pointer {
			ser.values = slices.Grow(ser.values, n)
			ser.deltas = slices.Grow(ser.deltas, n)
		}
	}

	period, err := defaultPeriod(p)
	if err != nil {
		return err
	}
	// PC cost: the innermost frame of every CPU sample; stack counts: every
	// function and call edge of its complete stack.
	stackFn := map[int32][]int32{} // stack → functions, innermost first
	perStack := map[int32]float64{}
	var total float64
	err = p.EachSample(func(s *profile.Sample) bool {
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
				for i, fi := range st {
					fr := p.FrameAt(fi)
					fs[i] = a.fn(fr.Name(), fr.Object)
					if fr.Kernel {
						a.funcs[fs[i]].kernel = true
					}
					if f := &a.funcs[fs[i]]; !f.atOK && !fr.Kernel && fr.Offset > 0 && !fr.Inlined {
						f.at, f.atOK = fr.Offset, true
					}
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
	owners := map[int64]int32{}      // source<<32 | frame index → function
	reads := map[int64]bool{}        // globals: source<<32 | frame index → read by the function's code (or unknown)
	frameLoc := map[int32][2]int32{} // frame → line, block
	var tick []owned                 // the values of one sample time
	tickTime := uint64(0)
	// The samples at the time of the values being charged, read along
	// with the values (both come in time order).
	var sampleErr error
	nextSample, stopSamples := iter.Pull(func(yield func(profile.Sample) bool) {
		sampleErr = p.EachSample(func(s *profile.Sample) bool { return yield(*s) })
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
	flush := func() {
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
	// Per variable, its threads' states (few threads per variable: a linear
	// search beats a map).
	states := make([][]stState, len(a.vars))
	stTID := make([][]uint32, len(a.vars))
	normalIdx := len(a.normal)
	err = p.EachValue(func(v *profile.Value) bool {
		if v.Source < 0 || int(v.Source) >= len(srcVar) || v.Missing() {
			return true
		}
		vi := srcVar[v.Source]
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

		// Distributions: one sample per variable, thread and tick (a global
		// read in several frames of one sample counts once).
		var st *stState
		for j, tid := range stTID[vi] {
			if tid == v.TID {
				st = &states[vi][j]
				break
			}
		}
		if st == nil {
			stTID[vi] = append(stTID[vi], v.TID)
			states[vi] = append(states[vi], stState{})
			st = &states[vi][len(states[vi])-1]
		}
		if st.has && st.time == v.Time {
			return true
		}
		var ser *series
		if buggy {
			ser = &va.buggy
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
		x := v.Float64()
		pointer := va.src.Pointer
		// A NaN has no value to compare (NaN ≠ NaN: every NaN would be a
		// value of its own, and two runs of a constant NaN disjoint); it
		// counts only in the durations, which compare bits.
		nan := math.IsNaN(x)
		vAt, dAt := int32(-1), int32(-1) // where x and the delta are kept
		if !pointer && !nan {
			vAt = int32(len(ser.values))
			ser.values = append(ser.values, x)
		}
		same := st.has && st.bits == v.Bits && st.kind == v.Type
		var delta float64
		hasDelta := st.has && !pointer && !nan && !math.IsNaN(st.value)
		if hasDelta {
			delta = x - st.value
			if math.IsNaN(delta) { // ±Inf − ±Inf
				hasDelta, delta = false, 0
			} else {
				dAt = int32(len(ser.deltas))
				ser.deltas = append(ser.deltas, delta)
			}
		}
		if st.has && !same {
			ser.durations = append(ser.durations, float64(st.run))
		}
		if same {
			st.run++
		} else {
			st.run = 1
			if buggy {
				st.runID = int32(len(va.runs))
				va.runs = append(va.runs, 0)
			}
		}
		if buggy {
			va.runs[st.runID]++
			lb := [2]int32{-1, -1}
			if fi >= 0 {
				var ok bool
				if lb, ok = frameLoc[fi]; !ok {
					fr := p.FrameAt(fi)
					lb = [2]int32{a.loc(fr), a.block(fr)}
					frameLoc[fi] = lb
				}
			}
			va.bs = append(va.bs, bsample{value: vAt, delta: dAt, run: st.runID, loc: lb[0], block: lb[1]})
		}
		st.time, st.value, st.bits, st.kind, st.has = v.Time, x, v.Bits, v.Type, true
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
	for vi := range states {
		va := a.vars[vi]
		for j := range states[vi] {
			st := &states[vi][j]
			if !st.has {
				continue
			}
			if buggy {
				va.buggy.durations = append(va.buggy.durations, float64(st.run))
			} else {
				va.normal[normalIdx].durations = append(va.normal[normalIdx].durations, float64(st.run))
			}
		}
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
func defaultPeriod(p *profile.Profile) (float64, error) {
	var ps []float64
	i := 0
	err := p.EachSample(func(s *profile.Sample) bool {
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
