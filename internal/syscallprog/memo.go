package syscallprog

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/bpfasm"
	"github.com/culprit-dev/culprit/internal/unwind"
)

// Chains memoized. A thread of a program built without frame pointers
// gets a stack copy at each entry and switch that its stacks need
// (SetTop), up to 24 KiB for a server worker whose frames hold large
// arrays, and the recorder unwinds each copy. Yet such a thread enters
// its calls and leaves the CPU from a few places over and over, at the
// same IP and SP, through the same callers: the copy and its unwind give
// the same chain each time. What decided that chain is a handful of
// words (unwind.Deps: the return addresses and the saved frame pointers
// the unwind used), so the recorder gives the programs a memo per
// thread, IP and SP once a copy's unwind was complete (SetMemo): those
// words, and BP when the unwind used it. A later entry or switch of that
// thread at that IP and SP reads the words alone (a read of 8 bytes
// each) and, when each holds its value, writes its record without a copy
// or a walk of the user chain, with UserStack Memoized and the memo's id
// (Event.Memo), whose chain the recorder keeps. One in knownRead of a
// memo's uses goes the whole way instead, which lets the recorder
// compare the two.

// Memoized is the UserStack of an entry or switch whose user chain is
// the one of memo Event.Memo (SetMemo).
const Memoized = -3 << 20

// MemoWords is the most words a memo holds.
const MemoWords = 32

// Layout of a memo: the key, a thread and its user IP and SP, and the
// value.
const (
	memoKeySize = 24
	memoID      = 0  // u32: the memo's id, from 1
	memoN       = 4  // u32: its words
	memoFlags   = 8  // u32: memoUseBP
	memoUses    = 12 // u32: uses since set
	memoBP      = 16 // u64: BP, with memoUseBP
	memoOffs    = 24 // u16 each: the words' offsets from SP
	memoVals    = memoOffs + 2*MemoWords
	memoSize    = memoVals + 8*MemoWords
	memoUseBP   = 1
)

// Stack slots of memoCheck.
const (
	memoKeySlot  = -472 // the key (memoKeySize bytes)
	memoIDSlot   = -480 // the memo found, 0: none
	memoPtrSlot  = -488 // the memo's value
	memoReadSlot = -496 // a word read from the stack
	memoBPSlot   = -504 // the thread's BP
)

// memosOnKey is the slot of topsOn that says a memo is set.
const memosOnKey = 1

// memoCheck emits: memoIDSlot = the id of the memo of the thread at its
// user IP and SP whose words the stack holds, else 0 (rRegs the user
// registers: direct loads when the kernel typed them, else kernel reads).
func memoCheck(b *bpfasm.Builder, m fds, direct bool) {
	b.Emit(storeImm64(asm.RFP, memoIDSlot, 0))
	if m.memos == 0 {
		return
	}
	miss, hit := b.NewLabel("memo_miss"), b.NewLabel("memo_hit")
	b.Emit(asm.StoreImm(asm.RFP, -8, memosOnKey, asm.Word))
	b.Lookup(m.topsOn, -8)
	b.Emit(
		asm.JEq.Imm(asm.R0, 0, miss),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, miss),
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
	b.Lookup(m.memos, memoKeySlot)
	b.Emit(
		asm.JEq.Imm(asm.R0, 0, miss),
		asm.StoreMem(asm.RFP, memoPtrSlot, asm.R0, asm.DWord),
		// One use in knownRead goes the whole way.
		asm.LoadMem(asm.R1, asm.R0, memoUses, asm.Word),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, memoUses, asm.R1, asm.Word),
		asm.And.Imm(asm.R1, knownRead-1),
		asm.JEq.Imm(asm.R1, 0, miss),
		asm.LoadMem(asm.R1, asm.R0, memoFlags, asm.Word),
		asm.And.Imm(asm.R1, memoUseBP),
		asm.JEq.Imm(asm.R1, 0, "memo_words"),
		asm.LoadMem(asm.R1, asm.R0, memoBP, asm.DWord),
		asm.LoadMem(asm.R2, asm.RFP, memoBPSlot, asm.DWord),
		asm.JNE.Reg(asm.R1, asm.R2, miss),
	)
	b.Mark("memo_words")
	for i := 0; i < MemoWords; i++ {
		b.Emit(
			asm.LoadMem(asm.R0, asm.RFP, memoPtrSlot, asm.DWord),
			asm.LoadMem(asm.R1, asm.R0, memoN, asm.Word),
			asm.JLE.Imm(asm.R1, int32(i), hit),
			asm.LoadMem(asm.R3, asm.R0, int16(memoOffs+2*i), asm.Half),
			asm.LoadMem(asm.R1, asm.RFP, memoKeySlot+16, asm.DWord),
			asm.Add.Reg(asm.R3, asm.R1),
			asm.Mov.Reg(asm.R1, asm.RFP),
			asm.Add.Imm(asm.R1, memoReadSlot),
			asm.Mov.Imm(asm.R2, 8),
			asm.FnProbeReadUser.Call(),
			asm.JNE.Imm(asm.R0, 0, miss),
			asm.LoadMem(asm.R0, asm.RFP, memoPtrSlot, asm.DWord),
			asm.LoadMem(asm.R1, asm.RFP, memoReadSlot, asm.DWord),
			asm.LoadMem(asm.R2, asm.R0, int16(memoVals+8*i), asm.DWord),
			asm.JNE.Reg(asm.R1, asm.R2, miss),
		)
	}
	b.Emit(
		asm.LoadMem(asm.R0, asm.RFP, memoPtrSlot, asm.DWord).WithSymbol(hit),
		asm.LoadMem(asm.R1, asm.R0, memoID, asm.Word),
		asm.StoreMem(asm.RFP, memoIDSlot, asm.R1, asm.DWord),
	)
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
	b.Emit(
		asm.LoadMem(asm.R1, asm.RFP, memoIDSlot, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, walk),
		asm.Mov.Imm(asm.R1, Memoized),
		asm.StoreMem(rRec, off, asm.R1, asm.DWord),
		asm.Ja.Label(done),
	)
	b.Mark(walk)
	userStackID(b, m, off)
	b.Mark(done)
}

