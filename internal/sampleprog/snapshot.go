// Package sampleprog is the BPF program culprit attaches to its cpu-clock
// sampling perf events (PERF_EVENT_IOC_SET_BPF), which runs at every tick,
// in the kernel, at the very instant of the sample. It does two things.
//
// Jitter: with a Jitter range the events tick Min…Max times faster than the
// sampling rate and each thread keeps one tick in a random number of them,
// so that sampling cannot run in lock step with periodic code; the kept
// sample's record says how many ticks it stands for.
//
// Memory snapshots: it copies a sampled thread's memory. A perf sample itself
// carries only the registers and the top of the user stack; expressions such
// as cfg.limits[2] or j->size, and vProf's globals, also need globals and
// the heap as they were at the sample — read later from /proc they would be
// the values of another moment.
//
// Per process the collector gives a Plan: absolute ranges to copy (the
// globals that expressions and value sampling name, and one level of
// pointers read from them), and the data ranges of the address space
// (writable mappings) used to recognise pointers. At each sample the program
// copies the planned ranges — up to MaxAbs pieces of up to MaxPiece bytes,
// GlobalBytes in all, in a loop the verifier walks once per piece, into a
// per-CPU scratch map of their own, output as a record of their own just
// before the sample's other copies — then the stack's red zone (the 128 bytes below
// the stack pointer, where -O0 leaf functions keep locals), then chases
// pointers speculatively: every
// general-purpose register, every word of the top 512 bytes of the stack and
// every word of the copies made so far that points into a data range has the
// 64 bytes it points to copied, up to MaxSlots copies per sample. The copies
// go to a BPF perf-event array, one record per sample, with the thread, the
// CLOCK_MONOTONIC time and, where the kernel has prepared the sample before
// running the program (Linux 6.3 on), the sample's own time as perf writes
// it (Snapshot.Stamp): the collector pairs each record with the sample of
// the same CPU, thread and time (the program runs before the kernel writes
// the sample).
//
// Stack copies: with Stack the program also copies the user stack, in place
// of perf's PERF_SAMPLE_STACK_USER, whose size is fixed per event: from the
// stack pointer up to the top the collector learned for the thread (the
// highest address its last complete unwind read, SetTop), or the full size
// (SetStackBytes) for a thread without one. A sampled thread in a loop a
// few frames below main then copies a few hundred bytes instead of 8 KiB.
// Each copy is a record of its own, paired with its sample like the others.
//
// Memory the program did not copy is missing, never guessed. The program is
// built instruction by instruction with cilium/ebpf's asm package rather
// than compiled from C: it is small, generated from a few constants, and
// needs no clang on the machines that build culprit.
package sampleprog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/perf"
	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/bpfasm"
	"github.com/culprit-dev/culprit/internal/follow"
)

// Limits of one sample's snapshot. A plan beyond MaxAbs pieces or
// GlobalBytes bytes is cut by the collector, which says what it left out.
const (
	MaxAbs      = 128      // planned ranges per process
	MaxPiece    = 4096     // bytes per planned range
	GlobalBytes = 16 << 10 // bytes of planned ranges per sample
	MaxRanges   = 4        // data ranges per process
	MaxSlots    = 64       // copies per sample
	SlotBytes   = 64       // bytes per copy
	stackWords  = 32       // stack words scanned for pointers
	chaseSlots  = 8        // copies whose words are scanned for pointers in turn
)

// Plan layout (BPF map value, little endian).
const (
	planNAbs   = 0
	planFlags  = 4
	planGTotal = 8 // bytes of the planned ranges' record
	planRanges = 16
	planEnts   = planRanges + MaxRanges*16
	entSize    = 24 // addr u64, len u32, dst u32 (in the record), from u32 (record offset of the pointer), pad
	planSize   = planEnts + MaxAbs*entSize

	flagChase = 1
	fromNone  = 0xffffffff
)

// Scratch layout (per-CPU BPF map value).
const (
	scrN     = 0                       // copies made
	scrN1    = 4                       // copies made before the second level
	scrN0    = 8                       // copies made before the chase
	scrG     = 12                      // 1 when the planned ranges' record was output
	scrRegs  = 16                      // struct pt_regs, 21 words
	scrStack = scrRegs + ptRegsWords*8 // stackWords words
	scrOut   = scrStack + stackWords*8
	outHdr   = 40 // magic u32, tid u32, time u64, n u32, interval u32, sp u64 (0: not read), stamp u64 (0: none)
	hdrStamp = 32 // the sample's own stamp (Snapshot.Stamp), in every record's header
	slotHdr  = 16 // addr u64, len u32, err s32
	slotSize = slotHdr + SlotBytes
	scrSlots = scrOut + outHdr
	scrSize  = scrSlots + MaxSlots*slotSize

	magic = 0x504e5343 // "CSNP"
)

