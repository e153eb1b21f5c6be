package unwind

import "github.com/culprit-dev/culprit/internal/elfx"

import "encoding/binary"

// Regs are user registers indexed by DWARF x86-64 register number: 0 rax,
// 1 rdx, 2 rcx, 3 rbx, 4 rsi, 5 rdi, 6 rbp, 7 rsp, 8-15 r8-r15, and 16 the
// return address column, which holds rip.
type Regs [17]uint64

// StackCopy is a copy of user memory starting at address SP.
type StackCopy struct {
	SP   uint64
	Data []byte
	// Holes are the pages of Data that were not in memory when it was
	// copied (bit i: the i-th 4 KiB page from the one holding SP): a
	// read there fails as one past the copy's end does.
	Holes uint8
	// Returns, when not nil, gives back the return addresses that return
	// probes (uretprobes) replaced with their trampoline on this stack.
	Returns *Returns
	hi      uint64 // the end of the highest read so far
	over    bool   // a read fell past the copy's end
}

// Returns are the real return addresses of the calls in flight whose
// return address on the stack is a return probe's trampoline. The kernel
// keeps one return instance per such call, the innermost first, and the
// stack holds the trampoline's address in each call's return address
// slot, so the n-th trampoline an unwind meets from the innermost frame
// (frame 0 counted when the sample stopped in the trampoline) returns to
// Addrs[n]. The unwinder continues there as if the stack held it;
// trampolines beyond Addrs stay as they are.
type Returns struct {
	Tramp uint64   // the trampoline's address: the first byte of [uprobes]
	Addrs []uint64 // the real return addresses, innermost first
}

// read8 reads the little-endian word at addr from the copy.
func (s *StackCopy) read8(addr uint64) (uint64, bool) {
	off := addr - s.SP
	n := uint64(len(s.Data))
	if addr < s.SP || n < 8 || off > n-8 || s.inHole(addr, 8) {
		s.over = s.over || addr >= s.SP
		return 0, false
	}
	s.hi = max(s.hi, addr+8)
	return binary.LittleEndian.Uint64(s.Data[off:]), true
}

// inHole says whether any of the k bytes at addr (within the copy) lie
// on a page that was not copied.
func (s *StackCopy) inHole(addr uint64, k int) bool {
	if s.Holes == 0 || k <= 0 {
		return false
	}
	first := addr>>12 - s.SP>>12
	last := (addr+uint64(k)-1)>>12 - s.SP>>12
	for p := first; p <= last; p++ {
		if p < 8 && s.Holes>>p&1 != 0 {
			return true
		}
	}
	return false
}

// read reads the k <= 8 little-endian bytes at addr from the copy.
func (s *StackCopy) read(addr uint64, k int) (uint64, bool) {
	if k == 8 {
		return s.read8(addr)
	}
	off := addr - s.SP
	n := uint64(len(s.Data))
	if addr < s.SP || k < 0 || k > 8 || n < uint64(k) || off > n-uint64(k) || s.inHole(addr, k) {
		s.over = s.over || addr >= s.SP && k > 0
		return 0, false
	}
	s.hi = max(s.hi, addr+uint64(k))
	var v uint64
	for i := k - 1; i >= 0; i-- {
		v = v<<8 | uint64(s.Data[off+uint64(i)])
	}
	return v, true
}

// Module says how to reach the CFI of the object mapped at a PC: the ELF
// virtual address is pc - Bias (Bias = mapping start - mapping file offset +
// segment p_offset - p_vaddr, with wrapping arithmetic; see Table.Bias).
type Module struct {
	Table *Table
	Bias  uint64
}

// Resolver finds the module mapped at a PC. Resolve is called once per frame
// and should be cheap (a binary search over the mappings, say).
type Resolver interface {
	Resolve(pc uint64) (Module, bool)
}

