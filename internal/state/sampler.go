package state

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/culprit-dev/culprit/internal/dwarfx"
	"github.com/culprit-dev/culprit/internal/expr"
	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/rules"
	"github.com/culprit-dev/culprit/internal/schema"
	"github.com/culprit-dev/culprit/internal/unwind"
)

// Resolver says which object is mapped at a PC of the thread's process and
// with which load bias (runtime address = ELF address + bias).
type Resolver interface {
	Object(pc uint64) (path string, bias uint64, ok bool)
}

// Thread is a sampled or stopped thread.
type Thread struct {
	PID, TID int
	Time     uint64
	Exe      string                              // the process's executable
	Frames   []unwind.Frame                      // unwound frames, innermost first (unwind.UnwindFrames)
	Mem      func(addr uint64, buf []byte) error // reads memory as it was at the sample; nil: none
	Objects  Resolver
}

// Sampler evaluates PROG@FUNC@EXPR specs, and the rules of a rules file,
// at samples.
type Sampler struct {
	specs   []*expr.Spec
	ids     []uint32 // ValueSource ID of each spec, 0 until written
	named   []bool   // the spec's ValueSource was written with its enumerators
	rules   *rules.Engine
	file    *rules.File
	ruleIDs map[recording.ValueSource]uint32 // rule captures and counters written so far
	values  *valueState                      // vProf value sampling; nil: off
	nextID  uint32
	mu      sync.Mutex
	infos   map[string]*dwarfx.Info // nil value: the object has no usable DWARF
	codes   map[string]*schema.Code // machine code of objects, by path; nil value: unreadable
	errs    map[int]string          // first non-missing error per spec (rule captures: -ID)
	noDWARF map[string]bool
}

// NewSampler makes a sampler for specs and, when rf is not nil, the rules
// of a rules file; ValueSource IDs start at firstID.
func NewSampler(specs []*expr.Spec, rf *rules.File, firstID uint32) *Sampler {
	if firstID == 0 {
		firstID = 1
	}
	s := &Sampler{specs: specs, ids: make([]uint32, len(specs)), named: make([]bool, len(specs)), nextID: firstID,
		infos: map[string]*dwarfx.Info{}, codes: map[string]*schema.Code{}, errs: map[int]string{}, noDWARF: map[string]bool{},
		ruleIDs: map[recording.ValueSource]uint32{}}
	if rf != nil {
		s.file, s.rules = rf, rules.NewEngine(rf)
	}
	return s
}

// Wants reports whether any spec applies to the executable, so collectors
// can skip the work for other processes.
func (s *Sampler) Wants(exe string) bool {
	if s.values != nil {
		return true
	}
	for _, sp := range s.specs {
		if sp.MatchProg(exe) || namesObject(sp) {
			return true
		}
	}
	if s.file != nil {
		base := filepath.Base(exe)
		for _, p := range s.file.Programs {
			if ok, _ := filepath.Match(p.Glob, base); ok {
				return true
			}
		}
	}
	return false
}

// Result is what the sampler decides for a sample.
type Result struct {
	Records []recording.Record // value sources and values to write after the sample
	Drop    bool               // rules have stopped capturing: do not record the sample
	Keep    int                // rules ask for this many innermost user frames (0: all)
}

// located is a frame whose function DWARF knows.
type located struct {
	obj   string // the object's path
	info  *dwarfx.Info
	fn    *dwarfx.Function
	pc    uint64 // ELF address
	bias  uint64
	depth int
	code  *schema.Code // the object's machine code, for functions compiled by Go; else nil
}

// locate finds the function of every frame.
func (s *Sampler) locate(th Thread) []located {
	var out []located
	for d, f := range th.Frames {
		pc := f.PC
		if !f.Exact {
			pc-- // a return address: look up the call
		}
		path, bias, ok := th.Objects.Object(pc)
		if !ok {
			continue
		}
		if len(s.specs) == 0 && s.rules == nil && s.values != nil && !s.values.sampled(path, th.Exe) {
			continue // value sampling does not read this object's frames: no need for its DWARF
		}
		in := s.info(path)
		if in == nil {
			continue
		}
		fn, ok := in.Function(pc - bias)
		if !ok {
			continue
		}
		var code *schema.Code
		if fn.IsGo() {
			code = s.code(path)
		}
		out = append(out, located{path, in, fn, pc - bias, bias, d, code})
	}
	return out
}

