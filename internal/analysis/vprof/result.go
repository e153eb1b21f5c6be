package vprof

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Line is a source line where anomalous values were read.
type Line struct {
	File     string `json:"file"`
	Line     int    `json:"line"`
	Function string `json:"function"`
	Samples  int    `json:"samples"` // buggy samples outside the normal range read there
}

// String returns "file:line" (or the function when the line is not known).
func (l Line) String() string {
	if l.File == "" || l.Line <= 0 {
		return l.Function
	}
	return fmt.Sprintf("%s:%d", l.File, l.Line)
}

// Address is an ELF virtual address, written in JSON as a hex string
// ("0x401136").
type Address uint64

func (a Address) String() string { return fmt.Sprintf("%#x", uint64(a)) }

// MarshalJSON writes the address as a hex string.
func (a Address) MarshalJSON() ([]byte, error) { return []byte(`"` + a.String() + `"`), nil }

// UnmarshalJSON reads a hex string or a number.
func (a *Address) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
	if !strings.HasPrefix(s, "0x") {
		v, err = strconv.ParseUint(s, 10, 64)
	}
	*a = Address(v)
	return err
}

// Block is a basic block of machine code where anomalous values were read:
// [Start, End) in the ELF virtual addresses of Object, inside Function (the
// symbol holding it).
type Block struct {
	Object   string  `json:"object"`
	Function string  `json:"function"`
	Start    Address `json:"start"`
	End      Address `json:"end"`
	Samples  int     `json:"samples"` // buggy samples outside the normal range read there
}

// String returns "start..end".
func (b Block) String() string { return b.Start.String() + ".." + b.End.String() }

// VariableResult is the comparison of one variable.
type VariableResult struct {
	Name     string `json:"name"`
	Function string `json:"function"` // declaring function, "#global" for globals
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
	Type     string `json:"type,omitempty"`
	Tags     string `json:"tags"`
	Global   bool   `json:"global"`
	Pointer  bool   `json:"pointer"`
	// Discount is the lowest discount of its dimensions, Dimension the one
	// that gave it (on ties the later of value, delta, duration), and
	// Anomalous whether that dimension's test told normal from buggy samples.
	Discount       float64     `json:"discount"`
	Dimension      Dimension   `json:"dimension"`
	Anomalous      bool        `json:"anomalous"`
	Dimensions     []DimResult `json:"dimensions"`
	NormalSamples  int         `json:"normal_samples"`
	BuggySamples   int         `json:"buggy_samples"`
	InNormalSchema bool        `json:"in_normal_schema"`
	InBuggySchema  bool        `json:"in_buggy_schema"`
	// Anomaly localises the variable; set for the variables that set a
	// function's discount.
	Anomaly *Anomaly `json:"anomaly,omitempty"`
	// valuesBeyond: the variable's values (not the dimension that set
	// its discount, when another did) lie beyond their normal range.
	valuesBeyond bool
	// lasting: its durations, too, tell the runs apart, and its buggy
	// values last longer (median) than its normal ones.
	lasting bool
}

// Anomaly compares the normal and buggy samples of a variable in the
// dimension that set its discount, and says where the buggy samples outside
// the normal range were read.
type Anomaly struct {
	Dimension    Dimension `json:"dimension"`
	NormalMedian float64   `json:"normal_median"`
	BuggyMedian  float64   `json:"buggy_median"`
	NormalMin    float64   `json:"normal_min"`
	NormalMax    float64   `json:"normal_max"`
	HasNormal    bool      `json:"has_normal"` // false: no normal sample, every buggy one is outside
	Outside      int       `json:"outside"`    // buggy samples outside the normal range
	Considered   int       `json:"considered"` // buggy samples in this dimension
	// Over counts, when no buggy sample lies outside the normal range,
	// the buggy samples whose values the buggy runs over-represent (their
	// bin of the normal quantiles holds a significantly larger share of
	// the buggy samples than of the normal ones); Lines and Blocks are
	// then where those were read.
	Over int `json:"over"`
	// NewBranch says the buggy median takes, at the conditional uses of
	// the variable in its function's code, directions no normal value
	// took: the function decided differently on it.
	NewBranch bool    `json:"new_branch,omitempty"`
	Lines     []Line  `json:"lines"`  // where the samples outside (or over-represented) were read, most first
	Blocks    []Block `json:"blocks"` // the basic blocks they were read in, most first
}

// OutsideFraction is Outside/Considered.
func (a *Anomaly) OutsideFraction() float64 {
	if a == nil || a.Considered == 0 {
		return 0
	}
	return float64(a.Outside) / float64(a.Considered)
}

