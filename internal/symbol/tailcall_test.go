package symbol

import (
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// branches returns, from objdump's disassembly of fn in bin, the addresses
// of its instructions op (call, jmp) whose target is the symbol to, and the
// address after each.
func branches(t *testing.T, bin, fn, op, to string) (at, next []uint64) {
	t.Helper()
	addr, size := elfSym(t, bin, fn)
	out, err := exec.Command("objdump", "-d", "--no-show-raw-insn",
		fmt.Sprintf("--start-address=0x%x", addr), fmt.Sprintf("--stop-address=0x%x", addr+size), bin).Output()
	if err != nil {
		t.Fatalf("objdump: %v", err)
	}
	line := regexp.MustCompile(`(?m)^\s*([0-9a-f]+):\s+(\S+)\s+[0-9a-f]+ <` + regexp.QuoteMeta(to) + `>\s*$`)
	all := regexp.MustCompile(`(?m)^\s*([0-9a-f]+):`).FindAllSubmatch(out, -1)
	for _, m := range line.FindAllSubmatch(out, -1) {
		if string(m[2]) != op {
			continue
		}
		a, _ := strconv.ParseUint(string(m[1]), 16, 64)
		at = append(at, a)
		n := addr + size
		for i, x := range all {
			if v, _ := strconv.ParseUint(string(x[1]), 16, 64); v == a && i+1 < len(all) {
				n, _ = strconv.ParseUint(string(all[i+1][1]), 16, 64)
			}
		}
		next = append(next, n)
	}
	return at, next
}

// TestTailCalls: in tailcall.c at -O2, step calls check, which jumps to work,
// which jumps to spin. A stack sampled in spin has step's return address
// right above spin; TailCalls names the two jumps, work's first.
func TestTailCalls(t *testing.T) {
	bin := testutil.C(t, "tailcall", []string{"tailcall.c"}, "-O2", "-g", "-fno-omit-frame-pointer")
	_, rets := branches(t, bin, "step", "call", "check")
	checkJmp, _ := branches(t, bin, "check", "jmp", "work")
	workJmp, _ := branches(t, bin, "work", "jmp", "spin")
	if len(rets) != 1 || len(checkJmp) != 1 || len(workJmp) != 1 {
		t.Fatalf("the compiler did not make the tail calls expected: step's calls of check %x, check's jumps to work %x, work's jumps to spin %x", rets, checkJmp, workJmp)
	}
	o, err := New(Options{}).Object(bin, nil)
	if err != nil {
		t.Fatal(err)
	}
	off := func(a uint64) uint64 { return fileOffset(t, bin, a) }
	spin, _ := elfSym(t, bin, "spin")
	work, _ := elfSym(t, bin, "work")
	check, _ := elfSym(t, bin, "check")
	ret := off(rets[0])

	got := o.TailCalls(ret, off(spin+3))
	want := []uint64{off(workJmp[0]), off(checkJmp[0])}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("TailCalls(step's return, in spin) = %x, want work's jump then check's %x", got, want)
	}
	for i, f := range [][]Frame{o.Lookup(got[0]), o.Lookup(got[1])} {
		name := []string{"work", "check"}[i]
		if len(f) == 0 || f[len(f)-1].Function != name || f[len(f)-1].Line == 0 {
			t.Errorf("frame %d of the chain: %+v, want %s with a line", i, f, name)
		}
	}
	// In work: only check's frame is missing.
	if got := o.TailCalls(ret, off(work+1)); fmt.Sprint(got) != fmt.Sprint([]uint64{off(checkJmp[0])}) {
		t.Errorf("TailCalls(step's return, in work) = %x, want check's jump %x", got, off(checkJmp[0]))
	}
	// In check itself nothing is missing.
	if got := o.TailCalls(ret, off(check+1)); got != nil {
		t.Errorf("TailCalls(step's return, in check) = %x, want none", got)
	}
	// Not a return address: the instruction before step's entry is no call.
	stepAddr, _ := elfSym(t, bin, "step")
	if got := o.TailCalls(off(stepAddr), off(spin+3)); got != nil {
		t.Errorf("TailCalls(step's entry, in spin) = %x, want none", got)
	}
	// run calls step, which does not reach spin by jumps alone.
	_, runRets := branches(t, bin, "run", "call", "step")
	if len(runRets) == 0 {
		t.Fatal("run does not call step")
	}
	if got := o.TailCalls(off(runRets[0]), off(spin+3)); got != nil {
		t.Errorf("TailCalls(run's return, in spin) = %x, want none (step calls check)", got)
	}
}