// Register sets: callee-saved registers keep their values across calls
// unless CFI says otherwise; the others are unknown in callers.
// A Go function (Go's ABI) keeps only the stack and frame pointers and
// the return address for its caller: after a sample in one, a register
// of its caller holds the Go function's value, not the caller's (a
// goroutine stopped in runtime.asyncPreempt has its caller's registers
// on the stack, not in them).
const (
	allRegs     uint32 = 1<<numRegs - 1
	calleeSaved uint32 = 1<<3 | 1<<regRBP | 1<<regRSP | 1<<12 | 1<<13 | 1<<14 | 1<<15 | 1<<regRA
	goSaved     uint32 = 1<<regRBP | 1<<regRSP | 1<<regRA
)

// unwinder is the per-call state; it lives on Unwind's stack.
type unwinder struct {
	regs  Regs
	valid uint32 // bit i: regs[i] is known
	stack StackCopy
	row   row
	rem   rememberStack
	cut   bool // stopped: see Cut
	entry bool // the frame being unwound is the program's main (Table.entry)
	// main was reached: frames beyond are the C library's start code, not
	// the program's
	inMain bool
	// endCut: the unwind ended complete because the copy was cut in or
	// beyond main's frame, short of the outermost frame
	endCut bool
	// main is 1 + the index in the chain of main's frame, 0 before it
	main int
	// known are the registers the sample carries (0: all of them)
	known uint32
	// unknown: stopped in a frame that keeps no frame pointer, whose CFA
	// rule names a register the sample did not carry (Need.Unknown)
	unknown bool
	// dt follows what the chain depends on (UnwindDeps) when track
	dt    depTracker
	track bool
}

// use marks register reg's value as one the chain depends on.
func (u *unwinder) use(reg int) {
	if u.track {
		u.dt.use(reg)
	}
}

// unsure says the chain depends on something Deps do not follow.
func (u *unwinder) unsure() {
	if u.track {
		u.dt.deps.Unsure = true
	}
}

// readSaved reads the word at addr into a register, and says where its
// value came from (used: it decides the chain, a return address).
func (u *unwinder) readSaved(addr uint64, used bool) (uint64, bool, int32) {
	v, ok := u.stack.read8(addr)
	if !ok || !u.track {
		return v, ok, srcDerived
	}
	return v, ok, u.dt.read(addr, v, used)
}

type stepResult uint8

const (
	stepOK   stepResult = iota
	stepStop            // cannot continue: chain is incomplete
	stepEnd             // outermost frame reached: chain is complete
)

// Unwind unwinds the stack copy starting from regs and returns the PCs,
// innermost first: pcs[0] = regs[16] (the sampled IP), then return
// addresses. At most max PCs are returned. complete is true when the
// outermost frame was reached: CFI marks the return address undefined (as in
// _start and clone), or the return address is 0, or the program's outermost
// frame: the copy ends in main's frame (Table's entry).
//
// Each frame is unwound with the CFI of the module that r resolves for its PC
// (PC-1 for return addresses, which point after the call; the exact PC after
// a signal frame). When no module or FDE covers the PC, one frame-pointer
// step is tried (CFA = rbp+16, return address [rbp+8], rbp = [rbp]) if rbp
// points into the copy. Unwinding stops, incomplete, when a needed read
// falls outside the copy, a rule is unsupported, a needed register is
// unknown, or the CFA does not grow strictly from frame to frame.
func Unwind(regs Regs, stack StackCopy, r Resolver, max int) (pcs []uint64, complete bool) {
	var u unwinder
	return u.run(nil, regs, stack, r, max, nil)
}

// Stop says why unwinding ended.
type Stop uint8

const (
	// Stopped: a rule, register or FDE was missing, the CFA did not grow,
	// max frames were reached, or a read fell outside the copy in a frame
	// that keeps a frame pointer (which leads on to its callers).
	Stopped Stop = iota
	// Complete: the outermost frame was reached, or the program's: the
	// copy ends in the frame of an executable's main, whose caller is the
	// C library's start code.
	Complete
	// Cut: the return address of a frame that keeps no frame pointer (a
	// frameless leaf, libc and other code built without frame pointers:
	// neither is its CFA rbp-based nor does rbp point just below its return
	// address, as in Go's frames) lies beyond the end of the stack copy. A
	// frame-pointer chain sampled with the copy does not reach that
	// frame's caller either, so callers are missing: a larger copy would
	// have found them.
	Cut
)

