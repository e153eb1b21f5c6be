package sampleprog

import (
	"fmt"

	"github.com/cilium/ebpf/asm"

	"github.com/culprit-dev/culprit/internal/bpfasm"
	"github.com/culprit-dev/culprit/internal/follow"
)

// The program, in outline (each part only when Options ask for it):
//
//	with a follow set: drop the sample (return 0) unless its process is in it
//	with jitter: count this thread's tick down; drop the sample (return 0)
//	    unless the countdown ends, then start a new random one
//	buf = scratch[0]; header = {magic, tid, time, interval, stamp}; n = 0
//	    (stamp and time: the sample's own time, read from the kernel's sample
//	    data; without it, no stamp and the time now)
//	plan = plans[tgid]; if none: output the header with jitter, else keep
//	for each planned range i < plan.nabs: copy it (fixed address, or the
//	    pointer in an earlier copy plus an offset)
//	regs = the thread's user registers (task_pt_regs)
//	copy the red zone, the 128 bytes below the stack pointer
//	if plan.chase:
//	    for each general-purpose register pointing into a data range: copy 64 bytes there
//	    copy the top of the stack; for each word pointing into a data range: copy
//	    for each of the first copies the chase made, for each word pointing into a data range: copy
//	with Stack: with UserChain, the user call chain along the frame
//	    pointers (bpfasm.WalkUser); the user stack from SP up to the thread's learned top
//	    (tops[tid], at most MaxStack above), or the full size without one,
//	    output as a record
//	output header and n copies; return 1 (the kernel then writes the sample)
//
// Counters live in the per-CPU scratch value, never in registers, so that
// the verifier sees them as unknown bounded numbers and can prune the
// unrolled branches instead of following every path.
type builder struct{ bpfasm.Builder }

// Registers held across the program.
const (
	rCtx  = asm.R6
	rPlan = asm.R7
	rBuf  = asm.R8
	rSlot = asm.R9
)

// maps are the file descriptors of the program's maps.
type maps struct {
	plans, scratch, gscratch, events, jitter, follow int
	sscratch, tops, conf                             int           // the stack copy's (-1: none)
	memos                                            int           // Options.Memos's (-1: none)
	chain                                            *chainOffsets // the user walk's (nil: none)
	stamp                                            *stampOffsets // the sample's stamp's (nil: none)
}

func program(m maps, o Options) asm.Instructions {
	j := o.Jitter
	b := &builder{}
	b.Emit(asm.Mov.Reg(rCtx, asm.R1))
	if m.follow >= 0 {
		follow.Emit(&b.Builder, m.follow, "followed")
		b.Emit(asm.Ja.Label("drop"))
		b.Mark("followed")
	}
	b.Emit(
		asm.FnGetCurrentPidTgid.Call(),
		asm.Mov.Reg(rSlot, asm.R0),
		asm.StoreMem(asm.RFP, -12, asm.R0, asm.Word), // tid
		asm.RSh.Imm(asm.R0, 32),
		asm.StoreMem(asm.RFP, -4, asm.R0, asm.Word), // tgid
	)
	if j.on() {
		// Each thread counts down a random number of ticks between two
		// kept samples; the others are dropped (return 0).
		span := int32(j.Max - j.Min + 1)
		b.Lookup(m.jitter, -12)
		b.Emit(
			asm.JNE.Imm(asm.R0, 0, "jhave"),
			// A new thread: start its first countdown.
			asm.FnGetPrandomU32.Call(),
			asm.Mod.Imm(asm.R0, span),
			asm.Add.Imm(asm.R0, int32(j.Min)),
			asm.StoreMem(asm.RFP, -20, asm.R0, asm.Word),
			asm.StoreMem(asm.RFP, -16, asm.R0, asm.Word),
		)
		b.Update(m.jitter, -12, -20, 0)
		b.Emit(
			asm.Ja.Label("drop"),
			asm.Mov.Reg(rPlan, asm.R0).WithSymbol("jhave"),
			asm.LoadMem(asm.R1, rPlan, 0, asm.Word),
			asm.JLE.Imm(asm.R1, 1, "jkeep"),
			asm.Add.Imm(asm.R1, -1),
			asm.StoreMem(rPlan, 0, asm.R1, asm.Word),
			asm.Ja.Label("drop"),
			asm.FnGetPrandomU32.Call().WithSymbol("jkeep"),
			asm.Mod.Imm(asm.R0, span),
			asm.Add.Imm(asm.R0, int32(j.Min)),
			asm.LoadMem(asm.R1, rPlan, 4, asm.Word), // the interval that just ended
			asm.StoreMem(asm.RFP, -24, asm.R1, asm.Word),
			asm.StoreMem(rPlan, 0, asm.R0, asm.Word),
			asm.StoreMem(rPlan, 4, asm.R0, asm.Word),
		)
	}
	b.Emit(asm.StoreImm(asm.RFP, -8, 0, asm.Word))
	b.Lookup(m.scratch, -8)
	b.Emit(
		asm.JEq.Imm(asm.R0, 0, "keep"),
		asm.Mov.Reg(rBuf, asm.R0),
		asm.StoreImm(rBuf, scrOut, magic, asm.Word),
		asm.StoreMem(rBuf, scrOut+4, rSlot, asm.Word),
		asm.StoreImm(rBuf, scrN, 0, asm.Word),
		asm.StoreImm(rBuf, scrG, 0, asm.Word),
		asm.StoreImm(rBuf, scrOut+20, 0, asm.Word),
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(rBuf, scrOut+24, asm.R1, asm.DWord),
		asm.StoreMem(rBuf, scrOut+hdrStamp, asm.R1, asm.DWord),
	)
	if j.on() {
		b.Emit(
			asm.LoadMem(asm.R1, asm.RFP, -24, asm.Word),
			asm.StoreMem(rBuf, scrOut+20, asm.R1, asm.Word),
		)
	}
	if m.stamp != nil {
		b.stamp(m.stamp, "timed")
	}
	b.Emit(
		asm.FnKtimeGetNs.Call(),
		asm.StoreMem(rBuf, scrOut+8, asm.R0, asm.DWord),
	)
	b.Mark("timed")
	if o.Snapshots {
		b.snapshots(m, o)
	}

	// Output the header and the copies.
	b.Mark("out")
	if m.sscratch >= 0 {
		b.stack(m)
	}
	b.Emit(
		asm.LoadMem(asm.R1, rBuf, scrN, asm.Word),
	)
	if !j.on() {
		// Without jitter an empty snapshot says nothing, unless the
		// planned ranges' record waits for it.
		b.Emit(
			asm.JNE.Imm(asm.R1, 0, "send"),
			asm.LoadMem(asm.R2, rBuf, scrG, asm.Word),
			asm.JEq.Imm(asm.R2, 0, "keep"),
		)
	}
	b.Mark("send")
	b.Emit(asm.LoadMem(asm.R1, rBuf, scrN, asm.Word))
	b.Emit(
		asm.JGT.Imm(asm.R1, MaxSlots, "keep"),
		asm.StoreMem(rBuf, scrOut+16, asm.R1, asm.Word),
		asm.Mov.Reg(asm.R5, asm.R1),
		asm.Mul.Imm(asm.R5, slotSize),
		asm.Add.Imm(asm.R5, outHdr),
		asm.Mov.Reg(asm.R4, rBuf),
		asm.Add.Imm(asm.R4, scrOut),
		asm.LoadMapPtr(asm.R2, m.events),
		asm.LoadImm(asm.R3, 0xffffffff, asm.DWord), // BPF_F_CURRENT_CPU
		asm.Mov.Reg(asm.R1, rCtx),
		asm.FnPerfEventOutput.Call(),
	)
	b.Emit(
		asm.Mov.Imm(asm.R0, 1).WithSymbol("keep"),
		asm.Return(),
	)
	if j.on() || m.follow >= 0 {
		b.Emit(
			asm.Mov.Imm(asm.R0, 0).WithSymbol("drop"),
			asm.Return(),
		)
	}
	return b.Ins
}

