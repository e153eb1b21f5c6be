package dwarfx

import (
	"bytes"
	"debug/dwarf"
	"encoding/binary"
	"fmt"
	"github.com/culprit-dev/culprit/internal/elfx"
	"testing"
)

// fakeUnit is a unit with a .debug_addr table [0x1000, 0x2000, 0x3000] and
// base types at unit offsets 0x2a (double) and 0x38 (long), without a
// dwarf.Data behind it.
func fakeUnit(version int, loc []byte) *unit {
	addr := make([]byte, 8) // DWARF 5 .debug_addr header
	for _, a := range []uint64{0x1000, 0x2000, 0x3000} {
		addr = binary.LittleEndian.AppendUint64(addr, a)
	}
	i := &Info{
		baseTypes: map[dwarf.Offset]elfx.BaseType{0x2a: {Enc: elfx.ATEFloat, Size: 8}, 0x38: {Enc: elfx.ATESigned, Size: 8}},
		sec:       sections{info: make([]byte, 0x100), addr: addr, loc: loc, loclists: loc},
	}
	return &unit{info: i, version: version, addrSize: 8, lowPC: 0x400, addrBase: 8, hasAddrBase: true}
}

type lb struct{ bytes.Buffer }

func (b *lb) u8(v byte) *lb { b.WriteByte(v); return b }
func (b *lb) uleb(v uint64) *lb {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			c |= 0x80
		}
		b.WriteByte(c)
		if v == 0 {
			return b
		}
	}
}
func (b *lb) u64(v uint64) *lb { b.Write(binary.LittleEndian.AppendUint64(nil, v)); return b }
func (b *lb) expr(e ...byte) *lb {
	b.uleb(uint64(len(e)))
	b.Write(e)
	return b
}

func TestLoclistsDWARF5(t *testing.T) {
	var b lb
	b.u8(0xff)                                                      // padding before the list
	b.u8(lleOffsetPair).uleb(0x10).uleb(0x20).expr(elfx.OpReg0)     // base = CU low_pc 0x400
	b.u8(lleGNUViewPair).uleb(1).uleb(2)                            // ignored
	b.u8(lleBaseAddressx).uleb(1)                                   // base = 0x2000
	b.u8(lleOffsetPair).uleb(0).uleb(8).expr(elfx.OpReg0 + 1)       // [0x2000, 0x2008)
	b.u8(lleBaseAddress).u64(0x5000)                                // base = 0x5000
	b.u8(lleOffsetPair).uleb(4).uleb(4).expr(elfx.OpReg0 + 9)       // empty: dropped
	b.u8(lleOffsetPair).uleb(4).uleb(6).expr(elfx.OpReg0 + 2)       // [0x5004, 0x5006)
	b.u8(lleStartxEndx).uleb(0).uleb(2).expr(elfx.OpReg0 + 3)       // [0x1000, 0x3000)? overlaps: later
	b.u8(lleStartxLength).uleb(2).uleb(0x10).expr(elfx.OpReg0 + 4)  // [0x3000, 0x3010)
	b.u8(lleStartEnd).u64(0x6000).u64(0x6010).expr(elfx.OpReg0 + 5) // [0x6000, 0x6010)
	b.u8(lleStartLength).u64(0x7000).uleb(1).expr(elfx.OpReg0 + 6)  // [0x7000, 0x7001)
	b.u8(lleDefaultLocation).expr(elfx.OpReg0 + 7)                  // elsewhere
	b.u8(lleEndOfList)
	u := fakeUnit(5, b.Bytes())
	a := attrLoc{kind: locList, off: 1, lazy: &lazyList{}}
	if l := a.decoded(u); l.err != nil || len(l.entries) != 7 {
		t.Fatalf("decoded %+v", l)
	}
	want := map[uint64]string{
		0x410:  "DW_OP_reg0 (rax)",
		0x41f:  "DW_OP_reg0 (rax)",
		0x2004: "DW_OP_reg1 (rdx)", // innermost start wins over [0x1000,0x3000)
		0x5004: "DW_OP_reg2 (rcx)",
		0x1500: "DW_OP_reg3 (rbx)",
		0x300f: "DW_OP_reg4 (rsi)",
		0x6000: "DW_OP_reg5 (rdi)",
		0x7000: "DW_OP_reg6 (rbp)",
		0x7001: "DW_OP_reg7 (rsp)", // default location
		0x420:  "DW_OP_reg7 (rsp)",
	}
	for pc, w := range want {
		e, ok := a.entry(u, pc)
		if got := Disassemble(e.expr); !ok || got != w {
			t.Errorf("pc %#x: %q %v, want %q", pc, got, ok, w)
		}
	}
}

