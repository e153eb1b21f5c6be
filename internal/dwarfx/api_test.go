package dwarfx

import (
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

func build(t testing.TB, level string, extra ...string) (string, *Info) {
	t.Helper()
	flags := append([]string{level, "-g"}, extra...)
	bin := testutil.C(t, "values"+level+strings.Join(extra, ""), []string{"values.c"}, flags...)
	info, err := Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	return bin, info
}

func symbol(t testing.TB, bin, name string) uint64 {
	t.Helper()
	return testutil.Symbol(t, bin, name).Value
}

// lineOf returns the line of values.c containing text.
func lineOf(t testing.TB, text string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testutil.Targets(), "values.c"))
	if err != nil {
		t.Fatal(err)
	}
	for k, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, text) {
			return k + 1
		}
	}
	t.Fatalf("values.c has no line with %q", text)
	return 0
}

// linePCs returns the is_stmt addresses of a line of values.c.
func linePCs(t testing.TB, bin string, line int) []uint64 {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := f.DWARF()
	if err != nil {
		t.Fatal(err)
	}
	var out []uint64
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag == dwarf.TagCompileUnit {
			lr, err := d.LineReader(e)
			if err == nil && lr != nil {
				var le dwarf.LineEntry
				for lr.Next(&le) == nil {
					if le.IsStmt && !le.EndSequence && le.Line == line && strings.HasSuffix(le.File.Name, "values.c") {
						out = append(out, le.Address)
					}
				}
			}
		}
		r.SkipChildren()
	}
	return out
}

func TestCloneThroughAbstractOrigin(t *testing.T) {
	bin, info := build(t, "-O2")
	clone := symbol(t, bin, "scaled.constprop.0")
	fn, ok := info.Function(clone + 4)
	if !ok {
		t.Fatalf("no function at scaled.constprop.0+4 (%#x)", clone+4)
	}
	if fn.Name != "scaled" || fn.Entry != clone {
		t.Fatalf("Function(scaled.constprop.0+4) = %s entry %#x, want scaled at %#x", fn.Name, fn.Entry, clone)
	}
	named := info.FunctionsNamed("scaled")
	if len(named) != 1 || named[0] != fn {
		t.Fatalf("FunctionsNamed(scaled) = %v, want the clone %v", named, fn)
	}
	var names []string
	for _, p := range fn.Params() {
		names = append(names, p.Name)
	}
	if strings.Join(names, ",") != "v,factor" {
		t.Errorf("clone params %v, want v,factor (factor from the abstract origin)", names)
	}
	// factor is the constant the clone was specialised for.
	for _, v := range fn.Variables(clone) {
		if v.Name != "factor" {
			continue
		}
		l, ok := v.Location(clone)
		if !ok || l.Const == nil {
			t.Fatalf("factor: %v %v, want a constant", l, ok)
		}
		val, err := v.Read(clone, &Frame{})
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := v.Type().Int(val.Bytes); n != 3 {
			t.Errorf("factor = %d, want 3", n)
		}
	}
	// At -O0 there is no clone: the function itself is found.
	bin0, info0 := build(t, "-O0")
	fs := info0.FunctionsNamed("scaled")
	if len(fs) != 1 || fs[0].Entry != symbol(t, bin0, "scaled") {
		t.Errorf("-O0 FunctionsNamed(scaled) = %v", fs)
	}
}

func TestInlinedVariables(t *testing.T) {
	for _, level := range []string{"-O0", "-O2"} {
		t.Run(level, func(t *testing.T) {
			bin, info := build(t, level)
			call := lineOf(t, "total += weigh(")
			mains := info.FunctionsNamed("main")
			if len(mains) != 1 {
				t.Fatalf("main: %v", mains)
			}
			main := mains[0]
			found := 0
			for _, rg := range main.Ranges {
				for pc := rg[0]; pc < rg[1]; pc++ {
					inls := main.Inlines(pc)
					if len(inls) == 0 || inls[0].Name != "weigh" {
						continue
					}
					in := inls[0]
					if in.CallLine != call || !strings.HasSuffix(in.CallFile, "values.c") || in.Func != main || in.Depth() != 1 {
						t.Fatalf("inline at %#x: %+v, want weigh called at values.c:%d", pc, in, call)
					}
					got := map[string]*Variable{}
					for _, v := range main.Variables(pc) {
						if _, dup := got[v.Name]; !dup {
							got[v.Name] = v
						}
					}
					for _, n := range []string{"wj", "rounds", "w"} {
						if v := got[n]; v == nil || v.Inline != in {
							t.Fatalf("at %#x: %s missing or not of the inlined call: %v", pc, n, v)
						}
					}
					if v := got["total"]; v == nil || v.Inline != nil || v.Func != main {
						t.Fatalf("at %#x: main's total missing: %v", pc, v)
					}
					found++
				}
			}
			if found == 0 {
				t.Fatalf("no PC of main in the inlined weigh\n%s", bin)
			}
		})
	}
}

