package traceprog

import (
	"math"
	"slices"

	"github.com/cilium/ebpf/asm"

	"github.com/culprit-dev/culprit/internal/bpfasm"
)

// Shapes shared by the program and its reader. A thread's (or, in Go
// programs, a goroutine's) shadow stack is one value of the stacks map:
// its header (stackHdr bytes), then MaxDepth frames.
const (
	// MaxDepth is how many nested traced calls a thread's shadow stack
	// holds; calls deeper than that are counted (Stats.Depth), not recorded.
	// It is the kernel's own limit: a thread with 64 return probes pending
	// gets no more (MAX_URETPROBE_DEPTH, "omit uretprobe due to nestedness
	// limit"), so a deeper call's return would never be seen.
	MaxDepth = 64
	// MaxArgs is how many argument registers a call record carries.
	MaxArgs = 6
	// popsPerHit bounds how many abandoned frames (left by longjmp or
	// C++ unwinding) one probe hit retires; the rest go at later hits.
	popsPerHit = 8

	// MaxReads is how many values of memory a call record carries
	// (Probe.Reads), each MaxHops pointer steps at most from an argument.
	MaxReads = 2
	MaxHops  = 3
	// A probe's reads, in the reads map: per read, the argument's index+1
	// (0: none), the number of hops, the size of the last read, a pad
	// byte, then MaxHops signed 32-bit offsets.
	readSize      = 4 + 4*MaxHops
	readsValue    = MaxReads * readSize
	rdArg, rdHops = 0, 1
	rdSize, rdOff = 2, 4

	frameSize = 128
	fStart    = 0
	fChild    = 8
	fSP       = 16
	fSite     = 24
	fProbe    = 32
	fFlags    = 36
	fArgs     = 40
	fMem      = 88
	fOff      = 104 // the thread's off-CPU total (offcpu map) at entry
	fChildOff = 112 // off-CPU ns inside the traced calls it made
	fTid      = 120 // the thread it was entered on; 0: off-CPU time not known
	fSw       = 124 // the thread's unseen-switch mark (slSw) at entry
	// A shadow stack's value ends with its thread's batch of call
	// records (not with Strings, whose string record must come just
	// before its call's): the records its calls' ends write, side by
	// side as the ring would hold them, bLen bytes at bData, the first
	// ended at bT. The batch goes to the ring as one record (one
	// bpf_ringbuf_output) when the next call ends and it holds
	// batchFlush bytes or more, or its first record is batchAge old:
	// a reserve and a submit per call cost more than the rest of the
	// return program. A thread that stops calling leaves its batch in
	// the map, read when tracing stops (Leftovers) or pauses (Pause).
	bLen       = stackHdr + MaxDepth*frameSize
	bT         = bLen + 8
	bData      = bLen + 16
	batchFlush = 1024
	batchCap   = (batchFlush - 1 + MaxRecordSize + 7) &^ 7
	// batchAge bounds how long a busy thread's records wait in its
	// batch: the tracer drains the ring every 10 ms.
	batchAge   = 10_000_000
	threadSize = bData + batchCap
	// A shadow stack's header: its depth, then (not Go) the thread's
	// bpf_get_current_pid_tgid and its off-CPU fields (oOut, oTotal,
	// oSeen, at hOff): a program other than Go's keys the shadow stack by
	// the thread id alone, so that switchProgram finds it by next_pid,
	// and each hit needs one map lookup for both.
	hPidTgid = 8
	hOff     = 16
	stackHdr = hOff + offCPUVal
	// A thread's shadow stack (not a goroutine's) is first sought in
	// the slots map, an array of Slots stacks: thread t's is slot
	// t mod Slots while the slot's owner (hOwner: t+1; 0, free) is t. An
	// array's lookup is inlined and a hash map's is not: a hash lookup
	// costs about 50 ns a hit, a fifth of the probe's program by the
	// kernel's count (docs/trace.md). A thread whose slot another
	// holds keeps its stack in the stacks map, keyed by its id, as every
	// thread did. A slot, like a stacks entry, outlives its thread (a
	// thread that reuses the id finds it, as it finds the entry).
	hOwner = 4
	Slots  = 512

	// A call record in the ring buffer is a head of recHead bytes, then
	// the parts only some programs write, in this order, each present
	// when its bit is set in the record's flags (bits the reader clears):
	// a program that measures no off-CPU time, runs outside Go or copies
	// no arguments writes no zeros for them. The parts a program writes
	// follow from its options alone, so the record's size is a constant
	// of the program. The head with the off-CPU part, what a trace
	// without --args writes, is 72 bytes (80 in the ring with its
	// header): a call's return writes two cache lines, not three.
	rStart   = 0
	rEnd     = 8
	rChild   = 16
	rSite    = 24
	rPidTgid = 32
	rProbe   = 40
	rCaller  = 44
	rDepth   = 48
	rFlags   = 52
	recHead  = 56
	// hasCPU: Off (ns its thread was off the CPU during the call, with
	// flag CPU) and ChildOff (of those, inside traced calls it made).
	hasCPU    = 1 << 16
	pOff      = 0
	pChildOff = 8
	partCPU   = 16
	// hasGo: G (the goroutine's g, R14, its shadow stack's key) and Goid
	// (with GoidOff, the goroutine's id read from its g).
	hasGo  = 1 << 17
	pG     = 0
	pGoid  = 8
	partGo = 16
	// hasArgs: the argument registers (or a USDT probe's arguments), the
	// return value and the memory reads.
	hasArgs  = 1 << 18
	pArgs    = 0
	pRet     = 8 * MaxArgs
	pMem     = pRet + 8
	partArgs = pMem + 8*MaxReads
	hasParts = hasCPU | hasGo | hasArgs
	// MaxRecordSize is the largest call record (not StrRecordSize: the
	// reader tells them by their length, and no call record is as long).
	MaxRecordSize = recHead + partCPU + partGo + partArgs

	// The offcpu map (Go; other programs keep these in the shadow
	// stack's header, at hOff): per thread (by thread id) when it last left the CPU
	// (0: it is on one), the ns it has spent off the CPU since it was
	// first traced, and how many of its context switches switchProgram
	// saw (one when it left the CPU, one when it came back); when it last
	// came back (0: not seen since it left), and its time on a CPU as
	// the kernel counts it (se.sum_exec_runtime) when it last left (0:
	// not known); its run queue's clock less clock_task where it last
	// came back (oGap), and when a probe last hit it since (oHit; 0:
	// none).
	oOut      = 0
	oTotal    = 8
	oSeen     = 16
	oIn       = 24
	oRT       = 32
	oGap      = 40
	oHit      = 48
	offCPUVal = 56

	// A call's strings (Options.Strings) travel in a record of their own,
	// written just before the call's record on the same thread: its
	// thread, the call's start and probe, then MaxStrs slots of StrLen
	// bytes, each a NUL-terminated copy of a char * argument.
	MaxStrs       = 2
	StrLen        = 64
	StrRecordSize = 24 + MaxStrs*StrLen
	sPidTgid      = 0
	sStart        = 8
	sProbe        = 16
	sSlots        = 24

	// per-CPU counters
	sLost      = 0
	sDepth     = 8
	sUnmatched = 16
	sNoThread  = 24
	sUnseen    = 32 // calls whose off-CPU time is not known: a switch went unseen
	statsSize  = 40

	flagSkip = 1 // frame: not sampled (#N), kept only for depth and callers
	// flagPair marks a USDT pair's frame whose function is known (its
	// CFA rule): fSP is 9 below that CFA and fMem holds the function's
	// return address.
	flagPair = 2
	// flagChained marks a frame entered by a tail call (Chained).
	flagChained = 4
)

// Flags of a call record.
const (
	// Unreturned marks a call that never returned through its return
	// probe: longjmp, C++ unwinding or the thread's exit went past it. Its
	// end is when that was noticed (the next traced entry or return on
	// the thread), an upper bound.
	Unreturned = 1
	// Point marks a hit of a point probe (a source line, a USDT probe):
	// Start = End, the time it was reached.
	Point = 2
	// CPU marks a call whose thread's off-CPU time was measured (Off,
	// ChildOff): its on-CPU time is End − Start − Off. Not set when the
	// call returned on another thread than it started on (a Go goroutine
	// that moved), the thread could not be followed (map full), or the
	// kernel did not run switchProgram at one of the thread's context
	// switches during the call (Stats.Unseen).
	CPU = 4
	// CPULost marks a call whose off-CPU time was being measured (not
	// CPU): a context switch of its thread did not reach switchProgram.
	CPULost = 8
	// Chained marks a call a traced caller jumped to (a tail call): the
	// kernel chained its return to the caller's, so its Site is the
	// caller's return address, where the stack held the return
	// trampoline at its entry.
	Chained = 16
	// Unwound marks a call (also Unreturned) that a C++ exception or a
	// Rust panic left: it was still open when the unwinder reached a
	// catch or a clean-up (a landing pad calling __cxa_begin_catch or
	// _Unwind_Resume) in a function that called it. Its end is that
	// moment.
	Unwound = 32
	// TailJumped marks a call of native code with return probes on its
	// RET instructions (RetInsn) that ended by jumping to another
	// function (a tail call): the jump handed the callee its frame, so
	// the callee's time is not in the call, and Ret is not its value.
	TailJumped = 64
)

// pt_regs offsets (x86-64).
const (
	regR15 = 0
	regR14 = 8
	regBX  = 40
	regR9  = 64
	regR8  = 72
	regAX  = 80
	regCX  = 88
	regDX  = 96
	regSI  = 104
	regDI  = 112
	regIP  = 128
	regBP  = 32
	regSP  = 152
)

// Stack slots of the program.
const (
	slKey    = -8
	slNow    = -16
	slProbe  = -24
	slSP     = -32
	slIdx    = -40
	slKey32  = -48
	slFlags  = -56
	slCaller = -64
	slStrKey = -72
	slStrArg = -80  // the probe's string arguments: byte k the (index+1) of slot k's
	slOff    = -88  // the thread's off-CPU total now
	slTid    = -96  // the thread (key of the offcpu map); 0: not followed
	slNewOff = -256 // a new offcpu entry's zero value (offCPUVal bytes)
	// slSw is 2·(the thread's context switches, as the kernel counts them
	// in task_struct nvcsw+nivcsw) less those switchProgram saw (oSeen):
	// it changes during a call only when a switch went unseen.
	slSw      = -128
	slRet     = -160 // Pair: the return address of the begin's function
	slOverlap = -168 // Pair: at an interleaved end, when the frame above its begin's began
	slID      = -176 // PairIDs: the begin's or end's id
	slHasID   = -184 // PairIDs: 1 when it was read
	slTask    = -192 // with CPU, not Go: the current task_struct (a BTF pointer)
	slPidTgid = -200 // not Go: the thread's bpf_get_current_pid_tgid
	slHdr     = -264 // Go, with CPU: the thread's offcpu entry, across a helper call
	slSlot    = -272 // not Go: the index of the thread's slot
)

// Registers held across helper calls.
const (
	rCtx    = asm.R6
	rThread = asm.R7
	rFrame  = asm.R8
	rTmp    = asm.R9
)

type maps struct {
	stacks, zero, counts, stats, events, phase int
	slots                                      int // not Go: the threads' slots (Slots)
	strs                                       int // Strings: probe id → its string arguments
	reads                                      int // Reads: probe id → its memory reads
	offcpu                                     int // CPU: thread → its off-CPU time
	stop                                       int // session programs: not 0 when no more calls are entered
}

type progOptions struct {
	Go   bool // key shadow stacks by goroutine (R14), match returns by probe, Go's argument registers
	Args bool // copy argument registers at entry and the return value
	// GoidOff > 0 (Go): the offset of goid in the runtime's g, read into
	// each record beside the g.
	GoidOff int32
	// Sampling: some probe records only every N-th call.
	Sampling bool
	// Timed: calls are recorded only while the phase map says gathering
	// (0); a cpu-clock event flips it (timed sampling).
	Timed bool
	// Session: the entry program of a uprobe session (sessionProgram),
	// which returns 1 where no call is entered (a dormant phase of
	// Timed): the kernel then sets no return probe on the call.
	Session bool
	// MaxDepth > 0 records only calls with fewer than MaxDepth traced
	// calls open below them on the thread (depth 0 is the outermost).
	MaxDepth int32
	// RetAdjust is what the stack pointer at the return probe exceeds the
	// one at entry by: 8 after a uretprobe (the RET has run), 0 at a probe
	// on the RET instruction itself.
	RetAdjust int32
	// RetInsn (not Go): the return probes of native code sit on its RET
	// instructions and on the jumps of its tail calls (Probe.Rets), not
	// uretprobes, which put a trampoline's address in the stack where
	// C++ and Rust unwinders cannot pass it. A return matches the top
	// frame by its stack pointer, as a uretprobe's does, and reads its
	// call site from the top of the stack.
	RetInsn bool
	// TailJump (RetInsn): the program of the jumps of tail calls: the
	// call ends there, flagged TailJumped, with no return value.
	TailJump bool
	// Strings: calls of probes with char * arguments (the strs map) are
	// preceded by a record of those strings, read at the call's end.
	Strings bool
	// Reads: probes with memory reads (the reads map) read them at entry,
	// after the argument registers are copied (needs Args).
	Reads bool
	// CPU: each call also carries the off-CPU time of its thread during
	// it, from the offcpu map that switchProgram keeps.
	CPU bool
	// Nvcsw, Nivcsw: the offsets of task_struct's context switch counts
	// (CPU), which tell a call whose switches switchProgram all saw.
	Nvcsw, Nivcsw int32
	// Acct (CPU): how switchProgram ends a run by the kernel's account;
	// with the account, each probe hit notes its time in oHit.
	Acct runAccount
	// Pid, Tgid: the offsets of task_struct's pid and tgid (CPU, not
	// Go), from which the thread's key is made.
	Pid, Tgid int32
	// Pair: the programs of a USDT begin/end pair, whose begin is entered
	// as a call's entry and whose end returns it. The begin is in the
	// middle of a function (no return address on top of the stack: the
	// call's site is the begin's own address); the end matches the open
	// begin of its probe, not a stack pointer, and has no return value.
	Pair bool
	// PairArgs (Pair with Args): the pairs whose begins' USDT arguments
	// are read into the frame's argument slots, in place of the
	// registers, chosen by probe id and begin site (PairSite).
	PairArgs []Probe
	// PairIDs (Pair, not Go): the pairs whose begins and ends carry an id
	// (BeginID, EndID): a begin reads it into its frame's first argument
	// slot, an end into slID, and an end returns the begin with its id.
	PairIDs []Probe
}