// TestTailCallsThroughPLT: in tailplt.c, built as a shared library, entry
// jumps to decide through the library's own PLT and decide to the static
// spin; tailpltmain calls entry through the executable's PLT, and outer
// through the library's. A stack sampled in spin has the caller's return
// address right above spin: StubCall names the function the executable's
// call entered the library at, TailCallsFrom the two jumps from there,
// and TailCalls the same for outer's call within the library.
func TestTailCallsThroughPLT(t *testing.T) {
	lib := testutil.C(t, "libtailplt.so", []string{"tailplt.c"}, "-O2", "-g", "-fPIC", "-shared")
	bin := testutil.C(t, "tailpltmain", []string{"tailpltmain.c"}, "-O2", "-g", "-Wl,--no-as-needed", lib)
	_, mainRets := branches(t, bin, "main", "call", "entry@plt")
	_, outerRets := branches(t, lib, "outer", "call", "entry@plt")
	entryJmp, _ := branches(t, lib, "entry", "jmp", "decide@plt")
	decideJmp, _ := branches(t, lib, "decide", "jmp", "spin")
	if len(mainRets) != 1 || len(outerRets) != 1 || len(entryJmp) != 1 || len(decideJmp) != 1 {
		t.Fatalf("the compiler did not make the calls expected: main's calls of entry@plt %x, outer's %x, entry's jumps to decide@plt %x, decide's jumps to spin %x",
			mainRets, outerRets, entryJmp, decideJmp)
	}
	s := New(Options{})
	m, err := s.Object(bin, nil)
	if err != nil {
		t.Fatal(err)
	}
	o, err := s.Object(lib, nil)
	if err != nil {
		t.Fatal(err)
	}
	off := func(a uint64) uint64 { return fileOffset(t, lib, a) }
	if name, ok := m.StubCall(fileOffset(t, bin, mainRets[0])); !ok || name != "entry" {
		t.Errorf("StubCall(main's return) = %q, %v; want entry", name, ok)
	}
	mainAddr, _ := elfSym(t, bin, "main")
	if name, ok := m.StubCall(fileOffset(t, bin, mainAddr)); ok {
		t.Errorf("StubCall(main's entry) = %q, want none", name)
	}
	spin, _ := elfSym(t, lib, "spin")
	decide, _ := elfSym(t, lib, "decide")
	entry, _ := elfSym(t, lib, "entry")
	want := []uint64{off(decideJmp[0]), off(entryJmp[0])}
	if got := o.TailCallsFrom("entry", off(spin+3)); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("TailCallsFrom(entry, in spin) = %x, want decide's jump then entry's %x", got, want)
	}
	if got := o.TailCallsFrom("entry", off(decide+1)); fmt.Sprint(got) != fmt.Sprint(want[1:]) {
		t.Errorf("TailCallsFrom(entry, in decide) = %x, want entry's jump %x", got, want[1:])
	}
	if got := o.TailCallsFrom("entry", off(entry+1)); got != nil {
		t.Errorf("TailCallsFrom(entry, in entry) = %x, want none", got)
	}
	if got := o.TailCallsFrom("nosuch", off(spin+3)); got != nil {
		t.Errorf("TailCallsFrom(nosuch, in spin) = %x, want none", got)
	}
	if got := o.TailCalls(off(outerRets[0]), off(spin+3)); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("TailCalls(outer's return, in spin) = %x, want decide's jump then entry's %x", got, want)
	}
}
