package schema

import (
	"debug/elf"
	"slices"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// The function whose answer decides calls, on guard.c at -O0 (a call
// after the test) and -O2 (a tail jump).
func TestDecider(t *testing.T) {
	eachLevel(t, "guard", func(t *testing.T, c *Code, at func(string) uint64) {
		// Every entry into work is guarded by ready's answer.
		if p, ok := c.Decider(at("work"), ""); !ok || p != "ready" {
			t.Errorf("entries of work decided by %q, %v; want ready", p, ok)
		}
		if p, ok := c.Decider(at("step"), "work"); !ok || p != "ready" {
			t.Errorf("step's calls of work decided by %q, %v; want ready", p, ok)
		}
		for _, tc := range []struct{ fn, callee, why string }{
			{"always", "", "called unconditionally"},
			{"step", "always", "called unconditionally"},
			{"mixed", "", "one guarded call and one not"},
			{"other", "mixed", "one guarded call and one not"},
			{"taken", "", "its address is in a table"},
			{"ready", "", "called unconditionally"},
			{"step", "no_such_function", "no such callee"},
		} {
			if p, ok := c.Decider(at(tc.fn), tc.callee); ok {
				t.Errorf("%s/%q: decided by %q; want none (%s)", tc.fn, tc.callee, p, tc.why)
			}
		}
		if _, ok := c.Decider(1, ""); ok {
			t.Error("an address outside every function has a decider")
		}
	})
}

// How a function's own code decides a call: not at all (in every
// iteration of its loop), by an equality test, by a threshold.
func TestGuard(t *testing.T) {
	eachLevel(t, "guard", func(t *testing.T, c *Code, at func(string) uint64) {
		decideGuards(t, c, at("decide"), "")
		if g, o, ok := c.Guard(at("step"), "always"); !ok || g || o {
			t.Errorf("step's call of always: guarded %v, ordered %v, ok %v; want none", g, o, ok)
		}
		if g, o, ok := c.Guard(at("step"), "work"); !ok || !g || o {
			t.Errorf("step's call of work, on ready's answer: guarded %v, ordered %v, ok %v; want guarded by an equality", g, o, ok)
		}
		if _, _, ok := c.Guard(at("step"), "over"); ok {
			t.Error("step calls over: ok")
		}
	})
}

// Direct calls, a call through a pointer, and what cannot be told.
func TestCalls(t *testing.T) {
	eachLevel(t, "guard", func(t *testing.T, c *Code, at func(string) uint64) {
		for _, tc := range []struct {
			fn, callee    string
			direct, known bool
		}{
			{"main", "step", true, true},
			{"other", "taken", true, true},
			{"main", "taken", false, true}, // through table[0]
			{"main", "over", false, true},
			{"main", "no_such_function", false, false},
		} {
			if d, k := c.Calls(at(tc.fn), tc.callee); d != tc.direct || k != tc.known {
				t.Errorf("%s calls %s: direct %v, known %v; want %v, %v", tc.fn, tc.callee, d, k, tc.direct, tc.known)
			}
		}
		if _, k := c.Calls(1, "step"); k {
			t.Error("an address outside every function: known")
		}
	})
}

// In a shared library, a call of an exported function of the same library
// goes through the PLT (it may be interposed): call work@plt. The calls
// are the same calls, decided by the same code.
func TestGuardThroughPLT(t *testing.T) {
	lib := testutil.C(t, "guard-plt.so", []string{"guard.c"}, "-O2", "-g", "-shared", "-fPIC")
	f, err := elf.Open(lib)
	if err != nil {
		t.Fatal(err)
	}
	stubs := pltStubs(f)
	f.Close()
	var names []string
	for _, n := range stubs {
		names = append(names, n)
	}
	if !slices.Contains(names, "work") || !slices.Contains(names, "over") {
		t.Fatalf("PLT stubs %v: want work and over among them (the calls do not go through the PLT?)", names)
	}
	c, err := OpenCode(lib)
	if err != nil {
		t.Fatal(err)
	}
	at := func(name string) uint64 { a, _ := symbolAddr(t, lib, name); return a + 1 }
	if p, ok := c.Decider(at("step"), "work"); !ok || p != "ready" {
		t.Errorf("step's calls of work@plt decided by %q, %v; want ready", p, ok)
	}
	if p, ok := c.Decider(at("work"), ""); !ok || p != "ready" {
		t.Errorf("entries of work (through its stub) decided by %q, %v; want ready", p, ok)
	}
	decideGuards(t, c, at("decide"), "@plt")
}

// decideGuards checks how guard.c's decide decides its calls: each in
// every iteration of its loop, fresh on an equality, over on a threshold
// (their names in messages with suffix, e.g. @plt).
func decideGuards(t *testing.T, c *Code, decide uint64, suffix string) {
	t.Helper()
	for _, tc := range []struct {
		callee           string
		guarded, ordered bool
	}{
		{"each", false, false},
		{"fresh", true, false},
		{"over", true, true},
	} {
		g, o, ok := c.Guard(decide, tc.callee)
		if !ok || g != tc.guarded || o != tc.ordered {
			t.Errorf("decide's calls of %s%s: guarded %v, ordered %v, ok %v; want %v, %v, true", tc.callee, suffix, g, o, ok, tc.guarded, tc.ordered)
		}
	}
}

// A function's calls of the library's own functions through their PLT
// stubs name those functions in its shape, with the loops that hold them.
func TestShapeThroughPLT(t *testing.T) {
	lib := testutil.C(t, "guard-plt.so", []string{"guard.c"}, "-O2", "-g", "-shared", "-fPIC")
	c, err := OpenCode(lib)
	if err != nil {
		t.Fatal(err)
	}
	at := func(name string) uint64 { a, _ := symbolAddr(t, lib, name); return a + 1 }
	depth := func(fn string) map[string]int {
		s, ok := c.ShapeAt(at(fn))
		if !ok || s.Unknown {
			t.Fatalf("%s: no shape (%v, %+v)", fn, ok, s)
		}
		m := map[string]int{}
		for _, k := range s.Calls {
			m[k.Callee] = max(m[k.Callee], k.LoopDepth+1)
		}
		return m
	}
	d := depth("decide")
	if d["each"] < 2 || d["over"] != 1 || d["fresh"] != 1 {
		t.Errorf("decide's calls by callee (loop depth + 1): %v; want each in a loop, over and fresh outside", d)
	}
	if s := depth("step"); s["always"] != 1 || s["work"] != 1 {
		t.Errorf("step's calls by callee (loop depth + 1): %v; want always and work outside loops", s)
	}
}

// A function GCC cloned (descend.constprop.0 at -O2) is found by the name
// its frames have, descend: its call of itself, in every iteration of
// its loop with no test of its own there, is not guarded.
func TestGuardOfClone(t *testing.T) {
	for _, level := range levels {
		t.Run(level, func(t *testing.T) {
			bin := testutil.C(t, "guard"+level, []string{"guard.c"}, level, "-g")
			f, err := elf.Open(bin)
			if err != nil {
				t.Fatal(err)
			}
			syms, err := f.Symbols()
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			var at uint64
			var name string
			for _, s := range syms {
				if elf.ST_TYPE(s.Info) == elf.STT_FUNC && (s.Name == "descend" || strings.HasPrefix(s.Name, "descend.")) && s.Value != 0 {
					at, name = s.Value, s.Name
				}
			}
			if at == 0 {
				t.Fatal("no function descend")
			}
			if level == "-O2" && name == "descend" {
				t.Fatalf("descend not cloned at -O2: the setting is not the one tested")
			}
			if g, o, ok := mustOpenCode(t, bin).Guard(at+1, "descend"); !ok || g || o {
				t.Errorf("%s's call of itself, asked as descend: guarded %v, ordered %v, ok %v; want found, not guarded", name, g, o, ok)
			}
		})
	}
}

// Whether a function's code can do more work on one call than on
// another: ready has neither a loop nor a call, work loops, step calls.
func TestShapeAt(t *testing.T) {
	eachLevel(t, "guard", func(t *testing.T, code *Code, at func(string) uint64) {
		for _, tc := range []struct {
			fn           string
			loops, calls bool
		}{
			{"ready", false, false},
			{"work", true, false},
			{"step", false, true},
		} {
			s, ok := code.ShapeAt(at(tc.fn))
			if !ok || s.Unknown || (s.Loops > 0) != tc.loops || (len(s.Calls) > 0) != tc.calls {
				t.Errorf("%s: shape %+v, ok %v; want loops %v, calls %v", tc.fn, s, ok, tc.loops, tc.calls)
			}
		}
		if _, ok := code.ShapeAt(1); ok {
			t.Error("an address outside every function has a shape")
		}
	})
}

// eachLevel compiles testdata's NAME.c at each optimisation level with
// DWARF and runs f on its machine code; at gives an address inside a
// function, by name.
func eachLevel(t *testing.T, name string, f func(t *testing.T, c *Code, at func(fn string) uint64)) {
	for _, level := range levels {
		t.Run(level, func(t *testing.T) {
			bin := testutil.C(t, name+level, []string{name + ".c"}, level, "-g")
			f(t, mustOpenCode(t, bin), func(fn string) uint64 { a, _ := symbolAddr(t, bin, fn); return a + 1 })
		})
	}
}

func mustOpenCode(t *testing.T, bin string) *Code {
	t.Helper()
	code, err := OpenCode(bin)
	if err != nil {
		t.Fatal(err)
	}
	return code
}

// GuardReads: a threshold that compares a value with a global loads it in
// the jump's block; a function that reads a global for something else
// (a log line) and decides its call on another comparison does not.
func TestGuardReads(t *testing.T) {
	eachLevel(t, "threshold", func(t *testing.T, c *Code, at func(string) uint64) {
		sized, logged := at("sized"), at("logged")
		if _, o, ok := c.Guard(sized, "probe"); !ok || !o {
			t.Fatalf("sized's call of probe: ordered %v ok %v; want a threshold", o, ok)
		}
		if r, known := c.GuardReads(sized, "probe", "cfg_min_keys"); !known || !r {
			t.Errorf("sized: threshold reads cfg_min_keys %v (known %v), want true", r, known)
		}
		if r, known := c.Reads(logged, "verbosity"); !known || !r {
			t.Fatalf("logged reads verbosity %v (known %v): not the setting tested", r, known)
		}
		if r, known := c.GuardReads(logged, "probe", "verbosity"); !known || r {
			t.Errorf("logged: threshold reads verbosity %v (known %v), want false", r, known)
		}
		if _, known := c.GuardReads(sized, "probe", "no_such_global"); known {
			t.Error("a global the symbol table lacks: known")
		}
	})
}

// A function's formal parameters, from DWARF, told from its other locals.
func TestParam(t *testing.T) {
	eachLevel(t, "guard", func(t *testing.T, c *Code, at func(string) uint64) {
		for _, tc := range []struct {
			fn, name    string
			param, know bool
		}{
			{"step", "n", true, true},
			{"step", "s", true, true},
			{"decide", "n", true, true},
			{"decide", "i", false, true},
			{"step", "no_such_variable", false, true},
			{"ready", "n", false, true},
		} {
			if p, k := c.Param(at(tc.fn), tc.name); p != tc.param || k != tc.know {
				t.Errorf("%s: %s a parameter %v (known %v); want %v (%v)", tc.fn, tc.name, p, k, tc.param, tc.know)
			}
		}
		if _, k := c.Param(1, "n"); k {
			t.Error("an address outside every function has parameters")
		}
	})
}
