package symbol

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// checkInline verifies the inline.c facts every build with -g must show:
// square_sum inlined into compute with compute's line 15 as the call site,
// and the clone scale.constprop.0 reported as scale.
func checkInline(t *testing.T, o *Object, bin string) {
	t.Helper()
	start, size := elfSym(t, bin, "compute")
	sawInline := false
	for a := start; a < start+size; a++ {
		fr := o.Lookup(fileOffset(t, bin, a))
		if len(fr) == 0 {
			t.Fatalf("compute+%#x: no frames", a-start)
		}
		outer := fr[len(fr)-1]
		if outer.Function != "compute" || outer.Symbol != "compute" || outer.Inlined {
			t.Errorf("compute+%#x: outer frame %+v", a-start, outer)
		}
		if len(fr) >= 2 && fr[0].Function == "square_sum" {
			sawInline = true
			if !fr[0].Inlined || fr[0].Line < 8 || fr[0].Line > 12 || !strings.HasSuffix(fr[0].File, "inline.c") {
				t.Errorf("compute+%#x: inlined frame %+v", a-start, fr[0])
			}
			if outer.Line != 15 || !strings.HasSuffix(outer.File, "inline.c") {
				t.Errorf("compute+%#x: outer frame should be inline.c:15, got %+v", a-start, outer)
			}
		}
	}
	if !sawInline {
		t.Errorf("no address of compute shows square_sum inlined")
	}

	// The loop of scale.constprop.0 (a few bytes in).
	start, size = elfSym(t, bin, "scale.constprop.0")
	fr := o.Lookup(fileOffset(t, bin, start+size/2))
	if len(fr) != 1 || fr[0].Function != "scale" || fr[0].Symbol != "scale.constprop.0" ||
		fr[0].Line < 17 || fr[0].Line > 22 || !strings.HasSuffix(fr[0].File, "inline.c") {
		t.Errorf("scale.constprop.0: got %+v", fr)
	}
}