// Planned ranges' record layout (per-CPU BPF map value): the header
// (magic, tid, time, n, bytes, unused, stamp), n entries (addr u64, len u32, err s32),
// then the ranges' bytes one after the other.
const (
	gMagic   = 0x424c4743 // "CGLB"
	gEntries = outHdr
	gEntSize = 16
	gOutMax  = gEntries + MaxAbs*gEntSize + GlobalBytes
	gScrSize = gOutMax + MaxPiece
)

// Stack record layout: magic u32, tid u32, time u64, sp u64, len u32,
// flags u32, stamp u64, chain u64 (just before the addresses: the walk
// counts them there), then chain addresses of the user call chain
// (with stackChain) and len bytes of stack from sp.
const (
	stackMagic   = 0x4b545343 // "CSTK"
	stackHdr     = 48
	stackStamp   = 32
	stackSized   = 1 // the copy ends at the thread's learned top
	stackFaulted = 2 // a page of the copy faulted: see stackHoleShift
	stackChain   = 4 // the program walked the user call chain
	stackKnown   = 8 // the holes were taken as known (knownHoles), not read
	// stackMemo: no copy nor chain, but the id of a memo (Options.Memos)
	// in the chain word.
	stackMemo = 16
	// ChainMax is the most addresses of a user call chain the program
	// walks: perf's default depth (kernel.perf_event_max_stack), which
	// the recorder asks of its events too.
	ChainMax = 127
	// stackPages is how many pages a copy of at most MaxStack bytes from
	// any stack pointer spans: the pages a copy that faults is made of,
	// one by one.
	stackPages = MaxStack/4096 + 1
	// stackHoleShift is the flags' bit of the copy's first page that
	// faulted (the page holding sp); the next bit is the next page's.
	// Those pages' bytes are zero in the copy.
	stackHoleShift = 8
	// MaxStack is the largest stack copy the program makes: a thread
	// whose frames between its stack pointer and its outer frames hold
	// a large array (memcached's transmit keeps 16 KiB of iovecs) needs
	// that much for its callers. The scratch record holds it with a
	// page to spare for the page-by-page copy's bounds, within the
	// kernel's 32 KiB for a per-CPU map's value.
	MaxStack = 24 << 10
)

// The scratch record: header, chain, stack copy and the page-by-page
// copy's spare page, within a per-CPU value's 32 KiB.
const sscratchSize = stackHdr + ChainMax*8 + MaxStack + 4096

var _ = [32<<10 - sscratchSize]struct{}{}

// x86-64 struct pt_regs word indices.
const (
	ptRegsWords = 21
	ptRegsGPRs  = 15 // r15 … di
	ptRegsBP    = 4
	ptRegsIP    = 16
	ptRegsCS    = 17
	ptRegsSP    = 19
)

// Range is an absolute address range to copy at each sample. When From is
// not negative the address is not fixed: it is the pointer found PtrOff
// bytes into the copy of range From, plus Addr.
type Range struct {
	Addr   uint64
	Len    int
	From   int
	PtrOff int
}

// Plan says what to copy for one process.
type Plan struct {
	Abs   []Range     // at most MaxAbs, each at most MaxPiece long, GlobalBytes in all
	Data  [][2]uint64 // writable ranges [lo, hi) where pointers are chased (merged to MaxRanges)
	Chase bool
}

// Chunk is memory copied at a sample.
type Chunk struct {
	Addr uint64
	Data []byte
}

