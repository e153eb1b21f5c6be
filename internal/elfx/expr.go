package elfx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Errors of expression evaluation. Every error means the value cannot be
// had; errors.Is tells the reasons apart.
var (
	// ErrUnavailable: the value does not exist here or cannot be read
	// (a register or the CFA unknown in this frame, unreadable memory).
	ErrUnavailable = errors.New("value unavailable")
	// ErrEntryValue: the location needs a register's value at function
	// entry (DW_OP_entry_value), which is not guessed (wraps
	// ErrUnavailable).
	ErrEntryValue = fmt.Errorf("%w: needs a value at function entry (DW_OP_entry_value)", ErrUnavailable)
	// ErrImplicitPointer: a pointer to an object that was optimized out
	// (DW_OP_implicit_pointer). Wraps ErrUnavailable.
	ErrImplicitPointer = fmt.Errorf("%w: pointer to an optimized-out object (DW_OP_implicit_pointer)", ErrUnavailable)
	// ErrUnsupported: an operation that is not evaluated (TLS, DWARF
	// procedure calls, typed values wider than 8 bytes).
	ErrUnsupported = errors.New("unsupported DWARF expression")
	// ErrMalformed: the expression is invalid.
	ErrMalformed = errors.New("malformed DWARF")
)

// Limits that keep a malformed or hostile expression from running long.
const (
	// MaxExprSteps is the number of operations one expression may execute
	// (backward branches make loops possible).
	MaxExprSteps = 4096
	// MaxPiece is the largest piece, in bytes.
	MaxPiece = 1 << 20
)

// DW_ATE base type encodings used by typed stack entries.
const (
	ATEAddress      = 0x1
	ATEBoolean      = 0x2
	ATEComplexFloat = 0x3
	ATEFloat        = 0x4
	ATESigned       = 0x5
	ATESignedChar   = 0x6
	ATEUnsigned     = 0x7
	ATEUnsignedChar = 0x8
	ATEUTF          = 0x10
)

// BaseType is the type of a typed stack entry (DWARF 5 typed operations);
// the zero value is the generic type, an address-sized integer.
type BaseType struct {
	Enc  uint8 // DW_ATE_*
	Size uint8 // in bytes
}

// Generic reports whether t is the generic type.
func (t BaseType) Generic() bool { return t.Enc == 0 }

func (t BaseType) float() bool { return t.Enc == ATEFloat }
func (t BaseType) signed() bool {
	return t.Enc == 0 || t.Enc == ATESigned || t.Enc == ATESignedChar
}
func (t BaseType) bits() uint {
	if t.Enc == 0 || t.Size == 0 || t.Size >= 8 {
		return 64
	}
	return uint(t.Size) * 8
}

// Elem is one entry of the expression stack.
type Elem struct {
	V uint64
	T BaseType
}

func (e Elem) trunc() Elem {
	if b := e.T.bits(); b < 64 {
		e.V &= 1<<b - 1
	}
	return e
}

func (e Elem) sext() int64 {
	b := e.T.bits()
	if b >= 64 {
		return int64(e.V)
	}
	return int64(e.V<<(64-b)) >> (64 - b)
}

func (e Elem) float() float64 {
	if e.T.Size == 4 {
		return float64(math.Float32frombits(uint32(e.V)))
	}
	return math.Float64frombits(e.V)
}

func mkFloat(t BaseType, f float64) Elem {
	if t.Size == 4 {
		return Elem{uint64(math.Float32bits(float32(f))), t}
	}
	return Elem{math.Float64bits(f), t}
}

// LocKind is what the operations since the start or the last piece
// describe.
type LocKind uint8

const (
	LocMemory   LocKind = iota // the address on top of the stack (empty stack: no location)
	LocReg                     // register Expr.Reg (DW_OP_reg*, DW_OP_regx)
	LocStack                   // the value on top of the stack (DW_OP_stack_value)
	LocImplicit                // the bytes Expr.Implicit (DW_OP_implicit_value)
)

// NumGPRegs is the number of general registers an expression reads: the
// DWARF numbers 0-15 and the return address column (rip).
const NumGPRegs = RegRA + 1

