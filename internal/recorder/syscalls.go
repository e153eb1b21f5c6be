package recorder

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"time"

	"github.com/culprit-dev/culprit/internal/perf"
	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/syscallprog"
	"github.com/culprit-dev/culprit/internal/unwind"
)

// System call and context switch events through a BPF program
// (internal/syscallprog), by default: one walk of the user call chain per
// system call instead of one per entry and one per exit, the kernel's entry
// path walked once, no perf sample output, and threads of other processes
// turned away in the kernel. The recorder writes the same
// EventSyscallEnter, EventSyscallExit and EventSwitch samples as from
// perf's tracepoint events: the exit carries its entry's user stack (the
// thread did not leave the kernel between them), and user chains are
// repaired from the copied stack like any other sample's.
//
// perf's tracepoint events remain with Options.PerfEvents and where the
// program cannot serve: dwarf mode (its stack copies are as large as CPU
// samples'), --event-period (the program records every event), --events
// without cpu or wakeup (no other perf event reports the process's
// mappings), and kernels or users the program is refused on (said in a
// warning); switches also for users without kernel call chains.

// sysCopyBytes is the stack the program copies at each entry in fp mode,
// as perf's tracepoint events do: enough for the CFI repair of a system
// call wrapper's frame and its callers'.
const sysCopyBytes = 1024

// sysRingBytes is the program's ring: 64 MiB, about 58 k system calls
// with their stack copies, 0.15 s of the fastest loop of system calls
// (docs/performance.md); rings of Options.RingPages per CPU when given.
func (o *Options) sysRingBytes(cpus int) int {
	if !o.ringGiven {
		return 64 << 20
	}
	n := os.Getpagesize()
	for n < o.RingPages*os.Getpagesize()*cpus {
		n *= 2
	}
	return n
}

// sysEvent is one record of the program, kept for the drain's time order.
type sysEvent struct {
	ev    syscallprog.Event
	stack []byte // the stack copy, in session.sysBuf
}

// sysChunk is the size of sysBuffer's chunks.
const sysChunk = 1 << 20

// sysBuffer holds the stack copies of a drain's records: the ring's
// records are read straight into it, each after the last one's stack
// copy, in chunks the next drain reuses. Chunks, not one slice grown as
// needed: a drain of tens of megabytes of copies would move them at each
// growth, and slices of the records point into it.
type sysBuffer struct {
	chunks [][]byte
	cur    int // the chunk being filled
	used   int // its bytes kept
}

func (b *sysBuffer) reset() { b.cur, b.used = 0, 0 }

// free returns room for the next record, MaxRecord bytes.
func (b *sysBuffer) free() []byte {
	if b.cur < len(b.chunks) && sysChunk-b.used < syscallprog.MaxRecord {
		b.cur, b.used = b.cur+1, 0
	}
	if b.cur == len(b.chunks) {
		b.chunks = append(b.chunks, make([]byte, sysChunk))
	}
	return b.chunks[b.cur][b.used:b.used:sysChunk]
}

// keep keeps the record last read into free() up to the end of stack, a
// slice of it (the rest, its header, is free again); nothing when the
// record has no stack copy.
func (b *sysBuffer) keep(stack []byte) {
	if len(stack) == 0 || b.cur >= len(b.chunks) {
		return
	}
	// A record larger than free()'s room was read into a slice of its
	// own: the chunk's room stays free.
	c := b.chunks[b.cur]
	if &stack[:cap(stack)][cap(stack)-1] != &c[sysChunk-1] {
		return
	}
	b.used = sysChunk - cap(stack) + len(stack)
}

// pendingCall is a thread's last system call entry: waiting for its exit,
// or exited (a switch on the way back to user space, after the exit's
// record, still takes the call's user chain).
type pendingCall struct {
	nr           uint64
	kernel, user []uint64
	truncated    bool
	ip, sp       uint64 // the user registers at the entry
	exited       bool
	// reduced: recorded without the stack copy (the program's ring was
	// filling; said in a warning of its own).
	reduced bool
	// weight: the calls the entry stands for (itself and those of its
	// thread not recorded since its previous recorded entry).
	weight uint64
	// gone: its thread has exited (threadExited).
	gone bool
}