// Snapshot is what the program wrote at one sample of one thread.
type Snapshot struct {
	TID uint32
	// Time is CLOCK_MONOTONIC ns: the sample's own time, exactly as perf
	// wrote it in the sample (its PERF_SAMPLE_TIME), when Stamp is that
	// too; else the program's, microseconds from the sample's. Stamp is 0
	// where the kernel runs the program before it prepares the sample
	// (Taker.Stamps).
	Time     uint64
	Stamp    uint64
	CPU      int
	Interval uint32 // with jitter: the ticks this sample stands for
	Chunks   []Chunk
	globals  bool // the record of planned ranges alone
	// A stack record (IsStack) holds only the stack copied from StackSP;
	// Sized says it ended at the thread's learned top. A snapshot's
	// StackSP is the thread's user stack pointer at the sample, 0 when
	// the program did not read the registers (no plan for the process).
	IsStack bool
	Sized   bool
	StackSP uint64
	Stack   []byte
	// StackHoles are the pages of Stack that could not be read (not in
	// memory): bit i the i-th 4 KiB page from the one holding StackSP.
	// Their bytes are zero.
	StackHoles uint8
	// KnownHoles says the holes were those of the thread's last copy at
	// the same SP, taken as known without reading them (knownHoles).
	KnownHoles bool
	// Walked says the program walked the thread's user call chain, User
	// (innermost first, the user IP first), as the kernel's perf walk
	// would have (the events then leave it out: WalksUser).
	Walked bool
	User   []uint64
	// Memo is the id of the memo (Options.Memos) whose chain is the
	// sample's: the record has no copy nor chain.
	Memo uint32
}

// Jitter is the range of ticks between two kept samples; zero: no jitter.
type Jitter struct{ Min, Max uint32 }

// Options say what the program does. Each part left out makes it smaller
// and quicker to load (the verifier takes about 40 ms over the whole of it).
type Options struct {
	Jitter    Jitter
	Snapshots bool // copy planned globals and the red zone
	Chase     bool // and chase pointers from registers, stack and copies (plans may still turn it off)
	// Frequency (samples per second per thread) and PlannedBytes (the
	// bytes of planned ranges expected per sample) size the output ring:
	// half a second of the largest snapshots per CPU.
	Frequency    int
	PlannedBytes int
	// Follow, when set, has the program keep only the samples of the
	// processes in the set (per-CPU events sample every process).
	Follow *follow.Set
	// Stack has the program copy the user stack at each sample (at most
	// MaxStack bytes; SetStackBytes, SetTop).
	Stack bool
	// UserChain has the program walk the user call chain along the frame
	// pointers with each stack copy, in place of the kernel's walk at
	// the sample (which page-faults at the chain's root): WalksUser says
	// whether it does.
	UserChain bool
	// RingBytes is the least output ring size per CPU (a power of two of
	// pages); the ring is larger when half a second of snapshots needs it.
	RingBytes int
	// Memos, with Stack, has a sample whose thread has a memo at its user
	// IP and SP whose words its stack holds recorded with the memo's id
	// (Snapshot.Memo) instead of a copy and a chain.
	Memos *bpfasm.Memos
}

// ringBytes is the output ring's size per CPU: half a second of snapshots
// at the sampling rate, a power of two between 256 KiB and 64 MiB.
func (o Options) ringBytes() int {
	per := outHdr + 2*slotSize // the red zone
	if o.Chase {
		per = outHdr + MaxSlots*slotSize
	}
	if o.PlannedBytes > 0 {
		per += gEntries + MaxAbs*gEntSize/4 + min(o.PlannedBytes, GlobalBytes)
	}
	if o.Stack {
		// Copies sized per thread, a few hundred bytes to a KiB or two
		// once the threads' tops are known, the full size (8 KiB) before.
		per += stackHdr + 4096
		if o.UserChain {
			per += 16 * 8
		}
	}
	per += 8 // the ring's record header
	f := o.Frequency
	if f <= 0 {
		f = 999
	}
	need := f * per / 2
	n := 256 << 10
	for n < need && n < 64<<20 {
		n *= 2
	}
	return max(n, o.RingBytes)
}

func (j Jitter) on() bool { return j.Max > 0 }

// Read reads memory from the snapshot: all of buf must lie in copies.
func (s *Snapshot) Read(addr uint64, buf []byte) error {
	need := buf
	at := addr
	for len(need) > 0 {
		found := false
		for _, c := range s.Chunks {
			if at >= c.Addr && at < c.Addr+uint64(len(c.Data)) {
				n := copy(need, c.Data[at-c.Addr:])
				need, at = need[n:], at+uint64(n)
				found = true
				break
			}
		}
		if !found {
			return ErrNotCopied
		}
	}
	return nil
}

