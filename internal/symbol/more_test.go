package symbol

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// goFunc scans the executable text of a Go binary for an address the object
// attributes to fn and returns its frames (stripped binaries have no symbol
// table the test could use instead).
func goFunc(t *testing.T, o *Object, bin, fn string) []Frame {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	text := f.Section(".text")
	for a := text.Addr; a < text.Addr+text.Size; a += 4 {
		fr := o.Lookup(progOffset(t, f, a))
		if len(fr) > 0 && fr[len(fr)-1].Function == fn {
			// Step a few bytes in, past the prologue.
			if fr2 := o.Lookup(progOffset(t, f, a+16)); len(fr2) > 0 && fr2[len(fr2)-1].Function == fn {
				return fr2
			}
			return fr
		}
	}
	t.Fatalf("%s: no address resolves to %s", bin, fn)
	return nil
}

func TestGo(t *testing.T) {
	for _, tc := range []struct {
		name   string
		flags  []string
		syms   bool
		dwarf  bool
		inline bool
	}{
		{"dwarf", nil, true, true, true},
		{"stripped", []string{"-ldflags=-s -w"}, false, false, false},
		{"nodwarf", []string{"-ldflags=-w"}, true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := testutil.Go(t, "gospin", tc.flags...)
			o, err := New(Options{DebugDirs: []string{}}).Object(bin, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !o.HasSymbols() || !o.HasLines() {
				t.Fatalf("HasSymbols %v HasLines %v", o.HasSymbols(), o.HasLines())
			}
			if (o.d.dw != nil) != tc.dwarf || o.d.pcln == nil {
				t.Errorf("DWARF used: %v, pclntab read: %v", o.d.dw != nil, o.d.pcln != nil)
			}
			for _, fn := range []string{"main.spinAlpha", "main.spinBeta"} {
				fr := goFunc(t, o, bin, fn)
				last := fr[len(fr)-1]
				if !strings.HasSuffix(last.File, "gospin/main.go") || last.Line < 13 || last.Line > 29 || last.Symbol != fn {
					t.Errorf("%s: %+v", fn, fr)
				}
			}
			if tc.syms {
				// Cross-check against the symbol table.
				a, size := elfSym(t, bin, "main.spinAlpha")
				fr := o.Lookup(fileOffset(t, bin, a+size/2))
				if len(fr) == 0 || fr[len(fr)-1].Function != "main.spinAlpha" {
					t.Errorf("main.spinAlpha+%#x: %+v", size/2, fr)
				}
			}
			if tc.inline {
				// Go's DWARF inline tree: somewhere in the runtime a call
				// is inlined; check one has an outer frame with a line.
				a, size := elfSym(t, bin, "runtime.mallocgc")
				found := false
				for x := a; x < a+size && !found; x++ {
					fr := o.Lookup(fileOffset(t, bin, x))
					if len(fr) >= 2 && fr[0].Inlined && fr[len(fr)-1].Function == "runtime.mallocgc" && fr[len(fr)-1].Line > 0 {
						found = true
					}
				}
				if !found {
					t.Error("no inlined frame found in runtime.mallocgc")
				}
			}
		})
	}
}

// vdso reads this process's vDSO image.
func vdso(t *testing.T) (start uint64, image []byte) {
	t.Helper()
	maps, err := os.ReadFile("/proc/self/maps")
	testutil.Need(t, err == nil, fmt.Sprint("reading /proc/self/maps: ", err))
	var end uint64
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		l := sc.Text()
		if !strings.HasSuffix(l, "[vdso]") {
			continue
		}
		r := strings.Fields(l)[0]
		lo, hi, _ := strings.Cut(r, "-")
		start, _ = strconv.ParseUint(lo, 16, 64)
		end, _ = strconv.ParseUint(hi, 16, 64)
	}
	testutil.Need(t, end > start, "no [vdso] mapping")
	mem, err := os.Open("/proc/self/mem")
	testutil.Need(t, err == nil, fmt.Sprint("opening /proc/self/mem: ", err))
	defer mem.Close()
	image = make([]byte, end-start)
	if _, err := mem.ReadAt(image, int64(start)); err != nil {
		t.Fatalf("reading vdso: %v", err)
	}
	return start, image
}