type builder struct {
	bpfasm.Builder
	m maps
	o progOptions
}

// stampAtEnd says whether an entry notes its hit in oHit (with the
// account, outside Go) with the clock it reads last (stampHit), not in
// readOff: one clock read a call less.
func (b *builder) stampAtEnd() bool {
	return b.o.CPU && !b.o.Go && b.o.Acct.execOff >= 0
}

// stampHit, in an entry that stamps its hit at its end, writes R0 (a
// clock read) as the thread's last probe hit (oHit).
func (b *builder) stampHit() {
	if b.stampAtEnd() {
		b.Emit(asm.StoreMem(rThread, hOff+oHit, asm.R0, asm.DWord))
	}
}

// layout is where a program's call records put their parts (see
// recHead): the offset of each part in the record (0: not written), the
// record's size and the flag bits that name the parts.
type layout struct {
	cpu, g, args int16
	size         int32
	bits         int32
}

func recLayout(cpu, g, args bool) layout {
	l := layout{size: recHead}
	if cpu {
		l.cpu, l.size, l.bits = int16(l.size), l.size+partCPU, l.bits|hasCPU
	}
	if g {
		l.g, l.size, l.bits = int16(l.size), l.size+partGo, l.bits|hasGo
	}
	if args {
		l.args, l.size, l.bits = int16(l.size), l.size+partArgs, l.bits|hasArgs
	}
	return l
}

// callLayout is the layout of the records emitCall writes.
func (b *builder) callLayout() layout {
	return recLayout(b.o.CPU, b.o.Go, b.o.Args)
}

// count adds one to the per-CPU counter at off.
func (b *builder) count(off int16) {
	skip := b.NewLabel("nocount")
	b.Emit(asm.StoreImm(asm.RFP, slKey32, 0, asm.Word))
	b.Lookup(b.m.stats, slKey32)
	b.Emit(
		asm.JEq.Imm(asm.R0, 0, skip),
		asm.LoadMem(asm.R1, asm.R0, off, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, off, asm.R1, asm.DWord),
	)
	b.Mark(skip)
}

// threadKey stores the shadow stack's key at slKey: the goroutine (R14
// under Go's register ABI) or the thread.
//
// Other programs' key is the thread id, and slPidTgid holds what
// bpf_get_current_pid_tgid gives (tgid << 32 | pid); with CPU both are
// read from the current task_struct, which is kept at slTask for
// readOff: one helper call for all three.
func (b *builder) threadKey() {
	switch {
	case b.o.Go:
		b.Emit(
			asm.LoadMem(asm.R0, rCtx, regR14, asm.DWord),
			asm.StoreMem(asm.RFP, slKey, asm.R0, asm.DWord),
		)
		return
	case b.o.CPU:
		b.Emit(
			asm.FnGetCurrentTaskBtf.Call(),
			asm.StoreMem(asm.RFP, slTask, asm.R0, asm.DWord),
			asm.LoadMem(asm.R1, asm.R0, int16(b.o.Tgid), asm.Word),
			asm.LSh.Imm(asm.R1, 32),
			asm.LoadMem(asm.R2, asm.R0, int16(b.o.Pid), asm.Word),
			asm.Or.Reg(asm.R1, asm.R2),
			asm.Mov.Reg(asm.R0, asm.R1),
		)
	default:
		b.Emit(asm.FnGetCurrentPidTgid.Call())
	}
	b.Emit(
		asm.StoreMem(asm.RFP, slPidTgid, asm.R0, asm.DWord),
		asm.LSh.Imm(asm.R0, 32),
		asm.RSh.Imm(asm.R0, 32),
		asm.StoreMem(asm.RFP, slKey, asm.R0, asm.DWord),
	)
}

// pidTgid sets R0 to the current thread's bpf_get_current_pid_tgid: in
// programs other than Go's, the one threadKey kept at slPidTgid (a
// helper call costs tens of ns a hit).
func (b *builder) pidTgid() {
	if b.o.Go {
		b.Emit(asm.FnGetCurrentPidTgid.Call())
	} else {
		b.Emit(asm.LoadMem(asm.R0, asm.RFP, slPidTgid, asm.DWord))
	}
}

// storeG writes, in Go programs, the record's goroutine part at l.g:
// the shadow stack's key at slKey, the g, and with GoidOff its id (0
// when the read faults or the g is 0). Other programs' records have no
// such part.
func (b *builder) storeG(l layout) {
	if !b.o.Go {
		return
	}
	b.Emit(
		asm.LoadMem(asm.R1, asm.RFP, slKey, asm.DWord),
		asm.StoreMem(rTmp, l.g+pG, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R2, 0),
		asm.StoreMem(rTmp, l.g+pGoid, asm.R2, asm.DWord),
	)
	if b.o.GoidOff <= 0 {
		return
	}
	skip := b.NewLabel("nogoid")
	b.Emit(
		asm.JEq.Imm(asm.R1, 0, skip),
		asm.Mov.Reg(asm.R3, asm.R1),
		asm.Add.Imm(asm.R3, b.o.GoidOff),
		asm.Mov.Reg(asm.R1, rTmp),
		asm.Add.Imm(asm.R1, int32(l.g+pGoid)),
		asm.Mov.Imm(asm.R2, 8),
		asm.FnProbeReadUser.Call(),
	)
	b.Mark(skip)
}

// frameAt points rFrame at frame R1 (an index the caller has bounded to
// [0, MaxDepth-1]) of rThread's stack.
func (b *builder) frameAt() {
	b.Emit(
		asm.Mul.Imm(asm.R1, frameSize),
		asm.Mov.Reg(rFrame, rThread),
		asm.Add.Imm(rFrame, stackHdr),
		asm.Add.Reg(rFrame, asm.R1),
	)
}

// callerOf stores at slCaller the probe of the frame below frame R1 (0 for
// the bottom one). R1 is preserved.
func (b *builder) callerOf() {
	none, done := b.NewLabel("nocaller"), b.NewLabel("caller")
	b.Emit(
		asm.StoreImm(asm.RFP, slCaller, 0, asm.Word),
		asm.JEq.Imm(asm.R1, 0, none),
		asm.JGT.Imm(asm.R1, MaxDepth-1, none),
		asm.Mov.Reg(asm.R2, asm.R1),
		asm.Add.Imm(asm.R2, -1),
		asm.Mul.Imm(asm.R2, frameSize),
		asm.Mov.Reg(asm.R3, rThread),
		asm.Add.Reg(asm.R3, asm.R2),
		asm.LoadMem(asm.R2, asm.R3, stackHdr+fProbe, asm.Word),
		asm.StoreMem(asm.RFP, slCaller, asm.R2, asm.Word),
	)
	b.Emit(asm.Ja.Label(done))
	b.Mark(none)
	b.Mark(done)
}

// emit writes rFrame as a call record ending at slNow with flags; ret says
// whether R0 at the probe is the return value. The frame's index is at
// slIdx and its caller at slCaller. Frames marked flagSkip are not written.
func (b *builder) emitCall(flags int32, ret bool) {
	out, lost := b.NewLabel("emitted"), b.NewLabel("lost")
	b.Emit(
		asm.LoadMem(asm.R1, rFrame, fFlags, asm.Word),
		asm.And.Imm(asm.R1, flagSkip),
		asm.JNE.Imm(asm.R1, 0, out),
	)
	l := b.callLayout()
	flags |= l.bits
	if b.o.Strings {
		b.emitStrings()
		b.Emit(
			asm.LoadMapPtr(asm.R1, b.m.events),
			asm.Mov.Imm(asm.R2, l.size),
			asm.Mov.Imm(asm.R3, 0),
			asm.FnRingbufReserve.Call(),
			asm.JEq.Imm(asm.R0, 0, lost),
			asm.Mov.Reg(rTmp, asm.R0),
		)
	} else {
		b.batchSlot(lost)
	}
	b.Emit(
		asm.LoadMem(asm.R1, rFrame, fStart, asm.DWord),
		asm.StoreMem(rTmp, rStart, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.RFP, slNow, asm.DWord),
		asm.StoreMem(rTmp, rEnd, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, rFrame, fChild, asm.DWord),
		asm.StoreMem(rTmp, rChild, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, rFrame, fSite, asm.DWord),
		asm.StoreMem(rTmp, rSite, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, rFrame, fProbe, asm.Word),
		asm.StoreMem(rTmp, rProbe, asm.R1, asm.Word),
		asm.LoadMem(asm.R1, asm.RFP, slCaller, asm.Word),
		asm.StoreMem(rTmp, rCaller, asm.R1, asm.Word),
		asm.LoadMem(asm.R1, asm.RFP, slIdx, asm.Word),
		asm.StoreMem(rTmp, rDepth, asm.R1, asm.Word),
		asm.StoreImm(rTmp, rFlags, int64(flags), asm.Word),
	)
	b.storeG(l)
	if b.o.CPU {
		nocpu, unseen := b.NewLabel("nocpu"), b.NewLabel("unseen")
		b.Emit(
			asm.Mov.Imm(asm.R1, 0),
			asm.StoreMem(rTmp, l.cpu+pOff, asm.R1, asm.DWord),
			asm.StoreMem(rTmp, l.cpu+pChildOff, asm.R1, asm.DWord),
		)
		b.offSince(nocpu, unseen)
		b.Emit(
			asm.StoreMem(rTmp, l.cpu+pOff, asm.R2, asm.DWord),
			asm.LoadMem(asm.R1, rFrame, fChildOff, asm.DWord),
			asm.StoreMem(rTmp, l.cpu+pChildOff, asm.R1, asm.DWord),
			asm.StoreImm(rTmp, rFlags, int64(flags|CPU), asm.Word),
			asm.Ja.Label(nocpu),
		)
		b.Mark(unseen)
		b.Emit(asm.StoreImm(rTmp, rFlags, int64(flags|CPULost), asm.Word))
		b.count(sUnseen)
		b.Mark(nocpu)
	}
	if !b.o.Go && !b.o.Pair {
		notail := b.NewLabel("notail")
		b.Emit(
			asm.LoadMem(asm.R1, rFrame, fFlags, asm.Word),
			asm.And.Imm(asm.R1, flagChained),
			asm.JEq.Imm(asm.R1, 0, notail),
			asm.LoadMem(asm.R1, rTmp, rFlags, asm.Word),
			asm.Or.Imm(asm.R1, Chained),
			asm.StoreMem(rTmp, rFlags, asm.R1, asm.Word),
		)
		b.Mark(notail)
	}
	if b.o.Args {
		for i := int16(0); i < MaxArgs; i++ {
			b.Emit(
				asm.LoadMem(asm.R1, rFrame, fArgs+8*i, asm.DWord),
				asm.StoreMem(rTmp, l.args+pArgs+8*i, asm.R1, asm.DWord),
			)
		}
		for k := int16(0); k < MaxReads; k++ {
			if b.o.Reads {
				b.Emit(asm.LoadMem(asm.R1, rFrame, fMem+8*k, asm.DWord))
			} else {
				b.Emit(asm.Mov.Imm(asm.R1, 0))
			}
			b.Emit(asm.StoreMem(rTmp, l.args+pMem+8*k, asm.R1, asm.DWord))
		}
		if ret {
			b.Emit(asm.LoadMem(asm.R1, rCtx, regAX, asm.DWord))
		} else {
			b.Emit(asm.Mov.Imm(asm.R1, 0))
		}
		b.Emit(asm.StoreMem(rTmp, l.args+pRet, asm.R1, asm.DWord))
	}
	b.pidTgid()
	b.Emit(asm.StoreMem(rTmp, rPidTgid, asm.R0, asm.DWord))
	if b.o.Strings {
		b.Emit(
			// The reader is never woken: it drains the ring every 10 ms,
			// and a wake-up per call would cost more than the call's
			// probes.
			asm.Mov.Reg(asm.R1, rTmp),
			asm.Mov.Imm(asm.R2, 1), // BPF_RB_NO_WAKEUP
			asm.FnRingbufSubmit.Call(),
		)
	} else {
		b.Emit(
			asm.LoadMem(asm.R1, rThread, bLen, asm.Word),
			asm.Add.Imm(asm.R1, l.size),
			asm.StoreMem(rThread, bLen, asm.R1, asm.Word),
		)
	}
	b.Emit(asm.Ja.Label(out))
	b.Mark(lost)
	b.count(sLost)
	b.Mark(out)
}

