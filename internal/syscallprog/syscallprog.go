// Package syscallprog records a process's system calls and context
// switches with BPF programs on the raw_syscalls and sched_switch
// tracepoints, for `record --events syscalls,sched`.
//
// perf's tracepoint events cost each system call two samples, each with its
// own walk of the user (and kernel) call chain, a stack copy and perf's
// output path, for every thread of the traced process (docs/performance.md:
// about 3 µs per event). The programs here run for every thread of the
// machine but stop at once for threads of processes they do not trace:
// each thread keeps, in task storage, whether its process is traced, with
// the follow set's generation it found that under (follow.Set.GenFD), so
// that a hook costs a task storage lookup and an array read, not a hash
// lookup on the thread group, until the set changes. Kernels without task
// storage (before 5.11; HaveTaskStorage) keep the same state in an LRU hash
// keyed by thread id, for threads of traced processes only: a hash lookup
// per hook for those, two for the others. For traced threads the
// system call program walks the user call chain once per call, at the entry
// (itself, along the frame pointers: userStackID), and keeps
// it as an id, a hash of its addresses, in a hash map (a chain seen before
// is not stored again; stackID says why not a stack map), with the registers and the top of the stack that the
// fp-mode CFI repair of the first frames reads; the kernel chain there is
// the same for every call that enters the kernel the same way, so it is
// walked once per entry path (64-bit or 32-bit) and its id reused; the exit
// writes a record of a few words that the recorder pairs with its thread's
// entry (a thread's user stack does not change during a system call). The
// switch program records the leaving thread's two chains (the kernel one
// is the blocking path, walked for a preemption; inside a recorded system
// call a thread that blocks again in the same call from the same user
// chain, in the same state and as deep below the call's entry reuses the
// chain it walked the last time, and outside one a thread that blocks or
// yields again in the same call from the same user IP and SP in the same
// state does: switchKernelStack), its user registers and stack copy (inside a
// system call it has the call's user chain instead, not walked again). An
// entry or switch at the user IP and SP of a memo of its thread whose
// stack words hold has the memo's chain instead of a copy and a walk
// (bpfasm.Memos). Records go to one BPF ring buffer shared by the CPUs,
// drained by the recorder; once the ring is more than half full, entries
// and switches are written without their stack copy (counted: Reduced), so
// that a recorder falling behind loses a few repaired frames before it
// loses records.
//
// With Options.Limit, each thread records at most Limit system calls a
// second beyond a burst (a generic cell rate algorithm over the thread's
// task storage, at the entry): a call is recorded or left out whole, and the calls
// left out are counted into the thread's next recorded entry. A switch
// inside a call left out goes without chains: the recorded call that
// counts it stands for it, and its time and state are kept; a preemption
// there walks its chains within the same budget.
//
// Processes the traced ones fork are traced too: the traced processes are
// a follow.Set, shared with the recording's other programs.
//
// cilium/ebpf loads the programs and reads the maps; the programs are
// written with its asm package (package bpfasm), so that culprit needs no
// clang.
package syscallprog

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/bpfasm"
	"github.com/culprit-dev/culprit/internal/follow"
	"github.com/culprit-dev/culprit/internal/userfile"
)

// Record kinds.
const (
	kindEnter    = 1
	kindExit     = 2
	kindSwitch   = 3
	kindWaking   = 4
	kindSwitchIn = 5
	kindTick     = 6 // a scheduler tick that found a traced thread running (tick.go)
)

// Layout of the records the program writes (little-endian).
const (
	offKind    = 0  // u32
	offCPU     = 4  // u32
	offPidTgid = 8  // u64: tgid << 32 | tid
	offTime    = 16 // u64: CLOCK_MONOTONIC ns
	offNr      = 24 // u64: the system call number
	offUStack  = 32 // s64: user stack id, or a negative error
	offKStack  = 40 // s64: kernel stack id, -1 when not asked
	offIP      = 48 // u64: user registers at the entry
	offSP      = 56
	offBP      = 64
	offCopied  = 72 // u32: bytes of stack copied from SP
	// offHoles (u32) marks the pages of the copy a page-by-page copy
	// could not read (pageCopy): bit i the i-th 4 KiB page from the one
	// holding SP. Their bytes are zero.
	offHoles   = 76
	offCallNr  = 80 // u64: a switch's system call (orig_ax), when UserStack is InCall; an entry's window generation
	offSkipped = 88 // u64: an entry's thread's calls not recorded since its previous recorded one
	// offRunDelay is offSkipped in a switch record: the thread's
	// sched_info.run_delay (Event.RunDelay).
	offRunDelay = offSkipped
	hdrSize     = 96 // an entry's header: its stack copy follows
	// offExecRuntime is, in a switch record only, the leaving thread's
	// se.sum_exec_runtime (Event.ExecRuntime): the 8 bytes after the
	// entry's header, its stack copy after them (switchHdrSize), so the
	// records of the calls, which do not have it, stay hdrSize long. A
	// switch in's (exitSize long) is at offNr.
	offExecRuntime = hdrSize
	switchHdrSize  = hdrSize + 8
	exitSize       = 48
)

// x86-64 struct pt_regs offsets (the user registers at the system call).
const (
	regCS     = 136
	regBP     = 32
	regOrigAX = 120
	regIP     = 128
	regSP     = 152
)

// userCS64 is x86-64's __USER_CS: the code segment of 64-bit user code.
const userCS64 = 0x33

// MaxStack is the deepest call chain kept (perf's default, 127).
const MaxStack = 127

// InCall is a switch's UserStack when the thread left the CPU inside
// system call CallNr (with Options.Syscalls): its user call chain is that
// call's entry's, which the program did not walk again.
const InCall = -1 << 20

// maxSyscallNr bounds the system call numbers a switch is taken to be
// inside of (x86-64's are below 512).
const maxSyscallNr = 1023

// NoStack is a switch's UserStack when it was recorded without call chains
// nor stack copy: inside a system call that Options.Limit or the windows
// left out. Its time, state and registers are kept.
const NoStack = -2 << 20

// Options say what the program records.
type Options struct {
	// KernelStacks records the kernel call chain at each entry as well.
	KernelStacks bool
	// StackBytes of user stack copied from SP at each entry (0: none),
	// rounded up to 8 bytes.
	StackBytes int
	// RingBytes is the output ring's size, a power of two (0: 16 MiB).
	RingBytes int
	// StackTops lets SetTop give a thread larger stack copies than
	// StackBytes: from its stack pointer up to the top set, at most
	// MaxCopy bytes (copyClasses).
	StackTops bool
	// Memos, with StackTops, has an entry or a switch walked at the user
	// IP and SP of a memo of its thread whose words its stack holds
	// written without copy or walk (UserStack Memoized).
	Memos *bpfasm.Memos
	// Switches records each time a traced thread leaves a CPU
	// (sched_switch), with its user and kernel call chains, the registers
	// and the stack copy, prev_state as Nr, the thread's run delay
	// (Event.RunDelay) and its time on a CPU (Event.ExecRuntime); with
	// Syscalls, a switch
	// inside a system call (entered by the syscall instruction) has no user
	// chain or copy of its own but UserStack InCall and the call's number.
	Switches bool
	// BlockingChainsOnly, with Switches and without Syscalls, records a
	// switch without user chain, registers or stack copy (UserStack
	// NoStack), and with its kernel chain only when the thread blocked
	// (blockingSwitchProgram).
	BlockingChainsOnly bool
	// SwitchIns, with Switches, records each time a traced thread is
	// switched onto a CPU too (Event.SwitchIn), stamped where the switch
	// program runs: after the kernel's pick of the thread, before the
	// context switch, with its time on a CPU before the run
	// (Event.ExecRuntime; switchInRecord).
	SwitchIns bool
	// Syscalls records system call entries and exits.
	Syscalls bool
	// Wakeups records each wake-up of a traced thread made outside the
	// traced processes (sched_waking while another program, a kernel
	// thread, the idle task or an interrupt on one of them runs), and
	// each new thread's first (sched_wakeup_new, by the thread that
	// created it): the woken thread, the waker when traced (Nr, its
	// pid_tgid; 0 when not) and when (Event.Waking). The others a traced
	// thread makes are perf's to record, with the waker's stack.
	Wakeups bool
	// WakerStacks, with Wakeups, records the wake-ups of traced threads
	// that traced threads make too (perf's events then need record none),
	// with the waker's user chain, registers and stack copy, or
	// UserStack FromInterrupt when an interrupt on a traced thread made
	// it; wake-ups of threads not traced are not recorded
	// (wakerStacksProgram).
	WakerStacks bool
	// Follow is the set of processes traced (nil: New makes one of its
	// own); Add and Remove change it.
	Follow *follow.Set
	// Limit, when above 0, is the most system calls per second a thread
	// has recorded, beyond a burst of LimitBurst calls: a call whose entry
	// comes sooner than its share (1/Limit s after the thread's previous
	// recorded call, less the burst's credit) is counted, not recorded, and
	// neither is its exit; the next recorded entry carries the count
	// (Event.Skipped). A switch inside a call not recorded is recorded
	// without chains (UserStack NoStack; SwitchesBare counts them), but
	// for a preemption within the same budget. 0 records every call.
	Limit int
	// LimitBurst is the calls a thread may make at once beyond Limit's
	// rate (0: 1).
	LimitBurst int
	// WindowOn and WindowPeriod, when both above 0 (WindowOn below
	// WindowPeriod), attach the system call programs (with Syscalls) for
	// WindowOn of every WindowPeriod only, the cycle starting at the first
	// Add (the first window lasts from New to WindowOn after it): outside
	// the windows no program runs at a system call, which then costs
	// nothing. The switch program
	// stays attached. Each window has a generation of its own, kept in
	// the thread's state at its entries: a call entered before the window
	// closed whose exit comes later is not recorded at its exit (its
	// entry stays without one). Between windows no context switch is
	// recorded either, unless SwitchIns are: SwitchesBetween counts them,
	// and each recorded in a window stands for PERIOD/ON as its calls do
	// (SwitchesWindowed; betweenWindows says why). Windows are the
	// Tracer's Windows.
	WindowOn, WindowPeriod time.Duration
	// WindowAbove, when above 0 with WindowOn, keeps the system call
	// programs attached while the traced threads make at most WindowAbove
	// calls a second (measured over WindowRateSpan), every call
	// recorded as without windows; above, the windows cycle, until a
	// window's calls come at less than half that rate. Scale says what
	// the calls of each window stand for.
	WindowAbove int
	// Ticks records a CPU sample of a traced thread at each tick of the
	// scheduler that finds it running (tick.go), with its kernel and
	// user call chains, registers and stack copy: HZ samples a second of
	// the thread's CPU time, with no timer interrupt of their own.
	Ticks bool
	// WindowRateSpan is the time WindowAbove's rate is measured over,
	// sliding, read every WindowOn (0: WindowPeriod). The programs stay
	// attached for at least that long after they are attached for good,
	// every call recorded: a span shorter than a long period finds a load
	// that resumes after a lull sooner.
	WindowRateSpan time.Duration

	stackEntries int // the call chains kept (stackEntries when 0); tests make it small
	// threadHash keeps the per-thread state in the hash map keyed by
	// thread id, as on kernels without task storage; tests force it.
	threadHash bool
	// helperWalk has the entry program walk the user chain with the
	// kernel's helper, as before userStackID; tests compare the two.
	helperWalk bool
}

// Event is one record of the program: a system call's entry (with its
// stacks) or exit.
type Event struct {
	Exit     bool
	Switch   bool // a switch away: Nr is preempt << 32 | prev_state | exit_state
	Waking   bool // a wake-up of thread PID/TID (Options.Wakeups): Nr is the waker's pid_tgid, 0 when not traced
	SwitchIn bool // thread PID/TID is switched onto CPU (Options.SwitchIns)
	// Tick: the scheduler's tick found thread PID/TID running
	// (Options.Ticks): a CPU sample, its chains in KernelChain and
	// UserChain (UserStack 0: walked; Memoized; or negative: none).
	Tick       bool
	CPU        uint32
	PID, TID   uint32
	Time       uint64
	Nr         uint64
	UserStack  int64 // stack id, InCall, or negative when the stack could not be kept
	KernStack  int64 // stack id, negative when none
	IP, SP, BP uint64
	CallNr     uint64 // with UserStack InCall: the system call the switch is inside
	// Window is, at an entry, the generation of the window it was
	// recorded in (Options.WindowOn; 0 without): Tracer.Scale says what
	// its calls stand for.
	Window uint64
	// Skipped is, at an entry, the calls of its thread not recorded
	// (Options.Limit) since the thread's previous recorded entry.
	Skipped uint64
	// RunDelay is, at a switch away, the thread's time waiting on a run
	// queue since it was created, ns (task_struct.sched_info.run_delay,
	// the kernel's schedstat; HasRunDelay when the kernel keeps it): it
	// grows when the thread is switched in, by the time since it was
	// queued, so the growth between two switches away is the wait for a
	// CPU before the run between them, woken or preempted.
	RunDelay    uint64
	HasRunDelay bool
	// ExecRuntime is, at a switch away and at a switch in, the thread's
	// time on a CPU since it was created, ns, as the kernel counts it
	// (task_struct.se.sum_exec_runtime, schedstat's first field;
	// HasExecRuntime when the kernel's BTF has it). At a switch away the
	// scheduler has just brought it up to date, to the run queue's clock
	// read where the switch began; at a switch in it is the thread's
	// total before the run: the difference between the two is the run's
	// length by the kernel's own account, which stamps taken where the
	// program runs (after the pick of the next thread) are not.
	ExecRuntime    uint64
	HasExecRuntime bool
	// Reduced: an entry or switch recorded without its stack copy, the
	// ring being more than half full.
	Reduced bool
	Stack   []byte // the copy from SP (valid until the next Drain)
	// StackHoles are the pages of Stack that could not be read (not in
	// memory): bit i the i-th 4 KiB page from the one holding SP. Their
	// bytes are zero.
	StackHoles uint8
	// Memo is the id of the memo (Options.Memos) whose chain is the
	// record's with UserStack Memoized.
	Memo uint32
	// KernelChain and UserChain are a tick's call chains, innermost
	// first, carried in its record (tick.go): the kernel one from the
	// tracepoint, timer interrupt included (Tracer.TrimInterrupt), the
	// user one from the thread's user registers.
	KernelChain, UserChain []uint64
}

// Tracer is the loaded and attached program with its maps.
type Tracer struct {
	follow                              *follow.Set
	ownFollow                           bool // made by New, closed by Close
	stacks, scratch, ring, lost, kcache *ebpf.Map
	tops, topsOn                        *ebpf.Map // Options.StackTops: the threads' tops, and whether any is set
	pages                               *ebpf.Map // Options.StackTops: the programs' buffers for copies made page by page
	topsSet                             bool
	wgen                                *ebpf.Map // the window's generation (Options.WindowOn)
	thr                                 *ebpf.Map // per thread, whether traced and Options.Limit's state
	threadHash                          bool      // thr is an LRU hash keyed by thread id, not task storage
	skipped                             uint64    // Σ Event.Skipped of the entries drained
	skippedWin                          uint64    // of those, in windows whose calls stand for PERIOD/ON
	progs                               []*ebpf.Program
	links                               []link.Link
	rd                                  *ringbuf.Reader
	rec                                 ringbuf.Record
	stackBuf                            []uint64
	tracing                             *TracingCode
	copyBytes                           int
	runDelay                            bool     // switch records carry the thread's run_delay
	execRuntime                         bool     // switch and switch-in records carry the thread's sum_exec_runtime
	win                                 *windows // nil: the system call programs stay attached
	switchesWindowed                    bool     // SwitchesWindowed
}