// recordHeader writes the first 16 bytes of a record of the program's own
// (the stack copy's, the globals'), at dst: its magic, then the sample's
// thread id and time as the main header has them (scrOut+4, scrOut+8),
// and the sample's stamp at stampAt. It uses R1.
func (b *builder) recordHeader(dst asm.Register, magic int64, stampAt int16) {
	b.Emit(
		asm.StoreImm(dst, 0, magic, asm.Word),
		asm.LoadMem(asm.R1, rBuf, scrOut+4, asm.Word),
		asm.StoreMem(dst, 4, asm.R1, asm.Word),
		asm.LoadMem(asm.R1, rBuf, scrOut+8, asm.DWord),
		asm.StoreMem(dst, 8, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, rBuf, scrOut+hdrStamp, asm.DWord),
		asm.StoreMem(dst, stampAt, asm.R1, asm.DWord),
	)
}

// Stack slots of stamp.
const (
	stampCtx  = -160 // the context as the kernel has it, up to its data pointer (32 bytes at most)
	stampData = -296 // the sample's data from its flags or time, whichever comes first, to the other (128 bytes at most)
)

// stamp puts the sample's own time, as perf writes it in the sample, in
// the header as its stamp (scrOut+hdrStamp) and time (scrOut+8), then jumps
// to done: the kernel prepares the sample before it runs the program
// (PERF_SAMPLE_TIME in the data's sample_flags), and the program's context
// is the kernel's bpf_perf_event_data_kern, whose data pointer leads to it.
// Where the sample is not prepared yet (kernels before 6.3) the stamp stays
// 0 and the program goes on to take the time itself. It keeps rCtx and
// rBuf.
func (b *builder) stamp(o *stampOffsets, done string) {
	lo, hi := min(o.flags, o.time), max(o.flags, o.time)
	none := b.NewLabel("nostamp")
	b.Emit(
		asm.Mov.Reg(asm.R1, asm.RFP),
		asm.Add.Imm(asm.R1, stampCtx),
		asm.Mov.Imm(asm.R2, int32(o.data)+8),
		asm.Mov.Reg(asm.R3, rCtx),
		asm.FnProbeReadKernel.Call(),
		asm.JNE.Imm(asm.R0, 0, none),
		asm.LoadMem(asm.R3, asm.RFP, stampCtx+o.data, asm.DWord),
		asm.JEq.Imm(asm.R3, 0, none),
		asm.Add.Imm(asm.R3, int32(lo)),
		asm.Mov.Reg(asm.R1, asm.RFP),
		asm.Add.Imm(asm.R1, stampData),
		asm.Mov.Imm(asm.R2, int32(hi-lo)+8),
		asm.FnProbeReadKernel.Call(),
		asm.JNE.Imm(asm.R0, 0, none),
		asm.LoadMem(asm.R1, asm.RFP, stampData+o.flags-lo, asm.DWord),
		asm.And.Imm(asm.R1, perfSampleTime),
		asm.JEq.Imm(asm.R1, 0, none),
		asm.LoadMem(asm.R1, asm.RFP, stampData+o.time-lo, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, none),
		asm.StoreMem(rBuf, scrOut+hdrStamp, asm.R1, asm.DWord),
		asm.StoreMem(rBuf, scrOut+8, asm.R1, asm.DWord),
		asm.Ja.Label(done),
	)
	b.Mark(none)
}

