package schema

import (
	"testing"

	"github.com/culprit-dev/culprit/internal/dwarfx"
	"github.com/culprit-dev/culprit/internal/testutil"
	"golang.org/x/arch/x86/x86asm"
)

// In govalues' main.work, Go's location list of the inner loop counter j
// covers the loop's header only; Carried finds j in the same register
// throughout the body, up to and including the instruction that steps it,
// and nowhere its list describes or outside its scope.
func TestCarriedGoLoopCounter(t *testing.T) {
	bin := testutil.Go(t, "govalues")
	info, err := dwarfx.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	code, err := OpenCode(bin)
	if err != nil {
		t.Fatal(err)
	}
	fns := info.FunctionsNamed("main.work")
	if len(fns) != 1 || !fns[0].IsGo() {
		t.Fatalf("main.work: %v", fns)
	}
	fn := fns[0]
	var j *dwarfx.Variable
	for _, v := range fn.AllVariables() {
		if v.Name == "j" {
			j = v
		}
	}
	if j == nil || len(j.Scope()) == 0 {
		t.Fatalf("no j in main.work's scopes")
	}
	listed := map[uint64]bool{} // registers j's list names
	g := buildCFG(code.text, fn.Ranges, fn.Entry)
	carried, gaps := 0, 0
	for k := range g.insns {
		in := &g.insns[k]
		l, ok := j.Location(in.pc)
		r, isReg := l.Register()
		if ok && isReg {
			listed[r] = true
		}
		cr, cok := code.Carried(j, in.pc)
		switch {
		case ok && cok:
			t.Errorf("%#x: carried in %d where the list says %s", in.pc, cr, l)
		case !inRanges(j.Scope(), in.pc) && cok:
			t.Errorf("%#x: carried out of j's scope", in.pc)
		case !ok && inRanges(j.Scope(), in.pc):
			gaps++
			if cok {
				carried++
				if !listed[cr] && len(listed) > 0 {
					t.Errorf("%#x: carried in %d, a register j's list never names (%v)", in.pc, cr, listed)
				}
			}
		}
		// Where j is stepped (inc or add to its register), the
		// instruction itself still sees the old j: carried or listed.
		if in.ok && (in.inst.Op == x86asm.INC || in.inst.Op == x86asm.ADD) && inRanges(j.Scope(), in.pc) && !ok && !cok {
			t.Errorf("%#x %v: j unknown where it is stepped", in.pc, in.inst)
		}
	}
	if gaps == 0 {
		t.Fatal("j's list covers its whole scope: this Go compiler needs no carrying here; change the target so that the test checks something")
	}
	if carried == 0 {
		t.Errorf("j carried at none of the %d instructions its list leaves out", gaps)
	}
}

// A C function's gaps are the value's absence: nothing is carried.
func TestCarriedNotC(t *testing.T) {
	bin := buildSchema(t, "-O2")
	info, err := dwarfx.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	code, err := OpenCode(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, fn := range info.Functions() {
		for _, v := range fn.AllVariables() {
			for pc := fn.Ranges[0][0]; pc < fn.Ranges[0][1]; pc++ {
				if _, ok := code.Carried(v, pc); ok {
					t.Fatalf("%s carried at %#x in C function %s", v.Name, pc, fn.Name)
				}
			}
		}
	}
}