func TestNestedBlocksShadow(t *testing.T) {
	bin, info := build(t, "-O0")
	line := lineOf(t, "sink = z + (long)half;")
	inner := lineOf(t, "int x = a * 2;")
	pcs := linePCs(t, bin, line)
	if len(pcs) == 0 {
		t.Fatal("no PC for the innermost block")
	}
	fn, ok := info.Function(pcs[0])
	if !ok || fn.Name != "blocks" {
		t.Fatalf("Function = %v", fn)
	}
	var names []string
	for _, v := range fn.Variables(pcs[0]) {
		names = append(names, v.Name)
		if v.Name == "x" && v.DeclLine != inner {
			t.Errorf("x declared at line %d is visible; the inner x (line %d) must shadow it", v.DeclLine, inner)
		}
	}
	if got := strings.Join(names, ","); got != "z,half,x,y,a" {
		t.Errorf("Variables = %s, want z,half,x,y,a (innermost first, one x)", got)
	}
	// Outside the inner blocks, the outer x is visible.
	ret := linePCs(t, bin, lineOf(t, "return x;"))
	var xs []int
	for _, v := range fn.Variables(ret[0]) {
		if v.Name == "x" {
			xs = append(xs, v.DeclLine)
		}
	}
	if len(xs) != 1 || xs[0] != lineOf(t, "int x = a + 1;") {
		t.Errorf("at return: x declared at %v", xs)
	}
}

// fileMem reads initialized data from the ELF file itself (Bias 0).
func fileMem(t testing.TB, bin string) func(uint64, []byte) error {
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return func(addr uint64, b []byte) error {
		for _, p := range f.Progs {
			if p.Type == elf.PT_LOAD && addr >= p.Vaddr && addr+uint64(len(b)) <= p.Vaddr+p.Memsz {
				clear(b) // .bss
				if addr < p.Vaddr+p.Filesz {
					n := min(uint64(len(b)), p.Vaddr+p.Filesz-addr)
					_, err := p.ReadAt(b[:n], int64(addr-p.Vaddr))
					return err
				}
				return nil
			}
		}
		return fmt.Errorf("%#x not in file", addr)
	}
}

func TestGlobalsAndTypes(t *testing.T) {
	for _, level := range []string{"-O0", "-O2"} {
		t.Run(level, func(t *testing.T) {
			bin, info := build(t, level)
			f := &Frame{Mem: fileMem(t, bin)}
			want := map[string]string{
				"g_int":    "42",
				"g_long":   "-1234567890123",
				"g_double": "2.5",
				"g_float":  "1.25",
				"g_uchar":  `200 '\310'`,
				"g_char":   "99 'c'",
				"g_bool":   "true",
				"g_matrix": "{{1, 2, 3}, {4, 5, -6}}",
				"g_color":  "BLUE",
				"g_word":   `{u = 1065353216, f = 1, bytes = "\000\000\200?"}`,
				"cfg": `{name = "culprit\000\000\000\000", limits = {10, 20, 30, 40}, range = {lo = 1, hi = 99}, ` +
					`scale = 0.75, flags = 5, mode = 17, delta = -3, pts = {{x = 1, y = 2}, {x = 3, y = 4}}}`,
				"values.c:s_file_counter": "5",
				"process::calls":          "0",
			}
			for name, w := range want {
				v, ok := info.Global(name)
				if !ok {
					t.Errorf("Global(%q) not found", name)
					continue
				}
				val, err := v.Read(0, f)
				if err != nil {
					t.Errorf("%s: %v", name, err)
					continue
				}
				if !val.InMemory || val.Addr == 0 {
					t.Errorf("%s: not in memory: %+v", name, val)
				}
				if got := v.Type().FormatValue(val); got != w {
					t.Errorf("%s = %s, want %s", name, got, w)
				}
			}
			if _, ok := info.Global("no_such_variable"); ok {
				t.Error("Global(no_such_variable) found")
			}
			if _, ok := info.Global("other.c:g_int"); ok {
				t.Error("Global(other.c:g_int) found")
			}
			types := map[string]string{
				"g_matrix": "short int [2][3]",
				"g_fn":     "int (*)(int)",
				"g_job":    "struct job *",
				"cfg":      "struct config",
				"g_word":   "union word",
			}
			for name, w := range types {
				v, _ := info.Global(name)
				if got := v.Type().Name; got != w {
					t.Errorf("type of %s = %q, want %q", name, got, w)
				}
			}
			cfg, _ := info.Global("cfg")
			ct := cfg.Type()
			flags, mode := ct.mustField(t, "flags"), ct.mustField(t, "mode")
			if flags.BitSize != 3 || flags.BitOffset != 48*8 || mode.BitSize != 5 || mode.BitOffset != flags.BitOffset+3 {
				t.Errorf("bitfields flags %+v mode %+v", flags, mode)
			}
			rg, _ := ct.Field("range")
			if rg.Type.Kind != Struct || rg.Offset != 28 {
				t.Errorf("range field %+v", rg)
			}
			job, _ := info.Global("g_job")
			if e := job.Type().Elem; e.Kind != Struct || len(e.Fields) != 4 || e.Fields[3].Type.Elem != e {
				t.Errorf("struct job is not self-referential: %+v", e)
			}
			var statics []string
			for _, g := range info.Globals() {
				if g.Func != nil {
					statics = append(statics, g.Func.Name+"::"+g.Name)
				}
			}
			if strings.Join(statics, ",") != "process::calls" {
				t.Errorf("function statics %v", statics)
			}
		})
	}
}

