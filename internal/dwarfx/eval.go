package dwarfx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/culprit-dev/culprit/internal/elfx"
	"math"
)

// Errors returned by evaluation. Every error from Eval means the value cannot
// be had at this frame; callers that sample values count it as missing and
// never substitute a guess. errors.Is tells the reasons apart.
var (
	// ErrUnavailable: the value does not exist at this PC or cannot be
	// read in this frame (optimized out, a register unknown in this frame,
	// the CFA unknown, unreadable memory).
	ErrUnavailable = errors.New("value unavailable")
	// ErrOptimizedOut: no location at this PC (wraps ErrUnavailable).
	ErrOptimizedOut = fmt.Errorf("%w: optimized out", ErrUnavailable)
	// ErrEntryValue: the location needs a register's value at function
	// entry (DW_OP_entry_value). A debugger may recover it from call-site
	// parameters in the caller; this package does not guess (wraps
	// ErrUnavailable).
	ErrEntryValue = fmt.Errorf("%w: needs a value at function entry (DW_OP_entry_value)", ErrUnavailable)
	// ErrImplicitPointer: a pointer to an object that was optimized out
	// (DW_OP_implicit_pointer; gdb prints <synthetic pointer>). Wraps
	// ErrUnavailable.
	ErrImplicitPointer = fmt.Errorf("%w: pointer to an optimized-out object (DW_OP_implicit_pointer)", ErrUnavailable)
	// ErrRegUnknown: the location needs a register that Frame.RegValid or
	// XMMValid marks unknown (wraps ErrUnavailable). In a caller frame this
	// is the honest answer for a caller-saved register: GCC may keep a
	// variable in one across a call to a function it knows does not
	// clobber it (-fipa-ra), and gdb then shows the callee's register,
	// right or wrong; a Frame that marks such registers valid gets the
	// same.
	ErrRegUnknown = fmt.Errorf("%w: register unknown in this frame", ErrUnavailable)
	// ErrUnsupported: the expression uses an operation this package does
	// not evaluate (TLS, DWARF procedure calls, x87 or 128-bit typed
	// arithmetic).
	ErrUnsupported = errors.New("unsupported DWARF expression")
	// ErrMalformed: the expression or list is invalid.
	ErrMalformed = errors.New("malformed DWARF")
)