// New loads the programs and attaches them to the tracepoints. No process
// is traced until Add.
func New(o Options) (*Tracer, error) {
	_ = unix.Setrlimit(unix.RLIMIT_MEMLOCK, &unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY})
	offs, err := bpfasm.TaskOffsets("to record switches", "exit_state", "tgid", "pid", "stack", "mm", "flags")
	if err != nil {
		return nil, err
	}
	so := schedOffs{runDelay: runDelayOffset(), execRuntime: execRuntimeOffset()}
	copyBytes := (o.StackBytes + 7) &^ 7
	if copyBytes > 4096 {
		copyBytes = 4096
	}
	ringBytes := o.RingBytes
	if ringBytes == 0 {
		ringBytes = 16 << 20
	}
	t := &Tracer{tracing: NewTracingCode(), copyBytes: copyBytes, runDelay: so.runDelay >= 0, execRuntime: so.execRuntime >= 0}
	fail := func(err error) (*Tracer, error) {
		t.Close()
		return nil, explain(err)
	}
	t.follow = o.Follow
	if t.follow == nil {
		if t.follow, err = follow.New(); err != nil {
			t.Close()
			return nil, err
		}
		t.ownFollow = true
	}
	entries := uint32(stackEntries)
	if o.stackEntries > 0 {
		entries = uint32(o.stackEntries)
	}
	// The call chains, keyed by a hash of their addresses (stackID): a
	// hash map's element is never replaced nor emptied while it is read,
	// unlike a stack map's bucket.
	if t.stacks, err = ebpf.NewMap(&ebpf.MapSpec{Name: "culprit_scstack", Type: ebpf.Hash, KeySize: 8, ValueSize: MaxStack * 8, MaxEntries: entries}); err != nil {
		return fail(err)
	}
	if t.scratch, err = ebpf.NewMap(&ebpf.MapSpec{Name: "culprit_scwalk", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: MaxStack * 8, MaxEntries: walkers}); err != nil {
		return fail(err)
	}
	if t.ring, err = ebpf.NewMap(&ebpf.MapSpec{Name: "culprit_scring", Type: ebpf.RingBuf, MaxEntries: uint32(ringBytes)}); err != nil {
		return fail(err)
	}
	if t.lost, err = ebpf.NewMap(&ebpf.MapSpec{Name: "culprit_sclost", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 8}); err != nil {
		return fail(err)
	}
	if t.kcache, err = ebpf.NewMap(&ebpf.MapSpec{Name: "culprit_sckst", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 4}); err != nil {
		return fail(err)
	}
	t.threadHash = o.threadHash || !HaveTaskStorage()
	if t.threadHash {
		// Before task storage (Linux 5.11): an LRU hash keyed by thread
		// id, whose values name the thread (pid_tgid) so that a thread
		// that takes a dead one's id does not take its state; threads
		// that exited make room for new ones.
		t.thr, err = ebpf.NewMap(&ebpf.MapSpec{Name: "culprit_scthr", Type: ebpf.LRUHash, KeySize: 4, ValueSize: stateSize, MaxEntries: 1 << 16})
	} else {
		// Task storage needs BTF for its key and value; the kernel frees
		// a thread's value with the thread.
		t.thr, err = ebpf.NewMap(&ebpf.MapSpec{Name: "culprit_scthr", Type: ebpf.TaskStorage, KeySize: 4, ValueSize: stateSize,
			Flags: unix.BPF_F_NO_PREALLOC, Key: &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed},
			Value: &btf.Array{Type: &btf.Int{Name: "u64", Size: 8}, Index: &btf.Int{Name: "u32", Size: 4}, Nelems: stateSize / 8}})
	}
	if err != nil {
		return fail(err)
	}
	m := fds{tgids: t.follow.FD(), gen: t.follow.GenFD(), thr: t.thr.FD(), threadHash: t.threadHash, stacks: t.stacks.FD(), scratch: t.scratch.FD(), ring: t.ring.FD(), ringBytes: ringBytes, lost: t.lost.FD(), kcache: t.kcache.FD()}
	if o.StackTops && copyBytes > 0 {
		if t.tops, err = ebpf.NewMap(&ebpf.MapSpec{Name: "culprit_sctop", Type: ebpf.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 1 << 14}); err != nil {
			return fail(err)
		}
		if t.topsOn, err = ebpf.NewMap(&ebpf.MapSpec{Name: "culprit_sctopon", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1}); err != nil {
			return fail(err)
		}
		// A buffer per program (as the walkers'), a page longer than
		// the largest copy: pageCopy.
		if t.pages, err = ebpf.NewMap(&ebpf.MapSpec{Name: "culprit_scpage", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: MaxCopy + 4096, MaxEntries: walkers}); err != nil {
			return fail(err)
		}
		m.tops, m.topsOn, m.pages = t.tops.FD(), t.topsOn.FD(), t.pages.FD()
		if o.Memos != nil {
			m.memos = o.Memos.FD()
		}
	}
	windowed := o.Syscalls && o.WindowOn > 0 && o.WindowPeriod > o.WindowOn
	if windowed {
		if t.wgen, err = ebpf.NewMap(&ebpf.MapSpec{Name: "culprit_scwin", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 2}); err != nil {
			return fail(err)
		}
		m.win = t.wgen.FD()
		m.dropBetween = o.Switches && !o.SwitchIns
		t.switchesWindowed = m.dropBetween
		if err := t.wgen.Update(winOpenKey, uint64(1), 0); err != nil {
			return fail(err)
		}
		if o.WindowAbove == 0 {
			// Every window's calls stand for PERIOD/ON, the first's too.
			if err := t.wgen.Update(uint32(0), uint64(1)<<windowedBit, 0); err != nil {
				return fail(err)
			}
		}
		if o.Limit == 0 {
			// The windows need the thread's state to say whether its
			// last call was recorded, which the limit keeps: a limit
			// no thread reaches.
			o.Limit, o.LimitBurst = 1e9, 1<<20
		}
	}
	if !o.helperWalk && offs[4] <= math.MaxInt16 {
		m.userDepth, m.mmOff = userDepth(), int16(offs[4])
	}
	if o.Limit > 0 && o.Syscalls {
		m.limited = true
		m.every = int32(min(1e9/int64(o.Limit), 1e9))
		m.burst = int32(min(int64(max(o.LimitBurst, 1))*int64(m.every), 1<<30))
	}
	// The switch programs are tp_btf ones (BPF_TRACE_RAW_TP): the same
	// hook and context as a raw tracepoint's, but with prev and next
	// typed, so that their fields are loads and next's task storage can
	// be asked (switchInRecord).
	type prog struct {
		tp  string
		ins asm.Instructions
		btf bool
	}
	var progs []prog
	if o.Syscalls {
		progs = append(progs, prog{"sys_enter", enterProgram(m, o.KernelStacks, copyBytes, ringBytes), false},
			prog{"sys_exit", exitProgram(m, o.KernelStacks), false})
	}
	var in *switchIns
	if o.SwitchIns {
		in = &switchIns{tgidOff: offs[1], pidOff: offs[2], execOff: so.execRuntime}
	}
	if o.Switches && o.BlockingChainsOnly && !o.Syscalls {
		progs = append(progs, prog{"sched_switch", blockingSwitchProgram(m, offs[0], so, in), true})
	} else if o.Switches {
		progs = append(progs, prog{"sched_switch", switchProgram(m, copyBytes, ringBytes, offs[0], so, o.Syscalls, in), true})
	}
	if o.Wakeups && o.WakerStacks {
		progs = append(progs, prog{"sched_waking", wakerStacksProgram(m, offs[1], offs[2], offs[3], copyBytes, ringBytes), false})
	} else if o.Wakeups {
		progs = append(progs, prog{"sched_waking", wakingProgram(m, offs[1], offs[2], offs[5], false), false})
	}
	if o.Wakeups {
		progs = append(progs, prog{"sched_wakeup_new", wakingProgram(m, offs[1], offs[2], offs[5], true), false})
	}
	if o.Ticks {
		fn, err := t.tracing.TickFunction()
		if err != nil {
			t.Close()
			return nil, err
		}
		fnOff, err := bpfasm.StructOffsets("to sample at the scheduler's tick", "hrtimer", "function")
		if err != nil {
			t.Close()
			return nil, err
		}
		progs = append(progs, prog{"hrtimer_expire_entry", tickProgram(m, copyBytes, ringBytes, fnOff[0], fn), true})
	}
	attachStart := monotonicNow()
	for _, p := range progs {
		spec := &ebpf.ProgramSpec{Name: bpfasm.ProgName(), Type: ebpf.RawTracepoint, License: "GPL", Instructions: p.ins}
		if p.btf {
			spec.Type, spec.AttachType, spec.AttachTo = ebpf.Tracing, ebpf.AttachTraceRawTp, p.tp
		}
		prog, err := ebpf.NewProgramWithOptions(spec, ebpf.ProgramOptions{LogSizeStart: 1 << 16})
		if err != nil {
			return fail(err)
		}
		t.progs = append(t.progs, prog)
		var l link.Link
		if p.btf {
			l, err = link.AttachTracing(link.TracingOptions{Program: prog, AttachType: ebpf.AttachTraceRawTp})
		} else {
			l, err = link.AttachRawTracepoint(link.RawTracepointOptions{Name: p.tp, Program: prog})
		}
		if err != nil {
			return fail(err)
		}
		t.links = append(t.links, l)
	}
	if t.rd, err = ringbuf.NewReader(t.ring); err != nil {
		return fail(err)
	}
	t.rd.SetDeadline(time.Unix(1, 0))
	if windowed {
		t.win = &windows{on: o.WindowOn, period: o.WindowPeriod, above: float64(o.WindowAbove), span: o.WindowRateSpan, stop: make(chan struct{}), done: make(chan struct{})}
		if t.win.span <= 0 {
			t.win.span = o.WindowPeriod
		}
		// The first window opened with the programs' attachment above;
		// with a rate, it lasts while the calls stay below it.
		scale := float64(o.WindowPeriod) / float64(o.WindowOn)
		if o.WindowAbove > 0 {
			scale = 1
		}
		t.win.scales = []float64{scale}
		t.win.spans = append(t.win.spans, Window{Start: attachStart, opened: monotonicNow(), Scale: scale})
	}
	return t, nil
}

func explain(err error) error { return bpfasm.LoadError("system call", err) }

// userDepth is the most addresses of a user chain the kernel's helper
// keeps: MaxStack, or fewer when the sysctl kernel.perf_event_max_stack
// says so.
func userDepth() int {
	b, err := os.ReadFile("/proc/sys/kernel/perf_event_max_stack")
	if err != nil {
		return MaxStack
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n <= 0 {
		return MaxStack
	}
	return min(n, MaxStack)
}

// HaveTaskStorage reports whether the kernel has task storage maps that
// raw tracepoint programs may use (Linux 5.11): without, the per-thread
// state is kept in a hash map keyed by thread id, a lookup more per hook.
func HaveTaskStorage() bool {
	return features.HaveMapType(ebpf.TaskStorage) == nil &&
		features.HaveProgramHelper(ebpf.RawTracepoint, asm.FnTaskStorageGet) == nil
}

// Add traces a thread group (a process) and the processes it forks.
func (t *Tracer) Add(tgid uint32) error {
	if err := t.follow.Add(tgid); err != nil {
		return err
	}
	if t.win != nil && !t.win.started {
		// The windows' cycle starts with the first process traced: its
		// first ON is recorded, however short the run.
		t.win.started = true
		go t.cycle()
	}
	return nil
}

// Remove stops tracing a process (it exited).
func (t *Tracer) Remove(tgid uint32) { t.follow.Remove(tgid) }

// Drain calls fn for each record in the ring, oldest first. The Event and
// its Stack are reused.
func (t *Tracer) Drain(fn func(*Event)) error { return t.DrainInto(math.MaxUint64, nil, fn) }

// MaxRecord is the most bytes a record of the ring holds.
const MaxRecord = switchHdrSize + MaxCopy

// DrainInto is Drain up to the first record stamped after stop, which fn
// is given last: the records that follow it stay in the ring. A program
// that writes as fast as its reader reads never empties the ring, and a
// drain to its end would then go on, holding ever more records; one that
// ends at the records stamped after it began holds a bounded part of the
// ring. Each record is read into into(), an empty slice with room for
// MaxRecord bytes (nil: a buffer of the Tracer's, reused), where the
// Event's Stack then lies: a reader that keeps the stack copies past fn
// gives each record room of its own and spares a copy of each.
func (t *Tracer) DrainInto(stop uint64, into func() []byte, fn func(*Event)) error {
	var ev Event
	if into != nil {
		defer func() { t.rec.RawSample = nil }() // the reader's, not to be reused
	}
	for {
		if into != nil {
			t.rec.RawSample = into()
		}
		err := t.rd.ReadInto(&t.rec)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil
		}
		if err != nil {
			return err
		}
		b := t.rec.RawSample
		if len(b) < exitSize {
			continue
		}
		le := binary.LittleEndian
		pt := le.Uint64(b[offPidTgid:])
		kind := le.Uint32(b[offKind:])
		ev = Event{Exit: kind == kindExit, Switch: kind == kindSwitch, Waking: kind == kindWaking, SwitchIn: kind == kindSwitchIn, CPU: le.Uint32(b[offCPU:]),
			PID: uint32(pt >> 32), TID: uint32(pt), Time: le.Uint64(b[offTime:]), Nr: le.Uint64(b[offNr:])}
		ev.KernStack = int64(le.Uint64(b[offKStack:]))
		if kind == kindTick {
			t.tick(&ev, b)
			fn(&ev)
			if ev.Time > stop {
				return nil
			}
			continue
		}
		if ev.SwitchIn {
			ev.ExecRuntime, ev.HasExecRuntime, ev.Nr = ev.Nr, t.execRuntime, 0
		}
		hdr := hdrSize
		if ev.Switch {
			hdr = switchHdrSize
		}
		if !ev.Exit && len(b) >= hdr {
			if !ev.Switch {
				t.skipped += le.Uint64(b[offSkipped:])
			}
			ev.UserStack = int64(le.Uint64(b[offUStack:]))
			ev.IP, ev.SP, ev.BP = le.Uint64(b[offIP:]), le.Uint64(b[offSP:]), le.Uint64(b[offBP:])
			n := int(le.Uint32(b[offCopied:]))
			ev.Stack = b[hdr:min(hdr+n, len(b))]
			ev.StackHoles = uint8(le.Uint32(b[offHoles:]))
			if ev.UserStack == Memoized {
				ev.Memo, ev.StackHoles = le.Uint32(b[offHoles:]), 0
			}
			ev.CallNr = le.Uint64(b[offCallNr:])
			if !ev.Switch {
				ev.Window, ev.CallNr = ev.CallNr&^(1<<windowedBit), 0
				if ev.Window != le.Uint64(b[offCallNr:]) {
					t.skippedWin += le.Uint64(b[offSkipped:])
				}
			}
			if ev.Switch {
				ev.RunDelay, ev.HasRunDelay = le.Uint64(b[offRunDelay:]), t.runDelay
				ev.ExecRuntime, ev.HasExecRuntime = le.Uint64(b[offExecRuntime:]), t.execRuntime
			} else {
				ev.Skipped = le.Uint64(b[offSkipped:])
			}
			// Records that refer to their call, or have no chains, have no
			// room for a copy.
			ev.Reduced = t.copyBytes > 0 && len(b) < hdr+t.copyBytes && ev.UserStack != InCall && ev.UserStack != NoStack && ev.UserStack != FromInterrupt && ev.UserStack != Memoized
		}
		fn(&ev)
		if ev.Time > stop {
			return nil
		}
	}
}

// Stack returns the call chain kept under id, innermost first; nil when
// there is none. The slice is reused by the next call.
func (t *Tracer) Stack(id int64) []uint64 {
	if id < 0 {
		return nil
	}
	if t.stackBuf == nil {
		t.stackBuf = make([]uint64, MaxStack)
	}
	return t.readStack(id, t.stackBuf)
}

// readStack is Stack into buf (MaxStack long).
func (t *Tracer) readStack(id int64, buf []uint64) []uint64 {
	if err := t.stacks.Lookup(uint64(id), buf); err != nil {
		return nil
	}
	n := 0
	for n < len(buf) && buf[n] != 0 {
		n++
	}
	return buf[:n]
}

// KernelStack is Stack for a kernel call chain, without its innermost
// frames in the tracing code that ran the program (TracingCode.Trim): it
// starts where the tracepoint is, as perf's call chain at a tracepoint does.
func (t *Tracer) KernelStack(id int64) []uint64 {
	return t.tracing.Trim(t.Stack(id))
}

// TracingCode is where the kernel's tracing code lies, read in the
// background from /proc/kallsyms or its cache.
type TracingCode struct {
	c    tracingCode
	read chan struct{} // closed when c is read
}

