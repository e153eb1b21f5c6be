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