// goneKept is how many exited threads keep their pending call.
const goneKept = 256

// threadExited marks thread tid's pending call as its thread's last: the
// thread's last switch, inside the exit(2) call, comes through the BPF
// ring after perf's exit record and refers to it. It is let go at that
// switch, at the thread id's next entry, or once goneKept threads exited
// after it.
func (s *session) threadExited(tid uint32) {
	c := s.pending[tid]
	if c == nil {
		return
	}
	c.gone = true
	s.gone = append(s.gone, tid)
	if len(s.gone) > 2*goneKept {
		for _, t := range s.gone[:goneKept] {
			if p := s.pending[t]; p != nil && p.gone {
				delete(s.pending, t)
			}
		}
		s.gone = append(s.gone[:0], s.gone[goneKept:]...)
	}
}

// syscallsViaBPF loads the program when the recording's options allow it
// and marks the system call and context switch kinds to be recorded by it.
func (s *session) syscallsViaBPF() {
	var sys []*eventKind
	sideband := false
	o := syscallprog.Options{KernelStacks: !s.o.SyscallUserStacks && !s.o.UserOnly,
		StackBytes: min(s.o.StackBytes, sysCopyBytes), RingBytes: s.o.sysRingBytes(len(s.cpus)), Follow: s.follow,
		Limit: s.o.SyscallLimit, LimitBurst: s.o.SyscallBurst,
		WindowOn: s.o.SyscallWindowOn, WindowPeriod: s.o.SyscallWindowPeriod, WindowAbove: s.o.SyscallWindowAbove,
		WindowRateSpan:     min(AutoRateSpan, s.o.SyscallWindowPeriod),
		BlockingChainsOnly: s.o.blockingChainsOnly, StackTops: s.o.StackBytes > 0}
	if o.StackTops {
		o.Memos = s.memoMap()
	}
	for i := range s.kinds {
		k := &s.kinds[i]
		switch k.event {
		case recording.EventSyscallEnter, recording.EventSyscallExit:
			sys = append(sys, k)
			o.Syscalls = true
		case recording.EventSwitch:
			if !s.o.UserOnly { // the switch's kernel chain is its point
				sys = append(sys, k)
				o.Switches = true
			}
		case recording.EventCPU:
			if s.o.TickClock {
				sys = append(sys, k)
				o.Ticks = true
			} else {
				sideband = true
			}
		case recording.EventWakeup:
			// perf's events record a traced thread's wake-ups, with its
			// stack; the program those others make of traced threads
			// (an interrupt on another task, another program), which
			// perf's events, the waker's, do not see.
			o.Wakeups = true
			// Where only the critical path is wanted, the program
			// records them all, with the waker's stack; the others
			// (a traced thread waking one that is not) are not.
			o.WakerStacks = s.o.blockingChainsOnly
			sideband = true
		default:
			sideband = true
		}
	}
	// The switches onto a CPU come with the switches away: the program's
	// are stamped at the kernel's pick, perf's after the context switch.
	o.SwitchIns = o.Switches && o.Wakeups
	if o.Ticks && !s.perCPU {
		// The CPUs' dummy events bring the samples' mappings.
		s.tickFail = errors.New("-F tick needs culprit's BPF programs and per-CPU perf events, which this kernel or user is refused: run as root, or use a frequency")
		return
	}
	if !o.Ticks && (s.o.PerfEvents || len(sys) == 0 || !sideband || s.o.CallGraph != CallGraphFP || s.o.EventPeriod > 1) {
		if o.Syscalls && o.WindowOn > 0 && o.WindowAbove == 0 {
			s.warn("--syscall-windows applies where culprit's BPF program records system calls: perf's events record them all along")
		}
		return
	}
	t, err := syscallprog.New(o)
	if err != nil && o.Ticks {
		s.tickFail = fmt.Errorf("-F tick: %w", err)
		return
	}
	if err != nil {
		s.warn("system call and context switch events recorded through perf, at about twice the cost: %v", err)
		return
	}
	s.sys, s.ticks = t, o.Ticks
	if o.Syscalls && o.Limit > 0 {
		s.sysLimit, s.sysBurst = o.Limit, max(o.LimitBurst, 1)
	}
	s.sysWindows = o.Syscalls && o.WindowOn > 0
	s.sysLast = monotonic() // nothing is lost before the program runs
	s.pending = map[uint32]*pendingCall{}
	s.sysStacks = map[int64][]uint64{}
	if o.StackTops {
		s.sysTops = map[uint32]threadTop{}
	}
	for _, k := range sys {
		k.viaBPF = true
	}
	for i := range s.kinds {
		k := &s.kinds[i]
		if k.event == recording.EventWakeup && o.SwitchIns {
			k.switches = false
		}
		if k.event == recording.EventWakeup && o.WakerStacks {
			k.sidebandOnly = true
		}
	}
	// The program records each new thread's first wake-up.
	s.kinds = slices.DeleteFunc(s.kinds, func(k eventKind) bool { return k.newTask })
}