func TestVDSO(t *testing.T) {
	_, image := vdso(t)
	o, err := New(Options{}).ObjectFromBytes("[vdso]", image)
	if err != nil {
		t.Fatal(err)
	}
	if !o.HasSymbols() || o.Path() != "[vdso]" {
		t.Fatalf("HasSymbols %v Path %q", o.HasSymbols(), o.Path())
	}
	f, err := elf.NewFile(bytes.NewReader(image))
	if err != nil {
		t.Fatal(err)
	}
	var first *elf.Prog
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			first = p
			break
		}
	}
	if first == nil || first.Off != 0 {
		t.Fatalf("first PT_LOAD %+v: want one at file offset 0", first)
	}
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range syms {
		if s.Name != "__vdso_clock_gettime" && s.Name != "clock_gettime" {
			continue
		}
		found = true
		// The mapping starts at the image's first byte (pgoff 0), so the
		// caller's offset is the address minus the mapping start: the vaddr
		// minus the first PT_LOAD's vaddr.
		off := s.Value - first.Vaddr + first.Off
		fr := o.Lookup(off + 4)
		if len(fr) != 1 || (fr[0].Function != "__vdso_clock_gettime" && fr[0].Function != "clock_gettime") {
			t.Errorf("%s: %+v", s.Name, fr)
		}
	}
	if !found {
		t.Fatal("vDSO has no clock_gettime")
	}
	if _, err := New(Options{}).ObjectFromBytes("junk", []byte("\x7fELF junk")); err == nil {
		t.Error("junk image parsed")
	}
}

