package syscallprog

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/bpfasm"
)

// CPU samples at the scheduler's tick (Options.Ticks, record -F tick).
//
// A profiler's timer (perf's cpu-clock event, bpftrace's profile probe)
// interrupts each CPU at its own rate, on top of the interrupts the kernel
// takes anyway: on a VM each is an exit to the hypervisor, and on a
// loopback server that wakes its clients across CPUs the extra interrupts
// also turn wake-ups into reschedule interrupts (docs/performance.md,
// "What the VM charges besides"). The kernel's own tick, the hrtimer that
// runs the scheduler's and the time accounting's periodic work, already
// interrupts every busy CPU HZ times a second (idle CPUs stop it): a
// program on the hrtimer_expire_entry tracepoint that keeps the expiries
// of the tick's timer samples the thread the tick found running, as the
// kernel's own CPU time accounting does, with no interrupt added. The
// rate is HZ (TickPeriod), fixed by the kernel's build; the samples come
// in step with the tick, so code that itself runs in step with it (work
// the timer wheel starts at a jiffy) is sampled with a bias perf's timer
// does not have.
//
// The program runs at every hrtimer expiry of the machine and stops at
// once for other timers and for threads not traced. For a traced thread it
// writes the thread's kernel chain from the tracepoint (the timer
// interrupt's frames, then the interrupted kernel code's when the tick
// came in the kernel: TrimInterrupt keeps the latter), its user registers
// (task_pt_regs: where the interrupt, or the system call it came in,
// entered the kernel), its user chain and stack copy, as a switch's. The
// chains travel in the record itself, not in the stacks map that the
// calls' and switches' chains are kept in: those are few (a server calls
// and blocks from a few places), a sample's are as many as the samples
// (each interrupted instruction its own), and would fill the map.

// Layout of a tick's record: the entry's header, the kernel chain and the
// user chain, MaxStack addresses each (0 after the last), then the copy.
const (
	offTickKernel = hdrSize
	offTickUser   = offTickKernel + MaxStack*8
	tickHdrSize   = offTickUser + MaxStack*8
)

// TickPeriod returns the scheduler tick's period, 1/HZ: the resolution
// Linux gives its coarse clocks.
func TickPeriod() (uint64, error) {
	var ts unix.Timespec
	if err := unix.ClockGetres(unix.CLOCK_MONOTONIC_COARSE, &ts); err != nil {
		return 0, fmt.Errorf("reading the kernel's tick period: %w", err)
	}
	if ts.Nano() <= 0 {
		return 0, errors.New("reading the kernel's tick period: the coarse clock has no resolution")
	}
	return uint64(ts.Nano()), nil
}

// tickProgram: hrtimer_expire_entry(hrtimer, now), a tp_btf program (its
// arguments typed, so that the timer's function is a load), for the
// expiry of the timer whose function is tickFn (at fnOff in struct
// hrtimer) while a traced thread runs: a record of kind kindTick.
func tickProgram(m fds, copyBytes, ringBytes int, fnOff int32, tickFn uint64) asm.Instructions {
	m.walker = walkTick
	var b bpfasm.Builder
	b.Emit(
		asm.LoadMem(asm.R2, asm.R1, 0, asm.DWord), // the hrtimer
		asm.LoadMem(asm.R2, asm.R2, int16(fnOff), asm.DWord),
		asm.LoadImm(asm.R3, int64(tickFn), asm.DWord),
		asm.JEq.Reg(asm.R2, asm.R3, "tick"),
		asm.Mov.Imm(asm.R0, 0),
		asm.Return(),
	)
	b.Mark("tick") // R1 is the context still
	traced(&b, m, m.tops != 0)
	b.Emit(
		asm.FnGetCurrentTaskBtf.Call(),
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.FnTaskPtRegs.Call(),
		asm.Mov.Reg(rRegs, asm.R0),
	)
	memoCheck(&b, m, true)
	memoSized(&b, m, tickHdrSize, "t_sized")
	copySize(&b, tickHdrSize, copyBytes, ringBytes, m)
	b.Mark("t_sized")
	reserve(&b, m, -1, kindTick)
	b.Emit(
		storeImm64(rRec, offNr, 0),
		storeImm64(rRec, offCallNr, 0),
		storeImm64(rRec, offSkipped, 0),
		// The kernel chain, into the record (bpf_get_stack zeroes what
		// follows it): its length in bytes, or a negative error.
		asm.Mov.Reg(asm.R1, rCtx),
		asm.Mov.Reg(asm.R2, rRec),
		asm.Add.Imm(asm.R2, offTickKernel),
		asm.Mov.Imm(asm.R3, MaxStack*8),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnGetStack.Call(),
		asm.StoreMem(rRec, offKStack, asm.R0, asm.DWord),
	)
	tickUserChain(&b, m)
	userRegs(&b, m, tickHdrSize, copyBytes, true)
	submit(&b, m)
	return b.Ins
}

