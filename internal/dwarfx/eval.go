package dwarfx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/culprit-dev/culprit/internal/elfx"
)

// Errors returned by evaluation. Every error from Eval means the value cannot
// be had at this frame; callers that sample values count it as missing and
// never substitute a guess. errors.Is tells the reasons apart.
var (
	// ErrUnavailable: the value does not exist at this PC or cannot be
	// read in this frame (optimized out, a register unknown in this frame,
	// the CFA unknown, unreadable memory).
	ErrUnavailable = elfx.ErrUnavailable
	// ErrOptimizedOut: no location at this PC (wraps ErrUnavailable).
	ErrOptimizedOut = fmt.Errorf("%w: optimized out", ErrUnavailable)
	// ErrEntryValue: the location needs a register's value at function
	// entry (DW_OP_entry_value). A debugger may recover it from call-site
	// parameters in the caller; this package does not guess (wraps
	// ErrUnavailable).
	ErrEntryValue = elfx.ErrEntryValue
	// ErrImplicitPointer: a pointer to an object that was optimized out
	// (DW_OP_implicit_pointer; gdb prints <synthetic pointer>). Wraps
	// ErrUnavailable.
	ErrImplicitPointer = elfx.ErrImplicitPointer
	// ErrRegUnknown: the location needs a register that Frame.RegValid or
	// XMMValid marks unknown (wraps ErrUnavailable). In a caller frame this
	// is the honest answer for a caller-saved register: GCC may keep a
	// variable in one across a call to a function it knows does not
	// clobber it (-fipa-ra), and gdb then shows the callee's register,
	// right or wrong; a Frame that marks such registers valid gets the
	// same.
	ErrRegUnknown = elfx.ErrRegUnknown
	// ErrUnsupported: the expression uses an operation this package does
	// not evaluate (TLS, DWARF procedure calls, x87 or 128-bit typed
	// arithmetic).
	ErrUnsupported = elfx.ErrUnsupported
	// ErrMalformed: the expression or list is invalid.
	ErrMalformed = elfx.ErrMalformed
)

// Register numbers of a Frame (DWARF x86-64 numbering).
const (
	RegRAX = elfx.RegRAX
	RegRDX = elfx.RegRDX
	RegRCX = elfx.RegRCX
	RegRBX = elfx.RegRBX
	RegRSI = elfx.RegRSI
	RegRDI = elfx.RegRDI
	RegRBP = elfx.RegRBP
	RegRSP = elfx.RegRSP
	RegRIP = elfx.RegRA // the return-address column; holds the frame's PC
	// NumRegs is the number of general registers in Frame.Regs.
	NumRegs = elfx.NumGPRegs
	// RegXMM0 is the DWARF number of xmm0; xmm0..xmm15 are 17..32.
	RegXMM0 = elfx.RegXMM0
)

// Frame is what evaluation needs to know about one stack frame of a
// stopped or sampled thread. The zero value knows nothing: every register,
// the CFA and memory are unavailable.
type Frame struct {
	// Regs are the general registers by DWARF number (0 rax, 1 rdx,
	// 2 rcx, 3 rbx, 4 rsi, 5 rdi, 6 rbp, 7 rsp, 8-15 r8-r15, 16 rip).
	// Bit i of RegValid is set when Regs[i] is known in this frame. In a
	// caller frame only the registers that CFI restores (callee-saved
	// ones, rsp, rip) are known; a location in a clobbered register is then
	// unavailable rather than read from the callee's registers.
	Regs     [NumRegs]uint64
	RegValid uint32
	// XMM are the SSE registers xmm0..xmm15 (DWARF 17..32), little-endian;
	// bit i of XMMValid is set when XMM[i] is known. They are caller-saved,
	// so only the innermost frame knows them; a double kept in xmm0 at -O2
	// needs them.
	XMM      [16][16]byte
	XMMValid uint16
	// CFA is the canonical frame address of this frame (the value of rsp
	// before the call instruction that created it), from CFI; 0 when
	// unknown. DW_OP_call_frame_cfa and frame bases that use it need it.
	CFA uint64
	// Bias is the load bias of the object: runtime address = ELF virtual
	// address + Bias (0 for non-PIE executables). It is added to
	// DW_OP_addr and DW_OP_addrx, so that globals of PIEs and shared
	// libraries are read at their runtime address.
	Bias uint64
	// Mem reads len(buf) bytes of target memory at addr: from a stopped
	// process, a stack copy, or a snapshot taken at the sample. A nil Mem
	// or an error makes memory locations unavailable.
	Mem func(addr uint64, buf []byte) error
	// EntryValue returns the value general register reg had when the
	// frame's function was entered, for locations that use
	// DW_OP_entry_value; nil: such locations are unavailable
	// (ErrEntryValue). Callers recover it from the caller's call site
	// (Function.CallSite, CallSite.Value).
	EntryValue func(reg uint64) (uint64, error)
}