func TestParseKallsymsProc(t *testing.T) {
	f, err := os.Open("/proc/kallsyms")
	testutil.Need(t, err == nil, fmt.Sprint("opening /proc/kallsyms: ", err))
	defer f.Close()
	syms, err := ParseKallsyms(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(syms) < 1000 {
		t.Fatalf("%d text symbols", len(syms))
	}
	tab := NewKernelTable(syms)
	testutil.Need(t, tab.Len() > 0, "kallsyms addresses hidden (not root, or kptr_restrict)")
	var sched KernelSymbol
	for _, s := range syms {
		if s.Name == "schedule" && s.Module == "" {
			sched = s
		}
	}
	if sched.Addr == 0 {
		t.Fatal("no schedule in kallsyms")
	}
	name, mod, ok := tab.Lookup(sched.Addr + 1)
	if !ok || name != "schedule" || mod != "" {
		t.Errorf("schedule+1: %q %q %v", name, mod, ok)
	}
}

func TestKallsymsLiteral(t *testing.T) {
	const text = `ffffffff81000000 T _text
ffffffff81000000 T _stext
ffffffff81001000 t do_one_initcall
ffffffff81002000 D some_data
ffffffff81003000 W weak_fn
ffffffff81004000 r rodata_thing
ffffffff81005000 T _etext
ffffffffc0a01000 t nf_hook_thing	[nf_tables]
ffffffffc0a02000 T nft_register	[nf_tables]
ffffffffc0b00000 t bpf_prog_6deef7357e7b4530_sd_fw_egress	[bpf]
`
	syms, err := ParseKallsyms(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(syms) != 8 {
		t.Fatalf("%d symbols: %+v", len(syms), syms)
	}
	if syms[5].Name != "nf_hook_thing" || syms[5].Module != "nf_tables" || syms[5].Addr != 0xffffffffc0a01000 {
		t.Errorf("module symbol: %+v", syms[5])
	}
	tab := NewKernelTable(syms)
	for _, c := range []struct {
		addr      uint64
		name, mod string
		ok        bool
	}{
		{0xffffffff81000010, "_text", "", true},
		{0xffffffff81001fff, "do_one_initcall", "", true},
		{0xffffffff81002010, "do_one_initcall", "", true}, // data symbols are not kept
		{0xffffffff81003001, "weak_fn", "", true},
		{0xffffffffc0a01004, "nf_hook_thing", "nf_tables", true},
		{0xffffffffc0a02004, "nft_register", "nf_tables", true},
		{0xffffffffc0b00004, "bpf_prog_6deef7357e7b4530_sd_fw_egress", "bpf", true},
		{0xffffffff80000000, "", "", false},
	} {
		name, mod, ok := tab.Lookup(c.addr)
		if name != c.name || mod != c.mod || ok != c.ok {
			t.Errorf("%#x: %q %q %v, want %q %q %v", c.addr, name, mod, ok, c.name, c.mod, c.ok)
		}
	}
	// Sized symbols stop at their end.
	tab = NewKernelTable([]KernelSymbol{{Addr: 0x1000, Size: 0x10, Name: "a"}, {Addr: 0x2000, Name: "b"}})
	if _, _, ok := tab.Lookup(0x1010); ok {
		t.Error("past the end of a sized symbol")
	}
	if n, _, ok := tab.Lookup(0x100f); !ok || n != "a" {
		t.Error("inside a sized symbol")
	}
	// Unprivileged kallsyms: all zero addresses resolve nothing.
	tab = NewKernelTable([]KernelSymbol{{Name: "a"}, {Name: "b"}})
	if _, _, ok := tab.Lookup(0xffffffff81000000); ok || tab.Len() != 0 {
		t.Error("zero addresses used")
	}
	if _, err := ParseKallsyms(strings.NewReader("zzzz T foo\n")); err == nil {
		t.Error("bad address accepted")
	}
}

func TestCleanName(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"compute", "compute"},
		{"scale.constprop.0", "scale"},
		{"foo.constprop.0.isra.0", "foo"},
		{"foo.isra.0.constprop.1", "foo"},
		{"bar.cold", "bar"},
		{"bar.cold.12", "bar"},
		{"baz.part.0", "baz"},
		{"baz.part.0.cold", "baz"},
		{"qux.lto_priv.0", "qux"},
		{"qux.lto_priv.0.constprop.0.isra.0", "qux"},
		{"f.localalias", "f"},
		{"g.llvm.1234567890", "g"},
		{"h.5", "h.5"},
		{"file.c", "file.c"},
		{".cold", ".cold"},
		{"_ZN3foo3barEv", "foo::bar"},
		{"_ZN3foo3barEv.constprop.0", "foo::bar"},
		{"_ZN2ns6WidgetIiE4workEl.cold", "ns::Widget::work"},
		{"_ZNSt6vectorIiSaIiEE9push_backERKi", "std::vector::push_back"},
		{"_Z7computel", "compute"},
		{"_ZN4core3fmt5write17h0123456789abcdefE", "core::fmt::write"},
		{"_RNvCs15kBYyAo9fc_7mycrate7example", "mycrate::example"},
		{"_Znotmangled", "_Znotmangled"},
		{"main.spinAlpha", "main.spinAlpha"},
		{"__libc_start_main@@GLIBC_2.34", "__libc_start_main"},
		{"memcpy@GLIBC_2.2.5", "memcpy"},
		{"_ZN3foo3barEv@@VERS_1", "foo::bar"},
		{"LazyCompile:~foo /x.js@12", "LazyCompile:~foo /x.js@12"},
		{"a@b@c", "a@b@c"},
	} {
		if got := CleanName(c.in); got != c.want {
			t.Errorf("CleanName(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestSymTable exercises the symbol rules on a synthetic table: sizes are
// respected, FUNC wins over labels at one address, zero-sized labels inside
// a sized function are ignored, unsized symbols extend to the next symbol.
func TestSymTable(t *testing.T) {
	text := &elf.Section{SectionHeader: elf.SectionHeader{Name: ".text", Flags: elf.SHF_ALLOC | elf.SHF_EXECINSTR, Addr: 0x1000, Size: 0x1000}}
	data := &elf.Section{SectionHeader: elf.SectionHeader{Name: ".data", Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Addr: 0x3000, Size: 0x100}}
	f := &elf.File{Sections: []*elf.Section{{}, text, data}}
	fn := func(name string, addr, size uint64, bind elf.SymBind) elf.Symbol {
		return elf.Symbol{Name: name, Value: addr, Size: size, Section: 1, Info: elf.ST_INFO(bind, elf.STT_FUNC)}
	}
	label := func(name string, addr uint64) elf.Symbol {
		return elf.Symbol{Name: name, Value: addr, Section: 1, Info: elf.ST_INFO(elf.STB_LOCAL, elf.STT_NOTYPE)}
	}
	tab := newSymTable(f, []elf.Symbol{
		fn("alpha", 0x1000, 0x40, elf.STB_GLOBAL),
		label("alpha_loop", 0x1010), // inside alpha: ignored
		label("beta_label", 0x1080), // same address as beta: FUNC wins
		fn("beta", 0x1080, 0x20, elf.STB_GLOBAL),
		fn("__beta_alias", 0x1080, 0x20, elf.STB_LOCAL),
		fn("gamma", 0x1100, 0, elf.STB_GLOBAL), // unsized: up to delta
		fn("delta", 0x1200, 0x10, elf.STB_WEAK),
		fn("outer", 0x1300, 0x100, elf.STB_GLOBAL),
		fn("inner", 0x1310, 0x10, elf.STB_LOCAL), // nested
		label("tail", 0x1800),                    // unsized label: up to the end of .text
		{Name: "undef", Section: elf.SHN_UNDEF, Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_FUNC)},
		{Name: "var", Value: 0x3000, Size: 8, Section: 2, Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_OBJECT)},
		{Name: "datalabel", Value: 0x3010, Section: 2, Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_NOTYPE)},
	})
	for _, c := range []struct {
		addr uint64
		want string
	}{
		{0xfff, ""},
		{0x1000, "alpha"},
		{0x1010, "alpha"},
		{0x1030, "alpha"},
		{0x1040, ""}, // past alpha's end, before beta
		{0x1080, "beta"},
		{0x109f, "beta"},
		{0x10a0, ""},
		{0x1100, "gamma"},
		{0x11ff, "gamma"},
		{0x1205, "delta"},
		{0x1210, ""},
		{0x1305, "outer"},
		{0x1315, "inner"},
		{0x1320, "outer"}, // past inner, still in outer
		{0x1400, ""},
		{0x1900, "tail"},
		{0x2000, ""}, // past .text
		{0x3000, ""},
		{0x3010, ""},
	} {
		got, _ := tab.lookup(c.addr)
		if got != c.want {
			t.Errorf("%#x: %q, want %q", c.addr, got, c.want)
		}
	}
}

// TestMalformed corrupts DWARF and ELF data and checks lookups neither
// panic nor invent names.
func TestMalformed(t *testing.T) {
	bin := testutil.C(t, "inline", []string{"inline.c"}, "-O2", "-g")
	orig, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	var spans [][2]uint64
	for _, name := range []string{".debug_info", ".debug_line", ".debug_abbrev", ".debug_rnglists", ".debug_str", ".debug_line_str", ".symtab", ".strtab", ".dynsym"} {
		if s := f.Section(name); s != nil && s.Size > 0 {
			spans = append(spans, [2]uint64{s.Offset, s.Offset + s.Size})
		}
	}
	f.Close()
	start, size := elfSym(t, bin, "compute")
	off := fileOffset(t, bin, start)
	rng := rand.New(rand.NewSource(1))
	dir := t.TempDir()
	for i := 0; i < 200; i++ {
		data := append([]byte(nil), orig...)
		sp := spans[rng.Intn(len(spans))]
		for k := 0; k < 1+rng.Intn(40); k++ {
			data[sp[0]+uint64(rng.Int63n(int64(sp[1]-sp[0])))] = byte(rng.Intn(256))
		}
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("iteration %d: panic %v", i, r)
				}
			}()
			s := New(Options{DebugDirs: []string{}})
			o, err := s.ObjectFromBytes("corrupt", data)
			if err == nil {
				for a := uint64(0); a < size; a++ {
					o.Lookup(off + a)
				}
				o.HasLines()
			}
			p := filepath.Join(dir, fmt.Sprint("c", i))
			os.WriteFile(p, data, 0o644)
			if o, err := s.Object(p, nil); err == nil {
				o.Lookup(off + 4)
			}
			os.Remove(p)
		}()
	}
	// A stripped Go binary with a corrupted pclntab.
	gobin := testutil.Go(t, "gospin", "-ldflags=-s -w")
	gorig, err := os.ReadFile(gobin)
	if err != nil {
		t.Fatal(err)
	}
	gf, err := elf.Open(gobin)
	if err != nil {
		t.Fatal(err)
	}
	pcln := gf.Section(".gopclntab")
	gf.Close()
	goffs := lookupAddrs(t, gobin, 300)
	for i := 0; i < 50; i++ {
		data := append([]byte(nil), gorig...)
		for k := 0; k < 1+rng.Intn(40); k++ {
			// Favour the header and function table at the start.
			span := pcln.Size
			if rng.Intn(2) == 0 {
				span = min(span, 4096)
			}
			data[pcln.Offset+uint64(rng.Int63n(int64(span)))] = byte(rng.Intn(256))
		}
		o, err := New(Options{DebugDirs: []string{}}).ObjectFromBytes("corrupt-go", data)
		if err != nil {
			continue
		}
		for _, off := range goffs {
			o.Lookup(off)
		}
	}
	// Truncated files.
	for _, n := range []int{0, 10, 64, 1000, len(orig) / 2} {
		s := New(Options{DebugDirs: []string{}})
		if o, err := s.ObjectFromBytes("trunc", orig[:n]); err == nil {
			o.Lookup(off)
		}
	}
}

