package elfx

import (
	"debug/dwarf"
	"debug/elf"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// walkAll returns the function trees of every compilation unit of bin.
func walkAll(t *testing.T, bin string, visit Visit) []*FuncNode {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dw, err := DWARFData(f)
	if err != nil {
		t.Fatal(err)
	}
	w := NewFuncWalker(dw.Data, IsGo(f), f.Type == elf.ET_REL)
	var all []*FuncNode
	r := dw.Data.Reader()
	for {
		root, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if root == nil {
			break
		}
		if root.Tag != dwarf.TagCompileUnit {
			r.SkipChildren()
			continue
		}
		fns, err := w.Walk(r, root, nil, visit)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, fns...)
	}
	return all
}

func byName(fns []*FuncNode) map[string]*FuncNode {
	m := map[string]*FuncNode{}
	for _, n := range fns {
		m[n.Name] = n
	}
	return m
}

// A function the linker dropped keeps its DWARF with ranges at 0: in a
// linked object it is no function, in a relocatable object (where every
// section starts at 0) the range at 0 is real. The same program linked
// without --gc-sections has the function, so the test can fail.
func TestRangesAtZero(t *testing.T) {
	base := []string{"-O2", "-g", "-ffunction-sections"}
	for _, c := range []struct {
		flags  []string
		unused bool // the unused function is found
		atZero bool // and starts at 0
	}{
		{nil, true, false},
		{[]string{"-Wl,--gc-sections"}, false, false},
		{[]string{"-c"}, true, true},
	} {
		bin := testutil.C(t, "gcsections", []string{"gcsections.c"}, append(base, c.flags...)...)
		for _, visit := range []Visit{nil, func(e, p *dwarf.Entry, n *FuncNode) bool { return true }} {
			fns := byName(walkAll(t, bin, visit))
			if fns["main"] == nil || fns["used"] == nil {
				t.Fatalf("%v: main or used not found: %v", c.flags, fns)
			}
			u := fns["unused"]
			if (u != nil) != c.unused {
				t.Errorf("%v: unused found %v, want %v", c.flags, u != nil, c.unused)
			}
			if u != nil && (u.Ranges[0][0] == 0) != c.atZero {
				t.Errorf("%v: unused at %#x", c.flags, u.Ranges[0][0])
			}
			for _, n := range fns {
				if !c.atZero && n.Ranges[0][0] == 0 {
					t.Errorf("%v: %s at 0", c.flags, n.Name)
				}
			}
		}
	}
}

// The walk with a visitor makes the same nodes as the one that skips what
// only describes data; inlined calls carry their call site and entry.
func TestWalkSameWithVisit(t *testing.T) {
	for _, src := range []string{"inline.c", "cxxnames.cc", "gcsections.c"} {
		bin := testutil.C(t, "walk", []string{src}, "-O2", "-g")
		var seen int
		a := walkAll(t, bin, nil)
		b := walkAll(t, bin, func(e, p *dwarf.Entry, n *FuncNode) bool { seen++; return true })
		if seen == 0 || len(a) < 2 || len(a) != len(b) {
			t.Fatalf("%s: %d and %d functions, %d DIEs visited", src, len(a), len(b), seen)
		}
		inl := 0
		var cmp func(x, y *FuncNode)
		cmp = func(x, y *FuncNode) {
			if x.Offset != y.Offset || x.Name != y.Name || x.Entry != y.Entry || len(x.Children) != len(y.Children) ||
				x.CallLine != y.CallLine || x.CallColumn != y.CallColumn || len(x.Ranges) != len(y.Ranges) {
				t.Errorf("%s: %+v != %+v", src, x, y)
				return
			}
			if x.Inlined {
				inl++
				if x.CallLine <= 0 || x.Entry < x.Ranges[0][0] {
					t.Errorf("%s: inlined %s: call line %d entry %#x ranges %x", src, x.Name, x.CallLine, x.Entry, x.Ranges)
				}
			}
			for k := range x.Children {
				cmp(x.Children[k], y.Children[k])
			}
		}
		for k := range a {
			if a[k].Name == "" || a[k].Inlined {
				t.Errorf("%s: function %+v", src, a[k])
			}
			cmp(a[k], b[k])
		}
		if inl == 0 {
			t.Errorf("%s: no inlined calls", src)
		}
	}
}

// C++ functions without a linkage name (a static function, a template
// instance over a lambda's type) are named as their demangled linkage name
// would read: in their namespaces, without template arguments.
func TestWalkCXXScopes(t *testing.T) {
	bin := testutil.CXX(t, "cxxtrace", []string{"cxxtrace.cc"}, "-O2", "-g", "-pthread")
	names := map[string]bool{}
	var add func(n *FuncNode)
	add = func(n *FuncNode) {
		names[n.Name] = true
		for _, c := range n.Children {
			add(c)
		}
	}
	for _, n := range walkAll(t, bin, nil) {
		add(n)
	}
	for _, want := range []string{"svc::digit", "std::__invoke_impl", "svc::parse_size", "main"} {
		if !names[want] {
			t.Errorf("no function %s among %d", want, len(names))
		}
	}
	for n := range names {
		if n == "digit" || strings.HasPrefix(n, "__invoke_impl") {
			t.Errorf("%s is not named in its namespace", n)
		}
	}
}
