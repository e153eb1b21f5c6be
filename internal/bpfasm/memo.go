package bpfasm

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/unwind"
)

// Chains memoized. A thread of a program built without frame pointers
// gets a stack copy at each event and CPU sample that its stacks need, up
// to 24 KiB for a server worker whose frames hold large arrays, and the
// recorder unwinds each copy. Yet such a thread enters its calls, leaves
// the CPU and is sampled in the kernel from a few places over and over,
// at the same user IP and SP through the same callers: the copy and its
// unwind give the same chain each time. What decided that chain is a
// handful of words (unwind.Deps: the return addresses and the saved frame
// pointers the unwind used), so the recorder keeps a memo per thread, IP
// and SP once a copy's unwind was complete (Memos.Set): those words, and
// BP when the unwind used it, under an id whose chain the recorder keeps.
// A program that finds a memo at its thread's IP and SP reads the words
// alone (8 bytes each, MemoCheck) and, when each holds its value, writes
// its record with the memo's id instead of a copy and a walk of the user
// chain. One use in MemoEvery goes the whole way instead, which lets the
// recorder compare the two; past a memo's first MemoSteady uses, one in
// MemoSteady does. The checks come early, when a memo set from a wrong
// unwind would show, and then rarely: each check is a copy of up to 24
// KiB through the ring and an unwind in the recorder, and a server's
// worker uses a memo at its sendmsg thousands of times a second (one in
// 64 all along made a third of the bytes its events put in the ring).

// MemoWords is the most words a memo holds.
const MemoWords = 32

// MemoEvery: one use of a memo in MemoEvery goes the whole way, until
// its MemoSteady-th; from then, one in MemoSteady.
const (
	MemoEvery  = 64
	MemoSteady = 1024
)