// History is the hist-discounter's count for a function: in H of C
// comparisons of a buggy run with a normal run, the function ranked higher
// (by raw cost) in the normal run.
type History struct {
	H int `json:"h"`
	C int `json:"c"`
}

// FunctionResult is one ranked function. Costs are seconds of CPU time per
// buggy run (the mean over the buggy runs).
type FunctionResult struct {
	Rank       int       `json:"rank"`
	Name       string    `json:"name"`
	Object     string    `json:"object"`
	Calibrated float64   `json:"calibrated"`
	Raw        float64   `json:"raw"`
	PCCost     float64   `json:"pc_cost"`
	VarCost    float64   `json:"var_cost"`
	Discount   float64   `json:"discount"`
	Dimension  Dimension `json:"dimension"`
	Variable   string    `json:"variable"` // the most anomalous variable, "" when none
	Pattern    Pattern   `json:"pattern"`
	Lines      []Line    `json:"lines"`
	Blocks     []Block   `json:"blocks"`
	Variables  int       `json:"variables"` // variables charged to the function
	History    *History  `json:"history,omitempty"`
	// Var is the variable that set the discount.
	Var *VariableResult `json:"variable_info,omitempty"`

	// The differential method's ranking (zero with MethodVprof): Score is
	// (1 − Discount) × the growth of the function's share of CPU time;
	// Share its inclusive share (samples whose stack holds it) in both
	// kinds of run, SelfShare its own (innermost frame); Evidence what
	// holds it responsible; Through the callee that carries all of its
	// growth when it has no evidence of its own (it ranks just below it);
	// Calls the callee that took a larger part of its time (its own code
	// unchanged); Why one line that says all of this.
	Score     float64  `json:"score"`
	Share     Share    `json:"share"`
	SelfShare Share    `json:"self_share"`
	Evidence  Evidence `json:"evidence,omitempty"`
	Through   string   `json:"through,omitempty"`
	// Replaces: a function only the buggy runs reached that calls, as
	// its heaviest callee, work the normal runs reached through this
	// function, which the buggy runs never reached: a new route to old
	// work.
	Replaces string `json:"replaces,omitempty"`
	// Reached: a callee only the buggy runs ran, into which most of this
	// function's growth went on a call it did not decide on a test of
	// its own; it ranks just below it.
	Reached string `json:"reached,omitempty"`
	Input   string `json:"input,omitempty"`  // EvidenceInput, or a loop run to a bound it was given: the global it reads
	Config  string `json:"config,omitempty"` // EvidenceThreshold: the configuration global its code reads
	Calls   *Calls `json:"calls,omitempty"`
	// CalledMore: a callee whose own code grew while its loop variable
	// stayed in its normal range, which this function called more often.
	CalledMore *CalledMore `json:"called_more,omitempty"`
	// CalledBy: this function did the same work per call as normally and
	// was called more often, but its callers call it once on every call
	// of their own up to one that cannot have decided the calls: the
	// growth stays with it.
	CalledBy *CalledBy `json:"called_by,omitempty"`
	// Decides: the function, called more often, whose every call this
	// predicate's answer decided.
	Decides *Decides `json:"decides,omitempty"`
	// Repair: the loop that grew, whose bounds this function's check
	// decides to rewrite by a call it did not make more often.
	Repair *Repair `json:"repair,omitempty"`
	// Range: two of its pointers delimit a range longer than any in the
	// normal runs, while no function above it held one: it made the
	// longer range its callees work on.
	Range *Range `json:"range,omitempty"`
	// Repeats: a trace shows it calling a function again with the
	// arguments of an earlier call in the same request.
	Repeats *Repeat `json:"repeats,omitempty"`
	// Asks: the work it asks for, which several callers ask for alike and
	// whose every function does the same work per call: it answers for
	// that work's growth (docs/vprof.md, "Work several callers ask for").
	Asks *Asks `json:"asks,omitempty"`
	// NewRecursion: it calls itself in the buggy runs, which no normal
	// run did; its pattern is how its code decides that call.
	NewRecursion bool `json:"new_recursion,omitempty"`
	// Unsampled says why none of its own variables could be sampled when
	// the runs' schemas list none: UnsampledNoDebugInfo or
	// UnsampledNotListed ("" when some are listed). Its own time then
	// says that it did more work, not which pattern (Pattern is none).
	Unsampled string `json:"unsampled,omitempty"`
	Why       string `json:"why,omitempty"`
	// plain is its share before it was measured by time (Share.Time > 0).
	plain Share
	// timedWhole and timedOwn are its share and its own code's, read by
	// time per run, where its share is saturated (timedWhole.Time > 0).
	timedWhole, timedOwn Share
}