// A thread's value in the tops map: its learned top (SetTop), then the
// SP and holes of its last copy made page by page (knownHoles): the holes
// as the stack record's flags have them, and the copies since they were
// last read.
const (
	topAt     = 0
	holesSPAt = 8
	holesAt   = 16 // u32 holes, u32 uses
	topSize   = 24
)

// knownRead is how many copies in a row take a thread's holes as known
// before one reads every page again (knownHoles).
const knownRead = 64

// knownHoles: a read of a page not in memory costs the kernel a page
// fault, and under a hypervisor that shadows the guest's page tables a
// trip out of the guest: 4.2 µs here against 20 ns for a page in memory
// (docs/performance.md). A thread sampled again and again at the same SP
// inside a large frame never written (a server's thread in a system call
// made under a large array of its caller's: every sample in the kernel
// sees the call's SP) would pay for the same holes at each sample, the
// copy of the whole tried first, then each hole. So a copy made page by
// page keeps its SP and holes with the thread's top, and the next copy at
// the same SP goes page by page at once and takes those pages as holes
// without reading them, but for one in knownRead, which reads them all
// (a page written since is read from then on). The system call and switch
// records' copies do the same (internal/syscallprog).

// stack copies the user stack from the stack pointer, as many bytes as the
// thread's learned top asks, up to MaxStack, whatever the full size (the
// full size from the configuration without one, or when the stack pointer
// lies outside it or MaxStack below it), into a record of its
// own. A copy that faults (a page not in memory, or the end of the
// stack's mapping) is made again page by page. It keeps rCtx and rBuf and uses rPlan and
// rSlot.
func (b *builder) stack(m maps) {
	const (
		spSlot    = -56
		copySlot  = -120 // the copy's offset in the record
		topSlot   = -152 // the thread's value in tops (0: none)
		knownSlot = -160 // the holes taken as known (knownHoles), as the flags' bits
	)
	// A sample in user mode has the user registers in its context; one in
	// the kernel finds them in the task's pt_regs.
	b.Emit(
		asm.LoadMem(asm.R1, rCtx, ptRegsCS*8, asm.DWord),
		asm.And.Imm(asm.R1, 3),
		asm.JEq.Imm(asm.R1, 0, "skernel"),
		asm.LoadMem(asm.R1, rCtx, ptRegsSP*8, asm.DWord),
		asm.StoreMem(asm.RFP, spSlot, asm.R1, asm.DWord),
		asm.Ja.Label("shave"),
	)
	b.Mark("skernel")
	b.Emit(
		asm.FnGetCurrentTaskBtf.Call(),
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.FnTaskPtRegs.Call(),
		asm.Mov.Reg(asm.R3, asm.R0),
		asm.Add.Imm(asm.R3, ptRegsSP*8),
		asm.Mov.Reg(asm.R1, asm.RFP),
		asm.Add.Imm(asm.R1, spSlot),
		asm.Mov.Imm(asm.R2, 8),
		asm.FnProbeReadKernel.Call(),
		asm.JNE.Imm(asm.R0, 0, "sdone"),
	)
	b.Mark("shave")
	b.Emit(asm.StoreImm(asm.RFP, -8, 0, asm.Word))
	b.Lookup(m.conf, -8)
	b.Emit(
		asm.JEq.Imm(asm.R0, 0, "sdone"),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.Word),
		asm.JEq.Imm(asm.R1, 0, "sdone"), // no copy asked for (SetStackBytes)
		asm.StoreMem(asm.RFP, -64, asm.R1, asm.DWord),
	)
	b.Lookup(m.sscratch, -8)
	b.Emit(
		asm.JEq.Imm(asm.R0, 0, "sdone"),
		asm.Mov.Reg(rPlan, asm.R0),
	)
	b.recordHeader(rPlan, stackMagic, stackStamp)
	b.Emit(
		asm.StoreImm(rPlan, 28, 0, asm.Word),
		bpfasm.StoreImm64(rPlan, stackHdr-8, 0),
	)
	b.memo(m)
	if m.chain != nil {
		b.userChain(m.chain)
	}
	b.Emit(
		asm.LoadMem(asm.R1, asm.RFP, spSlot, asm.DWord),
		asm.StoreMem(rPlan, 16, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.RFP, -64, asm.DWord),
		asm.StoreMem(rPlan, 24, asm.R1, asm.Word),
		// Where the copy goes: after the chain.
		asm.LoadMem(asm.R1, rPlan, stackHdr-8, asm.DWord),
		asm.JGT.Imm(asm.R1, ChainMax, "sdone"),
		asm.LSh.Imm(asm.R1, 3),
		asm.Add.Imm(asm.R1, stackHdr),
		asm.StoreMem(asm.RFP, copySlot, asm.R1, asm.DWord),
		// tid, for the key
		asm.LoadMem(asm.R1, rBuf, scrOut+4, asm.Word),
		asm.StoreMem(asm.RFP, -68, asm.R1, asm.Word),
	)
	b.Emit(bpfasm.StoreImm64(asm.RFP, knownSlot, 0))
	b.Lookup(m.tops, -68)
	b.Emit(
		asm.StoreMem(asm.RFP, topSlot, asm.R0, asm.DWord),
		asm.JEq.Imm(asm.R0, 0, "sfull"),
		asm.LoadMem(asm.R1, asm.R0, topAt, asm.DWord), // the top
		asm.LoadMem(asm.R2, asm.RFP, spSlot, asm.DWord),
		asm.JLE.Reg(asm.R1, asm.R2, "sfull"),
		asm.Sub.Reg(asm.R1, asm.R2),
		asm.Add.Imm(asm.R1, 7),
		asm.And.Imm(asm.R1, ^7),
		asm.JGT.Imm(asm.R1, MaxStack, "sfull"),
		asm.StoreMem(rPlan, 24, asm.R1, asm.Word),
		asm.LoadMem(asm.R1, rPlan, 28, asm.Word),
		asm.Or.Imm(asm.R1, stackSized),
		asm.StoreMem(rPlan, 28, asm.R1, asm.Word),
	)
	b.Mark("sfull")
	b.Emit(
		asm.LoadMem(asm.R2, rPlan, 24, asm.Word),
		asm.JEq.Imm(asm.R2, 0, "ssend"),
		asm.JGT.Imm(asm.R2, MaxStack, "sdone"),
		// A thread whose last copy at this SP met holes goes page by
		// page at once, taking them as known but for one copy in
		// knownRead (knownHoles).
		asm.LoadMem(asm.R1, asm.RFP, topSlot, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, "swhole"),
		asm.LoadMem(asm.R3, asm.R1, holesSPAt, asm.DWord),
		asm.LoadMem(asm.R4, asm.RFP, spSlot, asm.DWord),
		asm.JNE.Reg(asm.R3, asm.R4, "swhole"),
		asm.LoadMem(asm.R3, asm.R1, holesAt, asm.Word),
		asm.JEq.Imm(asm.R3, 0, "swhole"),
		asm.LoadMem(asm.R4, asm.R1, holesAt+4, asm.Word),
		asm.Add.Imm(asm.R4, 1),
		asm.StoreMem(asm.R1, holesAt+4, asm.R4, asm.Word),
		asm.And.Imm(asm.R4, knownRead-1),
		asm.JEq.Imm(asm.R4, 0, "spages"),
		asm.StoreMem(asm.RFP, knownSlot, asm.R3, asm.DWord),
		asm.LoadMem(asm.R1, rPlan, 28, asm.Word),
		asm.Or.Imm(asm.R1, stackKnown),
		asm.StoreMem(rPlan, 28, asm.R1, asm.Word),
		asm.Ja.Label("spages"),
	)
	// The whole range at once, the common case (R2 still its length).
	b.Emit(
		asm.LoadMem(asm.R1, asm.RFP, copySlot, asm.DWord).WithSymbol("swhole"),
		asm.JGT.Imm(asm.R1, stackHdr+ChainMax*8, "sdone"),
		asm.Add.Reg(asm.R1, rPlan),
		asm.LoadMem(asm.R3, asm.RFP, spSlot, asm.DWord),
		asm.FnProbeReadUser.Call(),
		asm.JEq.Imm(asm.R0, 0, "ssend"),
	)
	// A fault: a page of the range is not in memory (one the thread never
	// touched, inside a large frame's unused array, or beyond the end of
	// the stack's mapping). The range is copied page by page instead, a
	// page that faults left zero (the helper zeroes what it cannot read)
	// and marked in the flags' holes (stackHoleShift): the unwind reads
	// return addresses and saved registers, which lie on pages the thread
	// wrote, around the holes.
	// The copy then ends with the last page read, as a copy up to the
	// end of the stack's mapping does.
	const (
		endSlot   = -128 // sp + len: the copy's end
		readSlot  = -136 // the end of the last page read
		chunkSlot = -144 // the end of the page being read
	)
	b.Emit(
		asm.LoadMem(asm.R1, asm.RFP, spSlot, asm.DWord).WithSymbol("spages"),
		asm.StoreMem(asm.RFP, readSlot, asm.R1, asm.DWord),
		asm.LoadMem(asm.R2, rPlan, 24, asm.Word),
		asm.Add.Reg(asm.R2, asm.R1),
		asm.StoreMem(asm.RFP, endSlot, asm.R2, asm.DWord),
	)
	for page := 0; page < stackPages; page++ {
		next := fmt.Sprintf("spage%d", page+1)
		b.Emit(
			// rSlot: the page's first byte to copy: sp on the first page,
			// the page's start on the others.
			asm.LoadMem(rSlot, asm.RFP, spSlot, asm.DWord),
		)
		if page > 0 {
			b.Emit(
				asm.And.Imm(rSlot, ^4095),
				asm.Add.Imm(rSlot, int32(page*4096)),
			)
		}
		b.Emit(
			asm.LoadMem(asm.R3, asm.RFP, endSlot, asm.DWord),
			asm.JGE.Reg(rSlot, asm.R3, "spagesend"),
			// R2: up to the page's end or the copy's, whichever is first.
			asm.Mov.Reg(asm.R2, rSlot),
			asm.And.Imm(asm.R2, ^4095),
			asm.Add.Imm(asm.R2, 4096),
			asm.JLE.Reg(asm.R2, asm.R3, "splen"+next),
			asm.Mov.Reg(asm.R2, asm.R3),
			asm.Sub.Reg(asm.R2, rSlot).WithSymbol("splen"+next),
			asm.JGT.Imm(asm.R2, 4096, "sdone"),
			asm.JEq.Imm(asm.R2, 0, "spagesend"),
			asm.Mov.Reg(asm.R1, rSlot),
			asm.Add.Reg(asm.R1, asm.R2),
			asm.StoreMem(asm.RFP, chunkSlot, asm.R1, asm.DWord),
			// R1: the record's bytes for the page, at its offset from sp.
			asm.Mov.Reg(asm.R1, rSlot),
			asm.LoadMem(asm.R3, asm.RFP, spSlot, asm.DWord),
			asm.Sub.Reg(asm.R1, asm.R3),
			asm.JGT.Imm(asm.R1, MaxStack, "sdone"),
			asm.LoadMem(asm.R4, asm.RFP, copySlot, asm.DWord),
			asm.JGT.Imm(asm.R4, stackHdr+ChainMax*8, "sdone"),
			asm.Add.Reg(asm.R1, asm.R4),
			asm.Add.Reg(asm.R1, rPlan),
			asm.Mov.Reg(asm.R3, rSlot),
		)
		// A page taken as a hole is zeroed, not read.
		b.ReadUserUnless(knownSlot, 1<<(stackHoleShift+page))
		b.Emit(
			asm.JNE.Imm(asm.R0, 0, "sfault"+next),
			asm.LoadMem(asm.R1, asm.RFP, chunkSlot, asm.DWord),
			asm.StoreMem(asm.RFP, readSlot, asm.R1, asm.DWord),
			asm.Ja.Label(next),
			asm.LoadMem(asm.R1, rPlan, 28, asm.Word).WithSymbol("sfault"+next),
			asm.Or.Imm(asm.R1, int32(stackFaulted|1<<(stackHoleShift+page))),
			asm.StoreMem(rPlan, 28, asm.R1, asm.Word),
		)
		b.Mark(next)
	}
	b.Mark("spagesend")
	// The thread's top keeps this copy's SP and holes; their count of
	// uses starts again when they were read, not taken as known.
	b.Emit(
		asm.LoadMem(asm.R1, asm.RFP, topSlot, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, "skept"),
		asm.LoadMem(asm.R2, asm.RFP, spSlot, asm.DWord),
		asm.StoreMem(asm.R1, holesSPAt, asm.R2, asm.DWord),
		asm.LoadMem(asm.R2, rPlan, 28, asm.Word),
		asm.And.Imm(asm.R2, 0xff<<stackHoleShift),
		asm.StoreMem(asm.R1, holesAt, asm.R2, asm.Word),
		asm.LoadMem(asm.R2, asm.RFP, knownSlot, asm.DWord),
		asm.JNE.Imm(asm.R2, 0, "skept"),
		asm.StoreImm(asm.R1, holesAt+4, 0, asm.Word),
	)
	b.Mark("skept")
	b.Emit(
		asm.LoadMem(asm.R1, asm.RFP, readSlot, asm.DWord),
		asm.LoadMem(asm.R2, asm.RFP, spSlot, asm.DWord),
		asm.Sub.Reg(asm.R1, asm.R2),
		asm.StoreMem(rPlan, 24, asm.R1, asm.Word),
	)
	b.Mark("ssend")
	b.Emit(
		asm.LoadMem(asm.R5, rPlan, 24, asm.Word),
		asm.JGT.Imm(asm.R5, MaxStack, "sdone"),
		asm.LoadMem(asm.R1, asm.RFP, copySlot, asm.DWord),
		asm.JGT.Imm(asm.R1, stackHdr+ChainMax*8, "sdone"),
		asm.Add.Reg(asm.R5, asm.R1),
		asm.Mov.Reg(asm.R4, rPlan),
		asm.LoadMapPtr(asm.R2, m.events),
		asm.LoadImm(asm.R3, 0xffffffff, asm.DWord), // BPF_F_CURRENT_CPU
		asm.Mov.Reg(asm.R1, rCtx),
		asm.FnPerfEventOutput.Call(),
	)
	b.Mark("sdone")
}

