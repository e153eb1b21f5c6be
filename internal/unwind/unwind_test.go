package unwind

import (
	"debug/elf"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/culprit-dev/culprit/internal/testutil"
)

const copySize = 16 << 10

// unwound is one sample with its CFI chain and symbol names.
type unwound struct {
	sample
	pcs      []uint64
	complete bool
	names    []string
}

// sampleThread stops thread tid of tg n times at random intervals and
// unwinds each stop.
func sampleThread(t *testing.T, tg *target, r *procResolver, tid, n int) []unwound {
	t.Helper()
	var out []unwound
	for i := 0; i < n; i++ {
		time.Sleep(time.Duration(1+rand.Intn(8)) * time.Millisecond)
		if err := tg.stop(tid); err != nil {
			t.Fatal(err)
		}
		s := tg.capture(tid, copySize)
		tg.resume(tid)
		pcs, complete := Unwind(s.regs, s.stack, r, 64)
		checkFrames(t, s, r, pcs, complete)
		out = append(out, unwound{sample: s, pcs: pcs, complete: complete, names: r.symbolize(pcs)})
	}
	return out
}

// checkFrames checks UnwindFrames against Unwind on the same stop: the same
// PCs, and each caller's stack pointer equal to its callee's CFA.
func checkFrames(t *testing.T, s sample, r Resolver, pcs []uint64, complete bool) {
	t.Helper()
	frames, fcomplete := UnwindFrames(s.regs, s.stack, r, 64)
	if len(frames) != len(pcs) || fcomplete != complete {
		t.Fatalf("UnwindFrames: %d frames (complete %v), Unwind: %d PCs (complete %v)", len(frames), fcomplete, len(pcs), complete)
	}
	for i, f := range frames {
		if f.PC != pcs[i] {
			t.Fatalf("frame %d: PC %#x, Unwind says %#x", i, f.PC, pcs[i])
		}
		if i+1 < len(frames) {
			if f.CFA == 0 || frames[i+1].Regs[regRSP] != f.CFA || frames[i+1].Valid&(1<<regRSP) == 0 {
				t.Fatalf("frame %d: CFA %#x, caller's rsp %#x", i, f.CFA, frames[i+1].Regs[regRSP])
			}
		}
	}
	if frames[0].Exact != true || (len(frames) > 1 && frames[1].Valid&(1<<0) != 0) {
		t.Fatalf("frame validity: %+v", frames[:min(2, len(frames))])
	}
}

func chain(names []string) string { return strings.Join(names, " <- ") }