// Expr evaluates one DWARF expression in a frame. It is the one evaluator
// of DWARF expressions: the unwinder runs CFI rules with it for every
// sample, so what it reads are plain fields (registers by pointer, memory
// from a copy), its stack starts in the struct, and it allocates nothing
// while the stack stays within 8 entries and nothing fails. Locations with pieces are built by the
// caller: Next stops at each DW_OP_piece and DW_OP_bit_piece.
type Expr struct {
	// Regs are the general registers by DWARF number; bit i of RegValid
	// is set when Regs[i] is known in this frame. A nil Regs knows none.
	Regs     *[NumGPRegs]uint64
	RegValid uint32
	// XMM are xmm0..xmm15 (DWARF 17..32), little-endian; bit i of
	// XMMValid is set when XMM[i] is known.
	XMM      *[16][16]byte
	XMMValid uint16
	// CFA is the canonical frame address (DW_OP_call_frame_cfa); 0 when
	// unknown.
	CFA uint64
	// Bias is added to DW_OP_addr and DW_OP_addrx: the object's load bias.
	Bias uint64
	// Copy is a copy of memory from CopyAddr (a sampled stack), read
	// first; Mem reads other memory. Without either, memory is
	// unavailable.
	Copy     []byte
	CopyAddr uint64
	Mem      func(addr uint64, buf []byte) error
	// FrameBase returns the function's frame base (DW_OP_fbreg),
	// DebugAddr entry idx of the unit's .debug_addr (DW_OP_addrx,
	// DW_OP_constx), BaseType the base type at unit offset off
	// (typed operations). Nil: the expression is outside a function or
	// a unit, and malformed if it needs them.
	FrameBase func() (uint64, error)
	DebugAddr func(idx uint64) (uint64, error)
	BaseType  func(off uint64) (BaseType, error)
	// EntryValue returns the value general register reg had when the
	// frame's function was entered (DW_OP_entry_value of a register),
	// recovered by the caller from the call site; nil: unknown, and the
	// operation fails with ErrEntryValue.
	EntryValue func(reg uint64) (uint64, error)

	// MaxStack bounds the stack: 0 or at least 8. 0 means 8 entries,
	// which never allocates.
	MaxStack int
	// Skip makes an unavailable sub-location (an error wrapping
	// ErrUnavailable) skip to the next piece, which reports it in
	// Piece.Err, instead of ending the evaluation.
	Skip bool

	// The location described since the start or the last piece.
	Kind     LocKind
	Reg      uint64 // LocReg
	implicit [2]int // LocImplicit: the bytes' bounds in the expression

	r        Reader
	buf      [8]Elem // the stack while it fits
	more     []Elem  // the stack once it does not
	sp       int     // entries on the stack
	skipping error
	steps    int
}

// ErrRegUnknown: the expression needs a register unknown in this frame
// (wraps ErrUnavailable).
var ErrRegUnknown = fmt.Errorf("%w: register unknown in this frame", ErrUnavailable)

// regUnknown are ErrRegUnknown naming each register, made once: a CFI rule
// needing a register the frame does not know must not allocate.
var regUnknown = func() (e [RegXMM15 + 1]error) {
	for n := range e {
		e[n] = fmt.Errorf("%w (%s)", ErrRegUnknown, RegName(uint64(n)))
	}
	return e
}()

// RegValue returns register n (a general or SSE register's low 8 bytes).
func (m *Expr) RegValue(n uint64) (uint64, error) {
	if n < NumGPRegs {
		if m.Regs == nil || m.RegValid&(1<<n) == 0 {
			return 0, regUnknown[n]
		}
		return m.Regs[n], nil
	}
	if n >= RegXMM0 && n <= RegXMM15 {
		i := n - RegXMM0
		if m.XMM == nil || m.XMMValid&(1<<i) == 0 {
			return 0, regUnknown[n]
		}
		return binary.LittleEndian.Uint64(m.XMM[i][:8]), nil
	}
	return 0, fmt.Errorf("%w: register %d", ErrUnsupported, n)
}

// read returns the n <= 8 bytes of memory at addr, little-endian.
func (m *Expr) read(addr uint64, n int) (uint64, error) {
	if off := addr - m.CopyAddr; m.Copy != nil && addr >= m.CopyAddr && off <= uint64(len(m.Copy)) && uint64(n) <= uint64(len(m.Copy))-off {
		if n == 8 {
			return binary.LittleEndian.Uint64(m.Copy[off:]), nil
		}
		var v uint64
		for i := n - 1; i >= 0; i-- {
			v = v<<8 | uint64(m.Copy[off+uint64(i)])
		}
		return v, nil
	}
	if m.Mem == nil {
		if m.Copy != nil {
			return 0, errOutsideCopy
		}
		return 0, errNoMemory
	}
	if n == 0 {
		return 0, nil
	}
	b := make([]byte, n)
	if err := m.Mem(addr, b); err != nil {
		return 0, fmt.Errorf("%w: reading %d bytes at %#x: %v", ErrUnavailable, n, addr, err)
	}
	var v uint64
	for i := n - 1; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v, nil
}

