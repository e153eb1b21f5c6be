package dwarfx

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/culprit-dev/culprit/internal/elfx"
	"math"
	"strings"
	"testing"
)

// testMem is memory: 0x1000.. holds bytes 0x00, 0x01, 0x02, ...; every
// other address is unreadable.
func testMem(addr uint64, b []byte) error {
	if addr < 0x1000 || addr+uint64(len(b)) > 0x2000 {
		return fmt.Errorf("unmapped %#x", addr)
	}
	for k := range b {
		b[k] = byte(addr + uint64(k) - 0x1000)
	}
	return nil
}

func testFrame() *Frame {
	f := &Frame{Mem: testMem, CFA: 0x1100}
	for n := 0; n < NumRegs; n++ {
		f.SetReg(n, uint64(0x10*n))
	}
	f.SetReg(RegRSP, 0x1080)
	f.RegValid &^= 1 << RegRBX // rbx unknown
	binary.LittleEndian.PutUint64(f.XMM[1][:], math.Float64bits(1.5))
	f.XMMValid = 1 << 1
	return f
}

func le64(v uint64) []byte {
	b := make([]byte, 8)
	binary.LittleEndian.PutUint64(b, v)
	return b
}

func TestEvalOps(t *testing.T) {
	neg := func(v int64) []byte { return le64(uint64(v)) }
	cases := []struct {
		name    string
		expr    []byte
		size    int
		want    []byte
		missing [][2]int
		inMem   bool
		addr    uint64
		err     error
	}{
		{"minus", []byte{0x35, 0x33, elfx.OpMinus, elfx.OpStackValue}, 8, le64(2), nil, false, 0, nil},
		{"signed div", []byte{elfx.OpConst1s, 0xf8, 0x32, elfx.OpDiv, elfx.OpStackValue}, 8, neg(-4), nil, false, 0, nil},
		{"mod", []byte{elfx.OpConst1u, 17, 0x35, elfx.OpMod, elfx.OpStackValue}, 8, le64(2), nil, false, 0, nil},
		{"shr shra", []byte{elfx.OpConst1s, 0xf0, 0x32, elfx.OpShra, elfx.OpConst1u, 0x40, 0x32, elfx.OpShr, elfx.OpPlus, elfx.OpStackValue}, 8, neg(-4 + 16), nil, false, 0, nil},
		{"stack ops", []byte{0x31, 0x32, 0x33, elfx.OpRot, elfx.OpSwap, elfx.OpOver, elfx.OpPick, 1, elfx.OpDrop, elfx.OpDup, elfx.OpMul, elfx.OpStackValue}, 8, le64(4), nil, false, 0, nil},
		{"compare and branch", []byte{0x33, 0x35, elfx.OpLt, elfx.OpBra, 2, 0, 0x30, elfx.OpStackValue, 0x31, elfx.OpStackValue}, 8, le64(1), nil, false, 0, nil},
		{"skip", []byte{elfx.OpSkip, 1, 0, 0x37, 0x38, elfx.OpStackValue}, 8, le64(8), nil, false, 0, nil},
		{"constants", []byte{elfx.OpConst2s, 0xff, 0xff, elfx.OpConst4u, 1, 0, 0, 0, elfx.OpPlus, elfx.OpConstu, 0x80, 0x01, elfx.OpPlus, elfx.OpStackValue}, 4, le64(128)[:4], nil, false, 0, nil},
		{"neg abs not", []byte{0x35, elfx.OpNeg, elfx.OpAbs, elfx.OpNot, elfx.OpNot, elfx.OpStackValue}, 8, le64(5), nil, false, 0, nil},
		{"register", []byte{elfx.OpReg0 + 5}, 4, le64(0x50)[:4], nil, false, 0, nil},
		{"regx", []byte{elfx.OpRegx, 12}, 8, le64(0xc0), nil, false, 0, nil},
		{"xmm register", []byte{elfx.OpReg0 + 18}, 8, le64(math.Float64bits(1.5)), nil, false, 0, nil},
		{"breg deref", []byte{elfx.OpBreg0 + RegRSP, 0x10, elfx.OpDeref, elfx.OpStackValue}, 8, le64(0x9796959493929190), nil, false, 0, nil},
		{"memory", []byte{elfx.OpBreg0 + RegRSP, 4}, 2, []byte{0x84, 0x85}, nil, true, 0x1084, nil},
		{"memory address only", []byte{elfx.OpBregx, RegRSP, 4}, 0, nil, nil, true, 0x1084, nil},
		{"deref_size", []byte{elfx.OpConst2u, 0x02, 0x10, elfx.OpDerefSize, 2, elfx.OpStackValue}, 8, le64(0x0302), nil, false, 0, nil},
		{"cfa", []byte{elfx.OpCallFrameCFA, elfx.OpConst1s, 0xf8, elfx.OpPlus}, 1, []byte{0xf8}, nil, true, 0x10f8, nil},
		{"plus_uconst", []byte{elfx.OpCallFrameCFA, elfx.OpPlusUconst, 0x10}, 1, []byte{0x10}, nil, true, 0x1110, nil},
		{"addr biased", []byte{elfx.OpAddr, 0x10, 0, 0, 0, 0, 0, 0, 0}, 1, []byte{0x10}, nil, true, 0x1010, nil},
		{"implicit value", []byte{elfx.OpImplicitValue, 3, 7, 8, 9}, 3, []byte{7, 8, 9}, nil, false, 0, nil},
		{"implicit value short", []byte{elfx.OpImplicitValue, 2, 7, 8}, 4, []byte{7, 8, 0, 0}, [][2]int{{2, 4}}, false, 0, nil},
		{"pieces", []byte{elfx.OpReg0 + 5, elfx.OpPiece, 4, elfx.OpPiece, 4, 0x3f, elfx.OpStackValue, elfx.OpPiece, 2}, 10,
			[]byte{0x50, 0, 0, 0, 0, 0, 0, 0, 0x0f, 0}, [][2]int{{4, 8}}, false, 0, nil},
		{"pieces beyond", []byte{elfx.OpReg0 + 5, elfx.OpPiece, 2}, 4, []byte{0x50, 0, 0, 0}, [][2]int{{2, 4}}, false, 0, nil},
		{"memory piece", []byte{elfx.OpBreg0 + RegRSP, 0, elfx.OpPiece, 2, elfx.OpReg0 + 1, elfx.OpPiece, 1}, 3, []byte{0x80, 0x81, 0x10}, nil, false, 0, nil},
		{"bit pieces", []byte{0x3a, elfx.OpStackValue, elfx.OpBitPiece, 4, 0, elfx.OpReg0 + 1, elfx.OpBitPiece, 4, 4}, 1, []byte{0x1a}, nil, false, 0, nil},
		{"entry value piece", []byte{elfx.OpEntryValue, 1, elfx.OpReg0 + 5, elfx.OpStackValue, elfx.OpPiece, 8, elfx.OpReg0 + 4, elfx.OpPiece, 8}, 16,
			append(make([]byte, 8), le64(0x40)...), [][2]int{{0, 8}}, false, 0, nil},
		{"unknown register piece", []byte{elfx.OpReg0 + 3, elfx.OpPiece, 8, elfx.OpReg0 + 4, elfx.OpPiece, 8}, 16,
			append(make([]byte, 8), le64(0x40)...), [][2]int{{0, 8}}, false, 0, nil},
		{"all pieces missing", []byte{elfx.OpPiece, 4, elfx.OpPiece, 4}, 8, nil, nil, false, 0, ErrOptimizedOut},
		{"entry value", []byte{elfx.OpGNUEntryValue, 1, elfx.OpReg0 + 5, elfx.OpStackValue}, 8, nil, nil, false, 0, ErrEntryValue},
		{"implicit pointer", []byte{elfx.OpImplicitPointer, 1, 2, 3, 4, 0}, 8, nil, nil, false, 0, ErrImplicitPointer},
		{"unknown register", []byte{elfx.OpBreg0 + 3, 0}, 8, nil, nil, false, 0, ErrRegUnknown},
		{"unknown xmm", []byte{elfx.OpReg0 + 20}, 8, nil, nil, false, 0, ErrRegUnknown},
		{"unreadable", []byte{elfx.OpConst2u, 0, 0x30, elfx.OpDeref, elfx.OpStackValue}, 8, nil, nil, false, 0, ErrUnavailable},
		{"unreadable value", []byte{elfx.OpConst2u, 0, 0x30}, 8, nil, nil, false, 0, ErrUnavailable},
		{"empty", nil, 8, nil, nil, false, 0, ErrOptimizedOut},
		{"tls", []byte{0x30, elfx.OpFormTLSAddress}, 8, nil, nil, false, 0, ErrUnsupported},
		{"call2", []byte{elfx.OpCall2, 0, 0}, 8, nil, nil, false, 0, ErrUnsupported},
		{"fbreg outside function", []byte{elfx.OpFbreg, 0}, 8, nil, nil, false, 0, ErrMalformed},
		{"underflow", []byte{elfx.OpPlus}, 8, nil, nil, false, 0, ErrMalformed},
		{"unknown op", []byte{0x01}, 8, nil, nil, false, 0, ErrMalformed},
		{"truncated", []byte{elfx.OpConst4u, 1, 2}, 8, nil, nil, false, 0, ErrMalformed},
		{"endless loop", []byte{elfx.OpSkip, 0xfd, 0xff}, 8, nil, nil, false, 0, ErrMalformed},
		{"branch out", []byte{0x31, elfx.OpBra, 0x10, 0}, 8, nil, nil, false, 0, ErrMalformed},
		{"op after register", []byte{elfx.OpReg0, 0x30}, 8, nil, nil, false, 0, ErrMalformed},
		{"division by zero", []byte{0x31, 0x30, elfx.OpDiv, elfx.OpStackValue}, 8, nil, nil, false, 0, ErrMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := testFrame()
			f.Bias = 0x1000
			v, err := eval(nil, 0, c.expr, f, c.size)
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("%s: err %v, want %v", Disassemble(c.expr), err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: %v", Disassemble(c.expr), err)
			}
			if !bytes.Equal(v.Bytes, c.want) || v.InMemory != c.inMem || (c.inMem && v.Addr != c.addr) ||
				fmt.Sprint(v.Missing) != fmt.Sprint(c.missing) {
				t.Fatalf("%s: got %+v, want bytes % x missing %v inMem %v addr %#x", Disassemble(c.expr), v, c.want, c.missing, c.inMem, c.addr)
			}
		})
	}
}

