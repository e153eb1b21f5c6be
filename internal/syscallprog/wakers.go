package syscallprog

import (
	"github.com/cilium/ebpf/asm"

	"github.com/culprit-dev/culprit/internal/bpfasm"
	"github.com/culprit-dev/culprit/internal/follow"
)

// FromInterrupt is a wake-up's UserStack (Options.WakerStacks) when a
// traced thread was interrupted and the interrupt (a device's, a timer's,
// a softirq's: the loopback's delivery inside a send) made the wake-up:
// it names the interrupted thread, which did not make it.
const FromInterrupt = -3 << 20

// wakerStacksProgram: sched_waking(p) with Options.WakerStacks, a raw
// tracepoint run by the waker (or the task an interrupt came on): when
// p's process is traced, a record of kind kindWaking, p's pid_tgid as
// the record's, the waker's in Nr when its process is traced (else 0,
// UserStack -1); for a traced waker, its user chain (UserStack), the
// user registers at its entry into the kernel and the stack copy from
// its SP, as a switch's, or UserStack FromInterrupt and no copy when an
// interrupt made it: the tracepoint was hit on an interrupt's stack (not
// inside the current task's kernel stack: x86-64 runs the hard and soft
// interrupts that come in kernel mode on the CPU's own stack), or on the
// task's stack under the registers an interrupt that came in user mode
// saved (orig_ax negative). A wake-up of a thread not traced is not recorded: no critical
// path of the traced processes goes through it, and a server wakes its
// clients at every reply.
func wakerStacksProgram(m fds, tgidOff, pidOff, stackOff int32, copyBytes, ringBytes int) asm.Instructions {
	m.walker = walkWaking
	const (
		slotWaker = -112 // the waker's pid_tgid when traced
		slotTID   = -120 // p's tid
		slotTGID  = -124 // p's tgid (a word)
		slotStack = -136 // the current task's kernel stack's base
		slotRegs  = -144 // its user registers (task_pt_regs), a number
	)
	var b bpfasm.Builder
	b.Emit(
		asm.Mov.Reg(rCtx, asm.R1),
		storeImm64(asm.RFP, slotWaker, 0),
		storeImm64(asm.RFP, timeSlot, 0),
	)
	read := func(slot int16, off int32, size int32) {
		b.Emit(
			asm.Mov.Reg(asm.R1, asm.RFP),
			asm.Add.Imm(asm.R1, int32(slot)),
			asm.Mov.Imm(asm.R2, size),
			asm.LoadMem(asm.R3, rCtx, 0, asm.DWord), // ctx->args[0]: the task
			asm.Add.Imm(asm.R3, off),
			asm.FnProbeReadKernel.Call(),
			asm.JNE.Imm(asm.R0, 0, "wv_out"),
		)
	}
	read(slotTGID, tgidOff, 4)
	b.Lookup(m.tgids, slotTGID)
	b.Emit(asm.JEq.Imm(asm.R0, 0, "wv_out"))
	b.Emit(storeImm64(asm.RFP, slotTID, 0))
	read(slotTID, pidOff, 4)
	b.Emit(
		asm.LoadMem(rPT, asm.RFP, slotTGID, asm.Word),
		asm.LSh.Imm(rPT, 32),
		asm.LoadMem(asm.R1, asm.RFP, slotTID, asm.DWord),
		asm.Or.Reg(rPT, asm.R1),
	)
	follow.Emit(&b, m.tgids, "wv_traced")
	// A waker not traced: who it was is not recorded.
	reserve(&b, m, exitSize, kindWaking)
	b.Emit(
		storeImm64(rRec, offNr, 0),
		storeImm64(rRec, offUStack, -1),
		storeImm64(rRec, offKStack, -1),
	)
	submit(&b, m)

	b.Mark("wv_traced")
	b.Emit(
		asm.FnGetCurrentPidTgid.Call(),
		asm.StoreMem(asm.RFP, slotWaker, asm.R0, asm.DWord),
		asm.FnGetCurrentTaskBtf.Call(),
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.FnTaskPtRegs.Call(),
		asm.Mov.Reg(rRegs, asm.R0),
		storeImm64(asm.RFP, slotStack, 0),
		asm.FnGetCurrentTask.Call(),
		asm.Mov.Reg(asm.R3, asm.R0),
		asm.Add.Imm(asm.R3, stackOff),
		asm.Mov.Reg(asm.R1, asm.RFP),
		asm.Add.Imm(asm.R1, slotStack),
		asm.Mov.Imm(asm.R2, 8),
		asm.FnProbeReadKernel.Call(),
	)
	copySize(&b, hdrSize, copyBytes, ringBytes, m)
	reserve(&b, m, -1, kindWaking)
	b.Emit(
		asm.LoadMem(asm.R1, asm.RFP, slotWaker, asm.DWord),
		asm.StoreMem(rRec, offNr, asm.R1, asm.DWord),
		storeImm64(rRec, offKStack, -1),
		storeImm64(rRec, offCallNr, 0),
		storeImm64(rRec, offSkipped, 0),
		storeImm64(rRec, offCopied, 0),
		// Where the tracepoint's arguments (the context, on the stack
		// of the code that hit it; the program's own frame may be on a
		// stack of its own) and the task's registers lie, as numbers
		// (written to the record and read back): inside the task's
		// kernel stack, from its base up to its registers at the top,
		// when the waker runs on it; on an interrupt's stack else.
		asm.StoreMem(rRec, offIP, rCtx, asm.DWord),
		asm.StoreMem(rRec, offSP, rRegs, asm.DWord),
		asm.LoadMem(asm.R1, rRec, offIP, asm.DWord),
		asm.LoadMem(asm.R2, rRec, offSP, asm.DWord),
		asm.LoadMem(asm.R3, asm.RFP, slotStack, asm.DWord),
		asm.JEq.Imm(asm.R3, 0, "wv_irq"),
		asm.Sub.Reg(asm.R1, asm.R3),
		asm.Sub.Reg(asm.R2, asm.R3),
		asm.JGE.Reg(asm.R1, asm.R2, "wv_irq"),
		// An interrupt that came in user mode runs on the task's stack,
		// under the registers it saved there, whose orig_ax is negative
		// (the vector's complement, or -1); a system call's is its number
		// and an exception's its error code.
		asm.LoadMem(asm.R1, rRegs, regOrigAX, asm.DWord),
		asm.JSLT.Imm(asm.R1, 0, "wv_irq"),
	)
	userStackID(&b, m, offUStack)
	userRegs(&b, m, hdrSize, copyBytes, true)
	submit(&b, m)

	b.Mark("wv_irq")
	b.Emit(
		storeImm64(rRec, offUStack, FromInterrupt),
		storeImm64(rRec, offIP, 0),
		storeImm64(rRec, offSP, 0),
		storeImm64(rRec, offBP, 0),
	)
	submit(&b, m)

	b.Emit(
		asm.Mov.Imm(asm.R0, 0).WithSymbol("wv_out"),
		asm.Return(),
	)
	return b.Ins
}