// UnwindTo is Unwind writing the PCs into buf's storage (reallocated only if
// too small), for a caller that unwinds sample after sample; it also says
// why unwinding ended.
func UnwindTo(buf []uint64, regs Regs, stack StackCopy, r Resolver, max int) (pcs []uint64, stop Stop) {
	pcs, stop, _ = UnwindReach(buf, regs, stack, r, max)
	return pcs, stop
}

// Need is what of the stack copy an unwind needed (UnwindReach).
type Need struct {
	// Top is the end of the highest word the unwind read when it was
	// complete, 0 otherwise: a copy of the same thread's stack up to Top,
	// from a stack pointer at or below this one, unwinds as far while the
	// outer frames stay.
	Top uint64
	// Outermost says the unwind reached the thread's outermost frame (the
	// return address undefined, as in _start and clone, or 0); else a
	// complete unwind ended cut in or beyond main's frame, where the C
	// library's start code lies beyond the copy.
	Outermost bool
	// Over says a read fell past the copy's end: a larger copy would have
	// let the unwind go on.
	Over bool
	// InMain says the unwind reached the frame of the executable's main:
	// whatever it stopped short of is the C library's start code.
	InMain bool
	// Unknown says the unwind stopped in a frame whose CFA rule names a
	// register other than rbp that the unwind does not know (one the
	// sample did not carry, UnwindKnown, or a caller-saved one in an
	// outer frame): the frame keeps no frame pointer, so a frame-pointer
	// chain sampled with the copy skips that frame's caller. Callers are
	// missing.
	Unknown bool
	// Main is the index in the chain of main's frame when InMain: the
	// frames after it are main's callers, the C library's start code,
	// which stay the same for the rest of the thread's life.
	Main int
}

// UnwindReach is UnwindTo that also says what of the copy the unwind
// needed.
func UnwindReach(buf []uint64, regs Regs, stack StackCopy, r Resolver, max int) (pcs []uint64, stop Stop, need Need) {
	return UnwindKnown(buf, regs, AllRegs, stack, r, max)
}

// AllRegs are all of Regs, for UnwindKnown: a sample that carries every
// register.
const AllRegs = allRegs

// UnwindKnown is UnwindReach for a sample that carries only some of the
// registers: known has bit i set when regs[i] is the thread's (DWARF
// numbering, as Regs; a sampler that takes rbp, rsp and rip alone, say).
// A rule that needs another register of the innermost frame stops the
// unwind there (Need.Unknown says when that loses callers), where a zero
// taken for the register's value would compute a wrong CFA.
func UnwindKnown(buf []uint64, regs Regs, known uint32, stack StackCopy, r Resolver, max int) (pcs []uint64, stop Stop, need Need) {
	return unwindKnown(buf, regs, known, stack, r, max, nil)
}

func unwindKnown(buf []uint64, regs Regs, known uint32, stack StackCopy, r Resolver, max int, deps *Deps) (pcs []uint64, stop Stop, need Need) {
	u := unwinder{known: known & allRegs}
	if deps != nil {
		u.track = true
		u.dt.reset(deps)
	}
	stack.hi, stack.over = 0, false
	pcs, complete := u.run(buf, regs, stack, r, max, nil)
	if u.track {
		u.dt.finish()
	}
	if complete {
		need.Top, need.Outermost = u.stack.hi, !u.endCut
	}
	need.Over, need.InMain, need.Unknown = u.stack.over, u.inMain, u.unknown && !complete
	if u.inMain {
		need.Main = u.main - 1
	}
	switch {
	case complete:
		return pcs, Complete, need
	case u.cut:
		return pcs, Cut, need
	}
	return pcs, Stopped, need
}

// Frame is the state of one unwound frame: what a debugger needs to read the
// frame's variables.
type Frame struct {
	PC    uint64 // the frame's PC (a return address for callers)
	Exact bool   // PC is the exact instruction (frame 0, or after a signal frame), not a return address
	Regs  Regs   // registers of the frame, as CFI restores them
	Valid uint32 // bit i set: Regs[i] is known in this frame
	CFA   uint64 // canonical frame address; 0 when it could not be computed (the last frame)
}