// sysKind returns the kind recorded for a record of the program.
func (s *session) sysKind(ev *syscallprog.Event) *eventKind {
	want := recording.EventSyscallEnter
	switch {
	case ev.Exit:
		want = recording.EventSyscallExit
	case ev.Switch:
		want = recording.EventSwitch
	case ev.Waking:
		want = recording.EventWakeup
	case ev.Tick:
		want = recording.EventCPU
	}
	for i := range s.kinds {
		if s.kinds[i].event == want {
			return &s.kinds[i]
		}
	}
	return nil
}

// traceSyscalls has the program trace the processes of threads tids.
func (s *session) traceSyscalls(tids []int) error {
	for _, tid := range tids {
		if err := s.sys.Add(uint32(tid)); err != nil {
			return fmt.Errorf("tracing the system calls of %d: %w", tid, err)
		}
	}
	return nil
}

// drainSyscalls adds the program's records to the drain's items, up to
// the first stamped after stop: those the kernel writes while the drain
// reads wait in the ring for the next drain, so that a drain that falls
// behind the program does not read on without end, copying ever more
// records to hold them for the time order.
func (s *session) drainSyscalls(stop uint64) {
	s.sysBuf.reset()
	s.sysEvents = s.sysEvents[:0]
	err := s.sys.DrainInto(stop, s.sysBuf.free, func(ev *syscallprog.Event) {
		e := sysEvent{ev: *ev, stack: ev.Stack}
		e.ev.Stack = nil
		s.sysBuf.keep(ev.Stack)
		s.sysEvents = append(s.sysEvents, e)
	})
	if err != nil {
		s.warn("reading system call events: %v", err)
	}
	if s.sysWindows {
		w, _ := s.sys.WindowsFrom(s.sysWindowsOut)
		s.writeWindows(w, false)
	}
	since := s.sysLast
	for i := range s.sysEvents {
		e := &s.sysEvents[i]
		s.items = append(s.items, item{time: e.ev.Time, rec: e, kind: s.sysKind(&e.ev)})
		s.sysLast = max(s.sysLast, e.ev.Time)
	}
	// Records the ring had no room for were dropped after the last one
	// an earlier drain read (the ring keeps the oldest) and before now.
	if n := s.sys.Lost(); n > s.sysLost {
		now := monotonic()
		s.items = append(s.items, item{time: now, rec: &perf.Lost{Header: perf.Header{Time: now}, Count: n - s.sysLost},
			since: since, cpu: recording.AnyCPU})
		s.sysLost = n
	}
}

// sysStack returns a stack the program kept, cached: the program never
// replaces a stack under an id.
func (s *session) sysStack(id int64, kernel bool) []uint64 {
	if id < 0 {
		return nil
	}
	if st, ok := s.sysStacks[id]; ok {
		return st
	}
	var st []uint64
	if kernel {
		st = s.sys.KernelStack(id)
	} else {
		st = s.sys.Stack(id)
	}
	st = append([]uint64(nil), st...)
	s.sysStacks[id] = st
	return st
}