// Stack slots of memo.
const (
	memoKey  = -424 // bpfasm.MemoKeySize bytes
	memoID   = -432
	memoPtr  = -440
	memoRead = -448
	memoBP   = -456
)

// memo emits, with Options.Memos: a record of the stack header alone,
// flagged stackMemo with the memo's id in its chain word, when the
// thread has a memo at its user IP and SP whose words hold (bpfasm.Memos;
// the sample's user registers in its context in user mode, in the task's
// pt_regs in the kernel, with SP already at spSlot -56). It keeps rCtx,
// rBuf and rPlan.
func (b *builder) memo(m maps) {
	if m.memos < 0 {
		return
	}
	const spSlot = -56
	miss, kernel, have := b.NewLabel("memo_miss"), b.NewLabel("memo_kernel"), b.NewLabel("memo_have")
	b.Emit(
		asm.LoadMem(asm.R1, rBuf, scrOut+4, asm.Word),
		asm.StoreMem(asm.RFP, memoKey, asm.R1, asm.Word),
		asm.StoreImm(asm.RFP, memoKey+4, 0, asm.Word),
		asm.LoadMem(asm.R1, asm.RFP, spSlot, asm.DWord),
		asm.StoreMem(asm.RFP, memoKey+16, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, rCtx, ptRegsCS*8, asm.DWord),
		asm.And.Imm(asm.R1, 3),
		asm.JEq.Imm(asm.R1, 0, kernel),
		asm.LoadMem(asm.R1, rCtx, ptRegsIP*8, asm.DWord),
		asm.StoreMem(asm.RFP, memoKey+8, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, rCtx, ptRegsBP*8, asm.DWord),
		asm.StoreMem(asm.RFP, memoBP, asm.R1, asm.DWord),
		asm.Ja.Label(have),
	)
	b.Mark(kernel)
	b.Emit(
		asm.FnGetCurrentTaskBtf.Call(),
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.FnTaskPtRegs.Call(),
		asm.Mov.Reg(rSlot, asm.R0),
	)
	for _, r := range []struct {
		slot int16
		reg  int32
	}{{memoKey + 8, ptRegsIP}, {memoBP, ptRegsBP}} {
		b.Emit(
			asm.Mov.Reg(asm.R1, asm.RFP),
			asm.Add.Imm(asm.R1, int32(r.slot)),
			asm.Mov.Imm(asm.R2, 8),
			asm.Mov.Reg(asm.R3, rSlot),
			asm.Add.Imm(asm.R3, r.reg*8),
			asm.FnProbeReadKernel.Call(),
			asm.JNE.Imm(asm.R0, 0, miss),
		)
	}
	b.Mark(have)
	b.MemoCheck(bpfasm.MemoSlots{Map: m.memos, Key: memoKey, BP: memoBP, ID: memoID, Ptr: memoPtr, Read: memoRead}, miss)
	b.Emit(
		asm.LoadMem(asm.R1, asm.RFP, spSlot, asm.DWord),
		asm.StoreMem(rPlan, 16, asm.R1, asm.DWord),
		asm.StoreImm(rPlan, 24, 0, asm.Word),
		asm.StoreImm(rPlan, 28, stackMemo, asm.Word),
		asm.LoadMem(asm.R1, asm.RFP, memoID, asm.DWord),
		asm.StoreMem(rPlan, stackHdr-8, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R1, stackHdr),
		asm.StoreMem(asm.RFP, -120, asm.R1, asm.DWord), // stack's copySlot
		asm.Ja.Label("ssend"),
	)
	b.Mark(miss)
}