func TestLoclistsErrors(t *testing.T) {
	for name, data := range map[string][]byte{
		"unterminated": new(lb).u8(lleOffsetPair).uleb(0).uleb(4).expr(elfx.OpReg0).Bytes(),
		"unknown kind": {0x42},
		"bad index":    new(lb).u8(lleStartxLength).uleb(99).uleb(4).expr(elfx.OpReg0).u8(0).Bytes(),
		"truncated":    new(lb).u8(lleStartEnd).u64(1).Bytes(),
	} {
		u := fakeUnit(5, data)
		if _, _, _, err := decodeLoclists(data, 0, u); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	u := fakeUnit(5, nil)
	a := attrLoc{kind: locList, off: 1 << 40, lazy: &lazyList{}}
	if _, ok := a.entry(u, 0); ok {
		t.Error("entry in a list beyond the section")
	}
}

func TestLocDWARF4(t *testing.T) {
	var b lb
	b.u64(0x10).u64(0x20).Write([]byte{1, 0, elfx.OpReg0 + 3})   // base = CU low_pc 0x400
	b.u64(^uint64(0)).u64(0x9000)                                // base selection
	b.u64(0x0).u64(0x8).Write([]byte{2, 0, elfx.OpBreg0 + 7, 8}) // [0x9000, 0x9008)
	b.u64(0x8).u64(0x8).Write([]byte{1, 0, elfx.OpReg0})         // empty
	b.u64(0).u64(0)                                              // end
	entries, err := decodeLoc(b.Bytes(), 0, 0x400)
	if err != nil || len(entries) != 2 {
		t.Fatalf("%v %v", entries, err)
	}
	got := fmt.Sprintf("%#x-%#x %s, %#x-%#x %s", entries[0].lo, entries[0].hi, Disassemble(entries[0].expr),
		entries[1].lo, entries[1].hi, Disassemble(entries[1].expr))
	if want := "0x410-0x420 DW_OP_reg3 (rbx), 0x9000-0x9008 DW_OP_breg7 (rsp): 8"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if _, err := decodeLoc(b.Bytes()[:20], 0, 0); err == nil {
		t.Error("truncated list decoded")
	}
}

func TestLoclistx(t *testing.T) {
	// A DW_FORM_loclistx index goes through the offsets table at
	// DW_AT_loclists_base.
	var b lb
	b.Write(make([]byte, 12))                        // list header
	b.Write([]byte{8, 0, 0, 0, 9, 0, 0, 0})          // offsets (relative to base)
	b.u8(0)                                          // list 0 at base+8: empty
	b.u8(lleStartEnd).u64(1).u64(2).expr(0x30).u8(0) // list 1 at base+9
	u := fakeUnit(5, b.Bytes())
	u.loclistsBase = 12
	off, ok := u.loclistx(1)
	if !ok || off != 21 {
		t.Fatalf("loclistx(1) = %d %v", off, ok)
	}
	if _, ok := u.loclistx(1 << 50); ok {
		t.Error("loclistx out of range")
	}
}

func FuzzLoclists(f *testing.F) {
	f.Add(new(lb).u8(lleBaseAddressx).uleb(1).u8(lleOffsetPair).uleb(0).uleb(8).expr(elfx.OpReg0).u8(0).Bytes(), uint16(0))
	f.Add(new(lb).u8(lleStartxLength).uleb(2).uleb(0x10).expr(elfx.OpReg0+4).u8(lleDefaultLocation).expr(0x30).u8(0).Bytes(), uint16(0))
	f.Add(new(lb).u64(0x10).u64(0x20).Bytes(), uint16(0))
	f.Fuzz(func(t *testing.T, data []byte, off uint16) {
		u := fakeUnit(5, data)
		entries, _, _, _ := decodeLoclists(data, uint64(off), u)
		for _, e := range entries {
			if e.hi <= e.lo {
				t.Fatalf("empty entry %+v", e)
			}
			ctx := &exprCtx{u: u}
			eval(ctx, e.lo, e.expr, testFrame(), 8)
		}
		decodeLoc(data, uint64(off), 0x400)
		u.loclistx(uint64(off))
	})
}
