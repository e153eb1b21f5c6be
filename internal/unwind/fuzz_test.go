package unwind

import (
	"debug/elf"
	"encoding/binary"
	"testing"

	"github.com/culprit-dev/culprit/internal/elfx"
	"github.com/culprit-dev/culprit/internal/testutil"
)

// oneModule resolves every PC to one table at bias 0.
type oneModule struct{ t *Table }

func (m oneModule) Resolve(uint64) (Module, bool) { return Module{Table: m.t}, true }

// FuzzCFI feeds arbitrary bytes to the CFI parser as .eh_frame and as
// .debug_frame, then unwinds an arbitrary stack with what it parsed: the
// recorder unwinds every sample online with the tables of whatever program
// it records, so malformed CFI must end the chain, never the recorder.
// Seeds: the real sections of a compiled target.
func FuzzCFI(f *testing.F) {
	bin := testutil.C(f, "deep", []string{"deep.c"}, "-O2", "-fomit-frame-pointer", "-g")
	ef, err := elf.Open(bin)
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range []string{".eh_frame", ".debug_frame"} {
		if s := ef.Section(name); s != nil {
			if data, err := s.Data(); err == nil {
				f.Add(data, s.Addr, uint16(40), []byte{1, 2, 3, 4, 5, 6, 7, 8, 0x10, 0x11, 0, 0, 0, 0, 0, 0})
			}
		}
	}
	ef.Close()
	f.Fuzz(func(t *testing.T, data []byte, secAddr uint64, at uint16, stack []byte) {
		for _, eh := range []bool{true, false} {
			fdes, _ := parseFrames(data, secAddr, eh)
			tab := &Table{fdes: mergeFDEs(fdes, nil)}
			for i, fd := range tab.fdes {
				if i > 8 {
					break
				}
				var rw row
				var rem rememberStack
				for _, pc := range []uint64{fd.start, fd.start + uint64(at)%max(fd.end-fd.start, 1), fd.end - 1} {
					rowAt(&tab.fdes[i], pc, &rw, &rem)
					var regs Regs
					regs[regRA] = pc
					regs[regRSP] = 0x7ffe0000
					if len(stack) >= 8 {
						regs[regRBP] = 0x7ffe0000 + binary.LittleEndian.Uint64(stack)%uint64(len(stack)+16)
					}
					Unwind(regs, StackCopy{SP: 0x7ffe0000, Data: stack}, oneModule{tab}, 64)
				}
			}
		}
	})
}

// FuzzCFIExpr evaluates arbitrary DWARF expressions as CFI rules
// (DW_CFA_expression, DW_CFA_val_expression, DW_CFA_def_cfa_expression) over
// an arbitrary stack copy: a value or "cannot", never a panic or a loop.
func FuzzCFIExpr(f *testing.F) {
	f.Add([]byte{elfx.OpBreg0 + 7, 8, elfx.OpDeref}, uint64(0x7ffe0000), []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, true)
	// glibc's signal frame: CFA from the ucontext at rsp+160.
	f.Add([]byte{elfx.OpBreg0 + 7, 0xa0, 0x01, elfx.OpDeref}, uint64(0x7ffe0000), make([]byte, 256), false)
	// The PLT's CFA: rsp + 8 + (rip&15 >= 11 ? 8 : 0).
	f.Add([]byte{elfx.OpBreg0 + 7, 8, elfx.OpBreg0 + 16, 0, elfx.OpLit0 + 15, elfx.OpAnd, elfx.OpLit0 + 11, elfx.OpGe, elfx.OpLit0 + 3, elfx.OpShl, elfx.OpPlus}, uint64(0x7ffe0000), []byte{}, false)
	f.Add([]byte{elfx.OpLit0 + 1, elfx.OpBra, 0xfd, 0xff, elfx.OpSkip, 0, 0x80, elfx.OpCallFrameCFA}, uint64(0), []byte{}, true)
	f.Fuzz(func(t *testing.T, e []byte, sp uint64, stack []byte, push bool) {
		u := &unwinder{stack: StackCopy{SP: sp, Data: stack}, valid: 1<<numRegs - 1}
		for i := range u.regs {
			u.regs[i] = sp + uint64(i)*8
		}
		u.eval(e, sp+16, push)
	})
}