// Asks is the work a caller asks for (FunctionResult.Asks): Callee, which
// Callers functions call for a part of its growth each, and Worker, the
// function under it whose own code did the work.
type Asks struct {
	Callee  string `json:"callee"`
	Callers int    `json:"callers"`
	Worker  string `json:"worker"`
}

// Why a function has no variables of its own to sample (FunctionResult.Unsampled).
const (
	// UnsampledNoDebugInfo: no frame of it carried a source line: its
	// object has no debug information for its code (built without -g),
	// so no schema can list its variables.
	UnsampledNoDebugInfo = "no-debug-info"
	// UnsampledNotListed: its code has line information, but the runs'
	// schemas list none of its variables (none is tagged loop, cond or
	// args, or the schema was cut to a component).
	UnsampledNotListed = "not-listed"
)

// Range is the length (end − start, in bytes) of a range two pointer
// locals of a function delimit: the longest in the normal runs and the
// buggy runs' median.
type Range struct {
	Start       string  `json:"start"`
	End         string  `json:"end"`
	NormalMax   float64 `json:"normal_max"`
	BuggyMedian float64 `json:"buggy_median"`
}

// Repair names a loop that did more work per call (Loop, the function
// whose own code grew) and the check that decides to rewrite its bounds:
// Callee, which rewrites the members Bounds the loop's exit tests depend
// on, is called on a test of the members Tests.
type Repair struct {
	Loop   string   `json:"loop"`
	Callee string   `json:"callee"`
	Bounds []string `json:"bounds"`
	Tests  []string `json:"tests"`
}

// Decides names the function whose calls a predicate's answer decided.
type Decides struct {
	Callee string `json:"callee"`
}

// CalledMore names a callee that did the same work per call as normally
// but was called more often, and its loop variable that says so; or, with
// Bounded, a callee whose code does at most a fixed amount of work per
// call (its loops run to constants), which grew by what it was handed.
type CalledMore struct {
	Callee string `json:"callee"`
	// Work: the function whose own code grew, when Callee calls it
	// exactly once on every call of its own (Callee was called more
	// to have it called more); empty when Callee is that function.
	Work     string `json:"work,omitempty"`
	Variable string `json:"variable"`
	Bounded  bool   `json:"bounded,omitempty"`
	// New: the callee ran in no normal run, and this function's code
	// calls it on a test of its own: it decided to take that path.
	New bool `json:"new,omitempty"`
	// Mode: the callee ran normally, but the path to new work leaves the
	// normal ones at it because this function called it with a parameter
	// every normal call passed at another value.
	Mode *Mode `json:"mode,omitempty"`
	// Instead: the callee that took most of this function's time in the
	// normal runs and hardly any in the buggy ones, which the new path
	// displaced: the test chose another way to do the same work.
	Instead string `json:"instead,omitempty"`
}

// CalledBy names the caller that calls a function once on every call of
// its own (Caller), and what says the function did the same work per call
// as normally: its loop variable in its normal range (Variable), or its
// loops' fixed bounds (Bounded).
type CalledBy struct {
	Caller   string `json:"caller"`
	Variable string `json:"variable,omitempty"`
	Bounded  bool   `json:"bounded,omitempty"`
	// New: the calls came down a path the normal runs hardly ran, which
	// a caller with evidence of its own entered on a test.
	New bool `json:"new,omitempty"`
}

// Mode is a parameter whose normal values were one value (Normal), but
// for fewer than SameWorkSamples of them (Others of the Samples), and
// whose buggy values were mostly another (Buggy: their median).
type Mode struct {
	Parameter string  `json:"parameter"`
	Normal    float64 `json:"normal"`
	Buggy     float64 `json:"buggy"`
	Samples   int     `json:"samples"`          // normal samples of the parameter
	Others    int     `json:"others,omitempty"` // of them, those that held another value
}

// normalCalls says what the normal calls passed, for a why line.
func (m *Mode) normalCalls() string {
	if m.Others == 0 {
		return "every normal call passed " + num(m.Normal)
	}
	return fmt.Sprintf("the normal calls passed %s in %d of %d samples", num(m.Normal), m.Samples-m.Others, m.Samples)
}

