package tracer

import (
	"debug/elf"
	"os"
	"testing"

	"github.com/culprit-dev/culprit/internal/proc"
	"github.com/culprit-dev/culprit/internal/testutil"
)

// A waker's return addresses name the executable's functions through the
// mapping they fall in: any address inside a function (a return address
// is looked up one byte back) names it, an address of another file or of
// no mapping names nothing.
func TestWakerFuncs(t *testing.T) {
	bin := testutil.C(t, "tracecalls", []string{"tracecalls.c"}, "-O2", "-g", "-pthread")
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, m := testutil.Symbol(t, bin, "worker"), testutil.Symbol(t, bin, "main")
	// The executable mapped at 0x555500000000 as the loader maps a PIE
	// (file offset 0 at the mapping's start), and a library elsewhere.
	const base = 0x555500000000
	s := &session{exe: bin, maps: &proc.Space{}}
	s.maps.Add(proc.Mapping{Start: base, End: base + 1<<24, Offset: 0, Path: bin, Perms: "r-xp"})
	s.maps.Add(proc.Mapping{Start: 0x7f0000000000, End: 0x7f0000100000, Path: "/usr/lib/libc.so.6", Perms: "r-xp"})
	at := func(sym elf.Symbol, delta uint64) uint64 { return base + testutil.ProgOffset(t, f, sym.Value) + delta }
	// The first address is where the waker was (libc's), the others are
	// return addresses: at(w, 1) names worker's first byte, at(w, 3) is
	// worker again (each function once), at(m, m.Size), just past main's
	// last byte, names main.
	got, b := s.wakerFuncs([]uint64{0x7f0000000100, at(w, 1), at(w, 3), at(m, m.Size)})
	if len(got) != 2 || got[0] != "worker" || got[1] != "main" || b != "" {
		t.Errorf("named %v, base %q, want [worker main] and no base (the chain ends in the executable)", got, b)
	}
	// The thread's base: the outermost function of the executable called
	// from another object, with only other objects' frames (and the entry
	// point, below main) outside it; a chain cut by an address of no file
	// (a return trampoline) or that goes back into the executable from
	// another object (a callback) has no base there.
	lib := uint64(0x7f0000000200)
	entry := base + testutil.ProgOffset(t, f, f.Entry) + 1
	for _, c := range []struct {
		chain []uint64
		want  string
	}{
		{[]uint64{lib, at(w, 1), lib, lib}, "worker"},
		{[]uint64{lib, at(w, 1), at(m, 1), lib, entry}, "main"},
		{[]uint64{lib, at(w, 1), lib, at(m, 1), lib}, "main"},
		{[]uint64{lib, at(w, 1), 0xdead0000, lib}, ""},
		{[]uint64{lib, at(w, 1), lib, 0xdead0000}, ""},
		{[]uint64{lib, lib}, ""},
	} {
		if _, b := s.wakerFuncs(c.chain); b != c.want {
			t.Errorf("chain %x: base %q, want %q", c.chain, b, c.want)
		}
	}
	if _, err := os.Stat("/usr/lib/libc.so.6"); err == nil && s.funcs.isExe("/usr/lib/libc.so.6") {
		t.Errorf("the C library is taken for the executable")
	}
}

// A return address names the function the call was made in: the address
// just after the call may be the next function's first byte, so it is
// looked up one byte back.
func TestFuncAt(t *testing.T) {
	bin := testutil.C(t, "tracecalls", []string{"tracecalls.c"}, "-O2", "-g", "-pthread")
	w, m := testutil.Symbol(t, bin, "worker"), testutil.Symbol(t, bin, "main")
	at := FuncAt(bin)
	if got := at(w.Value + 1); got != "worker" {
		t.Errorf("one byte into worker: %q", got)
	}
	if got := at(w.Value + w.Size); got != "worker" {
		t.Errorf("worker's end (a call as its last instruction returns there): %q", got)
	}
	if got := at(m.Value + m.Size/2); got != "main" {
		t.Errorf("inside main: %q", got)
	}
	if got := at(0); got != "" {
		t.Errorf("no address: %q", got)
	}
}
