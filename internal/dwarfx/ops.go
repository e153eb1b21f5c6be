package dwarfx

import (
	"fmt"
	"strings"
)

// DWARF expression opcodes (DWARF 5 §2.5, §2.6 and the GNU extensions GCC
// emits).
const (
	opAddr              = 0x03
	opDeref             = 0x06
	opConst1u           = 0x08
	opConst1s           = 0x09
	opConst2u           = 0x0a
	opConst2s           = 0x0b
	opConst4u           = 0x0c
	opConst4s           = 0x0d
	opConst8u           = 0x0e
	opConst8s           = 0x0f
	opConstu            = 0x10
	opConsts            = 0x11
	opDup               = 0x12
	opDrop              = 0x13
	opOver              = 0x14
	opPick              = 0x15
	opSwap              = 0x16
	opRot               = 0x17
	opXderef            = 0x18
	opAbs               = 0x19
	opAnd               = 0x1a
	opDiv               = 0x1b
	opMinus             = 0x1c
	opMod               = 0x1d
	opMul               = 0x1e
	opNeg               = 0x1f
	opNot               = 0x20
	opOr                = 0x21
	opPlus              = 0x22
	opPlusUconst        = 0x23
	opShl               = 0x24
	opShr               = 0x25
	opShra              = 0x26
	opXor               = 0x27
	opBra               = 0x28
	opEq                = 0x29
	opGe                = 0x2a
	opGt                = 0x2b
	opLe                = 0x2c
	opLt                = 0x2d
	opNe                = 0x2e
	opSkip              = 0x2f
	opLit0              = 0x30
	opLit31             = 0x4f
	opReg0              = 0x50
	opReg31             = 0x6f
	opBreg0             = 0x70
	opBreg31            = 0x8f
	opRegx              = 0x90
	opFbreg             = 0x91
	opBregx             = 0x92
	opPiece             = 0x93
	opDerefSize         = 0x94
	opXderefSize        = 0x95
	opNop               = 0x96
	opPushObjectAddress = 0x97
	opCall2             = 0x98
	opCall4             = 0x99
	opCallRef           = 0x9a
	opFormTLSAddress    = 0x9b
	opCallFrameCFA      = 0x9c
	opBitPiece          = 0x9d
	opImplicitValue     = 0x9e
	opStackValue        = 0x9f
	opImplicitPointer   = 0xa0
	opAddrx             = 0xa1
	opConstx            = 0xa2
	opEntryValue        = 0xa3
	opConstType         = 0xa4
	opRegvalType        = 0xa5
	opDerefType         = 0xa6
	opXderefType        = 0xa7
	opConvert           = 0xa8
	opReinterpret       = 0xa9

	opGNUPushTLSAddress  = 0xe0
	opGNUUninit          = 0xf0
	opGNUEncodedAddr     = 0xf1
	opGNUImplicitPointer = 0xf2
	opGNUEntryValue      = 0xf3
	opGNUConstType       = 0xf4
	opGNURegvalType      = 0xf5
	opGNUDerefType       = 0xf6
	opGNUConvert         = 0xf7
	opGNUReinterpret     = 0xf9
	opGNUParameterRef    = 0xfa
	opGNUAddrIndex       = 0xfb
	opGNUConstIndex      = 0xfc
	opGNUVariableValue   = 0xfd
)