// lookupAddrs returns n offsets spread over the executable text of bin.
func lookupAddrs(t testing.TB, bin string, n int) []uint64 {
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	text := f.Section(".text")
	rng := rand.New(rand.NewSource(1))
	offs := make([]uint64, n)
	for i := range offs {
		offs[i] = progOffset(t, f, text.Addr+uint64(rng.Int63n(int64(text.Size))))
	}
	return offs
}

// TestLookupSpeed symbolizes 100k distinct addresses of a Go binary with
// DWARF (hundreds of units, inline trees) from a cold start, and logs the
// time it took (BenchmarkLookupDWARF measures it; a test on a shared
// machine cannot hold it to a figure).
func TestLookupSpeed(t *testing.T) {
	bin := testutil.Go(t, "gospin")
	offs := lookupAddrs(t, bin, 100000)
	t0 := time.Now()
	o, err := New(Options{}).Object(bin, nil)
	if err != nil {
		t.Fatal(err)
	}
	known := 0
	for _, off := range offs {
		if len(o.Lookup(off)) > 0 {
			known++
		}
	}
	d := time.Since(t0)
	t.Logf("%d lookups (cold, including parsing) in %v; %d resolved", len(offs), d, known)
	if known < len(offs)*9/10 {
		t.Errorf("only %d of %d resolved", known, len(offs))
	}
	t0 = time.Now()
	for _, off := range offs {
		o.Lookup(off)
	}
	t.Logf("%d lookups (warm) in %v", len(offs), time.Since(t0))
}