// ErrNotCopied is returned for memory that no copy holds.
var ErrNotCopied = errors.New("not copied at the sample (not a planned global nor within reach of a register or stack pointer)")

// Taker is the loaded program with its maps and output reader.
type Taker struct {
	plans, scratch, gscratch, events, jitter *ebpf.Map
	sscratch, tops, conf                     *ebpf.Map
	prog                                     *ebpf.Program
	walks, stamps                            bool
	rd                                       *perf.Reader
	rec                                      perf.Record
	Lost                                     uint64
	// planned ranges' records waiting for their sample's other record, by CPU
	globals map[int]*Snapshot
}

// New loads the program. The error says why when the kernel refuses.
func New(o Options) (*Taker, error) {
	j := o.Jitter
	if j.on() && (j.Min < 1 || j.Min > j.Max) {
		return nil, fmt.Errorf("jitter range %d…%d ticks is invalid", j.Min, j.Max)
	}
	// Kernels before 5.11 charge BPF memory to RLIMIT_MEMLOCK. (cilium's
	// rlimit package does this too, but probes the kernel in an init
	// function that every culprit command would pay for.)
	_ = unix.Setrlimit(unix.RLIMIT_MEMLOCK, &unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY})
	t := &Taker{globals: map[int]*Snapshot{}}
	var err error
	t.plans, err = ebpf.NewMap(&ebpf.MapSpec{Name: "culprit_plans", Type: ebpf.Hash, KeySize: 4, ValueSize: planSize, MaxEntries: 4096})
	if err != nil {
		return nil, explain(err)
	}
	t.scratch, err = ebpf.NewMap(&ebpf.MapSpec{Name: "culprit_scratch", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: scrSize, MaxEntries: 1})
	if err != nil {
		t.Close()
		return nil, explain(err)
	}
	t.events, err = ebpf.NewMap(&ebpf.MapSpec{Name: "culprit_snaps", Type: ebpf.PerfEventArray})
	if err != nil {
		t.Close()
		return nil, explain(err)
	}
	m := maps{plans: t.plans.FD(), scratch: t.scratch.FD(), gscratch: -1, events: t.events.FD(), jitter: -1, follow: -1,
		sscratch: -1, tops: -1, conf: -1, memos: -1}
	if o.Stack {
		t.sscratch, err = ebpf.NewMap(&ebpf.MapSpec{Name: "culprit_sscratch", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: sscratchSize, MaxEntries: 1})
		if err == nil {
			t.tops, err = ebpf.NewMap(&ebpf.MapSpec{Name: "culprit_tops", Type: ebpf.LRUHash, KeySize: 4, ValueSize: topSize, MaxEntries: 1 << 16})
		}
		if err == nil {
			t.conf, err = ebpf.NewMap(&ebpf.MapSpec{Name: "culprit_sconf", Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1})
		}
		if err != nil {
			t.Close()
			return nil, explain(err)
		}
		m.sscratch, m.tops, m.conf = t.sscratch.FD(), t.tops.FD(), t.conf.FD()
		if o.Memos != nil {
			m.memos = o.Memos.FD()
		}
		if o.UserChain {
			m.chain = userChain()
			t.walks = m.chain != nil
		}
	}
	if o.Follow != nil {
		m.follow = o.Follow.FD()
	}
	m.stamp = sampleStamp()
	t.stamps = m.stamp != nil
	if o.Snapshots {
		t.gscratch, err = ebpf.NewMap(&ebpf.MapSpec{Name: "culprit_gscratch", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: gScrSize, MaxEntries: 1})
		if err != nil {
			t.Close()
			return nil, explain(err)
		}
		m.gscratch = t.gscratch.FD()
	}
	if j.on() {
		t.jitter, err = ebpf.NewMap(&ebpf.MapSpec{Name: "culprit_jitter", Type: ebpf.LRUHash, KeySize: 4, ValueSize: 8, MaxEntries: 1 << 16})
		if err != nil {
			t.Close()
			return nil, explain(err)
		}
		m.jitter = t.jitter.FD()
	}
	// Named after the process, so that a test can tell its program apart.
	load := func() (*ebpf.Program, error) {
		return ebpf.NewProgramWithOptions(&ebpf.ProgramSpec{Name: bpfasm.ProgName(), Type: ebpf.PerfEvent,
			License: "GPL", Instructions: program(m, o)}, ebpf.ProgramOptions{LogSizeStart: 1 << 20})
	}
	t.prog, err = load()
	if err != nil && m.stamp != nil {
		// A kernel whose verifier refuses the stamp's reads through the
		// context: unstamped records pair by time.
		m.stamp, t.stamps = nil, false
		t.prog, err = load()
	}
	if err != nil {
		t.Close()
		return nil, explain(err)
	}
	t.rd, err = perf.NewReaderWithOptions(t.events, o.ringBytes(), perf.ReaderOptions{Watermark: 1 << 16})
	if err != nil {
		t.Close()
		return nil, explain(err)
	}
	t.rd.SetDeadline(time.Unix(1, 0))
	return t, nil
}

