package state

import (
	"errors"
	"math"
	"sync"

	"github.com/culprit-dev/culprit/internal/dwarfx"
	"github.com/culprit-dev/culprit/internal/expr"
	"github.com/culprit-dev/culprit/internal/recording"
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

// Sampler evaluates PROG@FUNC@EXPR specs at samples.
type Sampler struct {
	specs   []*expr.Spec
	ids     []uint32 // ValueSource ID of each spec, 0 until written
	nextID  uint32
	mu      sync.Mutex
	infos   map[string]*dwarfx.Info // nil value: the object has no usable DWARF
	errs    map[int]string          // first non-missing error per spec
	noDWARF map[string]bool
}

// NewSampler makes a sampler for specs; ValueSource IDs start at firstID.
func NewSampler(specs []*expr.Spec, firstID uint32) *Sampler {
	if firstID == 0 {
		firstID = 1
	}
	return &Sampler{specs: specs, ids: make([]uint32, len(specs)), nextID: firstID,
		infos: map[string]*dwarfx.Info{}, errs: map[int]string{}, noDWARF: map[string]bool{}}
}

// Wants reports whether any spec applies to the executable, so collectors
// can skip the work for other processes.
func (s *Sampler) Wants(exe string) bool {
	for _, sp := range s.specs {
		if sp.MatchProg(exe) {
			return true
		}
	}
	return false
}

func (s *Sampler) info(path string) *dwarfx.Info {
	if in, ok := s.infos[path]; ok {
		return in
	}
	in, err := dwarfx.Open(path)
	if err != nil {
		s.noDWARF[path] = true
		in = nil
	}
	s.infos[path] = in
	return in
}

// Sample evaluates the specs that apply to the thread, each in the
// innermost frame running a matching function, and returns the records to
// write: a ValueSource the first time a spec is seen, then its Value (of
// type ValueMissing when it cannot be evaluated at this sample).
func (s *Sampler) Sample(th Thread) []recording.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	type located struct {
		info  *dwarfx.Info
		fn    *dwarfx.Function
		pc    uint64 // ELF address
		bias  uint64
		depth int
	}
	var frames []located
	resolved := false
	var out []recording.Record
	for i, sp := range s.specs {
		if !sp.MatchProg(th.Exe) {
			continue
		}
		if !resolved {
			resolved = true
			for d, f := range th.Frames {
				pc := f.PC
				if !f.Exact {
					pc-- // a return address: look up the call
				}
				path, bias, ok := th.Objects.Object(pc)
				if !ok {
					continue
				}
				in := s.info(path)
				if in == nil {
					continue
				}
				fn, ok := in.Function(pc - bias)
				if !ok {
					continue
				}
				frames = append(frames, located{in, fn, pc - bias, bias, d})
			}
		}
		var at *located
		for j := range frames {
			if sp.MatchFunc(frames[j].fn.Name) {
				at = &frames[j]
				break
			}
		}
		if at == nil {
			continue // the function is not on the stack: nothing to sample
		}
		if s.ids[i] == 0 {
			s.ids[i] = s.nextID
			s.nextID++
			out = append(out, &recording.ValueSource{ID: s.ids[i], Class: recording.SourceExpression,
				Name: sp.Expr.String(), Function: sp.Func})
		}
		f := th.Frames[at.depth]
		frame := &dwarfx.Frame{Regs: f.Regs, RegValid: f.Valid, CFA: f.CFA, Bias: at.bias, Mem: th.Mem}
		v, err := expr.Eval(sp.Expr, &frameEnv{info: at.info, fn: at.fn, pc: at.pc, frame: frame})
		rec := &recording.Value{Time: th.Time, PID: uint32(th.PID), TID: uint32(th.TID), Source: s.ids[i],
			Depth: uint8(min(at.depth, 255)), PC: f.PC}
		switch {
		case err != nil:
			rec.Type = recording.ValueMissing
			if !errors.Is(err, expr.ErrMissing) && s.errs[i] == "" {
				s.errs[i] = sp.Text + ": " + err.Error()
			}
		case v.Kind == expr.Int:
			rec.Type, rec.Bits = recording.ValueInt, uint64(v.I)
		case v.Kind == expr.Uint:
			rec.Type, rec.Bits = recording.ValueUint, v.U
		default:
			rec.Type, rec.Bits = recording.ValueFloat, math.Float64bits(v.F)
		}
		out = append(out, rec)
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
	for i := range s.specs {
		if e := s.errs[i]; e != "" {
			out = append(out, e)
		}
	}
	for p := range s.noDWARF {
		out = append(out, p+" has no DWARF: expressions cannot be evaluated in its functions")
	}
	return out
}

// StackMemory reads memory from a copy of the user stack taken at the
// sample, and nothing else: what a perf-event sample carries.
func StackMemory(sp uint64, data []byte) func(addr uint64, buf []byte) error {
	return func(addr uint64, buf []byte) error {
		if addr < sp || addr-sp+uint64(len(buf)) > uint64(len(data)) {
			return errNotInCopy
		}
		copy(buf, data[addr-sp:])
		return nil
	}
}

var errNotInCopy = errors.New("outside the stack copied at the sample (use --collector ptrace to read heap and globals)")