// NewTracingCode starts reading where the kernel's tracing code lies and
// returns at once. /proc/kallsyms takes the kernel 0.1 s to format on a
// quiet machine (1 s at load 30): it is read while the command starts,
// needed only when the first kernel chain is, and cached until the next
// boot.
func NewTracingCode() *TracingCode {
	tc := &TracingCode{read: make(chan struct{})}
	go func() {
		defer close(tc.read)
		defer func() { recover() }() // no tracing code known: kernel chains keep their frames
		tc.c = readTracingCode()
	}()
	return tc
}

// Trim returns a kernel call chain (innermost first) without its innermost
// frames in the tracing code that ran at a tracepoint: a BPF program,
// bpf_trace_runN, __bpf_trace_<tracepoint>, and __traceiter_<tracepoint>,
// which runs the tracepoint's probes when more than one tool attached to
// it (perf's own chain at the tracepoint then starts there too; with one
// probe, the kernel calls it straight from the tracepoint's site).
func (tc *TracingCode) Trim(st []uint64) []uint64 {
	<-tc.read
	for len(st) > 0 && tc.c.has(st[0]) {
		st = st[1:]
	}
	return st
}

// tracingCode is where the kernel's BPF tracing code lies: outside the
// kernel's text (the programs, JIT-compiled), and the functions that run
// programs at tracepoints; with, for ticks (tick.go), the kernel's entry
// text (where an interrupt's frames end) and the tick's timer function.
type tracingCode struct {
	text   [2]uint64   // _stext, _etext
	entry  [2]uint64   // __entry_text_start, __entry_text_end
	tick   uint64      // the tick's hrtimer function (tickFunctions)
	ranges [][2]uint64 // bpf_trace_run*, __bpf_trace_*, __traceiter_*
}

// tickFunctions are the names the tick's hrtimer function has had, the
// one to take first: tick_sched_timer until Linux 6.9, where the
// low-resolution mode's handler was tick_nohz_handler (not an hrtimer's);
// tick_nohz_handler since, in both modes.
var tickFunctions = []string{"tick_sched_timer", "tick_nohz_handler"}

func (c *tracingCode) has(pc uint64) bool {
	if c.text[1] == 0 {
		return false // addresses hidden (kptr_restrict): keep every frame
	}
	if pc < c.text[0] || pc >= c.text[1] {
		return true
	}
	for _, r := range c.ranges {
		if pc >= r[0] && pc < r[1] {
			return true
		}
	}
	return false
}

// TickFunction returns the address of the tick's hrtimer function.
func (tc *TracingCode) TickFunction() (uint64, error) {
	<-tc.read
	switch {
	case tc.c.text[1] == 0:
		return 0, errors.New("sampling at the scheduler's tick needs the kernel's symbol addresses, which /proc/kallsyms hides (kernel.kptr_restrict): run as root")
	case tc.c.tick == 0:
		return 0, fmt.Errorf("sampling at the scheduler's tick: the kernel has none of %s (its tick is no hrtimer this program knows)", strings.Join(tickFunctions, ", "))
	}
	return tc.c.tick, nil
}

// readTracingCode returns tracingCode from a cache file of the running
// kernel (its addresses change at each boot), else from /proc/kallsyms,
// writing the cache.
func readTracingCode() tracingCode {
	path, ok := tracingCachePath()
	if ok {
		if c, err := loadTracingCode(path); err == nil {
			return c
		}
	}
	c := readKallsyms()
	if ok && c.text[1] != 0 {
		// Kernel addresses: 0600, and under sudo the user's (userfile).
		if userfile.MkdirAll(filepath.Dir(path)) == nil {
			_ = userfile.Replace(path, func(f *os.File) error {
				_, err := fmt.Fprintf(f, "text %x %x\nentry %x %x\ntick %x\n", c.text[0], c.text[1], c.entry[0], c.entry[1], c.tick)
				for _, r := range c.ranges {
					if err == nil {
						_, err = fmt.Fprintf(f, "range %x %x\n", r[0], r[1])
					}
				}
				return err
			})
		}
	}
	return c
}

func tracingCachePath() (string, bool) {
	boot, err1 := os.ReadFile("/proc/sys/kernel/random/boot_id")
	rel, err2 := os.ReadFile("/proc/sys/kernel/osrelease")
	dir, err3 := os.UserCacheDir()
	if err1 != nil || err2 != nil || err3 != nil {
		return "", false
	}
	h := sha256.Sum256(append(boot, rel...))
	return filepath.Join(dir, "culprit", "kernelcode-"+hex.EncodeToString(h[:12])), true
}

func loadTracingCode(path string) (tracingCode, error) {
	var c tracingCode
	data, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	for i, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r [2]uint64
		var err error
		switch {
		case strings.HasPrefix(l, "text "):
			_, err = fmt.Sscanf(l, "text %x %x", &c.text[0], &c.text[1])
		case strings.HasPrefix(l, "entry "):
			_, err = fmt.Sscanf(l, "entry %x %x", &c.entry[0], &c.entry[1])
		case strings.HasPrefix(l, "tick "):
			_, err = fmt.Sscanf(l, "tick %x", &c.tick)
		case strings.HasPrefix(l, "range "):
			if _, err = fmt.Sscanf(l, "range %x %x", &r[0], &r[1]); err == nil && r[0] < r[1] {
				c.ranges = append(c.ranges, r)
			}
		default:
			err = errors.New("unknown line")
		}
		if err != nil {
			return tracingCode{}, fmt.Errorf("%s: line %d: %q", path, i+1, l)
		}
	}
	if c.text[1] == 0 {
		return tracingCode{}, fmt.Errorf("%s: empty", path)
	}
	return c, nil
}

// readKallsyms reads /proc/kallsyms for tracingCode (a function ends where
// the next symbol starts).
func readKallsyms() tracingCode {
	var c tracingCode
	data, err := os.ReadFile("/proc/kallsyms")
	if err != nil {
		return c
	}
	ticks := make([]uint64, len(tickFunctions))
	open := -1 // the range waiting for its end
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		f := bytes.Fields(line)
		if len(f) < 3 {
			continue
		}
		addr, err := strconv.ParseUint(string(f[0]), 16, 64)
		if err != nil || addr == 0 {
			continue
		}
		if open >= 0 {
			c.ranges[open][1] = addr
			open = -1
		}
		name := f[2]
		switch {
		case bytes.Equal(name, []byte("_stext")):
			c.text[0] = addr
		case bytes.Equal(name, []byte("_etext")):
			c.text[1] = addr
		case bytes.Equal(name, []byte("__entry_text_start")):
			c.entry[0] = addr
		case bytes.Equal(name, []byte("__entry_text_end")):
			c.entry[1] = addr
		case bytes.HasPrefix(name, []byte("bpf_trace_run")), bytes.HasPrefix(name, []byte("__bpf_trace_")),
			bytes.HasPrefix(name, []byte("__traceiter_")):
			c.ranges = append(c.ranges, [2]uint64{addr, addr + 1})
			open = len(c.ranges) - 1
		}
		if len(f) == 3 { // a module's symbols name it in a fourth field
			for i, n := range tickFunctions {
				if string(name) == n && ticks[i] == 0 {
					ticks[i] = addr
				}
			}
		}
	}
	for _, a := range ticks {
		if a != 0 {
			c.tick = a
			break
		}
	}
	if c.entry[0] >= c.entry[1] {
		c.entry = [2]uint64{}
	}
	return c
}

// SwitchesBare is the number of switches inside system calls that
// Options.Limit or the windows left out, which were recorded without
// their stacks (UserStack NoStack).
func (t *Tracer) SwitchesBare() uint64 { return t.count(slotBare) }

// SwitchesBetween is the number of context switches of traced threads
// not recorded because they came between windows (SwitchesWindowed).
func (t *Tracer) SwitchesBetween() uint64 { return t.count(slotBetween) }

// SwitchesWindowed reports whether context switches are recorded in the
// system call windows only (Options.WindowOn, without SwitchIns): each
// one recorded in a window stands for the window's scale of them, as the
// window's calls do.
func (t *Tracer) SwitchesWindowed() bool { return t.switchesWindowed }

// kernelWalks is the number of kernel chains walked at switches inside
// calls that could have reused their thread's last one (inCallKernelStack).
func (t *Tracer) kernelWalks() uint64 { return t.count(slotKWalks) }

// SetTop has the programs copy thread tid's stack from its stack pointer
// up to top at its entries, switches and wake-ups (Options.StackTops):
// in the smallest of copyClasses that holds it, at least the StackBytes
// copy, none above MaxCopy (a top farther away gets the StackBytes copy).
// A copy that faults (the top beyond the stack's mapping) ends at the
// page boundary below instead, or else is the StackBytes copy. 0 forgets
// the thread's top.
func (t *Tracer) SetTop(tid uint32, top uint64) error {
	if t.tops == nil {
		return nil
	}
	if top == 0 {
		if err := t.tops.Delete(tid); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return err
		}
		return nil
	}
	if err := t.tops.Put(tid, top); err != nil {
		return err
	}
	if !t.topsSet {
		// Until a top is set, the programs skip the hash lookup.
		if err := t.topsOn.Put(uint32(0), uint64(1)); err != nil {
			return err
		}
		t.topsSet = true
	}
	return nil
}

// MaxCopy is the largest stack copy SetTop gives a thread: as the CPU
// samples' (sampleprog.MaxStack), enough for a thread whose frames below
// its calls hold a large array (memcached's transmit keeps 16 KiB of
// iovecs under sendmsg).
const MaxCopy = 24 << 10

// copyClasses are the sizes of the stack copies above Options.StackBytes
// that a thread's top (SetTop) may ask for: a record's size is a constant
// of the program, so a copy takes the smallest that holds it.
var copyClasses = []int{2 << 10, 4 << 10, 8 << 10, 16 << 10, MaxCopy}

// Lost is the number of records the ring had no room for.
func (t *Tracer) Lost() uint64 { return t.count(slotLost) }

// RingFD is the ring's descriptor, readable (epoll) once a record wakes
// its reader: when the ring is more than a quarter full.
func (t *Tracer) RingFD() int { return t.ring.FD() }

// Reduced is the number of records written without their stack copy
// because the ring was more than half full.
func (t *Tracer) Reduced() uint64 { return t.count(slotReduced) }

func (t *Tracer) count(slot uint32) uint64 {
	var per []uint64
	if err := t.lost.Lookup(slot, &per); err != nil {
		return 0
	}
	var n uint64
	for _, v := range per {
		n += v
	}
	return n
}

// Close detaches the programs and frees the maps.
func (t *Tracer) Close() {
	if t.win != nil && t.win.started {
		close(t.win.stop)
		<-t.win.done
	}
	for _, l := range t.links {
		if l != nil {
			l.Close()
		}
	}
	for _, p := range t.progs {
		p.Close()
	}
	if t.rd != nil {
		t.rd.Close()
	}
	if t.ownFollow {
		t.follow.Close()
	}
	for _, m := range []*ebpf.Map{t.stacks, t.scratch, t.ring, t.lost, t.kcache, t.thr, t.wgen, t.tops, t.topsOn, t.pages} {
		if m != nil {
			m.Close()
		}
	}
	*t = Tracer{}
}

type fds struct {
	tgids, gen, thr, stacks, scratch, ring, lost, kcache int
	ringBytes                                            int // the ring's size
	// walker is the program's buffer in scratch (walkEnter, walkExit,
	// walkSwitch): the programs do not run nested on a CPU, but a buffer
	// each costs nothing.
	walker int32
	win    int // the window generation's map (Options.WindowOn), 0: none
	// dropBetween: the switch program records no switch between windows
	// (betweenWindows), switches onto a CPU not being recorded.
	dropBetween bool
	threadHash  bool // thr is a hash keyed by thread id (Tracer.threadHash)
	// tops and topsOn are the threads' stack tops and whether any is set
	// (Options.StackTops), 0: none; pages the buffers of pageCopy.
	tops, topsOn, pages int
	memos               int // Options.Memos, with tops
	// limited: Options.Limit is set; a thread may record one call every
	// `every` ns, with `burst` ns of credit.
	limited      bool
	every, burst int32
	// userDepth, above 0, has the programs walk the user chain
	// themselves, at most userDepth addresses (userStackID); 0: the
	// kernel's helper walks it. mmOff places task_struct's mm.
	userDepth int
	mmOff     int16
}

// Per-thread state, in the thr task storage.
const (
	thGen      = 0  // u64: the follow set's generation thTraced was found under (0: never)
	thTraced   = 8  // u64: 1 when the thread's process is traced
	stTAT      = 16 // u64: the thread's next recorded call is due (GCRA's theoretical arrival time)
	stSkipped  = 24 // u64: calls not recorded since the thread's last recorded entry
	stRecorded = 32 // u64: 1 when the thread's last call was recorded
	// thCall is 1 + the thread's last system call, with callInside while the
	// thread is inside it (from its entry to its exit); 0: none since traced.
	thCall = 40
	// thPT is the thread's pid_tgid, in the hash map keyed by thread id
	// (Options.threadHash): a value of another pid_tgid is a dead thread's.
	thPT = 48
	// thUStack is the user chain's id at the thread's last recorded entry.
	thUStack = 56
	// thECtx is where the system call entry program's context lay on the
	// thread's kernel stack at its last call (the kernel moves the stack
	// by a random offset at each call, the same for everything below the
	// entry); thSCtx, the switch program's, written to be read back as a
	// number.
	thECtx = 64
	thSCtx = 72
	// thKChains is kChains kernel chains of the thread's switches inside
	// recorded calls that walked them, the one of a call number nr at
	// (nr % kChains) * kChainSize: its id (kcStack), and what it was
	// walked under: the call (kcNr), its entry's user chain (kcUser), the
	// switch's state (kcState, a record's Nr) and the depth of the kernel
	// stack at the switch below the call's entry (kcDepth; 0: none).
	// blockedKernelStack keeps the chains of switches outside recorded
	// calls there too: kcUser the user IP, kcDepth the user SP (neither
	// can equal an entry's user chain id or a depth below it).
	thKChains = 80
	// thWin is the window generation at the thread's last entry
	// (Options.WindowOn).
	thWin = thKChains + kChains*kChainSize
	// thEIP and thESP are the user IP and SP of the thread's last entry
	// whose record the ring took: what a switch inside a call compares
	// with its own registers to know the call is that one (a call begun
	// while the entry program was detached, or whose record the full
	// ring refused, has no entry to refer to).
	thEIP = thWin + 8
	thESP = thWin + 16
	// thPageSP is the user SP of the thread's last page-by-page copy
	// (pageCopy), thPageHoles its holes (the record's offHoles) in the
	// lower half and the copies since they were last read in the upper
	// (knownHoles).
	thPageSP    = thWin + 24
	thPageHoles = thWin + 32
	stateSize   = thWin + 40
)

const (
	kChains    = 4 // a power of two
	kChainSize = 40
	kcNr       = 0
	kcUser     = 8
	kcState    = 16
	kcDepth    = 24
	kcStack    = 32

	callInside = 1 << 63
)

// thrSlot is the stack slot holding the thread's state (0: none, the
// kernel could not make it: the thread records every call).
const thrSlot = -80

// Slots of the lost map (per-CPU counts).
const (
	slotLost    = 0
	slotReduced = 1
	slotBare    = 2
	slotSkipped = 3 // calls Options.Limit left out
	slotKWalks  = 4 // kernel chains walked at switches that might reuse one (blocked ones without Syscalls: all)
	slotCalls   = 5 // system calls of traced threads, with windows (Options.WindowOn)
	// slotSkippedWin: calls Options.Limit left out in windows whose calls
	// stand for PERIOD/ON each (the others stand for themselves).
	slotSkippedWin = 6
	slotBetween    = 7 // switches between windows not recorded (SwitchesBetween)
)

// winOpenKey is the window map's entry that says whether the system call
// programs are attached (1, or about to be) or not (0: between windows).
// The generation is at key 0.
const winOpenKey = uint32(1)

// windowedBit is set in the window map's value (and so in the thread
// state's thWin and an entry's record) while the window's calls stand for
// PERIOD/ON each; the bits below it are the generation.
const windowedBit = 62

// skippedSlot is the stack slot holding the entry's Skipped count.
const skippedSlot = -40

// winSlot is the entry program's stack slot holding the window's
// generation (0 without windows).
const winSlot = -64

// Unrecorded is the number of system calls that Options.Limit kept from
// the record and that no later recorded entry of their thread counts: the
// calls each thread made after its last recorded one.
// Every call left out is counted as it is; those a recorded entry drained
// already counts are not in the tail. Call it after the last Drain.
func (t *Tracer) Unrecorded() uint64 {
	n := t.count(slotSkipped)
	if n < t.skipped {
		return 0
	}
	return n - t.skipped
}