func explain(err error) error { return bpfasm.LoadError("sampling", err) }

// WalksUser says whether the program walks the user call chain with
// each stack copy (Options.UserChain, where the kernel's BTF places what
// the walk reads): the perf events can then leave it out
// (exclude_callchain_user).
func (t *Taker) WalksUser() bool { return t.walks }

// chainOffsets places what the program's user walk reads in the kernel's
// structs; returns false leaves uretprobes' trampolines in the chain
// (the kernel's BTF has no uprobes).
type chainOffsets struct {
	mm      int16
	returns bool
	r       bpfasm.Returns
}

// userChain reads chainOffsets from the kernel's BTF; nil when the walk
// cannot be made (no BTF, or no task_struct.mm).
func userChain() *chainOffsets {
	offs, err := bpfasm.TaskOffsets("to walk user call chains", "mm")
	if err != nil || offs[0] > 1<<15-8 {
		return nil
	}
	c := &chainOffsets{mm: int16(offs[0])}
	if r, err := bpfasm.ReturnOffsets("to put back return addresses under uretprobes"); err == nil {
		c.r, c.returns = r, true
	}
	return c
}

// stampOffsets places the sample's stamp in the kernel's structs.
type stampOffsets struct {
	data  int16 // bpf_perf_event_data_kern.data
	flags int16 // perf_sample_data.sample_flags
	time  int16 // perf_sample_data.time
}

// perfSampleTime is PERF_SAMPLE_TIME.
const perfSampleTime = 1 << 2

// sampleStamp reads stampOffsets from the kernel's BTF; nil when the
// program cannot read the stamp (no BTF, a kernel whose sample data has no
// sample_flags, or a layout beyond the program's stack slots).
func sampleStamp() *stampOffsets {
	why := "to stamp records with their sample's time"
	ctx, err := bpfasm.StructOffsets(why, "bpf_perf_event_data_kern", "data")
	if err != nil || ctx[0] < 0 || ctx[0]+8 > -stampCtx-128 {
		return nil
	}
	d, err := bpfasm.StructOffsets(why, "perf_sample_data", "sample_flags", "time")
	if err != nil || d[0]%8 != 0 || d[1]%8 != 0 || max(d[0], d[1]) > 1<<12 || max(d[0], d[1])-min(d[0], d[1])+8 > stampCtx-stampData {
		return nil
	}
	return &stampOffsets{data: int16(ctx[0]), flags: int16(d[0]), time: int16(d[1])}
}

// Stamps says whether the program reads each sample's own stamp into its
// records (Snapshot.Stamp), where the kernel has prepared the sample by
// then (Linux 6.3 on).
func (t *Taker) Stamps() bool { return t.stamps }

// Attach makes the program run at every sample of a perf event; events the
// event's task creates later (inherited events) run it too.
func (t *Taker) Attach(perfFD int) error {
	if err := unix.IoctlSetInt(perfFD, unix.PERF_EVENT_IOC_SET_BPF, t.prog.FD()); err != nil {
		return fmt.Errorf("attaching culprit's BPF sampling program to a perf event: %w", err)
	}
	return nil
}