// Layout of a memo: the key, a thread and its user IP and SP, and the
// value.
const (
	MemoKeySize = 24
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

// maxMemos bounds the memos of all threads (Set refuses beyond).
const maxMemos = 1 << 13

// Memos are the memos the programs read and the recorder sets.
type Memos struct {
	m   *ebpf.Map
	ids uint32
}

// NewMemos makes the memos' map. Its elements are freed after a grace
// period (not preallocated): a program reading a memo while Set replaces
// it reads the old one whole.
func NewMemos() (*Memos, error) {
	m, err := ebpf.NewMap(&ebpf.MapSpec{Name: "culprit_memo", Type: ebpf.Hash, KeySize: MemoKeySize, ValueSize: memoSize,
		MaxEntries: maxMemos, Flags: unix.BPF_F_NO_PREALLOC})
	if err != nil {
		return nil, err
	}
	return &Memos{m: m}, nil
}

// FD is the map's descriptor, for the programs.
func (ms *Memos) FD() int { return ms.m.FD() }

// Close frees the map (once the programs that read it are closed).
func (ms *Memos) Close() {
	if ms != nil && ms.m != nil {
		ms.m.Close()
	}
}

// Set gives thread tid at user IP ip and SP sp the chain of an unwind
// that depended on deps (unwind.UnwindDeps), with BP bp when
// deps.UsedBP: it returns the memo's id, or 0 when the memo cannot be
// kept (more than MemoWords words, a word too far above sp, deps Unsure,
// the map full). A memo of the same thread, IP and SP is replaced.
func (ms *Memos) Set(tid uint32, ip, sp, bp uint64, deps *unwind.Deps) (uint32, error) {
	if deps.Unsure || len(deps.Words) > MemoWords {
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
	ms.ids++
	id := ms.ids
	le.PutUint32(v[memoID:], id)
	le.PutUint32(v[memoN:], uint32(len(deps.Words)))
	if deps.UsedBP {
		le.PutUint32(v[memoFlags:], memoUseBP)
		le.PutUint64(v[memoBP:], bp)
	}
	if err := ms.m.Put(memoKey(tid, ip, sp), v[:]); err != nil {
		if errors.Is(err, unix.E2BIG) {
			return 0, nil
		}
		return 0, fmt.Errorf("keeping a chain's memo: %w", err)
	}
	return id, nil
}

// Forget drops thread tid's memo at user IP ip and SP sp.
func (ms *Memos) Forget(tid uint32, ip, sp uint64) {
	_ = ms.m.Delete(memoKey(tid, ip, sp))
}

func memoKey(tid uint32, ip, sp uint64) []byte {
	k := make([]byte, MemoKeySize)
	binary.LittleEndian.PutUint32(k, tid)
	binary.LittleEndian.PutUint64(k[8:], ip)
	binary.LittleEndian.PutUint64(k[16:], sp)
	return k
}

// MemoSlots say where a program's MemoCheck works: the memos' map and
// its stack slots. Key holds the key (thread id as a u32 and 4 zero
// bytes, then the user IP and SP) and BP the user BP when MemoCheck
// begins; ID gets the id of the memo whose words hold, else 0; Ptr and
// Read are scratch.
type MemoSlots struct {
	Map                    int
	Key, BP, ID, Ptr, Read int16
}

// MemoCheck emits: s.ID = the id of the thread's memo at its user IP and
// SP (s.Key) when BP (if the memo names it) and every word hold, else 0;
// jumps to miss (with s.ID 0) otherwise. It uses R0-R5.
func (b *Builder) MemoCheck(s MemoSlots, miss string) {
	hit := b.NewLabel("memo_hit")
	b.Emit(StoreImm64(asm.RFP, s.ID, 0))
	b.Lookup(s.Map, s.Key)
	b.Emit(
		asm.JEq.Imm(asm.R0, 0, miss),
		asm.StoreMem(asm.RFP, s.Ptr, asm.R0, asm.DWord),
		// One use in MemoEvery goes the whole way, one in MemoSteady
		// past the first MemoSteady.
		asm.LoadMem(asm.R1, asm.R0, memoUses, asm.Word),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, memoUses, asm.R1, asm.Word),
		asm.Mov.Reg(asm.R2, asm.R1),
		asm.And.Imm(asm.R2, MemoEvery-1),
		asm.JNE.Imm(asm.R2, 0, hit+"_used"),
		asm.JLT.Imm(asm.R1, MemoSteady, miss),
		asm.And.Imm(asm.R1, MemoSteady-1),
		asm.JEq.Imm(asm.R1, 0, miss),
		asm.LoadMem(asm.R1, asm.R0, memoFlags, asm.Word).WithSymbol(hit+"_used"),
		asm.And.Imm(asm.R1, memoUseBP),
		asm.JEq.Imm(asm.R1, 0, hit+"_words"),
		asm.LoadMem(asm.R1, asm.R0, memoBP, asm.DWord),
		asm.LoadMem(asm.R2, asm.RFP, s.BP, asm.DWord),
		asm.JNE.Reg(asm.R1, asm.R2, miss),
	)
	b.Mark(hit + "_words")
	for i := 0; i < MemoWords; i++ {
		b.Emit(
			asm.LoadMem(asm.R0, asm.RFP, s.Ptr, asm.DWord),
			asm.LoadMem(asm.R1, asm.R0, memoN, asm.Word),
			asm.JLE.Imm(asm.R1, int32(i), hit),
			asm.LoadMem(asm.R3, asm.R0, int16(memoOffs+2*i), asm.Half),
			asm.LoadMem(asm.R1, asm.RFP, s.Key+16, asm.DWord),
			asm.Add.Reg(asm.R3, asm.R1),
			asm.Mov.Reg(asm.R1, asm.RFP),
			asm.Add.Imm(asm.R1, int32(s.Read)),
			asm.Mov.Imm(asm.R2, 8),
			asm.FnProbeReadUser.Call(),
			asm.JNE.Imm(asm.R0, 0, miss),
			asm.LoadMem(asm.R0, asm.RFP, s.Ptr, asm.DWord),
			asm.LoadMem(asm.R1, asm.RFP, s.Read, asm.DWord),
			asm.LoadMem(asm.R2, asm.R0, int16(memoVals+8*i), asm.DWord),
			asm.JNE.Reg(asm.R1, asm.R2, miss),
		)
	}
	b.Emit(
		asm.LoadMem(asm.R0, asm.RFP, s.Ptr, asm.DWord).WithSymbol(hit),
		asm.LoadMem(asm.R1, asm.R0, memoID, asm.Word),
		asm.StoreMem(asm.RFP, s.ID, asm.R1, asm.DWord),
	)
}