// batchSlot points rTmp at the place of the next call record in
// rThread's batch (bData + bLen), first sending the batch to the ring
// when it is full or its first record is batchAge old (slNow is the
// call's end). When the ring has no room, the batch stays (it goes with
// a later call's end, or at Leftovers) and this call is written into it
// if it fits, else it goes to lost: the call lost is always the one
// ending now, as when each call reserved its own record. The reader is
// never woken (BPF_RB_NO_WAKEUP): it drains the ring every 10 ms, and a
// wake-up would cost more than the calls' probes.
func (b *builder) batchSlot(lost string) {
	flush, failed, empty, slot := b.NewLabel("flush"), b.NewLabel("flushfailed"), b.NewLabel("emptybatch"), b.NewLabel("slot")
	b.Emit(
		asm.LoadMem(asm.R1, rThread, bLen, asm.Word),
		asm.JEq.Imm(asm.R1, 0, empty),
		asm.JGE.Imm(asm.R1, batchFlush, flush),
		asm.LoadMem(asm.R2, asm.RFP, slNow, asm.DWord),
		asm.LoadMem(asm.R3, rThread, bT, asm.DWord),
		asm.Sub.Reg(asm.R2, asm.R3),
		asm.JLT.Imm(asm.R2, batchAge, slot),
		asm.Mov.Reg(asm.R3, asm.R1).WithSymbol(flush),
		// Never more (the records go in below batchFlush); said for the
		// verifier.
		asm.JGT.Imm(asm.R3, batchCap, failed),
		asm.LoadMapPtr(asm.R1, b.m.events),
		asm.Mov.Reg(asm.R2, rThread),
		asm.Add.Imm(asm.R2, bData),
		asm.Mov.Imm(asm.R4, 1), // BPF_RB_NO_WAKEUP
		asm.FnRingbufOutput.Call(),
		asm.JNE.Imm(asm.R0, 0, failed),
		asm.StoreImm(rThread, bLen, 0, asm.Word),
		asm.Ja.Label(empty),
	)
	b.Mark(failed)
	b.Emit(
		asm.LoadMem(asm.R1, rThread, bLen, asm.Word),
		asm.JGE.Imm(asm.R1, batchFlush, lost),
		asm.Ja.Label(slot),
	)
	b.Mark(empty)
	b.Emit(
		asm.LoadMem(asm.R1, asm.RFP, slNow, asm.DWord),
		asm.StoreMem(rThread, bT, asm.R1, asm.DWord),
	)
	b.Mark(slot)
	b.Emit(
		asm.LoadMem(asm.R1, rThread, bLen, asm.Word),
		asm.JGE.Imm(asm.R1, batchFlush, lost),
		asm.Mov.Reg(rTmp, rThread),
		asm.Add.Imm(rTmp, bData),
		asm.Add.Reg(rTmp, asm.R1),
	)
}

// emitStrings writes the string record of the call in rFrame when its
// probe has char * arguments: each read (bounded, NUL-terminated) from the
// pointer the call was given, as it is when the call ends. A record the
// ring has no room for is left out; its call is then shown without them.
func (b *builder) emitStrings() {
	none := b.NewLabel("nostrs")
	b.Emit(
		asm.LoadMem(asm.R1, rFrame, fProbe, asm.Word),
		asm.StoreMem(asm.RFP, slStrKey, asm.R1, asm.Word),
	)
	b.Lookup(b.m.strs, slStrKey)
	b.Emit(
		asm.JEq.Imm(asm.R0, 0, none),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.Word),
		asm.JEq.Imm(asm.R1, 0, none),
		asm.StoreMem(asm.RFP, slStrArg, asm.R1, asm.Word),
		asm.LoadMapPtr(asm.R1, b.m.events),
		asm.Mov.Imm(asm.R2, StrRecordSize),
		asm.Mov.Imm(asm.R3, 0),
		asm.FnRingbufReserve.Call(),
		asm.JEq.Imm(asm.R0, 0, none),
		asm.Mov.Reg(rTmp, asm.R0),
		asm.LoadMem(asm.R1, rFrame, fStart, asm.DWord),
		asm.StoreMem(rTmp, sStart, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, rFrame, fProbe, asm.Word),
		asm.StoreMem(rTmp, sProbe, asm.R1, asm.Word),
	)
	b.pidTgid()
	b.Emit(asm.StoreMem(rTmp, sPidTgid, asm.R0, asm.DWord))
	for k := int16(0); k < MaxStrs; k++ {
		slot := sSlots + k*StrLen
		done := b.NewLabel("strdone")
		b.Emit(asm.Mov.Imm(asm.R1, 0), asm.StoreMem(rTmp, slot, asm.R1, asm.Byte))
		for i := int16(0); i < MaxArgs; i++ {
			skip := b.NewLabel("strskip")
			b.Emit(
				asm.LoadMem(asm.R1, asm.RFP, slStrArg+k, asm.Byte),
				asm.JNE.Imm(asm.R1, int32(i+1), skip),
				asm.LoadMem(asm.R3, rFrame, fArgs+8*i, asm.DWord),
				asm.Mov.Reg(asm.R1, rTmp),
				asm.Add.Imm(asm.R1, int32(slot)),
				asm.Mov.Imm(asm.R2, StrLen),
				asm.FnProbeReadUserStr.Call(),
				asm.Ja.Label(done),
			)
			b.Mark(skip)
		}
		b.Mark(done)
	}
	b.Emit(
		asm.Mov.Reg(asm.R1, rTmp),
		asm.Mov.Imm(asm.R2, 1), // BPF_RB_NO_WAKEUP
		asm.FnRingbufSubmit.Call(),
	)
	b.Mark(none)
}

// readMem fills the frame's memory slots from the probe's reads (the
// reads map, by the probe id at slProbe): each starts from an argument
// register copied to the frame, and at each hop adds the hop's offset and
// reads what is there, 8 bytes (a pointer) on the way and the read's size
// at the last hop. A read that faults leaves its slot 0 (the helper clears
// its buffer), and so does every hop after it. rTmp is free here.
func (b *builder) readMem() {
	done := b.NewLabel("readsdone")
	b.Emit(asm.Mov.Imm(asm.R1, 0))
	for k := int16(0); k < MaxReads; k++ {
		b.Emit(asm.StoreMem(rFrame, fMem+8*k, asm.R1, asm.DWord))
	}
	b.Emit(
		asm.LoadMem(asm.R1, asm.RFP, slProbe, asm.Word),
		asm.StoreMem(asm.RFP, slStrKey, asm.R1, asm.Word),
	)
	b.Lookup(b.m.reads, slStrKey)
	b.Emit(
		asm.JEq.Imm(asm.R0, 0, done),
		asm.Mov.Reg(rTmp, asm.R0),
	)
	for k := int16(0); k < MaxReads; k++ {
		base, slot := k*readSize, fMem+8*k
		next, got := b.NewLabel("readnext"), b.NewLabel("readarg")
		b.Emit(asm.LoadMem(asm.R1, rTmp, base+rdArg, asm.Byte))
		for i := int16(0); i < MaxArgs; i++ {
			skip := b.NewLabel("readskip")
			b.Emit(
				asm.JNE.Imm(asm.R1, int32(i+1), skip),
				asm.LoadMem(asm.R2, rFrame, fArgs+8*i, asm.DWord),
				asm.StoreMem(rFrame, slot, asm.R2, asm.DWord),
				asm.Ja.Label(got),
			)
			b.Mark(skip)
		}
		b.Emit(asm.Ja.Label(next)) // no argument: nothing to read
		b.Mark(got)
		for h := int16(0); h < MaxHops; h++ {
			sized := b.NewLabel("readsized")
			b.Emit(
				asm.LoadMem(asm.R2, rTmp, base+rdHops, asm.Byte),
				asm.JLE.Imm(asm.R2, int32(h), next),
				asm.LoadMem(asm.R3, rFrame, slot, asm.DWord),
				asm.LoadMem(asm.R1, rTmp, base+rdOff+4*h, asm.Word),
				asm.LSh.Imm(asm.R1, 32),
				asm.ArSh.Imm(asm.R1, 32),
				asm.Add.Reg(asm.R3, asm.R1),
				asm.Mov.Imm(asm.R4, 0),
				asm.StoreMem(rFrame, slot, asm.R4, asm.DWord),
				asm.Mov.Imm(asm.R4, 8),
				asm.JNE.Imm(asm.R2, int32(h+1), sized),
				asm.LoadMem(asm.R4, rTmp, base+rdSize, asm.Byte),
				asm.JEq.Imm(asm.R4, 0, next),
				asm.JGT.Imm(asm.R4, 8, next),
			)
			b.Mark(sized)
			b.Emit(
				asm.Mov.Reg(asm.R1, rFrame),
				asm.Add.Imm(asm.R1, int32(slot)),
				asm.Mov.Reg(asm.R2, asm.R4),
				asm.FnProbeReadUser.Call(),
			)
		}
		b.Mark(next)
	}
	b.Mark(done)
}

// addChild adds the duration of the frame just retired (rFrame, ending at
// slNow) to its caller's child time, when it has one. R1 holds the
// retired frame's index.
func (b *builder) addChild() {
	skip := b.NewLabel("nochild")
	b.Emit(
		asm.JEq.Imm(asm.R1, 0, skip),
		asm.JGT.Imm(asm.R1, MaxDepth-1, skip),
		asm.Add.Imm(asm.R1, -1),
		asm.Mul.Imm(asm.R1, frameSize),
		asm.Mov.Reg(asm.R4, rThread),
		asm.Add.Reg(asm.R4, asm.R1),
		asm.LoadMem(asm.R2, asm.RFP, slNow, asm.DWord),
		asm.LoadMem(asm.R3, rFrame, fStart, asm.DWord),
		asm.Sub.Reg(asm.R2, asm.R3),
		asm.LoadMem(asm.R3, asm.R4, stackHdr+fChild, asm.DWord),
		asm.Add.Reg(asm.R3, asm.R2),
		asm.StoreMem(asm.R4, stackHdr+fChild, asm.R3, asm.DWord),
	)
	if b.o.CPU {
		// R4 (the caller's frame, less stackHdr) survives offSince. A
		// switch unseen in the child is unseen in the caller too.
		b.offSince(skip, skip)
		b.Emit(
			asm.LoadMem(asm.R3, asm.R4, stackHdr+fChildOff, asm.DWord),
			asm.Add.Reg(asm.R3, asm.R2),
			asm.StoreMem(asm.R4, stackHdr+fChildOff, asm.R3, asm.DWord),
		)
	}
	b.Mark(skip)
}

// offSince sets R2 to the off-CPU ns of rFrame's thread since the frame
// was entered (slOff less the frame's fOff), or jumps to unknown when the
// frame was entered on another thread or its thread is not followed, and
// to unseen when one of the thread's context switches since then did not
// reach switchProgram. It uses R1 and R2 only.
func (b *builder) offSince(unknown, unseen string) {
	b.Emit(
		asm.LoadMem(asm.R1, rFrame, fTid, asm.Word),
		asm.JEq.Imm(asm.R1, 0, unknown),
		asm.LoadMem(asm.R2, asm.RFP, slTid, asm.Word),
		asm.JNE.Reg(asm.R1, asm.R2, unknown),
		asm.LoadMem(asm.R1, rFrame, fSw, asm.Word),
		asm.LoadMem(asm.R2, asm.RFP, slSw, asm.Word),
		asm.JNE.Reg(asm.R1, asm.R2, unseen),
		asm.LoadMem(asm.R2, asm.RFP, slOff, asm.DWord),
		asm.LoadMem(asm.R1, rFrame, fOff, asm.DWord),
		asm.Sub.Reg(asm.R2, asm.R1),
	)
}

// readOff stores at slTid the current thread, at slOff its off-CPU total
// and at slSw its unseen-switch mark: from the shadow stack's header, or
// in Go programs from the offcpu map, making its entry when create is
// set; slTid is 0 when the thread has none (it is not followed).
//
// The mark exists because the kernel does not always run the programs on
// sched_switch: under load some switches reach no consumer at all (perf
// misses them as well), and a missed return to the CPU would count the
// rest of a call as on the CPU. task_struct's nvcsw+nivcsw count every
// switch away; while the thread runs it has come back as often, so
// 2·(nvcsw+nivcsw) − oSeen stays fixed exactly while every switch is seen.
func (b *builder) readOff(create bool) {
	b.Emit(asm.Mov.Imm(asm.R1, 0), asm.StoreMem(asm.RFP, slSw, asm.R1, asm.DWord))
	if !b.o.CPU {
		b.Emit(asm.StoreImm(asm.RFP, slTid, 0, asm.Word))
		return
	}
	have, done := b.NewLabel("haveoff"), b.NewLabel("offdone")
	b.pidTgid()
	b.Emit(
		asm.StoreMem(asm.RFP, slTid, asm.R0, asm.Word),
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(asm.RFP, slOff, asm.R1, asm.DWord),
	)
	if b.o.Go {
		b.Lookup(b.m.offcpu, slTid)
		b.Emit(asm.JNE.Imm(asm.R0, 0, have))
		if create {
			b.Emit(
				asm.Mov.Imm(asm.R1, 0),
			)
			for off := int16(0); off < offCPUVal; off += 8 {
				b.Emit(asm.StoreMem(asm.RFP, slNewOff+off, asm.R1, asm.DWord))
			}
			b.Update(b.m.offcpu, slTid, slNewOff, 1) // BPF_NOEXIST
			b.Lookup(b.m.offcpu, slTid)
			b.Emit(asm.JNE.Imm(asm.R0, 0, have))
		}
		b.Emit(
			asm.StoreImm(asm.RFP, slTid, 0, asm.Word),
			asm.Ja.Label(done),
		)
	} else {
		// In the shadow stack's header.
		b.Emit(
			asm.Mov.Reg(asm.R0, rThread),
			asm.Add.Imm(asm.R0, hOff),
		)
	}
	b.Emit(
		asm.LoadMem(asm.R1, asm.R0, oTotal, asm.DWord).WithSymbol(have),
		asm.StoreMem(asm.RFP, slOff, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.R0, oSeen, asm.DWord),
		asm.StoreMem(asm.RFP, slSw, asm.R1, asm.DWord),
	)
	if b.o.Acct.execOff >= 0 {
		// When a probe last hit the thread's run (switchProgram): the
		// return programs' stamp, or the entry's own.
		if !create {
			b.Emit(
				asm.LoadMem(asm.R1, asm.RFP, slNow, asm.DWord),
				asm.StoreMem(asm.R0, oHit, asm.R1, asm.DWord),
			)
		} else if b.o.Go {
			b.Emit(
				asm.StoreMem(asm.RFP, slHdr, asm.R0, asm.DWord),
				asm.FnKtimeGetNs.Call(),
				asm.LoadMem(asm.R1, asm.RFP, slHdr, asm.DWord),
				asm.StoreMem(asm.R1, oHit, asm.R0, asm.DWord),
				asm.Mov.Reg(asm.R0, asm.R1),
			)
		}
		// Else the entry's stamp is the call's start, read at its end
		// (stampAtEnd).
	}
	// slSw = 2·(nvcsw + nivcsw) − oSeen, read straight from the
	// task_struct (a BTF pointer: a faulting read gives 0).
	if b.o.Go {
		b.Emit(asm.FnGetCurrentTaskBtf.Call())
	} else {
		b.Emit(asm.LoadMem(asm.R0, asm.RFP, slTask, asm.DWord))
	}
	b.Emit(
		asm.LoadMem(asm.R1, asm.R0, int16(b.o.Nvcsw), asm.DWord),
		asm.LoadMem(asm.R2, asm.R0, int16(b.o.Nivcsw), asm.DWord),
		asm.Add.Reg(asm.R1, asm.R2),
		asm.Mul.Imm(asm.R1, 2),
		asm.LoadMem(asm.R2, asm.RFP, slSw, asm.DWord),
		asm.Sub.Reg(asm.R1, asm.R2),
		asm.StoreMem(asm.RFP, slSw, asm.R1, asm.DWord),
	)
	b.Mark(done)
}