// Calls is the part of a function's time (samples whose stack holds it)
// spent in one callee, in the normal and the buggy runs.
type Calls struct {
	Callee string  `json:"callee"`
	Normal float64 `json:"normal"`
	Buggy  float64 `json:"buggy"`
}

// Result is a vProf diagnosis.
type Result struct {
	Options    Options           `json:"-"`
	Method     Method            `json:"method"`
	Inputs     []Input           `json:"inputs,omitempty"` // differential: run-constant values that differ
	Normal     []Run             `json:"normal"`
	Buggy      []Run             `json:"buggy"`
	History    bool              `json:"history"` // the hist-discounter was used
	Functions  []FunctionResult  `json:"functions"`
	Variables  []*VariableResult `json:"-"`
	OnlyNormal []string          `json:"only_normal,omitempty"` // variables only in the normal runs' schemas
	OnlyBuggy  []string          `json:"only_buggy,omitempty"`  // variables only in the buggy runs' schemas
	Warnings   []string          `json:"warnings,omitempty"`
	// Notes are facts about the inputs that need no action, e.g.
	// variables of the runs' common schema whose code ran in one kind of
	// run only.
	Notes []string `json:"notes,omitempty"`
}

// SchemaError is returned when the normal and buggy runs share no variable.
type SchemaError struct {
	Normal, Buggy int  // variables of each kind of run
	Same          bool // every run was recorded with the same schema
}

func (e *SchemaError) Error() string {
	if e.Same {
		return fmt.Sprintf("the normal runs sampled %d variables and the buggy runs %d, and none is common, although the runs were "+
			"recorded with the same schema: the two kinds of run executed different code; record runs that share the code under suspicion", e.Normal, e.Buggy)
	}
	return fmt.Sprintf("the normal runs sampled %d variables and the buggy runs %d, and none is common: "+
		"the runs were recorded with different schemas or programs; record both with the same --values=SCHEMA", e.Normal, e.Buggy)
}

// schemaMatch says whether a variable sampled in one kind of run only was
// in the other kind's schema.
type schemaMatch int

const (
	schemaUnknown schemaMatch = iota // a run's schema is not recorded
	schemaSame                       // every run of the other kind was recorded with the variable's schema
	schemaOther                      // some run of the other kind was recorded with another schema
)

// matchSchema tells whether the schema identity id (a variable's) is the
// schema of every one of runs.
func matchSchema(id string, runs []*runData) schemaMatch {
	if id == "" {
		return schemaUnknown
	}
	m := schemaSame
	for _, r := range runs {
		switch {
		case len(r.info.Schemas) == 0:
			return schemaUnknown
		case !slices.Contains(r.info.Schemas, id):
			m = schemaOther
		}
	}
	return m
}

// sameSchemas reports whether every run carries the same schema identities.
func sameSchemas(runs ...[]*runData) bool {
	var first []string
	for _, rs := range runs {
		for _, r := range rs {
			if len(r.info.Schemas) == 0 {
				return false
			}
			if first == nil {
				first = r.info.Schemas
			} else if !slices.Equal(first, r.info.Schemas) {
				return false
			}
		}
	}
	return first != nil
}

