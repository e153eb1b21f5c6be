package dwarfx

import (
	"debug/dwarf"
	"encoding/binary"
	"fmt"
	"github.com/culprit-dev/culprit/internal/elfx"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// Function is one concrete, out-of-line function: a DW_TAG_subprogram with
// code. Clones made by the compiler are separate Functions with the source
// name.
type Function struct {
	// Name is the source name, as the symbolizer names the function's
	// frames (elfx.FuncName: the demangled linkage name of C++ and Rust
	// functions, else DW_AT_name through DW_AT_abstract_origin or
	// DW_AT_specification for clones and out-of-class definitions).
	Name string
	// Linkage is DW_AT_linkage_name (C++ mangled names), if any.
	Linkage string
	// Ranges are the function's address ranges, sorted [lo, hi) ELF
	// virtual addresses; Entry is where it is entered.
	Ranges [][2]uint64
	Entry  uint64
	// DeclFile and DeclLine locate the declaration.
	DeclFile string
	DeclLine int
	// Unit is the name of the compilation unit (DW_AT_name).
	Unit string

	dwName    string // DW_AT_name (through origins), when it differs from Name
	u         *unit
	ctx       exprCtx
	frameBase attrLoc
	root      *scope
	params    []*Variable
	resultOff dwarf.Offset    // DW_AT_type: the return value's type (0: void)
	ids       [3]dwarf.Offset // its DIE, the DIE's abstract origin and specification: what call sites name it by
	calls     []CallSite      // sorted by Return
}

// CallSite is a call the compiler described (DW_TAG_call_site, or GCC's
// DW_TAG_GNU_call_site before DWARF 5): where it returns to, which function
// it calls, and how to compute, in the caller's frame at the return
// address, the values it passed in registers (DW_TAG_call_site_parameter).
// A debugger recovers a callee's DW_OP_entry_value from them.
type CallSite struct {
	Return     uint64 // ELF address the call returns to
	origin     dwarf.Offset
	originName string
	params     []callParam
	fn         *Function // the caller
}

type callParam struct {
	reg   uint64
	value []byte // DW_AT_call_value, a DWARF expression
}

// CallSite returns the call of fn that returns to ret (an ELF address:
// the caller frame's return address less the load bias).
func (fn *Function) CallSite(ret uint64) (CallSite, bool) {
	i := sort.Search(len(fn.calls), func(i int) bool { return fn.calls[i].Return >= ret })
	if i < len(fn.calls) && fn.calls[i].Return == ret {
		return fn.calls[i], true
	}
	return CallSite{}, false
}

// Calls reports whether the call is known to call callee directly: its
// DIE names callee's (or callee's abstract origin or declaration), or a
// declaration of the same name. An indirect call, or a call of another
// function (that may have tail-called callee), is not: its parameters are
// not callee's.
func (c CallSite) Calls(callee *Function) bool {
	if c.origin == 0 {
		return false
	}
	for _, id := range callee.ids {
		if id != 0 && id == c.origin {
			return true
		}
	}
	n := c.originName
	return n != "" && (n == callee.Linkage || n == callee.Name || n == callee.dwName)
}

// Value returns the value the call passed in general register reg,
// evaluating its DW_AT_call_value in the caller's frame f (the frame whose
// return address is c.Return). It wraps ErrUnavailable when the call site
// does not describe that register or its value cannot be computed there.
func (c CallSite) Value(reg uint64, f *Frame) (uint64, error) {
	for _, p := range c.params {
		if p.reg != reg {
			continue
		}
		m := exprIn(f, &c.fn.ctx, c.Return-1, 0)
		m.Start(p.value)
		if _, more, err := m.Next(); err != nil {
			return 0, err
		} else if more {
			return 0, fmt.Errorf("%w: a call site value in pieces", ErrUnsupported)
		}
		switch m.Kind {
		case elfx.LocReg:
			return m.RegValue(m.Reg)
		case elfx.LocMemory, elfx.LocStack:
			if top, ok := m.Top(); ok {
				return top.V, nil
			}
		}
		return 0, fmt.Errorf("%w: call site value of %s", ErrUnavailable, elfx.RegName(reg))
	}
	return 0, fmt.Errorf("%w: the call site does not say what %s was", ErrUnavailable, elfx.RegName(reg))
}

// Inline is one inlined call: the body of function Name inlined into Func,
// from the call at CallFile:CallLine, possibly within another inlined call
// (Parent).
type Inline struct {
	Name       string
	CallFile   string
	CallLine   int
	CallColumn int
	Entry      uint64
	Ranges     [][2]uint64
	Parent     *Inline
	Func       *Function
}

// Depth returns 1 for a call inlined directly into Func, 2 for one inlined
// into that, and so on.
func (in *Inline) Depth() int {
	n := 0
	for ; in != nil; in = in.Parent {
		n++
	}
	return n
}

func (in *Inline) String() string {
	return fmt.Sprintf("%s inlined at %s:%d", in.Name, filepath.Base(in.CallFile), in.CallLine)
}

// scope is a lexical scope of a function: the function itself, a lexical
// block, or an inlined call.
type scope struct {
	ranges [][2]uint64
	parent *scope
	inline *Inline // set when the scope is an inlined call
	vars   []*Variable
	kids   []*scope
	idx    *ivIndex // of kids, when there are many

	visOnce sync.Once
	vis     []*Variable
}

func inRanges(rs [][2]uint64, pc uint64) bool {
	for _, r := range rs {
		if r[0] <= pc && pc < r[1] {
			return true
		}
	}
	return false
}

const linearKids = 8

// index builds kid indexes, recursively.
func (s *scope) index() {
	if len(s.kids) > linearKids {
		s.idx = &ivIndex{}
		for k, c := range s.kids {
			for _, r := range c.ranges {
				s.idx.add(r[0], r[1], k)
			}
		}
		s.idx.build()
	}
	for _, c := range s.kids {
		c.index()
	}
}

func (s *scope) child(pc uint64) *scope {
	if s.idx != nil {
		if k := s.idx.find(pc); k >= 0 {
			return s.kids[k]
		}
		return nil
	}
	for _, c := range s.kids {
		if inRanges(c.ranges, pc) {
			return c
		}
	}
	return nil
}

// visible returns the variables visible in s, innermost first; a name
// hides the same name of an enclosing scope of the same function instance
// (the out-of-line function or one inlined call).
func (s *scope) visible() []*Variable {
	s.visOnce.Do(func() {
		var out []*Variable
		inst := 0 // start in out of the current instance's variables
		for sc := s; sc != nil; sc = sc.parent {
		vars:
			for _, v := range sc.vars {
				for _, w := range out[inst:] {
					if w.Name == v.Name {
						continue vars
					}
				}
				out = append(out, v)
			}
			if sc.inline != nil {
				inst = len(out)
			}
		}
		s.vis = out
	})
	return s.vis
}

// langGo is DW_LANG_Go.
const langGo = 0x16

// IsGo reports whether the function was compiled by Go (its unit's
// DW_AT_language).
func (f *Function) IsGo() bool { return f.u != nil && f.u.lang == langGo }

// Contains reports whether pc is in the function.
func (f *Function) Contains(pc uint64) bool { return inRanges(f.Ranges, pc) }

func (f *Function) innermost(pc uint64) *scope {
	if !f.Contains(pc) {
		return nil
	}
	s := f.root
	for {
		c := s.child(pc)
		if c == nil {
			return s
		}
		s = c
	}
}

// Variables returns the parameters and local variables in scope at pc:
// those of every lexical block containing pc, innermost first, an inner
// name hiding an outer one; then, when pc is in code inlined into f, those
// of each inlined call (Variable.Inline says which), innermost call first,
// before those of f itself. Variables of the abstract instance that a clone
// or an inlined copy dropped are included without a location, as a
// debugger shows them (<optimized out>). Whether a variable has a value at
// pc is Location's business. The slice is shared: do not modify it. Cost:
// one descent of the scope tree (binary searches when a scope has many
// children), no allocation after the first call for the same scope.
func (f *Function) Variables(pc uint64) []*Variable {
	s := f.innermost(pc)
	if s == nil {
		return nil
	}
	return s.visible()
}

// Inlines returns the inlined calls containing pc, innermost first (empty
// when pc is in f's own code).
func (f *Function) Inlines(pc uint64) []*Inline {
	var out []*Inline
	for s := f.innermost(pc); s != nil; s = s.parent {
		if s.inline != nil {
			out = append(out, s.inline)
		}
	}
	return out
}

// Params returns f's formal parameters in declaration order.
func (f *Function) Params() []*Variable { return f.params }

// Result returns the type of the function's return value, nil when it
// returns none (void).
func (f *Function) Result() *Type {
	if f.resultOff == 0 {
		return nil
	}
	return f.u.info.typeAt(f.resultOff)
}

// AllVariables returns every parameter and local variable of f and of the
// calls inlined into it, whatever their scope, in DIE order (for schema
// generation).
func (f *Function) AllVariables() []*Variable {
	var out []*Variable
	var walk func(s *scope)
	walk = func(s *scope) {
		out = append(out, s.vars...)
		for _, c := range s.kids {
			walk(c)
		}
	}
	walk(f.root)
	return out
}

func (f *Function) String() string {
	lo := f.Entry
	return fmt.Sprintf("%s@%#x", f.Name, lo)
}

// Variable is a parameter, local or global variable.
type Variable struct {
	Name string
	// IsParam: a formal parameter.
	IsParam bool
	// IsGlobal: static storage at a fixed address (file-scope variables
	// and static locals). Func is nil for file-scope ones.
	IsGlobal bool
	// IsExternal: visible to other units (DW_AT_external).
	IsExternal bool
	// Artificial: made up by the compiler (DW_AT_artificial, e.g. this).
	Artificial bool
	DeclFile   string
	DeclLine   int
	// Func is the out-of-line function whose frame holds the variable (nil
	// for file-scope variables); Inline the inlined call it belongs to, nil
	// when it belongs to Func's own body.
	Func   *Function
	Inline *Inline

	u       *unit
	ctx     *exprCtx
	scope   *scope // the block, inlined call or function body declaring a local
	typeOff dwarf.Offset
	loc     attrLoc

	typeOnce sync.Once
	typ      *Type
}

func (v *Variable) String() string {
	var sb strings.Builder
	sb.WriteString(v.Name)
	switch {
	case v.Func == nil:
		sb.WriteString(" (global")
	case v.Inline != nil:
		fmt.Fprintf(&sb, " (in %s, %s", v.Inline.Name, v.Inline)
	default:
		fmt.Fprintf(&sb, " (in %s", v.Func.Name)
	}
	if v.IsParam {
		sb.WriteString(", param")
	}
	if v.DeclFile != "" {
		fmt.Fprintf(&sb, ", %s:%d", filepath.Base(v.DeclFile), v.DeclLine)
	}
	sb.WriteString(")")
	return sb.String()
}

// Type returns the variable's type (read on first use). A variable without
// a type attribute has a Void type.
func (v *Variable) Type() *Type {
	v.typeOnce.Do(func() {
		v.typ = v.u.info.typeAt(v.typeOff)
	})
	return v.typ
}

// HasLocationList reports whether the variable's location depends on the
// PC (a location list).
func (v *Variable) HasLocationList() bool { return v.loc.kind == locList }

// Location returns the location of v valid at pc (an ELF virtual address):
// its single location expression, the entry of its location list whose
// range contains pc (DWARF 4 .debug_loc or DWARF 5 .debug_loclists), or its
// constant value. ok is false when v has no location at pc: it is
// optimized out there. Cost: a binary search in the list, decoded on first
// use.
func (v *Variable) Location(pc uint64) (Location, bool) {
	switch v.loc.kind {
	case locConst:
		return Location{Const: v.loc.expr, Hi: ^uint64(0), pc: pc, ctx: v.ctx}, true
	case locExpr:
		return Location{Expr: v.loc.expr, Hi: ^uint64(0), pc: pc, ctx: v.ctx}, true
	case locList:
		e, ok := v.loc.entry(v.u, pc)
		if !ok {
			return Location{}, false
		}
		return Location{Expr: e.expr, Lo: e.lo, Hi: e.hi, pc: pc, ctx: v.ctx}, true
	}
	return Location{}, false
}

// Unit returns the name of the compilation unit declaring v (a Go
// package's import path for Go).
func (v *Variable) Unit() string {
	if v.u == nil {
		return ""
	}
	return v.u.name
}

// IsGo reports whether v was declared in a unit compiled by Go.
func (v *Variable) IsGo() bool { return v.u != nil && v.u.lang == langGo }

// Scope returns the address ranges of the block, inlined call or function
// body that declares a local variable: where its name is in scope. It is
// nil for globals.
func (v *Variable) Scope() [][2]uint64 {
	if v.scope == nil {
		return nil
	}
	return v.scope.ranges
}

// InRegister returns the location "in register reg" of v at pc, for a
// caller that knows better than v's location list where v lives there
// (ELF addresses; DWARF register numbers).
func (v *Variable) InRegister(pc uint64, reg uint64) Location {
	var e []byte
	if reg <= 31 {
		e = []byte{elfx.OpReg0 + byte(reg)}
	} else {
		e = binary.AppendUvarint([]byte{elfx.OpRegx}, reg)
	}
	return Location{Expr: e, Lo: pc, Hi: pc + 1, pc: pc, ctx: v.ctx}
}

// Read evaluates v at pc in frame f: Location(pc) evaluated for the size
// of v's type. The error wraps ErrOptimizedOut when v has no location at
// pc.
func (v *Variable) Read(pc uint64, f *Frame) (Value, error) {
	l, ok := v.Location(pc)
	if !ok {
		return Value{}, ErrOptimizedOut
	}
	size := v.Type().Size
	if size <= 0 {
		return Value{}, fmt.Errorf("%w: %s has type %s of unknown size", ErrUnsupported, v.Name, v.Type().Name)
	}
	return l.Eval(f, int(size))
}

// Location is a variable's location at one PC: a DWARF expression, or a
// constant value.
type Location struct {
	// Expr is the DWARF location expression (nil for a constant).
	Expr []byte
	// Const holds DW_AT_const_value bytes (little-endian), when the
	// variable has a constant value instead of a location.
	Const []byte
	// Lo, Hi is the PC range [Lo, Hi) where the location is valid (0 and
	// ^0 for locations valid wherever the variable is in scope).
	Lo, Hi uint64

	pc  uint64
	ctx *exprCtx
}

// Eval evaluates the location in frame f into a value of size bytes (the
// size of the variable's type). Size 0 asks for the address alone when the
// location is in memory (Value.Bytes nil), and for the register or value
// as it is otherwise. Pieces are assembled into one value; bytes of pieces
// without a location are reported in Value.Missing. An error wraps
// ErrUnavailable when the value does not exist in this frame (no location,
// DW_OP_entry_value, DW_OP_implicit_pointer, an unknown register or CFA,
// unreadable memory), ErrUnsupported for operations not evaluated, or
// ErrMalformed.
func (l Location) Eval(f *Frame, size int) (Value, error) {
	if l.Const != nil {
		if size == 0 {
			size = len(l.Const)
		}
		return sized(l.Const, size, false), nil
	}
	return eval(l.ctx, l.pc, l.Expr, f, size)
}

// String disassembles the location, e.g. "DW_OP_fbreg: -20".
func (l Location) String() string {
	if l.Const != nil {
		return fmt.Sprintf("const % x", l.Const)
	}
	return Disassemble(l.Expr)
}

// Register returns the register number when the whole location is a single
// register (DW_OP_regN or DW_OP_regx).
func (l Location) Register() (uint64, bool) {
	r := &elfx.Reader{B: l.Expr, End: len(l.Expr)}
	op := r.U8()
	var n uint64
	switch {
	case op >= elfx.OpReg0 && op <= elfx.OpReg31:
		n = uint64(op - elfx.OpReg0)
	case op == elfx.OpRegx:
		n = r.ULEB()
	default:
		return 0, false
	}
	return n, !r.Bad && r.Done()
}