// eventUser completes the user call chain of a system call program's
// event of thread tid of pid, from its user chain, registers and stack
// copy, as perf's sample would have it (kernel: its kernel chain);
// truncated says it lost callers.
func (s *session) eventUser(e *sysEvent, pid, tid uint32, kernel []uint64) (user []uint64, truncated bool) {
	ev := &e.ev
	if ev.UserStack == syscallprog.Memoized {
		if user, ok := s.memos.chain(ev.Memo); ok {
			return user, false
		}
		return []uint64{ev.IP}, true // its thread exited since
	}
	r := perf.Sample{Header: perf.Header{PID: pid, TID: tid, Time: ev.Time, CPU: ev.CPU},
		IP: ev.IP, UserMode: true, ABI: 2, Kernel: kernel, User: ev.UserChain,
		StackSP: ev.SP, Stack: e.stack, StackHoles: ev.StackHoles}
	if !ev.Tick {
		r.User = s.sysStack(ev.UserStack, false)
	}
	if r.User == nil {
		r.User = []uint64{ev.IP}
	}
	// The registers the program gives, the others 0: a scratch slice, as
	// nothing keeps a sample's registers past its unwind.
	if len(s.sysRegs) != perf.NumRegs {
		s.sysRegs = make([]uint64, perf.NumRegs)
	}
	regs := s.sysRegs
	clear(regs)
	regs[perf.RegIP], regs[perf.RegSP], regs[perf.RegBP] = ev.IP, ev.SP, ev.BP
	r.Regs, r.RegsSampled = regs, 1<<perf.RegIP|1<<perf.RegSP|1<<perf.RegBP
	var deps *unwind.Deps
	if s.memos != nil && !ev.Waking && len(r.Stack) > 0 {
		deps = &s.memos.deps
	}
	user, truncated, stop, need := s.unwindChain(&r, deps)
	if !ev.Waking {
		s.eventTop(tid, ev.SP, ev.SP+uint64(len(r.Stack)), stop, need, truncated)
	}
	if deps != nil && stop == unwind.Complete && !truncated && ev.UserStack >= 0 {
		s.learnMemo(tid, ev.IP, ev.SP, ev.BP, r.Stack, user, deps)
	}
	return user, truncated || ev.UserStack < 0
}

// Event copies sized per thread: the system call program copies
// sysCopyBytes of stack at each entry and switch, which holds a system
// call wrapper's frame and its callers' where the program keeps frame
// pointers; where it keeps none (-O2 code, gzip) the frame-pointer chain
// leads nowhere and the event's callers are those the copy's CFI unwind
// reaches: a thread whose frames between its system calls and main are
// larger than the copy loses them at every event. Such a thread, once an
// event's unwind wanted more of the copy than it had (Need.Over), gets a
// top (syscallprog's SetTop): its events copy up to it, as its CPU
// samples do (stackTops). The top is the one its CPU samples learned
// when they learned one, else a reach (reachOf, rounded to a page) until
// an event's unwind of such a copy is complete and gives the real one.
// The events of threads whose copies suffice copy as before.

// eventTop learns thread tid's event top from the unwind of one of its
// events (sp its stack pointer, end the end of its copy; stop and need,
// as unwind.UnwindReach says; truncated: it lost callers, which only a
// larger copy finds where the frame-pointer chain did not go on from
// the copy's end). An event whose copy ended below the top
// set was copied before it was set, or ended at the stack's end: it says
// nothing about the top.
func (s *session) eventTop(tid uint32, sp, end uint64, stop unwind.Stop, need unwind.Need, truncated bool) {
	if s.sysTops == nil {
		return
	}
	cur, has := s.sysTops[tid]
	var t threadTop
	switch {
	case stop == unwind.Complete:
		if !has || !cur.reach || need.Top == 0 {
			return
		}
		t = threadTop{top: need.Top, outermost: need.Outermost}
		if t.outermost {
			t.top = (need.Top + topMargin + 63) &^ 63
		}
	case truncated && need.Over && sp != 0 && (!has || end >= cur.top):
		t = threadTop{top: (reachOf(sp) + 4095) &^ 4095, reach: true}
		if s.stacks != nil {
			if c, ok := s.stacks.tops[tid]; ok && !c.reach && c.top > end {
				t = c
			}
		}
		if t.top <= end || has && t.top <= cur.top {
			return
		}
	default:
		return
	}
	if s.sys.SetTop(tid, t.top) == nil {
		s.sysTops[tid] = t
	}
}

