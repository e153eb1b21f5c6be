package syscallprog

import (
	"github.com/cilium/ebpf/asm"

	"github.com/culprit-dev/culprit/internal/bpfasm"
)

// blockingSwitchProgram: sched_switch(preempt, prev, next, prev_state)
// with Options.BlockingChainsOnly, run by prev: when and how it left the
// CPU (the record's Nr, as switchProgram's), without user chain,
// registers or stack copy (UserStack NoStack), and with the kernel chain,
// the blocking path, only when the thread blocked: a preemption, or a
// switch of a thread that stays runnable, has none. The kernel chain is
// what tells a lock wait, a sleep and I/O apart; a wait's user chain and
// a preemption's chains are for analyses of where threads wait, which a
// critical path does not need, and walking them at every switch of a
// server that switches for each request costs it microseconds a switch.
func blockingSwitchProgram(m fds, exitStateOff int32) asm.Instructions {
	m.walker = walkSwitch
	var b bpfasm.Builder
	traced(&b, m, false)
	stale(&b, m)
	reserve(&b, m, hdrSize, kindSwitch)
	switchNr(&b, exitStateOff)
	b.Emit(
		storeImm64(rRec, offUStack, NoStack),
		storeImm64(rRec, offKStack, -1),
		storeImm64(rRec, offIP, 0),
		storeImm64(rRec, offSP, 0),
		storeImm64(rRec, offBP, 0),
		storeImm64(rRec, offCopied, 0),
		storeImm64(rRec, offCallNr, 0),
		storeImm64(rRec, offSkipped, 0),
		// A preemption (ctx->args[0]), or a thread left runnable (its
		// prev_state, ctx->args[3], 0): no chain.
		asm.LoadMem(asm.R1, rCtx, 0, asm.DWord),
		asm.And.Imm(asm.R1, 1),
		asm.JNE.Imm(asm.R1, 0, "bs_done"),
		asm.LoadMem(asm.R1, rCtx, 24, asm.DWord),
		asm.LSh.Imm(asm.R1, 32),
		asm.JEq.Imm(asm.R1, 0, "bs_done"),
	)
	switchKernelStack(&b, m)
	b.Mark("bs_done")
	submit(&b)
	return b.Ins
}