func (t *Type) mustField(tb testing.TB, name string) Field {
	f, ok := t.Field(name)
	if !ok {
		tb.Fatalf("%s has no field %s", t.Name, name)
	}
	return f
}

// TestPiecesInRegisters evaluates the by-value struct parameters at the
// entry of pair_sum and mixed_sum (-O2), composed of pieces of rdi/rsi and
// xmm0/rdi, in synthetic frames.
func TestPiecesInRegisters(t *testing.T) {
	_, info := build(t, "-O2")
	read := func(fname, vname string, f *Frame) (string, Location) {
		fs := info.FunctionsNamed(fname)
		if len(fs) != 1 {
			t.Fatalf("%s: %v", fname, fs)
		}
		pc := fs[0].Entry
		for _, v := range fs[0].Variables(pc) {
			if v.Name == vname {
				l, _ := v.Location(pc)
				val, err := v.Read(pc, f)
				if err != nil {
					t.Fatalf("%s.%s: %v (%s)", fname, vname, err, l)
				}
				return v.Type().FormatValue(val), l
			}
		}
		t.Fatalf("%s has no %s", fname, vname)
		return "", Location{}
	}
	f := &Frame{}
	f.SetReg(RegRDI, 3)
	f.SetReg(RegRSI, 40)
	if got, l := read("pair_sum", "p", f); got != "{a = 3, b = 40}" || !strings.Contains(l.String(), "piece") {
		t.Errorf("pair_sum p = %s (%s)", got, l)
	}
	f = &Frame{}
	f.SetReg(RegRDI, 7)
	binary.LittleEndian.PutUint64(f.XMM[0][:], math.Float64bits(2.5))
	f.XMMValid = 1
	if got, l := read("mixed_sum", "m", f); got != "{d = 2.5, l = 7}" || !strings.Contains(l.String(), "xmm0") {
		t.Errorf("mixed_sum m = %s (%s)", got, l)
	}
	// Without xmm0 the double piece is missing, the long is not.
	f.XMMValid = 0
	if got, _ := read("mixed_sum", "m", f); got != "{d = <optimized out>, l = 7}" {
		t.Errorf("mixed_sum m without xmm0 = %s", got)
	}
}

func TestDWARF4UsesDebugLoc(t *testing.T) {
	_, info := build(t, "-O2", "-gdwarf-4")
	if len(info.sec.loc) == 0 || len(info.sec.loclists) != 0 {
		t.Fatalf(".debug_loc %d bytes, .debug_loclists %d bytes", len(info.sec.loc), len(info.sec.loclists))
	}
	lists := 0
	for _, fn := range info.Functions() {
		if fn.u.version != 4 {
			t.Fatalf("unit version %d", fn.u.version)
		}
		for _, v := range fn.AllVariables() {
			if v.HasLocationList() {
				lists++
				l := v.loc.decoded(fn.u)
				if l.err != nil {
					t.Errorf("%s: %v", v, l.err)
				}
			}
		}
	}
	if lists < 10 {
		t.Errorf("only %d location lists", lists)
	}
}

// TestConcurrentLookups runs lookups from several goroutines on a fresh
// Info (run with -race).
func TestConcurrentLookups(t *testing.T) {
	bin, _ := build(t, "-O2")
	info, err := Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	var pcs []uint64
	for _, fn := range info.Functions() {
		for pc := fn.Ranges[0][0]; pc < fn.Ranges[0][1]; pc += 3 {
			pcs = append(pcs, pc)
		}
	}
	info, _ = Open(bin)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			f := &Frame{Mem: fileMem(t, bin)}
			for k := g; k < len(pcs); k += 2 {
				fn, ok := info.Function(pcs[k])
				if !ok {
					continue
				}
				for _, v := range fn.Variables(pcs[k]) {
					v.Read(pcs[k], f)
				}
			}
			info.Globals()
		}(g)
	}
	wg.Wait()
	if err := info.Err(); err != nil {
		t.Error(err)
	}
}

func TestVariablesDoesNotAllocate(t *testing.T) {
	bin, info := build(t, "-O2")
	pc := symbol(t, bin, "process") + 0x20
	fn, _ := info.Function(pc)
	fn.Variables(pc)
	if n := testing.AllocsPerRun(100, func() {
		fn, _ := info.Function(pc)
		for _, v := range fn.Variables(pc) {
			v.Location(pc)
		}
	}); n != 0 {
		t.Errorf("Function+Variables+Location allocate %v times per call", n)
	}
}

func TestNoDWARF(t *testing.T) {
	bin := testutil.C(t, "values-nodebug", []string{"values.c"}, "-O2", "-s")
	if _, err := Open(bin); err == nil || !strings.Contains(err.Error(), "no DWARF") {
		t.Errorf("Open of a stripped binary: %v", err)
	}
	if _, err := Open("/nonexistent"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open(/nonexistent): %v", err)
	}
}