// popAbandoned retires, at most popsPerHit times, the top frame while it
// lies below the stack pointer at slSP: a frame longjmp or unwinding went
// past. Go stacks move, so Go programs skip this. With Pair, at an end
// (end set) the retiring stops at a frame of the end's own pair; at a
// begin, a frame of the same pair at the same stack pointer goes too: the
// code went from the begin back to it without passing the end (an early
// return, a continue).
func (b *builder) popAbandoned(end bool) {
	b.popAbandonedAs(end, Unreturned)
}

// popAbandonedAs is popAbandoned writing the retired calls with flags.
func (b *builder) popAbandonedAs(end bool, flags int32) {
	if b.o.Go {
		return
	}
	done := b.NewLabel("popped")
	for k := 0; k < popsPerHit; k++ {
		b.Emit(
			asm.LoadMem(asm.R1, rThread, 0, asm.Word),
			asm.JEq.Imm(asm.R1, 0, done),
			asm.JGT.Imm(asm.R1, MaxDepth, done),
			asm.Add.Imm(asm.R1, -1),
			asm.StoreMem(asm.RFP, slIdx, asm.R1, asm.Word),
		)
		b.frameAt()
		if b.o.Pair && end {
			// The end's own begin is where the retiring stops, whatever
			// its stack pointer (code between the two may push).
			b.Emit(
				asm.LoadMem(asm.R2, rFrame, fProbe, asm.Word),
				asm.LoadMem(asm.R3, asm.RFP, slProbe, asm.Word),
				asm.JEq.Reg(asm.R2, asm.R3, done),
			)
		}
		b.Emit(
			asm.LoadMem(asm.R2, rFrame, fSP, asm.DWord),
			asm.LoadMem(asm.R3, asm.RFP, slSP, asm.DWord),
		)
		if b.o.Pair && !end {
			// A pair's frame in the same place as this begin's: the
			// same pair begun again in the same activation of its
			// function, or another activation (its function returned
			// and another was called from elsewhere at the same depth,
			// with no traced event in between to retire it).
			pop, other := b.NewLabel("pop"), b.NewLabel("otherpair")
			b.Emit(
				asm.JLT.Reg(asm.R2, asm.R3, pop),
				asm.JGT.Reg(asm.R2, asm.R3, done),
				asm.LoadMem(asm.R2, rFrame, fProbe, asm.Word),
				asm.LoadMem(asm.R3, asm.RFP, slProbe, asm.Word),
				asm.JNE.Reg(asm.R2, asm.R3, other),
			)
			if len(b.o.PairIDs) > 0 {
				// Begun with another id: a second request open at
				// once, kept unless one is open below it in the same
				// place already (two at most; more are taken for
				// begins whose ends were skipped).
				b.Emit(
					asm.LoadMem(asm.R2, asm.RFP, slHasID, asm.Word),
					asm.JEq.Imm(asm.R2, 0, pop),
					asm.LoadMem(asm.R2, rFrame, fArgs, asm.DWord),
					asm.LoadMem(asm.R3, asm.RFP, slID, asm.DWord),
					asm.JEq.Reg(asm.R2, asm.R3, pop),
					asm.LoadMem(asm.R2, asm.RFP, slIdx, asm.Word),
					asm.JEq.Imm(asm.R2, 0, done),
					asm.Add.Imm(asm.R2, -1),
					asm.JGT.Imm(asm.R2, MaxDepth-1, done),
					asm.Mul.Imm(asm.R2, frameSize),
					asm.Mov.Reg(asm.R4, rThread),
					asm.Add.Reg(asm.R4, asm.R2),
					asm.LoadMem(asm.R2, asm.R4, stackHdr+fProbe, asm.Word),
					asm.LoadMem(asm.R3, asm.RFP, slProbe, asm.Word),
					asm.JNE.Reg(asm.R2, asm.R3, done),
					asm.LoadMem(asm.R2, asm.R4, stackHdr+fSP, asm.DWord),
					asm.LoadMem(asm.R3, asm.RFP, slSP, asm.DWord),
					asm.JNE.Reg(asm.R2, asm.R3, done),
				)
			}
			b.Emit(asm.Ja.Label(pop))
			b.Mark(other)
			b.Emit(
				asm.LoadMem(asm.R2, rFrame, fFlags, asm.Word),
				asm.And.Imm(asm.R2, flagPair),
				asm.JEq.Imm(asm.R2, 0, done),
				asm.LoadMem(asm.R2, asm.RFP, slFlags, asm.Word),
				asm.And.Imm(asm.R2, flagPair),
				asm.JEq.Imm(asm.R2, 0, done),
				asm.LoadMem(asm.R2, rFrame, fMem, asm.DWord),
				asm.LoadMem(asm.R3, asm.RFP, slRet, asm.DWord),
				asm.JEq.Reg(asm.R2, asm.R3, done),
			)
			b.Mark(pop)
		} else {
			b.Emit(asm.JGE.Reg(asm.R2, asm.R3, done))
		}
		if !end {
			// An entry reads the clock at its end only; a frame it
			// retires (rarely) ends now.
			b.Emit(
				asm.FnKtimeGetNs.Call(),
				asm.StoreMem(asm.RFP, slNow, asm.R0, asm.DWord),
			)
		}
		b.popFrame(flags, false, done)
	}
	b.Mark(done)
}

// popFrame ends the call of rFrame, the frame at index slIdx of the
// thread's shadow stack, at slNow: it writes the call with flags (ret:
// with its return value), makes slIdx the thread's depth, and adds the
// call's time to its caller's (addChild), or jumps to deep when the
// caller lies deeper than the stack holds. Every way a frame leaves the
// stack goes through it: a return, a RET instruction's tail callers, a
// frame left without a return.
func (b *builder) popFrame(flags int32, ret bool, deep string) {
	b.Emit(asm.LoadMem(asm.R1, asm.RFP, slIdx, asm.Word))
	b.callerOf()
	b.emitCall(flags, ret)
	b.Emit(
		asm.LoadMem(asm.R1, asm.RFP, slIdx, asm.Word),
		asm.StoreMem(rThread, 0, asm.R1, asm.Word),
		asm.JGT.Imm(asm.R1, MaxDepth-1, deep),
	)
	b.addChild()
}

// thread sets rThread to the shadow stack of the current thread, making
// it when create is set; it exits when there is none.
func (b *builder) thread(create bool) {
	b.threadKey()
	have := b.NewLabel("have")
	if !b.o.Go {
		b.slot(create)
		b.Emit(asm.JNE.Imm(asm.R0, 0, have))
	}
	b.Lookup(b.m.stacks, slKey)
	b.Emit(asm.JNE.Imm(asm.R0, 0, have))
	if create {
		b.Emit(asm.StoreImm(asm.RFP, slKey32, 0, asm.Word))
		b.Lookup(b.m.zero, slKey32)
		b.Emit(
			asm.JEq.Imm(asm.R0, 0, "exit"),
			asm.Mov.Reg(asm.R3, asm.R0),
			asm.LoadMapPtr(asm.R1, b.m.stacks),
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, slKey),
			asm.Mov.Imm(asm.R4, 1), // BPF_NOEXIST
			asm.FnMapUpdateElem.Call(),
		)
		b.Lookup(b.m.stacks, slKey)
		b.Emit(asm.JNE.Imm(asm.R0, 0, have))
		b.count(sNoThread)
	} else {
		b.count(sUnmatched)
	}
	b.Emit(asm.Ja.Label("exit"))
	b.Emit(asm.Mov.Reg(rThread, asm.R0).WithSymbol(have))
	if !b.o.Go {
		// Its process, for the calls still open when tracing stops.
		b.Emit(
			asm.LoadMem(asm.R1, asm.RFP, slPidTgid, asm.DWord),
			asm.StoreMem(rThread, hPidTgid, asm.R1, asm.DWord),
		)
	}
}

// slot sets R0 to the current thread's slot (Slots; slKey holds its id)
// when the thread owns it, taking it when it is free and create is set,
// else to 0: the thread's stack is then in the stacks map.
func (b *builder) slot(create bool) {
	miss, done := b.NewLabel("noslot"), b.NewLabel("slot")
	b.Emit(slotOf(b.m.slots, slKey, slSlot, miss, done)...)
	if create {
		// Free: taken atomically, lest two threads of the same slot
		// take it at once on two CPUs.
		b.Emit(
			asm.JNE.Imm(asm.R1, 0, miss),
			asm.Mov.Reg(asm.R3, asm.R0),
			asm.Mov.Imm(asm.R0, 0),
			cmpXchg(asm.R3, asm.R2, hOwner),
			asm.JNE.Imm(asm.R0, 0, miss),
			asm.Mov.Reg(asm.R0, asm.R3),
			asm.Ja.Label(done),
		)
	}
	b.Emit(
		asm.Mov.Imm(asm.R0, 0).WithSymbol(miss),
		asm.Mov.Reg(asm.R0, asm.R0).WithSymbol(done), // Mark would clear R0
	)
}

// slotOf looks up the slot of the thread whose id is the word at the
// stack offset key (its index is kept at idx): it jumps to owned with R0
// the slot when the thread owns it, to none when there is no slot, and
// otherwise goes on with R0 the slot, R1 its owner and R2 the id + 1.
func slotOf(slots int, key, idx int16, none, owned string) asm.Instructions {
	return asm.Instructions{
		asm.LoadMem(asm.R1, asm.RFP, key, asm.Word),
		asm.And.Imm(asm.R1, Slots-1),
		asm.StoreMem(asm.RFP, idx, asm.R1, asm.Word),
		asm.LoadMapPtr(asm.R1, slots),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, int32(idx)),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, none),
		asm.LoadMem(asm.R1, asm.R0, hOwner, asm.Word),
		asm.LoadMem(asm.R2, asm.RFP, key, asm.Word),
		asm.Add.Imm(asm.R2, 1),
		asm.JEq.Reg(asm.R1, asm.R2, owned),
	}
}

// findStack sets R0 to the current thread's shadow stack (slKey holds
// its key), 0 when it has none.
func (b *builder) findStack() {
	found := b.NewLabel("found")
	if !b.o.Go {
		b.slot(false)
		b.Emit(asm.JNE.Imm(asm.R0, 0, found))
	}
	b.Lookup(b.m.stacks, slKey)
	b.Emit(asm.Mov.Reg(asm.R0, asm.R0).WithSymbol(found)) // Mark would clear R0
}

// cmpXchg compares the word at dst+off with R0 and, when equal, writes
// src there; R0 is then the word before, atomically. As with fetchAdd,
// the immediate is set by hand so that BPF_FETCH reaches the kernel.
func cmpXchg(dst, src asm.Register, off int16) asm.Instruction {
	ins := asm.CmpXchg.Mem(dst, src, asm.Word, off)
	ins.Constant = int64(asm.CmpXchg >> 8)
	return ins
}

// sampling keeps the first call and each N-th after it (N, the probe's
// Every, in the counts map) and marks the others flagSkip.
func (b *builder) sampling() {
	b.Lookup(b.m.counts, slKey32)
	b.Emit(
		asm.JEq.Imm(asm.R0, 0, "exit"),
		// One atomic fetch-and-add both counts the call and gives this
		// call its number (the count before it, into R1): concurrent
		// threads each get their own, so exactly the calls numbered 0,
		// N, 2N, ... are kept.
		asm.Mov.Imm(asm.R1, 1),
		fetchAdd(asm.R0, asm.R1),
		asm.LoadMem(asm.R2, asm.R0, 8, asm.DWord),
		asm.JLE.Imm(asm.R2, 1, "sampled"),
		asm.Mod.Reg(asm.R1, asm.R2),
		asm.JEq.Imm(asm.R1, 0, "sampled"),
		asm.StoreImm(asm.RFP, slFlags, flagSkip, asm.Word),
	)
	b.Mark("sampled")
}