// syscall writes the sample of a system call entry or exit.
func (s *session) syscall(e *sysEvent, k *eventKind) {
	ev := &e.ev
	if ev.Tick {
		s.tick(e, k)
		return
	}
	if ev.SwitchIn {
		s.switchIn(recording.Sample{Time: ev.Time, PID: ev.PID, TID: ev.TID, CPU: ev.CPU, Event: recording.EventSwitchIn,
			ExecRuntime: ev.ExecRuntime, HasExecRuntime: ev.HasExecRuntime})
		return
	}
	if ev.Waking {
		// A wake-up of a traced thread by no traced thread, a sample of
		// no thread (PID and TID 0), or a new thread's first, by the
		// thread that made it; the woken thread as perf's wake-ups have
		// it. With WakerStacks, also one by a traced thread, with its
		// user chain as perf's sample would have it, or made by an
		// interrupt on it.
		s.res.Samples++
		smp := recording.Sample{Time: ev.Time, PID: uint32(ev.Nr >> 32), TID: uint32(ev.Nr), CPU: ev.CPU, Period: 1,
			Event: recording.EventWakeup, Arg: uint64(ev.TID)}
		var user []uint64
		switch {
		case ev.UserStack == syscallprog.FromInterrupt:
			smp.Arg |= recording.WakeupInterrupt
		case ev.Nr != 0 && ev.IP != 0:
			user, smp.Truncated = s.eventUser(e, smp.PID, smp.TID, nil)
			if smp.Truncated {
				s.res.Truncated++
				s.res.EventTruncated++
			}
		}
		if err := s.w.WriteSample(smp, nil, user); err != nil {
			s.warn("writing the recording: %v", err)
		}
		if s.onSched != nil {
			s.onSched(smp, user)
		}
		return
	}
	if ev.Exit {
		c := s.pending[ev.TID]
		if c == nil || c.exited || c.nr != ev.Nr {
			return // entered before the recording started
		}
		c.exited = true
		x := *c
		if ks := s.sysStack(ev.KernStack, true); ks != nil {
			x.kernel = ks // the exit's own hook
		}
		s.writeSyscall(ev, k, &x)
		return
	}
	weight := uint64(0) // a switch's (switchWeight)
	if ev.Switch {
		weight = s.switchWeight(ev.Time)
	}
	if ev.Switch && ev.UserStack == syscallprog.NoStack {
		// Inside a call left out (SyscallLimit), its thread over budget,
		// or recorded without user chains (BlockingChainsOnly): when and
		// how it left the CPU, with the blocking path when walked.
		s.writeSyscall(ev, k, &pendingCall{nr: syscallprog.SwitchState(ev.Nr), kernel: s.sysStack(ev.KernStack, true), weight: weight})
		return
	}
	if ev.Switch && ev.UserStack == syscallprog.InCall {
		// Inside a system call (or on its way back to user space): the
		// user chain is its entry's, at the same registers.
		c := &pendingCall{nr: syscallprog.SwitchState(ev.Nr), kernel: s.sysStack(ev.KernStack, true), weight: weight}
		if p := s.pending[ev.TID]; p != nil && p.nr == ev.CallNr && p.ip == ev.IP && p.sp == ev.SP {
			c.user, c.truncated, c.reduced = p.user, p.truncated, p.reduced
			if p.gone {
				delete(s.pending, ev.TID)
			}
		} else {
			// Its entry came before the recording started or was lost.
			c.user, c.truncated = []uint64{ev.IP}, true
		}
		s.writeSyscall(ev, k, c)
		return
	}
	kernel := s.sysStack(ev.KernStack, true)
	user, truncated := s.eventUser(e, ev.PID, ev.TID, kernel)
	c := &pendingCall{nr: ev.Nr, kernel: kernel, user: user, truncated: truncated, ip: ev.IP, sp: ev.SP, reduced: ev.Reduced}
	if ev.Switch {
		c.nr, c.weight = syscallprog.SwitchState(ev.Nr), weight
		s.writeSyscall(ev, k, c)
		return
	}
	c.weight = s.sysWeight(1+ev.Skipped, s.sys.Scale(ev.Window))
	s.pending[ev.TID] = c
	s.res.Syscalls += c.weight
	s.res.SyscallsRecorded++
	s.writeSyscall(ev, k, c)
}