// SetReg sets general register n (DWARF number) and marks it valid.
func (f *Frame) SetReg(n int, v uint64) {
	if n >= 0 && n < NumRegs {
		f.Regs[n] = v
		f.RegValid |= 1 << uint(n)
	}
}

// Reg returns general register n and whether it is known.
func (f *Frame) Reg(n int) (uint64, bool) {
	if n < 0 || n >= NumRegs || f.RegValid&(1<<uint(n)) == 0 {
		return 0, false
	}
	return f.Regs[n], true
}

// Value is the result of evaluating a location.
type Value struct {
	// Bytes holds the value in target byte order (little-endian), as many
	// bytes as were asked for. It is nil when only the address was asked
	// for (size 0 and a memory location).
	Bytes []byte
	// Addr is the runtime address of the object when InMemory.
	Addr uint64
	// InMemory is true when the whole object lives at Addr in target
	// memory, so that &v, its fields and array elements can be read from
	// there. False for registers, computed values and composites.
	InMemory bool
	// Missing lists byte ranges [lo, hi) of Bytes that are optimized out
	// (pieces without a location, or bytes beyond the pieces described).
	// Their bytes are zero.
	Missing [][2]int
}

// Available reports whether bytes [lo, hi) of v are all present.
func (v Value) Available(lo, hi int) bool {
	for _, m := range v.Missing {
		if m[0] < hi && lo < m[1] {
			return false
		}
	}
	return true
}

// maxStack bounds an expression's stack.
const maxStack = 256

// evaluator builds a Value from a location expression: the stack machine
// is elfx's; pieces are assembled here.
type evaluator struct {
	m elfx.Expr
	f *Frame

	pieces   bool
	firstErr error // why the first unavailable piece was
	out      []byte
	outBits  int
	missing  [][2]int
}

// exprCtx is what expressions of one unit and function refer to.
type exprCtx struct {
	u  *unit
	fn *Function // frame base for DW_OP_fbreg; nil for globals
}

// exprIn returns the evaluator of an expression of ctx at pc in frame f.
// depth is 1 for a frame base, which cannot refer to itself.
func exprIn(f *Frame, ctx *exprCtx, pc uint64, depth int) elfx.Expr {
	m := elfx.Expr{
		Regs: &f.Regs, RegValid: f.RegValid,
		XMM: &f.XMM, XMMValid: f.XMMValid,
		CFA: f.CFA, Bias: f.Bias, Mem: f.Mem,
		MaxStack:   maxStack,
		EntryValue: f.EntryValue,
	}
	if ctx != nil && ctx.u != nil {
		m.DebugAddr, m.BaseType = ctx.u.debugAddr, ctx.u.baseType
	}
	if ctx != nil && ctx.fn != nil {
		m.FrameBase = func() (uint64, error) { return frameBase(f, ctx, pc, depth) }
	}
	return m
}

// frameBase evaluates the DW_AT_frame_base of the expression's function.
func frameBase(f *Frame, ctx *exprCtx, pc uint64, depth int) (uint64, error) {
	if depth > 0 {
		return 0, fmt.Errorf("%w: DW_OP_fbreg inside a frame base", ErrMalformed)
	}
	fn := ctx.fn
	expr, ok := fn.frameBase.at(fn.u, pc)
	if !ok {
		return 0, fmt.Errorf("%w: no frame base at this PC", ErrUnavailable)
	}
	m := exprIn(f, ctx, pc, depth+1)
	m.Start(expr)
	_, more, err := m.Next()
	if err != nil {
		return 0, err
	}
	top, ok := m.Top()
	switch {
	case more:
	case m.Kind == elfx.LocReg:
		return m.RegValue(m.Reg)
	case m.Kind == elfx.LocMemory || m.Kind == elfx.LocStack:
		if !ok {
			return 0, fmt.Errorf("%w: empty frame base", ErrUnavailable)
		}
		return top.V, nil
	}
	return 0, fmt.Errorf("%w: frame base is not an address", ErrUnsupported)
}