// fetchAdd adds src to the doubleword at dst atomically and sets src to
// the value before. cilium/ebpf v0.22's marshaller takes an instruction's
// immediate before it folds the atomic operation into it, so the
// BPF_FETCH bit of asm.FetchAdd never reaches the kernel (it runs a
// plain atomic add and src keeps its value); setting the immediate
// ourselves (BPF_ADD|BPF_FETCH) encodes it.
func fetchAdd(dst, src asm.Register) asm.Instruction {
	ins := asm.FetchAdd.Mem(dst, src, asm.DWord, 0)
	ins.Constant = int64(asm.FetchAdd >> 8)
	return ins
}

// Pair begins' cookies carry, above the probe id, how to find the frame
// of the function the begin is in (PairCFA).
const (
	cfaKnown = 1 << 30 // the rule below is known
	cfaRBP   = 1 << 29 // CFA = rbp + off, else rsp + off
	cfaOff   = 0xffff
)

// A pair begin's cookie also carries the index of its site among the
// pair's begins (Probe.Offset 0, then Begins), in bits 48–60, so that the
// entry program reads that site's USDT arguments.
const (
	pairSiteShift = 48
	maxPairSite   = 0x1fff
)

// PairSite is the cookie bits of the i-th begin site of a pair (sites
// past maxPairSite share the last index and read no arguments).
func PairSite(i int) uint64 {
	return uint64(min(i, maxPairSite)) << pairSiteShift
}

// PairCFA is what a USDT pair begin's cookie carries above its probe id:
// the CFA rule at the begin's address (CFA = rsp or rbp + off, from the
// function's call frame information), or 0 when none is known.
func PairCFA(rbp bool, off int64) uint32 {
	if off <= 0 || off > cfaOff {
		return 0
	}
	v := uint32(cfaKnown) | uint32(off)
	if rbp {
		v |= cfaRBP
	}
	return v
}

// pairFrame sets slSP, at a USDT pair's begin, to 9 below the CFA of the
// function the begin is in, when its cookie gives the rule: just below
// where the stack pointer was when that function was entered, so the
// pair's frame is retired (popAbandoned) at the first traced event after
// the function has returned, is not taken for the function's own return,
// and is retired at a second begin of the same pair in the same
// activation of the function. It also reads that function's return
// address into slRet and marks the frame flagPair, which tells one
// activation from another at the same depth. Without a rule, slSP is the
// stack pointer itself.
func (b *builder) pairFrame() {
	done, bp := b.NewLabel("pairframe"), b.NewLabel("pairbp")
	b.Emit(
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(asm.RFP, slRet, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.RFP, slProbe, asm.DWord),
		asm.RSh.Imm(asm.R1, 32),
		asm.Mov.Reg(asm.R2, asm.R1),
		asm.And.Imm(asm.R2, cfaKnown),
		asm.JEq.Imm(asm.R2, 0, done),
		asm.Mov.Reg(asm.R2, asm.R1),
		asm.And.Imm(asm.R2, cfaOff),
		asm.LoadMem(asm.R3, rCtx, regSP, asm.DWord),
		asm.Mov.Reg(asm.R4, asm.R1),
		asm.And.Imm(asm.R4, cfaRBP),
		asm.JEq.Imm(asm.R4, 0, bp),
		asm.LoadMem(asm.R3, rCtx, regBP, asm.DWord),
	)
	b.Mark(bp)
	b.Emit(
		asm.Add.Reg(asm.R3, asm.R2),
		asm.Add.Imm(asm.R3, -9),
		asm.StoreMem(asm.RFP, slSP, asm.R3, asm.DWord),
		// The function's return address, at CFA − 8.
		asm.Mov.Reg(asm.R1, asm.RFP),
		asm.Add.Imm(asm.R1, slRet),
		asm.Mov.Imm(asm.R2, 8),
		asm.Add.Imm(asm.R3, 1),
		asm.FnProbeReadUser.Call(),
		asm.JNE.Imm(asm.R0, 0, done),
		asm.LoadMem(asm.R1, asm.RFP, slFlags, asm.Word),
		asm.Or.Imm(asm.R1, flagPair),
		asm.StoreMem(asm.RFP, slFlags, asm.R1, asm.Word),
	)
	b.Mark(done)
}

// chained marks the frame being entered flagChained when the top frame
// has the same stack pointer: a caller that jumped to this function (a
// tail call), whose return address the kernel's trampoline already
// holds. The kernel chains the two returns, and this one's comes back
// with the caller's return address.
func (b *builder) chained() {
	no := b.NewLabel("nochain")
	b.Emit(
		asm.LoadMem(asm.R1, rThread, 0, asm.Word),
		asm.JEq.Imm(asm.R1, 0, no),
		asm.JGT.Imm(asm.R1, MaxDepth, no),
		asm.Add.Imm(asm.R1, -1),
		asm.Mul.Imm(asm.R1, frameSize),
		asm.Mov.Reg(asm.R2, rThread),
		asm.Add.Reg(asm.R2, asm.R1),
		asm.LoadMem(asm.R3, asm.R2, stackHdr+fSP, asm.DWord),
		asm.LoadMem(asm.R4, asm.RFP, slSP, asm.DWord),
		asm.JNE.Reg(asm.R3, asm.R4, no),
		asm.LoadMem(asm.R1, asm.RFP, slFlags, asm.Word),
		asm.Or.Imm(asm.R1, flagChained),
		asm.StoreMem(asm.RFP, slFlags, asm.R1, asm.Word),
	)
	b.Mark(no)
}

// entryProgram runs at a traced function's first instruction.
func entryProgram(m maps, o progOptions) asm.Instructions {
	b := &builder{m: m, o: o}
	b.Emit(
		asm.Mov.Reg(rCtx, asm.R1),
		asm.FnGetAttachCookie.Call(),
		asm.StoreMem(asm.RFP, slProbe, asm.R0, asm.DWord),
		asm.StoreMem(asm.RFP, slKey32, asm.R0, asm.Word),
		asm.StoreImm(asm.RFP, slFlags, 0, asm.Word),
	)
	if o.Timed {
		// Dormant phase: the call is not entered at all (its return then
		// finds another frame, or none, on top and is not recorded).
		b.Emit(asm.StoreImm(asm.RFP, slKey32, 0, asm.Word))
		b.Lookup(m.phase, slKey32)
		dormant := "exit"
		if o.Session {
			dormant = "unset"
		}
		b.Emit(
			asm.JEq.Imm(asm.R0, 0, "exit"),
			asm.LoadMem(asm.R1, asm.R0, 0, asm.Word),
			asm.JNE.Imm(asm.R1, 0, dormant),
			asm.LoadMem(asm.R1, asm.RFP, slProbe, asm.Word),
			asm.StoreMem(asm.RFP, slKey32, asm.R1, asm.Word),
		)
	}
	if o.Sampling {
		b.sampling()
	}
	b.thread(true)
	b.readOff(true)
	b.Emit(
		asm.LoadMem(asm.R1, rCtx, regSP, asm.DWord),
		asm.StoreMem(asm.RFP, slSP, asm.R1, asm.DWord),
	)
	if o.Pair {
		b.pairFrame()
	}
	if o.Pair && len(o.PairIDs) > 0 {
		b.Emit(asm.StoreImm(asm.RFP, slHasID, 0, asm.Word))
		b.pairIDs(o.PairIDs, false)
	}
	// Frames below this entry's stack pointer were left without a
	// return. One at the same stack pointer is a caller that tail-called
	// this function (its return is this one's).
	b.popAbandoned(false)
	if !o.Go && !o.Pair {
		b.chained()
	}
	b.Emit(
		asm.LoadMem(asm.R1, rThread, 0, asm.Word),
		asm.JLT.Imm(asm.R1, MaxDepth, "push"),
	)
	if o.Go {
		// Probes on Go's RET instructions fire at any depth: count the
		// call, so that its return finds it.
		b.Emit(
			asm.Add.Imm(asm.R1, 1),
			asm.StoreMem(rThread, 0, asm.R1, asm.Word),
		)
	}
	// A uretprobe is not set this deep (MaxDepth): nothing to count, as
	// no return will come.
	b.count(sDepth)
	if b.stampAtEnd() {
		b.Emit(asm.FnKtimeGetNs.Call())
		b.stampHit()
	}
	b.Emit(asm.Ja.Label("exit"))
	b.Emit(asm.Mov.Reg(rTmp, asm.R1).WithSymbol("push"))
	b.frameAt()
	if o.MaxDepth > 0 {
		// Deeper calls are pushed (their returns must match) but not
		// written.
		b.Emit(
			asm.JLT.Imm(rTmp, o.MaxDepth, "shallow"),
			asm.StoreImm(asm.RFP, slFlags, flagSkip, asm.Word),
		)
		b.Mark("shallow")
	}
	b.Emit(
		asm.Add.Imm(rTmp, 1),
		asm.StoreMem(rThread, 0, rTmp, asm.Word),
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(rFrame, fChild, asm.R1, asm.DWord),
		asm.StoreMem(rFrame, fChildOff, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.RFP, slOff, asm.DWord),
		asm.StoreMem(rFrame, fOff, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.RFP, slTid, asm.Word),
		asm.StoreMem(rFrame, fTid, asm.R1, asm.Word),
		asm.LoadMem(asm.R1, asm.RFP, slSw, asm.Word),
		asm.StoreMem(rFrame, fSw, asm.R1, asm.Word),
		asm.LoadMem(asm.R1, asm.RFP, slSP, asm.DWord),
		asm.StoreMem(rFrame, fSP, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.RFP, slProbe, asm.Word),
		asm.StoreMem(rFrame, fProbe, asm.R1, asm.Word),
		asm.LoadMem(asm.R1, asm.RFP, slFlags, asm.Word),
		asm.StoreMem(rFrame, fFlags, asm.R1, asm.Word),
	)
	if o.Pair {
		// The begin's address, plus one: read as a return address (the
		// byte before it is looked up), it names the begin's own line.
		b.Emit(
			asm.LoadMem(asm.R1, rCtx, regIP, asm.DWord),
			asm.Add.Imm(asm.R1, 1),
			asm.StoreMem(rFrame, fSite, asm.R1, asm.DWord),
			asm.LoadMem(asm.R1, asm.RFP, slRet, asm.DWord),
			asm.StoreMem(rFrame, fMem, asm.R1, asm.DWord),
		)
	} else if o.Go {
		b.Emit(
			// The call site: the return address on top of the stack.
			asm.Mov.Reg(asm.R1, rFrame),
			asm.Add.Imm(asm.R1, fSite),
			asm.Mov.Imm(asm.R2, 8),
			asm.LoadMem(asm.R3, asm.RFP, slSP, asm.DWord),
			asm.FnProbeReadUser.Call(),
		)
	} else {
		// The call site comes with the return (the IP a uretprobe
		// returns to): reading the stack here would cost the call more
		// than all the rest of the entry. A call that never returns
		// keeps none.
		b.Emit(
			asm.Mov.Imm(asm.R1, 0),
			asm.StoreMem(rFrame, fSite, asm.R1, asm.DWord),
		)
	}
	if o.Args {
		regs := []int16{regDI, regSI, regDX, regCX, regR8, regR9}
		if o.Go {
			regs = []int16{regAX, regBX, regCX, regDI, regSI, regR8}
		}
		for i, r := range regs {
			b.Emit(
				asm.LoadMem(asm.R1, rCtx, r, asm.DWord),
				asm.StoreMem(rFrame, fArgs+int16(8*i), asm.R1, asm.DWord),
			)
		}
		if o.Reads {
			b.readMem()
		}
		if o.Pair && len(o.PairArgs) > 0 {
			b.pairArgs(o.PairArgs)
		}
	}
	if o.Pair && len(o.PairIDs) > 0 {
		// The id goes in the first argument slot (after the arguments,
		// whose first is the same operand, unmasked).
		noid := b.NewLabel("noid")
		b.Emit(
			asm.LoadMem(asm.R1, asm.RFP, slHasID, asm.Word),
			asm.JEq.Imm(asm.R1, 0, noid),
			asm.LoadMem(asm.R1, asm.RFP, slID, asm.DWord),
			asm.StoreMem(rFrame, fArgs, asm.R1, asm.DWord),
		)
		b.Mark(noid)
	}
	// The clock is read last, so that the probe's own cost falls outside
	// the call as far as it can.
	b.Emit(
		asm.FnKtimeGetNs.Call(),
		asm.StoreMem(rFrame, fStart, asm.R0, asm.DWord),
	)
	b.stampHit()
	b.Emit(
		asm.Mov.Imm(asm.R0, 0).WithSymbol("exit"),
		asm.Return(),
	)
	if o.Session && o.Timed {
		b.Emit(
			asm.Mov.Imm(asm.R0, 1).WithSymbol("unset"),
			asm.Return(),
		)
	}
	return b.Ins
}

