package symbol

import (
	"testing"
)

// A table serialized by AppendBinary and used in place by
// KernelTableFromBinary resolves as the original; cut or damaged bytes are
// refused or resolve to nothing, never panic.
func TestKernelTableBinary(t *testing.T) {
	for _, syms := range [][]KernelSymbol{
		{{Addr: 0xffffffff81000000, Name: "_text"}, {Addr: 0xffffffff81001000, Name: "do_one_initcall"},
			{Addr: 0xffffffffc0a01000, Name: "nf_hook_thing", Module: "nf_tables"}, {Addr: 0xffffffffc0a02000, Name: "nft_register", Module: "nf_tables"}},
		{{Addr: 0x1000, Size: 0x10, Name: "a"}, {Addr: 0x2000, Name: "b", Module: "m"}},
		{{Name: "hidden"}},
		nil,
	} {
		orig := NewKernelTable(syms)
		b := orig.AppendBinary(nil)
		back, err := KernelTableFromBinary(b)
		if err != nil {
			t.Fatalf("%+v: %v", syms, err)
		}
		if back.Len() != orig.Len() {
			t.Fatalf("%d symbols back, want %d", back.Len(), orig.Len())
		}
		for _, s := range syms {
			for _, a := range []uint64{s.Addr - 1, s.Addr, s.Addr + 0xf, s.Addr + 0x10, s.Addr + 0x5000} {
				n1, m1, ok1 := back.Lookup(a)
				n2, m2, ok2 := orig.Lookup(a)
				a1, z1, _, _, _ := back.Symbol(a)
				a2, z2, _, _, _ := orig.Symbol(a)
				if n1 != n2 || m1 != m2 || ok1 != ok2 || a1 != a2 || z1 != z2 {
					t.Errorf("%#x: %q %q %v %#x %#x, want %q %q %v %#x %#x", a, n1, m1, ok1, a1, z1, n2, m2, ok2, a2, z2)
				}
			}
		}
		for cut := 0; cut < len(b); cut++ {
			if _, err := KernelTableFromBinary(b[:cut]); err == nil {
				t.Errorf("cut at %d of %d accepted", cut, len(b))
			}
		}
		// Damaged offsets: every byte flipped in turn; whatever is accepted
		// must answer without panicking.
		for i := range b {
			d := append([]byte(nil), b...)
			d[i] ^= 0xa5
			if k, err := KernelTableFromBinary(d); err == nil {
				for _, s := range syms {
					k.Lookup(s.Addr)
					k.Symbol(s.Addr + 1)
				}
			}
		}
	}
}

func BenchmarkKernelTableFromBinary(b *testing.B) {
	var syms []KernelSymbol
	for i := 0; i < 120000; i++ {
		syms = append(syms, KernelSymbol{Addr: 0xffffffff81000000 + uint64(i)*0x40, Name: "some_kernel_function_name"})
	}
	bin := NewKernelTable(syms).AppendBinary(nil)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := KernelTableFromBinary(bin); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzKernelTableFromBinary: any bytes are refused or give a table whose
// lookups stay inside them; never a panic. The recorder maps the
// kernel-symbol cache, a file on disk, and reads it in place.
func FuzzKernelTableFromBinary(f *testing.F) {
	f.Add(NewKernelTable([]KernelSymbol{{Addr: 0x1000, Size: 0x10, Name: "a"}, {Addr: 0x2000, Name: "b", Module: "m"}}).AppendBinary(nil), uint64(0x1008))
	f.Add(NewKernelTable([]KernelSymbol{{Addr: 0xffffffff81000000, Name: "_text"}, {Addr: 0xffffffff81001000, Name: "do_one_initcall"}}).AppendBinary(nil), uint64(0xffffffff81001004))
	f.Add(NewKernelTable(nil).AppendBinary(nil), uint64(0))
	f.Fuzz(func(t *testing.T, b []byte, addr uint64) {
		k, err := KernelTableFromBinary(b)
		if err != nil {
			return
		}
		for _, a := range []uint64{addr, addr - 1, addr + 1, 0, ^uint64(0)} {
			k.Lookup(a)
			k.Symbol(a)
		}
	})
}