// TestTypedExpressionFromGCC evaluates the DW_OP_convert/regval_type
// expression GCC emits for s in mixed_sum at -O2:
// s = (double)(long)rdi + (double)(long)rax + xmm1.
func TestTypedExpressionFromGCC(t *testing.T) {
	_, info := build(t, "-O2")
	fn := info.FunctionsNamed("mixed_sum")[0]
	for _, rg := range fn.Ranges {
		for pc := rg[0]; pc < rg[1]; pc++ {
			for _, v := range fn.Variables(pc) {
				l, ok := v.Location(pc)
				if v.Name != "s" || !ok || !strings.Contains(l.String(), "regval_type") {
					continue
				}
				f := &Frame{}
				f.SetReg(RegRDI, uint64(7))
				f.SetReg(RegRAX, uint64(^uint64(1))) // -2
				binary.LittleEndian.PutUint64(f.XMM[1][:], math.Float64bits(0.25))
				f.XMMValid = 1 << 1
				val, err := v.Read(pc, f)
				if err != nil {
					t.Fatalf("%s: %v", l, err)
				}
				if got := v.Type().FormatValue(val); got != "5.25" {
					t.Fatalf("s = %s, want 5.25 (%s)", got, l)
				}
				return
			}
		}
	}
	t.Skip("GCC emitted no typed expression for s")
}