// UnrecordedWindowed is the part of Unrecorded left out in windows whose
// calls stand for WindowPeriod/WindowOn each (Scale above 1): a thread's
// calls left out are carried to its next recorded entry in the same
// window only.
func (t *Tracer) UnrecordedWindowed() uint64 {
	n := t.count(slotSkippedWin)
	if n < t.skippedWin {
		return 0
	}
	return n - t.skippedWin
}

// limit emits, with Options.Limit: the call counted and the program ended
// unless the thread may record one now (a generic cell rate algorithm over
// the thread's state: one call every m.every ns, m.burst ns of credit); a
// recorded call's Skipped count goes to skippedSlot. A thread without state
// records every call.
func limit(b *bpfasm.Builder, m fds) {
	b.Emit(storeImm64(asm.RFP, skippedSlot, 0))
	if !m.limited {
		return
	}
	b.Emit(
		asm.LoadMem(rRegs, asm.RFP, thrSlot, asm.DWord),
		asm.JEq.Imm(rRegs, 0, "lim_go"),
		asm.FnKtimeGetNs.Call(),
		asm.StoreMem(asm.RFP, timeSlot, asm.R0, asm.DWord),
		asm.LoadMem(asm.R1, rRegs, stTAT, asm.DWord),
		asm.Mov.Reg(asm.R2, asm.R0),
		asm.Add.Imm(asm.R2, m.burst),
		asm.JGE.Reg(asm.R2, asm.R1, "lim_take"),
		// Not this one: counted.
		asm.LoadMem(asm.R1, rRegs, stSkipped, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(rRegs, stSkipped, asm.R1, asm.DWord),
		storeImm64(rRegs, stRecorded, 0),
		asm.StoreImm(asm.RFP, -8, slotSkipped, asm.Word),
	)
	b.Lookup(m.lost, -8)
	b.Emit(
		asm.JEq.Imm(asm.R0, 0, "lim_win"),
		asm.Mov.Imm(asm.R1, 1),
		asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
		// In a window whose calls stand for PERIOD/ON: counted apart.
		asm.LoadMem(asm.R1, asm.RFP, winSlot, asm.DWord).WithSymbol("lim_win"),
		asm.RSh.Imm(asm.R1, windowedBit),
		asm.JEq.Imm(asm.R1, 0, "lim_out"),
	)
	countSlot(b, m, slotSkippedWin, "lim_out")
	b.Emit(asm.Return())
	b.Emit(
		// tat = max(tat, now) + every
		asm.JGE.Reg(asm.R1, asm.R0, "lim_late").WithSymbol("lim_take"),
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.Add.Imm(asm.R1, m.every).WithSymbol("lim_late"),
		asm.StoreMem(rRegs, stTAT, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, rRegs, stSkipped, asm.DWord),
		asm.StoreMem(asm.RFP, skippedSlot, asm.R1, asm.DWord),
		storeImm64(rRegs, stSkipped, 0),
		storeImm64(rRegs, stRecorded, 1),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("lim_go"),
	)
}

// stale emits, with windows (Options.WindowOn): when the thread's state
// is of an earlier window than the current one, the state made to say
// that the thread is in no call and that its last call was not recorded
// (the call's exit, or the thread's next calls, may have come while the
// programs were detached), under the current window; the calls it left
// out in the earlier one are no longer carried to its next recorded entry
// (they stand for a window's scale of their own: Unrecorded).
func stale(b *bpfasm.Builder, m fds) {
	if m.win == 0 {
		return
	}
	b.Emit(
		asm.LoadMem(asm.R1, asm.RFP, thrSlot, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, "w_ok"),
		asm.StoreImm(asm.RFP, -8, 0, asm.Word),
	)
	b.Lookup(m.win, -8)
	b.Emit(
		asm.JEq.Imm(asm.R0, 0, "w_ok"),
		asm.LoadMem(asm.R4, asm.R0, 0, asm.DWord),
		asm.LoadMem(asm.R1, asm.RFP, thrSlot, asm.DWord),
		asm.LoadMem(asm.R3, asm.R1, thWin, asm.DWord),
		asm.JEq.Reg(asm.R3, asm.R4, "w_ok"),
		asm.LoadMem(asm.R2, asm.R1, thCall, asm.DWord),
		asm.LSh.Imm(asm.R2, 1),
		asm.RSh.Imm(asm.R2, 1),
		asm.StoreMem(asm.R1, thCall, asm.R2, asm.DWord),
		storeImm64(asm.R1, stRecorded, 0),
		storeImm64(asm.R1, stSkipped, 0),
		asm.StoreMem(asm.R1, thWin, asm.R4, asm.DWord),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("w_ok"),
	)
}

// storeImm64 is `*(u64 *)(dst + off) = v` (v sign-extended from 32 bits),
// which asm.StoreImm does not emit.
func storeImm64(dst asm.Register, off int16, v int32) asm.Instruction {
	return bpfasm.StoreImm64(dst, off, v)
}

// recorded emits, with Options.Limit: jump to label unless the thread's
// last system call was recorded (a thread without state records every
// call).
func recorded(b *bpfasm.Builder, m fds, label string) {
	if !m.limited {
		return
	}
	b.Emit(
		asm.LoadMem(asm.R0, asm.RFP, thrSlot, asm.DWord),
		asm.JEq.Imm(asm.R0, 0, "rec_yes"),
		asm.LoadMem(asm.R1, asm.R0, stRecorded, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, label),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("rec_yes"),
	)
}

// leftOut emits, in the switch program with Options.Limit: nothing when
// the thread's last system call was recorded (the switch refers to it);
// else, for a thread that blocked (a call left out, by the limit or
// outside a window, is represented by the recorded call that counts it,
// and the stacks of its switches would cost their walk for no analysis),
// a count (SwitchesBare) and a jump to bare. A preemption (the thread
// stays runnable) walks its chains within the thread's budget (the
// entries' rule, whose budget it takes), else goes bare too: latency
// inference takes a preemption's wait for a CPU out of its thread's time
// with or without a stack, and a stack adds the point where the thread
// was (on memcached its walks mostly reuse a memo's chain,
// bpfasm.Memos). Between windows no switch gets here without switch-ins
// (betweenWindows). A thread without state records every call and its
// switches walk. Label lo_out is the same rule for a call the switch
// program knows was not recorded.
func leftOut(b *bpfasm.Builder, m fds, walk, bare string) {
	if !m.limited {
		return
	}
	b.Emit(
		asm.LoadMem(asm.R0, asm.RFP, thrSlot, asm.DWord),
		asm.JEq.Imm(asm.R0, 0, walk),
		asm.LoadMem(asm.R1, asm.R0, stRecorded, asm.DWord),
		asm.JNE.Imm(asm.R1, 0, "lo_in"),
		// Runnable: preempted, or a state of 0 (as SwitchState).
		asm.LoadMem(asm.R1, rCtx, 0, asm.DWord).WithSymbol("lo_out"),
		asm.And.Imm(asm.R1, 1),
		asm.JNE.Imm(asm.R1, 0, "lo_budget"),
		asm.LoadMem(asm.R1, rCtx, 24, asm.DWord),
		asm.Mov.Reg(asm.R2, asm.R1),
		asm.And.Imm(asm.R2, 0x7f),
		asm.JNE.Imm(asm.R2, 0, "lo_bare"),
		asm.And.Imm(asm.R1, 0x1000), // TASK_RTLOCK_WAIT: blocked
		asm.JNE.Imm(asm.R1, 0, "lo_bare"),
		asm.LoadMem(asm.R0, asm.RFP, thrSlot, asm.DWord).WithSymbol("lo_budget"),
		asm.StoreMem(asm.RFP, -24, asm.R0, asm.DWord),
		asm.LoadMem(asm.R0, asm.RFP, switchTimeSlot, asm.DWord),
		asm.StoreMem(asm.RFP, timeSlot, asm.R0, asm.DWord),
		asm.LoadMem(asm.R3, asm.RFP, -24, asm.DWord),
		asm.LoadMem(asm.R1, asm.R3, stTAT, asm.DWord),
		asm.Mov.Reg(asm.R2, asm.R0),
		asm.Add.Imm(asm.R2, m.burst),
		asm.JGE.Reg(asm.R2, asm.R1, "lo_take"),
	)
	b.Emit(
		asm.StoreImm(asm.RFP, -8, slotBare, asm.Word).WithSymbol("lo_bare"),
	)
	b.Lookup(m.lost, -8)
	b.Emit(
		asm.JEq.Imm(asm.R0, 0, bare),
		asm.Mov.Imm(asm.R1, 1),
		asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
		asm.Ja.Label(bare),
		// tat = max(tat, now) + every
		asm.JGE.Reg(asm.R1, asm.R0, "lo_late").WithSymbol("lo_take"),
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.Add.Imm(asm.R1, m.every).WithSymbol("lo_late"),
		asm.StoreMem(asm.R3, stTAT, asm.R1, asm.DWord),
		asm.Ja.Label(walk),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("lo_in"),
	)
}

// betweenWindows emits, in the switch program with m.dropBetween: while
// the system call programs are detached (the window map's flag, setOpen),
// a count (SwitchesBetween) and a return, before anything else is read.
// Between windows no event is recorded for the inference (it uses none
// there: analysis/introperf's edges), and the switches recorded in the
// windows stand for the others as the calls do: the recorder weighs each
// by its window's scale (SwitchesWindowed). A record between windows
// would say no more than when a thread left the CPU, without the stacks
// of the call it was in (left out), and a syscall-heavy server switches
// at nearly every request (memcached: two records in three of the
// program's; their reads and records took the program about 0.3 µs a
// request and the recorder 0.1-0.3 µs). With switches onto
// a CPU recorded (Options.SwitchIns) every switch is: thread timelines
// need each.
func betweenWindows(b *bpfasm.Builder, m fds) {
	if !m.dropBetween || m.win == 0 {
		return
	}
	b.Emit(asm.StoreImm(asm.RFP, -8, int64(winOpenKey), asm.Word))
	b.Lookup(m.win, -8)
	b.Emit(
		asm.JEq.Imm(asm.R0, 0, "bw_open"),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.JNE.Imm(asm.R1, 0, "bw_open"),
	)
	countSlot(b, m, slotBetween, "bw_counted")
	b.Emit(asm.Return())
	b.Mark("bw_open")
}

// countSlot emits: one more on this CPU at slot of the lost map, then R0
// = 0 at label done. It uses R0-R2 and the stack's 8 bytes below the
// frame pointer.
func countSlot(b *bpfasm.Builder, m fds, slot int32, done string) {
	b.Emit(asm.StoreImm(asm.RFP, -8, int64(slot), asm.Word))
	b.Lookup(m.lost, -8)
	b.Emit(
		asm.JEq.Imm(asm.R0, 0, done),
		asm.Mov.Imm(asm.R1, 1),
		asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R0, 0).WithSymbol(done),
	)
}

// Registers the programs keep across helper calls.
const (
	rCtx  = asm.R6
	rPT   = asm.R7 // pid_tgid
	rRec  = asm.R8 // the reserved record
	rRegs = asm.R9 // struct pt_regs *
)

// traced emits: rPT = pid_tgid, the thread's state at thrSlot (0: none;
// made if missing when create); return 0 unless its process is traced.
// The thread's state says so, found under the follow set's generation;
// under another (or without state), the set's hash map is asked, and its
// answer kept in the state.
func traced(b *bpfasm.Builder, m fds, create bool) {
	flags := int32(0)
	if create {
		flags = 1 // BPF_LOCAL_STORAGE_GET_F_CREATE
	}
	const genSlot = -88
	b.Emit(
		asm.Mov.Reg(rCtx, asm.R1),
		asm.FnGetCurrentPidTgid.Call(),
		asm.Mov.Reg(rPT, asm.R0),
		storeImm64(asm.RFP, thrSlot, 0),
		storeImm64(asm.RFP, timeSlot, 0),
	)
	if m.threadHash {
		threadHashState(b, m)
	} else {
		currentTaskStorage(b, m, flags)
		b.Emit(
			asm.JEq.Imm(asm.R0, 0, "tr_ask"),
			asm.StoreMem(asm.RFP, thrSlot, asm.R0, asm.DWord),
		)
	}
	b.Emit(asm.StoreImm(asm.RFP, -8, 0, asm.Word))
	b.Lookup(m.gen, -8)
	b.Emit(
		asm.JEq.Imm(asm.R0, 0, "tr_ask"),
		asm.LoadMem(asm.R2, asm.R0, 0, asm.DWord),
		asm.LoadMem(asm.R1, asm.RFP, thrSlot, asm.DWord),
		asm.LoadMem(asm.R3, asm.R1, thGen, asm.DWord),
		asm.JEq.Reg(asm.R3, asm.R2, "tr_known"),
		asm.StoreMem(asm.RFP, genSlot, asm.R2, asm.DWord),
		asm.Mov.Reg(asm.R0, rPT),
		asm.RSh.Imm(asm.R0, 32),
		asm.StoreMem(asm.RFP, -8, asm.R0, asm.Word),
	)
	b.Lookup(m.tgids, -8)
	b.Emit(
		asm.LoadMem(asm.R1, asm.RFP, thrSlot, asm.DWord),
		asm.LoadMem(asm.R2, asm.RFP, genSlot, asm.DWord),
		asm.StoreMem(asm.R1, thGen, asm.R2, asm.DWord),
		asm.Mov.Imm(asm.R3, 0),
		asm.JEq.Imm(asm.R0, 0, "tr_keep"),
		asm.Mov.Imm(asm.R3, 1),
		asm.StoreMem(asm.R1, thTraced, asm.R3, asm.DWord).WithSymbol("tr_keep"),
		asm.LoadMem(asm.R3, asm.R1, thTraced, asm.DWord).WithSymbol("tr_known"),
		asm.JNE.Imm(asm.R3, 0, "traced"),
		asm.Mov.Imm(asm.R0, 0),
		asm.Return(),
		// No state: the set's map is asked.
		asm.Mov.Reg(asm.R0, rPT).WithSymbol("tr_ask"),
		asm.RSh.Imm(asm.R0, 32),
		asm.StoreMem(asm.RFP, -8, asm.R0, asm.Word),
	)
	b.Lookup(m.tgids, -8)
	if m.threadHash && create {
		b.Emit(
			asm.JNE.Imm(asm.R0, 0, "tr_new"),
			asm.Mov.Imm(asm.R0, 0),
			asm.Return(),
		)
		b.Mark("tr_new")
		threadHashNew(b, m)
		b.Emit(asm.Ja.Label("traced"))
	} else {
		b.Emit(
			asm.JNE.Imm(asm.R0, 0, "traced"),
			asm.Mov.Imm(asm.R0, 0),
			asm.Return(),
		)
	}
	b.Mark("traced")
}

// threadHashState emits, with the state in a hash keyed by thread id: the
// current thread's value at thrSlot, or a jump to tr_ask when there is
// none (or a dead thread's).
func threadHashState(b *bpfasm.Builder, m fds) {
	// The key: the thread id.
	b.Emit(asm.StoreMem(asm.RFP, -8, rPT, asm.Word))
	b.Lookup(m.thr, -8)
	b.Emit(
		asm.JEq.Imm(asm.R0, 0, "tr_ask"),
		asm.LoadMem(asm.R1, asm.R0, thPT, asm.DWord),
		asm.JNE.Reg(asm.R1, rPT, "tr_ask"),
		asm.StoreMem(asm.RFP, thrSlot, asm.R0, asm.DWord),
	)
}

// threadHashNew emits, with the state in a hash keyed by thread id, for a
// thread of a traced process that has none: a new value at thrSlot, zero
// but for its pid_tgid (the generation 0 is never the set's: the next
// call asks the set again and keeps its answer). Threads of the other
// processes get none, so that they do not push the traced ones' out of
// the LRU map.
func threadHashNew(b *bpfasm.Builder, m fds) {
	// stateSize bytes for the value, built and handed to the map before
	// the program uses the slots it shares (stackID's idSlot, walkSlot).
	const valSlot = -104 - stateSize
	for off := int16(0); off < stateSize; off += 8 {
		b.Emit(storeImm64(asm.RFP, valSlot+off, 0))
	}
	b.Emit(
		asm.StoreMem(asm.RFP, valSlot+thPT, rPT, asm.DWord),
		asm.StoreMem(asm.RFP, -8, rPT, asm.Word),
	)
	b.Update(m.thr, -8, valSlot, 0)
	b.Lookup(m.thr, -8)
	b.Emit(asm.StoreMem(asm.RFP, thrSlot, asm.R0, asm.DWord))
}

