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