// Stack slots of userChain.
const (
	chainBuf   = -80  // the chain's address in the record
	chainFP    = -88  // the frame pointer of the next frame
	chainFrame = -104 // a frame read: the caller's frame pointer, the return address
	chainRI    = -112 // the next return instance
)

// userChain walks the thread's user call chain into the stack record at
// rPlan (bpfasm.WalkUser: the kernel's walk without the fault at its
// root), the addresses after the header, their number in the header's
// chain word, and flags it walked; a thread the walk cannot be made for
// goes without a chain: one in 32-bit mode (which perf's walk would have
// walked by 4-byte frames) or exiting (no address space). It keeps rCtx,
// rBuf and rPlan.
func (b *builder) userChain(c *chainOffsets) {
	none := b.NewLabel("nochain")
	uc := bpfasm.UserChain{Buf: chainBuf, FP: chainFP, Frame: chainFrame, Counted: true,
		Depth: ChainMax, MMOff: c.mm, Helper: none}
	b.Emit(
		asm.Mov.Reg(asm.R1, rPlan),
		asm.Add.Imm(asm.R1, stackHdr),
		asm.StoreMem(asm.RFP, chainBuf, asm.R1, asm.DWord),
	)
	b.WalkUser(uc)
	if c.returns {
		b.FixReturns(uc, c.r, chainRI)
	}
	b.Emit(asm.StoreImm(rPlan, 28, stackChain, asm.Word))
	b.Mark(none)
}

