package dwarfx_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/dwarfx"
	"github.com/culprit-dev/culprit/internal/symbol"
	"github.com/culprit-dev/culprit/internal/testutil"
)

// TestNamesAgreeWithSymbolizer checks that value sampling (dwarfx) and the
// symbolizer (symbol) name every function and inlined call alike, at every
// address of every function: vProf joins the values of variables to the
// profile's frames by these names. The programs have GCC clones
// (.constprop, .isra, .part, .cold), inlined calls, C++ methods and
// templates, and a Go program.
func TestNamesAgreeWithSymbolizer(t *testing.T) {
	bins := []string{
		testutil.C(t, "inline", []string{"inline.c"}, "-O2", "-g"),
		testutil.C(t, "vprof_scal", []string{"vprof_scal.c"}, "-O2", "-g"),
		testutil.C(t, "schema", []string{"schema.c"}, "-O2", "-g"),
		testutil.C(t, "cxxnames", []string{"cxxnames.cc"}, "-O2", "-g"),
		testutil.Go(t, "gospin"),
	}
	for _, bin := range bins {
		info, err := dwarfx.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		o, err := symbol.New(symbol.Options{}).Object(bin, nil)
		if err != nil {
			t.Fatal(err)
		}
		fns := info.Functions()
		if len(fns) == 0 {
			t.Fatalf("%s: no functions", bin)
		}
		checked, inlined, bad := 0, 0, 0
		for _, fn := range fns {
			for _, rg := range fn.Ranges {
				// Every address of small functions, 64 spread over large ones.
				step := max((rg[1]-rg[0])/64, 1)
				for pc := rg[0]; pc < rg[1]; pc += step {
					frames := o.LookupAddr(pc)
					inl := fn.Inlines(pc)
					want := make([]string, 0, len(inl)+1)
					for _, in := range inl {
						want = append(want, in.Name)
					}
					want = append(want, fn.Name)
					got := make([]string, len(frames))
					for i, f := range frames {
						got[i] = f.Function
					}
					checked++
					if len(inl) > 0 {
						inlined++
					}
					if fmt.Sprint(got) != fmt.Sprint(want) {
						bad++
						if bad <= 10 {
							t.Errorf("%s %#x: symbolizer %q, dwarfx %q", bin, pc, got, want)
						}
					}
				}
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d of %d addresses named differently", bin, bad, checked)
		}
		// The programs are chosen to have inlined code (Go's runtime has
		// plenty): a check that saw none would check half the rule.
		if inlined == 0 {
			t.Errorf("%s: no inlined call among %d addresses", bin, checked)
		}
		t.Logf("%s: %d functions, %d addresses, %d in inlined calls", bin[strings.LastIndexByte(bin, '/')+1:], len(fns), checked, inlined)
	}
}

// A function the linker dropped (--gc-sections) keeps its DWARF with its
// address relocated to 0: it is no function of the program, for value
// sampling as for the symbolizer (elfx.Ranges). Linked without
// --gc-sections, it is one.
func TestDroppedFunctionIsNone(t *testing.T) {
	for _, c := range []struct {
		flags []string
		want  int
	}{
		{[]string{"-O2", "-g", "-ffunction-sections"}, 1},
		{[]string{"-O2", "-g", "-ffunction-sections", "-Wl,--gc-sections"}, 0},
	} {
		bin := testutil.C(t, "gcsections", []string{"gcsections.c"}, c.flags...)
		info, err := dwarfx.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		fns := info.FunctionsNamed("unused")
		if len(fns) != c.want {
			t.Errorf("%v: %d functions named unused, want %d", c.flags, len(fns), c.want)
		}
		for _, fn := range fns {
			if fn.Entry == 0 {
				t.Errorf("%v: unused at 0", c.flags)
			}
		}
		if fn, ok := info.Function(8); ok {
			t.Errorf("%v: %s at 8", c.flags, fn.Name)
		}
		if len(info.FunctionsNamed("used")) != 1 {
			t.Errorf("%v: used not found", c.flags)
		}
	}
}