func TestInlinePIE(t *testing.T) {
	bin := testutil.C(t, "inline", []string{"inline.c"}, "-O2", "-g")
	o, err := New(Options{}).Object(bin, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !o.HasSymbols() || !o.HasLines() {
		t.Fatalf("HasSymbols %v HasLines %v", o.HasSymbols(), o.HasLines())
	}
	checkInline(t, o, bin)
	var addrs []uint64
	for _, fn := range []string{"compute", "scale.constprop.0", "main"} {
		addrs = append(addrs, rangeOf(t, bin, fn)...)
	}
	if n := compareOracle(t, o, bin, addrs); n < 100 {
		t.Errorf("only %d addresses compared", n)
	}
}

func TestInlineNoPIE(t *testing.T) {
	bin := testutil.C(t, "inline-nopie", []string{"inline.c"}, "-O2", "-g", "-no-pie")
	o, err := New(Options{}).Object(bin, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := elfSym(t, bin, "compute"); a < 0x400000 {
		t.Fatalf("compute at %#x: not a non-PIE link", a)
	}
	checkInline(t, o, bin)
	var addrs []uint64
	for _, fn := range []string{"compute", "scale.constprop.0", "main"} {
		addrs = append(addrs, rangeOf(t, bin, fn)...)
	}
	compareOracle(t, o, bin, addrs)
}

func TestHierO0(t *testing.T) {
	for _, flags := range [][]string{{"-O0", "-g"}, {"-O2", "-g"}, {"-O0", "-g", "-no-pie"}} {
		t.Run(strings.Join(flags, ""), func(t *testing.T) {
			bin := testutil.C(t, "hier", []string{"hier.c"}, flags...)
			o, err := New(Options{}).Object(bin, nil)
			if err != nil {
				t.Fatal(err)
			}
			start, size := elfSym(t, bin, "worker")
			fr := o.Lookup(fileOffset(t, bin, start+size/2))
			if len(fr) != 1 || fr[0].Function != "worker" || fr[0].Inlined || fr[0].Line < 9 || fr[0].Line > 12 ||
				!strings.HasSuffix(fr[0].File, "testdata/targets/hier.c") {
				t.Errorf("worker: %+v", fr)
			}
			var addrs []uint64
			for _, fn := range []string{"worker", "dispatch_1", "dispatch_2", "main"} {
				addrs = append(addrs, rangeOf(t, bin, fn)...)
			}
			compareOracle(t, o, bin, addrs)
		})
	}
}

func TestSharedLibrary(t *testing.T) {
	lib := testutil.C(t, "plugin.so", []string{"plugin.c"}, "-O2", "-g", "-shared", "-fPIC")
	o, err := New(Options{}).Object(lib, nil)
	if err != nil {
		t.Fatal(err)
	}
	start, size := elfSym(t, lib, "plugin_inner")
	fr := o.Lookup(fileOffset(t, lib, start+size/2))
	if len(fr) != 1 || fr[0].Function != "plugin_inner" || !strings.HasSuffix(fr[0].File, "plugin.c") || fr[0].Line < 4 || fr[0].Line > 7 {
		t.Errorf("plugin_inner: %+v", fr)
	}
	var addrs []uint64
	for _, fn := range []string{"plugin_inner", "plugin_work"} {
		addrs = append(addrs, rangeOf(t, lib, fn)...)
	}
	if n := compareOracle(t, o, lib, addrs); n == 0 {
		t.Error("nothing compared")
	}

	// Stripped: only .dynsym names remain.
	dir := t.TempDir()
	stripped := filepath.Join(dir, "plugin.so")
	copyFile(t, lib, stripped)
	run(t, "strip", stripped)
	so, err := New(Options{DebugDirs: []string{}}).Object(stripped, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !so.HasSymbols() || so.HasLines() {
		t.Errorf("stripped library: HasSymbols %v HasLines %v", so.HasSymbols(), so.HasLines())
	}
	start, size = elfSym(t, stripped, "plugin_work")
	fr = so.Lookup(fileOffset(t, stripped, start+size/2))
	if len(fr) != 1 || fr[0].Function != "plugin_work" || fr[0].File != "" {
		t.Errorf("stripped plugin_work: %+v", fr)
	}
	// The static plugin_inner has no dynamic symbol; its unwind table entry
	// still says where it starts.
	start, size = elfSym(t, lib, "plugin_inner")
	off := fileOffset(t, stripped, start+size/2)
	if fr := so.Lookup(off); fr != nil {
		t.Errorf("stripped plugin_inner: %+v, want nil", fr)
	}
	if e, ok := so.FunctionEntry(off); !ok || e != fileOffset(t, lib, start) {
		t.Errorf("stripped plugin_inner: entry %#x %v, want %#x", e, ok, fileOffset(t, lib, start))
	}
}

func TestStrippedExecutable(t *testing.T) {
	bin := testutil.C(t, "inline", []string{"inline.c"}, "-O2", "-g")
	computeAt, _ := elfSym(t, bin, "compute")
	dir := t.TempDir()
	stripped := filepath.Join(dir, "inline")
	copyFile(t, bin, stripped)
	run(t, "strip", stripped)
	o, err := New(Options{DebugDirs: []string{}}).Object(stripped, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A stripped PIE's .dynsym only lists imports: no names at all.
	if o.HasSymbols() || o.HasLines() {
		t.Errorf("HasSymbols %v HasLines %v", o.HasSymbols(), o.HasLines())
	}
	if fr := o.Lookup(fileOffset(t, stripped, computeAt+4)); fr != nil {
		t.Errorf("stripped compute: %+v, want nil", fr)
	}

	// strip --strip-debug keeps the symbol table: names, no lines.
	nodebug := filepath.Join(dir, "inline-nodebug")
	copyFile(t, bin, nodebug)
	run(t, "strip", "--strip-debug", nodebug)
	o, err = New(Options{DebugDirs: []string{}}).Object(nodebug, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !o.HasSymbols() || o.HasLines() {
		t.Errorf("strip-debug: HasSymbols %v HasLines %v", o.HasSymbols(), o.HasLines())
	}
	fr := o.Lookup(fileOffset(t, nodebug, computeAt+4))
	if len(fr) != 1 || fr[0].Function != "compute" || fr[0].File != "" {
		t.Errorf("strip-debug compute: %+v", fr)
	}
	sc, _ := elfSym(t, nodebug, "scale.constprop.0")
	fr = o.Lookup(fileOffset(t, nodebug, sc+2))
	if len(fr) != 1 || fr[0].Function != "scale" || fr[0].Symbol != "scale.constprop.0" {
		t.Errorf("strip-debug scale: %+v", fr)
	}
}

// splitDebug makes dir/name (stripped with mode, "--strip-debug" or
// "--strip-all") and dir/name.debug from bin.
func splitDebug(t *testing.T, bin, dir, name, mode string, link bool) (string, string) {
	t.Helper()
	exe := filepath.Join(dir, name)
	dbg := filepath.Join(dir, name+".debug")
	copyFile(t, bin, exe)
	run(t, "objcopy", "--only-keep-debug", exe, dbg)
	run(t, "strip", mode, exe)
	if link {
		run(t, "objcopy", "--add-gnu-debuglink="+dbg, exe)
	}
	return exe, dbg
}

func TestDebugLink(t *testing.T) {
	bin := testutil.C(t, "inline", []string{"inline.c"}, "-O2", "-g")
	for _, mode := range []string{"--strip-debug", "--strip-all"} {
		t.Run(mode, func(t *testing.T) {
			for _, where := range []string{"same", ".debug", "debugdir"} {
				t.Run(where, func(t *testing.T) {
					dir := t.TempDir()
					exe, dbg := splitDebug(t, bin, dir, "inline", mode, true)
					dd := t.TempDir()
					switch where {
					case ".debug":
						mv(t, dbg, filepath.Join(dir, ".debug", "inline.debug"))
					case "debugdir":
						mv(t, dbg, filepath.Join(dd, dir, "inline.debug"))
					}
					o, err := New(Options{DebugDirs: []string{dd}}).Object(exe, nil)
					if err != nil {
						t.Fatal(err)
					}
					if !o.HasSymbols() || !o.HasLines() || o.DebugFile() == "" {
						t.Fatalf("HasSymbols %v HasLines %v DebugFile %q", o.HasSymbols(), o.HasLines(), o.DebugFile())
					}
					checkInline(t, o, bin)
				})
			}
		})
	}
	t.Run("bad-crc", func(t *testing.T) {
		dir := t.TempDir()
		exe, dbg := splitDebug(t, bin, dir, "inline", "--strip-debug", true)
		f, err := os.OpenFile(dbg, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte("junk"))
		f.Close()
		o, err := New(Options{DebugDirs: []string{}}).Object(exe, nil)
		if err != nil {
			t.Fatal(err)
		}
		if o.HasLines() || o.DebugFile() != "" {
			t.Errorf("debug file with a wrong CRC was used: %q", o.DebugFile())
		}
		start, _ := elfSym(t, exe, "compute")
		if fr := o.Lookup(fileOffset(t, exe, start+4)); len(fr) != 1 || fr[0].Function != "compute" || fr[0].File != "" {
			t.Errorf("compute without debug info: %+v", fr)
		}
	})
}

func mv(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

func TestBuildIDDir(t *testing.T) {
	for _, flags := range [][]string{{"-O2", "-g"}, {"-O2", "-g", "-no-pie"}} {
		t.Run(strings.Join(flags, ""), func(t *testing.T) {
			bin := testutil.C(t, "inline", []string{"inline.c"}, flags...)
			id := buildIDFile(t, bin)
			h := hexString(id)
			dir := t.TempDir()
			exe, dbg := splitDebug(t, bin, dir, "inline", "--strip-all", false)
			dd := t.TempDir()
			mv(t, dbg, filepath.Join(dd, ".build-id", h[:2], h[2:]+".debug"))

			s := New(Options{DebugDirs: []string{dd}})
			o, err := s.Object(exe, id)
			if err != nil {
				t.Fatal(err)
			}
			if !o.HasSymbols() || !o.HasLines() {
				t.Fatalf("HasSymbols %v HasLines %v", o.HasSymbols(), o.HasLines())
			}
			checkInline(t, o, bin)

			// The object itself is gone: the build-id debug file stands in,
			// its segment layout reconstructed.
			if err := os.Remove(exe); err != nil {
				t.Fatal(err)
			}
			s2 := New(Options{DebugDirs: []string{"/nonexistent", dd}})
			o, err = s2.Object(exe, id)
			if err != nil {
				t.Fatal(err)
			}
			if o.Path() != exe {
				t.Errorf("Path %q", o.Path())
			}
			checkInline(t, o, bin)
			// Without the recorded build-id a missing file is an error.
			if _, err := s2.Object(exe, nil); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("missing file without build-id: %v", err)
			}
			// And with a build-id nobody has.
			other := append([]byte(nil), id...)
			other[1] ^= 1
			if _, err := s2.Object(exe, other); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("missing file, unknown build-id: %v", err)
			}
		})
	}
}

func hexString(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

func TestBuildIDMismatch(t *testing.T) {
	bin := testutil.C(t, "inline", []string{"inline.c"}, "-O2", "-g")
	id := buildIDFile(t, bin)
	s := New(Options{})
	o, err := s.Object(bin, id)
	if err != nil {
		t.Fatalf("matching build-id: %v", err)
	}
	if string(o.BuildID()) != string(id) {
		t.Errorf("BuildID %x, want %x", o.BuildID(), id)
	}
	wrong := append([]byte(nil), id...)
	wrong[0] ^= 0xff
	_, err = s.Object(bin, wrong)
	var me *MismatchError
	if !errors.As(err, &me) {
		t.Fatalf("got %v, want *MismatchError", err)
	}
	if me.Path != bin || string(me.Got) != string(id) || string(me.Want) != string(wrong) {
		t.Errorf("MismatchError %+v", me)
	}
	msg := err.Error()
	for _, want := range []string{bin, hexString(id)[:8], hexString(wrong)[:8], "on disk", "recorded", "binary changed since recording"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
}

func TestNoBuildIDMismatch(t *testing.T) {
	bin := testutil.C(t, "hier-noid", []string{"hier.c"}, "-O2", "-g", "-Wl,--build-id=none")
	o, err := New(Options{}).Object(bin, nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.BuildID() != nil {
		t.Fatalf("build-id %x", o.BuildID())
	}
	_, err = New(Options{}).Object(bin, []byte{1, 2, 3, 4})
	var me *MismatchError
	if !errors.As(err, &me) || !strings.Contains(err.Error(), "no build-id on disk, 01020304 recorded") {
		t.Errorf("got %v", err)
	}
}

func TestCache(t *testing.T) {
	bin := testutil.C(t, "inline", []string{"inline.c"}, "-O2", "-g")
	s := New(Options{})
	a, err := s.Object(bin, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Object(bin, buildIDFile(t, bin))
	if err != nil {
		t.Fatal(err)
	}
	if a.d != b.d {
		t.Error("same file opened twice")
	}
	// Same build-id at another path shares the parsed data.
	other := filepath.Join(t.TempDir(), "copy")
	copyFile(t, bin, other)
	c, err := s.Object(other, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.d != a.d || c.Path() != other {
		t.Errorf("copy: shared %v path %q", c.d == a.d, c.Path())
	}
	// Not ELF.
	junk := filepath.Join(t.TempDir(), "junk")
	os.WriteFile(junk, []byte("not an ELF file"), 0o644)
	if _, err := s.Object(junk, nil); err == nil || !strings.Contains(err.Error(), junk) {
		t.Errorf("junk: %v", err)
	}
}

func TestConcurrentLookups(t *testing.T) {
	bin := testutil.C(t, "inline", []string{"inline.c"}, "-O2", "-g")
	s := New(Options{})
	start, size := elfSym(t, bin, "compute")
	off := fileOffset(t, bin, start)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, err := s.Object(bin, nil)
			if err != nil {
				t.Error(err)
				return
			}
			for a := uint64(0); a < size; a++ {
				if fr := o.Lookup(off + a); len(fr) == 0 || fr[len(fr)-1].Function != "compute" {
					t.Errorf("compute+%#x: %+v", a, fr)
					return
				}
			}
		}()
	}
	wg.Wait()

	// A stripped Go binary goes through debug/gosym, whose caches are not
	// safe for concurrent use on their own.
	gobin := testutil.Go(t, "gospin", "-ldflags=-s -w")
	offs := lookupAddrs(t, gobin, 2000)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, err := s.Object(gobin, nil)
			if err != nil {
				t.Error(err)
				return
			}
			for _, off := range offs {
				o.Lookup(off)
			}
		}()
	}
	wg.Wait()
}

func TestCXX(t *testing.T) {
	bin := testutil.C(t, "cxxnames", []string{"cxxnames.cc"}, "-O2", "-g")
	o, err := New(Options{}).Object(bin, nil)
	if err != nil {
		t.Fatal(err)
	}
	check := func(sym string, want func(fr []Frame) bool) {
		t.Helper()
		start, size := elfSym(t, bin, sym)
		if size == 0 {
			size = 1
		}
		ok := false
		var seen [][]Frame
		for a := start; a < start+size; a++ {
			fr := o.Lookup(fileOffset(t, bin, a))
			if len(fr) == 0 || fr[len(fr)-1].Symbol != sym {
				t.Errorf("%s+%#x: %+v", sym, a-start, fr)
				return
			}
			seen = append(seen, fr)
			if want(fr) {
				ok = true
			}
		}
		if !ok {
			t.Errorf("%s: no address as expected; saw %+v", sym, seen)
		}
	}
	check("_ZN3geo7checkedEl", func(fr []Frame) bool {
		return len(fr) == 1 && fr[0].Function == "geo::checked" && strings.HasSuffix(fr[0].File, "cxxnames.cc") && fr[0].Line == 27
	})
	check("_ZN3geo7checkedEl.cold", func(fr []Frame) bool {
		return fr[len(fr)-1].Function == "geo::checked" && fr[len(fr)-1].Line >= 22 && fr[len(fr)-1].Line <= 25
	})
	check("_ZN3geo5AccumIlE3runEl", func(fr []Frame) bool {
		return len(fr) == 2 && fr[0].Function == "geo::Accum::step" && fr[0].Inlined && fr[0].Line == 12 &&
			fr[1].Function == "geo::Accum::run" && fr[1].Line == 15 && !fr[1].Inlined
	})
}

// Without any symbol, addresses are still grouped per function: the unwind
// tables give each function's first instruction, in PIE and non-PIE
// executables (where file offsets and addresses differ) and for the static
// functions of a library that has only dynamic symbols.
func TestFunctionEntryStripped(t *testing.T) {
	for _, flags := range [][]string{{"-O2", "-g"}, {"-O2", "-g", "-no-pie"}} {
		t.Run(strings.Join(flags, ""), func(t *testing.T) {
			bin := testutil.C(t, "inline"+strings.Join(flags, ""), []string{"inline.c"}, flags...)
			stripped := filepath.Join(t.TempDir(), "inline")
			copyFile(t, bin, stripped)
			run(t, "strip", stripped)
			o, err := New(Options{DebugDirs: []string{}}).Object(stripped, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, fn := range []string{"compute", "scale.constprop.0", "main"} {
				start, size := elfSym(t, bin, fn)
				want := fileOffset(t, bin, start)
				for _, at := range []uint64{start, start + size/2, start + size - 1} {
					off := fileOffset(t, stripped, at)
					if fr := o.Lookup(off); fr != nil {
						t.Fatalf("%s: stripped lookup %+v, want nil", fn, fr)
					}
					got, ok := o.FunctionEntry(off)
					if !ok || got != want {
						t.Errorf("%s+%#x: entry %#x %v, want %#x", fn, at-start, got, ok, want)
					}
				}
			}
			if _, ok := o.FunctionEntry(0); ok {
				t.Error("the ELF header has a function entry")
			}
		})
	}
}