// otherIDs lists the schema identities of runs, shortened, for messages.
func otherIDs(runs []*runData) string {
	var ids []string
	for _, r := range runs {
		for _, id := range r.info.Schemas {
			if len(id) > 8 {
				id = id[:8]
			}
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	return strings.Join(ids, ", ")
}

func (v *variable) name() string {
	if v.src.Global || v.src.Function == "" || v.src.Function == "#global" {
		return v.src.Name
	}
	return v.src.Function + ":" + v.src.Name
}

// Result compares the runs added so far.
func (a *Analyzer) Result() (*Result, error) {
	if len(a.normal) == 0 || len(a.buggy) == 0 {
		return nil, ErrNoRuns
	}
	if err := a.locate(); err != nil {
		return nil, err
	}
	o := a.opt
	res := &Result{Options: o, Method: o.method()}
	for _, r := range a.normal {
		res.Normal = append(res.Normal, r.info)
	}
	for _, r := range a.buggy {
		res.Buggy = append(res.Buggy, r.info)
	}
	// Schemas. A variable sampled in one kind of run only is either of
	// the other kind's schema too, its code not run there (the runs'
	// recordings say so: the same schema identity), or of a schema the
	// other kind was not recorded with.
	var common, nNormal, nBuggy int
	only := map[bool]map[schemaMatch][]string{true: {}, false: {}} // by "in the buggy runs"
	coldInNormal := map[*variable]bool{}
	for _, v := range a.vars {
		inN := false
		for _, b := range v.inNormal {
			inN = inN || b
		}
		inB := v.inBuggy > 0
		if inN {
			nNormal++
		}
		if inB {
			nBuggy++
		}
		switch {
		case inN && inB:
			common++
		case inN:
			res.OnlyNormal = append(res.OnlyNormal, v.name())
			m := matchSchema(v.src.Schema, a.buggy)
			only[false][m] = append(only[false][m], v.name())
		case inB:
			res.OnlyBuggy = append(res.OnlyBuggy, v.name())
			m := matchSchema(v.src.Schema, a.normal)
			only[true][m] = append(only[true][m], v.name())
			coldInNormal[v] = m == schemaSame
		}
	}
	if common == 0 {
		return nil, &SchemaError{Normal: nNormal, Buggy: nBuggy, Same: sameSchemas(a.normal, a.buggy)}
	}
	sort.Strings(res.OnlyNormal)
	sort.Strings(res.OnlyBuggy)
	for _, names := range only {
		for _, ns := range names {
			sort.Strings(ns)
		}
	}
	if ns := only[true][schemaSame]; len(ns) > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%s of the runs' schema but sampled in the buggy runs only (%s): their code did not run in the normal runs, "+
			"which makes them anomalous", variables(len(ns)), list(ns, 5)))
	}
	if ns := only[true][schemaOther]; len(ns) > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%s in the buggy runs' schema, and the normal runs were recorded with another schema (%s) that lacks them (%s): "+
			"taken as never sampled in the normal runs, which makes them anomalous; record both with the same --values=SCHEMA",
			variables(len(ns)), otherIDs(a.normal), list(ns, 5)))
	}
	if ns := only[true][schemaUnknown]; len(ns) > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%s in the buggy runs' schema but not in the normal runs' (%s): "+
			"taken as never sampled in the normal runs, which makes them anomalous; if the runs used different schemas, record both with the same --values=SCHEMA",
			variables(len(ns)), list(ns, 5)))
	}
	if ns := only[false][schemaSame]; len(ns) > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%s of the runs' schema but sampled in the normal runs only (%s): their code did not run in the buggy runs; not used",
			variables(len(ns)), list(ns, 5)))
	}
	if ns := only[false][schemaOther]; len(ns) > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%s in the normal runs' schema, and the buggy runs were recorded with another schema (%s) that lacks them (%s): "+
			"not used; record both with the same --values=SCHEMA", variables(len(ns)), otherIDs(a.buggy), list(ns, 5)))
	}
	if ns := only[false][schemaUnknown]; len(ns) > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%s in the normal runs' schema but not in the buggy runs' (%s): no buggy samples, not used",
			variables(len(ns)), list(ns, 5)))
	}

	// Discounts of the variables, in parallel.
	comps := make([]comparison, len(a.vars))
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if a.pause != nil {
					a.pause()
				}
				comps[i] = o.discountVar(a.vars[i], len(a.normal))
			}
		}()
	}
	for i := range a.vars {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, v := range a.vars {
		c := comps[i]
		d := c.dims[c.chosen]
		inN := false
		for _, b := range v.inNormal {
			inN = inN || b
		}
		inN = inN || coldInNormal[v]
		vr := &VariableResult{Name: v.src.Name, Function: v.src.Function, File: v.src.File, Line: v.src.Line,
			Type: v.src.Type, Tags: v.src.Tags, Global: v.src.Global, Pointer: v.src.Pointer,
			Discount: d.Discount, Dimension: d.Dimension, Anomalous: d.Rejected, Dimensions: c.dims,
			NormalSamples: v.normalN, BuggySamples: v.buggyN, InNormalSchema: inN, InBuggySchema: v.inBuggy > 0}
		v.result = vr
		res.Variables = append(res.Variables, vr)
	}

	// Variables charged to functions: a local to its own function, a global
	// to every function it was sampled in (in the buggy runs).
	charged := map[int32][]int32{}
	for i, v := range a.vars {
		if v.buggyN == 0 && v.normalN == 0 {
			continue
		}
		if !v.src.Global && v.owner >= 0 {
			charged[v.owner] = append(charged[v.owner], int32(i))
			continue
		}
		for f := range v.funcs {
			charged[f] = append(charged[f], int32(i))
		}
	}

	// Raw costs, the mean over the buggy runs.
	nb := float64(len(a.buggy))
	pc := map[int32]float64{}
	vc := map[int32]float64{}
	for _, r := range a.buggy {
		for f, c := range r.pcCost {
			pc[f] += c / nb
		}
		for f, c := range r.varCost {
			vc[f] += c / nb
		}
	}
	funcs := map[int32]bool{}
	for f := range pc {
		funcs[f] = true
	}
	for f := range vc {
		funcs[f] = true
	}
	if res.Method == MethodDifferential {
		// Functions seen only as callers in the stacks (no own sample, no
		// variable) are ranked too: a cheap caller in a library whose
		// variables are not sampled.
		for _, r := range a.buggy {
			for f := range r.stacks.incl {
				funcs[f] = true
			}
		}
	}
	res.History = len(a.normal) >= 2 && len(a.buggy) >= 2
	var ranks []map[int32]int
	if res.History {
		for _, r := range append(append([]*runData(nil), a.normal...), a.buggy...) {
			ranks = append(ranks, rankRun(r))
		}
	}
	mostCostly, top := int32(-1), -1.0
	for f := range funcs {
		raw := math.Max(pc[f], vc[f])
		if raw > top || (raw == top && f < mostCostly) {
			mostCostly, top = f, raw
		}
	}
	var ids []int32
	for f := range funcs {
		ids = append(ids, f)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, f := range ids {
		raw := math.Max(pc[f], vc[f])
		fr := FunctionResult{Name: a.funcs[f].name, Object: a.funcs[f].object, Raw: raw / 1e9,
			PCCost: pc[f] / 1e9, VarCost: vc[f] / 1e9, Dimension: DimNone, Pattern: NoPattern, Lines: []Line{}, Blocks: []Block{}}
		vars := charged[f]
		fr.Variables = len(vars)
		if len(vars) > 0 {
			best := a.mostAnomalous(vars, comps)
			v := a.vars[best]
			vr := v.result
			fr.Discount = vr.Discount
			fr.Variable = vr.Name
			fr.Var = vr
			fr.Dimension = vr.Dimension
			if !vr.Anomalous {
				fr.Dimension = DimDefault
			}
			if vr.Anomaly == nil {
				vr.Anomaly = a.localise(v, comps[best], -1)
			}
			if vr.Anomalous {
				own := a.localise(v, comps[best], f)
				fr.Lines, fr.Blocks = own.Lines, own.Blocks
			}
			basic := false
			for _, i := range vars {
				basic = basic || !a.vars[i].src.Pointer
			}
			fr.Pattern = infer(vr, f == mostCostly && !basic)
		} else if res.History {
			h := a.history(f, ranks)
			fr.History = &h
			if h.C > 0 {
				fr.Discount = float64(h.H) / float64(h.C)
				if fr.Discount < o.ValidDiscount {
					fr.Discount = 0
				}
				fr.Dimension = DimHistory
			}
		}
		fr.Calibrated = (1 - fr.Discount) * fr.Raw
		res.Functions = append(res.Functions, fr)
	}
	if res.Method == MethodDifferential {
		// Globals: only the functions whose code reads them.
		charged = map[int32][]int32{}
		for i, v := range a.vars {
			if v.buggyN == 0 && v.normalN == 0 {
				continue
			}
			if !v.src.Global && v.owner >= 0 {
				charged[v.owner] = append(charged[v.owner], int32(i))
				continue
			}
			for f := range v.readIn {
				charged[f] = append(charged[f], int32(i))
			}
		}
		for i := range res.Functions {
			fr := &res.Functions[i]
			fr.Var, fr.Variable, fr.Dimension, fr.Pattern = nil, "", DimDefault, NoPattern
			fr.Lines, fr.Blocks, fr.History = []Line{}, []Block{}, nil
		}
		before := append([]FunctionResult(nil), res.Functions...)
		inputs, notes := len(res.Inputs), len(res.Notes)
		if unseen := a.differential(res, ids, res.Functions, comps, charged); len(unseen) > 0 {
			// Predicates and checks no sample holds, named by the
			// machine code as deciding calls that grew or rewrites of a
			// grown loop's bounds: ranked with the others, from the
			// same start.
			res.Functions, res.Inputs, res.Notes = before, res.Inputs[:inputs], res.Notes[:notes]
			for _, f := range unseen {
				ids = append(ids, f)
				res.Functions = append(res.Functions, FunctionResult{Name: a.funcs[f].name, Object: a.funcs[f].object,
					Dimension: DimDefault, Pattern: NoPattern, Lines: []Line{}, Blocks: []Block{}})
			}
			a.differential(res, ids, res.Functions, comps, charged)
		}
	}
	sort.Slice(res.Functions, func(i, j int) bool {
		x, y := res.Functions[i], res.Functions[j]
		if x.Score != y.Score {
			return x.Score > y.Score
		}
		if x.Calibrated != y.Calibrated {
			return x.Calibrated > y.Calibrated
		}
		if x.Raw != y.Raw {
			return x.Raw > y.Raw
		}
		if x.Name != y.Name {
			return x.Name < y.Name
		}
		return x.Object < y.Object
	})
	for i := range res.Functions {
		res.Functions[i].Rank = i + 1
	}
	return res, nil
}

func variables(n int) string {
	if n == 1 {
		return "1 variable is"
	}
	return fmt.Sprintf("%d variables are", n)
}

func list(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:n], ", ") + fmt.Sprintf(", … %d more", len(names)-n)
}