// SetPlan installs or replaces the plan of a process.
func (t *Taker) SetPlan(pid uint32, p *Plan) error {
	v := make([]byte, planSize)
	le := binary.LittleEndian
	ls := make([]int, len(p.Abs))
	for i, r := range p.Abs {
		ls[i] = r.Len
	}
	n := Fit(ls)
	// Pieces in the record: n entries, then the bytes.
	dst := make([]int, n)
	at := gEntries + n*gEntSize
	for i, r := range p.Abs[:n] {
		dst[i] = at
		at += min(max(r.Len, 0), MaxPiece)
	}
	le.PutUint32(v[planNAbs:], uint32(n))
	if n > 0 {
		le.PutUint32(v[planGTotal:], uint32(at))
	}
	if p.Chase {
		le.PutUint32(v[planFlags:], flagChase)
	}
	for i, r := range MergeRanges(p.Data, MaxRanges) {
		le.PutUint64(v[planRanges+i*16:], r[0])
		le.PutUint64(v[planRanges+i*16+8:], r[1])
	}
	for i, r := range p.Abs[:n] {
		e := v[planEnts+i*entSize:]
		le.PutUint64(e, r.Addr)
		l := min(max(r.Len, 0), MaxPiece)
		le.PutUint32(e[8:], uint32(l))
		le.PutUint32(e[12:], uint32(dst[i]))
		from := uint32(fromNone)
		if f := r.From; f >= 0 && f < i && r.PtrOff >= 0 && r.PtrOff+8 <= min(max(p.Abs[f].Len, 0), MaxPiece) {
			from = uint32(dst[f] + r.PtrOff)
		}
		le.PutUint32(e[16:], from)
	}
	return t.plans.Put(pid, v)
}

// Fit returns how many of the first ranges, of these lengths, a plan
// copies: at most MaxAbs, GlobalBytes in all.
func Fit(lens []int) int {
	at := 0
	for i, l := range lens {
		l = min(max(l, 0), MaxPiece)
		if i == MaxAbs || at+l > GlobalBytes {
			return i
		}
		at += l
	}
	return len(lens)
}

// SetStackBytes sets the stack copy of a thread without a learned top (at
// most MaxStack bytes); until it is set, or with 0, the program copies no
// stack.
func (t *Taker) SetStackBytes(n int) error {
	if t.conf == nil {
		return errors.New("the program copies no stack")
	}
	return t.conf.Put(uint32(0), uint32(min(max(n, 0), MaxStack)&^7))
}

// SetTop has the thread tid's samples copy the stack from their stack
// pointer up to top (when it lies above it, and at most MaxStack away,
// which may be more than the full size: a thread's outer frames may lie
// beyond the full size); 0 forgets the thread's top.
func (t *Taker) SetTop(tid uint32, top uint64) error {
	if t.tops == nil {
		return nil
	}
	if top == 0 {
		err := t.tops.Delete(tid)
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			err = nil
		}
		return err
	}
	var v [topSize]byte
	binary.LittleEndian.PutUint64(v[topAt:], top)
	return t.tops.Put(tid, v[:])
}

// DeletePlan forgets a process.
func (t *Taker) DeletePlan(pid uint32) {
	_ = t.plans.Delete(pid)
}

// Drain calls fn for every snapshot written so far, without blocking.
func (t *Taker) Drain(fn func(*Snapshot)) error {
	for {
		err := t.rd.ReadInto(&t.rec)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil
		}
		if err != nil {
			return err
		}
		if t.rec.LostSamples > 0 {
			t.Lost += t.rec.LostSamples
			continue
		}
		s, ok := Decode(t.rec.RawSample, t.rec.CPU)
		if !ok {
			continue
		}
		if s.IsStack {
			fn(s)
			continue
		}
		// The planned ranges come in a record of their own, just before
		// the sample's other record (always output after it) on the same CPU.
		g := t.globals[s.CPU]
		if s.globals {
			if g != nil { // its other record was lost
				fn(g)
			}
			t.globals[s.CPU] = s
			continue
		}
		if g != nil {
			delete(t.globals, s.CPU)
			if g.TID == s.TID && g.Time == s.Time {
				s.Chunks = append(g.Chunks, s.Chunks...)
			} else {
				fn(g)
			}
		}
		fn(s)
	}
}

