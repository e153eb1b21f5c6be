package dwarfx

import (
	"fmt"
	"github.com/culprit-dev/culprit/internal/elfx"
	"strings"
)

// RegName returns the x86-64 name of DWARF register n ("rdi", "xmm0"), or
// "r<n>" for registers outside the general and SSE sets.
func RegName(n uint64) string { return elfx.RegName(n) }

// Disassemble renders a DWARF expression in readelf's style, e.g.
// "DW_OP_breg7 (rsp): 8; DW_OP_deref; DW_OP_stack_value". Malformed input
// ends with "<truncated>" or "<unknown op 0x..>".
func Disassemble(expr []byte) string {
	var sb strings.Builder
	r := &elfx.Reader{B: expr, End: len(expr)}
	for !r.Done() {
		if sb.Len() > 0 {
			sb.WriteString("; ")
		}
		op := r.U8()
		name := elfx.OpName(op)
		known := name != ""
		switch {
		case op >= elfx.OpLit0 && op <= elfx.OpLit31:
			fmt.Fprintf(&sb, "DW_OP_lit%d", op-elfx.OpLit0)
			continue
		case op >= elfx.OpReg0 && op <= elfx.OpReg31:
			fmt.Fprintf(&sb, "DW_OP_reg%d (%s)", op-elfx.OpReg0, RegName(uint64(op-elfx.OpReg0)))
			continue
		case op >= elfx.OpBreg0 && op <= elfx.OpBreg31:
			fmt.Fprintf(&sb, "DW_OP_breg%d (%s): %d", op-elfx.OpBreg0, RegName(uint64(op-elfx.OpBreg0)), r.SLEB())
		case !known:
			fmt.Fprintf(&sb, "<unknown op 0x%x>", op)
			return sb.String()
		default:
			sb.WriteString("DW_OP_" + name)
			switch op {
			case elfx.OpAddr:
				fmt.Fprintf(&sb, ": 0x%x", r.UN(8))
			case elfx.OpConst1u, elfx.OpPick, elfx.OpDerefSize, elfx.OpXderefSize:
				fmt.Fprintf(&sb, ": %d", r.UN(1))
			case elfx.OpConst1s:
				fmt.Fprintf(&sb, ": %d", r.SN(1))
			case elfx.OpConst2u, elfx.OpCall2:
				fmt.Fprintf(&sb, ": %d", r.UN(2))
			case elfx.OpConst2s, elfx.OpBra, elfx.OpSkip:
				fmt.Fprintf(&sb, ": %d", r.SN(2))
			case elfx.OpConst4u, elfx.OpCall4, elfx.OpCallRef:
				fmt.Fprintf(&sb, ": %d", r.UN(4))
			case elfx.OpConst4s:
				fmt.Fprintf(&sb, ": %d", r.SN(4))
			case elfx.OpConst8u:
				fmt.Fprintf(&sb, ": %d", r.UN(8))
			case elfx.OpConst8s:
				fmt.Fprintf(&sb, ": %d", r.SN(8))
			case elfx.OpConstu, elfx.OpPlusUconst, elfx.OpPiece, elfx.OpAddrx, elfx.OpConstx, elfx.OpGNUAddrIndex, elfx.OpGNUConstIndex:
				fmt.Fprintf(&sb, ": %d", r.ULEB())
			case elfx.OpConsts, elfx.OpFbreg:
				fmt.Fprintf(&sb, ": %d", r.SLEB())
			case elfx.OpRegx:
				n := r.ULEB()
				fmt.Fprintf(&sb, ": %d (%s)", n, RegName(n))
			case elfx.OpBregx:
				n := r.ULEB()
				fmt.Fprintf(&sb, ": %d (%s) %d", n, RegName(n), r.SLEB())
			case elfx.OpBitPiece:
				size := r.ULEB()
				fmt.Fprintf(&sb, ": size %d offset %d", size, r.ULEB())
			case elfx.OpImplicitValue:
				n := r.ULEB()
				fmt.Fprintf(&sb, " %d byte block: % x", n, r.Bytes(n))
			case elfx.OpImplicitPointer, elfx.OpGNUImplicitPointer:
				fmt.Fprintf(&sb, ": <0x%x> %d", r.UN(4), r.SLEB())
			case elfx.OpEntryValue, elfx.OpGNUEntryValue:
				n := r.ULEB()
				fmt.Fprintf(&sb, ": (%s)", Disassemble(r.Bytes(n)))
			case elfx.OpConstType, elfx.OpGNUConstType:
				t := r.ULEB()
				n := uint64(r.U8())
				fmt.Fprintf(&sb, ": <0x%x> % x", t, r.Bytes(n))
			case elfx.OpRegvalType, elfx.OpGNURegvalType:
				n := r.ULEB()
				fmt.Fprintf(&sb, ": %d (%s) <0x%x>", n, RegName(n), r.ULEB())
			case elfx.OpDerefType, elfx.OpGNUDerefType, elfx.OpXderefType:
				n := r.U8()
				fmt.Fprintf(&sb, ": %d <0x%x>", n, r.ULEB())
			case elfx.OpConvert, elfx.OpGNUConvert, elfx.OpReinterpret, elfx.OpGNUReinterpret:
				fmt.Fprintf(&sb, " <0x%x>", r.ULEB())
			case elfx.OpGNUParameterRef:
				fmt.Fprintf(&sb, ": <0x%x>", r.UN(4))
			case elfx.OpGNUVariableValue:
				fmt.Fprintf(&sb, ": <0x%x>", r.UN(4))
			case elfx.OpGNUEncodedAddr:
				sb.WriteString(" <unsupported>")
				return sb.String()
			}
		}
		if r.Bad {
			sb.WriteString(" <truncated>")
			return sb.String()
		}
	}
	return sb.String()
}