// mostAnomalous returns the variable with the lowest discount. Ties go, in
// order, to a variable whose test rejected, to one sampled in the normal
// runs too (whose anomaly a test established), to the stronger anomaly of
// the dimension that set it (larger Hellinger distance, then value over
// duration over delta, as between dimensions), to more buggy samples (the
// variable live over more of the function's time: a state that persists
// across the work, rather than one scoped inside it), and to the name. The
// order of the variables never decides.
func (a *Analyzer) mostAnomalous(vars []int32, comps []comparison) int32 {
	best := vars[0]
	for _, i := range vars[1:] {
		x, y := a.vars[i].result, a.vars[best].result
		dx, dy := comps[i].dims[comps[i].chosen], comps[best].dims[comps[best].chosen]
		switch {
		case strongerDim(dx, dy):
			best = i
		case strongerDim(dy, dx):
			// keep best
		case x.BuggySamples != y.BuggySamples:
			if x.BuggySamples > y.BuggySamples {
				best = i
			}
		case a.vars[i].name() < a.vars[best].name():
			best = i
		}
	}
	return best
}

// tags are a variable's schema tags.
type tags struct{ loop, cond, args bool }

func parseTags(s string) tags {
	var t tags
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '|' || r == ' ' || r == ';' }) {
		switch strings.ToLower(w) {
		case "loop":
			t.loop = true
		case "cond", "branch":
			t.cond = true
		case "args", "arg":
			t.args = true
		}
	}
	return t
}