var errUnderflow = fmt.Errorf("%w: expression stack underflow", ErrMalformed)

// Made once: a CFI rule reading past the stack copy is common and must not
// allocate.
var (
	errOutsideCopy = fmt.Errorf("%w: outside the memory copy", ErrUnavailable)
	errNoMemory    = fmt.Errorf("%w: no memory access", ErrUnavailable)
)

func (m *Expr) cfa() (uint64, error) {
	if m.CFA == 0 {
		return 0, fmt.Errorf("%w: CFA unknown in this frame", ErrUnavailable)
	}
	return m.CFA, nil
}

// Piece is a DW_OP_piece or DW_OP_bit_piece: Size bits of the location
// before it, from bit Off of it. Err says why that location is unavailable
// (with Expr.Skip).
type Piece struct {
	Size, Off int
	Err       error
}

// Start begins evaluating expr.
func (m *Expr) Start(expr []byte) {
	m.r = Reader{B: expr, End: len(expr)}
	m.sp, m.more = 0, nil
	m.Kind, m.Reg = LocMemory, 0
	m.skipping, m.steps = nil, 0
}

// Push pushes v, a generic entry (CFI register rules start with the CFA
// on the stack).
func (m *Expr) Push(v uint64) error { return m.push(Elem{V: v}) }

// Reset forgets the location after a piece has been taken.
func (m *Expr) Reset() {
	m.Kind = LocMemory
	m.sp = 0
}

// Implicit returns the bytes of a LocImplicit location.
func (m *Expr) Implicit() []byte { return m.r.B[m.implicit[0]:m.implicit[1]] }

// Top returns the top of the stack.
func (m *Expr) Top() (Elem, bool) {
	if m.sp == 0 {
		return Elem{}, false
	}
	return *m.at(m.sp - 1), true
}

// Next runs the expression to its next piece (more true) or its end.
func (m *Expr) Next() (p Piece, more bool, err error) {
	r := &m.r
	for !r.Done() {
		m.steps++
		if m.steps > MaxExprSteps {
			return Piece{}, false, fmt.Errorf("%w: expression does not terminate", ErrMalformed)
		}
		op := r.U8()
		switch op {
		case OpPiece:
			n := r.ULEB()
			if r.Bad {
				return Piece{}, false, fmt.Errorf("%w: truncated expression", ErrMalformed)
			}
			if n > MaxPiece {
				return Piece{}, false, fmt.Errorf("%w: piece of %d bytes", ErrMalformed, n)
			}
			p = Piece{Size: int(n) * 8, Err: m.skipping}
			m.skipping = nil
			return p, true, nil
		case OpBitPiece:
			size := r.ULEB()
			off := r.ULEB()
			if r.Bad {
				return Piece{}, false, fmt.Errorf("%w: truncated expression", ErrMalformed)
			}
			if size > MaxPiece*8 || off > MaxPiece*8 {
				return Piece{}, false, fmt.Errorf("%w: bit_piece %d %d", ErrMalformed, size, off)
			}
			p = Piece{Size: int(size), Off: int(off), Err: m.skipping}
			m.skipping = nil
			return p, true, nil
		}
		if m.skipping != nil {
			if !SkipOperands(op, r) {
				return Piece{}, false, fmt.Errorf("%w: unknown operation 0x%x", ErrMalformed, op)
			}
			continue
		}
		if m.Kind != LocMemory && op != OpGNUUninit && op != OpNop {
			// A register, stack or implicit location must end the
			// expression or its piece.
			return Piece{}, false, fmt.Errorf("%w: operation after a location description", ErrMalformed)
		}
		if m.fast(op, r) {
			continue
		}
		if err := m.step(op, r); err != nil {
			if m.Skip && errors.Is(err, ErrUnavailable) {
				m.skipping = err
				continue
			}
			return Piece{}, false, err
		}
		if r.Bad {
			return Piece{}, false, fmt.Errorf("%w: truncated expression", ErrMalformed)
		}
	}
	if r.Bad {
		return Piece{}, false, fmt.Errorf("%w: truncated expression", ErrMalformed)
	}
	if m.skipping != nil {
		return Piece{}, false, m.skipping
	}
	return Piece{}, false, nil
}

