package unwind

import (
	"encoding/binary"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// The dynamic loader's lazy-binding resolver (_dl_runtime_resolve_xsavec,
// _xsave or _fxsave, whichever the CPU takes) keeps no frame pointer; once
// it has saved rsp in rbx and realigned rsp for the CPU's extended state,
// its CFA is rbx-based. The test stops a process at the resolver's entry
// (a breakpoint on every FDE of the loader whose CFA goes through rbx),
// then steps it instruction by instruction up to its call of the binding
// code, and unwinds each stop's real stack copy: with every register, and
// with fp mode's (rbx, rbp, rsp, rip), the chain goes through the PLT's
// caller first_calls to main and is complete; with rbp, rsp and rip alone
// it either does the same or stops where the CFA needs rbx, and says so
// (Need.Unknown): the kernel's frame-pointer chain of such a stop skips
// first_calls, so a sampler must count it as having lost callers.
func TestUnwindLazyBindingResolver(t *testing.T) {
	needPtrace(t)
	bin := testutil.C(t, "lazybind", []string{"lazybind.c"}, "-O2", "-g", "-fno-omit-frame-pointer", "-Wl,-z,lazy")
	t.Setenv("LD_BIND_NOW", "") // empty: lazy binding
	tg := startTarget(t, 0, bin)
	pid := tg.pid
	r := tg.resolver(nil)
	var ld, exe *mapping
	for i := range r.maps {
		m := &r.maps[i]
		switch {
		case strings.HasPrefix(filepath.Base(m.path), "ld-linux") && m.hasMod:
			ld = m
		case m.path == bin && m.hasMod:
			exe = m
		}
	}
	if ld == nil || exe == nil {
		t.Fatalf("no dynamic loader or executable mapping with CFI: %+v", r.maps)
	}

	// Wait until the target is in main's loop, its start code's and the
	// loop's calls bound.
	mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	for ready := testutil.Symbol(t, bin, "ready").Value + exe.mod.Bias; ; time.Sleep(time.Millisecond) {
		var b [4]byte
		if _, err := mem.ReadAt(b[:], int64(ready)); err != nil {
			t.Fatal(err)
		}
		if b[0] != 0 {
			break
		}
	}
	if err := tg.stop(pid); err != nil {
		t.Fatal(err)
	}

	// Breakpoints at the entry of each FDE of the loader with an
	// rbx-based CFA.
	tab := ld.mod.Table
	var rem rememberStack
	orig := map[uint64]uint64{} // breakpoint address -> original word
	ends := map[uint64]uint64{} // breakpoint address -> end of its FDE
	for i := range tab.fdes {
		f := &tab.fdes[i]
		for pc := f.start; pc < f.end; pc++ {
			var rw row
			if rowAt(f, pc, &rw, &rem) && rw.cfa.kind == cfaRegOff && rw.cfa.reg == 3 {
				addr := f.start + ld.mod.Bias
				w := peek(t, pid, addr)
				orig[addr], ends[addr] = w, f.end+ld.mod.Bias
				poke(t, pid, addr, w&^0xff|0xcc)
				break
			}
		}
	}
	if len(orig) == 0 {
		t.Fatalf("%s: no FDE keeps its CFA in rbx", ld.path)
	}

	// Let the target make its first calls: set go.
	goAddr := testutil.Symbol(t, bin, "go").Value + exe.mod.Bias
	poke(t, pid, goAddr, peek(t, pid, goAddr)&^0xffffffff|1)
	tg.resume(pid)
	ws := waitTrap(t, pid)
	var regs syscall.PtraceRegs
	if err := syscall.PtraceGetRegs(pid, &regs); err != nil {
		t.Fatal(err)
	}
	bp := regs.Rip - 1
	w, ok := orig[bp]
	if !ok {
		t.Fatalf("stopped at %#x (%v), not at a breakpoint %x", regs.Rip, ws, slices.Collect(maps.Keys(orig)))
	}
	poke(t, pid, bp, w)
	regs.Rip = bp
	if err := syscall.PtraceSetRegs(pid, &regs); err != nil {
		t.Fatal(err)
	}

	const fpMode = 1<<3 | 1<<regRBP | 1<<regRSP | 1<<regRA
	const noRBX = 1<<regRBP | 1<<regRSP | 1<<regRA
	steps, unknown := 0, 0
	for ; steps < 256; steps++ {
		s := tg.capture(pid, copySize)
		pc := s.regs[regRA]
		if pc < bp || pc >= ends[bp] {
			t.Fatalf("step %d: left the resolver at %#x", steps, pc)
		}
		pcs, stop, need := UnwindReach(nil, s.regs, s.stack, r, 64)
		names := r.symbolize(pcs)
		if stop != Complete || !hasSeq(names, "first_calls", "main") {
			t.Errorf("step %d at %#x: %s (%v), want complete through first_calls and main", steps, pc, chain(names), stop)
		}
		if p, st, n := UnwindKnown(nil, s.regs, fpMode, s.stack, r, 64); !slices.Equal(p, pcs) || st != stop || n != need {
			t.Errorf("step %d at %#x: with fp mode's registers %s (%v, %+v), with all %s (%v, %+v)", steps, pc, chain(r.symbolize(p)), st, n, chain(names), stop, need)
		}
		p, st, n := UnwindKnown(nil, s.regs, noRBX, s.stack, r, 64)
		switch {
		case slices.Equal(p, pcs) && st == stop:
		case st == Stopped && n.Unknown && len(p) == 1:
			unknown++
			if fp := r.symbolize(s.fp); slices.Contains(fp, "first_calls") {
				t.Errorf("step %d at %#x: the frame-pointer chain %s has the resolver's caller", steps, pc, chain(fp))
			}
		default:
			t.Errorf("step %d at %#x: without rbx %s (%v, %+v), want %s or stopped for want of rbx", steps, pc, chain(r.symbolize(p)), st, n, chain(names))
		}
		if b := peek(t, pid, pc); b&0xff == 0xe8 { // the call of the binding code
			break
		}
		if err := syscall.PtraceSingleStep(pid); err != nil {
			t.Fatal(err)
		}
		waitTrap(t, pid)
	}
	t.Logf("%d steps in the resolver, %d of them with an rbx-based CFA", steps+1, unknown)
	if steps == 256 {
		t.Errorf("no call in the resolver's first 256 instructions")
	}
	if unknown == 0 {
		t.Errorf("no step needed rbx for the CFA")
	}
}

func peek(t *testing.T, pid int, addr uint64) uint64 {
	t.Helper()
	var b [8]byte
	if n, err := syscall.PtracePeekText(pid, uintptr(addr), b[:]); err != nil || n != 8 {
		t.Fatalf("PTRACE_PEEKTEXT %#x: %d bytes, %v", addr, n, err)
	}
	return binary.LittleEndian.Uint64(b[:])
}

func poke(t *testing.T, pid int, addr, w uint64) {
	t.Helper()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], w)
	if n, err := syscall.PtracePokeText(pid, uintptr(addr), b[:]); err != nil || n != 8 {
		t.Fatalf("PTRACE_POKETEXT %#x: %d bytes, %v", addr, n, err)
	}
}

// waitTrap waits for the traced pid's next SIGTRAP stop (a breakpoint's
// or a single step's), passing other signals on; the target ends after
// its first calls, so the wait ends too.
func waitTrap(t *testing.T, pid int) syscall.WaitStatus {
	t.Helper()
	for {
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(pid, &ws, syscall.WALL, nil); err != nil {
			t.Fatalf("wait4 %d: %v", pid, err)
		}
		sig := 0
		switch {
		case ws.Exited() || ws.Signaled():
			t.Fatalf("the target ended (%v) before the resolver's breakpoint", ws)
		case !ws.Stopped():
			continue
		case ws.StopSignal() == syscall.SIGTRAP && ws.TrapCause() <= 0:
			return ws
		case ws.TrapCause() <= 0:
			sig = int(ws.StopSignal()) // a signal for the target
		}
		if err := syscall.PtraceCont(pid, sig); err != nil {
			t.Fatal(err)
		}
	}
}