// hasSeq reports whether names contains seq as consecutive entries, where an
// entry matches a name with that prefix (GCC may clone worker into
// worker.constprop.0, say).
func hasSeq(names []string, seq ...string) bool {
	for i := 0; i+len(seq) <= len(names); i++ {
		ok := true
		for j, s := range seq {
			if !matchName(names[i+j], s) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func matchName(name, want string) bool {
	return name == want || strings.HasPrefix(name, want+".")
}

func haveLibcDebugSyms(t *testing.T) bool {
	s := loadSyms(libcPath(t))
	for _, sym := range s.syms {
		if sym.Name == "__libc_start_call_main" {
			return true
		}
	}
	return false
}

func testHier(t *testing.T, flags ...string) {
	needPtrace(t)
	bin := testutil.C(t, "hier", []string{"hier.c"}, flags...)
	tg := startTarget(t, 50*time.Millisecond, bin, "1000000")
	r := tg.resolver(nil)
	const stops = 50
	samples := sampleThread(t, tg, r, tg.pid, stops)
	reached, inWorker, completeN := 0, 0, 0
	libcSyms := haveLibcDebugSyms(t)
	for i, u := range samples {
		c := chain(u.names)
		if i < 3 {
			t.Logf("stop %d: %s (complete=%v, fp chain %s)", i, c, u.complete, chain(r.symbolize(u.fp)))
		}
		mi := slices.Index(u.names, "main")
		if mi < 0 {
			t.Logf("stop %d does not reach main: %s", i, c)
			continue
		}
		reached++
		if matchName(u.names[0], "worker") {
			inWorker++
			if !hasSeq(u.names, "worker", "dispatch_1", "main") && !hasSeq(u.names, "worker", "dispatch_2", "main") {
				t.Errorf("stop %d: want worker <- dispatch_N <- main, got %s", i, c)
			}
		}
		if libcSyms && !hasSeq(u.names[mi:], "main", "__libc_start_call_main") {
			t.Errorf("stop %d: want main <- __libc_start_call_main, got %s", i, c)
		}
		if u.complete {
			completeN++
			if u.names[len(u.names)-1] != "_start" {
				t.Errorf("stop %d: complete chain does not end at _start: %s", i, c)
			}
		}
		// The 2 KiB copy of frame-pointer mode holds this whole stack.
		if len(u.stack.Data) >= 2048 {
			short := u.stack
			short.Data = short.Data[:2048]
			if pcs, complete := Unwind(u.regs, short, r, 64); !slices.Equal(pcs, u.pcs) || complete != u.complete {
				t.Errorf("stop %d: with a 2 KiB copy got %x (complete=%v), want %x", i, pcs, complete, u.pcs)
			}
		}
		// Merging with a real frame-pointer chain must keep the whole CFI
		// chain.
		if m := Merge(u.pcs, u.fp, u.complete); !slices.Equal(m[:len(u.pcs)], u.pcs) {
			t.Errorf("stop %d: Merge lost CFI frames: %x vs %x", i, m, u.pcs)
		}
	}
	t.Logf("%d/%d stops reach main, %d in worker, %d complete (libc debug symbols: %v)", reached, stops, inWorker, completeN, libcSyms)
	if reached < stops*95/100 {
		t.Errorf("only %d/%d stops reach main", reached, stops)
	}
	if inWorker < stops/2 {
		t.Errorf("only %d/%d stops in worker", inWorker, stops)
	}
	if completeN < stops*95/100 {
		t.Errorf("only %d/%d chains complete", completeN, stops)
	}
}

func TestUnwindHierO2NoFP(t *testing.T) { testHier(t, "-O2", "-fomit-frame-pointer") }
func TestUnwindHierO0FP(t *testing.T)   { testHier(t, "-O0", "-fno-omit-frame-pointer") }

// -O2 with frame pointers: worker is a leaf, so GCC omits its frame and the
// frame-pointer chain skips dispatch_N. CFI restores it, and merging a
// truncated CFI chain with the frame-pointer chain keeps it.
func TestUnwindHierO2FPLeaf(t *testing.T) {
	needPtrace(t)
	bin := testutil.C(t, "hier", []string{"hier.c"}, "-O2", "-fno-omit-frame-pointer")
	tg := startTarget(t, 50*time.Millisecond, bin, "1000000")
	r := tg.resolver(nil)
	samples := sampleThread(t, tg, r, tg.pid, 30)
	skipped, merged := 0, 0
	for i, u := range samples {
		if !matchName(u.names[0], "worker") {
			continue
		}
		fpNames := r.symbolize(u.fp)
		if len(fpNames) > 1 && fpNames[1] == "main" {
			skipped++ // the frame-pointer chain lost dispatch_N
		}
		if !hasSeq(u.names, "worker", "dispatch_1", "main") && !hasSeq(u.names, "worker", "dispatch_2", "main") {
			t.Errorf("stop %d: CFI chain %s", i, chain(u.names))
		}
		// Simulate a short stack copy: CFI gets only to dispatch_N.
		cut := u.stack
		cut.Data = cut.Data[:16]
		pcs, complete := Unwind(u.regs, cut, r, 64)
		if complete || len(pcs) != 2 {
			t.Logf("stop %d: truncated unwind %s complete=%v", i, chain(r.symbolize(pcs)), complete)
			continue
		}
		m := Merge(pcs, u.fp, complete)
		mn := r.symbolize(m)
		// The fp chain supplies main and beyond; CFI supplies dispatch_N.
		if !hasSeq(mn, "worker", "dispatch_1", "main") && !hasSeq(mn, "worker", "dispatch_2", "main") || len(m) != len(pcs)+len(u.fp)-1 {
			t.Errorf("stop %d: merged %s from cfi %s and fp %s", i, chain(mn), chain(r.symbolize(pcs)), chain(fpNames))
		}
		merged++
		if merged == 1 {
			t.Logf("fp %s + truncated cfi %s -> %s", chain(fpNames), chain(r.symbolize(pcs)), chain(mn))
		}
	}
	t.Logf("%d stops: fp chain skipped dispatch_N in %d, merged %d", len(samples), skipped, merged)
	if merged == 0 {
		t.Error("no truncated stop merged")
	}
}

// A stop inside libc (in or around write(2)) unwinds through libc's CFI back
// to write_many <- main.
func TestUnwindThroughLibc(t *testing.T) {
	needPtrace(t)
	bin := testutil.C(t, "syscalls", []string{"syscalls.c"}, "-O2", "-fomit-frame-pointer")
	tg := startTarget(t, 50*time.Millisecond, bin, "1000000000")
	r := tg.resolver(nil)
	samples := sampleThread(t, tg, r, tg.pid, 50)
	inLibc, good := 0, 0
	for i, u := range samples {
		m := r.lookup(u.pcs[0])
		if m == nil || filepath.Base(m.path) != filepath.Base(libcPath(t)) {
			continue
		}
		inLibc++
		if inLibc == 1 {
			t.Logf("stop %d: %s (complete=%v)", i, chain(u.names), u.complete)
		}
		if hasSeq(u.names, "write_many", "main") && u.complete {
			good++
		} else {
			t.Errorf("stop %d: %s (complete=%v)", i, chain(u.names), u.complete)
		}
	}
	t.Logf("%d/%d stops in libc, %d unwound to write_many <- main", inLibc, len(samples), good)
	if inLibc < 10 {
		t.Errorf("only %d stops in libc", inLibc)
	}
}

// A deep chain mixing frameless functions, functions that use rbp as a
// general register (so the frame-pointer chain is junk) and an rbp-based CFA.
func TestUnwindDeep(t *testing.T) {
	needPtrace(t)
	bin := testutil.C(t, "deep", []string{"deep.c"}, "-O2", "-fomit-frame-pointer")
	tg := startTarget(t, 50*time.Millisecond, bin, "100000")
	r := tg.resolver(nil)
	samples := sampleThread(t, tg, r, tg.pid, 30)
	want := []string{"spin", "level_8", "level_7", "level_6", "level_5", "level_4", "level_3", "level_2", "level_1", "main"}
	n := 0
	for i, u := range samples {
		if u.names[0] != "spin" {
			continue
		}
		n++
		if !hasSeq(u.names, want...) || !u.complete {
			t.Errorf("stop %d: %s (complete=%v)", i, chain(u.names), u.complete)
			continue
		} else if n == 1 {
			t.Logf("stop %d: %s", i, chain(u.names))
		}
		checkCuts(t, i, u, r)
	}
	if n < 20 {
		t.Errorf("only %d/%d stops in spin", n, len(samples))
	}
}

// checkCuts unwinds the stop u of deep.c with its stack copy cut to every
// multiple of 8 bytes: the chain is a prefix of the whole one, and an
// unwinding that stops short says Cut, except where it stops for want of a
// return address that level_4 (the one rbp-based CFA) keeps beyond the
// copy: there the frame-pointer chain carries on, so it says Stopped; and
// where it stops in main, which says Complete: what lies beyond is the C
// library's start code.
func checkCuts(t *testing.T, i int, u unwound, r *procResolver) {
	t.Helper()
	var buf []uint64
	stops := map[Stop]int{}
	endCuts := 0
	for n := 8; n < len(u.stack.Data); n += 8 {
		short := u.stack
		short.Data = short.Data[:n]
		pcs, stop, need := UnwindReach(buf, u.regs, short, r, 64)
		buf = pcs
		stops[stop]++
		if stop == Complete && !need.Outermost {
			// Cut in or beyond main: a copy up to what it read ends the
			// same way.
			if need.Top <= short.SP || need.Top-short.SP > uint64(n) {
				t.Fatalf("stop %d, %d bytes: complete in main, need %+v from %#x", i, n, need, short.SP)
			}
			again := short
			again.Data = again.Data[:need.Top-short.SP]
			pcs2, stop2, need2 := UnwindReach(nil, u.regs, again, r, 64)
			if !slices.Equal(pcs2, pcs) || stop2 != Complete || need2.Outermost || need2.Top != need.Top {
				t.Fatalf("stop %d, %d bytes: complete in main with %s, %+v; %d bytes: %s, %v, %+v", i, n, chain(r.symbolize(pcs)), need, need.Top-short.SP, chain(r.symbolize(pcs2)), stop2, need2)
			}
			endCuts++
		}
		if len(pcs) > len(u.pcs) || !slices.Equal(pcs, u.pcs[:len(pcs)]) {
			t.Fatalf("stop %d, %d bytes: %s is not a prefix of %s", i, n, chain(r.symbolize(pcs)), chain(u.names))
		}
		last := r.symbolize(pcs[len(pcs)-1:])[0]
		switch {
		case stop == Complete:
			// The whole chain, or the program's: main's caller (libc's
			// start code), or its caller, beyond the copy.
			if len(pcs) != len(u.pcs) && !slices.ContainsFunc(r.symbolize(pcs), func(n string) bool { return matchName(n, "main") }) {
				t.Fatalf("stop %d, %d bytes: complete with %d of %d frames, ending in %s", i, n, len(pcs), len(u.pcs), last)
			}
		case stop == Stopped && !matchName(last, "level_4"):
			t.Fatalf("stop %d, %d bytes: stopped in %s without a cut (%s)", i, n, last, chain(r.symbolize(pcs)))
		case stop == Cut && matchName(last, "level_4"):
			t.Fatalf("stop %d, %d bytes: cut in level_4, whose CFA is rbp-based", i, n)
		}
	}
	if stops[Cut] == 0 || stops[Stopped] == 0 || endCuts == 0 {
		t.Errorf("stop %d: cuts gave %v, %d complete in main, want some Cut, some Stopped and some complete in main", i, stops, endCuts)
	}
	// The copy up to what the whole copy's unwind needed unwinds to the
	// same outermost frame; 8 bytes less does not, and says it wanted more.
	_, stop, need := UnwindReach(nil, u.regs, u.stack, r, 64)
	if stop != Complete || !need.Outermost || need.Top <= u.stack.SP || need.Top-u.stack.SP > uint64(len(u.stack.Data)) || need.Over {
		t.Fatalf("stop %d: the whole copy's unwind: %v, need %+v from %#x", i, stop, need, u.stack.SP)
	}
	for _, n := range []uint64{need.Top - u.stack.SP, need.Top - u.stack.SP - 8} {
		short := u.stack
		short.Data = short.Data[:n]
		pcs, stop, sneed := UnwindReach(nil, u.regs, short, r, 64)
		names := r.symbolize(pcs)
		whole := stop == Complete && sneed.Outermost && slices.Equal(pcs, u.pcs) && sneed.Top == need.Top && !sneed.Over
		if n == need.Top-u.stack.SP && !whole || n < need.Top-u.stack.SP && (whole || !sneed.Over || sneed.Outermost) {
			t.Fatalf("stop %d: %d bytes of %d needed: %s, %v, %+v", i, n, need.Top-u.stack.SP, chain(names), stop, sneed)
		}
	}
}

// goCuts unwinds a stop in spinBeta <- bigFrame with the copy cut at every
// 64 bytes: Go's frames keep frame pointers though their CFA is rsp-based,
// so a copy ending inside bigFrame's 4 KiB frame never says Cut.
func goCuts(t *testing.T, s sample, pcs []uint64, names []string, r *procResolver) {
	t.Helper()
	if !hasSeq(names, "main.spinBeta", "main.bigFrame") {
		t.Errorf("spinBeta's chain: %s", chain(names))
		return
	}
	stopped := 0
	for n := 64; n < len(s.stack.Data); n += 64 {
		short := s.stack
		short.Data = short.Data[:n]
		got, stop := UnwindTo(nil, s.regs, short, r, 64)
		if stop == Cut {
			t.Fatalf("%d bytes: Cut in %s (a Go frame keeps its frame pointer)", n, chain(r.symbolize(got)))
		}
		if stop == Stopped && len(got) < len(pcs) {
			stopped++
		}
	}
	if stopped == 0 {
		t.Errorf("no cut copy stopped short of %s", chain(names))
	}
}

// Go keeps frame pointers and ships CFI in a compressed .debug_frame.
func TestUnwindGo(t *testing.T) {
	needPtrace(t)
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"debug_frame", nil},
		{"no-cfi", []string{"-ldflags=-w"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := testutil.Go(t, "gospin", tc.flags...)
			cache := &TableCache{}
			_, cfiErr := cache.Get(bin)
			tg := startTarget(t, 100*time.Millisecond, bin, "100000000000")
			r := tg.resolver(cache)
			found, good, betas := 0, 0, 0
			for round := 0; round < 100 && (found < 10 || cfiErr == nil && betas == 0); round++ {
				time.Sleep(time.Duration(1+rand.Intn(5)) * time.Millisecond)
				for _, tid := range tg.threads() {
					if err := tg.stop(tid); err != nil {
						t.Logf("thread %d: %v", tid, err)
						continue
					}
					s := tg.capture(tid, copySize)
					tg.resume(tid)
					pcs, complete := Unwind(s.regs, s.stack, r, 64)
					names := r.symbolize(pcs)
					if len(names) > 0 && names[0] == "main.spinBeta" && cfiErr == nil {
						goCuts(t, s, pcs, names, r)
						betas++
					}
					if len(names) == 0 || names[0] != "main.spinAlpha" {
						continue
					}
					found++
					// Go's ABI has no callee-saved registers: the
					// caller of a Go function knows only its stack and
					// frame pointers and return address.
					if frames, _ := UnwindFrames(s.regs, s.stack, r, 64); cfiErr == nil && len(frames) > 1 && frames[1].Valid&^goSaved != 0 {
						t.Errorf("tid %d: %s's caller keeps registers %#x of Go code", tid, names[0], frames[1].Valid&^goSaved)
					}
					// With CFI the chain is exact. Without it, the one
					// frame-pointer step from a frameless spinAlpha yields its
					// caller's caller, so only ask for a Go chain of 2+.
					ok := hasSeq(names, "main.spinAlpha", "main.main.func1")
					if cfiErr != nil {
						m := Merge(pcs, s.fp, complete)
						mn := r.symbolize(m)
						ok = len(mn) >= 2 && mn[0] == "main.spinAlpha"
					}
					if ok {
						good++
					}
					if found <= 2 || !ok {
						t.Logf("tid %d: %s (complete=%v, cfi err %v; fp %s)", tid, chain(names), complete, cfiErr, chain(r.symbolize(s.fp)))
					}
				}
			}
			if found == 0 {
				t.Fatal("never stopped in main.spinAlpha")
			}
			if cfiErr == nil && betas == 0 {
				t.Error("never stopped in main.spinBeta (under bigFrame)")
			}
			if good < found {
				t.Errorf("%d/%d stops in main.spinAlpha unwound as expected", good, found)
			}
		})
	}
}

// A stop inside a signal handler unwinds through the kernel's signal frame
// (glibc's __restore_rt, an 'S' CIE with expression rules) back to the
// interrupted function, whose PC is exact rather than a return address.
func TestUnwindSignalFrame(t *testing.T) {
	needPtrace(t)
	bin := testutil.C(t, "sighandler", []string{"sighandler.c"}, "-O2", "-fomit-frame-pointer")
	tg := startTarget(t, 100*time.Millisecond, bin)
	r := tg.resolver(nil)
	samples := sampleThread(t, tg, r, tg.pid, 20)
	libcSyms := haveLibcDebugSyms(t)
	n := 0
	for i, u := range samples {
		if u.names[0] != "in_handler" {
			continue
		}
		n++
		want := []string{"in_handler", "handler", "__restore_rt", "interrupted", "main"}
		if !libcSyms {
			want = []string{"interrupted", "main"}
		}
		ok := hasSeq(u.names, want...) && u.complete
		if len(u.names) < 4 || u.names[1] != "handler" {
			ok = false
		}
		if !ok {
			t.Errorf("stop %d: %s (complete=%v)", i, chain(u.names), u.complete)
		} else if n == 1 {
			t.Logf("stop %d: %s", i, chain(u.names))
		}
	}
	if n < len(samples)*3/4 {
		t.Errorf("only %d/%d stops in in_handler", n, len(samples))
	}
}

type resolverFunc func(pc uint64) (Module, bool)

func (f resolverFunc) Resolve(pc uint64) (Module, bool) { return f(pc) }

func putWords(words ...uint64) []byte {
	b := make([]byte, 8*len(words))
	for i, w := range words {
		for j := 0; j < 8; j++ {
			b[8*i+j] = byte(w >> (8 * j))
		}
	}
	return b
}

// The PLT's CFA expression: rsp+8 + ((rip&15) >= 11 ? 8 : 0).
func TestUnwindPLTExpression(t *testing.T) {
	tab, err := LoadTable(libcPath(t))
	if err != nil {
		t.Fatal(err)
	}
	var plt *fde
	var rem rememberStack
	for i := range tab.fdes {
		f := &tab.fdes[i]
		var rw row
		if f.end-f.start >= 48 && rowAt(f, f.start+32, &rw, &rem) && rw.cfa.kind == cfaExpr {
			plt = f
			break
		}
	}
	if plt == nil {
		t.Skip("libc has no FDE with a CFA expression")
	}
	res := resolverFunc(func(pc uint64) (Module, bool) {
		if tab.Covers(pc) {
			return Module{Table: tab}, true
		}
		return Module{}, false
	})
	const sp = 0x7ff0_0000_0000
	stack := StackCopy{SP: sp, Data: putWords(0xaaaa, 0xbbbb, 0)}
	for pc := plt.start + 16; pc < plt.start+48; pc++ {
		var regs Regs
		regs[regRSP] = sp
		regs[regRA] = pc
		pcs, _ := Unwind(regs, stack, res, 8)
		want := uint64(0xaaaa)
		if pc&15 >= 11 {
			want = 0xbbbb
		}
		if len(pcs) < 2 || pcs[1] != want {
			t.Errorf("pc %#x (rip&15=%d): got %x, want return address %#x", pc, pc&15, pcs, want)
		}
	}
}

// glibc's vfork pops its return address into rdi before the system call
// (the child runs on the parent's stack) and pushes it back after: in
// between, its CFI has the CFA at rsp itself and the return address in
// rdi. The unwind takes it from rdi when the sample carries it (a chain
// memos may not reuse); without rdi it stops with Need.Unknown: the frame
// keeps no frame pointer, and the kernel's chain skips its caller.
func TestUnwindVforkReturnInRegister(t *testing.T) {
	path := libcPath(t)
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	syms, err := f.DynamicSymbols()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	var vfork uint64
	for _, s := range syms {
		if s.Name == "vfork" && elf.ST_TYPE(s.Info) == elf.STT_FUNC {
			vfork = s.Value
		}
	}
	tab, err := LoadTable(path)
	if err != nil {
		t.Fatal(err)
	}
	fd := tab.find(vfork)
	if vfork == 0 || fd == nil {
		t.Fatalf("%s: no vfork with an FDE", path)
	}
	// The row that keeps the return address in a register.
	var pc uint64
	var rem rememberStack
	for a := fd.start; a < fd.end && pc == 0; a++ {
		var rw row
		if rowAt(fd, a, &rw, &rem) && rw.regs[regRA].kind == ruleRegister && rw.regs[regRA].reg == 5 {
			pc = a
		}
	}
	if pc == 0 {
		t.Fatalf("%s: vfork's CFI keeps its return address in no register", path)
	}
	res := resolverFunc(func(a uint64) (Module, bool) {
		if tab.Covers(a) {
			return Module{Table: tab}, true
		}
		return Module{}, false
	})
	const sp, ra = 0x7ff0_0000_0000, 0xaaaa
	var regs Regs
	regs[regRSP], regs[regRA], regs[5] = sp, pc, ra
	stack := StackCopy{SP: sp, Data: putWords(0xbbbb, 0xcccc)}
	var deps Deps
	pcs, _, _ := UnwindDeps(nil, regs, AllRegs, stack, res, 2, &deps)
	if len(pcs) != 2 || pcs[1] != ra {
		t.Errorf("vfork at %#x with rdi: %x, want its return address %#x second", pc, pcs, ra)
	}
	// The chain depends on rdi, which a memo keyed by IP and SP does
	// not check: it is not to be reused.
	if !deps.Unsure {
		t.Errorf("vfork at %#x: the chain from rdi is reusable, deps %+v", pc, deps)
	}
	pcs, stop, need := UnwindKnown(nil, regs, 1<<regRSP|1<<regRBP|1<<regRA|1<<3, stack, res, 2)
	if len(pcs) != 1 || stop != Stopped || !need.Unknown {
		t.Errorf("vfork at %#x without rdi: %x, stop %v, need %+v; want a stop for want of a register", pc, pcs, stop, need)
	}
}

// Frame-pointer steps with a self-referencing rbp, or a copy too short for
// the return address, stop without looping.
func TestUnwindGuards(t *testing.T) {
	const sp = 0x7ff0_0000_0000
	var regs Regs
	regs[regRSP] = sp
	regs[regRBP] = sp
	regs[regRA] = 0x1234
	// [rbp] = rbp: the second step would have the same CFA.
	stack := StackCopy{SP: sp, Data: putWords(sp, 0x5678, 0)}
	pcs, complete := Unwind(regs, stack, nil, 100)
	if complete || len(pcs) != 2 || pcs[1] != 0x5678 {
		t.Errorf("self loop: %x complete=%v", pcs, complete)
	}
	// rbp outside the copy: no step.
	regs[regRBP] = sp - 64
	if pcs, complete := Unwind(regs, stack, nil, 100); complete || len(pcs) != 1 {
		t.Errorf("rbp below copy: %x complete=%v", pcs, complete)
	}
	// A zero return address ends the chain.
	regs[regRBP] = sp
	stack.Data = putWords(sp+16, 0x5678, 0, 0)
	if pcs, complete := Unwind(regs, stack, nil, 100); !complete || len(pcs) != 2 {
		t.Errorf("zero return address: %x complete=%v", pcs, complete)
	}
	// max bounds the result.
	if pcs, _ := Unwind(regs, stack, nil, 1); len(pcs) != 1 {
		t.Errorf("max 1: %x", pcs)
	}
	if pcs, _ := Unwind(regs, stack, nil, 0); len(pcs) != 0 {
		t.Errorf("max 0: %x", pcs)
	}
}

// The dynamic loader's _start has no FDE: a frame there with rbp 0 (the
// kernel's value at exec) is the outermost, complete; with rbp set the
// frame-pointer step is tried as anywhere without CFI.
func TestUnwindLoaderStart(t *testing.T) {
	path := ""
	for _, p := range []string{"/lib64/ld-linux-x86-64.so.2", "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"} {
		if _, err := os.Stat(p); err == nil {
			path = p
			break
		}
	}
	testutil.Need(t, path != "", "no ld-linux-x86-64.so.2 found")
	tab, err := LoadTable(path)
	if err != nil {
		t.Fatal(err)
	}
	if tab.start == 0 || tab.startEnd <= tab.start {
		t.Fatalf("%s: entry code not found (start %#x, end %#x)", path, tab.start, tab.startEnd)
	}
	const other = 0x7777_0000 // a PC in no module
	res := resolverFunc(func(pc uint64) (Module, bool) {
		if pc >= other {
			return Module{}, false
		}
		return Module{Table: tab}, true
	})
	const sp = 0x7ff0_0000_0000
	// Frame 0 in _start itself (the call's own instruction).
	var regs Regs
	regs[regRSP] = sp
	regs[regRA] = tab.start + 3
	stack := StackCopy{SP: sp, Data: putWords(0, 0x1234, 0)}
	if pcs, stop := UnwindTo(nil, regs, stack, res, 16); stop != Complete || len(pcs) != 1 {
		t.Errorf("rbp 0 at _start: %x %v, want complete at _start", pcs, stop)
	}
	// _start as a caller: the return address after its call.
	regs[regRA] = other
	regs[regRBP] = sp
	stack.Data = putWords(0, tab.start+8, 0)
	pcs, stop, need := UnwindReach(nil, regs, stack, res, 16)
	if stop != Complete || len(pcs) != 2 || pcs[1] != tab.start+8 || !need.Outermost {
		t.Errorf("rbp 0 in _start's frame: %x %v %+v, want complete, outermost at _start", pcs, stop, need)
	}
	// rbp set: not the outermost frame, a frame-pointer step.
	stack.Data = putWords(sp+16, tab.start+8, 0, other+8)
	if pcs, stop := UnwindTo(nil, regs, stack, res, 16); stop == Complete || len(pcs) != 3 || pcs[2] != other+8 {
		t.Errorf("rbp set in _start's frame: %x %v, want a frame-pointer step", pcs, stop)
	}
	// No module: no rule.
	regs[regRA] = other
	regs[regRBP] = 0
	if pcs, stop := UnwindTo(nil, regs, stack, res, 16); stop == Complete || len(pcs) != 1 {
		t.Errorf("rbp 0 without a module: %x %v, want stopped", pcs, stop)
	}
}

// A page of the copy that was not in memory reads as past the copy's end:
// its zeros are not the thread's.
func TestStackCopyHoles(t *testing.T) {
	const sp = 0x7ffc0000_0ff8 // 8 bytes below a page boundary
	s := StackCopy{SP: sp, Data: make([]byte, 8+4096+16), Holes: 1 << 1}
	s.Data[0] = 7
	s.Data[8+4096] = 9
	if v, ok := s.read8(sp); !ok || v != 7 {
		t.Errorf("first page: %d, %v; want 7", v, ok)
	}
	if _, ok := s.read8(sp + 8); ok || !s.over {
		t.Errorf("the missing page read (over %v)", s.over)
	}
	if _, ok := s.read(sp+4, 8); ok {
		t.Error("a read across into the missing page succeeded")
	}
	if v, ok := s.read(sp+8+4096, 4); !ok || v != 9 {
		t.Errorf("page after the hole: %d, %v; want 9", v, ok)
	}
}