func (m *Expr) push(v Elem) error {
	if m.sp < len(m.buf) {
		m.buf[m.sp] = v
		m.sp++
		return nil
	}
	return m.grow(v)
}

// grow pushes v beyond the buffer in the struct, within MaxStack: entries
// from len(m.buf) on live in m.more.
func (m *Expr) grow(v Elem) error {
	if m.sp >= max(m.MaxStack, len(m.buf)) {
		return fmt.Errorf("%w: expression stack overflow", ErrMalformed)
	}
	i := m.sp - len(m.buf)
	if i < len(m.more) {
		m.more[i] = v
	} else {
		// A fresh array, not append(m.more, v): storing what m points
		// to back into m would make the escape analysis move
		// everything m points to (the unwinder's state) to the heap.
		more := make([]Elem, i+1, 2*i+8)
		copy(more, m.more)
		more[i] = v
		m.more = more
	}
	m.sp++
	return nil
}

func (m *Expr) pop() (Elem, error) {
	if m.sp == 0 {
		return Elem{}, errUnderflow
	}
	m.sp--
	return *m.at(m.sp), nil
}

// at returns stack entry i (0 the bottom).
func (m *Expr) at(i int) *Elem {
	if i < len(m.buf) {
		return &m.buf[i]
	}
	return &m.more[i-len(m.buf)]
}

func (m *Expr) baseType(off uint64) (BaseType, error) {
	if off == 0 {
		return BaseType{}, nil
	}
	if m.BaseType == nil {
		return BaseType{}, fmt.Errorf("%w: typed operation without a unit", ErrMalformed)
	}
	return m.BaseType(off)
}

// fast executes the operations CFI rules are made of when they cannot
// fail, in a function small enough to cost little per operation; it
// returns false, having read nothing, for step to do the rest.
func (m *Expr) fast(op byte, r *Reader) bool {
	room := m.sp < len(m.buf)
	switch {
	case op >= OpLit0 && op <= OpLit31:
		if room {
			m.buf[m.sp] = Elem{V: uint64(op - OpLit0)}
			m.sp++
			return true
		}
	case op >= OpBreg0 && op <= OpBreg31:
		n := op - OpBreg0
		if room && m.Regs != nil && n < NumGPRegs && m.RegValid&(1<<n) != 0 {
			m.buf[m.sp] = Elem{V: m.Regs[n] + uint64(r.SLEB())}
			m.sp++
			return true
		}
	case op == OpDeref:
		if m.sp == 0 || m.sp > len(m.buf) || m.Copy == nil {
			return false
		}
		top := &m.buf[m.sp-1]
		off := top.V - m.CopyAddr
		if top.V >= m.CopyAddr && len(m.Copy) >= 8 && off <= uint64(len(m.Copy))-8 {
			*top = Elem{V: binary.LittleEndian.Uint64(m.Copy[off:])}
			return true
		}
	case op == OpCallFrameCFA:
		if room && m.CFA != 0 {
			m.buf[m.sp] = Elem{V: m.CFA}
			m.sp++
			return true
		}
	case op == OpAnd, op == OpMinus, op == OpMul, op == OpOr, op == OpPlus, op == OpShl, op == OpShr, op == OpShra, op == OpXor,
		op >= OpEq && op <= OpNe:
		if m.sp < 2 || m.sp > len(m.buf) {
			return false
		}
		a, b := &m.buf[m.sp-2], m.buf[m.sp-1]
		if !a.T.Generic() || !b.T.Generic() {
			return false
		}
		v, _ := intBinop(op, a.V, b.V, int64(a.V), int64(b.V), true, false) // cannot fail without division
		*a = Elem{V: v}
		m.sp--
		return true
	}
	return false
}