// UnwindFrames unwinds like Unwind and returns every frame's registers and
// CFA, innermost first.
func UnwindFrames(regs Regs, stack StackCopy, r Resolver, max int) (frames []Frame, complete bool) {
	var u unwinder
	_, complete = u.run(nil, regs, stack, r, max, &frames)
	return frames, complete
}

func (u *unwinder) run(buf []uint64, regs Regs, stack StackCopy, r Resolver, max int, frames *[]Frame) (pcs []uint64, complete bool) {
	if max <= 0 {
		return nil, false
	}
	if buf == nil {
		buf = make([]uint64, 0, min(max, 128))
	}
	known := u.known
	if known == 0 {
		known = allRegs
	}
	pcs = append(buf[:0], regs[regRA])
	if frames != nil {
		*frames = append((*frames)[:0], Frame{PC: regs[regRA], Exact: true, Regs: regs, Valid: known})
	}
	if max == 1 {
		return pcs, false
	}
	u.regs, u.valid, u.stack = regs, known, stack
	rt := stack.Returns
	tramps := 0 // trampolines met (Returns)
	if rt != nil && regs[regRA] == rt.Tramp {
		tramps++
		u.unsure()
	}
	exact := true        // the PC is not a return address
	prevCFA := uint64(0) // CFA of the previous frame
	for len(pcs) < max {
		pc := u.regs[regRA]
		lookup := pc
		if !exact {
			lookup = pc - 1
		}
		var f *fde
		var tab *Table
		var bias uint64
		u.entry = false
		start := false // in the object's entry code, which no FDE covers
		if r != nil {
			if m, ok := r.Resolve(lookup); ok && m.Table != nil {
				bias, tab = m.Bias, m.Table
				f = m.Table.find(lookup - bias)
				u.entry = f != nil && m.Table.entry != 0 && f.start == m.Table.entry
				start = f == nil && m.Table.atStart(lookup-bias)
			}
		}
		if u.entry && !u.inMain {
			u.main = len(pcs)
		}
		u.inMain = u.inMain || u.entry
		if start {
			u.use(regRBP)
		}
		if start && u.valid&(1<<regRBP) != 0 && u.regs[regRBP] == 0 {
			// The entry point of an object (the dynamic loader's
			// _start), with rbp 0, the x86-64 ABI's mark of the
			// deepest frame, which the kernel sets at exec: the
			// outermost frame. A frame-pointer step would read the
			// process's argument count as a return address.
			return pcs, true
		}
		var res stepResult
		var cfa uint64
		if f != nil {
			res, cfa = u.stepCFI(tab, f, lookup-bias, prevCFA)
			exact = f.cie.signal
		} else {
			res, cfa = u.stepFP(prevCFA)
			exact = false
		}
		switch res {
		case stepEnd:
			return pcs, true
		case stepStop:
			return pcs, false
		}
		prevCFA = cfa
		if frames != nil {
			(*frames)[len(*frames)-1].CFA = cfa
		}
		if u.regs[regRA] == 0 {
			return pcs, true
		}
		if rt != nil && u.regs[regRA] == rt.Tramp {
			u.unsure()
			if tramps < len(rt.Addrs) {
				u.regs[regRA] = rt.Addrs[tramps]
			}
			tramps++
		}
		pcs = append(pcs, u.regs[regRA])
		if frames != nil {
			*frames = append(*frames, Frame{PC: u.regs[regRA], Exact: exact, Regs: u.regs, Valid: u.valid})
		}
	}
	return pcs, false
}

// keepsFP reports whether the frame whose CFA is cfa keeps a frame pointer:
// rbp holds the address where the function pushed its caller's rbp, just
// below the return address. GCC's -fno-omit-frame-pointer code says so in
// its CFI (an rbp-based CFA); Go's does not (its CFA is rsp-based) but its
// prologue builds the same frame.
func (u *unwinder) keepsFP(cfa uint64) bool {
	if u.valid&(1<<regRBP) == 0 {
		return false
	}
	u.use(regRBP)
	return u.regs[regRBP] == cfa-16
}