// timeSlot is the stack slot holding the clock read that decided on the
// record (the limit's or a preemption's budget, or the switch's:
// switchTimeSlot), which its reservation takes as the record's time
// instead of reading the clock again; 0: none.
const timeSlot = -96

// switchTimeSlot is the switch programs' stack slot holding the clock
// read once for the switch, where its first record needs it (switchClock;
// 0 before): the time of both its records, the switch onto a CPU of next
// and the switch away of prev, as one moment. A switch away stamped where
// its record is reserved, after the switch in's record and the lookups
// before it, is microseconds later than the switch in of the same moment
// on a busy machine, and each of a thread's runs on the CPU came out that
// much longer than the kernel's account of it: 1-4% of a Go program's
// threads' time on the CPU, which switch at every park of their
// goroutine. The read waits for a traced thread: a clock read costs a
// switch program about 100 ns on a VM's kvm-clock, and most switches of
// a machine are of threads the programs turn away.
const switchTimeSlot = -400

// sizeSlot is the stack slot holding the size of a record with a stack
// copy (copySize).
const sizeSlot = -32

// copySize emits: the record's size at sizeSlot, its header hdr bytes
// (hdrSize, switchHdrSize), with the stack copy while
// the ring is at most half full, else without it: the recorder repairs
// fewer first frames of those records but loses none while the ring can
// still take records of a header's size. With tops (Options.StackTops),
// a thread whose top is set copies up to it, in the smallest of
// copyClasses that holds it (its length at wantSlot).
func copySize(b *bpfasm.Builder, hdr int32, copyBytes, ringBytes int, m fds) {
	b.Emit(
		storeImm64(asm.RFP, wantSlot, 0),
		asm.LoadMapPtr(asm.R1, m.ring),
		asm.Mov.Imm(asm.R2, 0), // BPF_RB_AVAIL_DATA: bytes not yet read
		asm.FnRingbufQuery.Call(),
		asm.Mov.Imm(asm.R2, hdr+int32(copyBytes)),
		asm.JLE.Imm(asm.R0, int32(ringBytes/2), "sized"),
		asm.Mov.Imm(asm.R2, hdr),
		asm.StoreMem(asm.RFP, sizeSlot, asm.R2, asm.DWord).WithSymbol("sized"),
	)
	if m.tops == 0 || copyBytes == 0 {
		return
	}
	b.Emit(asm.JEq.Imm(asm.R2, hdr, "topdone"))
	b.Emit(asm.StoreImm(asm.RFP, -8, 0, asm.Word))
	b.Lookup(m.topsOn, -8)
	b.Emit(
		asm.JEq.Imm(asm.R0, 0, "topdone"),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, "topdone"),
		asm.StoreMem(asm.RFP, -8, rPT, asm.Word), // the thread id
	)
	b.Lookup(m.tops, -8)
	b.Emit(
		asm.JEq.Imm(asm.R0, 0, "topdone"),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.StoreMem(asm.RFP, wantSlot, asm.R1, asm.DWord),
		asm.FnGetCurrentTaskBtf.Call(),
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.FnTaskPtRegs.Call(),
		asm.LoadMem(asm.R2, asm.R0, regSP, asm.DWord),
		asm.LoadMem(asm.R1, asm.RFP, wantSlot, asm.DWord),
		storeImm64(asm.RFP, wantSlot, 0),
		asm.JLE.Reg(asm.R1, asm.R2, "topdone"),
		asm.Sub.Reg(asm.R1, asm.R2),
		asm.Add.Imm(asm.R1, 7),
		asm.And.Imm(asm.R1, ^7),
		asm.JLE.Imm(asm.R1, int32(copyBytes), "topdone"),
		asm.JGT.Imm(asm.R1, MaxCopy, "topdone"),
		asm.StoreMem(asm.RFP, wantSlot, asm.R1, asm.DWord),
	)
	for _, c := range copyClasses {
		if c <= copyBytes {
			continue
		}
		next := fmt.Sprintf("topnot%d", c)
		b.Emit(
			asm.JGT.Imm(asm.R1, int32(c), next),
			asm.Mov.Imm(asm.R2, hdr+int32(c)),
			asm.StoreMem(asm.RFP, sizeSlot, asm.R2, asm.DWord),
			asm.Ja.Label("topdone"),
		)
		b.Mark(next)
	}
	b.Mark("topdone")
}

// wantSlot is the stack slot holding the length of a copy up to the
// thread's top (copySize), 0: the StackBytes copy.
const wantSlot = -72

// reserve emits: rRec = a record of size bytes in the ring (size < 0: the
// size at sizeSlot), or count it lost and return.
func reserve(b *bpfasm.Builder, m fds, size int32, kind int64) {
	reserveOr(b, m, size, kind, "")
}

// reserveOr is reserve, but for a record the ring has no room for it
// jumps to label fail (after counting it lost) instead of returning; ""
// returns.
func reserveOr(b *bpfasm.Builder, m fds, size int32, kind int64, fail string) {
	reserved, out := b.NewLabel("reserved"), b.NewLabel("out")
	b.Emit(asm.LoadMapPtr(asm.R1, m.ring))
	if size < 0 {
		b.Emit(asm.LoadMem(asm.R2, asm.RFP, sizeSlot, asm.DWord))
	} else {
		b.Emit(asm.Mov.Imm(asm.R2, size))
	}
	b.Emit(
		asm.Mov.Imm(asm.R3, 0),
		asm.FnRingbufReserve.Call(),
		asm.JNE.Imm(asm.R0, 0, reserved),
	)
	countSlot(b, m, slotLost, out)
	if fail != "" {
		b.Emit(asm.Ja.Label(fail))
	} else {
		b.Emit(asm.Return())
	}
	b.Emit(
		asm.Mov.Reg(rRec, asm.R0).WithSymbol(reserved),
		asm.StoreImm(rRec, offKind, kind, asm.Word),
		asm.StoreMem(rRec, offPidTgid, rPT, asm.DWord),
		asm.FnGetSmpProcessorId.Call(),
		asm.StoreMem(rRec, offCPU, asm.R0, asm.Word),
		asm.LoadMem(asm.R0, asm.RFP, timeSlot, asm.DWord),
		asm.JNE.Imm(asm.R0, 0, out+"_t"),
		asm.FnKtimeGetNs.Call(),
		asm.StoreMem(rRec, offTime, asm.R0, asm.DWord).WithSymbol(out+"_t"),
	)
}

// readReg emits: rec[at] = regs->field: a load where rRegs has the
// kernel's type (task_pt_regs: direct), else a kernel read.
func readReg(b *bpfasm.Builder, at int16, field int32, direct bool) {
	if direct {
		b.Emit(
			asm.LoadMem(asm.R1, rRegs, int16(field), asm.DWord),
			asm.StoreMem(rRec, at, asm.R1, asm.DWord),
		)
		return
	}
	b.Emit(
		asm.Mov.Reg(asm.R1, rRec),
		asm.Add.Imm(asm.R1, int32(at)),
		asm.Mov.Imm(asm.R2, 8),
		asm.Mov.Reg(asm.R3, rRegs),
		asm.Add.Imm(asm.R3, field),
		asm.FnProbeReadKernel.Call(),
	)
}

func submit(b *bpfasm.Builder, m fds) {
	submitOn(b, m)
	b.Emit(
		asm.Mov.Imm(asm.R0, 0),
		asm.Return(),
	)
}

// submitOn emits the record's submission, the program going on after it.
// The recorder reads the ring at its poll interval; a record that finds
// the ring more than a quarter full wakes it at once (as a perf ring's
// watermark does), so that a program writing faster than one interval's
// worth of the ring holds does not fill it past half, where records go
// without their stack copy (copySize).
func submitOn(b *bpfasm.Builder, m fds) {
	quiet := b.NewLabel("quiet")
	b.Emit(
		asm.LoadMapPtr(asm.R1, m.ring),
		asm.Mov.Imm(asm.R2, 0), // BPF_RB_AVAIL_DATA
		asm.FnRingbufQuery.Call(),
		asm.Mov.Imm(asm.R2, 1), // BPF_RB_NO_WAKEUP
		asm.JLE.Imm(asm.R0, int32(m.ringBytes/4), quiet),
		asm.Mov.Imm(asm.R2, 2), // BPF_RB_FORCE_WAKEUP
		asm.Mov.Reg(asm.R1, rRec).WithSymbol(quiet),
		asm.FnRingbufSubmit.Call(),
	)
}

// runDelayOffset returns the offset of sched_info.run_delay in struct
// task_struct, -1 when the kernel's BTF has no such field (a kernel
// built without CONFIG_SCHED_INFO): switches are then recorded without.
func runDelayOffset() int32 {
	return bpfasm.TaskFieldOffset("to record run delays", "sched_info", "sched_info", "run_delay")
}

// execRuntimeOffset returns the offset of se.sum_exec_runtime in struct
// task_struct, -1 when the kernel's BTF has no such field: switches are
// then recorded without (Event.HasExecRuntime).
func execRuntimeOffset() int32 { return bpfasm.ExecRuntimeOffset("to record run times") }

// schedOffs places the fields of struct task_struct a switch program
// reads of the thread leaving the CPU, -1 each when the kernel has none:
// sched_info.run_delay and se.sum_exec_runtime.
type schedOffs struct{ runDelay, execRuntime int32 }

// switchIns places the fields of struct task_struct a switch program
// reads of the thread it switches to (Options.SwitchIns); execOff is -1
// when the kernel has no se.sum_exec_runtime.
type switchIns struct{ tgidOff, pidOff, execOff int32 }

// switchInRecord emits, first in a switch program (R1 its context, the
// program a tp_btf one: prev and next are typed pointers, their fields
// loads): when next's process is traced, a record of kind kindSwitchIn,
// next's pid_tgid as the record's, stamped with the switch's clock read
// (switchClock), with next's se.sum_exec_runtime (its time on a CPU
// before this run) in the record's Nr (0 when in.execOff is negative).
// The sched_switch tracepoint is hit after the scheduler picked next and
// before the context switch; perf's switch records are written once the
// switch is done, microseconds later on a busy machine, and each was a
// record more (in and out) at every switch of a traced thread. The stamp
// is still later than the run queue's clock the kernel's account of the
// run starts from (read where __schedule began, before the pick, which
// may balance the load first), by 10-36 µs a switch on a 2-CPU VM: the
// run's length is the kernel's from the sum_exec_runtime read here and at
// the switch away (Event.ExecRuntime). Whether next is traced comes from
// its task storage, as the current thread's does (traced), under the
// follow set's generation; without state, or under another generation,
// from the set's map. Every switch of the machine pays that and a load
// of next's thread group id; those of the traced threads a record of 48
// bytes, and the clock read. R1 is the context again after it.
func switchInRecord(b *bpfasm.Builder, m fds, in *switchIns) {
	b.Emit(storeImm64(asm.RFP, switchTimeSlot, 0))
	if in == nil {
		return
	}
	const slotTGID = -16
	done, ask, known := b.NewLabel("si_done"), b.NewLabel("si_ask"), b.NewLabel("si_known")
	b.Emit(asm.Mov.Reg(rCtx, asm.R1))
	taskField(b, asm.R1, 16, in.tgidOff, asm.Word, slotTGID) // ctx->args[2]: next
	b.Emit(asm.StoreMem(asm.RFP, slotTGID, asm.R1, asm.Word))
	if !m.threadHash {
		b.Emit(
			asm.LoadMapPtr(asm.R1, m.thr),
			asm.LoadMem(asm.R2, rCtx, 16, asm.DWord),
			asm.Mov.Imm(asm.R3, 0),
			asm.Mov.Imm(asm.R4, 0),
			asm.FnTaskStorageGet.Call(),
			asm.JEq.Imm(asm.R0, 0, ask),
			asm.Mov.Reg(rPT, asm.R0), // next's state, until rPT is set below
			asm.StoreImm(asm.RFP, -8, 0, asm.Word),
		)
		b.Lookup(m.gen, -8)
		b.Emit(
			asm.JEq.Imm(asm.R0, 0, ask),
			asm.LoadMem(asm.R2, asm.R0, 0, asm.DWord),
			asm.LoadMem(asm.R3, rPT, thGen, asm.DWord),
			asm.JNE.Reg(asm.R3, asm.R2, ask),
			asm.LoadMem(asm.R3, rPT, thTraced, asm.DWord),
			asm.JEq.Imm(asm.R3, 0, done),
			asm.Ja.Label(known),
		)
	}
	b.Mark(ask)
	b.Lookup(m.tgids, slotTGID)
	b.Emit(asm.JEq.Imm(asm.R0, 0, done))
	b.Mark(known)
	taskField(b, asm.R1, 16, in.pidOff, asm.Word, -24)
	b.Emit(
		asm.LoadMem(rPT, asm.RFP, slotTGID, asm.Word),
		asm.LSh.Imm(rPT, 32),
		asm.Or.Reg(rPT, asm.R1),
	)
	switchClock(b)
	b.Emit(asm.StoreMem(asm.RFP, timeSlot, asm.R0, asm.DWord))
	reserveOr(b, m, exitSize, kindSwitchIn, done)
	b.Emit(
		storeImm64(rRec, offUStack, -1),
		storeImm64(rRec, offKStack, -1),
	)
	readTask(b, offNr, 16, in.execOff) // ctx->args[2]: next
	submitOn(b, m)
	b.Mark(done)
	b.Emit(asm.Mov.Reg(asm.R1, rCtx))
}

// switchClock emits: R0 = the switch's clock read (switchTimeSlot), read
// the first time it is asked for: the time of both the switch's records,
// the switch onto a CPU of next and the switch away of prev, as one
// moment; a switch of no traced thread reads no clock.
func switchClock(b *bpfasm.Builder) {
	have := b.NewLabel("clock")
	b.Emit(
		asm.LoadMem(asm.R0, asm.RFP, switchTimeSlot, asm.DWord),
		asm.JNE.Imm(asm.R0, 0, have),
		asm.FnKtimeGetNs.Call(),
		asm.StoreMem(asm.RFP, switchTimeSlot, asm.R0, asm.DWord),
	)
	b.Mark(have)
	b.Emit(asm.LoadMem(asm.R0, asm.RFP, switchTimeSlot, asm.DWord))
}

// switchTime emits: timeSlot = the switch's clock read (switchClock),
// which the switch away's record takes as its time.
func switchTime(b *bpfasm.Builder) {
	switchClock(b)
	b.Emit(asm.StoreMem(asm.RFP, timeSlot, asm.R0, asm.DWord))
}

