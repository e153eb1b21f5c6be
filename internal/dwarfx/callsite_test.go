package dwarfx

import (
	"errors"
	"testing"

	"github.com/culprit-dev/culprit/internal/elfx"
	"github.com/culprit-dev/culprit/internal/testutil"
)

func usesEntryValue(e []byte) bool {
	r := elfx.Reader{B: e, End: len(e)}
	for !r.Done() && !r.Bad {
		op := r.U8()
		if op == elfx.OpEntryValue || op == elfx.OpGNUEntryValue {
			return true
		}
		if !elfx.SkipOperands(op, &r) {
			return false
		}
	}
	return false
}

// main's call of walk is a call site that names walk and says what main
// passed in rdi (the items); walk's counter is described through that
// register's entry value. The value is computed in main's frame: with
// every register known it is one of them plus a constant, or an address;
// a register the call site does not describe is unavailable, and a call
// site does not call a function it does not name.
func TestCallSites(t *testing.T) {
	bin := testutil.C(t, "entryval", []string{"entryval.c"}, "-O2", "-g", "-fno-omit-frame-pointer")
	info, err := Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	get := func(name string) *Function {
		fns := info.FunctionsNamed(name)
		if len(fns) != 1 {
			t.Fatalf("%d functions named %s", len(fns), name)
		}
		return fns[0]
	}
	mainFn, walk, visit := get("main"), get("walk"), get("visit")
	var calls []CallSite
	for _, c := range mainFn.calls {
		if c.Calls(walk) {
			calls = append(calls, c)
		}
		if c.Calls(visit) {
			t.Errorf("main's call site returning to %#x calls visit, which main does not call", c.Return)
		}
	}
	if len(calls) != 1 {
		t.Fatalf("%d call sites of walk in main, want 1", len(calls))
	}
	c := calls[0]
	if got, ok := mainFn.CallSite(c.Return); !ok || got.Return != c.Return {
		t.Errorf("CallSite(%#x) not found", c.Return)
	}
	if _, ok := mainFn.CallSite(c.Return + 1); ok {
		t.Errorf("CallSite(%#x): a call site that does not return there", c.Return+1)
	}
	var f Frame
	for r := 0; r < 16; r++ {
		f.SetReg(r, 0x10000*uint64(r+1))
	}
	f.CFA = 0x7fff0000
	if _, err := c.Value(5, &f); err != nil {
		t.Errorf("the value main passed in rdi: %v", err)
	}
	if _, err := c.Value(8, &f); !errors.Is(err, ErrUnavailable) {
		t.Errorf("the value main passed in r8, which walk does not take: %v, want unavailable", err)
	}
	// walk's i, wherever its location needs rdi's entry value, is
	// (rdi - entry) / 24: evaluated with an entry value it is a number.
	var i *Variable
	for _, v := range walk.AllVariables() {
		if v.Name == "i" {
			i = v
		}
	}
	if i == nil {
		t.Fatal("walk has no variable i")
	}
	found := false
	for _, rg := range walk.Ranges {
		for pc := rg[0]; pc < rg[1]; pc++ {
			l, ok := i.Location(pc)
			if !ok || !usesEntryValue(l.Expr) {
				continue
			}
			found = true
			g := f
			g.SetReg(5, 0x5000+3*24)
			if _, err := l.Eval(&g, 4); !errors.Is(err, ErrEntryValue) {
				t.Fatalf("i at %#x without an entry value: %v, want ErrEntryValue", pc, err)
			}
			g.EntryValue = func(reg uint64) (uint64, error) { return 0x5000, nil }
			v, err := l.Eval(&g, 4)
			if err != nil || len(v.Bytes) != 4 || v.Bytes[0] < 2 || v.Bytes[0] > 4 || v.Bytes[1] != 0 {
				t.Fatalf("i at %#x with rdi 3 items past its entry value: %v %v", pc, v.Bytes, err)
			}
			break
		}
	}
	if !found {
		t.Errorf("walk's i is never described through an entry value (%s)", bin)
	}
}
