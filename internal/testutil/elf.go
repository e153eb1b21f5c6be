package testutil

import (
	"debug/elf"
	"testing"
)

// Symbol returns the defined symbol name of the ELF file bin, from its
// symbol table or else its dynamic symbol table; the test fails if there is
// none.
func Symbol(t testing.TB, bin, name string) elf.Symbol {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, _ := f.Symbols()
	dyn, _ := f.DynamicSymbols()
	for _, s := range append(syms, dyn...) {
		if s.Name == name && s.Section != elf.SHN_UNDEF {
			return s
		}
	}
	t.Fatalf("%s: no symbol %s", bin, name)
	return elf.Symbol{}
}

// FileOffset converts a virtual address of the ELF file bin to a file offset
// through its PT_LOAD headers, as a profiler mapping addresses would; the test
// fails if no segment holds it.
func FileOffset(t testing.TB, bin string, vaddr uint64) uint64 {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return ProgOffset(t, f, vaddr)
}

// ProgOffset is FileOffset for an open ELF file.
func ProgOffset(t testing.TB, f *elf.File, vaddr uint64) uint64 {
	t.Helper()
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && vaddr >= p.Vaddr && vaddr < p.Vaddr+p.Filesz {
			return vaddr - p.Vaddr + p.Off
		}
	}
	t.Fatalf("%#x is in no PT_LOAD segment", vaddr)
	return 0
}
