package elfx

import (
	"errors"
	"testing"
)

func TestTypedArithmetic(t *testing.T) {
	d := BaseType{Enc: ATEFloat, Size: 8}
	f4 := BaseType{Enc: ATEFloat, Size: 4}
	l := BaseType{Enc: ATESigned, Size: 8}
	u4 := BaseType{Enc: ATEUnsigned, Size: 4}
	cases := []struct {
		got  Elem
		want Elem
	}{
		{Convert(Elem{V: uint64(^uint64(6)), T: l}, d), mkFloat(d, -7)},
		{Convert(Elem{V: 0xffffffff, T: u4}, d), mkFloat(d, 4294967295)},
		{Convert(mkFloat(d, -2.75), l), Elem{V: uint64(^uint64(1)), T: l}},
		{Convert(mkFloat(d, 1.5), f4), mkFloat(f4, 1.5)},
		{Convert(Elem{V: 0x1_0000_0005}, u4), Elem{V: 5, T: u4}},
	}
	for k, c := range cases {
		if c.got != c.want {
			t.Errorf("case %d: got %+v, want %+v", k, c.got, c.want)
		}
	}
	sum, err := Binop(OpPlus, mkFloat(d, 1.25), mkFloat(d, 2))
	if err != nil || sum != mkFloat(d, 3.25) {
		t.Errorf("1.25+2 = %+v %v", sum, err)
	}
	lt, err := Binop(OpLt, mkFloat(d, -1), mkFloat(d, 2))
	if err != nil || lt.V != 1 {
		t.Errorf("-1<2 = %+v %v", lt, err)
	}
	if _, err := Binop(OpPlus, mkFloat(d, 1), Elem{V: 1, T: l}); !errors.Is(err, ErrMalformed) {
		t.Errorf("float+int: %v", err)
	}
	w, _ := Binop(OpPlus, Elem{V: 0xffffffff, T: u4}, Elem{V: 2, T: u4})
	if w.V != 1 {
		t.Errorf("u32 wrap: %+v", w)
	}
}

// binopGeneric, the fast path for untyped entries, computes what Binop
// computes for them, at the edges of every operator.
func TestBinopGeneric(t *testing.T) {
	vals := []uint64{0, 1, 2, 3, 7, 63, 64, 65, 1 << 31, 1<<63 - 1, 1 << 63, 1<<64 - 1, 1<<64 - 2, 0x7ffe0000}
	for _, op := range []byte{OpAnd, OpDiv, OpMinus, OpMod, OpMul, OpOr, OpPlus, OpShl, OpShr, OpShra, OpXor, OpEq, OpGe, OpGt, OpLe, OpLt, OpNe} {
		for _, x := range vals {
			for _, y := range vals {
				want, werr := Binop(op, Elem{V: x}, Elem{V: y})
				got, gerr := binopGeneric(op, x, y)
				if got != want || (werr == nil) != (gerr == nil) {
					t.Errorf("%s %#x %#x: got %+v %v, want %+v %v", OpName(op), x, y, got, gerr, want, werr)
				}
			}
		}
	}
}

// DWARF compares generic entries as signed: -1 is below 1, and above it
// only when read as unsigned.
func TestBinopSignedRelations(t *testing.T) {
	minus1 := Elem{V: ^uint64(0)}
	for _, c := range []struct {
		op   byte
		want uint64
	}{{OpLt, 1}, {OpLe, 1}, {OpGt, 0}, {OpGe, 0}, {OpEq, 0}, {OpNe, 1}} {
		got, err := Binop(c.op, minus1, Elem{V: 1})
		if err != nil || got.V != c.want {
			t.Errorf("-1 %s 1: %+v %v, want %d", OpName(c.op), got, err, c.want)
		}
	}
}

// The register of an entry value: a register location or its value; not
// memory at entry, nor a register plus an offset.
func TestEntryReg(t *testing.T) {
	for _, c := range []struct {
		block []byte
		reg   uint64
		ok    bool
	}{
		{[]byte{OpReg0 + 5}, 5, true},
		{[]byte{OpRegx, 13}, 13, true},
		{[]byte{OpBreg0 + 4, 0}, 4, true},
		{[]byte{OpBreg0 + 4, 8}, 0, false},
		{[]byte{OpBreg0 + 4, 0, OpDeref}, 0, false},
		{[]byte{OpRegx, 40}, 0, false},
		{[]byte{OpLit0}, 0, false},
		{nil, 0, false},
	} {
		reg, ok := EntryReg(c.block)
		if ok != c.ok || ok && reg != c.reg {
			t.Errorf("EntryReg(% x) = %d, %v; want %d, %v", c.block, reg, ok, c.reg, c.ok)
		}
	}
}