// sessionProgram runs at both ends of a traced call whose probes are
// one uprobe session link (BPF_TRACE_UPROBE_SESSION): entryProgram at
// its entry, and, when that returned 0, returnProgram (entry's options
// but for RetAdjust 8, a uretprobe's) after its return, told apart by the
// kfunc bpf_session_is_return (isReturn: its call). The kernel sets such
// a link's entry and return probes in one step: with separate links (the
// return probes first, so that a call whose entry is seen has its return
// seen), a call entered between the two has a trampoline for a return
// address and no record to give it back, and the CPU samples taken
// inside it keep a [uretprobe] frame. Once the stop map holds 1, calls
// are no longer entered and get no return probe (Detach: the calls in
// flight return through the links, which stay a while).
func sessionProgram(m maps, o progOptions, isReturn asm.Instruction) asm.Instructions {
	b := &builder{m: m, o: o}
	b.Emit(
		asm.Mov.Reg(rCtx, asm.R1),
		isReturn,
		asm.And.Imm(asm.R0, 0xff), // a bool
		asm.JNE.Imm(asm.R0, 0, "s.return"),
		asm.LoadMapValue(asm.R1, m.stop, 0),
		asm.LoadMem(asm.R1, asm.R1, 0, asm.Word),
		asm.JNE.Imm(asm.R1, 0, "s.stop"),
		asm.Mov.Reg(asm.R1, rCtx),
	)
	eo, ro := o, o
	eo.Session = true
	ro.RetAdjust = 8
	b.Emit(relabel("e.", entryProgram(m, eo))...)
	b.Emit(asm.Mov.Reg(asm.R1, rCtx).WithSymbol("s.return"))
	b.Emit(relabel("r.", returnProgram(m, ro))...)
	b.Emit(
		asm.Mov.Imm(asm.R0, 1).WithSymbol("s.stop"),
		asm.Return(),
	)
	return b.Ins
}

// relabel prefixes the labels of a program's instructions and the jumps'
// references to them, so that two programs' labels do not meet when one
// is appended to the other.
func relabel(prefix string, ins asm.Instructions) asm.Instructions {
	out := make(asm.Instructions, len(ins))
	for i, in := range ins {
		if s := in.Symbol(); s != "" {
			in = in.WithSymbol(prefix + s)
		}
		if r := in.Reference(); r != "" {
			in = in.WithReference(prefix + r)
		}
		out[i] = in
	}
	return out
}

// returnProgram runs when a traced function returns: after the RET of a
// uretprobe (RetAdjust 8), or at the RET instruction itself (0); with
// Pair, at a USDT pair's end (0).
func returnProgram(m maps, o progOptions) asm.Instructions {
	b := &builder{m: m, o: o}
	b.Emit(
		asm.Mov.Reg(rCtx, asm.R1),
		asm.FnKtimeGetNs.Call(),
		asm.StoreMem(asm.RFP, slNow, asm.R0, asm.DWord),
	)
	if o.Go || o.Pair {
		// The return is matched by its probe; a uretprobe's by its
		// stack pointer, and its probe is its frame's.
		b.Emit(
			asm.Mov.Reg(asm.R1, rCtx),
			asm.FnGetAttachCookie.Call(),
			asm.StoreMem(asm.RFP, slProbe, asm.R0, asm.DWord),
		)
	}
	b.Emit(
		asm.LoadMem(asm.R1, rCtx, regSP, asm.DWord),
		asm.Add.Imm(asm.R1, -o.RetAdjust),
		asm.StoreMem(asm.RFP, slSP, asm.R1, asm.DWord),
	)
	ids := o.Pair && !o.Go && len(o.PairIDs) > 0
	if ids {
		b.Emit(asm.StoreImm(asm.RFP, slHasID, 0, asm.Word))
		b.pairIDs(o.PairIDs, true)
	}
	b.thread(false)
	b.readOff(false)
	// Frames below the returning one were left without a return.
	b.popAbandoned(true)
	b.Emit(
		asm.LoadMem(asm.R1, rThread, 0, asm.Word),
		asm.JEq.Imm(asm.R1, 0, "unmatched"),
		asm.JLE.Imm(asm.R1, MaxDepth, "intop"),
		// Deeper than the stack holds: its entry was counted lost.
		asm.Add.Imm(asm.R1, -1),
		asm.StoreMem(rThread, 0, asm.R1, asm.Word),
		asm.Ja.Label("exit"),
		asm.Add.Imm(asm.R1, -1).WithSymbol("intop"),
		asm.StoreMem(asm.RFP, slIdx, asm.R1, asm.Word),
	)
	b.frameAt()
	if o.Pair && !o.Go {
		b.Emit(
			asm.LoadMem(asm.R1, rFrame, fProbe, asm.Word),
			asm.LoadMem(asm.R2, asm.RFP, slProbe, asm.Word),
			asm.JNE.Reg(asm.R1, asm.R2, "interleaved"),
		)
		if ids {
			// Its own pair on top, but begun with another id: a
			// begin below with the end's id goes first.
			b.Emit(
				asm.LoadMem(asm.R1, asm.RFP, slHasID, asm.Word),
				asm.JEq.Imm(asm.R1, 0, "pairtop"),
				asm.LoadMem(asm.R1, rFrame, fArgs, asm.DWord),
				asm.LoadMem(asm.R2, asm.RFP, slID, asm.DWord),
				asm.JNE.Reg(asm.R1, asm.R2, "interleaved"),
			)
			b.Mark("pairtop")
		}
	} else if o.Go {
		b.Emit(
			asm.LoadMem(asm.R1, rFrame, fProbe, asm.Word),
			asm.LoadMem(asm.R2, asm.RFP, slProbe, asm.Word),
			asm.JNE.Reg(asm.R1, asm.R2, "unmatched"),
		)
	} else {
		// A return whose entry was not seen (attached mid-call) has a
		// frame of its caller, or none, on top.
		b.Emit(
			asm.LoadMem(asm.R1, rFrame, fSP, asm.DWord),
			asm.LoadMem(asm.R2, asm.RFP, slSP, asm.DWord),
			asm.JNE.Reg(asm.R1, asm.R2, "unmatched"),
		)
		if o.RetInsn {
			// The call site: the return address on top of the stack,
			// which the RET is about to take.
			b.Emit(
				asm.Mov.Reg(asm.R1, rFrame),
				asm.Add.Imm(asm.R1, fSite),
				asm.Mov.Imm(asm.R2, 8),
				asm.LoadMem(asm.R3, asm.RFP, slSP, asm.DWord),
				asm.FnProbeReadUser.Call(),
			)
		} else {
			// The call site: where the uretprobe returns to.
			b.Emit(
				asm.LoadMem(asm.R1, rCtx, regIP, asm.DWord),
				asm.StoreMem(rFrame, fSite, asm.R1, asm.DWord),
			)
		}
	}
	if o.TailJump {
		b.popFrame(TailJumped, false, "exit")
	} else {
		b.popFrame(0, !o.Pair, "exit")
	}
	if o.RetInsn && !o.Go && !o.TailJump {
		b.retChained()
	}
	b.Emit(asm.Ja.Label("exit"))
	if o.Pair && !o.Go {
		b.Mark("interleaved")
		b.endInterleaved(ids)
	}
	b.Mark("unmatched")
	b.count(sUnmatched)
	b.Emit(
		asm.Mov.Imm(asm.R0, 0).WithSymbol("exit"),
		asm.Return(),
	)
	return b.Ins
}

// chainPops bounds how many tail callers one RET instruction's probe
// returns after its own call (retChained).
const chainPops = 4

// retChained, at a RET instruction's probe (RetInsn) after the top frame
// returned (rFrame, its index at slIdx), returns the frames below it at
// the same stack pointer while the one just returned was entered by a
// tail call (flagChained): a traced caller that jumped to it has no RET
// of its own to run, its return is this one. Each gets the same call
// site and return value.
func (b *builder) retChained() {
	for k := 0; k < chainPops; k++ {
		b.Emit(
			asm.LoadMem(asm.R1, rFrame, fFlags, asm.Word),
			asm.And.Imm(asm.R1, flagChained),
			asm.JEq.Imm(asm.R1, 0, "exit"),
			asm.LoadMem(asm.R1, rFrame, fSite, asm.DWord),
			asm.StoreMem(asm.RFP, slRet, asm.R1, asm.DWord),
			asm.LoadMem(asm.R1, rThread, 0, asm.Word),
			asm.JEq.Imm(asm.R1, 0, "exit"),
			asm.JGT.Imm(asm.R1, MaxDepth, "exit"),
			asm.Add.Imm(asm.R1, -1),
			asm.StoreMem(asm.RFP, slIdx, asm.R1, asm.Word),
		)
		b.frameAt()
		b.Emit(
			asm.LoadMem(asm.R1, rFrame, fSP, asm.DWord),
			asm.LoadMem(asm.R2, asm.RFP, slSP, asm.DWord),
			asm.JNE.Reg(asm.R1, asm.R2, "exit"),
			asm.LoadMem(asm.R1, asm.RFP, slRet, asm.DWord),
			asm.StoreMem(rFrame, fSite, asm.R1, asm.DWord),
		)
		b.popFrame(0, true, "exit")
	}
}

// unwoundProgram runs where C++ and Rust code meets a thrown exception
// or panic on its way up: at the entry of __cxa_begin_catch (a catch's
// landing pad, in the catching function's frame) and of _Unwind_Resume
// (a clean-up's landing pad, which resumes the unwinding). Every frame
// at or below the stack pointer there belongs to a call the exception
// has left: each is written as a call that did not return, Unwound, and
// ends now. The calls above it are untouched, and a thread with no
// shadow stack costs a lookup.
func unwoundProgram(m maps, o progOptions) asm.Instructions {
	b := &builder{m: m, o: o}
	b.Emit(
		asm.Mov.Reg(rCtx, asm.R1),
		asm.FnKtimeGetNs.Call(),
		asm.StoreMem(asm.RFP, slNow, asm.R0, asm.DWord),
		// The call that reached the landing pad pushed its return
		// address: frames at that stack pointer (the catching
		// function's callee) are gone too.
		asm.LoadMem(asm.R1, rCtx, regSP, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.RFP, slSP, asm.R1, asm.DWord),
	)
	b.threadKey()
	b.findStack()
	b.Emit(
		asm.JEq.Imm(asm.R0, 0, "exit"),
		asm.Mov.Reg(rThread, asm.R0),
	)
	b.readOff(false)
	b.popAbandonedAs(true, Unreturned|Unwound)
	b.Emit(
		asm.Mov.Imm(asm.R0, 0).WithSymbol("exit"),
		asm.Return(),
	)
	return b.Ins
}

// pairReach is how far below the top of a thread's shadow stack a pair's
// end looks for its begin when another pair's begin came after it.
const pairReach = 4

// endInterleaved ends, at a pair's end whose begin is not on top of the
// thread's shadow stack, the innermost open begin of its pair among the
// pairReach frames below the top: pairs interleaved in one function (A's
// begin, B's begin, A's end). Its frame leaves the middle of the stack:
// the frames above it move down one place. The time the frame just above
// it has been open counts as time in a traced callee of the pair that
// ends (that frame was begun inside it), and only the part before that
// frame began goes to its caller's callees, which the frame above adds
// to when it ends: the caller's callee time is the union of the two. It
// jumps to unmatched when no begin of the pair is within reach. With ids
// (the end read one: slHasID), the begin must have the end's id; when
// none within reach has, the innermost begin of the pair is taken, on
// top (jumping back to pairtop) or below.
func (b *builder) endInterleaved(ids bool) {
	found := b.NewLabel("ilfound")
	// search looks at frames first..pairReach+1 from the top for one of
	// the end's pair, with the end's id if byID; nomatch is where it goes
	// when none is.
	search := func(first int32, byID bool, nomatch string) {
		for k := first; k <= pairReach+1; k++ {
			next := b.NewLabel("ilnext")
			// R1 = depth − k, the index of the k-th frame from the top.
			b.Emit(
				asm.LoadMem(asm.R1, rThread, 0, asm.Word),
				asm.JLT.Imm(asm.R1, k, nomatch),
				asm.JGT.Imm(asm.R1, MaxDepth, nomatch),
				asm.Add.Imm(asm.R1, -k),
				asm.JGT.Imm(asm.R1, MaxDepth-1, nomatch),
				asm.StoreMem(asm.RFP, slIdx, asm.R1, asm.Word),
			)
			b.frameAt()
			b.Emit(
				asm.LoadMem(asm.R1, rFrame, fProbe, asm.Word),
				asm.LoadMem(asm.R2, asm.RFP, slProbe, asm.Word),
				asm.JNE.Reg(asm.R1, asm.R2, next),
			)
			if byID {
				b.Emit(
					asm.LoadMem(asm.R1, asm.RFP, slHasID, asm.Word),
					asm.JEq.Imm(asm.R1, 0, found),
					asm.LoadMem(asm.R1, rFrame, fArgs, asm.DWord),
					asm.LoadMem(asm.R2, asm.RFP, slID, asm.DWord),
					asm.JNE.Reg(asm.R1, asm.R2, next),
				)
			}
			if k == 1 {
				b.Emit(asm.Ja.Label("pairtop"))
			} else {
				b.Emit(asm.Ja.Label(found))
			}
			b.Mark(next)
		}
		b.Emit(asm.Ja.Label(nomatch))
	}
	if ids {
		byInnermost := b.NewLabel("ilinnermost")
		search(2, true, byInnermost)
		b.Mark(byInnermost)
		search(1, false, "unmatched")
	} else {
		search(2, false, "unmatched")
	}
	b.Mark(found)
	// The frame above must be in the map value: the begin is not on top.
	b.Emit(
		asm.LoadMem(asm.R1, asm.RFP, slIdx, asm.Word),
		asm.JGT.Imm(asm.R1, MaxDepth-2, "unmatched"),
	)
	b.frameAt()
	// rFrame is frame slIdx ≤ MaxDepth−2, so the frame above it is in
	// the map value.
	b.Emit(
		asm.LoadMem(asm.R2, rFrame, frameSize+fStart, asm.DWord),
		asm.StoreMem(asm.RFP, slOverlap, asm.R2, asm.DWord),
		asm.LoadMem(asm.R3, asm.RFP, slNow, asm.DWord),
		asm.Sub.Reg(asm.R3, asm.R2),
		asm.LoadMem(asm.R1, rFrame, fChild, asm.DWord),
		asm.Add.Reg(asm.R1, asm.R3),
		asm.StoreMem(rFrame, fChild, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.RFP, slIdx, asm.Word),
	)
	b.callerOf()
	b.emitCall(0, false)
	// The caller's callees get the pair's time up to the overlap: its
	// end is taken as where the frame above began. Off-CPU time is not
	// split so: the frame's thread is forgotten, so none goes to the
	// caller (the frame above adds its own when it ends).
	b.Emit(
		asm.LoadMem(asm.R1, asm.RFP, slOverlap, asm.DWord),
		asm.StoreMem(asm.RFP, slNow, asm.R1, asm.DWord),
		asm.StoreImm(rFrame, fTid, 0, asm.Word),
		asm.LoadMem(asm.R1, asm.RFP, slIdx, asm.Word),
	)
	b.addChild()
	// Each frame above moves down one place: frames slIdx+1 ... depth−1
	// (at most pairReach of them).
	for k := int32(0); k < pairReach; k++ {
		b.Emit(
			asm.LoadMem(asm.R1, asm.RFP, slIdx, asm.Word),
			asm.Add.Imm(asm.R1, k),
			asm.LoadMem(asm.R2, rThread, 0, asm.Word),
			asm.Add.Imm(asm.R2, -1),
			asm.JGE.Reg(asm.R1, asm.R2, "ilshifted"),
			asm.JGT.Imm(asm.R1, MaxDepth-2, "ilshifted"),
		)
		b.frameAt()
		for off := int16(0); off < frameSize; off += 8 {
			b.Emit(
				asm.LoadMem(asm.R3, rFrame, frameSize+off, asm.DWord),
				asm.StoreMem(rFrame, off, asm.R3, asm.DWord),
			)
		}
	}
	b.Mark("ilshifted")
	b.Emit(
		asm.LoadMem(asm.R1, rThread, 0, asm.Word),
		asm.Add.Imm(asm.R1, -1),
		asm.StoreMem(rThread, 0, asm.R1, asm.Word),
		asm.Ja.Label("exit"),
	)
}

