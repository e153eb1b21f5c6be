package tracer

import (
	"debug/elf"
	"os"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
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

// A USDT probe's arguments in the C argument registers are named argN at
// their registers' positions; the others are not named.
func TestUSDTParams(t *testing.T) {
	for _, c := range []struct {
		args string
		want []string
	}{
		{"8@%rdi", []string{"arg1:u8:"}},
		{"-4@%esi 8@%rdi", []string{"arg2:u8:", "arg1:i4:"}},
		{"-8@%rax 8@%rdx", []string{"_:u8:", "_:u8:", "arg2:u8:"}},
		{"-4@-20(%rbp) 8@$5", nil},
		{"", nil},
	} {
		got := usdtParams(c.args)
		if len(got) != len(c.want) {
			t.Errorf("%q: %q, want %q", c.args, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%q: %q, want %q", c.args, got, c.want)
				break
			}
		}
	}
}