// step executes op, whose operands follow in r.
func (m *Expr) step(op byte, r *Reader) error {
	switch {
	case op >= OpLit0 && op <= OpLit31:
		return m.push(Elem{V: uint64(op - OpLit0)})
	case op >= OpReg0 && op <= OpReg31:
		m.Kind, m.Reg = LocReg, uint64(op-OpReg0)
		return nil
	case op >= OpBreg0 && op <= OpBreg31:
		off := r.SLEB()
		v, err := m.RegValue(uint64(op - OpBreg0))
		if err != nil {
			return err
		}
		return m.push(Elem{V: v + uint64(off)})
	}
	switch op {
	case OpAddr:
		return m.push(Elem{V: r.UN(8) + m.Bias})
	case OpAddrx, OpGNUAddrIndex, OpConstx, OpGNUConstIndex:
		idx := r.ULEB()
		if m.DebugAddr == nil {
			return fmt.Errorf("%w: DW_OP_%s without a unit", ErrMalformed, OpName(op))
		}
		a, err := m.DebugAddr(idx)
		if err != nil {
			return err
		}
		if op == OpAddrx || op == OpGNUAddrIndex {
			a += m.Bias
		}
		return m.push(Elem{V: a})
	case OpConst1u:
		return m.push(Elem{V: r.UN(1)})
	case OpConst1s:
		return m.push(Elem{V: uint64(r.SN(1))})
	case OpConst2u:
		return m.push(Elem{V: r.UN(2)})
	case OpConst2s:
		return m.push(Elem{V: uint64(r.SN(2))})
	case OpConst4u:
		return m.push(Elem{V: r.UN(4)})
	case OpConst4s:
		return m.push(Elem{V: uint64(r.SN(4))})
	case OpConst8u:
		return m.push(Elem{V: r.UN(8)})
	case OpConst8s:
		return m.push(Elem{V: uint64(r.SN(8))})
	case OpConstu:
		return m.push(Elem{V: r.ULEB()})
	case OpConsts:
		return m.push(Elem{V: uint64(r.SLEB())})
	case OpDup:
		if m.sp == 0 {
			return fmt.Errorf("%w: dup of empty stack", ErrMalformed)
		}
		return m.push(*m.at(m.sp - 1))
	case OpDrop:
		_, err := m.pop()
		return err
	case OpOver:
		if m.sp < 2 {
			return fmt.Errorf("%w: over needs two entries", ErrMalformed)
		}
		return m.push(*m.at(m.sp - 2))
	case OpPick:
		i := int(r.UN(1))
		if i >= m.sp {
			return fmt.Errorf("%w: pick %d beyond stack", ErrMalformed, i)
		}
		return m.push(*m.at(m.sp - 1 - i))
	case OpSwap:
		if m.sp < 2 {
			return fmt.Errorf("%w: swap needs two entries", ErrMalformed)
		}
		a, b := m.at(m.sp-1), m.at(m.sp-2)
		*a, *b = *b, *a
		return nil
	case OpRot:
		if m.sp < 3 {
			return fmt.Errorf("%w: rot needs three entries", ErrMalformed)
		}
		a, b, c := m.at(m.sp-1), m.at(m.sp-2), m.at(m.sp-3)
		*a, *b, *c = *b, *c, *a
		return nil
	case OpDeref:
		a, err := m.pop()
		if err != nil {
			return err
		}
		v, err := m.read(a.V, 8)
		if err != nil {
			return err
		}
		return m.push(Elem{V: v})
	case OpDerefSize:
		n := int(r.UN(1))
		a, err := m.pop()
		if err != nil {
			return err
		}
		if n > 8 {
			return fmt.Errorf("%w: deref_size %d", ErrMalformed, n)
		}
		v, err := m.read(a.V, n)
		if err != nil {
			return err
		}
		return m.push(Elem{V: v})
	case OpDerefType, OpGNUDerefType:
		n := int(r.UN(1))
		t, err := m.baseType(r.ULEB())
		if err != nil {
			return err
		}
		a, err := m.pop()
		if err != nil {
			return err
		}
		if n > 8 {
			return fmt.Errorf("%w: deref_type of %d bytes", ErrUnsupported, n)
		}
		v, err := m.read(a.V, n)
		if err != nil {
			return err
		}
		return m.push(Elem{V: v, T: t})
	case OpConstType, OpGNUConstType:
		toff := r.ULEB()
		n := uint64(r.U8())
		b := r.Bytes(n)
		if r.Bad {
			return nil
		}
		t, err := m.baseType(toff)
		if err != nil {
			return err
		}
		if n > 8 {
			return fmt.Errorf("%w: const_type of %d bytes", ErrUnsupported, n)
		}
		var v uint64
		for i := len(b) - 1; i >= 0; i-- {
			v = v<<8 | uint64(b[i])
		}
		return m.push(Elem{V: v, T: t})
	case OpRegvalType, OpGNURegvalType:
		n := r.ULEB()
		t, err := m.baseType(r.ULEB())
		if err != nil {
			return err
		}
		if t.Size > 8 {
			return fmt.Errorf("%w: regval_type of %d bytes", ErrUnsupported, t.Size)
		}
		v, err := m.RegValue(n)
		if err != nil {
			return err
		}
		return m.push(Elem{V: v, T: t}.trunc())
	case OpConvert, OpGNUConvert, OpReinterpret, OpGNUReinterpret:
		t, err := m.baseType(r.ULEB())
		if err != nil {
			return err
		}
		if t.Size > 8 {
			return fmt.Errorf("%w: conversion to a %d-byte type", ErrUnsupported, t.Size)
		}
		a, err := m.pop()
		if err != nil {
			return err
		}
		if op == OpReinterpret || op == OpGNUReinterpret {
			return m.push(Elem{V: a.V, T: t}.trunc())
		}
		return m.push(Convert(a, t))
	case OpAbs, OpNeg, OpNot:
		a, err := m.pop()
		if err != nil {
			return err
		}
		switch {
		case a.T.float():
			f := a.float()
			switch op {
			case OpAbs:
				f = math.Abs(f)
			case OpNeg:
				f = -f
			default:
				return fmt.Errorf("%w: not of a float", ErrMalformed)
			}
			return m.push(mkFloat(a.T, f))
		case op == OpAbs:
			if s := a.sext(); s < 0 && a.T.signed() {
				a.V = uint64(-s)
			}
		case op == OpNeg:
			a.V = -a.V
		default:
			a.V = ^a.V
		}
		return m.push(a.trunc())
	case OpAnd, OpDiv, OpMinus, OpMod, OpMul, OpOr, OpPlus, OpShl, OpShr, OpShra, OpXor,
		OpEq, OpGe, OpGt, OpLe, OpLt, OpNe:
		if m.sp < 2 {
			return errUnderflow
		}
		a, b := m.at(m.sp-2), m.at(m.sp-1)
		var v Elem
		var err error
		if a.T.Generic() && b.T.Generic() {
			v, err = binopGeneric(op, a.V, b.V)
		} else {
			v, err = Binop(op, *a, *b)
		}
		if err != nil {
			return err
		}
		*a = v
		m.sp--
		return nil
	case OpPlusUconst:
		n := r.ULEB()
		a, err := m.pop()
		if err != nil {
			return err
		}
		a.V += n
		return m.push(a.trunc())
	case OpSkip, OpBra:
		off := r.SN(2)
		if r.Bad {
			return nil
		}
		if op == OpBra {
			a, err := m.pop()
			if err != nil {
				return err
			}
			if a.V == 0 {
				return nil
			}
		}
		to := int64(r.Off) + off
		if to < 0 || to > int64(r.End) {
			return fmt.Errorf("%w: branch outside the expression", ErrMalformed)
		}
		r.Off = int(to)
		return nil
	case OpRegx:
		m.Kind, m.Reg = LocReg, r.ULEB()
		return nil
	case OpBregx:
		n := r.ULEB()
		off := r.SLEB()
		if r.Bad {
			return nil
		}
		v, err := m.RegValue(n)
		if err != nil {
			return err
		}
		return m.push(Elem{V: v + uint64(off)})
	case OpFbreg:
		off := r.SLEB()
		if r.Bad {
			return nil
		}
		if m.FrameBase == nil {
			return fmt.Errorf("%w: DW_OP_fbreg outside a function", ErrMalformed)
		}
		fb, err := m.FrameBase()
		if err != nil {
			return err
		}
		return m.push(Elem{V: fb + uint64(off)})
	case OpCallFrameCFA:
		cfa, err := m.cfa()
		if err != nil {
			return err
		}
		return m.push(Elem{V: cfa})
	case OpStackValue:
		if m.sp == 0 {
			return fmt.Errorf("%w: stack_value of empty stack", ErrMalformed)
		}
		m.Kind = LocStack
		return nil
	case OpImplicitValue:
		n := r.ULEB()
		at := r.Off
		r.Bytes(n)
		if r.Bad {
			return nil
		}
		m.Kind, m.implicit = LocImplicit, [2]int{at, r.Off}
		return nil
	case OpNop, OpGNUUninit:
		return nil
	}
	if (op == OpEntryValue || op == OpGNUEntryValue) && m.EntryValue != nil {
		block := r.Bytes(r.ULEB())
		if r.Bad {
			return nil
		}
		reg, ok := EntryReg(block)
		if !ok {
			return ErrEntryValue
		}
		v, err := m.EntryValue(reg)
		if err != nil {
			return err
		}
		return m.push(Elem{V: v})
	}
	// The remaining operations are not evaluated; their operands are
	// consumed so that the next piece can still be evaluated.
	if !SkipOperands(op, r) {
		return fmt.Errorf("%w: unknown operation 0x%x", ErrMalformed, op)
	}
	if r.Bad {
		return nil
	}
	switch op {
	case OpEntryValue, OpGNUEntryValue:
		return ErrEntryValue
	case OpImplicitPointer, OpGNUImplicitPointer:
		return ErrImplicitPointer
	case OpGNUParameterRef:
		return fmt.Errorf("%w: parameter of the caller (DW_OP_GNU_parameter_ref)", ErrUnavailable)
	}
	return fmt.Errorf("%w: DW_OP_%s", ErrUnsupported, OpName(op))
}