// infer applies vProf's rules in order (§5.2) to the variable that set a
// function's discount:
//  1. loop or cond variable, anomalous in duration → missing constraint;
//  2. loop variable, anomalous in value or delta → scalability;
//  3. cond variable, anomalous → wrong constraint;
//  4. the most costly function, with no variable of a basic type (pointers
//     only) and the DefaultDiscount from the duration dimension → scalability.
func infer(v *VariableResult, mostCostlyPointersOnly bool) Pattern {
	t := parseTags(v.Tags)
	if v.Anomalous {
		switch {
		case (t.loop || t.cond) && v.Dimension == DimDuration:
			return MissingConstraint
		case t.loop && (v.Dimension == DimValue || v.Dimension == DimDelta):
			return Scalability
		case t.cond:
			return WrongConstraint
		}
		return NoPattern
	}
	if mostCostlyPointersOnly && v.Dimension == DimDuration {
		return Scalability
	}
	return NoPattern
}

// rankRun ranks a run's functions by raw cost (1 = costliest; equal costs
// share a rank).
func rankRun(r *runData) map[int32]int {
	type fc struct {
		f int32
		c float64
	}
	var all []fc
	seen := map[int32]bool{}
	for _, m := range []map[int32]float64{r.pcCost, r.varCost} {
		for f := range m {
			if !seen[f] {
				seen[f] = true
				all = append(all, fc{f, r.raw(f)})
			}
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].c != all[j].c {
			return all[i].c > all[j].c
		}
		return all[i].f < all[j].f
	})
	out := make(map[int32]int, len(all))
	for i, x := range all {
		if i > 0 && x.c == all[i-1].c {
			out[x.f] = out[all[i-1].f]
		} else {
			out[x.f] = i + 1
		}
	}
	return out
}

// history is the hist-discounter: over every pair of a buggy and a normal
// run in which f appears, how often f ranks higher in the normal run. A
// function missing from a run ranks below every function of it.
func (a *Analyzer) history(f int32, ranks []map[int32]int) History {
	var h History
	nn := len(a.normal)
	for b := nn; b < len(ranks); b++ {
		for n := 0; n < nn; n++ {
			rb, okb := ranks[b][f]
			rn, okn := ranks[n][f]
			if !okb && !okn {
				continue
			}
			h.C++
			if okn && (!okb || rn < rb) {
				h.H++
			}
		}
	}
	return h
}