func BenchmarkLookupDWARF(b *testing.B) {
	bin := testutil.Go(b, "gospin")
	offs := lookupAddrs(b, bin, 100000)
	o, err := New(Options{}).Object(bin, nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, off := range offs {
		o.Lookup(off)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		o.Lookup(offs[i%len(offs)])
	}
}

func BenchmarkLookupPclntab(b *testing.B) {
	bin := testutil.Go(b, "gospin", "-ldflags=-s -w")
	offs := lookupAddrs(b, bin, 100000)
	o, err := New(Options{}).Object(bin, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		o.Lookup(offs[i%len(offs)])
	}
}

func BenchmarkLookupColdDWARF(b *testing.B) {
	bin := testutil.Go(b, "gospin")
	offs := lookupAddrs(b, bin, 100000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		o, err := New(Options{}).Object(bin, nil)
		if err != nil {
			b.Fatal(err)
		}
		for _, off := range offs {
			o.Lookup(off)
		}
	}
}

// TestGoDWARFAgainstPclntab cross-checks the DWARF walk on a Go binary
// (addr2line cannot read Go's DWARF 5 lines) against the pclntab: the
// outermost frame is the pclntab's function, the innermost position its
// file:line.
func TestGoDWARFAgainstPclntab(t *testing.T) {
	bin := testutil.Go(t, "gospin")
	o, err := New(Options{}).Object(bin, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tab := goTable(f)
	if tab == nil {
		t.Fatal("no pclntab")
	}
	text := f.Section(".text")
	n, bad, inlined := 0, 0, 0
	for a := text.Addr; a < text.Addr+text.Size; a += 7 {
		file, line, fn := tab.PCToLine(a)
		if fn == nil || line <= 0 {
			continue // padding between functions
		}
		n++
		fr := o.Lookup(progOffset(t, f, a))
		if len(fr) > 1 {
			inlined++
		}
		if len(fr) == 0 || fr[0].File != file || fr[0].Line != line || fr[len(fr)-1].Function != fn.Name {
			bad++
			if bad <= 10 {
				t.Errorf("%#x: %+v, pclntab %s %s:%d", a, fr, fn.Name, file, line)
			}
		}
	}
	t.Logf("%d addresses compared, %d with inlined frames, %d mismatches", n, inlined, bad)
	if n < 10000 || inlined < 1000 {
		t.Errorf("too few addresses compared (%d, %d inlined)", n, inlined)
	}
}