// enterProgram: sys_enter(regs, id).
func enterProgram(m fds, kernel bool, copyBytes, ringBytes int) asm.Instructions {
	m.walker = walkEnter
	var b bpfasm.Builder
	traced(&b, m, true)
	stale(&b, m)
	b.Emit(
		asm.LoadMem(asm.R1, asm.RFP, thrSlot, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, "e_nostate"),
		asm.LoadMem(asm.R2, rCtx, 8, asm.DWord),
		asm.Add.Imm(asm.R2, 1),
		asm.LoadImm(asm.R3, math.MinInt64, asm.DWord), // the top bit: inside
		asm.Or.Reg(asm.R2, asm.R3),
		asm.StoreMem(asm.R1, thCall, asm.R2, asm.DWord),
		asm.StoreMem(asm.R1, thECtx, rCtx, asm.DWord),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("e_nostate"),
	)
	b.Emit(storeImm64(asm.RFP, winSlot, 0))
	if m.win != 0 {
		// The window's generation, kept in the thread's state and the
		// record; the traced threads' calls counted (slotCalls), for the
		// windows' rate rule.
		b.Emit(asm.StoreImm(asm.RFP, -8, slotCalls, asm.Word))
		b.Lookup(m.lost, -8)
		b.Emit(
			asm.JEq.Imm(asm.R0, 0, "e_nocount"),
			asm.Mov.Imm(asm.R1, 1),
			asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
			asm.StoreImm(asm.RFP, -8, 0, asm.Word).WithSymbol("e_nocount"),
		)
		b.Lookup(m.win, -8)
		b.Emit(
			asm.JEq.Imm(asm.R0, 0, "e_nowin"),
			asm.LoadMem(asm.R2, asm.R0, 0, asm.DWord),
			asm.StoreMem(asm.RFP, winSlot, asm.R2, asm.DWord),
			asm.LoadMem(asm.R1, asm.RFP, thrSlot, asm.DWord),
			asm.JEq.Imm(asm.R1, 0, "e_nowin"),
			asm.StoreMem(asm.R1, thWin, asm.R2, asm.DWord),
			asm.Mov.Imm(asm.R0, 0).WithSymbol("e_nowin"),
		)
	}
	limit(&b, m)
	// args[0]: the user registers.
	b.Emit(asm.LoadMem(rRegs, rCtx, 0, asm.DWord))
	memoCheck(&b, m, false)
	memoSized(&b, m, hdrSize, "e_sized")
	copySize(&b, hdrSize, copyBytes, ringBytes, m)
	b.Mark("e_sized")
	reserve(&b, m, -1, kindEnter)
	b.Emit(
		asm.LoadMem(asm.R1, asm.RFP, skippedSlot, asm.DWord),
		asm.StoreMem(rRec, offSkipped, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.RFP, winSlot, asm.DWord),
		asm.StoreMem(rRec, offCallNr, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, rCtx, 8, asm.DWord),
		asm.StoreMem(rRec, offNr, asm.R1, asm.DWord),
	)
	userChain(&b, m, offUStack)
	b.Emit(
		asm.LoadMem(asm.R1, asm.RFP, thrSlot, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, "e_nouser"),
		asm.LoadMem(asm.R2, rRec, offUStack, asm.DWord),
	)
	if m.memos != 0 {
		// A memo's chain is told apart by its id.
		b.Emit(
			asm.LoadMem(asm.R3, asm.RFP, memoIDSlot, asm.DWord),
			asm.JEq.Imm(asm.R3, 0, "e_ustore"),
			asm.LoadImm(asm.R2, int64(memoUserID(0)), asm.DWord),
			asm.Or.Reg(asm.R2, asm.R3),
		)
	}
	b.Emit(
		asm.StoreMem(asm.R1, thUStack, asm.R2, asm.DWord).WithSymbol("e_ustore"),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("e_nouser"),
	)
	kernelStack(&b, m, kernel, 0)
	userRegs(&b, m, hdrSize, copyBytes, false)
	b.Emit(
		asm.LoadMem(asm.R1, asm.RFP, thrSlot, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, "e_noid"),
		asm.LoadMem(asm.R2, rRec, offIP, asm.DWord),
		asm.StoreMem(asm.R1, thEIP, asm.R2, asm.DWord),
		asm.LoadMem(asm.R2, rRec, offSP, asm.DWord),
		asm.StoreMem(asm.R1, thESP, asm.R2, asm.DWord),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("e_noid"),
	)
	submit(&b, m)
	return b.Ins
}

// userRegs emits: the record's IP, SP and BP from rRegs, and the stack copy
// after its header of hdr bytes when the record has room for it
// (copySize), else a count of the record as reduced.
func userRegs(b *bpfasm.Builder, m fds, hdr int32, copyBytes int, direct bool) {
	readReg(b, offIP, regIP, direct)
	readReg(b, offSP, regSP, direct)
	readReg(b, offBP, regBP, direct)
	b.Emit(asm.Mov.Imm(asm.R1, 0), asm.StoreMem(rRec, offCopied, asm.R1, asm.DWord))
	if copyBytes == 0 {
		return
	}
	if m.memos != 0 {
		// A memo's record has no copy: its id instead of holes.
		b.Emit(
			asm.LoadMem(asm.R1, asm.RFP, memoIDSlot, asm.DWord),
			asm.JEq.Imm(asm.R1, 0, "ur_copy"),
			asm.StoreMem(rRec, offHoles, asm.R1, asm.Word),
			asm.Ja.Label("nocopy"),
		)
		b.Mark("ur_copy")
	}
	b.Emit(
		asm.LoadMem(asm.R1, asm.RFP, sizeSlot, asm.DWord),
		asm.JEq.Imm(asm.R1, hdr+int32(copyBytes), "copy"),
	)
	if m.tops != 0 {
		for _, c := range copyClasses {
			if c > copyBytes {
				b.Emit(asm.JEq.Imm(asm.R1, hdr+int32(c), fmt.Sprintf("copy%d", c)))
			}
		}
	}
	b.Emit(asm.StoreImm(asm.RFP, -8, slotReduced, asm.Word))
	b.Lookup(m.lost, -8)
	b.Emit(
		asm.JEq.Imm(asm.R0, 0, "nocopy"),
		asm.Mov.Imm(asm.R1, 1),
		asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
		asm.Ja.Label("nocopy"),
	)
	if m.tops != 0 {
		// A copy up to the thread's top: wantSlot bytes; when that
		// faults, page by page (pageCopy).
		for _, c := range copyClasses {
			if c <= copyBytes {
				continue
			}
			try := fmt.Sprintf("try%d", c)
			b.Emit(
				asm.LoadMem(asm.R2, asm.RFP, wantSlot, asm.DWord).WithSymbol(fmt.Sprintf("copy%d", c)),
				asm.JSLE.Imm(asm.R2, int32(copyBytes), "copy"),
				asm.JGT.Imm(asm.R2, int32(c), "copy"),
				// A thread whose last copy at this SP met holes goes
				// page by page at once: the copy of the whole would
				// fault at the first (knownHoles).
				asm.LoadMem(asm.R1, asm.RFP, thrSlot, asm.DWord),
				asm.JEq.Imm(asm.R1, 0, try),
				asm.LoadMem(asm.R3, asm.R1, thPageSP, asm.DWord),
				asm.LoadMem(asm.R4, rRec, offSP, asm.DWord),
				asm.JNE.Reg(asm.R3, asm.R4, try),
				asm.LoadMem(asm.R3, asm.R1, thPageHoles, asm.Word),
				asm.JNE.Imm(asm.R3, 0, fmt.Sprintf("pc%d_start", c)),
				asm.Mov.Reg(asm.R1, rRec).WithSymbol(try),
				asm.Add.Imm(asm.R1, hdr),
				asm.LoadMem(asm.R3, rRec, offSP, asm.DWord),
				asm.FnProbeReadUser.Call(),
				asm.JEq.Imm(asm.R0, 0, "copied"),
			)
			pageCopy(b, m, hdr, c)
		}
	}
	b.Emit(
		asm.Mov.Reg(asm.R1, rRec).WithSymbol("copy"),
		asm.Add.Imm(asm.R1, hdr),
		asm.Mov.Imm(asm.R2, int32(copyBytes)),
		asm.LoadMem(asm.R3, rRec, offSP, asm.DWord),
		asm.FnProbeReadUser.Call(),
		asm.JNE.Imm(asm.R0, 0, "partial"),
		asm.Mov.Imm(asm.R1, int32(copyBytes)),
		asm.StoreMem(asm.RFP, wantSlot, asm.R1, asm.DWord),
		asm.Ja.Label("copied"),
		// The copy faulted: where it crossed a page boundary, the memory
		// beyond may be a page never touched (above a goroutine's stack,
		// the heap): the copy up to the boundary.
		asm.LoadMem(asm.R1, rRec, offSP, asm.DWord).WithSymbol("partial"),
		asm.And.Imm(asm.R1, 4095),
		asm.Mov.Imm(asm.R2, 4096),
		asm.Sub.Reg(asm.R2, asm.R1),
		asm.JGE.Imm(asm.R2, int32(copyBytes), "nocopy"),
		asm.StoreMem(asm.RFP, wantSlot, asm.R2, asm.DWord),
		asm.Mov.Reg(asm.R1, rRec),
		asm.Add.Imm(asm.R1, hdr),
		asm.LoadMem(asm.R3, rRec, offSP, asm.DWord),
		asm.FnProbeReadUser.Call(),
		asm.JNE.Imm(asm.R0, 0, "nocopy"),
		asm.LoadMem(asm.R1, asm.RFP, wantSlot, asm.DWord).WithSymbol("copied"),
		asm.StoreMem(rRec, offCopied, asm.R1, asm.Word),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("nocopy"),
	)
}

// Stack slots of pageCopy.
const (
	pageEndSlot   = -408 // sp + the copy's length: its end
	pageReadSlot  = -416 // the end of the last page read
	pageBufSlot   = -424 // the program's buffer in pages
	pageNextSlot  = -432 // the end of the page being read
	pageKnownSlot = -440 // the holes taken as known (knownHoles)
)

// knownRead is how many copies in a row take a thread's holes as known
// before one reads every page again (knownHoles).
const knownRead = 64

// knownHoles: a read of a page not in memory costs the kernel a page
// fault, and under a hypervisor that shadows the guest's page tables a
// trip out of the guest: 4.2 µs here against 20 ns for a page in memory
// (docs/performance.md). A thread preempted again and again at the same
// SP inside a large frame never written (memcached's workers in sendmsg
// under transmit's iovecs) would pay for the same holes at each switch,
// three faults a copy with the copy of the whole tried first. So a
// page-by-page copy keeps its SP and holes in the thread's state, and the
// next copy at the same SP goes page by page at once and takes those
// pages as holes without reading them, but for one in knownRead, which
// reads them all (a page written since is read from then on).

// pageCopy emits, for a copy up to the thread's top of wantSlot bytes
// (at most c, the record's room) that faulted: a page of the range is not
// in memory (one the thread never touched, inside a large frame's unused
// array as memcached's transmit keeps, or beyond the end of the stack's
// mapping). The range is copied page by page into the program's buffer
// in the pages map, a page that faults left zero and marked in the
// record's holes (offHoles), then the part up to the end of the last page
// read into the record: the unwind reads return addresses and saved
// registers, which lie on pages the thread wrote, around the holes. The
// pages go through the buffer because the verifier must see each read
// inside the record, and a page's offset and length are known only
// together. Jumps to "copied" with the copy's length in R1, or to
// "nocopy".
func pageCopy(b *bpfasm.Builder, m fds, hdr int32, c int) {
	l := func(s string) string { return fmt.Sprintf("pc%d_%s", c, s) }
	b.Emit(asm.StoreImm(asm.RFP, -8, int64(m.walker), asm.Word).WithSymbol(l("start")))
	b.Lookup(m.pages, -8)
	b.Emit(
		asm.JEq.Imm(asm.R0, 0, "nocopy"),
		// The holes known at this SP (knownHoles), their count of uses
		// one more.
		storeImm64(asm.RFP, pageKnownSlot, 0),
		asm.LoadMem(asm.R1, asm.RFP, thrSlot, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, l("known")),
		asm.LoadMem(asm.R2, asm.R1, thPageSP, asm.DWord),
		asm.LoadMem(asm.R3, rRec, offSP, asm.DWord),
		asm.JNE.Reg(asm.R2, asm.R3, l("known")),
		asm.LoadMem(asm.R2, asm.R1, thPageHoles+4, asm.Word),
		asm.Add.Imm(asm.R2, 1),
		asm.StoreMem(asm.R1, thPageHoles+4, asm.R2, asm.Word),
		asm.And.Imm(asm.R2, knownRead-1),
		asm.JEq.Imm(asm.R2, 0, l("known")),
		asm.LoadMem(asm.R2, asm.R1, thPageHoles, asm.Word),
		asm.StoreMem(asm.RFP, pageKnownSlot, asm.R2, asm.DWord),
		asm.Mov.Reg(asm.R0, asm.R0).WithSymbol(l("known")),
	)
	b.Emit(
		asm.StoreMem(asm.RFP, pageBufSlot, asm.R0, asm.DWord),
		asm.LoadMem(asm.R1, rRec, offSP, asm.DWord),
		asm.StoreMem(asm.RFP, pageReadSlot, asm.R1, asm.DWord),
		asm.LoadMem(asm.R2, asm.RFP, wantSlot, asm.DWord),
		asm.Add.Reg(asm.R2, asm.R1),
		asm.StoreMem(asm.RFP, pageEndSlot, asm.R2, asm.DWord),
	)
	for page := 0; page <= c/4096; page++ {
		next := l(fmt.Sprint(page + 1))
		// R4: the page's first byte to copy: sp on the first page, the
		// page's start on the others.
		b.Emit(asm.LoadMem(asm.R4, rRec, offSP, asm.DWord))
		if page > 0 {
			b.Emit(
				asm.And.Imm(asm.R4, ^4095),
				asm.Add.Imm(asm.R4, int32(page*4096)),
			)
		}
		b.Emit(
			asm.LoadMem(asm.R3, asm.RFP, pageEndSlot, asm.DWord),
			asm.JGE.Reg(asm.R4, asm.R3, l("end")),
			// R2: up to the page's end or the copy's, whichever is first.
			asm.Mov.Reg(asm.R2, asm.R4),
			asm.And.Imm(asm.R2, ^4095),
			asm.Add.Imm(asm.R2, 4096),
			asm.JLE.Reg(asm.R2, asm.R3, l("len"+fmt.Sprint(page))),
			asm.Mov.Reg(asm.R2, asm.R3),
			asm.Sub.Reg(asm.R2, asm.R4).WithSymbol(l("len"+fmt.Sprint(page))),
			asm.JGT.Imm(asm.R2, 4096, l("end")),
			asm.JEq.Imm(asm.R2, 0, l("end")),
			// R1: the buffer's bytes for the page, at its offset from sp,
			// at most page*4096: the page's last byte within the buffer.
			asm.Mov.Reg(asm.R1, asm.R4),
			asm.LoadMem(asm.R3, rRec, offSP, asm.DWord),
			asm.Sub.Reg(asm.R1, asm.R3),
			asm.JGT.Imm(asm.R1, int32(page*4096), l("end")),
			asm.LoadMem(asm.R3, asm.RFP, pageBufSlot, asm.DWord),
			asm.Add.Reg(asm.R1, asm.R3),
			asm.Mov.Reg(asm.R3, asm.R4),
			asm.Add.Reg(asm.R4, asm.R2),
			asm.StoreMem(asm.RFP, pageNextSlot, asm.R4, asm.DWord), // the page's end
		)
		// A page taken as a hole is zeroed, not read.
		b.ReadUserUnless(pageKnownSlot, 1<<page)
		b.Emit(
			asm.JNE.Imm(asm.R0, 0, l("fault"+fmt.Sprint(page))),
			asm.LoadMem(asm.R1, asm.RFP, pageNextSlot, asm.DWord),
			asm.StoreMem(asm.RFP, pageReadSlot, asm.R1, asm.DWord),
			asm.Ja.Label(next),
			asm.LoadMem(asm.R1, rRec, offHoles, asm.Word).WithSymbol(l("fault"+fmt.Sprint(page))),
			asm.Or.Imm(asm.R1, 1<<page),
			asm.StoreMem(rRec, offHoles, asm.R1, asm.Word),
		)
		b.Mark(next)
	}
	b.Mark(l("end"))
	// The thread's state keeps this copy's SP and holes; their count of
	// uses starts again when they were read, not taken as known.
	b.Emit(
		asm.LoadMem(asm.R1, asm.RFP, thrSlot, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, l("kept")),
		asm.LoadMem(asm.R2, rRec, offSP, asm.DWord),
		asm.StoreMem(asm.R1, thPageSP, asm.R2, asm.DWord),
		asm.LoadMem(asm.R2, rRec, offHoles, asm.Word),
		asm.StoreMem(asm.R1, thPageHoles, asm.R2, asm.Word),
		asm.LoadMem(asm.R2, asm.RFP, pageKnownSlot, asm.DWord),
		asm.JNE.Imm(asm.R2, 0, l("kept")),
		asm.StoreImm(asm.R1, thPageHoles+4, 0, asm.Word),
		asm.Mov.Reg(asm.R0, asm.R0).WithSymbol(l("kept")),
	)
	b.Emit(
		asm.LoadMem(asm.R2, asm.RFP, pageReadSlot, asm.DWord),
		asm.LoadMem(asm.R1, rRec, offSP, asm.DWord),
		asm.Sub.Reg(asm.R2, asm.R1),
		asm.JEq.Imm(asm.R2, 0, "nocopy"),
		asm.JGT.Imm(asm.R2, int32(c), "nocopy"),
		asm.StoreMem(asm.RFP, wantSlot, asm.R2, asm.DWord),
		asm.Mov.Reg(asm.R1, rRec),
		asm.Add.Imm(asm.R1, hdr),
		asm.LoadMem(asm.R3, asm.RFP, pageBufSlot, asm.DWord),
		asm.FnProbeReadKernel.Call(),
		asm.JNE.Imm(asm.R0, 0, "nocopy"),
		asm.Ja.Label("copied"),
	)
}