// opNames is an array, not a map: a map literal is built at every start of
// the program (0.05 ms), an array is data.
var opNames = [256]string{
	opAddr: "addr", opDeref: "deref", opConst1u: "const1u", opConst1s: "const1s",
	opConst2u: "const2u", opConst2s: "const2s", opConst4u: "const4u", opConst4s: "const4s",
	opConst8u: "const8u", opConst8s: "const8s", opConstu: "constu", opConsts: "consts",
	opDup: "dup", opDrop: "drop", opOver: "over", opPick: "pick", opSwap: "swap", opRot: "rot",
	opXderef: "xderef", opAbs: "abs", opAnd: "and", opDiv: "div", opMinus: "minus", opMod: "mod",
	opMul: "mul", opNeg: "neg", opNot: "not", opOr: "or", opPlus: "plus", opPlusUconst: "plus_uconst",
	opShl: "shl", opShr: "shr", opShra: "shra", opXor: "xor", opBra: "bra", opEq: "eq", opGe: "ge",
	opGt: "gt", opLe: "le", opLt: "lt", opNe: "ne", opSkip: "skip", opRegx: "regx", opFbreg: "fbreg",
	opBregx: "bregx", opPiece: "piece", opDerefSize: "deref_size", opXderefSize: "xderef_size",
	opNop: "nop", opPushObjectAddress: "push_object_address", opCall2: "call2", opCall4: "call4",
	opCallRef: "call_ref", opFormTLSAddress: "form_tls_address", opCallFrameCFA: "call_frame_cfa",
	opBitPiece: "bit_piece", opImplicitValue: "implicit_value", opStackValue: "stack_value",
	opImplicitPointer: "implicit_pointer", opAddrx: "addrx", opConstx: "constx",
	opEntryValue: "entry_value", opConstType: "const_type", opRegvalType: "regval_type",
	opDerefType: "deref_type", opXderefType: "xderef_type", opConvert: "convert",
	opReinterpret: "reinterpret", opGNUPushTLSAddress: "GNU_push_tls_address",
	opGNUUninit: "GNU_uninit", opGNUEncodedAddr: "GNU_encoded_addr",
	opGNUImplicitPointer: "GNU_implicit_pointer", opGNUEntryValue: "GNU_entry_value",
	opGNUConstType: "GNU_const_type", opGNURegvalType: "GNU_regval_type",
	opGNUDerefType: "GNU_deref_type", opGNUConvert: "GNU_convert",
	opGNUReinterpret: "GNU_reinterpret", opGNUParameterRef: "GNU_parameter_ref",
	opGNUAddrIndex: "GNU_addr_index", opGNUConstIndex: "GNU_const_index",
	opGNUVariableValue: "GNU_variable_value",
}

// regNames are the x86-64 DWARF register names (System V psABI, figure 3.36).
var regNames = [...]string{
	"rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rip",
	"xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
	"xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15",
}

// RegName returns the x86-64 name of DWARF register n ("rdi", "xmm0"), or
// "r<n>" for registers outside the general and SSE sets.
func RegName(n uint64) string {
	if n < uint64(len(regNames)) {
		return regNames[n]
	}
	return fmt.Sprintf("r%d", n)
}

// reader decodes the operands of an expression or a list; a read past the
// end sets bad and returns zero, so callers check bad once per operation.
type reader struct {
	b   []byte
	off int
	bad bool
}

func (r *reader) done() bool { return r.off >= len(r.b) }

func (r *reader) u8() byte {
	if r.off >= len(r.b) {
		r.bad = true
		return 0
	}
	v := r.b[r.off]
	r.off++
	return v
}

func (r *reader) uN(n int) uint64 {
	if n < 0 || len(r.b)-r.off < n {
		r.bad = true
		r.off = len(r.b)
		return 0
	}
	var v uint64
	for i := n - 1; i >= 0; i-- {
		v = v<<8 | uint64(r.b[r.off+i])
	}
	r.off += n
	return v
}

func (r *reader) sN(n int) int64 {
	v := r.uN(n)
	if n > 0 && n < 8 {
		shift := uint(64 - 8*n)
		return int64(v<<shift) >> shift
	}
	return int64(v)
}

func (r *reader) bytes(n uint64) []byte {
	if n > uint64(len(r.b)-r.off) {
		r.bad = true
		r.off = len(r.b)
		return nil
	}
	v := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return v
}

func (r *reader) uleb() uint64 {
	var v uint64
	var shift uint
	for {
		if r.off >= len(r.b) {
			r.bad = true
			return 0
		}
		c := r.b[r.off]
		r.off++
		if shift < 64 {
			v |= uint64(c&0x7f) << shift
		}
		shift += 7
		if c&0x80 == 0 {
			return v
		}
	}
}

func (r *reader) sleb() int64 {
	var v int64
	var shift uint
	for {
		if r.off >= len(r.b) {
			r.bad = true
			return 0
		}
		c := r.b[r.off]
		r.off++
		if shift < 64 {
			v |= int64(c&0x7f) << shift
		}
		shift += 7
		if c&0x80 == 0 {
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			return v
		}
	}
}