// SkipOperands moves r past the operands of op; false for unknown ops.
func SkipOperands(op byte, r *Reader) bool {
	switch {
	case op >= OpLit0 && op <= OpReg31:
	case op >= OpBreg0 && op <= OpBreg31:
		r.SLEB()
	default:
		switch op {
		case OpAddr, OpConst8u, OpConst8s:
			r.UN(8)
		case OpConst1u, OpConst1s, OpPick, OpDerefSize, OpXderefSize:
			r.UN(1)
		case OpConst2u, OpConst2s, OpCall2, OpBra, OpSkip:
			r.UN(2)
		case OpConst4u, OpConst4s, OpCall4, OpCallRef, OpGNUParameterRef, OpGNUVariableValue:
			r.UN(4)
		case OpConstu, OpConsts, OpPlusUconst, OpAddrx, OpConstx, OpGNUAddrIndex, OpGNUConstIndex,
			OpRegx, OpFbreg, OpConvert, OpGNUConvert, OpReinterpret, OpGNUReinterpret:
			r.ULEB()
		case OpBregx:
			r.ULEB()
			r.SLEB()
		case OpImplicitValue, OpEntryValue, OpGNUEntryValue:
			r.Bytes(r.ULEB())
		case OpImplicitPointer, OpGNUImplicitPointer:
			r.UN(4)
			r.SLEB()
		case OpConstType, OpGNUConstType:
			r.ULEB()
			r.Bytes(uint64(r.U8()))
		case OpRegvalType, OpGNURegvalType:
			r.ULEB()
			r.ULEB()
		case OpDerefType, OpGNUDerefType, OpXderefType:
			r.U8()
			r.ULEB()
		default:
			return OpName(op) != "" && op != OpGNUEncodedAddr
		}
	}
	return true
}