// localise compares a variable's normal and buggy samples in the dimension
// that set its discount: the normal range (pooled over the normal runs), the
// buggy samples outside it (beyond 5% of the bound's magnitude, as vProf's
// code) and the lines they were read at: with fn ≥ 0 only those read while
// charged to function fn (a global read in several functions gives each
// its own lines), else all of them.
func (a *Analyzer) localise(v *variable, c comparison, fn int32) *Anomaly {
	d := c.dims[c.chosen].Dimension
	var normal []float64
	for _, s := range v.normal {
		if s != nil {
			normal = s.pick(d).appendTo(normal)
		}
	}
	buggy := v.buggy.pick(d)
	an := &Anomaly{Dimension: d, Lines: []Line{}, Blocks: []Block{}}
	if len(normal) > 0 {
		an.HasNormal = true
		an.NormalMin, an.NormalMax = normal[0], normal[0]
		for _, x := range normal {
			an.NormalMin = math.Min(an.NormalMin, x)
			an.NormalMax = math.Max(an.NormalMax, x)
		}
		an.NormalMedian = median(normal)
	}
	if buggy.len() > 0 {
		an.BuggyMedian = median(buggy.floats())
	}
	if d == DimValue && parseTags(v.src.Tags).cond {
		an.NewBranch = a.newBranch(v)
	}
	// The buggy samples outside the normal range, found by locate.
	wh := v.where[slices.Index(dimensions[:], d)]
	an.Considered, an.Outside = wh.considered, wh.outside
	at, inBlock := wh.at, wh.inBlock
	if wh.outside == 0 && wh.over > 0 {
		// Only the mix changed: where the values the buggy runs
		// over-represent were read.
		an.Over, at, inBlock = wh.over, wh.overAt, wh.overInBlock
	}
	for b, n := range inBlock {
		if (fn >= 0 && b.fn != fn) || (fn < 0 && b.extra) {
			continue
		}
		bl := a.blocks[b.i]
		bl.Samples = n
		an.Blocks = mergeBlock(an.Blocks, bl)
	}
	sort.Slice(an.Blocks, func(i, j int) bool {
		x, y := an.Blocks[i], an.Blocks[j]
		if x.Samples != y.Samples {
			return x.Samples > y.Samples
		}
		if x.Object != y.Object {
			return x.Object < y.Object
		}
		return x.Start < y.Start
	})
	if len(an.Blocks) > 20 {
		an.Blocks = an.Blocks[:20]
	}
	for l, n := range at {
		if (fn >= 0 && l.fn != fn) || (fn < 0 && l.extra) {
			continue
		}
		line := Line{Function: "[unknown]", Samples: n}
		if l.i >= 0 {
			line = Line{File: a.locs[l.i].file, Line: a.locs[l.i].line, Function: a.locs[l.i].function, Samples: n}
		}
		an.Lines = mergeLine(an.Lines, line)
	}
	sort.Slice(an.Lines, func(i, j int) bool {
		x, y := an.Lines[i], an.Lines[j]
		if x.Samples != y.Samples {
			return x.Samples > y.Samples
		}
		if x.File != y.File {
			return x.File < y.File
		}
		return x.Line < y.Line
	})
	if len(an.Lines) > 20 {
		an.Lines = an.Lines[:20]
	}
	return an
}

// mergeLine adds l to ls, or its samples to the same line already there
// (read while charged to different functions).
func mergeLine(ls []Line, l Line) []Line {
	for i := range ls {
		if ls[i].File == l.File && ls[i].Line == l.Line && ls[i].Function == l.Function {
			ls[i].Samples += l.Samples
			return ls
		}
	}
	return append(ls, l)
}

// mergeBlock is mergeLine for basic blocks.
func mergeBlock(bs []Block, b Block) []Block {
	for i := range bs {
		if bs[i].Object == b.Object && bs[i].Start == b.Start {
			bs[i].Samples += b.Samples
			return bs
		}
	}
	return append(bs, b)
}

// median returns the median of xs (the lower middle element for an even
// count) without sorting xs.
func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	k := (len(s) - 1) / 2
	lo, hi := 0, len(s)-1
	for lo < hi {
		p := s[lo+(hi-lo)/2]
		i, j := lo, hi
		for i <= j {
			for s[i] < p {
				i++
			}
			for s[j] > p {
				j--
			}
			if i <= j {
				s[i], s[j] = s[j], s[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return s[k]
		}
	}
	return s[k]
}