// regBytes returns the contents of register n as bytes.
func (e *evaluator) regBytes(n uint64) ([]byte, error) {
	if n >= RegXMM0 && n < RegXMM0+16 {
		if _, err := e.m.RegValue(n); err != nil {
			return nil, err
		}
		b := e.f.XMM[n-RegXMM0]
		return b[:], nil
	}
	r, err := e.m.RegValue(n)
	if err != nil {
		return nil, err
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], r)
	return b[:], nil
}

// read reads n bytes of the frame's memory at addr.
func (e *evaluator) read(addr uint64, n int) ([]byte, error) {
	if e.f.Mem == nil {
		return nil, fmt.Errorf("%w: no memory access", ErrUnavailable)
	}
	if n < 0 || n > elfx.MaxPiece {
		return nil, fmt.Errorf("%w: read of %d bytes", ErrMalformed, n)
	}
	b := make([]byte, n)
	if n == 0 {
		return b, nil
	}
	if err := e.f.Mem(addr, b); err != nil {
		return nil, fmt.Errorf("%w: reading %d bytes at %#x: %v", ErrUnavailable, n, addr, err)
	}
	return b, nil
}

// current returns the first nbytes bytes of the current sub-location and
// whether each is present. An empty location (no operations since the last
// piece) yields missing bytes.
func (e *evaluator) current(nbytes int) (data []byte, ok []bool, err error) {
	data = make([]byte, nbytes)
	ok = make([]bool, nbytes)
	fill := func(src []byte) {
		n := copy(data, src)
		for i := 0; i < n; i++ {
			ok[i] = true
		}
	}
	m := &e.m
	top, nonEmpty := m.Top()
	switch m.Kind {
	case elfx.LocReg:
		b, err := e.regBytes(m.Reg)
		if err != nil {
			return nil, nil, err
		}
		fill(b)
	case elfx.LocStack:
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], top.V)
		n := 8
		if !top.T.Generic() && top.T.Size > 0 && top.T.Size < 8 {
			n = int(top.T.Size)
		}
		fill(b[:n])
		// A stack value narrower than the piece is zero-extended: the
		// value is the whole number, not a prefix of one.
		for i := n; i < nbytes; i++ {
			ok[i] = true
		}
	case elfx.LocImplicit:
		fill(m.Implicit())
	case elfx.LocMemory:
		if !nonEmpty {
			return data, ok, nil // empty location: optimized out
		}
		b, err := e.read(top.V, nbytes)
		if err != nil {
			return nil, nil, err
		}
		fill(b)
	}
	return data, ok, nil
}

// piece appends p.Size bits of the current sub-location, starting at bit
// p.Off of it, to the composite result, then resets the sub-location.
func (e *evaluator) piece(p elfx.Piece) error {
	size, off := p.Size, p.Off
	e.pieces = true
	nbytes := (off + size + 7) / 8
	var src []byte
	var ok []bool
	err := p.Err
	if err == nil {
		src, ok, err = e.current(nbytes)
	}
	if err != nil {
		if e.firstErr == nil {
			e.firstErr = err
		}
		if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrMalformed) {
			return err
		}
		// An unreadable piece is missing, like an empty one.
		src, ok = make([]byte, nbytes), make([]bool, nbytes)
	}
	total := e.outBits + size
	if total > elfx.MaxPiece*8 {
		return fmt.Errorf("%w: composite larger than %d bytes", ErrMalformed, elfx.MaxPiece)
	}
	for len(e.out)*8 < total {
		e.out = append(e.out, 0)
	}
	if off%8 == 0 && e.outBits%8 == 0 && size%8 == 0 {
		copy(e.out[e.outBits/8:], src[off/8:off/8+size/8])
		for i := 0; i < size/8; i++ {
			if !ok[off/8+i] {
				e.addMissing(e.outBits/8+i, e.outBits/8+i+1)
			}
		}
	} else {
		for i := 0; i < size; i++ {
			sb := off + i
			db := e.outBits + i
			if !ok[sb/8] {
				e.addMissing(db/8, db/8+1)
				continue
			}
			if src[sb/8]>>(sb%8)&1 != 0 {
				e.out[db/8] |= 1 << (db % 8)
			}
		}
	}
	e.outBits = total
	e.m.Reset()
	return nil
}