// Decode parses one output record of the program.
func Decode(b []byte, cpu int) (*Snapshot, bool) {
	le := binary.LittleEndian
	if len(b) >= stackHdr && le.Uint32(b) == stackMagic {
		n := int(le.Uint32(b[24:]))
		fl := le.Uint32(b[28:])
		k := le.Uint64(b[stackHdr-8:])
		memo := uint32(0)
		if fl&stackMemo != 0 {
			memo = uint32(k)
		}
		if fl&stackChain == 0 {
			k = 0
		}
		if k > ChainMax || n > len(b)-stackHdr-int(k)*8 {
			return nil, false
		}
		s := &Snapshot{TID: le.Uint32(b[4:]), Time: le.Uint64(b[8:]), Stamp: le.Uint64(b[stackStamp:]), CPU: cpu, IsStack: true,
			Sized: fl&stackSized != 0, StackSP: le.Uint64(b[16:]), Walked: fl&stackChain != 0,
			StackHoles: uint8(fl >> stackHoleShift), KnownHoles: fl&stackKnown != 0, Memo: memo}
		at := stackHdr + int(k)*8
		if s.Walked {
			s.User = make([]uint64, k)
			for i := range s.User {
				s.User[i] = le.Uint64(b[stackHdr+8*i:])
			}
		}
		s.Stack = append([]byte(nil), b[at:at+n]...)
		return s, true
	}
	if len(b) >= outHdr && le.Uint32(b) == gMagic {
		return decodeGlobals(b, cpu), true
	}
	if len(b) < outHdr || le.Uint32(b) != magic {
		return nil, false
	}
	s := &Snapshot{TID: le.Uint32(b[4:]), Time: le.Uint64(b[8:]), Stamp: le.Uint64(b[hdrStamp:]), CPU: cpu, Interval: le.Uint32(b[20:]), StackSP: le.Uint64(b[24:])}
	n := int(le.Uint32(b[16:]))
	b = b[outHdr:]
	for i := 0; i < n && len(b) >= slotSize; i, b = i+1, b[slotSize:] {
		addr, ln, errno := le.Uint64(b), int(le.Uint32(b[8:])), int32(le.Uint32(b[12:]))
		if errno != 0 || ln <= 0 || ln > SlotBytes {
			continue
		}
		data := make([]byte, ln)
		copy(data, b[slotHdr:slotHdr+ln])
		s.Chunks = append(s.Chunks, Chunk{Addr: addr, Data: data})
	}
	return s, true
}

func decodeGlobals(b []byte, cpu int) *Snapshot {
	le := binary.LittleEndian
	s := &Snapshot{TID: le.Uint32(b[4:]), Time: le.Uint64(b[8:]), Stamp: le.Uint64(b[hdrStamp:]), CPU: cpu, globals: true}
	n := int(le.Uint32(b[16:]))
	at := gEntries + n*gEntSize
	for i := 0; i < n && gEntries+(i+1)*gEntSize <= len(b); i++ {
		e := b[gEntries+i*gEntSize:]
		addr, ln, errno := le.Uint64(e), int(le.Uint32(e[8:])), int32(le.Uint32(e[12:]))
		if ln < 0 || ln > MaxPiece || at+ln > len(b) {
			break
		}
		if errno == 0 && ln > 0 {
			s.Chunks = append(s.Chunks, Chunk{Addr: addr, Data: append([]byte(nil), b[at:at+ln]...)})
		}
		at += ln
	}
	return s
}

// Close releases the program, its maps and the reader. Nothing outlives
// the recorder: no object is pinned.
func (t *Taker) Close() {
	if t.rd != nil {
		t.rd.Close()
	}
	// cilium's Close methods accept nil: parts a failed New never made.
	for _, c := range []interface{ Close() error }{t.prog, t.events, t.scratch, t.gscratch, t.plans, t.jitter, t.sscratch, t.tops, t.conf} {
		c.Close()
	}
}

// MergeRanges merges sorted-or-not ranges until at most n remain, closing
// the smallest gaps first.
func MergeRanges(rs [][2]uint64, n int) [][2]uint64 {
	out := append([][2]uint64(nil), rs...)
	sortRanges(out)
	// Merge overlapping ones.
	var m [][2]uint64
	for _, r := range out {
		if r[1] <= r[0] {
			continue
		}
		if len(m) > 0 && r[0] <= m[len(m)-1][1] {
			m[len(m)-1][1] = max(m[len(m)-1][1], r[1])
			continue
		}
		m = append(m, r)
	}
	for len(m) > n {
		best := 0
		for i := 1; i+1 < len(m); i++ {
			if m[i+1][0]-m[i][1] < m[best+1][0]-m[best][1] {
				best = i
			}
		}
		m[best][1] = m[best+1][1]
		m = append(m[:best+1], m[best+2:]...)
	}
	return m
}

func sortRanges(rs [][2]uint64) {
	sort.Slice(rs, func(i, j int) bool { return rs[i][0] < rs[j][0] })
}