// stackEnv gives the located frames of one sample their environments for
// evaluating expressions: a caller frame gets, besides the registers CFI
// restores, those that no function it called has written since
// (restoreUnchanged), and a location that needs a register's value at the
// function's entry (DW_OP_entry_value, which GCC emits at -O2 for a
// counter turned into a pointer walk, and for parameters whose register
// was reused) gets it from the caller's call site, as gdb does: the call
// that returns to the caller frame's return address, if it calls this
// function directly, says how to compute in the caller's frame what it
// passed in that register (DW_TAG_call_site_parameter).
type stackEnv struct {
	s       *Sampler
	th      Thread
	located []located
	clob    []uint32 // Sampler.clobbered, computed on first need
}

func (e *stackEnv) env(at located) *frameEnv {
	f := e.th.Frames[at.depth]
	frame := &dwarfx.Frame{Regs: f.Regs, RegValid: f.Valid, CFA: f.CFA, Bias: at.bias, Mem: e.th.Mem}
	if at.depth > 0 {
		if at.depth >= len(e.clob) {
			e.clob = e.s.clobbered(e.th, max(at.depth, 4))
		}
		restoreUnchanged(frame, e.th.Frames[0], e.clob[at.depth])
	}
	frame.EntryValue = func(reg uint64) (uint64, error) { return e.entryValue(at, reg) }
	return &frameEnv{info: at.info, fn: at.fn, pc: at.pc, frame: frame, code: at.code}
}

// entryValue recovers the value register reg had at the entry of at's
// function from the call site in the frame above it.
func (e *stackEnv) entryValue(at located, reg uint64) (uint64, error) {
	for _, c := range e.located {
		if c.depth < at.depth+1 {
			continue
		}
		if c.depth > at.depth+1 || e.th.Frames[c.depth].Exact {
			break
		}
		cs, ok := c.fn.CallSite(e.th.Frames[c.depth].PC - c.bias)
		if !ok || !cs.Calls(at.fn) {
			break
		}
		return cs.Value(reg, e.env(c).frame)
	}
	return 0, fmt.Errorf("%w: no call site of %s in the frame above says", dwarfx.ErrEntryValue, at.fn.Name)
}

// value makes a Value record of an evaluation.
func value(th Thread, id uint32, depth int, v expr.Scalar, err error) *recording.Value {
	rec := &recording.Value{Time: th.Time, PID: uint32(th.PID), TID: uint32(th.TID), Source: id,
		Depth: uint8(min(depth, 255))}
	if depth < len(th.Frames) {
		rec.PC = th.Frames[depth].PC
	}
	switch {
	case err != nil:
		rec.Type = recording.ValueMissing
	case v.Kind == expr.Int:
		rec.Type, rec.Bits = recording.ValueInt, uint64(v.I)
	case v.Kind == expr.Uint:
		rec.Type, rec.Bits = recording.ValueUint, v.U
	default:
		rec.Type, rec.Bits = recording.ValueFloat, math.Float64bits(v.F)
	}
	return rec
}

// Apply runs the specs and the rules at a sample.
func (s *Sampler) Apply(th Thread) Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rules == nil && !s.Wants(th.Exe) {
		return Result{} // (rules decide for every process: capturing may be stopped)
	}
	// Find every frame's function once; specs, values and rules share it.
	located := s.locate(th)
	st := &stackEnv{s: s, th: th, located: located}
	var res Result
	res.Records = s.sampleSpecs(st)
	if s.values != nil {
		res.Records = s.sampleValues(st, res.Records)
	}
	if s.rules == nil {
		return res
	}
	frames := make([]rules.Frame, len(th.Frames))
	for i := range frames {
		frames[i].Env = noEnv{}
	}
	for _, at := range located {
		frames[at.depth] = rules.Frame{Function: at.fn.Name, Env: st.env(at)}
	}
	o := s.rules.Sample(th.Exe, frames)
	res.Drop, res.Keep = !o.Record, o.Backtrace
	for _, v := range o.Values {
		src := recording.ValueSource{Class: recording.SourceExpression, Name: v.Expr, Function: v.Func}
		res.Records = append(res.Records, s.source(src)...)
		id := s.ruleIDs[src]
		res.Records = append(res.Records, value(th, id, v.Frame, v.Value, v.Err))
		if v.Err != nil && !v.Missing && s.errs[-int(id)] == "" { // rule captures: negative keys
			s.errs[-int(id)] = v.Expr + ": " + v.Err.Error()
		}
	}
	for _, c := range o.Counts {
		src := recording.ValueSource{Class: recording.SourceCounter, Name: c}
		res.Records = append(res.Records, s.source(src)...)
		res.Records = append(res.Records, value(th, s.ruleIDs[src], 0, expr.UintValue(1), nil))
	}
	return res
}