// Convert converts a to type t (DW_OP_convert).
func Convert(a Elem, t BaseType) Elem {
	switch {
	case a.T.float() && t.float():
		return mkFloat(t, a.float())
	case a.T.float():
		f := a.float()
		if t.signed() {
			return Elem{V: uint64(int64(f)), T: t}.trunc()
		}
		return Elem{V: uint64(f), T: t}.trunc()
	case t.float():
		if a.T.signed() {
			return mkFloat(t, float64(a.sext()))
		}
		return mkFloat(t, float64(a.trunc().V))
	default:
		if a.T.signed() {
			return Elem{V: uint64(a.sext()), T: t}.trunc()
		}
		return Elem{V: a.trunc().V, T: t}.trunc()
	}
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// binopGeneric is Binop for two entries of the generic type, the only
// type CFI expressions use.
func binopGeneric(op byte, x, y uint64) (Elem, error) {
	v, err := intBinop(op, x, y, int64(x), int64(y), true, false)
	return Elem{V: v}, err
}

// intBinop applies an integer operator to x and y, whose signed values are
// sx and sy: division and comparisons signed when signed is, modulus when
// signedMod is.
func intBinop(op byte, x, y uint64, sx, sy int64, signed, signedMod bool) (uint64, error) {
	switch op {
	case OpAnd:
		return x & y, nil
	case OpOr:
		return x | y, nil
	case OpXor:
		return x ^ y, nil
	case OpPlus:
		return x + y, nil
	case OpMinus:
		return x - y, nil
	case OpMul:
		return x * y, nil
	case OpDiv:
		switch {
		case y == 0:
			return 0, errDivZero
		case !signed:
			return x / y, nil
		case sy == -1:
			return uint64(-sx), nil
		}
		return uint64(sx / sy), nil
	case OpMod:
		switch {
		case y == 0:
			return 0, errModZero
		case !signedMod:
			return x % y, nil
		case sy == -1:
			return 0, nil
		}
		return uint64(sx % sy), nil
	case OpShl:
		if y >= 64 {
			return 0, nil
		}
		return x << y, nil
	case OpShr:
		if y >= 64 {
			return 0, nil
		}
		return x >> y, nil
	case OpShra:
		return uint64(sx >> min(y, 63)), nil
	}
	if signed {
		return b2u(relation(op, sx, sy)), nil
	}
	return b2u(relation(op, x, y)), nil
}

// relation applies a comparison operator (DW_OP_eq … DW_OP_ge); false for
// any other.
func relation[T int64 | uint64](op byte, x, y T) bool {
	switch op {
	case OpEq:
		return x == y
	case OpNe:
		return x != y
	case OpLt:
		return x < y
	case OpLe:
		return x <= y
	case OpGt:
		return x > y
	case OpGe:
		return x >= y
	}
	return false
}

var (
	errDivZero = fmt.Errorf("%w: division by zero", ErrMalformed)
	errModZero = fmt.Errorf("%w: modulo by zero", ErrMalformed)
)

// Binop applies the binary operator op to a (below) and b (top).
func Binop(op byte, a, b Elem) (Elem, error) {
	t := a.T
	if t.Generic() {
		t = b.T
	}
	if a.T.float() || b.T.float() {
		if !a.T.float() || !b.T.float() {
			return Elem{}, fmt.Errorf("%w: arithmetic mixing float and integer entries", ErrMalformed)
		}
		x, y := a.float(), b.float()
		switch op {
		case OpPlus:
			return mkFloat(t, x+y), nil
		case OpMinus:
			return mkFloat(t, x-y), nil
		case OpMul:
			return mkFloat(t, x*y), nil
		case OpDiv:
			return mkFloat(t, x/y), nil
		case OpEq:
			return Elem{V: b2u(x == y)}, nil
		case OpNe:
			return Elem{V: b2u(x != y)}, nil
		case OpLt:
			return Elem{V: b2u(x < y)}, nil
		case OpLe:
			return Elem{V: b2u(x <= y)}, nil
		case OpGt:
			return Elem{V: b2u(x > y)}, nil
		case OpGe:
			return Elem{V: b2u(x >= y)}, nil
		}
		return Elem{}, fmt.Errorf("%w: DW_OP_%s on floats", ErrMalformed, OpName(op))
	}
	a.T, b.T = t, t
	signed := t.signed()
	v, err := intBinop(op, a.trunc().V, b.trunc().V, a.sext(), b.sext(), signed, signed && !t.Generic())
	if err != nil {
		return Elem{}, err
	}
	if op >= OpEq && op <= OpNe {
		return Elem{V: v}, nil // a comparison's result is generic
	}
	return Elem{V: v, T: t}.trunc(), nil
}

// EntryReg returns the general register whose value a DW_OP_entry_value
// block asks for: a register location (DW_OP_regN, DW_OP_regx) or the
// register's value (DW_OP_bregN 0, DW_OP_bregx N 0), the forms compilers
// emit. Other blocks (memory at entry) are not recovered.
func EntryReg(block []byte) (uint64, bool) {
	r := Reader{B: block, End: len(block)}
	var reg uint64
	switch op := r.U8(); {
	case op >= OpReg0 && op < OpReg0+32:
		reg = uint64(op - OpReg0)
	case op == OpRegx:
		reg = r.ULEB()
	case op >= OpBreg0 && op < OpBreg0+32:
		reg = uint64(op - OpBreg0)
		if r.SLEB() != 0 {
			return 0, false
		}
	case op == OpBregx:
		reg = r.ULEB()
		if r.SLEB() != 0 {
			return 0, false
		}
	default:
		return 0, false
	}
	return reg, !r.Bad && r.Done() && reg < NumGPRegs
}