func TestDisassemble(t *testing.T) {
	cases := map[string][]byte{
		"DW_OP_fbreg: -20":                      {elfx.OpFbreg, 0x6c},
		"DW_OP_breg7 (rsp): 8; DW_OP_deref":     {elfx.OpBreg0 + 7, 8, elfx.OpDeref},
		"DW_OP_reg17 (xmm0); DW_OP_piece: 8":    {elfx.OpReg0 + 17, elfx.OpPiece, 8},
		"DW_OP_entry_value: (DW_OP_reg5 (rdi))": {elfx.OpEntryValue, 1, elfx.OpReg0 + 5},
		"DW_OP_addr: 0x4010":                    {elfx.OpAddr, 0x10, 0x40, 0, 0, 0, 0, 0, 0},
		"DW_OP_lit3; DW_OP_stack_value":         {0x33, elfx.OpStackValue},
		"DW_OP_const4u: 0 <truncated>":          {elfx.OpConst4u, 1},
		"<unknown op 0x1>":                      {0x01},
	}
	for want, expr := range cases {
		if got := Disassemble(expr); got != want {
			t.Errorf("Disassemble(% x) = %q, want %q", expr, got, want)
		}
	}
}

func FuzzEval(f *testing.F) {
	seeds := [][]byte{
		{elfx.OpFbreg, 0x6c},
		{elfx.OpReg0 + 5, elfx.OpPiece, 4, elfx.OpPiece, 4},
		{elfx.OpBreg0 + 7, 8, elfx.OpDeref, elfx.OpStackValue},
		{elfx.OpEntryValue, 1, elfx.OpReg0 + 5, elfx.OpStackValue},
		{elfx.OpBreg0 + 5, 0, elfx.OpConvert, 0x38, elfx.OpConvert, 0x2a, elfx.OpRegvalType, 18, 0x2a, elfx.OpPlus, elfx.OpStackValue},
		{0x3a, elfx.OpStackValue, elfx.OpBitPiece, 4, 0, elfx.OpReg0 + 1, elfx.OpBitPiece, 4, 4},
		{elfx.OpSkip, 0xfd, 0xff},
		{elfx.OpImplicitValue, 3, 7, 8, 9},
		{elfx.OpAddrx, 1, elfx.OpDeref, elfx.OpConstType, 0x2a, 8, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f, elfx.OpPlus, elfx.OpStackValue},
		{elfx.OpConstx, 0, elfx.OpConvert, 0x2a, elfx.OpConvert, 0x38, elfx.OpReinterpret, 0x2a, elfx.OpNeg, elfx.OpStackValue},
		{elfx.OpBreg0 + 7, 0, elfx.OpDerefType, 8, 0x2a, elfx.OpConstType, 0x38, 1, 5, elfx.OpConvert, 0x2a, elfx.OpDiv, elfx.OpStackValue},
	}
	for _, s := range seeds {
		f.Add(s, uint8(8))
	}
	f.Fuzz(func(t *testing.T, expr []byte, size uint8) {
		Disassemble(expr)
		v, err := eval(&exprCtx{u: fakeUnit(5, nil)}, 0, expr, testFrame(), int(size))
		if err == nil && size > 0 && v.Bytes != nil && len(v.Bytes) != int(size) {
			t.Fatalf("%s: %d bytes for size %d", Disassemble(expr), len(v.Bytes), size)
		}
		elfx.SkipOperands(0, &elfx.Reader{B: expr, End: len(expr)})
	})
}