// raBeyond reports whether the return address, saved by rule ru in the
// frame whose CFA is cfa, lies past the end of the stack copy.
func (u *unwinder) raBeyond(ru *rule, cfa uint64) bool {
	addr := cfa - 8
	switch ru.kind {
	case ruleUnspec:
	case ruleOffset:
		addr = cfa + uint64(ru.off)
	default:
		return false
	}
	n := uint64(len(u.stack.Data))
	return addr >= u.stack.SP && (n < 8 || addr-u.stack.SP > n-8)
}

// stepFP unwinds one frame through the frame pointer.
func (u *unwinder) stepFP(prevCFA uint64) (stepResult, uint64) {
	if u.valid&(1<<regRBP) == 0 {
		return stepStop, 0
	}
	u.use(regRBP)
	rbp := u.regs[regRBP]
	cfa := rbp + 16
	if cfa < rbp || cfa <= u.regs[regRSP] || cfa <= prevCFA {
		return stepStop, 0
	}
	ra, ok1, _ := u.readSaved(rbp+8, true)
	saved, ok2, src := u.readSaved(rbp, false)
	if !ok1 || !ok2 {
		return stepStop, 0
	}
	u.dt.src[regRBP] = src
	u.regs[regRBP] = saved
	u.regs[regRSP] = cfa
	u.regs[regRA] = ra
	u.valid &= calleeSaved
	return stepOK, cfa
}