// snapshots emits the memory copies: the planned ranges, the registers and
// red zone, and with Chase the pointers found in registers, stack and the
// copies. It jumps to "out" when done.
func (b *builder) snapshots(m maps, o Options) {
	b.Lookup(m.plans, -4)
	b.Emit(
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.Mov.Reg(rPlan, asm.R0),
	)

	b.globals(m)

	// The thread's user registers, whether the sample hit user or kernel mode.
	b.Mark("regs")
	b.Emit(
		asm.FnGetCurrentTaskBtf.Call(),
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.FnTaskPtRegs.Call(),
		asm.Mov.Reg(asm.R3, asm.R0),
		asm.Mov.Reg(asm.R1, rBuf),
		asm.Add.Imm(asm.R1, scrRegs),
		asm.Mov.Imm(asm.R2, ptRegsWords*8),
		asm.FnProbeReadKernel.Call(),
		asm.JNE.Imm(asm.R0, 0, "out"),
		// The header's user SP: what pairs the record with its sample.
		asm.LoadMem(asm.R1, rBuf, scrRegs+ptRegsSP*8, asm.DWord),
		asm.StoreMem(rBuf, scrOut+24, asm.R1, asm.DWord),
	)
	// The red zone: the 128 bytes below the stack pointer where leaf
	// functions keep locals without moving it (-O0); the sample's stack
	// copy starts at the stack pointer.
	for _, off := range []int32{-128, -64} {
		b.Emit(
			asm.LoadMem(asm.R3, rBuf, scrRegs+ptRegsSP*8, asm.DWord),
			asm.Add.Imm(asm.R3, off),
			asm.Mov.Imm(asm.R2, SlotBytes),
		)
		b.copyAt()
	}
	if !o.Chase {
		b.Emit(asm.Ja.Label("out"))
		return
	}
	b.Emit(
		asm.LoadMem(asm.R1, rPlan, planFlags, asm.Word),
		asm.And.Imm(asm.R1, flagChase),
		asm.JEq.Imm(asm.R1, 0, "out"),
	)
	b.Emit(
		asm.LoadMem(asm.R1, rBuf, scrN, asm.Word),
		asm.StoreMem(rBuf, scrN0, asm.R1, asm.Word),
	)
	for k := 0; k < ptRegsGPRs; k++ {
		b.Emit(asm.LoadMem(asm.R3, rBuf, int16(scrRegs+k*8), asm.DWord))
		b.chase()
	}

	// The top of the stack, word by word.
	b.Emit(
		asm.LoadMem(asm.R3, rBuf, scrRegs+ptRegsSP*8, asm.DWord),
		asm.Mov.Reg(asm.R1, rBuf),
		asm.Add.Imm(asm.R1, scrStack),
		asm.Mov.Imm(asm.R2, stackWords*8),
		asm.FnProbeReadUser.Call(),
		asm.JNE.Imm(asm.R0, 0, "second"),
	)
	for w := 0; w < stackWords; w++ {
		b.Emit(asm.LoadMem(asm.R3, rBuf, int16(scrStack+w*8), asm.DWord))
		b.chase()
	}

	// One more level: pointers inside the first copies the chase made.
	b.Mark("second")
	b.Emit(
		asm.LoadMem(asm.R1, rBuf, scrN, asm.Word),
		asm.StoreMem(rBuf, scrN1, asm.R1, asm.Word),
	)
	for s := 0; s < chaseSlots; s++ {
		next := b.NewLabel("nextslot")
		b.Emit(
			asm.LoadMem(asm.R1, rBuf, scrN0, asm.Word),
			asm.Add.Imm(asm.R1, int32(s)),
			asm.LoadMem(asm.R2, rBuf, scrN1, asm.Word),
			asm.JGE.Reg(asm.R1, asm.R2, "out"),
			asm.JGT.Imm(asm.R1, MaxSlots-1, "out"),
			asm.Mul.Imm(asm.R1, slotSize),
			asm.Mov.Reg(asm.R2, rBuf),
			asm.Add.Reg(asm.R2, asm.R1),
			asm.StoreMem(asm.RFP, -32, asm.R2, asm.DWord),
			asm.LoadMem(asm.R1, asm.R2, scrSlots+12, asm.Word),
			asm.JNE.Imm(asm.R1, 0, next),
		)
		for w := 0; w < SlotBytes/8; w++ {
			b.Emit(
				asm.LoadMem(asm.R2, asm.RFP, -32, asm.DWord),
				asm.LoadMem(asm.R3, asm.R2, int16(scrSlots+slotHdr+w*8), asm.DWord),
			)
			b.chase()
		}
		b.Mark(next)
	}

}

