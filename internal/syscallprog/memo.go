package syscallprog

import (
	"github.com/cilium/ebpf/asm"

	"github.com/culprit-dev/culprit/internal/bpfasm"
)

// Memoized is the UserStack of an entry or switch whose user chain is
// the one of memo Event.Memo (bpfasm.Memos): the programs found a memo of
// the thread at its user IP and SP whose words its stack holds, and
// wrote the record without a copy or a walk of the user chain.
const Memoized = -3 << 20

// Stack slots of memoCheck.
const (
	memoKeySlot  = -472 // the key (bpfasm.MemoKeySize bytes)
	memoIDSlot   = -480 // the memo found, 0: none
	memoPtrSlot  = -488 // the memo's value
	memoReadSlot = -496 // a word read from the stack
	memoBPSlot   = -504 // the thread's BP
)

// memoCheck emits: memoIDSlot = the id of the memo of the thread at its
// user IP and SP whose words the stack holds, else 0 (rRegs the user
// registers: direct loads when the kernel typed them, else kernel reads).
func memoCheck(b *bpfasm.Builder, m fds, direct bool) {
	b.Emit(storeImm64(asm.RFP, memoIDSlot, 0))
	if m.memos == 0 {
		return
	}
	miss := b.NewLabel("memo_miss")
	b.Emit(
		asm.StoreMem(asm.RFP, memoKeySlot, rPT, asm.Word),
		asm.StoreImm(asm.RFP, memoKeySlot+4, 0, asm.Word),
	)
	for _, r := range []struct {
		slot  int16
		field int32
	}{{memoKeySlot + 8, regIP}, {memoKeySlot + 16, regSP}, {memoBPSlot, regBP}} {
		if direct {
			b.Emit(
				asm.LoadMem(asm.R1, rRegs, int16(r.field), asm.DWord),
				asm.StoreMem(asm.RFP, r.slot, asm.R1, asm.DWord),
			)
			continue
		}
		b.Emit(
			asm.Mov.Reg(asm.R1, asm.RFP),
			asm.Add.Imm(asm.R1, int32(r.slot)),
			asm.Mov.Imm(asm.R2, 8),
			asm.Mov.Reg(asm.R3, rRegs),
			asm.Add.Imm(asm.R3, r.field),
			asm.FnProbeReadKernel.Call(),
			asm.JNE.Imm(asm.R0, 0, miss),
		)
	}
	b.MemoCheck(bpfasm.MemoSlots{Map: m.memos, Key: memoKeySlot, BP: memoBPSlot, ID: memoIDSlot, Ptr: memoPtrSlot, Read: memoReadSlot}, miss)
	b.Mark(miss)
}

// memoSized emits, after memoCheck: with a memo, the record's size is
// hdr (no copy) and the program jumps to label sized, past copySize.
func memoSized(b *bpfasm.Builder, m fds, hdr int32, sized string) {
	if m.memos == 0 {
		return
	}
	b.Emit(
		asm.LoadMem(asm.R1, asm.RFP, memoIDSlot, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, sized+"_not"),
		asm.Mov.Imm(asm.R1, hdr),
		asm.StoreMem(asm.RFP, sizeSlot, asm.R1, asm.DWord),
		asm.Ja.Label(sized),
	)
	b.Mark(sized + "_not")
}

// userChain emits the record's user chain at off: Memoized with a memo
// (memoCheck), else the chain walked (userStackID).
func userChain(b *bpfasm.Builder, m fds, off int16) {
	if m.memos == 0 {
		userStackID(b, m, off)
		return
	}
	walk, done := b.NewLabel("uc_walk"), b.NewLabel("uc_done")
	memoized(b, off, walk, done)
	b.Mark(walk)
	userStackID(b, m, off)
	b.Mark(done)
}

// memoized emits: with a memo (memoCheck's id), Memoized at off of the
// record and a jump to done; without, a jump to walk.
func memoized(b *bpfasm.Builder, off int16, walk, done string) {
	b.Emit(
		asm.LoadMem(asm.R1, asm.RFP, memoIDSlot, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, walk),
		asm.Mov.Imm(asm.R1, Memoized),
		asm.StoreMem(rRec, off, asm.R1, asm.DWord),
		asm.Ja.Label(done),
	)
}

// memoUserID is the thread's user chain id kept at an entry with memo id
// (thUStack): above every user address and chain id the kernel chains'
// reuse compares it with (kcUser).
func memoUserID(id uint64) uint64 { return 1<<62 | id }
