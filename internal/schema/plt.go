package schema

import (
	"debug/elf"
	"encoding/binary"
)

// PLT stubs. A function of a shared library that calls another exported
// function of the same library calls it through the PLT (the call may be
// interposed by another object's definition), so its call instruction
// lands on a stub, not on the callee's symbol: `call conn_drain@plt`. The
// stub is a `jmp *slot(%rip)` (after an endbr64 and a bnd prefix where
// the object was built for indirect-branch tracking), and the slot's
// relocation names the function it reaches. Questions about how a
// function decides its calls of a callee (Guard, Decider) take a call of
// the callee's stub for a call of the callee.

// pltStubs returns, per stub address in f's .plt, .plt.sec and .plt.got,
// the name of the function its slot's relocation names.
func pltStubs(f *elf.File) map[uint64]string {
	dyn, err := f.DynamicSymbols()
	if err != nil || len(dyn) == 0 {
		return nil
	}
	slots := map[uint64]string{} // GOT slot → symbol
	for _, name := range []string{".rela.plt", ".rela.dyn"} {
		s := f.Section(name)
		if s == nil || s.Type != elf.SHT_RELA {
			continue
		}
		data, err := s.Data()
		if err != nil {
			continue
		}
		for o := 0; o+24 <= len(data); o += 24 {
			off := binary.LittleEndian.Uint64(data[o:])
			info := binary.LittleEndian.Uint64(data[o+8:])
			typ, sym := elf.R_X86_64(info&0xffffffff), int(info>>32)
			if (typ != elf.R_X86_64_JMP_SLOT && typ != elf.R_X86_64_GLOB_DAT) || sym < 1 || sym > len(dyn) {
				continue
			}
			slots[off] = dyn[sym-1].Name
		}
	}
	if len(slots) == 0 {
		return nil
	}
	stubs := map[uint64]string{}
	for _, name := range []string{".plt", ".plt.sec", ".plt.got"} {
		s := f.Section(name)
		if s == nil || s.Flags&elf.SHF_EXECINSTR == 0 {
			continue
		}
		d, err := s.Data()
		if err != nil {
			continue
		}
		for o := 0; o+6 <= len(d); o++ {
			if d[o] != 0xff || d[o+1] != 0x25 { // jmp *disp32(%rip)
				continue
			}
			slot := s.Addr + uint64(o) + 6 + uint64(int64(int32(binary.LittleEndian.Uint32(d[o+2:]))))
			fn, ok := slots[slot]
			if !ok {
				continue
			}
			start := o
			if start > 0 && d[start-1] == 0xf2 { // bnd
				start--
			}
			if start >= 4 && d[start-4] == 0xf3 && d[start-3] == 0x0f && d[start-2] == 0x1e && d[start-1] == 0xfa { // endbr64
				start -= 4
			}
			stubs[s.Addr+uint64(start)] = fn
		}
	}
	return stubs
}

// indexPLT fills c.viaPLT: per stub, the entry of the function of the
// object its slot names (a stub of a function defined elsewhere is left
// out).
func (c *Code) indexPLT(f *elf.File) {
	for stub, name := range pltStubs(f) {
		if j := c.symByName(name); j >= 0 {
			if c.viaPLT == nil {
				c.viaPLT = map[uint64]uint64{}
			}
			c.viaPLT[stub] = c.syms[j].addr
		}
	}
}

// reaches says whether a direct call or jump to tg reaches the function
// entry target: tg is target or its PLT stub.
func (c *Code) reaches(tg, target uint64) bool {
	return tg == target || c.viaPLT != nil && c.viaPLT[tg] == target
}

// stubsOf returns the PLT stubs that reach the function entry target.
func (c *Code) stubsOf(target uint64) []uint64 {
	var out []uint64
	for stub, fn := range c.viaPLT {
		if fn == target {
			out = append(out, stub)
		}
	}
	return out
}