// SwitchState is what the sched_switch tracepoint reports as prev_state
// for a switch record's Nr (the kernel's __trace_sched_switch_state):
// 0x100 (TASK_REPORT_MAX) for a preemption, else the bit of the task's
// reported state (1 S, 2 D, 4 T, 8 t, 16 X, 32 Z, 64 P, 128 I), 0 running.
func SwitchState(nr uint64) uint64 {
	if nr>>32 != 0 {
		return 0x100
	}
	st := uint32(nr)
	state := st & 0x7f     // TASK_REPORT
	if st&0x402 == 0x402 { // TASK_IDLE
		state = 0x80
	}
	if st&0x1000 != 0 { // TASK_RTLOCK_WAIT
		state = 2
	}
	if state == 0 {
		return 0
	}
	return 1 << (bits.Len32(state) - 1)
}

// switchProgram: sched_switch(preempt, prev, next, prev_state), run by
// prev: its kernel chain (the blocking path: walked, or reused as the
// package's doc says), its user registers (task_pt_regs), and its user
// chain and stack copy, unless
// inCall and the thread is inside a system call (or on its way back to
// user mode after one): the registers' orig_ax is a system call number,
// and the number, user IP and SP are those of the thread's last recorded
// entry, or else the instruction before the registers' IP is the syscall
// instruction (a page fault's error code can look like a number). Inside
// the call of the last recorded entry, the record (without room for a
// stack copy) refers to the call's user chain; inside one left out (by the
// limit, outside a window, or whose entry's record the ring refused), the
// record has no chains, but for a preemption within its thread's budget
// (leftOut), or walks them without a limit.
func switchProgram(m fds, copyBytes, ringBytes int, exitStateOff int32, so schedOffs, inCall bool, in *switchIns) asm.Instructions {
	m.walker = walkSwitch
	const slotNr, slotIP = -48, -56 // the call and IP, read before the record is reserved
	var b bpfasm.Builder
	switchInRecord(&b, m, in)
	// With tops, the thread's state keeps its copies' holes (knownHoles):
	// made here for threads that make no recorded system call.
	traced(&b, m, m.tops != 0)
	betweenWindows(&b, m)
	stale(&b, m)
	switchTime(&b)
	b.Emit(
		asm.FnGetCurrentTaskBtf.Call(),
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.FnTaskPtRegs.Call(),
		asm.Mov.Reg(rRegs, asm.R0),
	)
	if inCall {
		// Inside a system call: orig_ax is its number (an interrupt's is
		// negative, a page fault's an error code). The call is the one of
		// the thread's last recorded entry when its number, user IP and SP
		// are that entry's (thCall, thEIP, thESP), inside it or on the way
		// back to user mode after its exit. Otherwise, or without state,
		// the instruction before IP must be syscall for the thread to be
		// in (or just out of) a call at all; a call other than the last
		// recorded one has no entry to refer to (it began while the entry
		// program was detached, between two windows, or its record did not
		// fit in the ring) and counts as left out.
		syscallInsn := func(yes string) {
			b.Emit(
				asm.StoreImm(asm.RFP, -16, 0, asm.Word),
				asm.Mov.Reg(asm.R1, asm.RFP),
				asm.Add.Imm(asm.R1, -16),
				asm.Mov.Imm(asm.R2, 2),
				asm.LoadMem(asm.R3, asm.RFP, slotIP, asm.DWord),
				asm.Add.Imm(asm.R3, -2),
				asm.FnProbeReadUser.Call(),
				asm.JNE.Imm(asm.R0, 0, "walk"),
				asm.LoadMem(asm.R1, asm.RFP, -16, asm.Half),
				asm.JNE.Imm(asm.R1, 0x050f, "walk"), // syscall: 0f 05
				asm.Ja.Label(yes),
			)
		}
		b.Emit(
			asm.LoadMem(asm.R3, rRegs, regOrigAX, asm.DWord),
			asm.JGT.Imm(asm.R3, maxSyscallNr, "walk"),
			asm.StoreMem(asm.RFP, slotNr, asm.R3, asm.DWord),
			asm.LoadMem(asm.R1, rRegs, regIP, asm.DWord),
			asm.StoreMem(asm.RFP, slotIP, asm.R1, asm.DWord),
			asm.LoadMem(asm.R1, asm.RFP, thrSlot, asm.DWord),
			asm.JEq.Imm(asm.R1, 0, "insn"),
			asm.LoadMem(asm.R2, asm.R1, thCall, asm.DWord),
			asm.LSh.Imm(asm.R2, 1),
			asm.RSh.Imm(asm.R2, 1),
			asm.Add.Imm(asm.R2, -1),
			asm.JNE.Reg(asm.R2, asm.R3, "other"),
			asm.LoadMem(asm.R2, asm.R1, thEIP, asm.DWord),
			asm.LoadMem(asm.R4, asm.RFP, slotIP, asm.DWord),
			asm.JNE.Reg(asm.R2, asm.R4, "other"),
			asm.LoadMem(asm.R2, asm.R1, thESP, asm.DWord),
			asm.LoadMem(asm.R4, rRegs, regSP, asm.DWord),
			asm.JEq.Reg(asm.R2, asm.R4, "inside"),
		)
		b.Mark("other")
		syscallInsn("unrecorded")
		b.Mark("insn")
		syscallInsn("inside")
		b.Mark("unrecorded")
		if m.limited {
			b.Emit(asm.Ja.Label("lo_out"))
		} else {
			b.Emit(asm.Ja.Label("walk"))
		}
		b.Mark("inside")
		// A call not recorded has no user chain to refer to: the switch
		// goes without chains (a preemption walks them within budget).
		leftOut(&b, m, "walk", "bare")
		inCallRecord := func(user int32, kernel bool) {
			reserve(&b, m, switchHdrSize, kindSwitch)
			switchNr(&b, exitStateOff, so)
			if kernel {
				inCallKernelStack(&b, m, slotNr)
			} else {
				b.Emit(asm.Mov.Imm(asm.R1, -1), asm.StoreMem(rRec, offKStack, asm.R1, asm.DWord))
			}
			b.Emit(
				asm.Mov.Imm(asm.R1, user),
				asm.StoreMem(rRec, offUStack, asm.R1, asm.DWord),
				asm.Mov.Imm(asm.R1, 0),
				asm.StoreMem(rRec, offCopied, asm.R1, asm.DWord),
				asm.LoadMem(asm.R1, asm.RFP, slotNr, asm.DWord),
				asm.StoreMem(rRec, offCallNr, asm.R1, asm.DWord),
				asm.LoadMem(asm.R1, asm.RFP, slotIP, asm.DWord),
				asm.StoreMem(rRec, offIP, asm.R1, asm.DWord),
			)
			readReg(&b, offSP, regSP, true)
			readReg(&b, offBP, regBP, true)
			submit(&b, m)
		}
		inCallRecord(InCall, true)
		if m.limited {
			b.Mark("bare")
			inCallRecord(NoStack, false)
		}
		b.Mark("walk")
	}
	memoCheck(&b, m, true)
	memoSized(&b, m, switchHdrSize, "s_sized")
	copySize(&b, switchHdrSize, copyBytes, ringBytes, m)
	b.Mark("s_sized")
	reserve(&b, m, -1, kindSwitch)
	switchNr(&b, exitStateOff, so)
	switchKernelStack(&b, m)
	b.Emit(
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(rRec, offCallNr, asm.R1, asm.DWord),
	)
	userChain(&b, m, offUStack)
	userRegs(&b, m, switchHdrSize, copyBytes, true)
	submit(&b, m)
	return b.Ins
}

// readTask emits: rec[at] = the 8 bytes at off in the task at ctx's
// argument arg (a byte offset into the context: 8 prev, 16 next), or 0
// when off is negative or the read fails.
func readTask(b *bpfasm.Builder, at int16, arg int16, off int32) {
	if off < 0 {
		b.Emit(storeImm64(rRec, at, 0))
		return
	}
	taskField(b, asm.R1, arg, off, asm.DWord, -16)
	b.Emit(asm.StoreMem(rRec, at, asm.R1, asm.DWord))
}

// taskField emits, in a tp_btf program (its context's task arguments
// typed pointers): dst = the size-byte field at off in the task at ctx's
// argument arg, a load, 0 where it faults; beyond a load's offset, read
// from the kernel through the stack slot slot (0 when the read fails).
// A load costs a few instructions where bpf_probe_read_kernel costs a
// helper call, and the switch programs read several at each switch of
// the machine.
func taskField(b *bpfasm.Builder, dst asm.Register, arg int16, off int32, size asm.Size, slot int16) {
	if off+int32(size.Sizeof()) <= math.MaxInt16 {
		b.Emit(
			asm.LoadMem(dst, rCtx, arg, asm.DWord),
			asm.LoadMem(dst, dst, int16(off), size),
		)
		return
	}
	b.Emit(
		storeImm64(asm.RFP, slot, 0),
		asm.Mov.Reg(asm.R1, asm.RFP),
		asm.Add.Imm(asm.R1, int32(slot)),
		asm.Mov.Imm(asm.R2, int32(size.Sizeof())),
		asm.LoadMem(asm.R3, rCtx, arg, asm.DWord),
		asm.Add.Imm(asm.R3, off),
		asm.FnProbeReadKernel.Call(),
		asm.LoadMem(dst, asm.RFP, slot, size),
	)
}

// currentTaskWord emits: R1 = the 4-byte field at off in the current
// task's struct task_struct, loaded through its BTF pointer, or beyond a
// load's offset read from the kernel into the stack slot slot (0 when the
// read fails).
func currentTaskWord(b *bpfasm.Builder, off int32, slot int16) {
	if off <= math.MaxInt16 {
		b.Emit(
			asm.FnGetCurrentTaskBtf.Call(),
			asm.LoadMem(asm.R1, asm.R0, int16(off), asm.Word),
		)
		return
	}
	b.Emit(
		asm.StoreImm(asm.RFP, slot, 0, asm.Word),
		asm.FnGetCurrentTask.Call(),
		asm.Mov.Reg(asm.R3, asm.R0),
		asm.Add.Imm(asm.R3, off),
		asm.Mov.Reg(asm.R1, asm.RFP),
		asm.Add.Imm(asm.R1, int32(slot)),
		asm.Mov.Imm(asm.R2, 4),
		asm.FnProbeReadKernel.Call(),
		asm.LoadMem(asm.R1, asm.RFP, slot, asm.Word),
	)
}

// switchNr emits: rec.Nr = preempt << 32 | prev_state | prev->exit_state
// (prev is the current task), and rec's run delay and run time =
// prev->sched_info.run_delay and prev->se.sum_exec_runtime where the
// kernel has them (so; else 0).
func switchNr(b *bpfasm.Builder, exitStateOff int32, so schedOffs) {
	readTask(b, offRunDelay, 8, so.runDelay) // ctx->args[1]: prev
	readTask(b, offExecRuntime, 8, so.execRuntime)
	currentTaskWord(b, exitStateOff, -16)
	b.Emit(
		asm.LoadMem(asm.R2, rCtx, 24, asm.DWord),
		asm.LSh.Imm(asm.R2, 32),
		asm.RSh.Imm(asm.R2, 32),
		asm.Or.Reg(asm.R1, asm.R2),
		asm.LoadMem(asm.R2, rCtx, 0, asm.DWord),
		asm.And.Imm(asm.R2, 1),
		asm.LSh.Imm(asm.R2, 32),
		asm.Or.Reg(asm.R1, asm.R2),
		asm.StoreMem(rRec, offNr, asm.R1, asm.DWord),
	)
}

// switchKernelStack emits: the record's kernel call chain, the blocking
// path, for a switch outside a recorded call (rRegs the task's pt_regs):
// walked for a preemption (ctx->args[0]), which an interrupt makes
// anywhere in the kernel; otherwise the thread left the CPU from a
// schedule() of its own, and blockedKernelStack reuses the chain of its
// last such switch in the same call from the same user IP and SP in the
// same state. That covers a thread that blocks (epoll_wait in an event
// loop) and one that yields on its way back to user mode after a call
// that woke another thread (a server's sendmsg waking its client over
// loopback): each repeats one path, and its walk costs about a
// microsecond.
func switchKernelStack(b *bpfasm.Builder, m fds) {
	walk, done := b.NewLabel("sk_walk"), b.NewLabel("sk_done")
	b.Emit(
		asm.LoadMem(asm.R1, rCtx, 0, asm.DWord),
		asm.And.Imm(asm.R1, 1),
		asm.JNE.Imm(asm.R1, 0, walk),
	)
	blockedKernelStack(b, m, true)
	b.Emit(asm.Ja.Label(done))
	countWalk(b, m, walk, b.NewLabel("sk_counted"))
	stackID(b, m, 0, offKStack)
	b.Mark(done)
}

// inCallKernelStack emits, for a switch inside a recorded call: the
// record's kernel call chain, the blocking path, walked unless the
// thread's last walked switch inside a call blocked the same way: the same
// call (at slotNr) from the same user chain, the same state, not a
// preemption, and as deep in the kernel stack below the call's entry (the
// distance from the entry program's context to this one's): its id is
// reused. A server blocks in the same call from the same place over and
// over, and each walk of the kernel chain costs microseconds. Preemptions
// (which an interrupt makes anywhere) are walked each time.
func inCallKernelStack(b *bpfasm.Builder, m fds, slotNr int16) {
	const depthSlot = -104
	b.Emit(
		asm.LoadMem(asm.R1, asm.RFP, thrSlot, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, "ks_walk"),
		asm.LoadMem(asm.R2, rRec, offNr, asm.DWord),
		asm.Mov.Reg(asm.R3, asm.R2),
		asm.RSh.Imm(asm.R3, 32),
		asm.JNE.Imm(asm.R3, 0, "ks_walk"),
		// The depth, from the two contexts read back as numbers.
		asm.StoreMem(asm.R1, thSCtx, rCtx, asm.DWord),
		asm.LoadMem(asm.R4, asm.R1, thSCtx, asm.DWord),
		asm.LoadMem(asm.R3, asm.R1, thECtx, asm.DWord),
		asm.Sub.Reg(asm.R4, asm.R3),
		asm.StoreMem(asm.RFP, depthSlot, asm.R4, asm.DWord),
		// The call's slot: R5 = R1 + thKChains + (nr % kChains) * kChainSize.
		asm.LoadMem(asm.R5, asm.RFP, slotNr, asm.DWord),
		asm.And.Imm(asm.R5, kChains-1),
		asm.Mul.Imm(asm.R5, kChainSize),
		asm.Add.Reg(asm.R5, asm.R1),
		asm.LoadMem(asm.R3, asm.R5, thKChains+kcDepth, asm.DWord),
		asm.JNE.Reg(asm.R3, asm.R4, "ks_miss"),
		asm.LoadMem(asm.R3, asm.R5, thKChains+kcState, asm.DWord),
		asm.JNE.Reg(asm.R3, asm.R2, "ks_miss"),
		asm.LoadMem(asm.R2, asm.RFP, slotNr, asm.DWord),
		asm.LoadMem(asm.R3, asm.R5, thKChains+kcNr, asm.DWord),
		asm.JNE.Reg(asm.R3, asm.R2, "ks_miss"),
		asm.LoadMem(asm.R2, asm.R1, thUStack, asm.DWord),
		asm.LoadMem(asm.R3, asm.R5, thKChains+kcUser, asm.DWord),
		asm.JNE.Reg(asm.R3, asm.R2, "ks_miss"),
		asm.LoadMem(asm.R2, asm.R5, thKChains+kcStack, asm.DWord),
		asm.StoreMem(rRec, offKStack, asm.R2, asm.DWord),
		asm.Ja.Label("ks_done"),
	)
	countWalk(b, m, "ks_miss", "ks_count")
	stackID(b, m, 0, offKStack)
	b.Emit(
		asm.JSLT.Imm(asm.R0, 0, "ks_done"),
		asm.LoadMem(asm.R1, asm.RFP, thrSlot, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, "ks_done"),
		asm.LoadMem(asm.R2, asm.R1, thUStack, asm.DWord),
		// Found again, not kept: the verifier's bounds of the slot.
		asm.LoadMem(asm.R5, asm.RFP, slotNr, asm.DWord),
		asm.And.Imm(asm.R5, kChains-1),
		asm.Mul.Imm(asm.R5, kChainSize),
		asm.Add.Reg(asm.R1, asm.R5),
		asm.StoreMem(asm.R1, thKChains+kcUser, asm.R2, asm.DWord),
		asm.StoreMem(asm.R1, thKChains+kcStack, asm.R0, asm.DWord),
		asm.LoadMem(asm.R2, rRec, offNr, asm.DWord),
		asm.StoreMem(asm.R1, thKChains+kcState, asm.R2, asm.DWord),
		asm.LoadMem(asm.R2, asm.RFP, slotNr, asm.DWord),
		asm.StoreMem(asm.R1, thKChains+kcNr, asm.R2, asm.DWord),
		asm.LoadMem(asm.R2, asm.RFP, depthSlot, asm.DWord),
		asm.StoreMem(asm.R1, thKChains+kcDepth, asm.R2, asm.DWord),
		asm.Ja.Label("ks_done"),
	)
	b.Mark("ks_walk")
	stackID(b, m, 0, offKStack)
	b.Mark("ks_done")
}