// stepCFI unwinds one frame with the FDE f of table t (its rows cached);
// addr is the ELF address to look up the row for.
func (u *unwinder) stepCFI(t *Table, f *fde, addr uint64, prevCFA uint64) (stepResult, uint64) {
	rw := &u.row
	if !t.rowAt(f, addr, rw, &u.rem) {
		return stepStop, 0
	}
	if rw.regs[regRA].kind == ruleUndefined {
		return stepEnd, 0
	}
	sec := f.cie.sec
	var cfa uint64
	switch rw.cfa.kind {
	case cfaRegOff:
		if u.valid&(1<<rw.cfa.reg) == 0 {
			// A register the sample did not carry (or CFI did not
			// restore): a CFA kept in anything but rbp is a frame
			// without a frame pointer, whose caller a frame-pointer
			// chain skips.
			u.unknown = rw.cfa.reg != regRBP
			return stepStop, 0
		}
		u.use(int(rw.cfa.reg))
		cfa = u.regs[rw.cfa.reg] + uint64(rw.cfa.off)
	case cfaExpr:
		u.unsure()
		v, ok := u.eval(sec[rw.cfa.eoff:rw.cfa.eoff+uint32(rw.cfa.elen)], 0, false)
		if !ok {
			return stepStop, 0
		}
		cfa = v
	default:
		return stepStop, 0
	}
	// A caller's CFA lies above the stack pointer, which its call's
	// return address was pushed below; only a frame whose return address
	// never was on the stack, or was popped into a register (glibc's
	// vfork keeps it in rdi across the system call, as the parent's
	// stack is the child's too), has a CFA at the stack pointer itself.
	if cfa < u.regs[regRSP] || cfa == u.regs[regRSP] && rw.regs[regRA].kind != ruleRegister || cfa <= prevCFA {
		return stepStop, 0
	}
	var next Regs
	var valid uint32
	var src [numRegs]int32 // where next's values came from (track)
	if u.track {
		for i := range src {
			src[i] = srcDerived
		}
	}
	saved := calleeSaved
	if f.cie.goABI {
		saved = goSaved
	}
	for i := 0; i < numRegs; i++ {
		ru := &rw.regs[i]
		bit := uint32(1) << i
		switch ru.kind {
		case ruleUnspec:
			switch {
			case i == regRSP:
				next[i], valid, src[i] = cfa, valid|bit, srcDerived
			case i == regRA:
				if v, ok, s := u.readSaved(cfa-8, true); ok {
					next[i], valid, src[i] = v, valid|bit, s
				}
			case i == regRBP && f.cie.goABI && u.keepsFP(cfa):
				// No rule, but the frame keeps a frame pointer (Go's CFI
				// describes only the CFA and the return address): the
				// caller's rbp is where the prologue pushed it. A C
				// compiler's CFI has a rule for rbp wherever a function
				// saves it: without one, rbp is the caller's (an rbp that
				// happens to point below the return address is data).
				if v, ok, s := u.readSaved(cfa-16, false); ok {
					next[i], valid, src[i] = v, valid|bit, s
				}
			case saved&bit != 0:
				next[i], valid, src[i] = u.regs[i], valid|(u.valid&bit), u.dt.src[i]
			}
		case ruleSame:
			if i == regRSP {
				next[i], valid, src[i] = cfa, valid|bit, srcDerived
			} else {
				next[i], valid, src[i] = u.regs[i], valid|(u.valid&bit), u.dt.src[i]
			}
		case ruleUndefined:
		case ruleOffset:
			if addr := cfa + uint64(ru.off); addr < u.regs[regRSP] && u.valid&(1<<regRSP) != 0 && i != regRA {
				// A save slot below the stack pointer: an epilogue popped
				// it already (GCC's CFI keeps the rule until the return;
				// compilers save callee-saved registers with push, not in
				// the red zone), so the register holds the caller's value.
				next[i], valid, src[i] = u.regs[i], valid|(u.valid&bit), u.dt.src[i]
			} else if v, ok, s := u.readSaved(addr, i == regRA); ok {
				next[i], valid, src[i] = v, valid|bit, s
			}
		case ruleValOffset:
			next[i], valid, src[i] = cfa+uint64(ru.off), valid|bit, srcDerived
		case ruleRegister:
			if u.valid&(1<<ru.reg) != 0 {
				next[i], valid, src[i] = u.regs[ru.reg], valid|bit, u.dt.src[ru.reg]
				if i == regRA {
					// A return address decides the chain: one from a
					// register of the first frame (rdi in vfork) is not
					// among what Deps follow, so the chain is not reused.
					u.use(int(ru.reg))
				}
			} else if i == regRA {
				// The return address in a register the sample did not
				// carry: the frame keeps no frame pointer, and a
				// frame-pointer chain skips its caller.
				u.unknown = true
			}
		case ruleExpr, ruleValExpr:
			u.unsure()
			v, ok := u.eval(sec[ru.eoff:ru.eoff+uint32(ru.elen)], cfa, true)
			if ok && ru.kind == ruleExpr {
				v, ok = u.stack.read8(v)
			}
			if ok {
				next[i], valid = v, valid|bit
			}
		}
	}
	if valid&(1<<regRA) == 0 || valid&(1<<regRSP) == 0 {
		beyond := valid&(1<<regRA) == 0 && u.raBeyond(&rw.regs[regRA], cfa)
		if beyond && u.inMain {
			// main's caller (or its caller's) lies beyond the copy: the C
			// library's start code, not the program's. The program's
			// stack is complete, whether main keeps a frame pointer or
			// not (the chain beyond it, where rbp still leads, is the
			// start code's).
			u.cut, u.endCut = false, true
			return stepEnd, 0
		}
		u.cut = beyond && !(rw.cfa.kind == cfaRegOff && rw.cfa.reg == regRBP) && !u.keepsFP(cfa)
		return stepStop, 0
	}
	u.regs, u.valid, u.dt.src = next, valid, src
	return stepOK, cfa
}

// eval evaluates a DWARF expression over the current frame's registers and
// the stack copy with elfx's evaluator. With push, cfa is pushed first
// (register rules) and is the value of DW_OP_call_frame_cfa; the result is
// the top of the stack.
func (u *unwinder) eval(e []byte, cfa uint64, push bool) (uint64, bool) {
	m := elfx.Expr{
		Regs: (*[elfx.NumGPRegs]uint64)(&u.regs), RegValid: u.valid,
		Copy: u.stack.Data, CopyAddr: u.stack.SP,
		MaxStack: 16,
	}
	m.Start(e)
	if push {
		m.CFA = cfa
		if m.Push(cfa) != nil {
			return 0, false
		}
	}
	// Register locations (DW_OP_reg*), stack and implicit values and
	// pieces are not values CFI can use.
	if _, more, err := m.Next(); err != nil || more || m.Kind != elfx.LocMemory {
		return 0, false
	}
	top, ok := m.Top()
	return top.V, ok
}