// runAccount is how switchProgram places the end of a run by the
// kernel's account: execOff is the offset of se.sum_exec_runtime in
// task_struct (-1: none, or beyond a BPF load's 16-bit offset: stamps
// alone); with gap, clocks leads from the task to its run queue's clock
// and clock_task, whose difference grows by the steal and interrupt time
// the kernel leaves out of sum_exec_runtime.
type runAccount struct {
	execOff int32
	gap     bool
	clocks  bpfasm.RunQueueClocks
}

// kernelAccount returns the runAccount of the running kernel: the
// account with the run queue's clocks where they can be read, the account
// alone where clock_task is the run queue's clock, else stamps alone (by
// sum_exec_runtime alone, a run's steal would come out of a call entered
// after it; only the run queue knows how much there was).
func kernelAccount() runAccount {
	why := "to measure calls' time on the CPU by the kernel's account"
	a := runAccount{execOff: bpfasm.ExecRuntimeOffset(why)}
	if a.execOff < 0 || a.execOff > math.MaxInt16-8 {
		a.execOff = -1 // a BPF load's offset is 16 bits
		return a
	}
	a.clocks, a.gap = bpfasm.RunQueueClockOffsets(why)
	c := a.clocks
	if max(c.CfsRq, c.Rq, c.Clock, c.ClockTask) > math.MaxInt16-8 {
		a.gap = false // a BPF load's offset is 16 bits
	}
	if !a.gap && !bpfasm.RunQueueClockTaskExact(why) {
		a.execOff = -1
	}
	return a
}

// switchProgram runs at each context switch (the sched:sched_switch
// tracepoint, in the leaving thread): a followed thread that leaves the
// CPU notes when, and one that comes back adds the time it was away to
// its off-CPU total; both count the switch in oSeen. nextPid is the
// offset of next_pid in the tracepoint's record. The fields are in the
// offcpu map (goroutines: Go programs) or in the header of the thread's
// shadow stack (the stacks map, keyed by thread id). Threads are followed
// from their first traced call (readOff), so every other switch costs
// two hash lookups.
//
// The tracepoint fires after the kernel picked the next thread: its
// stamps are later than the run queue's clock the kernel's account of a
// run ends and starts at (read where the switch began), by the
// scheduler's work before it, most of all at a switch to an idle CPU
// (its load balancing): by stamps alone, a run that ends in a block is
// that much longer. With acct.execOff, a thread that leaves the CPU
// after a run whose start switchProgram saw is away from where the
// kernel's account of the run ends: the run's start (oIn) plus its length
// by that account (the growth of sum_exec_runtime since the thread's
// previous switch away, oRT: it does not run in between), so that a
// call's time on the CPU (its duration less its off-CPU time) holds its
// runs by the kernel's account, and by stamps only before its entry and
// after its return in the runs those fall in.
//
// sum_exec_runtime grows by the run queue's clock_task, which leaves out
// the time a hypervisor took the CPU away (steal) and, with IRQ time
// accounting, interrupts: the account of a run with steal ends early by
// all of it, as if the steal had come at the run's end, and a call
// entered in the run after the steal lost it from its own part of the
// run (entered in the last 2 ms of a run with 2 ms of steal, it left the
// CPU before it began, its time on the CPU 0). Where in the run the
// steal came is not known: the run queue brings clock_task up to date
// only at ticks and switches, so a probe hit cannot tell the steal before
// it. So with acct.gap, a run a probe hit (oHit, noted by readOff) keeps
// that time, its account growing as the run queue's clock does (by the
// growth of clock - clock_task over the run as well, from oGap, read
// where it began on the CPU it ran on): the calls that straddle its end
// count it as time on the CPU, as they do in the runs measured by stamps.
// A run no probe hit lies inside every call that straddles it, and leaves
// the time out, as the thread's own CPU clock does. With the account, the
// thread is never away before the run's last probe hit (oHit: it was on
// the CPU then, and no call can come out off the CPU for longer than it
// lasted, whatever the clocks did) nor after the stamp of its switch.
func switchProgram(m maps, nextPid int16, goroutines bool, acct runAccount) asm.Instructions {
	mp, base := m.stacks, int16(hOff)
	if goroutines {
		mp, base = m.offcpu, 0
	}
	execOff := acct.execOff
	// lookup sets R0 to the thread's entry (the key at keyAt), or 0: a
	// thread's slot, then the map.
	lookup := func(found string) asm.Instructions {
		var ins asm.Instructions
		if !goroutines {
			miss := found + ".miss"
			ins = append(slotOf(m.slots, -8, -16, miss, found), asm.LoadMapPtr(asm.R1, mp).WithSymbol(miss))
		} else {
			ins = append(ins, asm.LoadMapPtr(asm.R1, mp))
		}
		return append(ins,
			asm.Mov.Reg(asm.R2, asm.RFP),
			asm.Add.Imm(asm.R2, int32(keyAt(goroutines))),
			asm.FnMapLookupElem.Call(),
			asm.Mov.Reg(asm.R0, asm.R0).WithSymbol(found),
		)
	}
	ins := asm.Instructions{
		asm.Mov.Reg(rCtx, asm.R1),
		asm.FnKtimeGetNs.Call(),
		asm.Mov.Reg(rTmp, asm.R0),
		asm.FnGetCurrentPidTgid.Call(),
		// The key: the thread id, 4 bytes (offcpu) or 8 (stacks).
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(asm.RFP, -8, asm.R1, asm.DWord),
		asm.StoreMem(asm.RFP, keyAt(goroutines), asm.R0, asm.Word),
	}
	ins = append(ins, lookup("prev")...)
	ins = append(ins,
		asm.JEq.Imm(asm.R0, 0, "next"),
		asm.LoadMem(asm.R1, asm.R0, base+oSeen, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, base+oSeen, asm.R1, asm.DWord),
	)
	gap := acct.gap && execOff >= 0
	if execOff < 0 {
		ins = append(ins, asm.StoreMem(asm.R0, base+oOut, rTmp, asm.DWord))
	} else {
		ins = append(ins,
			asm.Mov.Reg(rFrame, asm.R0),
			asm.FnGetCurrentTaskBtf.Call(),
			asm.LoadMem(asm.R2, asm.R0, int16(execOff), asm.DWord), // now
			asm.Mov.Imm(asm.R5, 0),
		)
		sumStart := asm.LoadMem(asm.R3, rFrame, base+oRT, asm.DWord) // at the last switch away
		if gap {
			// R5: the growth of clock - clock_task over the run when a
			// probe hit it.
			ins = append(ins,
				asm.LoadMem(asm.R1, rFrame, base+oHit, asm.DWord),
				asm.JEq.Imm(asm.R1, 0, "gapped"),
			)
			ins = append(ins, runQueueGap(acct.clocks, asm.R5)...)
			ins = append(ins,
				asm.LoadMem(asm.R0, rFrame, base+oGap, asm.DWord),
				asm.JGE.Reg(asm.R5, asm.R0, "gapgrew"),
				asm.Mov.Reg(asm.R5, asm.R0),
				asm.Sub.Reg(asm.R5, asm.R0).WithSymbol("gapgrew"),
			)
			sumStart = sumStart.WithSymbol("gapped")
		}
		ins = append(ins,
			sumStart,
			asm.StoreMem(rFrame, base+oRT, asm.R2, asm.DWord),
			asm.LoadMem(asm.R4, rFrame, base+oIn, asm.DWord),
			asm.Mov.Imm(asm.R1, 0),
			asm.StoreMem(rFrame, base+oIn, asm.R1, asm.DWord),
			asm.Mov.Reg(asm.R1, rTmp),
			asm.JEq.Imm(asm.R3, 0, "away"),
			asm.JEq.Imm(asm.R4, 0, "away"),
			asm.JLT.Reg(asm.R2, asm.R3, "away"),
			asm.Sub.Reg(asm.R2, asm.R3),
			asm.Add.Reg(asm.R2, asm.R5),
			asm.Add.Reg(asm.R4, asm.R2),
			// Not before the run's last probe hit, nor after this stamp.
			asm.LoadMem(asm.R3, rFrame, base+oHit, asm.DWord),
			asm.JGE.Reg(asm.R4, asm.R3, "afterhit"),
			asm.Mov.Reg(asm.R4, asm.R3),
			asm.JGT.Reg(asm.R4, rTmp, "away").WithSymbol("afterhit"),
			asm.Mov.Reg(asm.R1, asm.R4),
			asm.StoreMem(rFrame, base+oOut, asm.R1, asm.DWord).WithSymbol("away"),
		)
	}
	ins = append(ins,
		asm.Mov.Imm(asm.R1, 0).WithSymbol("next"),
		asm.StoreMem(asm.RFP, -8, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, rCtx, nextPid, asm.Word),
		asm.StoreMem(asm.RFP, keyAt(goroutines), asm.R1, asm.Word),
	)
	ins = append(ins, lookup("nextfound")...)
	ins = append(ins,
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.LoadMem(asm.R1, asm.R0, base+oSeen, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, base+oSeen, asm.R1, asm.DWord),
		asm.StoreMem(asm.R0, base+oIn, rTmp, asm.DWord),
	)
	if execOff >= 0 {
		ins = append(ins,
			asm.Mov.Imm(asm.R1, 0),
			asm.StoreMem(asm.R0, base+oHit, asm.R1, asm.DWord),
		)
	}
	if gap {
		// The leaving thread ran on this CPU: its run queue is the one
		// the coming thread's run begins on.
		ins = append(ins,
			asm.Mov.Reg(rFrame, asm.R0),
			asm.FnGetCurrentTaskBtf.Call(),
		)
		ins = append(ins, runQueueGap(acct.clocks, asm.R1)...)
		ins = append(ins,
			asm.StoreMem(rFrame, base+oGap, asm.R1, asm.DWord),
			asm.Mov.Reg(asm.R0, rFrame),
		)
	}
	return append(ins,
		asm.LoadMem(asm.R1, asm.R0, base+oOut, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, "out"),
		// Away from the end of its last run by the kernel's account,
		// which may be past this stamp: nothing then.
		asm.JGE.Reg(asm.R1, rTmp, "back"),
		asm.Mov.Reg(asm.R2, rTmp),
		asm.Sub.Reg(asm.R2, asm.R1),
		asm.LoadMem(asm.R1, asm.R0, base+oTotal, asm.DWord),
		asm.Add.Reg(asm.R1, asm.R2),
		asm.StoreMem(asm.R0, base+oTotal, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R1, 0).WithSymbol("back"),
		asm.StoreMem(asm.R0, base+oOut, asm.R1, asm.DWord),
		// 1, not 0: the programs on a tracepoint filter it for every perf
		// event on it (perf_trace_run_bpf_submit), so 0 would hide the
		// machine's context switches from perf, culprit record --events
		// and trace --sched.
		asm.Mov.Imm(asm.R0, 1).WithSymbol("out"),
		asm.Return(),
	)
}

// runQueueGap sets dst to clock - clock_task of the run queue of the task
// in R0 (a BTF pointer), by the way c gives; it uses R0 and dst. A read
// through a null pointer gives 0 (the loads are the kernel's probing
// ones).
func runQueueGap(c bpfasm.RunQueueClocks, dst asm.Register) asm.Instructions {
	return asm.Instructions{
		asm.LoadMem(asm.R0, asm.R0, int16(c.CfsRq), asm.DWord),
		asm.LoadMem(asm.R0, asm.R0, int16(c.Rq), asm.DWord),
		asm.LoadMem(dst, asm.R0, int16(c.Clock), asm.DWord),
		asm.LoadMem(asm.R0, asm.R0, int16(c.ClockTask), asm.DWord),
		asm.Sub.Reg(dst, asm.R0),
	}
}