// stackEntries is how many distinct call chains a recording keeps (user
// and kernel ones together); a chain beyond has no id (a negative one).
const stackEntries = 16384 + 2048

// Buffers of the scratch map, one per program that walks chains.
const (
	walkEnter  = 0
	walkExit   = 1
	walkSwitch = 2
	walkWaking = 3 // wakerStacksProgram
	walkTick   = 4 // tickProgram
	walkers    = 5
)

// Stack slots of stackID.
const (
	idSlot   = -360 // the chain's id
	walkSlot = -368 // the program's buffer
)

// Constants of the chains' hash: a multiply-xor of each address (each
// step a bijection of the hash so far, for the same address), then
// splitmix64's final mix.
const (
	hashSeed  uint64 = 0x9e3779b97f4a7c15
	hashMul   uint64 = 0xff51afd7ed558ccd
	hashFinal uint64 = 0xc4ceb9fe1a85ec53
)

// imm64 is x as a 64-bit immediate's bits.
func imm64(x uint64) int64 { return int64(x) }

// stackID emits: the record's word at off (and R0) = the id of the call
// chain (flags 0: kernel, BPF_F_USER_STACK: user), negative when it cannot
// be kept. The chain is walked into the program's buffer (bpf_get_stack,
// which zeroes what follows it), and its id is a hash of its addresses
// (62 bits, so that it is never negative); the chain is added to the
// stacks map under that id unless there already. The id names its
// chain's content: a chain that a reader reads while a program adds
// another, or that two programs add at once, keeps its id, which a stack
// map's (bpf_get_stackid) does not: a bucket a reader copies is empty for
// that time, and a chain of the same bucket walked then takes it and its
// id, which then names the chain put back.
func stackID(b *bpfasm.Builder, m fds, flags int32, off int16) {
	done := b.NewLabel("stackid")
	b.Emit(asm.StoreImm(asm.RFP, -8, int64(m.walker), asm.Word))
	b.Lookup(m.scratch, -8)
	b.Emit(
		asm.Mov.Reg(asm.R2, asm.R0),
		asm.Mov.Imm(asm.R0, -int32(unix.ENOMEM)),
		asm.JEq.Imm(asm.R2, 0, done),
		asm.StoreMem(asm.RFP, walkSlot, asm.R2, asm.DWord),
		asm.Mov.Reg(asm.R1, rCtx),
		asm.Mov.Imm(asm.R3, MaxStack*8),
		asm.Mov.Imm(asm.R4, flags),
		asm.FnGetStack.Call(),
		asm.JSLT.Imm(asm.R0, 0, done),
	)
	chainID(b, m, flags, off, done)
}

// chainID emits the end of stackID: the id of the chain in the program's
// buffer (its address at walkSlot, ending at a zero or MaxStack long),
// added to the stacks map unless there already, stored in the record's
// word at off and R0 (negative when the map has no room). The store is
// labelled store, where the caller's failures jump with R0 negative.
func chainID(b *bpfasm.Builder, m fds, flags int32, off int16, store string) {
	hashed, have := b.NewLabel("hashed"), b.NewLabel("have")
	b.Emit(
		asm.LoadMem(asm.R1, asm.RFP, walkSlot, asm.DWord),
		asm.LoadImm(asm.R2, imm64(hashSeed^uint64(flags)), asm.DWord),
		asm.LoadImm(asm.R4, imm64(hashMul), asm.DWord),
	)
	for i := int16(0); i < MaxStack; i++ {
		b.Emit(
			asm.LoadMem(asm.R3, asm.R1, i*8, asm.DWord),
			asm.JEq.Imm(asm.R3, 0, hashed),
			asm.Xor.Reg(asm.R2, asm.R3),
			asm.Mul.Reg(asm.R2, asm.R4),
		)
	}
	b.Emit(
		asm.Mov.Reg(asm.R3, asm.R2).WithSymbol(hashed),
		asm.RSh.Imm(asm.R3, 33),
		asm.Xor.Reg(asm.R2, asm.R3),
		asm.LoadImm(asm.R4, imm64(hashFinal), asm.DWord),
		asm.Mul.Reg(asm.R2, asm.R4),
		asm.Mov.Reg(asm.R3, asm.R2),
		asm.RSh.Imm(asm.R3, 33),
		asm.Xor.Reg(asm.R2, asm.R3),
		asm.RSh.Imm(asm.R2, 2),
		asm.StoreMem(asm.RFP, idSlot, asm.R2, asm.DWord),
	)
	b.Lookup(m.stacks, idSlot)
	b.Emit(
		asm.JNE.Imm(asm.R0, 0, have),
		asm.LoadMapPtr(asm.R1, m.stacks),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, idSlot),
		asm.LoadMem(asm.R3, asm.RFP, walkSlot, asm.DWord),
		asm.Mov.Imm(asm.R4, 1), // BPF_NOEXIST: another program may have added it since
		asm.FnMapUpdateElem.Call(),
		asm.JEq.Imm(asm.R0, 0, have),
		asm.JNE.Imm(asm.R0, -int32(unix.EEXIST), store),
		asm.LoadMem(asm.R0, asm.RFP, idSlot, asm.DWord).WithSymbol(have),
		asm.StoreMem(rRec, off, asm.R0, asm.DWord).WithSymbol(store),
	)
}

// Stack slots of userStackID.
const (
	fpSlot    = -376 // the frame pointer of the next frame
	frameSlot = -392 // a frame read: the caller's frame pointer, the return address
)

// userStackID is stackID for the current thread's user call chain, walked
// by the program itself along the frame pointers rather than by the
// kernel's helper (bpf_get_stack), the same chain: the user IP, then each
// frame's return address, from the registers' BP up the chain of saved
// frame pointers, to the first frame that cannot be read (the helper's
// access_ok and fault rules are bpf_probe_read_user's) or m.userDepth
// addresses. The helper's walk costs a system call entry several times
// what the program's own run time shows (docs/performance.md, "A
// recorded entry's user chain, walked by the program"). Threads in 32-bit
// mode (another code segment) or without an address space (exiting), and
// m.userDepth 0, take the helper.
func userStackID(b *bpfasm.Builder, m fds, off int16) {
	if m.userDepth <= 0 {
		stackID(b, m, 1<<8, off) // BPF_F_USER_STACK
		return
	}
	helper, done := b.NewLabel("uhelper"), b.NewLabel("udone")
	b.Emit(asm.StoreImm(asm.RFP, -8, int64(m.walker), asm.Word))
	b.Lookup(m.scratch, -8)
	b.Emit(
		asm.JEq.Imm(asm.R0, 0, helper),
		asm.StoreMem(asm.RFP, walkSlot, asm.R0, asm.DWord),
	)
	depth := min(m.userDepth, MaxStack)
	b.WalkUser(bpfasm.UserChain{Buf: walkSlot, FP: fpSlot, Frame: frameSlot, Zero: true,
		Depth: depth, MMOff: m.mmOff, Helper: helper})
	if depth < MaxStack {
		// A chain as deep as depth ends with a zero too.
		b.Emit(
			asm.LoadMem(asm.R2, asm.RFP, walkSlot, asm.DWord),
			storeImm64(asm.R2, int16(depth)*8, 0),
		)
	}
	chainID(b, m, 1<<8, off, b.NewLabel("ustore"))
	b.Emit(asm.Ja.Label(done))
	b.Mark(helper)
	stackID(b, m, 1<<8, off)
	b.Mark(done)
}

// wakingProgram: sched_waking(p) or, with newTask, sched_wakeup_new(p),
// raw tracepoints whose argument is the task being woken: a record of
// kind kindWaking, the woken thread's pid_tgid, the waker's in Nr when
// its process is traced (else 0) and the time, when p's process is
// traced; for sched_waking only when the current thread's (the waker, or
// the task an interrupt came on) is not, perf's events recording those,
// or when it is exiting (PF_EXITING in its flags, at flagsOff): a thread's
// perf events are gone before it wakes the threads that join it (the
// futex wake of its CLONE_CHILD_CLEARTID word, in exit_mm), so the
// program records that wake-up, with the waker.
func wakingProgram(m fds, tgidOff, pidOff, flagsOff int32, newTask bool) asm.Instructions {
	const pfExiting = 0x4 // include/linux/sched.h
	var b bpfasm.Builder
	b.Emit(
		asm.Mov.Reg(rCtx, asm.R1),
		storeImm64(asm.RFP, -32, 0), // the waker's pid_tgid when traced
	)
	follow.Emit(&b, m.tgids, "wk_traced")
	b.Emit(asm.Ja.Label("wk_woken"))
	b.Mark("wk_traced")
	if !newTask {
		// The waker's own: perf records it, unless the waker exits.
		currentTaskWord(&b, flagsOff, -40)
		b.Emit(
			asm.And.Imm(asm.R1, pfExiting),
			asm.JEq.Imm(asm.R1, 0, "wk_out"),
		)
	}
	b.Emit(
		asm.FnGetCurrentPidTgid.Call(),
		asm.StoreMem(asm.RFP, -32, asm.R0, asm.DWord),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("wk_woken"),
	)
	read := func(slot int16, off int32) {
		b.Emit(
			asm.Mov.Reg(asm.R1, asm.RFP),
			asm.Add.Imm(asm.R1, int32(slot)),
			asm.Mov.Imm(asm.R2, 4),
			asm.LoadMem(asm.R3, rCtx, 0, asm.DWord), // ctx->args[0]: the task
			asm.Add.Imm(asm.R3, off),
			asm.FnProbeReadKernel.Call(),
			asm.JNE.Imm(asm.R0, 0, "wk_out"),
		)
	}
	read(-16, tgidOff)
	b.Lookup(m.tgids, -16)
	b.Emit(asm.JEq.Imm(asm.R0, 0, "wk_out"))
	read(-24, pidOff)
	b.Emit(
		asm.LoadMem(rPT, asm.RFP, -16, asm.Word),
		asm.LSh.Imm(rPT, 32),
		asm.LoadMem(asm.R1, asm.RFP, -24, asm.Word),
		asm.Or.Reg(rPT, asm.R1),
		storeImm64(asm.RFP, timeSlot, 0),
	)
	reserve(&b, m, exitSize, kindWaking)
	b.Emit(
		asm.LoadMem(asm.R1, asm.RFP, -32, asm.DWord),
		asm.StoreMem(rRec, offNr, asm.R1, asm.DWord),
		storeImm64(rRec, offUStack, -1),
		storeImm64(rRec, offKStack, -1),
	)
	submit(&b, m)
	b.Emit(
		asm.Mov.Imm(asm.R0, 0).WithSymbol("wk_out"),
		asm.Return(),
	)
	return b.Ins
}

// exitProgram: sys_exit(regs, ret). The system call number is the
// registers' orig_ax, as the sys_exit tracepoint's id.
func exitProgram(m fds, kernel bool) asm.Instructions {
	m.walker = walkExit
	var b bpfasm.Builder
	traced(&b, m, true)
	stale(&b, m)
	b.Emit(
		asm.LoadMem(asm.R1, asm.RFP, thrSlot, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, "x_nostate"),
		asm.LoadMem(asm.R2, asm.R1, thCall, asm.DWord),
		asm.LSh.Imm(asm.R2, 1),
		asm.RSh.Imm(asm.R2, 1),
		asm.StoreMem(asm.R1, thCall, asm.R2, asm.DWord),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("x_nostate"),
	)
	recorded(&b, m, "x_not")
	reserve(&b, m, exitSize, kindExit)
	b.Emit(asm.LoadMem(rRegs, rCtx, 0, asm.DWord))
	readReg(&b, offNr, regOrigAX, false)
	kernelStack(&b, m, kernel, 2)
	submit(&b, m)
	if m.limited {
		b.Emit(asm.Mov.Imm(asm.R0, 0).WithSymbol("x_not"), asm.Return())
	}
	return b.Ins
}

// kernelStack emits: rec.kstack = the kernel call chain's id, or -1 when
// not asked. The chain at a system call tracepoint depends only on how the
// call entered the kernel (the entry code, do_syscall_64 or the 32-bit
// one, the tracing hook): the program walks it the first time for each
// entry (64-bit or 32-bit code segment; slot+0 or +1, slot 0 for entries,
// 2 for exits) and keeps its id in the kcache map, id+1 (0: not walked).
func kernelStack(b *bpfasm.Builder, m fds, kernel bool, slot int32) {
	b.Emit(
		asm.Mov.Imm(asm.R1, -1),
		asm.StoreMem(rRec, offKStack, asm.R1, asm.DWord),
	)
	if !kernel {
		return
	}
	b.Emit(
		asm.Mov.Reg(asm.R1, asm.RFP),
		asm.Add.Imm(asm.R1, -16),
		asm.Mov.Imm(asm.R2, 8),
		asm.Mov.Reg(asm.R3, rRegs),
		asm.Add.Imm(asm.R3, regCS),
		asm.FnProbeReadKernel.Call(),
		asm.LoadMem(asm.R1, asm.RFP, -16, asm.DWord),
		asm.Mov.Imm(asm.R2, slot),
		asm.JEq.Imm(asm.R1, userCS64, "cs64"),
		asm.Add.Imm(asm.R2, 1),
		asm.StoreMem(asm.RFP, -8, asm.R2, asm.Word).WithSymbol("cs64"),
	)
	b.Lookup(m.kcache, -8)
	b.Emit(
		asm.JEq.Imm(asm.R0, 0, "kdone"),
		asm.StoreMem(asm.RFP, -24, asm.R0, asm.DWord),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, "kwalk"),
		asm.Add.Imm(asm.R1, -1),
		asm.StoreMem(rRec, offKStack, asm.R1, asm.DWord),
		asm.Ja.Label("kdone"),
	)
	b.Mark("kwalk")
	stackID(b, m, 0, offKStack)
	b.Emit(
		asm.JSLT.Imm(asm.R0, 0, "kdone"),
		asm.LoadMem(asm.R1, asm.RFP, -24, asm.DWord),
		asm.Add.Imm(asm.R0, 1),
		asm.StoreMem(asm.R1, 0, asm.R0, asm.DWord),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("kdone"),
	)
}

// currentTaskStorage emits the lookup of the current thread's entry in the
// per-thread task storage (R0 the entry, or 0), with flags as
// bpf_task_storage_get's (BPF_LOCAL_STORAGE_GET_F_CREATE: 1).
func currentTaskStorage(b *bpfasm.Builder, m fds, flags int32) {
	b.Emit(
		asm.FnGetCurrentTaskBtf.Call(),
		asm.Mov.Reg(asm.R2, asm.R0),
		asm.LoadMapPtr(asm.R1, m.thr),
		asm.Mov.Imm(asm.R3, 0),
		asm.Mov.Imm(asm.R4, flags),
		asm.FnTaskStorageGet.Call(),
	)
}

// countWalk emits, at label, one more kernel chain walked (slotKWalks of
// the counters), going on at counted.
func countWalk(b *bpfasm.Builder, m fds, label, counted string) {
	b.Emit(asm.StoreImm(asm.RFP, -8, slotKWalks, asm.Word).WithSymbol(label))
	b.Lookup(m.lost, -8)
	b.Emit(
		asm.JEq.Imm(asm.R0, 0, counted),
		asm.Mov.Imm(asm.R1, 1),
		asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
	)
	b.Mark(counted)
}
