package tracer

import (
	"debug/elf"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"golang.org/x/arch/x86/x86asm"

	"github.com/culprit-dev/culprit/internal/elfx"
	"github.com/culprit-dev/culprit/internal/testutil"
	"github.com/culprit-dev/culprit/internal/traceprog"
)

func TestParsePattern(t *testing.T) {
	for _, c := range []struct {
		in   string
		lib  bool
		want Pattern
		bad  bool
	}{
		{in: "parse_*", want: Pattern{Glob: "parse_*"}},
		{in: "fib#100", want: Pattern{Glob: "fib", Every: 100}},
		{in: "libz.so.1:deflate*#4", lib: true, want: Pattern{Lib: "libz.so.1", Glob: "deflate*", Every: 4}},
		{in: "/usr/lib/x86_64-linux-gnu/libc.so.6:malloc", lib: true, want: Pattern{Lib: "/usr/lib/x86_64-linux-gnu/libc.so.6", Glob: "malloc"}},
		{in: "libstdc++.so.6:std::*", lib: true, want: Pattern{Lib: "libstdc++.so.6", Glob: "std::*"}},
		{in: "libgeo.so:::area", lib: true, want: Pattern{Lib: "libgeo.so", Glob: "::area"}},
		{in: "fib#0", bad: true},
		{in: "fib#x", bad: true},
		{in: "#3", bad: true},
		{in: "[", bad: true},
		{in: "nolib", lib: true, bad: true},
		{in: "lib:", lib: true, bad: true},
	} {
		got, err := ParsePattern(c.in, c.lib)
		if c.bad {
			if err == nil {
				t.Errorf("%q: no error", c.in)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
}

// A Go function's entry probe goes after its stack check and its return
// probes on its RET instructions.
func TestGoProbes(t *testing.T) {
	bin := testutil.Go(t, "gotrace")
	targets, isGo, err := Resolve(bin, 0, []Pattern{{Glob: "main.fib"}, {Glob: "main.leaf"}}, false)
	if err != nil || !isGo || len(targets) != 2 {
		t.Fatalf("Resolve: %v, isGo %v, %+v", err, isGo, targets)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	raw, err := os.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, tg := range targets {
		sym := testutil.Symbol(t, bin, tg.Function)
		start := testutil.ProgOffset(t, f, sym.Value)
		if tg.Offset <= start || tg.Offset > start+32 {
			t.Errorf("%s: entry probe at %#x, function at %#x: want just after its stack check", tg.Function, tg.Offset, start)
		}
		code := make([]byte, 1)
		for _, r := range tg.Rets {
			if _, err := raw.ReadAt(code, int64(r)); err != nil {
				t.Fatal(err)
			}
			if r < start || r >= start+sym.Size || code[0] != 0xc3 {
				t.Errorf("%s: RET probe at %#x (byte %#x) outside the function or not on a RET", tg.Function, r, code[0])
			}
		}
		if len(tg.Rets) == 0 {
			t.Errorf("%s: no RET found", tg.Function)
		}
	}
}

func TestResolveErrors(t *testing.T) {
	bin := testutil.C(t, "tracecalls", []string{"tracecalls.c"}, "-O2", "-g", "-pthread")
	if _, _, err := Resolve(bin, 0, []Pattern{{Glob: "no_such_function"}}, false); err == nil {
		t.Error("a missing function: no error")
	}
	if _, _, err := Resolve(bin, 0, []Pattern{{Lib: "libnosuchthing", Glob: "f"}}, false); err == nil {
		t.Error("a missing library: no error")
	}
	ts, _, err := Resolve(bin, 0, []Pattern{{Glob: "args3"}}, true)
	if err != nil || len(ts) != 1 {
		t.Fatalf("args3: %v %+v", err, ts)
	}
	want := []string{"a:i8:long int", "b:i4:int", "c:u4:unsigned int"}
	if len(ts[0].Params) != 3 || ts[0].Params[0] != want[0] || ts[0].Params[1] != want[1] || ts[0].Params[2] != want[2] {
		t.Errorf("args3 params %q, want %q", ts[0].Params, want)
	}
}

// USDT operands as sys/sdt.h writes them on x86-64.
func TestParseUSDTArgs(t *testing.T) {
	specs, params, why := ParseUSDTArgs("-4@%edi 8@-8(%rbp) 4@$5 -2@(%rax) 1@%r12b %rsi")
	if why != "" || len(specs) != 6 {
		t.Fatalf("%d specs, %q", len(specs), why)
	}
	want := []traceprog.ArgSpec{
		{Kind: traceprog.ArgReg, Reg: 112, Size: 4},
		{Kind: traceprog.ArgMem, Reg: 32, Off: -8, Size: 8},
		{Kind: traceprog.ArgConst, Off: 5, Size: 4},
		{Kind: traceprog.ArgMem, Reg: 80, Size: 2},
		{Kind: traceprog.ArgReg, Reg: 24, Size: 1},
		{Kind: traceprog.ArgReg, Reg: 104, Size: 8},
	}
	for i := range want {
		if specs[i] != want[i] {
			t.Errorf("spec %d: %+v, want %+v", i, specs[i], want[i])
		}
	}
	wantP := []string{"arg1:i4:int32", "arg2:u8:uint64", "arg3:u4:uint32", "arg4:i2:int16", "arg5:u1:uint8", "arg6:u8:uint64"}
	for i := range wantP {
		if params[i] != wantP[i] {
			t.Errorf("param %d: %s, want %s", i, params[i], wantP[i])
		}
	}
	// Up to the first operand that cannot be read, saying why.
	specs, params, why = ParseUSDTArgs("-8@%rbx -8@sink(%rip) 8@%rax")
	if len(specs) != 1 || len(params) != 1 || why == "" {
		t.Errorf("symbol operand without a resolver: %d specs, %q", len(specs), why)
	}
	// Indexed memory operands: base+index·scale+off, and without a base.
	specs, params, why = ParseUSDTArgs("-4@-4(%rbp,%rax,4) 8@(,%rcx,8) -8@(%rsp,%rcx,8)")
	wantX := []traceprog.ArgSpec{
		{Kind: traceprog.ArgMem, Reg: 32, Off: -4, Size: 4, Index: 80, Scale: 4},
		{Kind: traceprog.ArgMem, Reg: -1, Size: 8, Index: 88, Scale: 8},
		{Kind: traceprog.ArgMem, Reg: 152, Size: 8, Index: 88, Scale: 8},
	}
	if why != "" || len(specs) != 3 || len(params) != 3 {
		t.Fatalf("indexed operands: %d specs, %q", len(specs), why)
	}
	for i := range wantX {
		if specs[i] != wantX[i] {
			t.Errorf("indexed spec %d: %+v, want %+v", i, specs[i], wantX[i])
		}
	}
	for _, bad := range []string{"8@(%rax,%rcx,3)", "8@(%rax,%rcx)", "8@(%rax,%nosuch,2)", "8@(rax,%rcx,2)"} {
		if specs, _, why := ParseUSDTArgs(bad); len(specs) != 0 || why == "" {
			t.Errorf("%s: %d specs, %q", bad, len(specs), why)
		}
	}
	if specs, _, why := ParseUSDTArgs("3@%eax"); len(specs) != 0 || why == "" {
		t.Errorf("size 3: %d specs, %q", len(specs), why)
	}
}

// A function the compiler inlined everywhere has no symbol to probe: the
// error says so and names the functions it was inlined into.
func TestResolveInlinedOnly(t *testing.T) {
	bin := testutil.C(t, "values-O2", []string{"values.c"}, "-O2", "-g")
	_, _, err := Resolve(bin, 0, []Pattern{{Glob: "weigh"}}, false)
	if err == nil || !strings.Contains(err.Error(), "inlined it everywhere it is called, into main (") {
		t.Errorf("weigh, inlined into main: %v", err)
	}
	_, _, err = Resolve(bin, 0, []Pattern{{Glob: "no_such_function"}}, false)
	if err == nil || strings.Contains(err.Error(), "inlined") {
		t.Errorf("a missing function: %v", err)
	}
}

// C++ functions are traced by the names the CPU profile gives them: a
// pattern matches the demangled name or the symbol, two instances of one
// template member keep their full demangled names apart, the user-space
// strategy takes C++ functions, and a C++ object is known to unwind.
func TestResolveCXXNames(t *testing.T) {
	bin := testutil.CXX(t, "cxxtrace", []string{"cxxtrace.cc"}, "-O2", "-g", "-pthread")
	names := func(pats ...Pattern) []string {
		t.Helper()
		ts, _, err := Resolve(bin, 0, pats, false)
		if err != nil {
			t.Fatalf("%+v: %v", pats, err)
		}
		var out []string
		for _, x := range ts {
			out = append(out, x.Function)
		}
		sort.Strings(out)
		return out
	}
	for _, c := range []struct {
		glob string
		want []string
	}{
		{"svc::parse_size", []string{"svc::parse_size"}},
		{"svc::*", []string{"svc::handle", "svc::make_shape", "svc::parse_size"}},
		{"_ZN3svc10parse_size*", []string{"svc::parse_size"}},
		{"geo::Accum*", []string{"geo::Accum<double>::add(double)", "geo::Accum<long>::add(long)"}},
		// A member by its name in any enclosing scope, as a debugger's
		// breakpoint; overloads and instances by the name they share.
		{"area", []string{"geo::Square::area", "geo::Strip::area"}},
		{"Square::area", []string{"geo::Square::area"}},
		{"geo::Accum::add", []string{"geo::Accum<double>::add(double)", "geo::Accum<long>::add(long)"}},
		{"Accum::add", []string{"geo::Accum<double>::add(double)", "geo::Accum<long>::add(long)"}},
		{"add(long)", []string{"geo::Accum<long>::add(long)"}},
		{"::svc::handle", []string{"svc::handle"}},
	} {
		if got := names(Pattern{Glob: c.glob}); !slices.Equal(got, c.want) {
			t.Errorf("-f %q traces %q, want %q", c.glob, got, c.want)
		}
	}
	// A quoted full name matches only itself, as variance's refinement
	// passes names back.
	if got := names(Pattern{Glob: GlobQuote("geo::Accum<long>::add(long)")}); !slices.Equal(got, []string{"geo::Accum<long>::add(long)"}) {
		t.Errorf("quoted name: %q", got)
	}
	// A function named by two patterns is traced once, and neither
	// pattern is said to match nothing (variance names --queue's
	// functions and, quoted, the callees of --start).
	if ts, _, err := Resolve(bin, 0, []Pattern{{Glob: "handle"}, {Glob: GlobQuote("svc::handle")}}, false); err != nil || len(ts) != 1 {
		t.Errorf("handle named twice: %d targets, %v", len(ts), err)
	}
	if ts, _, err := Resolve(bin, 0, []Pattern{{Glob: GlobQuote("area")}}, false); err == nil {
		t.Errorf("a quoted name matched members of that name: %+v", ts)
	}
	if got := names(Pattern{Glob: "*", UserOnly: true}); !slices.Contains(got, "svc::handle") {
		t.Errorf("the user-space strategy leaves out svc::handle: %q", got)
	}
	// References are passed as addresses: --args names them.
	ts, _, err := Resolve(bin, 0, []Pattern{{Glob: "svc::handle"}}, true)
	if err != nil || len(ts) != 1 {
		t.Fatalf("svc::handle with arguments: %v, %v", ts, err)
	}
	var params []string
	for _, p := range ts[0].Params {
		name, code, _ := strings.Cut(p, ":")
		params = append(params, name+":"+strings.SplitN(code, ":", 2)[0])
	}
	if want := []string{"req:p8", "a:p8", "d:p8"}; !slices.Equal(params, want) {
		t.Errorf("svc::handle's parameters %q (%q), want %q", params, ts[0].Params, want)
	}
	if !unwinds(bin) {
		t.Errorf("%s calls __cxa_throw but is not seen to unwind", bin)
	}
	if c := testutil.C(t, "tracecalls", []string{"tracecalls.c"}, "-O2", "-g", "-pthread"); unwinds(c) {
		t.Errorf("a C program is seen to unwind for exceptions")
	}
}

// In a C++ object that unwinds, return probes go on RET instructions and
// the jumps of tail calls (at -O2, check jumps to parse and finish to
// scale), in the function or its cold parts, and the unwinder's landing
// pads (__cxa_begin_catch, _Unwind_Resume: PLT stubs here) are found; a
// C object keeps its uretprobes.
func TestResolveNativeRets(t *testing.T) {
	bin := testutil.CXX(t, "cxxunwind", []string{"cxxunwind.cc"}, "-O2", "-g", "-pthread")
	targets, _, err := Resolve(bin, 0, []Pattern{{Glob: "svc::*"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	byName := map[string]Target{}
	for _, tg := range targets {
		byName[tg.Function] = tg
		// scale calls nothing: it keeps its uretprobe, no exception
		// can pass through it.
		if leaf := tg.Function == "svc::scale"; tg.RetInsn == leaf {
			t.Errorf("%s: RET-instruction probes %v in an object that unwinds, want %v", tg.Function, tg.RetInsn, !leaf)
		}
		for _, r := range tg.Rets {
			in, err := x86asm.Decode(raw[r:], 64)
			if err != nil || in.Op != x86asm.RET {
				t.Errorf("%s: return probe at %#x on %v, not a RET", tg.Function, r, in)
			}
		}
		for _, r := range tg.Tails {
			if in, err := x86asm.Decode(raw[r:], 64); err != nil || in.Op != x86asm.JMP {
				t.Errorf("%s: tail probe at %#x on %v, not a JMP", tg.Function, r, in)
			}
		}
	}
	if tg := byName["svc::scale"]; len(tg.Rets)+len(tg.Tails) != 0 {
		t.Errorf("svc::scale, a leaf: RETs %x, tail jumps %x, want a uretprobe", tg.Rets, tg.Tails)
	}
	// check's and finish's tail calls reach parse and scale.
	for fn, callee := range map[string]string{"svc::check": "svc::parse", "svc::finish": "svc::scale"} {
		tg, ok := byName[fn]
		if !ok || len(tg.Tails) != 1 {
			t.Errorf("%s: tail jumps %x, want one (to %s)", fn, tg.Tails, callee)
			continue
		}
		in, _ := x86asm.Decode(raw[tg.Tails[0]:], 64)
		rel, _ := in.Args[0].(x86asm.Rel)
		if to := tg.Tails[0] + uint64(in.Len) + uint64(int64(rel)); to != byName[callee].Code[0] {
			t.Errorf("%s: tail jump to %#x, %s is at %#x", fn, to, callee, byName[callee].Code[0])
		}
	}
	if tg := byName["svc::parse"]; len(tg.Rets) == 0 || len(tg.Tails) != 0 {
		t.Errorf("svc::parse: RETs %x, tail jumps %x: want RETs only", tg.Rets, tg.Tails)
	}
	pads := landingPads(bin)
	stubs := map[uint64]string{}
	for _, s := range elfx.PLTStubs(f) {
		if off, ok := fileOffset(f, s.Addr); ok {
			stubs[off] = s.Name
		}
	}
	names := map[string]bool{}
	for _, p := range pads {
		names[strings.SplitN(stubs[p], "@", 2)[0]] = true
	}
	if len(pads) != 2 || !names["__cxa_begin_catch"] || !names["_Unwind_Resume"] {
		t.Errorf("landing pads %x (%v), want the PLT stubs of __cxa_begin_catch and _Unwind_Resume", pads, names)
	}
	c := testutil.C(t, "tracecalls", []string{"tracecalls.c"}, "-O2", "-g", "-pthread")
	ct, _, err := Resolve(c, 0, []Pattern{{Glob: "leaf"}}, false)
	if err != nil || len(ct) != 1 || ct[0].RetInsn || len(landingPads(c)) != 0 {
		t.Errorf("C program: %v %+v (landing pads %x): want a uretprobe", err, ct, landingPads(c))
	}
}

// A pattern may leave out a C++ name's outer scopes, and an overload's or
// instance's parameters and template arguments; no pattern matches part
// of a scope's name (elfx.TestMatchName: template arguments).
func TestMatchesShortNames(t *testing.T) {
	funcs := []funcSym{
		{name: "_ZNK3geo6Square4areaEv"},
		{name: "_ZN3geo5AccumIlE3addEl"},
		{name: "_ZN3geo5AccumIdE3addEd"},
		{name: "parse_area"},
	}
	nameFuncs(funcs)
	// An instance's full name is not the profile's: that one is given.
	for i, want := range []string{"", "geo::Accum::add", "geo::Accum::add", ""} {
		if funcs[i].profileName() != want {
			t.Errorf("%s: profile name %q, want %q", funcs[i].name, funcs[i].profileName(), want)
		}
	}
	for _, c := range []struct {
		glob string
		want []string
	}{
		{"Square::area", []string{"geo::Square::area"}},
		{"area", []string{"geo::Square::area"}},
		{"*area", []string{"geo::Square::area", "parse_area"}},
		{"Accum::add", []string{"geo::Accum<long>::add(long)", "geo::Accum<double>::add(double)"}},
		{"geo::Accum::add", []string{"geo::Accum<long>::add(long)", "geo::Accum<double>::add(double)"}},
		{"Accum<long>::add(long)", []string{"geo::Accum<long>::add(long)"}},
		{"quare::area", nil},
		{"eo::Square::area", nil},
	} {
		var got []string
		for _, fs := range funcs {
			if fs.matches(c.glob) {
				got = append(got, fs.name)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%q matches %q, want %q", c.glob, got, c.want)
		}
	}
}