// globals copies the planned ranges into the planned ranges' scratch
// record and outputs it: a loop over the plan's entries, bounded by MaxAbs
// (the verifier walks each turn), with the index kept on the stack as a
// constant it tracks. Each entry is copied from a fixed address, or from
// the pointer an earlier entry's copy holds plus an offset.
func (b *builder) globals(m maps) {
	const (
		iSlot   = -40 // loop index
		entSlot = -48 // the record's entry being written
	)
	b.Lookup(m.gscratch, -8)
	b.Emit(
		asm.JEq.Imm(asm.R0, 0, "regs"),
		asm.Mov.Reg(rSlot, asm.R0),
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(asm.RFP, iSlot, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, rPlan, planNAbs, asm.Word),
		asm.JEq.Imm(asm.R1, 0, "regs"),
	)
	b.Mark("gloop")
	b.Emit(
		asm.LoadMem(asm.R1, asm.RFP, iSlot, asm.DWord),
		asm.JGE.Imm(asm.R1, MaxAbs, "gdone"),
		asm.LoadMem(asm.R2, rPlan, planNAbs, asm.Word),
		asm.JGE.Reg(asm.R1, asm.R2, "gdone"),
		// R4: the plan's entry; R5: the record's.
		asm.Mov.Reg(asm.R4, asm.R1),
		asm.Mul.Imm(asm.R4, entSize),
		asm.Add.Reg(asm.R4, rPlan),
		asm.Mov.Reg(asm.R5, asm.R1),
		asm.Mul.Imm(asm.R5, gEntSize),
		asm.Add.Reg(asm.R5, rSlot),
		asm.StoreMem(asm.RFP, entSlot, asm.R5, asm.DWord),
		asm.LoadMem(asm.R2, asm.R4, planEnts+8, asm.Word),
		asm.StoreMem(asm.R5, gEntries+8, asm.R2, asm.Word),
		asm.StoreImm(asm.R5, gEntries+12, -22, asm.Word), // EINVAL until copied
		asm.LoadMem(asm.R3, asm.R4, planEnts+16, asm.Word),
		asm.JGT.Imm(asm.R3, gOutMax-8, "gabs"),
		// The pointer in an earlier copy, plus the entry's address.
		asm.Add.Reg(asm.R3, rSlot),
		asm.LoadMem(asm.R3, asm.R3, 0, asm.DWord),
		asm.LoadMem(asm.R0, asm.R4, planEnts, asm.DWord),
		asm.Add.Reg(asm.R3, asm.R0),
		asm.Ja.Label("ghave"),
		asm.LoadMem(asm.R3, asm.R4, planEnts, asm.DWord).WithSymbol("gabs"),
	)
	b.Mark("ghave")
	b.Emit(
		asm.StoreMem(asm.R5, gEntries, asm.R3, asm.DWord),
		asm.JEq.Imm(asm.R2, 0, "gnext"),
		asm.JGT.Imm(asm.R2, MaxPiece, "gnext"),
		asm.LoadMem(asm.R1, asm.R4, planEnts+12, asm.Word),
		asm.JGT.Imm(asm.R1, gOutMax, "gnext"),
		asm.Add.Reg(asm.R1, rSlot),
		asm.FnProbeReadUser.Call(),
		asm.LoadMem(asm.R5, asm.RFP, entSlot, asm.DWord),
		asm.StoreMem(asm.R5, gEntries+12, asm.R0, asm.Word),
	)
	b.Mark("gnext")
	b.Emit(
		asm.LoadMem(asm.R1, asm.RFP, iSlot, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.RFP, iSlot, asm.R1, asm.DWord),
		asm.Ja.Label("gloop"),
	)
	// Output: the header, the entries, the bytes.
	b.Mark("gdone")
	b.recordHeader(rSlot, gMagic, hdrStamp)
	b.Emit(
		asm.LoadMem(asm.R1, asm.RFP, iSlot, asm.DWord),
		asm.StoreMem(rSlot, 16, asm.R1, asm.Word),
		asm.LoadMem(asm.R5, rPlan, planGTotal, asm.Word),
		asm.JLT.Imm(asm.R5, gEntries, "regs"),
		asm.JGT.Imm(asm.R5, gOutMax, "regs"),
		asm.StoreMem(rSlot, 20, asm.R5, asm.Word),
		asm.Mov.Reg(asm.R4, rSlot),
		asm.LoadMapPtr(asm.R2, m.events),
		asm.LoadImm(asm.R3, 0xffffffff, asm.DWord), // BPF_F_CURRENT_CPU
		asm.Mov.Reg(asm.R1, rCtx),
		asm.FnPerfEventOutput.Call(),
		asm.JNE.Imm(asm.R0, 0, "regs"),
		asm.StoreImm(rBuf, scrG, 1, asm.Word),
		asm.Ja.Label("regs"),
	)
}