// writeWindows writes the system call windows of ws, those not written
// yet (Tracer.WindowsFrom(s.sysWindowsOut)), that have closed, and with
// last the one still open, ending now: the analyses that compare two runs
// need to know when each run recorded its calls, and at what scale.
func (s *session) writeWindows(ws []syscallprog.Window, last bool) {
	for _, w := range ws {
		if w.End == 0 {
			if !last {
				return
			}
			w.End = max(monotonic(), w.Start)
		}
		r := recording.SyscallWindow{Start: w.Start, End: w.End}
		if w.Scale > 1 {
			r.On, r.Period = uint64(s.o.SyscallWindowOn), uint64(s.o.SyscallWindowPeriod)
		}
		s.write(&r)
		s.sysWindowsOut++
	}
}

// sysWeight returns what n calls recorded stand for: n, or n scaled by
// their window's scale (PERIOD/ON in windows, Options.SyscallWindowOn),
// the fractions carried from one call to the next.
func (s *session) sysWeight(n uint64, scale float64) uint64 {
	return weigh(n, scale, &s.sysFrac)
}

// weigh returns n scaled by scale, the fraction left carried in *frac to
// the next, so that the weights add up to the scaled count.
func weigh(n uint64, scale float64, frac *float64) uint64 {
	if scale == 1 || n == 0 {
		return n
	}
	w := float64(n)*scale + *frac
	whole := math.Floor(w)
	*frac = w - whole
	return uint64(whole)
}

// switchWeight returns what a context switch recorded at t stands for: 1,
// or with switches recorded in the windows only (syscallprog's
// Tracer.SwitchesWindowed) its window's scale, the fractions carried from
// one switch to the next.
func (s *session) switchWeight(t uint64) uint64 {
	if s.sys == nil || !s.sys.SwitchesWindowed() {
		return 1
	}
	return weigh(1, s.sys.ScaleAt(t), &s.switchFrac)
}

// The windows of `--syscall-windows auto`: every call recorded (within
// the limit) while the traced threads make at most AutoWindowAbove calls
// a second, windows of AutoWindowOn every AutoWindowPeriod above.
// Hooked, a traced thread's call costs it about 0.44 µs
// (docs/performance.md): 20,000 calls a second cost under 1% of a CPU.
//
// Each window costs a fixed price whatever the program: attaching and
// detaching the two programs rewrites the tracepoints' static calls and
// keys (text_poke, an interrupt to every CPU per rewrite) and flags every
// thread of the machine for the system call slow path and back, about
// 4 ms of the recorder's CPU a window on a 2-CPU VM, and each window
// starts with every traced thread's burst (Options.SyscallBurst) recorded
// whole. The same share of time in half as many windows of twice the
// length pays that price half as often; what it gives up is resolution:
// a phase of the program shorter than a period can fall between two
// windows, and the rate is read over the period before.
//
// The rate is read over the last AutoRateSpan (every ON), not over a
// period: after a lull attaches the programs for good, they stay so, every
// call recorded, for at least that long before a load can window them
// again, and a load's start is found that much later; a tenth of a second
// averages a server's bursts.
const (
	AutoWindowOn     = 20 * time.Millisecond
	AutoWindowPeriod = 200 * time.Millisecond
	AutoWindowAbove  = 20000
	AutoRateSpan     = 100 * time.Millisecond
)