// Disassemble renders a DWARF expression in readelf's style, e.g.
// "DW_OP_breg7 (rsp): 8; DW_OP_deref; DW_OP_stack_value". Malformed input
// ends with "<truncated>" or "<unknown op 0x..>".
func Disassemble(expr []byte) string {
	var sb strings.Builder
	r := &reader{b: expr}
	for !r.done() {
		if sb.Len() > 0 {
			sb.WriteString("; ")
		}
		op := r.u8()
		name := opNames[op]
		known := name != ""
		switch {
		case op >= opLit0 && op <= opLit31:
			fmt.Fprintf(&sb, "DW_OP_lit%d", op-opLit0)
			continue
		case op >= opReg0 && op <= opReg31:
			fmt.Fprintf(&sb, "DW_OP_reg%d (%s)", op-opReg0, RegName(uint64(op-opReg0)))
			continue
		case op >= opBreg0 && op <= opBreg31:
			fmt.Fprintf(&sb, "DW_OP_breg%d (%s): %d", op-opBreg0, RegName(uint64(op-opBreg0)), r.sleb())
		case !known:
			fmt.Fprintf(&sb, "<unknown op 0x%x>", op)
			return sb.String()
		default:
			sb.WriteString("DW_OP_" + name)
			switch op {
			case opAddr:
				fmt.Fprintf(&sb, ": 0x%x", r.uN(8))
			case opConst1u, opPick, opDerefSize, opXderefSize:
				fmt.Fprintf(&sb, ": %d", r.uN(1))
			case opConst1s:
				fmt.Fprintf(&sb, ": %d", r.sN(1))
			case opConst2u, opCall2:
				fmt.Fprintf(&sb, ": %d", r.uN(2))
			case opConst2s, opBra, opSkip:
				fmt.Fprintf(&sb, ": %d", r.sN(2))
			case opConst4u, opCall4, opCallRef:
				fmt.Fprintf(&sb, ": %d", r.uN(4))
			case opConst4s:
				fmt.Fprintf(&sb, ": %d", r.sN(4))
			case opConst8u:
				fmt.Fprintf(&sb, ": %d", r.uN(8))
			case opConst8s:
				fmt.Fprintf(&sb, ": %d", r.sN(8))
			case opConstu, opPlusUconst, opPiece, opAddrx, opConstx, opGNUAddrIndex, opGNUConstIndex:
				fmt.Fprintf(&sb, ": %d", r.uleb())
			case opConsts, opFbreg:
				fmt.Fprintf(&sb, ": %d", r.sleb())
			case opRegx:
				n := r.uleb()
				fmt.Fprintf(&sb, ": %d (%s)", n, RegName(n))
			case opBregx:
				n := r.uleb()
				fmt.Fprintf(&sb, ": %d (%s) %d", n, RegName(n), r.sleb())
			case opBitPiece:
				size := r.uleb()
				fmt.Fprintf(&sb, ": size %d offset %d", size, r.uleb())
			case opImplicitValue:
				n := r.uleb()
				fmt.Fprintf(&sb, " %d byte block: % x", n, r.bytes(n))
			case opImplicitPointer, opGNUImplicitPointer:
				fmt.Fprintf(&sb, ": <0x%x> %d", r.uN(4), r.sleb())
			case opEntryValue, opGNUEntryValue:
				n := r.uleb()
				fmt.Fprintf(&sb, ": (%s)", Disassemble(r.bytes(n)))
			case opConstType, opGNUConstType:
				t := r.uleb()
				n := uint64(r.u8())
				fmt.Fprintf(&sb, ": <0x%x> % x", t, r.bytes(n))
			case opRegvalType, opGNURegvalType:
				n := r.uleb()
				fmt.Fprintf(&sb, ": %d (%s) <0x%x>", n, RegName(n), r.uleb())
			case opDerefType, opGNUDerefType, opXderefType:
				n := r.u8()
				fmt.Fprintf(&sb, ": %d <0x%x>", n, r.uleb())
			case opConvert, opGNUConvert, opReinterpret, opGNUReinterpret:
				fmt.Fprintf(&sb, " <0x%x>", r.uleb())
			case opGNUParameterRef:
				fmt.Fprintf(&sb, ": <0x%x>", r.uN(4))
			case opGNUVariableValue:
				fmt.Fprintf(&sb, ": <0x%x>", r.uN(4))
			case opGNUEncodedAddr:
				sb.WriteString(" <unsupported>")
				return sb.String()
			}
		}
		if r.bad {
			sb.WriteString(" <truncated>")
			return sb.String()
		}
	}
	return sb.String()
}
