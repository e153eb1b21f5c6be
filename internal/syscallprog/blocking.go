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
// A thread that blocks again where it blocked before reuses that chain
// (blockedKernelStack).
func blockingSwitchProgram(m fds, exitStateOff int32, so schedOffs, in *switchIns) asm.Instructions {
	m.walker = walkSwitch
	var b bpfasm.Builder
	switchInRecord(&b, m, in)
	traced(&b, m, false)
	stale(&b, m)
	switchTime(&b)
	reserve(&b, m, switchHdrSize, kindSwitch)
	switchNr(&b, exitStateOff, so)
	b.Emit(
		storeImm64(rRec, offUStack, NoStack),
		storeImm64(rRec, offKStack, -1),
		storeImm64(rRec, offIP, 0),
		storeImm64(rRec, offSP, 0),
		storeImm64(rRec, offBP, 0),
		storeImm64(rRec, offCopied, 0),
		storeImm64(rRec, offCallNr, 0),
		// A preemption (ctx->args[0]), or a thread left runnable (its
		// prev_state, ctx->args[3], 0): no chain.
		asm.LoadMem(asm.R1, rCtx, 0, asm.DWord),
		asm.And.Imm(asm.R1, 1),
		asm.JNE.Imm(asm.R1, 0, "bs_done"),
		asm.LoadMem(asm.R1, rCtx, 24, asm.DWord),
		asm.LSh.Imm(asm.R1, 32),
		asm.JEq.Imm(asm.R1, 0, "bs_done"),
	)
	blockedKernelStack(&b, m, false)
	b.Mark("bs_done")
	submit(&b, m)
	return b.Ins
}

// nrRestartSyscall is x86-64's restart_syscall: the call a signal cut
// short goes on in it, whichever call that was.
const nrRestartSyscall = 219

// blockedKernelStack emits, for a switch of a thread that blocked or
// yielded (the record reserved, its Nr its state): the record's kernel
// chain, the blocking path, walked unless the thread last left the CPU
// in the same system call (orig_ax) from the same user IP and SP in the
// same state: then the chain walked that time is reused, kept in the
// thread's state (made here for a traced thread without one) under the
// call's number, kChains of them. A server blocks in the same call from
// the same place for every request (epoll_wait in its event loop, a
// futex in its queue) and a walk costs microseconds; what the chain is
// read for, whether the thread waited for a lock, slept or waited for
// I/O, is the call's. A thread not inside a call (a page fault's wait, an
// interrupt's return to user mode) or in restart_syscall (whose path is
// the call cut short's) is walked each time. Each walk is counted
// (slotKWalks of the counters). With haveRegs, rRegs already holds the
// task's pt_regs.
func blockedKernelStack(b *bpfasm.Builder, m fds, haveRegs bool) {
	walk, done, miss := b.NewLabel("bk_walk"), b.NewLabel("bk_done"), b.NewLabel("bk_miss")
	have, count := b.NewLabel("bk_have"), b.NewLabel("bk_count")
	// slot emits: R5 = the state's chain for call R3 (R1 the state).
	slot := func() {
		b.Emit(
			asm.Mov.Reg(asm.R5, asm.R3),
			asm.And.Imm(asm.R5, kChains-1),
			asm.Mul.Imm(asm.R5, kChainSize),
			asm.Add.Reg(asm.R5, asm.R1),
		)
	}
	if !haveRegs {
		b.Emit(
			asm.FnGetCurrentTaskBtf.Call(),
			asm.Mov.Reg(asm.R1, asm.R0),
			asm.FnTaskPtRegs.Call(),
			asm.Mov.Reg(rRegs, asm.R0),
		)
	}
	b.Emit(
		asm.LoadMem(asm.R3, rRegs, regOrigAX, asm.DWord),
		asm.JGT.Imm(asm.R3, maxSyscallNr, walk), // negative too: not in a call
		asm.JEq.Imm(asm.R3, nrRestartSyscall, walk),
		asm.LoadMem(asm.R1, asm.RFP, thrSlot, asm.DWord),
		asm.JNE.Imm(asm.R1, 0, have),
	)
	if m.threadHash {
		threadHashNew(b, m)
	} else {
		currentTaskStorage(b, m, 1) // BPF_LOCAL_STORAGE_GET_F_CREATE
		b.Emit(
			asm.StoreMem(asm.RFP, thrSlot, asm.R0, asm.DWord),
		)
	}
	b.Emit(
		asm.LoadMem(asm.R1, asm.RFP, thrSlot, asm.DWord).WithSymbol(have),
		asm.JEq.Imm(asm.R1, 0, walk),
		asm.LoadMem(asm.R3, rRegs, regOrigAX, asm.DWord),
	)
	slot()
	b.Emit(
		asm.LoadMem(asm.R2, asm.R5, thKChains+kcNr, asm.DWord),
		asm.JNE.Reg(asm.R2, asm.R3, miss),
		asm.LoadMem(asm.R2, rRec, offNr, asm.DWord),
		asm.LoadMem(asm.R4, asm.R5, thKChains+kcState, asm.DWord),
		asm.JNE.Reg(asm.R4, asm.R2, miss),
		asm.LoadMem(asm.R2, rRegs, regIP, asm.DWord),
		asm.LoadMem(asm.R4, asm.R5, thKChains+kcUser, asm.DWord),
		asm.JNE.Reg(asm.R4, asm.R2, miss),
		asm.LoadMem(asm.R2, rRegs, regSP, asm.DWord),
		asm.LoadMem(asm.R4, asm.R5, thKChains+kcDepth, asm.DWord),
		asm.JNE.Reg(asm.R4, asm.R2, miss),
		asm.LoadMem(asm.R2, asm.R5, thKChains+kcStack, asm.DWord),
		asm.StoreMem(rRec, offKStack, asm.R2, asm.DWord),
		asm.Ja.Label(done),
	)
	countWalk(b, m, miss, count)
	stackID(b, m, 0, offKStack)
	b.Emit(
		asm.JSLT.Imm(asm.R0, 0, done),
		asm.LoadMem(asm.R1, asm.RFP, thrSlot, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, done),
		asm.LoadMem(asm.R3, rRegs, regOrigAX, asm.DWord),
		// Found again, not kept: the verifier's bounds of the slot.
		asm.JGT.Imm(asm.R3, maxSyscallNr, done),
	)
	slot()
	b.Emit(
		asm.StoreMem(asm.R5, thKChains+kcStack, asm.R0, asm.DWord),
		asm.StoreMem(asm.R5, thKChains+kcNr, asm.R3, asm.DWord),
		asm.LoadMem(asm.R2, rRec, offNr, asm.DWord),
		asm.StoreMem(asm.R5, thKChains+kcState, asm.R2, asm.DWord),
		asm.LoadMem(asm.R2, rRegs, regIP, asm.DWord),
		asm.StoreMem(asm.R5, thKChains+kcUser, asm.R2, asm.DWord),
		asm.LoadMem(asm.R2, rRegs, regSP, asm.DWord),
		asm.StoreMem(asm.R5, thKChains+kcDepth, asm.R2, asm.DWord),
		asm.Ja.Label(done),
	)
	countWalk(b, m, walk, b.NewLabel("bk_counted"))
	stackID(b, m, 0, offKStack)
	b.Mark(done)
}