// tickUserChain emits the record's user chain: Memoized with a memo
// (memoCheck), else walked into the record along the frame pointers
// (offUStack 0), or by the kernel's helper where the program cannot walk
// it (offUStack its length in bytes, or a negative error).
func tickUserChain(b *bpfasm.Builder, m fds) {
	walk, helper, done := b.NewLabel("tu_walk"), b.NewLabel("tu_helper"), b.NewLabel("tu_done")
	if m.memos != 0 {
		memoized(b, offUStack, walk, done)
	}
	b.Mark(walk)
	if m.userDepth > 0 {
		b.Emit(
			asm.Mov.Reg(asm.R1, rRec),
			asm.Add.Imm(asm.R1, offTickUser),
			asm.StoreMem(asm.RFP, walkSlot, asm.R1, asm.DWord),
		)
		b.WalkUser(bpfasm.UserChain{Buf: walkSlot, FP: fpSlot, Frame: frameSlot, Zero: true,
			Depth: MaxStack, MMOff: m.mmOff, Helper: helper})
		b.Emit(
			storeImm64(rRec, offUStack, 0),
			asm.Ja.Label(done),
		)
	}
	b.Mark(helper)
	b.Emit(
		asm.Mov.Reg(asm.R1, rCtx),
		asm.Mov.Reg(asm.R2, rRec),
		asm.Add.Imm(asm.R2, offTickUser),
		asm.Mov.Imm(asm.R3, MaxStack*8),
		asm.Mov.Imm(asm.R4, 1<<8), // BPF_F_USER_STACK
		asm.FnGetStack.Call(),
		asm.StoreMem(rRec, offUStack, asm.R0, asm.DWord),
	)
	b.Mark(done)
}

// tick completes ev from a tick's record b.
func (t *Tracer) tick(ev *Event, b []byte) {
	le := binary.LittleEndian
	ev.Tick, ev.Nr = true, 0
	if len(b) < tickHdrSize {
		ev.UserStack, ev.KernStack = -1, -1
		return
	}
	ev.UserStack = int64(le.Uint64(b[offUStack:]))
	ev.IP, ev.SP, ev.BP = le.Uint64(b[offIP:]), le.Uint64(b[offSP:]), le.Uint64(b[offBP:])
	n := int(le.Uint32(b[offCopied:]))
	ev.Stack = b[tickHdrSize:min(tickHdrSize+n, len(b))]
	ev.StackHoles = uint8(le.Uint32(b[offHoles:]))
	if ev.KernStack >= 0 {
		ev.KernelChain = tickChain(b[offTickKernel:offTickUser])
	}
	switch {
	case ev.UserStack == Memoized:
		ev.Memo, ev.StackHoles = le.Uint32(b[offHoles:]), 0
	case ev.UserStack >= 0:
		ev.UserChain, ev.UserStack = tickChain(b[offTickUser:tickHdrSize]), 0
	}
	ev.Reduced = t.copyBytes > 0 && len(b) < tickHdrSize+t.copyBytes && ev.UserStack != Memoized
}

// tickChain reads a chain of a tick's record: its addresses up to the
// first 0, a copy.
func tickChain(b []byte) []uint64 {
	var c []uint64
	for i := 0; i+8 <= len(b) && i < MaxStack*8; i += 8 {
		a := binary.LittleEndian.Uint64(b[i:])
		if a == 0 {
			break
		}
		c = append(c, a)
	}
	return c
}

// TrimInterrupt returns a tick's kernel chain (Event.KernelChain) without
// the frames of the tracing code and of the timer interrupt: what the
// interrupted kernel code was doing, innermost first, or nothing when the
// tick came in user mode. The interrupt's frames end at its entry code,
// the first frame in the kernel's entry text; a chain with none is kept
// whole.
func (t *Tracer) TrimInterrupt(st []uint64) []uint64 {
	st = t.tracing.Trim(st)
	<-t.tracing.read
	e := t.tracing.c.entry
	if e[1] == 0 {
		return st
	}
	for i, pc := range st {
		if pc >= e[0] && pc < e[1] {
			return st[i+1:]
		}
	}
	return st
}
