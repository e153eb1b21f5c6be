package elfx

import (
	"debug/elf"
	"encoding/binary"
	"sort"
)

// PLTStub is one stub of a procedure linkage table: the code at
// [Addr, End) reaches the function Name (a dynamic symbol, unversioned
// as the relocation names it).
type PLTStub struct {
	Addr, End uint64
	Name      string
}

// PLTStubs returns the stubs of f's .plt, .plt.sec and .plt.got, sorted by
// address. A call of a function another object may define (or, in a
// shared library, an exported function of the library itself, which may
// be interposed) lands on a stub, `call f@plt`, not on the function. A
// stub is a `jmp *slot(%rip)` (after an endbr64 and a bnd prefix in an
// object built for indirect-branch tracking, where the jumps live in
// .plt.sec); the relocation of the slot (R_X86_64_JUMP_SLOT in .rela.plt,
// R_X86_64_GLOB_DAT in .rela.dyn for .plt.got) names the function it
// reaches. Under indirect-branch tracking the lazy-binding entries of
// .plt hold no such jump but `push $index` (the index of the
// JUMP_SLOT relocation in .rela.plt) and a jump to the first entry; they
// are named by that index. Each works with lazy binding and with -z now,
// for executables and shared libraries. A stub ends where the next starts
// or at the end of its section; the first entry of .plt (the resolver's
// trampoline) reaches no function and is not a stub. Nil when f has no
// dynamic symbols or no PLT.
func PLTStubs(f *elf.File) []PLTStub {
	if f.Machine != elf.EM_X86_64 {
		return nil
	}
	dyn, err := f.DynamicSymbols()
	if err != nil || len(dyn) == 0 {
		return nil
	}
	slots := map[uint64]string{} // GOT slot → symbol
	var jumpSlots []string       // .rela.plt's JUMP_SLOT relocations in order
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
			if name == ".rela.plt" {
				n := ""
				if typ == elf.R_X86_64_JMP_SLOT && sym >= 1 && sym <= len(dyn) {
					n = dyn[sym-1].Name
				}
				jumpSlots = append(jumpSlots, n)
			}
			if (typ != elf.R_X86_64_JMP_SLOT && typ != elf.R_X86_64_GLOB_DAT) || sym < 1 || sym > len(dyn) {
				continue
			}
			slots[off] = dyn[sym-1].Name
		}
	}
	if len(slots) == 0 {
		return nil
	}
	var stubs []PLTStub
	for _, name := range []string{".plt", ".plt.sec", ".plt.got"} {
		s := f.Section(name)
		if s == nil || s.Type != elf.SHT_PROGBITS || s.Flags&elf.SHF_EXECINSTR == 0 {
			continue
		}
		d, err := s.Data()
		if err != nil {
			continue
		}
		first := len(stubs)
		for o := 0; o+6 <= len(d); o++ {
			fn, start := "", o
			switch {
			case d[o] == 0xff && d[o+1] == 0x25: // jmp *disp32(%rip)
				slot := s.Addr + uint64(o) + 6 + uint64(int64(int32(binary.LittleEndian.Uint32(d[o+2:]))))
				fn = slots[slot]
				if fn != "" && start > 0 && d[start-1] == 0xf2 { // bnd
					start--
				}
			case name == ".plt" && d[o] == 0x68 && o >= 4 && hasEndbr64(d[o-4:]): // endbr64; push $index
				if i := binary.LittleEndian.Uint32(d[o+1:]); int(i) < len(jumpSlots) {
					fn = jumpSlots[i]
				}
			}
			if fn == "" {
				continue
			}
			if start >= 4 && hasEndbr64(d[start-4:]) {
				start -= 4
			}
			stubs = append(stubs, PLTStub{Addr: s.Addr + uint64(start), Name: fn})
			o += 5
		}
		for i := first; i < len(stubs); i++ {
			stubs[i].End = s.Addr + s.Size
			if i+1 < len(stubs) {
				stubs[i].End = stubs[i+1].Addr
			}
		}
	}
	sort.Slice(stubs, func(i, j int) bool { return stubs[i].Addr < stubs[j].Addr })
	return stubs
}

func hasEndbr64(b []byte) bool {
	return len(b) >= 4 && b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa
}