// keyAt is where switchProgram's key starts on its stack: a 4-byte
// thread id for the offcpu map, 8 bytes (the id, then zeros) for stacks.
func keyAt(goroutines bool) int16 {
	if goroutines {
		return -4
	}
	return -8
}

// flipProgram runs at each tick of the timed-sampling clock: it turns the
// phase from gathering (0) to dormant (1) and back. It returns 0, so no
// sample is written.
func flipProgram(m maps) asm.Instructions {
	return asm.Instructions{
		asm.StoreImm(asm.RFP, -4, 0, asm.Word),
		asm.LoadMapPtr(asm.R1, m.phase),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.Word),
		asm.Xor.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.Word),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	}
}

// ArgKind is where a USDT argument is.
type ArgKind uint8

// The kinds of USDT argument operands.
const (
	ArgConst ArgKind = iota + 1 // $imm: Off is the value
	ArgReg                      // %reg: the register
	ArgMem                      // off(%reg) or off(%base,%index,scale): memory at Off plus the registers
)

// ArgSpec is one USDT probe argument as sys/sdt.h describes it
// ("SIZE@OPERAND", e.g. -4@%edi, 8@-8(%rbp), 4@$5, -8@(%rsp,%rcx,8)):
// where its value is at the probe and how many bytes it has.
type ArgSpec struct {
	Kind ArgKind
	Reg  int16 // pt_regs offset of the register (RegOffset); ArgMem: the base, -1 for none
	Off  int64
	Size int // 1, 2, 4 or 8 bytes
	// Index and Scale, for ArgMem with Scale > 0: the address also adds
	// the register at pt_regs offset Index times Scale (1, 2, 4 or 8).
	Index int16
	Scale int
}

// regOffsets are the pt_regs offsets (x86-64) of the registers by every
// name an operand may give them.
var regOffsets = func() map[string]int16 {
	m := map[string]int16{}
	add := func(off int16, names ...string) {
		for _, n := range names {
			m[n] = off
		}
	}
	add(0, "r15", "r15d", "r15w", "r15b")
	add(8, "r14", "r14d", "r14w", "r14b")
	add(16, "r13", "r13d", "r13w", "r13b")
	add(24, "r12", "r12d", "r12w", "r12b")
	add(32, "rbp", "ebp", "bp", "bpl")
	add(40, "rbx", "ebx", "bx", "bl")
	add(48, "r11", "r11d", "r11w", "r11b")
	add(56, "r10", "r10d", "r10w", "r10b")
	add(64, "r9", "r9d", "r9w", "r9b")
	add(72, "r8", "r8d", "r8w", "r8b")
	add(80, "rax", "eax", "ax", "al")
	add(88, "rcx", "ecx", "cx", "cl")
	add(96, "rdx", "edx", "dx", "dl")
	add(104, "rsi", "esi", "si", "sil")
	add(112, "rdi", "edi", "di", "dil")
	add(128, "rip")
	add(152, "rsp", "esp", "sp", "spl")
	return m
}()

// RegOffset is the pt_regs offset of an x86-64 register named as in an
// AT&T operand without its %, e.g. "edi" or "r12".
func RegOffset(name string) (int16, bool) {
	off, ok := regOffsets[name]
	return off, ok
}

// usdtArgs fills the argument slots at base of the record at rTmp from the
// probe's ArgSpecs, chosen by the probe id in slProbe, over the registers
// copied before. A memory operand that cannot be read leaves its slot 0.
func (b *builder) usdtArgs(points []Probe, base int16) {
	done := b.NewLabel("argsdone")
	for _, p := range points {
		if len(p.Args) == 0 {
			continue
		}
		next := b.NewLabel("argsnext")
		b.Emit(
			asm.LoadMem(asm.R1, asm.RFP, slProbe, asm.Word),
			asm.JNE.Imm(asm.R1, int32(p.ID), next),
		)
		b.argSpecs(p.Args, rTmp, base)
		b.Emit(asm.Ja.Label(done))
		b.Mark(next)
	}
	b.Mark(done)
}

// pairIDs reads, for the pairs with ids, the id of the begin or of the
// end at the site that was hit into slID, masked to its width, and sets
// slHasID.
func (b *builder) pairIDs(pairs []Probe, end bool) {
	done := b.NewLabel("pairidsdone")
	for _, p := range pairs {
		ids := p.BeginID
		if end {
			ids = p.EndID
		}
		if len(p.BeginID) == 0 || len(p.EndID) == 0 {
			continue
		}
		for i, spec := range ids {
			if i >= maxPairSite {
				break
			}
			next := b.NewLabel("pairidnext")
			b.pairSite(p.ID, i, next)
			dst, slot := asm.RFP, int16(slID)
			b.argSpecs([]ArgSpec{spec}, dst, slot)
			if spec.Size < 8 {
				b.Emit(
					asm.LoadMem(asm.R1, dst, slot, asm.DWord),
					asm.LoadImm(asm.R2, int64(1)<<(8*spec.Size)-1, asm.DWord),
					asm.And.Reg(asm.R1, asm.R2),
					asm.StoreMem(dst, slot, asm.R1, asm.DWord),
				)
			}
			b.Emit(
				asm.StoreImm(asm.RFP, slHasID, 1, asm.Word),
				asm.Ja.Label(done),
			)
			b.Mark(next)
		}
	}
	b.Mark(done)
}

// pairSite emits: a jump to next unless the cookie in slProbe names
// probe id's pair site i (PairSite).
func (b *builder) pairSite(id uint32, i int, next string) {
	b.Emit(
		asm.LoadMem(asm.R1, asm.RFP, slProbe, asm.Word),
		asm.JNE.Imm(asm.R1, int32(id), next),
		asm.LoadMem(asm.R1, asm.RFP, slProbe, asm.DWord),
		asm.RSh.Imm(asm.R1, pairSiteShift),
		asm.And.Imm(asm.R1, maxPairSite),
		asm.JNE.Imm(asm.R1, int32(i), next),
	)
}

// pairArgs fills the argument slots of the frame at rFrame from the
// ArgSpecs of the pair's begin site that was hit, chosen by the probe id
// and the site index the cookie in slProbe carries (PairSite).
func (b *builder) pairArgs(pairs []Probe) {
	done := b.NewLabel("pairargsdone")
	for _, p := range pairs {
		for i, specs := range p.BeginArgs {
			if len(specs) == 0 || i >= maxPairSite {
				continue
			}
			next := b.NewLabel("pairargsnext")
			b.pairSite(p.ID, i, next)
			b.argSpecs(specs, rFrame, fArgs)
			b.Emit(asm.Ja.Label(done))
			b.Mark(next)
		}
	}
	b.Mark(done)
}

// argSpecs writes the values of USDT operands into the 8-byte slots at
// dst+base, over the registers of the probe's context.
func (b *builder) argSpecs(specs []ArgSpec, dst asm.Register, base int16) {
	for i, a := range specs {
		if i >= MaxArgs {
			break
		}
		slot := base + int16(8*i)
		switch a.Kind {
		case ArgConst:
			b.Emit(asm.LoadImm(asm.R1, a.Off, asm.DWord), asm.StoreMem(dst, slot, asm.R1, asm.DWord))
		case ArgReg:
			b.Emit(asm.LoadMem(asm.R1, rCtx, a.Reg, asm.DWord), asm.StoreMem(dst, slot, asm.R1, asm.DWord))
		case ArgMem:
			size := int32(a.Size)
			if size < 1 || size > 8 {
				size = 8
			}
			b.Emit(
				asm.Mov.Imm(asm.R1, 0), // the bytes not read stay 0
				asm.StoreMem(dst, slot, asm.R1, asm.DWord),
				asm.Mov.Imm(asm.R3, 0),
			)
			if a.Reg >= 0 {
				b.Emit(asm.LoadMem(asm.R3, rCtx, a.Reg, asm.DWord))
			}
			if a.Scale > 0 {
				b.Emit(
					asm.LoadMem(asm.R1, rCtx, a.Index, asm.DWord),
					asm.Mul.Imm(asm.R1, int32(a.Scale)),
					asm.Add.Reg(asm.R3, asm.R1),
				)
			}
			b.Emit(
				asm.LoadImm(asm.R1, a.Off, asm.DWord),
				asm.Add.Reg(asm.R3, asm.R1),
				asm.Mov.Reg(asm.R1, dst),
				asm.Add.Imm(asm.R1, int32(slot)),
				asm.Mov.Imm(asm.R2, size),
				asm.FnProbeReadUser.Call(),
			)
		}
	}
}

// hitProgram runs at a point probe (a source line, a USDT probe): it
// writes a record of the hit, at the depth and under the traced caller
// of the thread's shadow stack, without touching the stack; with the
// points' ArgSpecs, their USDT arguments too.
func hitProgram(m maps, o progOptions, points []Probe) asm.Instructions {
	b := &builder{m: m, o: o}
	b.Emit(
		asm.Mov.Reg(rCtx, asm.R1),
		asm.FnGetAttachCookie.Call(),
		asm.StoreMem(asm.RFP, slProbe, asm.R0, asm.DWord),
		asm.FnKtimeGetNs.Call(),
		asm.StoreMem(asm.RFP, slNow, asm.R0, asm.DWord),
		asm.StoreImm(asm.RFP, slIdx, 0, asm.Word),
		asm.StoreImm(asm.RFP, slCaller, 0, asm.Word),
	)
	b.threadKey()
	b.findStack()
	b.Emit(
		asm.JEq.Imm(asm.R0, 0, "nostack"),
		asm.Mov.Reg(rThread, asm.R0),
		asm.LoadMem(asm.R1, rThread, 0, asm.Word),
		asm.JGT.Imm(asm.R1, MaxDepth, "nostack"),
		asm.StoreMem(asm.RFP, slIdx, asm.R1, asm.Word),
		asm.JEq.Imm(asm.R1, 0, "nostack"),
		asm.Add.Imm(asm.R1, -1),
		asm.Mul.Imm(asm.R1, frameSize),
		asm.Mov.Reg(asm.R3, rThread),
		asm.Add.Reg(asm.R3, asm.R1),
		asm.LoadMem(asm.R2, asm.R3, stackHdr+fProbe, asm.Word),
		asm.StoreMem(asm.RFP, slCaller, asm.R2, asm.Word),
	)
	b.Mark("nostack")
	// Arguments are recorded with Args, and USDT points' always.
	args := o.Args || slices.ContainsFunc(points, func(p Probe) bool { return len(p.Args) > 0 })
	l := recLayout(false, o.Go, args)
	b.Emit(
		asm.LoadMapPtr(asm.R1, m.events),
		asm.Mov.Imm(asm.R2, l.size),
		asm.Mov.Imm(asm.R3, 0),
		asm.FnRingbufReserve.Call(),
		asm.JEq.Imm(asm.R0, 0, "lost"),
		asm.Mov.Reg(rTmp, asm.R0),
		asm.LoadMem(asm.R1, asm.RFP, slNow, asm.DWord),
		asm.StoreMem(rTmp, rStart, asm.R1, asm.DWord),
		asm.StoreMem(rTmp, rEnd, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.RFP, slProbe, asm.Word),
		asm.StoreMem(rTmp, rProbe, asm.R1, asm.Word),
		asm.LoadMem(asm.R1, asm.RFP, slCaller, asm.Word),
		asm.StoreMem(rTmp, rCaller, asm.R1, asm.Word),
		asm.LoadMem(asm.R1, asm.RFP, slIdx, asm.Word),
		asm.StoreMem(rTmp, rDepth, asm.R1, asm.Word),
		asm.StoreImm(rTmp, rFlags, int64(Point|l.bits), asm.Word),
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(rTmp, rChild, asm.R1, asm.DWord),
		asm.StoreMem(rTmp, rSite, asm.R1, asm.DWord),
	)
	b.storeG(l)
	if args {
		b.Emit(
			asm.Mov.Imm(asm.R1, 0),
			asm.StoreMem(rTmp, l.args+pRet, asm.R1, asm.DWord),
			asm.StoreMem(rTmp, l.args+pMem, asm.R1, asm.DWord),
			asm.StoreMem(rTmp, l.args+pMem+8, asm.R1, asm.DWord),
		)
		// With Args, the C argument registers as they are at the point
		// (a USDT probe's arguments that its note places there).
		for i, r := range []int16{regDI, regSI, regDX, regCX, regR8, regR9} {
			if o.Args {
				b.Emit(asm.LoadMem(asm.R1, rCtx, r, asm.DWord))
			} else {
				b.Emit(asm.Mov.Imm(asm.R1, 0))
			}
			b.Emit(asm.StoreMem(rTmp, l.args+pArgs+8*int16(i), asm.R1, asm.DWord))
		}
		b.usdtArgs(points, l.args+pArgs)
	}
	b.Emit(
		asm.FnGetCurrentPidTgid.Call(),
		asm.StoreMem(rTmp, rPidTgid, asm.R0, asm.DWord),
		asm.Mov.Reg(asm.R1, rTmp),
		asm.Mov.Imm(asm.R2, 1), // BPF_RB_NO_WAKEUP
		asm.FnRingbufSubmit.Call(),
		asm.Ja.Label("exit"),
	)
	b.Mark("lost")
	b.count(sLost)
	b.Emit(
		asm.Mov.Imm(asm.R0, 0).WithSymbol("exit"),
		asm.Return(),
	)
	return b.Ins
}