// chase copies SlotBytes at the address in R3 when it lies in one of the
// plan's data ranges.
func (b *builder) chase() {
	yes, no := b.NewLabel("in"), b.NewLabel("out")
	for q := 0; q < MaxRanges; q++ {
		next := b.NewLabel("range")
		r := int16(planRanges + q*16)
		b.Emit(
			asm.LoadMem(asm.R1, rPlan, r, asm.DWord),
			asm.JLT.Reg(asm.R3, asm.R1, next),
			asm.LoadMem(asm.R1, rPlan, r+8, asm.DWord),
			asm.JLT.Reg(asm.R3, asm.R1, yes),
		)
		b.Mark(next)
	}
	b.Emit(asm.Ja.Label(no))
	b.Emit(asm.Mov.Imm(asm.R2, SlotBytes).WithSymbol(yes))
	b.copyAt()
	b.Mark(no)
}

// copyAt copies R2 bytes (at most SlotBytes) from the user address in R3
// into the next free slot, recording address, length and the helper's
// result; nothing when all slots are used.
func (b *builder) copyAt() {
	full, ok := b.NewLabel("full"), b.NewLabel("lenok")
	b.Emit(
		asm.LoadMem(asm.R1, rBuf, scrN, asm.Word),
		asm.JGT.Imm(asm.R1, MaxSlots-1, full),
		asm.Mov.Reg(asm.R4, asm.R1),
		asm.Add.Imm(asm.R4, 1),
		asm.StoreMem(rBuf, scrN, asm.R4, asm.Word),
		asm.Mul.Imm(asm.R1, slotSize),
		asm.Mov.Reg(rSlot, rBuf),
		asm.Add.Reg(rSlot, asm.R1),
		asm.StoreMem(rSlot, scrSlots, asm.R3, asm.DWord),
		asm.JLE.Imm(asm.R2, SlotBytes, ok),
		asm.Mov.Imm(asm.R2, SlotBytes),
	)
	b.Mark(ok)
	b.Emit(
		asm.StoreMem(rSlot, scrSlots+8, asm.R2, asm.Word),
		asm.Mov.Reg(asm.R1, rSlot),
		asm.Add.Imm(asm.R1, scrSlots+slotHdr),
		asm.FnProbeReadUser.Call(),
		asm.StoreMem(rSlot, scrSlots+12, asm.R0, asm.Word),
	)
	b.Mark(full)
}