// memoUserID is the thread's user chain id kept at an entry with memo id
// (thUStack): above every user address and chain id the kernel chains'
// reuse compares it with (kcUser).
func memoUserID(id uint64) uint64 { return 1<<62 | id }

// SetMemo gives thread tid's entries and switches at user IP ip and SP
// sp the chain of an unwind that depended on deps (unwind.UnwindDeps),
// with BP bp when deps.UsedBP: it returns the memo's id, which their
// records carry (Event.Memo), or 0 when the memo cannot be kept (no
// memos without StackTops, more than MemoWords words, a word too far
// above sp, deps Unsure). A memo of the same thread, IP and SP is
// replaced.
func (t *Tracer) SetMemo(tid uint32, ip, sp, bp uint64, deps *unwind.Deps) (uint32, error) {
	if t.memos == nil || deps.Unsure || len(deps.Words) > MemoWords {
		return 0, nil
	}
	var v [memoSize]byte
	le := binary.LittleEndian
	for i, w := range deps.Words {
		if w.Addr < sp || w.Addr-sp > 0xffff {
			return 0, nil
		}
		le.PutUint16(v[memoOffs+2*i:], uint16(w.Addr-sp))
		le.PutUint64(v[memoVals+8*i:], w.Val)
	}
	t.memoIDs++
	id := t.memoIDs
	le.PutUint32(v[memoID:], id)
	le.PutUint32(v[memoN:], uint32(len(deps.Words)))
	if deps.UsedBP {
		le.PutUint32(v[memoFlags:], memoUseBP)
		le.PutUint64(v[memoBP:], bp)
	}
	if err := t.memos.Put(memoKey(tid, ip, sp), v[:]); err != nil {
		if errors.Is(err, unix.E2BIG) {
			return 0, nil
		}
		return 0, fmt.Errorf("keeping a chain's memo: %w", err)
	}
	if !t.memosSet {
		if err := t.topsOn.Put(uint32(memosOnKey), uint64(1)); err != nil {
			return 0, err
		}
		t.memosSet = true
	}
	return id, nil
}

// ForgetMemo drops thread tid's memo at user IP ip and SP sp.
func (t *Tracer) ForgetMemo(tid uint32, ip, sp uint64) {
	if t.memos != nil {
		_ = t.memos.Delete(memoKey(tid, ip, sp))
	}
}

func memoKey(tid uint32, ip, sp uint64) []byte {
	k := make([]byte, memoKeySize)
	binary.LittleEndian.PutUint32(k, tid)
	binary.LittleEndian.PutUint64(k[8:], ip)
	binary.LittleEndian.PutUint64(k[16:], sp)
	return k
}

// maxMemos bounds the memos of all threads (SetMemo fails beyond).
const maxMemos = 1 << 13