// Register numbers of a Frame (DWARF x86-64 numbering).
const (
	RegRAX = 0
	RegRDX = 1
	RegRCX = 2
	RegRBX = 3
	RegRSI = 4
	RegRDI = 5
	RegRBP = 6
	RegRSP = 7
	RegRIP = 16 // the return-address column; holds the frame's PC
	// NumRegs is the number of general registers in Frame.Regs.
	NumRegs = 17
	// RegXMM0 is the DWARF number of xmm0; xmm0..xmm15 are 17..32.
	RegXMM0 = 17
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

// Limits that keep a malformed or hostile expression from running long.
const (
	maxSteps = 4096
	maxStack = 256
	maxPiece = 1 << 20 // bytes in one piece or result
)

// DW_ATE base type encodings used by typed stack entries.
const (
	ateAddress      = 0x1
	ateBoolean      = 0x2
	ateComplexFloat = 0x3
	ateFloat        = 0x4
	ateSigned       = 0x5
	ateSignedChar   = 0x6
	ateUnsigned     = 0x7
	ateUnsignedChar = 0x8
	ateUTF          = 0x10
)

// baseType is the type of a typed stack entry; the zero value is the
// generic type (an address-sized integer).
type baseType struct {
	enc  uint8
	size uint8
}

func (t baseType) generic() bool { return t.enc == 0 }
func (t baseType) float() bool   { return t.enc == ateFloat }
func (t baseType) signed() bool {
	return t.enc == 0 || t.enc == ateSigned || t.enc == ateSignedChar
}
func (t baseType) bits() uint {
	if t.enc == 0 || t.size == 0 || t.size >= 8 {
		return 64
	}
	return uint(t.size) * 8
}

type elem struct {
	v uint64
	t baseType
}

func (e elem) trunc() elem {
	if b := e.t.bits(); b < 64 {
		e.v &= 1<<b - 1
	}
	return e
}

func (e elem) sext() int64 {
	b := e.t.bits()
	if b >= 64 {
		return int64(e.v)
	}
	return int64(e.v<<(64-b)) >> (64 - b)
}

func (e elem) float() float64 {
	if e.t.size == 4 {
		return float64(math.Float32frombits(uint32(e.v)))
	}
	return math.Float64frombits(e.v)
}

func mkFloat(t baseType, f float64) elem {
	if t.size == 4 {
		return elem{uint64(math.Float32bits(float32(f))), t}
	}
	return elem{math.Float64bits(f), t}
}

// locKind is the kind of a (sub)location being built.
type locKind uint8

const (
	kMemory   locKind = iota // address on top of the stack (or empty stack: no location)
	kReg                     // register reg
	kStack                   // DW_OP_stack_value: value on top of the stack
	kImplicit                // DW_OP_implicit_value bytes
)

type evaluator struct {
	f     *Frame
	ctx   *exprCtx
	pc    uint64
	stack []elem
	buf   [16]elem

	kind     locKind
	reg      uint64
	implicit []byte

	pieces   bool
	skipping error // the current piece is unavailable for this reason
	firstErr error // why the first unavailable piece was
	out      []byte
	outBits  int
	missing  [][2]int
	steps    int
}

// exprCtx is what expressions of one unit and function refer to.
type exprCtx struct {
	u  *unit
	fn *Function // frame base for DW_OP_fbreg; nil for globals
}

func (e *evaluator) push(v elem) error {
	if len(e.stack) >= maxStack {
		return fmt.Errorf("%w: expression stack overflow", ErrMalformed)
	}
	e.stack = append(e.stack, v)
	return nil
}

func (e *evaluator) pop() (elem, error) {
	if len(e.stack) == 0 {
		return elem{}, fmt.Errorf("%w: expression stack underflow", ErrMalformed)
	}
	v := e.stack[len(e.stack)-1]
	e.stack = e.stack[:len(e.stack)-1]
	return v, nil
}

func (e *evaluator) reg64(n uint64) (uint64, error) {
	if n < NumRegs {
		v, ok := e.f.Reg(int(n))
		if !ok {
			return 0, fmt.Errorf("%w (%s)", ErrRegUnknown, RegName(n))
		}
		return v, nil
	}
	if n >= RegXMM0 && n < RegXMM0+16 {
		i := n - RegXMM0
		if e.f.XMMValid&(1<<i) == 0 {
			return 0, fmt.Errorf("%w (%s)", ErrRegUnknown, RegName(n))
		}
		return binary.LittleEndian.Uint64(e.f.XMM[i][:8]), nil
	}
	return 0, fmt.Errorf("%w: register %d", ErrUnsupported, n)
}

// regBytes returns the contents of register n as bytes.
func (e *evaluator) regBytes(n uint64) ([]byte, error) {
	if n >= RegXMM0 && n < RegXMM0+16 {
		i := n - RegXMM0
		if e.f.XMMValid&(1<<i) == 0 {
			return nil, fmt.Errorf("%w (%s)", ErrRegUnknown, RegName(n))
		}
		b := e.f.XMM[i]
		return b[:], nil
	}
	v, err := e.reg64(n)
	if err != nil {
		return nil, err
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	return b[:], nil
}

func (e *evaluator) read(addr uint64, n int) ([]byte, error) {
	if e.f.Mem == nil {
		return nil, fmt.Errorf("%w: no memory access", ErrUnavailable)
	}
	if n < 0 || n > maxPiece {
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

func (e *evaluator) readUint(addr uint64, n int) (uint64, error) {
	b, err := e.read(addr, n)
	if err != nil {
		return 0, err
	}
	var v uint64
	for i := len(b) - 1; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v, nil
}

func (e *evaluator) baseType(off uint64) (baseType, error) {
	if off == 0 {
		return baseType{}, nil
	}
	if e.ctx == nil || e.ctx.u == nil {
		return baseType{}, fmt.Errorf("%w: typed operation without a unit", ErrMalformed)
	}
	return e.ctx.u.baseType(off)
}

// run evaluates expr; the result is left in the evaluator's location state.
func (e *evaluator) run(expr []byte, depth int) error {
	r := &elfx.Reader{B: expr, End: len(expr)}
	e.stack = e.buf[:0]
	for !r.Done() {
		e.steps++
		if e.steps > maxSteps {
			return fmt.Errorf("%w: expression does not terminate", ErrMalformed)
		}
		op := r.U8()
		if e.skipping != nil && op != elfx.OpPiece && op != elfx.OpBitPiece {
			if !skipOperands(op, r) {
				return fmt.Errorf("%w: unknown operation 0x%x", ErrMalformed, op)
			}
			continue
		}
		if e.kind != kMemory && op != elfx.OpPiece && op != elfx.OpBitPiece && op != elfx.OpGNUUninit && op != elfx.OpNop {
			// A register, stack or implicit location must end the
			// expression or its piece.
			return fmt.Errorf("%w: operation after a location description", ErrMalformed)
		}
		var err error
		switch {
		case op >= elfx.OpLit0 && op <= elfx.OpLit31:
			err = e.push(elem{v: uint64(op - elfx.OpLit0)})
		case op >= elfx.OpReg0 && op <= elfx.OpReg31:
			e.kind, e.reg = kReg, uint64(op-elfx.OpReg0)
		case op >= elfx.OpBreg0 && op <= elfx.OpBreg31:
			off := r.SLEB()
			var v uint64
			if v, err = e.reg64(uint64(op - elfx.OpBreg0)); err == nil {
				err = e.push(elem{v: v + uint64(off)})
			}
		default:
			err = e.step(op, r, depth)
		}
		if err != nil {
			if depth == 0 && errors.Is(err, ErrUnavailable) {
				// This piece (if the expression has pieces) is
				// unavailable; skip to the next DW_OP_piece.
				e.skipping = err
				continue
			}
			return err
		}
		if r.Bad {
			return fmt.Errorf("%w: truncated expression", ErrMalformed)
		}
	}
	if r.Bad {
		return fmt.Errorf("%w: truncated expression", ErrMalformed)
	}
	if e.skipping != nil {
		return e.skipping
	}
	return nil
}

// skipOperands moves r past the operands of op; false for unknown ops.
func skipOperands(op byte, r *elfx.Reader) bool {
	switch {
	case op >= elfx.OpLit0 && op <= elfx.OpReg31:
	case op >= elfx.OpBreg0 && op <= elfx.OpBreg31:
		r.SLEB()
	default:
		switch op {
		case elfx.OpAddr, elfx.OpConst8u, elfx.OpConst8s:
			r.UN(8)
		case elfx.OpConst1u, elfx.OpConst1s, elfx.OpPick, elfx.OpDerefSize, elfx.OpXderefSize:
			r.UN(1)
		case elfx.OpConst2u, elfx.OpConst2s, elfx.OpCall2, elfx.OpBra, elfx.OpSkip:
			r.UN(2)
		case elfx.OpConst4u, elfx.OpConst4s, elfx.OpCall4, elfx.OpCallRef, elfx.OpGNUParameterRef, elfx.OpGNUVariableValue:
			r.UN(4)
		case elfx.OpConstu, elfx.OpConsts, elfx.OpPlusUconst, elfx.OpAddrx, elfx.OpConstx, elfx.OpGNUAddrIndex, elfx.OpGNUConstIndex,
			elfx.OpRegx, elfx.OpFbreg, elfx.OpConvert, elfx.OpGNUConvert, elfx.OpReinterpret, elfx.OpGNUReinterpret:
			r.ULEB()
		case elfx.OpBregx:
			r.ULEB()
			r.SLEB()
		case elfx.OpImplicitValue, elfx.OpEntryValue, elfx.OpGNUEntryValue:
			r.Bytes(r.ULEB())
		case elfx.OpImplicitPointer, elfx.OpGNUImplicitPointer:
			r.UN(4)
			r.SLEB()
		case elfx.OpConstType, elfx.OpGNUConstType:
			r.ULEB()
			r.Bytes(uint64(r.U8()))
		case elfx.OpRegvalType, elfx.OpGNURegvalType:
			r.ULEB()
			r.ULEB()
		case elfx.OpDerefType, elfx.OpGNUDerefType, elfx.OpXderefType:
			r.U8()
			r.ULEB()
		default:
			return elfx.OpName(op) != "" && op != elfx.OpGNUEncodedAddr
		}
	}
	return true
}

func (e *evaluator) step(op byte, r *elfx.Reader, depth int) error {
	switch op {
	case elfx.OpAddr:
		a := r.UN(8)
		return e.push(elem{v: a + e.f.Bias})
	case elfx.OpAddrx, elfx.OpGNUAddrIndex, elfx.OpConstx, elfx.OpGNUConstIndex:
		idx := r.ULEB()
		if e.ctx == nil || e.ctx.u == nil {
			return fmt.Errorf("%w: %s without a unit", ErrMalformed, elfx.OpName(op))
		}
		a, err := e.ctx.u.debugAddr(idx)
		if err != nil {
			return err
		}
		if op == elfx.OpAddrx || op == elfx.OpGNUAddrIndex {
			a += e.f.Bias
		}
		return e.push(elem{v: a})
	case elfx.OpConst1u:
		return e.push(elem{v: r.UN(1)})
	case elfx.OpConst1s:
		return e.push(elem{v: uint64(r.SN(1))})
	case elfx.OpConst2u:
		return e.push(elem{v: r.UN(2)})
	case elfx.OpConst2s:
		return e.push(elem{v: uint64(r.SN(2))})
	case elfx.OpConst4u:
		return e.push(elem{v: r.UN(4)})
	case elfx.OpConst4s:
		return e.push(elem{v: uint64(r.SN(4))})
	case elfx.OpConst8u:
		return e.push(elem{v: r.UN(8)})
	case elfx.OpConst8s:
		return e.push(elem{v: uint64(r.SN(8))})
	case elfx.OpConstu:
		return e.push(elem{v: r.ULEB()})
	case elfx.OpConsts:
		return e.push(elem{v: uint64(r.SLEB())})
	case elfx.OpDup:
		if len(e.stack) == 0 {
			return fmt.Errorf("%w: dup of empty stack", ErrMalformed)
		}
		return e.push(e.stack[len(e.stack)-1])
	case elfx.OpDrop:
		_, err := e.pop()
		return err
	case elfx.OpOver:
		if len(e.stack) < 2 {
			return fmt.Errorf("%w: over needs two entries", ErrMalformed)
		}
		return e.push(e.stack[len(e.stack)-2])
	case elfx.OpPick:
		i := int(r.UN(1))
		if i >= len(e.stack) {
			return fmt.Errorf("%w: pick %d beyond stack", ErrMalformed, i)
		}
		return e.push(e.stack[len(e.stack)-1-i])
	case elfx.OpSwap:
		if len(e.stack) < 2 {
			return fmt.Errorf("%w: swap needs two entries", ErrMalformed)
		}
		n := len(e.stack)
		e.stack[n-1], e.stack[n-2] = e.stack[n-2], e.stack[n-1]
		return nil
	case elfx.OpRot:
		if len(e.stack) < 3 {
			return fmt.Errorf("%w: rot needs three entries", ErrMalformed)
		}
		n := len(e.stack)
		e.stack[n-1], e.stack[n-2], e.stack[n-3] = e.stack[n-2], e.stack[n-3], e.stack[n-1]
		return nil
	case elfx.OpDeref:
		a, err := e.pop()
		if err != nil {
			return err
		}
		v, err := e.readUint(a.v, 8)
		if err != nil {
			return err
		}
		return e.push(elem{v: v})
	case elfx.OpDerefSize:
		n := int(r.UN(1))
		a, err := e.pop()
		if err != nil {
			return err
		}
		if n > 8 {
			return fmt.Errorf("%w: deref_size %d", ErrMalformed, n)
		}
		v, err := e.readUint(a.v, n)
		if err != nil {
			return err
		}
		return e.push(elem{v: v})
	case elfx.OpDerefType, elfx.OpGNUDerefType:
		n := int(r.UN(1))
		t, err := e.baseType(r.ULEB())
		if err != nil {
			return err
		}
		a, err := e.pop()
		if err != nil {
			return err
		}
		if n > 8 {
			return fmt.Errorf("%w: deref_type of %d bytes", ErrUnsupported, n)
		}
		v, err := e.readUint(a.v, n)
		if err != nil {
			return err
		}
		return e.push(elem{v: v, t: t})
	case elfx.OpConstType, elfx.OpGNUConstType:
		toff := r.ULEB()
		n := uint64(r.U8())
		b := r.Bytes(n)
		if r.Bad {
			return nil
		}
		t, err := e.baseType(toff)
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
		return e.push(elem{v: v, t: t})
	case elfx.OpRegvalType, elfx.OpGNURegvalType:
		n := r.ULEB()
		t, err := e.baseType(r.ULEB())
		if err != nil {
			return err
		}
		if t.size > 8 {
			return fmt.Errorf("%w: regval_type of %d bytes", ErrUnsupported, t.size)
		}
		v, err := e.reg64(n)
		if err != nil {
			return err
		}
		return e.push(elem{v: v, t: t}.trunc())
	case elfx.OpConvert, elfx.OpGNUConvert, elfx.OpReinterpret, elfx.OpGNUReinterpret:
		t, err := e.baseType(r.ULEB())
		if err != nil {
			return err
		}
		if t.size > 8 {
			return fmt.Errorf("%w: conversion to a %d-byte type", ErrUnsupported, t.size)
		}
		a, err := e.pop()
		if err != nil {
			return err
		}
		if op == elfx.OpReinterpret || op == elfx.OpGNUReinterpret {
			return e.push(elem{v: a.v, t: t}.trunc())
		}
		return e.push(convert(a, t))
	case elfx.OpAbs, elfx.OpNeg, elfx.OpNot:
		a, err := e.pop()
		if err != nil {
			return err
		}
		switch {
		case a.t.float():
			f := a.float()
			switch op {
			case elfx.OpAbs:
				f = math.Abs(f)
			case elfx.OpNeg:
				f = -f
			default:
				return fmt.Errorf("%w: not of a float", ErrMalformed)
			}
			return e.push(mkFloat(a.t, f))
		case op == elfx.OpAbs:
			if s := a.sext(); s < 0 && a.t.signed() {
				a.v = uint64(-s)
			}
		case op == elfx.OpNeg:
			a.v = -a.v
		default:
			a.v = ^a.v
		}
		return e.push(a.trunc())
	case elfx.OpAnd, elfx.OpDiv, elfx.OpMinus, elfx.OpMod, elfx.OpMul, elfx.OpOr, elfx.OpPlus, elfx.OpShl, elfx.OpShr, elfx.OpShra, elfx.OpXor,
		elfx.OpEq, elfx.OpGe, elfx.OpGt, elfx.OpLe, elfx.OpLt, elfx.OpNe:
		b, err := e.pop()
		if err != nil {
			return err
		}
		a, err := e.pop()
		if err != nil {
			return err
		}
		v, err := binop(op, a, b)
		if err != nil {
			return err
		}
		return e.push(v)
	case elfx.OpPlusUconst:
		n := r.ULEB()
		a, err := e.pop()
		if err != nil {
			return err
		}
		a.v += n
		return e.push(a.trunc())
	case elfx.OpSkip, elfx.OpBra:
		off := r.SN(2)
		if r.Bad {
			return nil
		}
		if op == elfx.OpBra {
			a, err := e.pop()
			if err != nil {
				return err
			}
			if a.v == 0 {
				return nil
			}
		}
		to := int64(r.Off) + off
		if to < 0 || to > int64(r.End) {
			return fmt.Errorf("%w: branch outside the expression", ErrMalformed)
		}
		r.Off = int(to)
		return nil
	case elfx.OpRegx:
		e.kind, e.reg = kReg, r.ULEB()
		return nil
	case elfx.OpBregx:
		n := r.ULEB()
		off := r.SLEB()
		if r.Bad {
			return nil
		}
		v, err := e.reg64(n)
		if err != nil {
			return err
		}
		return e.push(elem{v: v + uint64(off)})
	case elfx.OpFbreg:
		off := r.SLEB()
		if r.Bad {
			return nil
		}
		fb, err := e.frameBase(depth)
		if err != nil {
			return err
		}
		return e.push(elem{v: fb + uint64(off)})
	case elfx.OpCallFrameCFA:
		if e.f.CFA == 0 {
			return fmt.Errorf("%w: CFA unknown in this frame", ErrUnavailable)
		}
		return e.push(elem{v: e.f.CFA})
	case elfx.OpStackValue:
		if len(e.stack) == 0 {
			return fmt.Errorf("%w: stack_value of empty stack", ErrMalformed)
		}
		e.kind = kStack
		return nil
	case elfx.OpImplicitValue:
		n := r.ULEB()
		b := r.Bytes(n)
		if r.Bad {
			return nil
		}
		e.kind, e.implicit = kImplicit, b
		return nil
	case elfx.OpPiece:
		n := r.ULEB()
		if r.Bad {
			return nil
		}
		if n > maxPiece {
			return fmt.Errorf("%w: piece of %d bytes", ErrMalformed, n)
		}
		return e.piece(int(n)*8, 0)
	case elfx.OpBitPiece:
		size := r.ULEB()
		off := r.ULEB()
		if r.Bad {
			return nil
		}
		if size > maxPiece*8 || off > maxPiece*8 {
			return fmt.Errorf("%w: bit_piece %d %d", ErrMalformed, size, off)
		}
		return e.piece(int(size), int(off))
	case elfx.OpNop, elfx.OpGNUUninit:
		return nil
	}
	// The remaining operations are not evaluated; their operands are
	// consumed so that the next piece can still be evaluated.
	if !skipOperands(op, r) {
		return fmt.Errorf("%w: unknown operation 0x%x", ErrMalformed, op)
	}
	if r.Bad {
		return nil
	}
	switch op {
	case elfx.OpEntryValue, elfx.OpGNUEntryValue:
		return ErrEntryValue
	case elfx.OpImplicitPointer, elfx.OpGNUImplicitPointer:
		return ErrImplicitPointer
	case elfx.OpGNUParameterRef:
		return fmt.Errorf("%w: parameter of the caller (DW_OP_GNU_parameter_ref)", ErrUnavailable)
	}
	return fmt.Errorf("%w: DW_OP_%s", ErrUnsupported, elfx.OpName(op))
}

func convert(a elem, t baseType) elem {
	switch {
	case a.t.float() && t.float():
		return mkFloat(t, a.float())
	case a.t.float():
		f := a.float()
		if t.signed() {
			return elem{v: uint64(int64(f)), t: t}.trunc()
		}
		return elem{v: uint64(f), t: t}.trunc()
	case t.float():
		if a.t.signed() {
			return mkFloat(t, float64(a.sext()))
		}
		return mkFloat(t, float64(a.trunc().v))
	default:
		if a.t.signed() {
			return elem{v: uint64(a.sext()), t: t}.trunc()
		}
		return elem{v: a.trunc().v, t: t}.trunc()
	}
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func binop(op byte, a, b elem) (elem, error) {
	t := a.t
	if t.generic() {
		t = b.t
	}
	if a.t.float() || b.t.float() {
		if !a.t.float() || !b.t.float() {
			return elem{}, fmt.Errorf("%w: arithmetic mixing float and integer entries", ErrMalformed)
		}
		x, y := a.float(), b.float()
		switch op {
		case elfx.OpPlus:
			return mkFloat(t, x+y), nil
		case elfx.OpMinus:
			return mkFloat(t, x-y), nil
		case elfx.OpMul:
			return mkFloat(t, x*y), nil
		case elfx.OpDiv:
			return mkFloat(t, x/y), nil
		case elfx.OpEq:
			return elem{v: b2u(x == y)}, nil
		case elfx.OpNe:
			return elem{v: b2u(x != y)}, nil
		case elfx.OpLt:
			return elem{v: b2u(x < y)}, nil
		case elfx.OpLe:
			return elem{v: b2u(x <= y)}, nil
		case elfx.OpGt:
			return elem{v: b2u(x > y)}, nil
		case elfx.OpGe:
			return elem{v: b2u(x >= y)}, nil
		}
		return elem{}, fmt.Errorf("%w: DW_OP_%s on floats", ErrMalformed, elfx.OpName(op))
	}
	a.t, b.t = t, t
	x, y := a.trunc().v, b.trunc().v
	sx, sy := a.sext(), b.sext()
	signed := t.signed()
	var v uint64
	switch op {
	case elfx.OpAnd:
		v = x & y
	case elfx.OpOr:
		v = x | y
	case elfx.OpXor:
		v = x ^ y
	case elfx.OpPlus:
		v = x + y
	case elfx.OpMinus:
		v = x - y
	case elfx.OpMul:
		v = x * y
	case elfx.OpDiv:
		if y == 0 {
			return elem{}, fmt.Errorf("%w: division by zero", ErrMalformed)
		}
		if signed {
			if sy == -1 {
				v = uint64(-sx)
			} else {
				v = uint64(sx / sy)
			}
		} else {
			v = x / y
		}
	case elfx.OpMod:
		if y == 0 {
			return elem{}, fmt.Errorf("%w: modulo by zero", ErrMalformed)
		}
		if signed && !t.generic() {
			if sy == -1 {
				v = 0
			} else {
				v = uint64(sx % sy)
			}
		} else {
			v = x % y
		}
	case elfx.OpShl:
		if y >= 64 {
			v = 0
		} else {
			v = x << y
		}
	case elfx.OpShr:
		if y >= 64 {
			v = 0
		} else {
			v = x >> y
		}
	case elfx.OpShra:
		if y >= 64 {
			y = 63
		}
		v = uint64(sx >> y)
	default:
		var c bool
		if signed {
			switch op {
			case elfx.OpEq:
				c = sx == sy
			case elfx.OpNe:
				c = sx != sy
			case elfx.OpLt:
				c = sx < sy
			case elfx.OpLe:
				c = sx <= sy
			case elfx.OpGt:
				c = sx > sy
			case elfx.OpGe:
				c = sx >= sy
			}
		} else {
			switch op {
			case elfx.OpEq:
				c = x == y
			case elfx.OpNe:
				c = x != y
			case elfx.OpLt:
				c = x < y
			case elfx.OpLe:
				c = x <= y
			case elfx.OpGt:
				c = x > y
			case elfx.OpGe:
				c = x >= y
			}
		}
		return elem{v: b2u(c)}, nil
	}
	return elem{v: v, t: t}.trunc(), nil
}

// frameBase evaluates the DW_AT_frame_base of the expression's function.
func (e *evaluator) frameBase(depth int) (uint64, error) {
	if e.ctx == nil || e.ctx.fn == nil {
		return 0, fmt.Errorf("%w: DW_OP_fbreg outside a function", ErrMalformed)
	}
	if depth > 0 {
		return 0, fmt.Errorf("%w: DW_OP_fbreg inside a frame base", ErrMalformed)
	}
	fn := e.ctx.fn
	expr, ok := fn.frameBase.at(fn.u, e.pc)
	if !ok {
		return 0, fmt.Errorf("%w: no frame base at this PC", ErrUnavailable)
	}
	sub := evaluator{f: e.f, ctx: e.ctx, pc: e.pc, steps: e.steps}
	if err := sub.run(expr, depth+1); err != nil {
		return 0, err
	}
	e.steps = sub.steps
	switch sub.kind {
	case kReg:
		return sub.reg64(sub.reg)
	case kMemory, kStack:
		if len(sub.stack) == 0 {
			return 0, fmt.Errorf("%w: empty frame base", ErrUnavailable)
		}
		return sub.stack[len(sub.stack)-1].v, nil
	}
	return 0, fmt.Errorf("%w: frame base is not an address", ErrUnsupported)
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
	switch e.kind {
	case kReg:
		b, err := e.regBytes(e.reg)
		if err != nil {
			return nil, nil, err
		}
		fill(b)
	case kStack:
		top := e.stack[len(e.stack)-1]
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], top.v)
		n := 8
		if !top.t.generic() && top.t.size > 0 && top.t.size < 8 {
			n = int(top.t.size)
		}
		fill(b[:n])
		// A stack value narrower than the piece is zero-extended: the
		// value is the whole number, not a prefix of one.
		for i := n; i < nbytes; i++ {
			ok[i] = true
		}
	case kImplicit:
		fill(e.implicit)
	case kMemory:
		if len(e.stack) == 0 {
			return data, ok, nil // empty location: optimized out
		}
		b, err := e.read(e.stack[len(e.stack)-1].v, nbytes)
		if err != nil {
			return nil, nil, err
		}
		fill(b)
	}
	return data, ok, nil
}

// piece appends size bits of the current sub-location, starting at bit off
// of it, to the composite result, then resets the sub-location.
func (e *evaluator) piece(size, off int) error {
	e.pieces = true
	nbytes := (off + size + 7) / 8
	var src []byte
	var ok []bool
	err := e.skipping
	e.skipping = nil
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
	if total > maxPiece*8 {
		return fmt.Errorf("%w: composite larger than %d bytes", ErrMalformed, maxPiece)
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
	e.kind, e.implicit = kMemory, nil
	e.stack = e.stack[:0]
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
	if size < 0 || size > maxPiece {
		return Value{}, fmt.Errorf("%w: value of %d bytes", ErrUnsupported, size)
	}
	if len(expr) == 0 {
		return Value{}, ErrOptimizedOut
	}
	e := evaluator{f: f, ctx: ctx, pc: pc}
	if err := e.run(expr, 0); err != nil {
		return Value{}, err
	}
	if e.pieces {
		if e.kind != kMemory || len(e.stack) != 0 {
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
	switch e.kind {
	case kMemory:
		if len(e.stack) == 0 {
			return Value{}, ErrOptimizedOut
		}
		addr := e.stack[len(e.stack)-1].v
		v := Value{Addr: addr, InMemory: true}
		if size > 0 {
			b, err := e.read(addr, size)
			if err != nil {
				return Value{}, err
			}
			v.Bytes = b
		}
		return v, nil
	case kReg:
		b, err := e.regBytes(e.reg)
		if err != nil {
			return Value{}, err
		}
		return sized(b, size, true), nil
	case kStack:
		top := e.stack[len(e.stack)-1]
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], top.v)
		return sized(b[:], size, false), nil
	default: // kImplicit
		return sized(e.implicit, size, true), nil
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