// CheckSyscallWindows says what is wrong with windows of on every period
// (Options.SyscallWindowOn): none (both 0), or on above 0 and below
// period.
func CheckSyscallWindows(on, period time.Duration) error {
	if on == 0 && period == 0 {
		return nil
	}
	if on <= 0 || period <= 0 || on >= period {
		return fmt.Errorf("system call windows %v of every %v: ON is above 0 and below PERIOD, e.g. 10ms/100ms", on, period)
	}
	if on < time.Millisecond {
		return fmt.Errorf("system call windows of %v: at least 1ms (attaching the programs takes time of its own)", on)
	}
	return nil
}

func (s *session) writeSyscall(ev *syscallprog.Event, k *eventKind, c *pendingCall) {
	if c.truncated && !c.reduced {
		s.res.Truncated++
		s.res.EventTruncated++
	}
	s.kernelSymbols(c.kernel)
	s.res.Samples++
	smp := recording.Sample{Time: ev.Time, PID: ev.PID, TID: ev.TID, CPU: ev.CPU, Period: max(c.weight, 1),
		Truncated: c.truncated, Event: k.event, Arg: c.nr}
	if ev.Switch {
		smp.RunDelay, smp.HasRunDelay = ev.RunDelay, ev.HasRunDelay
		smp.ExecRuntime, smp.HasExecRuntime = ev.ExecRuntime, ev.HasExecRuntime
	}
	if err := s.w.WriteSample(smp, c.kernel, c.user); err != nil {
		s.warn("writing the recording: %v", err)
	}
	if s.onSched != nil && k.event == recording.EventSwitch {
		s.onSched(smp, c.user)
	}
}

// tick writes the CPU sample of a scheduler tick that found a traced
// thread running (Options.TickClock): its kernel chain without the timer
// interrupt's frames (empty when the tick came in user mode), its user
// chain completed as an event's, and the tick's period as its CPU time.
func (s *session) tick(e *sysEvent, k *eventKind) {
	ev := &e.ev
	kernel := s.sys.TrimInterrupt(ev.KernelChain)
	if s.o.UserOnly {
		kernel = nil
	}
	user, truncated := s.eventUser(e, ev.PID, ev.TID, kernel)
	if truncated && !ev.Reduced {
		s.res.Truncated++
		s.res.EventTruncated++
	}
	s.kernelSymbols(kernel)
	s.res.Samples++
	smp := recording.Sample{Time: ev.Time, PID: ev.PID, TID: ev.TID, CPU: ev.CPU, Period: s.o.tickNs,
		Truncated: truncated, Event: k.event}
	if err := s.w.WriteSample(smp, kernel, user); err != nil {
		s.warn("writing the recording: %v", err)
	}
}

// tickDefaults checks what -F tick can go with and sets the frequency to
// the tick's.
func (o *Options) tickDefaults() error {
	if err := o.CheckTickClock(); err != nil {
		return err
	}
	ns, err := syscallprog.TickPeriod()
	if err != nil {
		return err
	}
	o.tickNs = ns
	o.Frequency = int((1e9 + ns/2) / ns)
	return nil
}

// CheckTickClock says why TickClock cannot go with the other options,
// nil when it can.
func (o *Options) CheckTickClock() error {
	what := ""
	switch {
	case o.CallGraph == CallGraphDWARF:
		what = "--call-graph dwarf (culprit's BPF program walks the frame pointers and copies the stack top for the first frames, fp mode)"
	case o.Jitter > 0:
		what = "--jitter (the tick's period is the kernel's)"
	case o.ThreadClock:
		what = "--per-thread-clock"
	case o.State != nil:
		what = "--expr, --values or --rules (their sampling program runs on cpu-clock events)"
	case o.PerfEvents:
		what = "--perf-events"
	case o.EventPeriod > 1:
		what = "--event-period"
	}
	if what != "" {
		return fmt.Errorf("-F tick samples at the scheduler's tick with culprit's BPF program: not with %s; give a frequency instead", what)
	}
	return nil
}

// TickRate is the scheduler's ticks a second (HZ), 0 when unknown.
func TickRate() int {
	ns, err := syscallprog.TickPeriod()
	if err != nil {
		return 0
	}
	return int((1e9 + ns/2) / ns)
}