func (e *evaluator) addMissing(lo, hi int) {
	if n := len(e.missing); n > 0 && e.missing[n-1][1] >= lo {
		if hi > e.missing[n-1][1] {
			e.missing[n-1][1] = hi
		}
		return
	}
	e.missing = append(e.missing, [2]int{lo, hi})
}

// eval evaluates a location expression into a value of size bytes.
func eval(ctx *exprCtx, pc uint64, expr []byte, f *Frame, size int) (Value, error) {
	if f == nil {
		f = &Frame{}
	}
	if size < 0 || size > elfx.MaxPiece {
		return Value{}, fmt.Errorf("%w: value of %d bytes", ErrUnsupported, size)
	}
	if len(expr) == 0 {
		return Value{}, ErrOptimizedOut
	}
	e := &evaluator{f: f, m: exprIn(f, ctx, pc, 0)}
	m := &e.m
	m.Skip = true
	m.Start(expr)
	for {
		p, more, err := m.Next()
		if err != nil {
			return Value{}, err
		}
		if !more {
			break
		}
		if err := e.piece(p); err != nil {
			return Value{}, err
		}
	}
	top, nonEmpty := m.Top()
	if e.pieces {
		if m.Kind != elfx.LocMemory || nonEmpty {
			return Value{}, fmt.Errorf("%w: location after the last piece", ErrMalformed)
		}
		n := size
		if n == 0 {
			n = (e.outBits + 7) / 8
		}
		v := Value{Bytes: make([]byte, n)}
		copy(v.Bytes, e.out)
		have := (e.outBits + 7) / 8
		for _, m := range e.missing {
			if m[0] < n {
				v.Missing = append(v.Missing, [2]int{m[0], min(m[1], n)})
			}
		}
		if have < n {
			v.Missing = appendRange(v.Missing, have, n)
		}
		if len(v.Missing) == 1 && v.Missing[0] == [2]int{0, n} {
			if e.firstErr != nil {
				return Value{}, e.firstErr
			}
			return Value{}, ErrOptimizedOut
		}
		return v, nil
	}
	switch m.Kind {
	case elfx.LocMemory:
		if !nonEmpty {
			return Value{}, ErrOptimizedOut
		}
		v := Value{Addr: top.V, InMemory: true}
		if size > 0 {
			b, err := e.read(top.V, size)
			if err != nil {
				return Value{}, err
			}
			v.Bytes = b
		}
		return v, nil
	case elfx.LocReg:
		b, err := e.regBytes(m.Reg)
		if err != nil {
			return Value{}, err
		}
		return sized(b, size, true), nil
	case elfx.LocStack:
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], top.V)
		return sized(b[:], size, false), nil
	default: // LocImplicit
		return sized(m.Implicit(), size, true), nil
	}
}

func appendRange(rs [][2]int, lo, hi int) [][2]int {
	if n := len(rs); n > 0 && rs[n-1][1] >= lo {
		rs[n-1][1] = max(rs[n-1][1], hi)
		return rs
	}
	return append(rs, [2]int{lo, hi})
}

// sized returns b cut or extended to size bytes (size 0: all of b). Bytes
// beyond b are missing when strict (a register or implicit value shorter
// than the type), zero otherwise (a stack value is a whole number).
func sized(b []byte, size int, strict bool) Value {
	if size == 0 {
		size = len(b)
	}
	v := Value{Bytes: make([]byte, size)}
	n := copy(v.Bytes, b)
	if n < size && strict {
		v.Missing = [][2]int{{n, size}}
	}
	return v
}