// source returns the ValueSource record to write the first time src is used.
func (s *Sampler) source(src recording.ValueSource) []recording.Record {
	if _, ok := s.ruleIDs[src]; ok {
		return nil
	}
	id := s.nextID
	s.nextID++
	s.ruleIDs[src] = id
	def := src
	def.ID = id
	return []recording.Record{&def}
}

// noEnv is the environment of a frame without DWARF: nothing can be read.
type noEnv struct{}

func (noEnv) Var(name string) (expr.Object, error) {
	return nil, missing("no debugging information for this frame")
}

func (s *Sampler) info(path string) *dwarfx.Info {
	if in, ok := s.infos[path]; ok {
		return in
	}
	// The same file under another name (a path through a symbolic link,
	// as the command was launched, and the one the kernel maps): read once.
	real := resolved(path)
	if in, ok := s.infos[real]; ok {
		s.infos[path] = in
		return in
	}
	in, err := dwarfx.Open(path)
	if err != nil {
		s.noDWARF[path] = true
		in = nil
	}
	s.infos[path], s.infos[real] = in, in
	return in
}

// resolved is path with its symbolic links resolved, path itself when they
// cannot be.
func resolved(path string) string {
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	return path
}

// sampleSpecs evaluates the specs that apply to the thread, each in the
// innermost frame running a matching function, and returns the records to
// write: a ValueSource the first time a spec is seen, then its Value (of
// type ValueMissing when it cannot be evaluated at this sample).
func (s *Sampler) sampleSpecs(st *stackEnv) []recording.Record {
	th, frames := st.th, st.located
	var out []recording.Record
	for i, sp := range s.specs {
		inExe := sp.MatchProg(th.Exe)
		if !inExe && !namesObject(sp) {
			continue
		}
		var at *located
		for j := range frames {
			if (inExe || specMatchesObject(sp, frames[j].obj)) && sp.MatchFunc(frames[j].fn.Name) {
				at = &frames[j]
				break
			}
		}
		if at == nil {
			continue // the function is not on the stack: nothing to sample
		}
		v, err := expr.Eval(sp.Expr, st.env(*at))
		// The source is written when first seen, and again, once, with the
		// enumerators when the first value shows it is an enum.
		if enum := err == nil && v.Enum != nil && !s.named[i]; s.ids[i] == 0 || enum {
			if s.ids[i] == 0 {
				s.ids[i] = s.nextID
				s.nextID++
			}
			src := &recording.ValueSource{ID: s.ids[i], Class: recording.SourceExpression,
				Name: sp.Expr.String(), Function: sp.Func}
			if enum {
				src.Enum, s.named[i] = enumText(v.Enum), true
			}
			out = append(out, src)
		}
		if err != nil && !errors.Is(err, expr.ErrMissing) && s.errs[i] == "" {
			msg := err.Error()
			var te *expr.TypeError
			if errors.As(err, &te) && te.Error() == msg && te.Col > 0 {
				// The column in the whole spec, as the checks before the
				// start give it.
				msg = fmt.Sprintf("column %d: %s", te.Col+len(sp.Prog)+len(sp.Func)+2, te.Msg)
			}
			s.errs[i] = sp.Text + ": " + msg
		}
		out = append(out, value(th, s.ids[i], at.depth, v, err))
	}
	return out
}

// Warnings says, once per spec, why an expression could never be evaluated
// (a field that does not exist, a type that is not a number), and which
// objects had no DWARF.
func (s *Sampler) Warnings() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, e := range s.errs {
		if e != "" {
			out = append(out, e)
		}
	}
	sort.Strings(out)
	if len(s.specs) > 0 || s.file != nil {
		// (Value sampling alone says nothing here: the recorder is told
		// once, before it starts, whether the program has DWARF.)
		for p := range s.noDWARF {
			out = append(out, p+" has no DWARF: expressions cannot be evaluated in its functions")
		}
	}
	return out
}

// enumText spells enumerators as ValueSource.Enum does: NAME=VALUE pairs
// separated by commas.
func enumText(e *expr.Enum) string {
	if e == nil {
		return ""
	}
	var b strings.Builder
	for i, n := range e.Names {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%d", n, e.Values[i])
	}
	return b.String()
}
