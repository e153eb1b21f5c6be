// Package recorder is culprit's perf-event collector: it launches a command or
// attaches to a process, samples CPU time over the whole process tree with
// cpu-clock perf events, completes each sample's user call chain by CFI
// unwinding of a copy of the user stack, and streams everything to a
// recording file. It only writes recordings; it never analyses them.
package recorder

import (
	"cmp"
	"debug/elf"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/collector"
	"github.com/culprit-dev/culprit/internal/elfx"
	"github.com/culprit-dev/culprit/internal/follow"
	"github.com/culprit-dev/culprit/internal/perf"
	"github.com/culprit-dev/culprit/internal/proc"
	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/sampleprog"
	"github.com/culprit-dev/culprit/internal/symbol"
	"github.com/culprit-dev/culprit/internal/syscallprog"
	"github.com/culprit-dev/culprit/internal/unwind"
)

// Call-graph modes.
const (
	CallGraphFP    = "fp"
	CallGraphDWARF = "dwarf"
)

// Options configure a recording.
type Options struct {
	Output     string        // recording file
	Frequency  int           // samples per second per thread (default 999)
	CallGraph  string        // "fp" or "dwarf"
	StackBytes int           // user stack bytes copied per sample (0: defaultStackBytes)
	RingPages  int           // data pages per CPU ring (0: chosen from the stack size)
	Duration   time.Duration // stop after this long (0: until the command exits or a signal)
	Tool       string        // "culprit <version>", stored in the recording
	// Events lists what to sample: "cpu" (default), "syscalls" (entry and
	// exit of every system call), "sched" (every context switch away),
	// "wakeup" (every wake-up a thread of the target makes, and every
	// switch onto a CPU; implies "sched").
	Events []string
	// EventPeriod samples one in EventPeriod syscall or switch events
	// (default 1: all), bounding the cost on syscall-heavy programs.
	EventPeriod int
	// SyscallLimit, above 0, is the most system calls per second each
	// thread has recorded where culprit's BPF program records them (beyond
	// a burst of SyscallBurst calls); the others are counted in the
	// samples' period: a recorded call's entry and exit stand for it and
	// the calls its thread made since its previous recorded one. 0
	// records every call.
	SyscallLimit int
	// SyscallBurst is the calls a thread may make at once beyond
	// SyscallLimit's rate.
	SyscallBurst int
	// SyscallWindowOn and SyscallWindowPeriod, both above 0, record system
	// calls (where culprit's BPF program records them) only in the first
	// SyscallWindowOn of every SyscallWindowPeriod: outside, a call costs
	// nothing. Each recorded call's period is scaled by PERIOD/ON, so
	// that counts are estimates of the whole run's. A call still open when
	// its window closes has no exit recorded.
	SyscallWindowOn, SyscallWindowPeriod time.Duration
	// SyscallWindowAbove, above 0 with the windows, records every call
	// (within SyscallLimit) while the traced threads make at most that
	// many calls a second, and in the windows only above it.
	SyscallWindowAbove int
	// SyscallUserStacks records system call events with their user frames
	// only: the kernel's frames at those tracepoints are always the same
	// entry path, and walking them is half of each event's cost.
	SyscallUserStacks bool
	// PerfEvents records system call and context switch events with
	// perf's tracepoint events even where culprit's BPF program
	// (internal/syscallprog; the default in fp mode, every event) could:
	// the same samples at about twice the cost.
	PerfEvents bool
	// State, when set, samples program state (expressions, rules, vProf
	// values) at each CPU sample, over what the sample carries: the
	// registers, a copy of the top of the user stack and, when State is a
	// collector.MemoryState, the memory a BPF program copies at the same
	// instant (the globals and heap it names; internal/sampleprog). What
	// none of these holds is recorded missing.
	State collector.State
	// UserOnly samples user mode only; it is chosen automatically when the
	// kernel refuses kernel call chains to an unprivileged user.
	UserOnly bool
	// Jitter varies each sampling interval at random by up to ±Jitter
	// percent (0 to 90): the events tick jitterTicks() times faster and a
	// BPF program keeps one tick in a random number of them.
	Jitter float64
	// ThreadClock samples CPU time with cpu-clock events on the target's
	// threads (one per thread and CPU, inherited by new threads and
	// children), as perf record -p does, instead of one event per CPU
	// whose samples a BPF program keeps only for the followed processes
	// (the default, as perf record -a, filtered). A thread's event restarts
	// its timer each time the thread is switched in, which on a VM is an
	// exit to the hypervisor: 2–3 µs per switch, +25–30% of the CPU time of
	// a server that switches once per request (docs/performance.md).
	// Chosen by itself where per-CPU events or BPF are refused.
	ThreadClock bool
	// FastStart cuts the launched command's wait for the kernel's first
	// task-bound perf event by an expedited RCU grace period (perf.FastStart).
	FastStart bool
	// TickClock samples CPU time at the scheduler's tick (HZ a second,
	// which setDefaults puts in Frequency) with culprit's BPF program on
	// the tick's timer, instead of with cpu-clock events, whose timer
	// interrupts add to the kernel's own (syscallprog's tick.go says
	// what it changes). fp mode only, without Jitter, ThreadClock or
	// State (the sampling program that reads values runs on cpu-clock
	// events), nor PerfEvents or EventPeriod.
	TickClock bool

	autoStack bool   // StackBytes is the default, which the sampling program may size per thread
	tickNs    uint64 // TickClock: the tick's period, ns
	ringGiven bool   // RingPages was given, not chosen
	// blockingChainsOnly: switches away without user chains, and with
	// the kernel chain only when the thread blocked (OpenSched:
	// syscallprog.Options.BlockingChainsOnly).
	blockingChainsOnly bool
	warnings           []string // said before the session existed
}

// NoStackCopy as Options.StackBytes copies no user stack (0 chooses one):
// samples then carry the kernel's frame-pointer chain alone, as perf
// record -g, and frameless leaves lose their callers.
const NoStackCopy = -1

// jitterTicks is the mean number of clock ticks per kept sample with
// jitter: enough for about five distinct intervals across ±Jitter%, at
// least 4 and at most 10, since every tick costs a timer interrupt (on a VM,
// an exit to the hypervisor: about 8 µs here, so 10 ticks per sample at
// 999 Hz cost about 8% of a CPU-bound run).
func (o *Options) jitterTicks() int {
	return min(10, max(4, int(math.Ceil(200/o.Jitter))))
}

// jitterRange is the range of ticks between kept samples.
func (o *Options) jitterRange() sampleprog.Jitter {
	if o.Jitter <= 0 {
		return sampleprog.Jitter{}
	}
	k := float64(o.jitterTicks())
	lo := max(1, uint32(math.Round(k*(1-o.Jitter/100))))
	hi := uint32(math.Round(k * (1 + o.Jitter/100)))
	return sampleprog.Jitter{Min: lo, Max: max(hi, lo)}
}

// tickPeriod is the clock period in ns with jitter.
func (o *Options) tickPeriod() uint64 {
	return uint64(1e9 / (float64(o.Frequency) * float64(o.jitterTicks())))
}

// Result summarises a finished recording.
type Result struct {
	Samples   uint64
	Lost      uint64
	Throttled uint64
	Truncated uint64 // samples whose user stack lost callers: not unwound to its outermost frame (dwarf mode), cut in frameless code (fp mode)
	NoCFI     uint64 // of Truncated in dwarf mode, those whose unwind stopped in code without unwind tables, not at the copy's end
	// EventTruncated is, of Truncated in fp mode, the samples of the
	// system call program (system call, switch and wake-up events, and
	// -F tick's CPU samples), whose copies hold sysCopyBytes until their
	// thread's proved too small (eventTop), not StackBytes.
	EventTruncated uint64
	Dropped        uint64 // samples not recorded because rules had stopped capturing
	// Syscalls is the system calls the target made while the BPF program
	// recorded them, and SyscallsRecorded those recorded (SyscallLimit).
	Syscalls, SyscallsRecorded uint64
	// MemoChains is the system call and switch events whose user chain
	// was a memo's (memo.go); MemoChecked the events that came with their
	// copy where a memo's words held, whose unwind was compared with the
	// memo's chain, and MemoMismatched those that differed.
	MemoChains, MemoChecked, MemoMismatched uint64
	// SwitchesBetween is the context switches of the target's threads
	// not recorded because they came between the system call windows
	// (without --events wakeup): each one recorded in a window stands for
	// the window's scale of them (syscallprog's betweenWindows says why).
	SwitchesBetween uint64
	Bytes           int64
	ExitCode        int // the launched command's exit code (128+signal if killed); -1 when attached
	Warnings        []string
}

// defaultStackBytes is how much user stack a sample copies unless
// --stack-size says. In dwarf mode the copy is all the unwinder has: 16 KiB.
// In fp mode it depends on the program (stackFor; auto is then true), with
// expressions, rules and values as without (their caller frames' slots are
// in the same copy): fpStackBytes until then, so that the rings are sized
// for the larger.
func (o *Options) defaultStackBytes() (n int, auto bool) {
	if o.CallGraph == CallGraphDWARF {
		return 16384, false
	}
	return fpStackBytes, true
}

// fpStackBytes is fp mode's full stack copy.
const fpStackBytes = 8192

// stackFor is fp mode's stack copy for the program exe. The copy only
// repairs what the frame-pointer chain skips, and what it skips is not the
// program's choice alone: a C program built with frame pointers still runs
// in the libraries it calls, which on Debian keep none (libc, zlib,
// libbz2), and a frame of a page or more (a block, BUFSIZ, PATH_MAX,
// libbz2's sort tables) hides every caller above it from a 4 KiB copy
// (bzip2 built with frame pointers reached main in 56% of its samples with
// 4 KiB; vprof_wrong.c, -O2, in 28–44%): fpStackBytes, which the sampling
// program then sizes per thread (stackcopy.go). Go programs get 4 KiB,
// copied by perf: every Go frame keeps rbp, the copy repairs only a cgo or
// libc leaf's caller, and a thread runs one goroutine's stack after
// another, so no top of its stack exists to size copies by.
func stackFor(exe string) int {
	f, err := elf.Open(exe)
	if err != nil {
		return fpStackBytes
	}
	defer f.Close()
	if elfx.IsGo(f) {
		return 4096
	}
	return fpStackBytes
}

func (o *Options) setDefaults() error {
	if o.TickClock {
		if err := o.tickDefaults(); err != nil {
			return err
		}
	}
	if o.Frequency == 0 {
		o.Frequency = 999
	}
	if o.Frequency < 1 || o.Frequency > 100000 {
		return fmt.Errorf("frequency %d Hz is out of range: use 1 to 100000 (kernel.perf_event_max_sample_rate is %s)", o.Frequency, perf.ReadSysctl("kernel/perf_event_max_sample_rate"))
	}
	switch o.CallGraph {
	case "":
		o.CallGraph = CallGraphFP
	case CallGraphFP, CallGraphDWARF:
	default:
		return fmt.Errorf("unknown call-graph mode %q: use fp or dwarf", o.CallGraph)
	}
	if o.Jitter < 0 || o.Jitter > 90 {
		return fmt.Errorf("jitter %g%% is out of range: use 0 to 90", o.Jitter)
	}
	if o.Jitter > 0 && o.Frequency*o.jitterTicks() > 100000 {
		return fmt.Errorf("with --jitter %g the clock ticks %d times per sample: use a frequency of at most %d Hz", o.Jitter, o.jitterTicks(), 100000/o.jitterTicks())
	}
	switch o.StackBytes {
	case NoStackCopy:
		o.StackBytes = 0
	case 0:
		o.StackBytes, o.autoStack = o.defaultStackBytes()
	}
	if o.StackBytes < 0 || o.StackBytes > 65528 {
		return fmt.Errorf("stack size %d is out of range: use 0 to 65528 bytes", o.StackBytes)
	}
	o.StackBytes &^= 7
	if o.EventPeriod == 0 {
		o.EventPeriod = 1
	}
	if o.EventPeriod < 0 {
		return fmt.Errorf("event period %d must be positive", o.EventPeriod)
	}
	if o.SyscallLimit < 0 || o.SyscallLimit > 1e9 {
		return fmt.Errorf("system call limit %d is out of range: use 0 (every call) to 1000000000 a second", o.SyscallLimit)
	}
	if o.SyscallBurst < 0 || o.SyscallBurst > 1<<20 {
		return fmt.Errorf("system call burst %d is out of range: use 0 to %d", o.SyscallBurst, 1<<20)
	}
	if err := CheckSyscallWindows(o.SyscallWindowOn, o.SyscallWindowPeriod); err != nil {
		return err
	}
	o.ringGiven = o.RingPages != 0
	if o.RingPages == 0 {
		stack := o.StackBytes
		if o.CallGraph == CallGraphFP && o.autoStack && o.State == nil {
			// For programs without frame pointers the sampling program
			// copies the stacks into a ring of its own (stackcopy.go):
			// this one is sized for perf's 4 KiB copy of the others,
			// which still holds nearly half a second of 8 KiB copies
			// where the program cannot load.
			stack = min(stack, 4096)
		}
		cpus, err := onlineCPUs()
		if err != nil {
			return err
		}
		o.RingPages = ringPages(o.Frequency, stack, len(cpus))
	}
	if o.RingPages&(o.RingPages-1) != 0 {
		return fmt.Errorf("ring size of %d pages is not a power of two", o.RingPages)
	}
	if o.Output == "" {
		o.Output = "culprit.rec"
	}
	return nil
}

// ringSeconds is how long a CPU's ring holds samples at the full rate. A
// CPU samples at most Frequency times per second of CPU time, whatever its
// threads. The recorder drains every 50 ms (pollInterval) and when a ring
// is a quarter full, but on a loaded machine (load 30 on two CPUs) it may
// wait a tenth of a second and more for a CPU while the kernel keeps
// writing: half a second is five such waits (rings for a tenth of a
// second lost about half of a redis server's samples with --values).
const ringSeconds = 0.5

// sampleOverhead bounds what a cpu-clock sample carries besides its stack
// copy: the header and fixed fields (about 80 bytes), the user registers
// (17 × 8) and the kernel's call chain (up to 127 frames of 8 bytes).
const sampleOverhead = 80 + 17*8 + 128*8

// ringPages sizes a CPU's ring for ringSeconds of samples at frequency
// with a stack copy of stackBytes: a power of two of at least 64 pages
// (256 KiB) and at most ringCap(cpus). Mapping a ring is on the way to
// starting the command (about 0.25 ms per MiB on the project's VMs, while
// the command starts on the other CPU).
func ringPages(frequency, stackBytes, cpus int) int {
	need := int(float64(frequency) * float64(stackBytes+sampleOverhead) * ringSeconds)
	pages, most := 64, ringCap(cpus)
	for pages*os.Getpagesize() < need && pages < most {
		pages *= 2
	}
	return pages
}

// ringCap is the largest ring, in pages, a CPU gets when there are cpus of
// them: rings share ringBudget, and each may take 16 MiB (dwarf mode's
// 16 KiB copies at 999 Hz) whatever their number. The budget is what lets
// a high rate keep its half second on a small machine: 9999 Hz with 8 KiB
// copies writes 94 MB a second on each busy CPU, which a 16 MiB ring holds
// for 0.18 s, less than one of the recorder's waits for a CPU on a loaded
// machine; on two CPUs each ring may take 64 MiB.
func ringCap(cpus int) int {
	per := ringBudget / max(cpus, 1) / os.Getpagesize()
	most := 4096
	for most*2 <= per {
		most *= 2
	}
	return most
}

// ringBudget bounds the rings of all CPUs together when each is larger
// than 16 MiB.
const ringBudget = 128 << 20

// minRingPages is the smallest ring taken when the locked-memory limits
// refuse the size asked for.
const minRingPages = 8

// mainExe is the executable a recording starts with: the attached
// process's, or the command's as the shell would find it; "" if unknown.
func mainExe(meta recording.Meta) string {
	if meta.AttachPID > 0 {
		return proc.Exe(meta.AttachPID)
	}
	if len(meta.Command) > 0 {
		if p, err := exec.LookPath(meta.Command[0]); err == nil {
			if abs, err := filepath.Abs(p); err == nil {
				return abs
			}
		}
	}
	return ""
}

// onlineCPUs lists the CPUs the kernel has online; read once (Launch needs
// them twice before the command starts).
var onlineCPUs = sync.OnceValues(readOnlineCPUs)

func readOnlineCPUs() ([]int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		n := runtime.NumCPU()
		cpus := make([]int, n)
		for i := range cpus {
			cpus[i] = i
		}
		return cpus, nil
	}
	var cpus []int
	for _, part := range strings.Split(strings.TrimSpace(string(b)), ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("parsing online CPUs %q: %w", b, err)
		}
		z := a
		if isRange {
			if z, err = strconv.Atoi(hi); err != nil {
				return nil, fmt.Errorf("parsing online CPUs %q: %w", b, err)
			}
		}
		for c := a; c <= z; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// monotonic returns CLOCK_MONOTONIC in ns, the clock of perf samples.
func monotonic() uint64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Nano())
}

// session is one recording in progress.
type session struct {
	smallRings [2]int // the smallest ring mapped below the size wanted, and that size (pages)
	o          Options
	w          *recording.Writer
	meta       recording.Meta // written by begin
	pcs        []uint64       // the unwinder's buffer, reused from sample to sample
	dec        perf.Decoder   // samples decoded by a drain, reused by the next
	cpus       []int
	kinds      []eventKind // what is sampled; kinds[0] also reports mmap/comm/task
	rings      []ring
	events     []*perf.Event
	res        Result

	spaces      map[uint32]*proc.Space // address spaces by pid
	ended       map[uint32]uint64      // processes that ended, by pid: the drain that saw it (endProcess)
	endedSpaces *goneSpaces            // with a session beside another collector: the spaces dropEnded let go
	drains      uint64                 // drains begun
	objs        collector.Objects
	ktab        *symbol.KernelTable // loaded in the background (kcache.go)
	kready      chan struct{}       // closed when ktab and kwarn are set; nil: not started
	kloaded     bool                // kready was waited for
	kwarn       string
	kpending    []uint64        // kernel addresses waiting for ktab
	kseen       map[uint64]bool // kernel function starts already written
	kaddr       map[uint64]bool // kernel addresses already resolved

	// follow is the set of processes followed in the kernel (nil without
	// BPF); perCPU says CPU time is sampled by one cpu-clock event per CPU
	// that it filters (cpuClocks: opened), the mmap, comm and task records
	// then coming from one dummy event per CPU (sidebandCPU: opened),
	// those of the processes in followed kept (percpu.go).
	follow        *follow.Set
	threads       map[uint32]map[uint32]bool // live threads by process, for processEnded
	perCPU        bool
	cpuClocks     bool
	clocksStarted bool
	sidebandCPU   bool
	followed      map[uint32]bool

	buf   []byte   // the records of a drain that wrap around their ring's end
	recs  [][]byte // a ring's records, in the ring's memory or buf (perf.Ring.Peek)
	items []item
	later []item // records stamped after what the last drain handled (orderedUntil)
	pidfd int    // of the target process, -1 when none
	// waiter is what the loop waits in between rounds (wait.go).
	waiter waiter

	state collector.State       // nil: no program state sampled
	mem   collector.MemoryState // state, when it says what memory to copy
	snap  *snaps                // BPF memory snapshots at samples; nil: none
	// snapLoad is the BPF program loading in the background (nil: not
	// loading); clockEvents are the cpu-clock events it is attached to, the
	// first attached of them so far.
	snapLoad    *snapLoad
	clockEvents []*perf.Event
	attached    int
	// stacks: the sampling program copies the cpu-clock samples' stacks
	// (stackcopy.go); nil: perf does.
	stacks *stackTops
	// outer: each thread's frames beyond main's (outer.go)
	outer map[uint32]outerFrames
	// exes is each process's executable, for expression specs and rules;
	// after an exec it is the first executable file the kernel maps.
	exes     map[uint32]string
	awaiting map[uint32]bool // exec'd, executable mapping not seen yet

	// sys records system call events when they go through the BPF
	// program (syscalls.go); nil when through perf or not recorded.
	sys *syscallprog.Tracer
	// tracing trims the tracing code off the kernel chains of perf's
	// tracepoint samples; nil when no tracepoint is sampled.
	tracing   *syscallprog.TracingCode
	sysBuf    sysBuffer  // the stack copies of the drain's records
	sysEvents []sysEvent // the drain's records
	sysStacks map[int64][]uint64
	sysTops   map[uint32]threadTop // by thread: the top set in the system call program (eventTop)
	memos     *memos               // the event chains the system call program reuses (memo.go)
	sysLast   uint64               // time of the last record the program's ring kept
	sysLost   uint64               // records it dropped, as reported so far
	// sysLimit and sysBurst: the system calls per second a thread records
	// beyond a burst (Options.SyscallLimit), 0 when every call is.
	sysLimit, sysBurst int
	// sysWindows: system calls are recorded in windows (or may be,
	// above a rate); each recorded call's weight is multiplied by its
	// window's scale (syscallprog's Tracer.Scale), sysFrac the fraction
	// carried to the next, so that weights add up to the scaled counts.
	sysWindows bool
	sysFrac    float64
	// switchFrac is sysFrac's twin for the switches' weights
	// (switchWeight).
	switchFrac float64
	// ticks: CPU samples come from the program at the scheduler's tick
	// (Options.TickClock); tickFail says why they cannot.
	ticks    bool
	tickFail error
	// sysWindowsOut: the windows written so far (writeWindows).
	sysWindowsOut int
	sysRegs       []uint64                // eventUser's registers, reused
	pending       map[uint32]*pendingCall // by TID
	// gone: the threads whose exit perf reported, oldest first, their
	// pending call kept for their last switch, which the BPF ring gives
	// after perf's exit record; the oldest are let go (goneKept).
	gone []uint32
	// onSched, when set, is shown each scheduler event written (Sched.OnEvent).
	onSched func(smp recording.Sample, user []uint64)
}

type item struct {
	time uint64
	rec  any
	kind *eventKind
	// since and cpu place a *perf.Lost: the ring's previous record's time
	// and the ring's CPU.
	since uint64
	cpu   uint32
}

// eventKind is one kind of sampled event.
type eventKind struct {
	event recording.Event
	tp    *perf.Tracepoint // nil for cpu-clock
	arg   string           // tracepoint field stored as Sample.Arg
	// switches: its events also report switches onto a CPU
	// (EventSwitchIn samples).
	switches bool
	// userChain: its samples need no kernel call chain. A wake-up's
	// kernel frames are the waking primitive, which the woken thread's own
	// switch away already shows; at the system call tracepoints they are
	// always the same few (the entry, do_syscall_64, the tracing hook),
	// left out with Options.SyscallUserStacks. Walking them is half of
	// each event's cost (docs/performance.md).
	userChain bool
	// sidebandOnly: the BPF program records these events
	// (syscallprog.Options.WakerStacks) and the switches onto a CPU
	// (syscallprog.Options.SwitchIns); perf's event reports only the
	// sideband (mappings, names, forks), as a dummy event.
	sidebandOnly bool
	// viaBPF: recorded by the system call program, not a perf event.
	viaBPF bool
	// newTask: the wake-ups of new threads (sched_wakeup_new).
	newTask bool
}

// ring is a CPU's ring buffer for one event kind.
type ring struct {
	*perf.Ring
	kind *eventKind
	// handled: how many of the records a drain peeked it handled; the
	// others stay in the ring for the next (orderedUntil).
	handled int
	// last is the time of the last record read from the ring (at first,
	// when it was mapped): records the kernel reports lost were dropped
	// after it (recording.Lost.Since).
	last uint64
}

// Event names accepted by Options.Events.
const (
	EventsCPU      = "cpu"
	EventsSyscalls = "syscalls"
	EventsSched    = "sched"
	EventsWakeup   = "wakeup"
)

// eventKinds resolves the --events list.
func eventKinds(names []string, syscallUser bool) ([]eventKind, error) {
	if len(names) == 0 {
		names = []string{EventsCPU}
	}
	var out []eventKind
	seen := map[string]bool{}
	for i := 0; i < len(names); i++ {
		n := strings.TrimSpace(names[i])
		if seen[n] {
			continue
		}
		seen[n] = true
		switch n {
		case EventsCPU:
			out = append(out, eventKind{event: recording.EventCPU})
		case EventsSyscalls:
			for _, tp := range []struct {
				name string
				ev   recording.Event
			}{{"raw_syscalls:sys_enter", recording.EventSyscallEnter}, {"raw_syscalls:sys_exit", recording.EventSyscallExit}} {
				t, err := perf.OpenTracepoint(tp.name)
				if err != nil {
					return nil, err
				}
				out = append(out, eventKind{event: tp.ev, tp: t, arg: "id", userChain: syscallUser})
			}
		case EventsSched:
			t, err := perf.OpenTracepoint("sched:sched_switch")
			if err != nil {
				return nil, err
			}
			out = append(out, eventKind{event: recording.EventSwitch, tp: t, arg: "prev_state"})
		case EventsWakeup:
			// A wake-up is only told from a preemption, and a thread's
			// time off the CPU only split, with the switches away.
			names = append(names, EventsSched)
			t, err := perf.OpenTracepoint("sched:sched_waking")
			if err != nil {
				return nil, err
			}
			out = append(out, eventKind{event: recording.EventWakeup, tp: t, arg: "pid", switches: true, userChain: true})
			// A new thread's first wake-up (wake_up_new_task, by the
			// thread that created it) is no sched_waking: without it
			// the thread's wait for its first CPU is counted nowhere.
			// Where culprit's BPF program records the wake-ups, it
			// records these (syscallsViaBPF drops this kind).
			t, err = perf.OpenTracepoint("sched:sched_wakeup_new")
			if err != nil {
				return nil, err
			}
			out = append(out, eventKind{event: recording.EventWakeup, tp: t, arg: "pid", userChain: true, newTask: true})
		default:
			return nil, fmt.Errorf("unknown event %q: use cpu, syscalls, sched or wakeup (comma-separated)", n)
		}
	}
	return out, nil
}

// newSession opens the output file and writes what every recording starts with.
func newSession(o Options, meta recording.Meta) (*session, error) {
	cpus, err := onlineCPUs()
	if err != nil {
		return nil, err
	}
	kinds, err := eventKinds(o.Events, o.SyscallUserStacks)
	if err != nil {
		return nil, err
	}
	w, err := recording.CreateLate(o.Output)
	if err != nil {
		return nil, err
	}
	s := &session{o: o, w: w, cpus: cpus, kinds: kinds,
		spaces: map[uint32]*proc.Space{},
		kseen:  map[uint64]bool{}, kaddr: map[uint64]bool{}}
	s.res.ExitCode = -1
	s.res.Warnings = append(s.res.Warnings, o.warnings...)
	s.pidfd = -1
	s.state = o.State
	s.mem, _ = o.State.(collector.MemoryState)
	s.startFollowing()
	if s.mem != nil || o.Jitter > 0 || s.wantsBPFStack() {
		s.startSnapshots(mainExe(meta))
	}
	s.exes, s.awaiting = map[uint32]string{}, map[uint32]bool{}
	s.syscallsViaBPF()
	if s.tickFail != nil {
		s.abandon()
		return nil, s.tickFail
	}
	for _, k := range s.kinds {
		if k.tp != nil && !k.userChain && s.tracing == nil {
			s.tracing = syscallprog.NewTracingCode()
		}
	}
	meta.StartUnixNano = time.Now().UnixNano()
	meta.StartClock = monotonic()
	s.meta = meta
	return s, nil
}

// begin writes the recording's first records: the Meta record, then the
// vDSO image (so that vDSO frames can be named and unwound). Launch calls it
// once the command runs.
func (s *session) begin() {
	meta := s.meta
	o := s.o
	var uts unix.Utsname
	_ = unix.Uname(&uts)
	host, _ := os.Hostname()
	meta.Tool = o.Tool
	meta.Hostname = host
	meta.KernelRelease = unix.ByteSliceToString(uts.Release[:])
	meta.Arch = runtime.GOARCH
	var evs []string
	for _, k := range s.kinds {
		if k.tp == nil {
			evs = append(evs, "cpu-clock")
		} else {
			evs = append(evs, k.tp.Name)
		}
	}
	meta.Event = strings.Join(evs, ",")
	meta.Extra = map[string]string{}
	if o.EventPeriod > 1 {
		meta.Extra["event_period"] = strconv.Itoa(o.EventPeriod)
	}
	switch {
	case s.ticks:
		meta.Extra["cpu_clock"] = "tick"
		meta.Extra[recording.ExtraUserChain] = recording.UserChainBPF
		if o.StackBytes > 0 {
			meta.Extra[recording.ExtraStackCopy] = recording.StackCopyThreadTop
		}
	case s.perCPU:
		meta.Extra["cpu_clock"] = "per-cpu"
	}
	if s.stacks != nil {
		meta.Extra[recording.ExtraStackCopy] = recording.StackCopyThreadTop
		if s.snap.tk.WalksUser() {
			meta.Extra[recording.ExtraUserChain] = recording.UserChainBPF
		}
	}
	if s.sys != nil && s.sysLimit > 0 {
		meta.Extra[recording.ExtraSyscallLimit] = fmt.Sprintf("%d/%d", s.sysLimit, s.sysBurst)
	}
	if s.sys != nil && s.sysWindows {
		meta.Extra[recording.ExtraSyscallWindows] = fmt.Sprintf("%v/%v", o.SyscallWindowOn, o.SyscallWindowPeriod)
		if o.SyscallWindowAbove > 0 {
			meta.Extra[recording.ExtraSyscallWindows] += fmt.Sprintf(">%d", o.SyscallWindowAbove)
		}
	}
	meta.Frequency = o.Frequency
	meta.CallGraph = o.CallGraph
	meta.StackBytes = o.StackBytes
	s.write(&meta)
	s.addVDSO()
	if err := s.w.Flush(); err != nil {
		s.warn("writing the recording: %v", err)
	}
}

func (s *session) warn(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	for _, w := range s.res.Warnings {
		if w == msg {
			return
		}
	}
	s.res.Warnings = append(s.res.Warnings, msg)
}

// addVDSO stores the vDSO image so that vDSO frames can be named and unwound.
func (s *session) addVDSO() {
	if err := s.objs.AddVDSO(s.w); err != nil {
		s.warn("writing the recording: %v", err)
	}
}

// smallRing notes a ring smaller than wanted; finish says so if samples
// were lost.
func (s *session) smallRing(r *perf.Ring, want int) {
	if r.Pages() < want && (s.smallRings == [2]int{} || r.Pages() < s.smallRings[0]) {
		s.smallRings = [2]int{r.Pages(), want}
	}
}

// ring returns the ring of a CPU for an event kind, or nil.
func (s *session) ring(cpu int, k *eventKind) *perf.Ring {
	for _, r := range s.rings {
		if r.Event.CPU == cpu && r.kind == k {
			return r.Ring
		}
	}
	return nil
}

// openEvents opens, for each thread in tids, one inheriting event per CPU and
// event kind; the events of one CPU and kind share one ring.
func (s *session) openEvents(tids []int) error {
	if err := s.decideStacks(); err != nil {
		return err
	}
	sideband := false
	for i := range s.kinds {
		if s.kinds[i].viaBPF && s.kinds[i].event != recording.EventCPU {
			// The ticks' kind opens the CPUs' dummy events (openKind).
			continue
		}
		if err := s.openKind(tids, &s.kinds[i], sideband); err != nil {
			return err
		}
		sideband = true
	}
	if s.sys != nil {
		if err := s.traceSyscalls(tids); err != nil {
			return err
		}
	}
	if err := s.attachSnapshots(); err != nil {
		return err
	}
	return s.startCPUClocks()
}

func (s *session) openKind(tids []int, k *eventKind, noSideband bool) error {
	cfg := perf.Config{Frequency: s.o.Frequency, StackBytes: s.o.StackBytes, Inherit: true,
		ExcludeKernel: s.o.UserOnly, MaxStack: 127,
		Tracepoint: k.tp, Period: uint64(s.o.EventPeriod), NoSideband: noSideband,
		ContextSwitch: k.switches, NoKernelChain: k.userChain}
	if k.sidebandOnly {
		cfg.Tracepoint, cfg.Sideband = nil, true
	}
	if k.tp == nil && s.o.Jitter > 0 {
		cfg.ClockPeriod = s.o.tickPeriod()
	}
	if s.o.CallGraph == CallGraphFP && s.state == nil {
		// The stack copy only repairs the first frames, by CFI, which needs
		// BP, SP and IP, BX in the dynamic loader's trampolines and DI in
		// glibc's vfork: 0.5 µs less per sample than all 17 registers.
		cfg.UserRegs = perf.RegsUnwind
	}
	if k.tp == nil && s.stacks != nil {
		// The sampling program copies it: the threads' events start once
		// it is attached (attachSnapshots), lest a sample go without.
		cfg.StackBytes = 0
		cfg.Disabled = !s.perCPU
		// And walks the user call chain, where it can (WalksUser).
		cfg.NoUserChain = s.snap.tk.WalksUser()
	}
	pages := s.o.RingPages
	if k.tp != nil {
		// System calls and switches can come a million a second, in bursts:
		// give them big rings, and in fp mode (where the copy only repairs
		// the first frames) a smaller stack copy.
		pages = max(pages, 2048)
		if s.o.CallGraph == CallGraphFP {
			cfg.StackBytes = min(cfg.StackBytes, 1024)
		}
	}
	if k.tp == nil && s.perCPU && !s.cpuClocks && !k.viaBPF {
		if err := s.openCPUClocks(cfg, k, pages); err != nil {
			return err
		}
	}
	if k.tp == nil && s.perCPU {
		// CPU time comes from the per-CPU events, and what the samples
		// need (mappings, names, forks) from dummy events of the CPUs,
		// unless another kind's events report it.
		if noSideband || s.sidebandCPU {
			return nil
		}
		cfg.Sideband = true
		return s.openSidebandCPU(cfg, k, pages)
	}
	for _, tid := range tids {
		for _, cpu := range s.cpus {
			ev, err := perf.Open(cfg, tid, cpu, -1)
			if err != nil && errors.Is(err, perf.ErrPermission) && !cfg.ExcludeKernel {
				// Unprivileged users may still sample their own processes in user mode.
				cfg.ExcludeKernel = true
				s.o.UserOnly = true
				ev, err = perf.Open(cfg, tid, cpu, -1)
				if err == nil {
					s.warn("kernel frames not recorded: %s", perf.PermissionAdvice(true))
				}
			}
			if err != nil {
				if errors.Is(err, perf.ErrNoSuchThread) {
					break // the thread ended meanwhile
				}
				return err
			}
			s.events = append(s.events, ev)
			if k.tp == nil && !s.perCPU {
				s.clockEvents = append(s.clockEvents, ev)
			}
			if err := s.output(ev, cpu, k, pages); err != nil {
				return err
			}
		}
	}
	return nil
}

// openCPUClocks opens the cpu-clock event of each CPU, which samples
// whatever runs there and keeps, in its BPF program, the samples of the
// followed processes. Where the kernel refuses per-CPU events (a user
// without CAP_PERFMON), it closes what it opened and falls back to events
// on the threads.
func (s *session) openCPUClocks(cfg perf.Config, k *eventKind, pages int) error {
	// A tick that finds the CPU idle is never kept (the idle task is no
	// followed process), but the kernel would prepare its sample, the
	// idle loop's kernel call chain, and run the program to drop it: a
	// quarter of the program's runs under a loopback server's load
	// (docs/performance.md, "Idle ticks").
	cfg.Inherit, cfg.NoSideband, cfg.Disabled, cfg.ExcludeIdle = false, true, true, true
	var evs []*perf.Event
	for _, cpu := range s.cpus {
		ev, err := perf.Open(cfg, -1, cpu, -1)
		if err != nil && cfg.ExcludeIdle && !errors.Is(err, perf.ErrPermission) {
			// A kernel that refuses exclude_idle here samples the idle
			// ticks as before.
			cfg.ExcludeIdle = false
			ev, err = perf.Open(cfg, -1, cpu, -1)
		}
		if err != nil {
			for _, e := range evs {
				e.Close()
			}
			if errors.Is(err, perf.ErrPermission) {
				s.perCPU = false
				return nil
			}
			return err
		}
		evs = append(evs, ev)
	}
	s.cpuClocks = true
	for i, ev := range evs {
		s.events = append(s.events, ev)
		s.clockEvents = append(s.clockEvents, ev)
		if err := s.output(ev, s.cpus[i], k, pages); err != nil {
			return err
		}
	}
	return nil
}

// output sends an event's records to its CPU's ring for its kind, mapping
// the ring if it is the first.
func (s *session) output(ev *perf.Event, cpu int, k *eventKind, pages int) error {
	if r := s.ring(cpu, k); r != nil {
		return ev.SetOutput(r.Event)
	}
	r, err := perf.MapRingAtMost(ev, pages, minRingPages)
	if err != nil {
		return err
	}
	s.smallRing(r, pages)
	s.rings = append(s.rings, ring{Ring: r, kind: k, last: monotonic()})
	return nil
}

// processState is what synthesize writes of a process found running or
// stopped at its exec: its threads' names and its executable mappings.
type processState struct {
	pid   int
	time  uint64 // when it was read
	exe   string
	tids  []int
	comms []string
	maps  []proc.Mapping
}

// readProcess reads a process's state; it is quick, so that a launched
// command is released soon after, and synthesize does the rest.
func readProcess(pid int) (processState, error) {
	p := processState{pid: pid, time: monotonic(), exe: proc.Exe(pid)}
	tids, err := proc.Tasks(pid)
	if err != nil {
		return p, err
	}
	p.tids = tids
	for _, tid := range tids {
		p.comms = append(p.comms, proc.Comm(pid, tid))
	}
	p.maps, err = proc.Maps(pid)
	return p, err
}

// synthesize writes the Comm and Mmap records of a process's state: the
// kernel reports only what happens after the events are opened.
func (s *session) synthesize(p processState) {
	now := p.time
	pid := uint32(p.pid)
	if p.exe != "" {
		s.exes[pid] = p.exe
		s.plan(pid, p.exe)
	}
	for i, tid := range p.tids {
		s.handle(&perf.Comm{Header: perf.Header{PID: pid, TID: uint32(tid), Time: now}, Name: p.comms[i]})
	}
	for _, m := range p.maps {
		if !m.Exec() {
			continue
		}
		s.handle(&perf.Mmap{Header: perf.Header{PID: pid, TID: pid, Time: now},
			Start: m.Start, Len: m.End - m.Start, Pgoff: m.Offset, Prot: unix.PROT_READ | unix.PROT_EXEC, Path: m.Path})
	}
}

// drain reads every ring, orders the records by time and handles those
// stamped before it began (orderedUntil); the others wait for the next
// drain.
func (s *session) drain() error { return s.drainUntil(orderedUntil(monotonic())) }

// drainAll is the last drain: every record is handled.
func (s *session) drainAll() error { return s.drainUntil(math.MaxUint64) }

// orderMargin is how long before a drain begins a record must be stamped
// for that drain to handle it (orderedUntil).
const orderMargin = 5 * time.Millisecond

// orderedUntil is the last time stamp a drain that begins at now handles.
// The rings are read one after the other, and the kernel goes on writing
// into those not read yet: a drain holds records of the last ring it reads
// stamped later than any of the first one's, whose records of the same
// moments wait for the next drain. Handled in the order of one drain, a
// record of the first ring (an mmap, a fork, an exec) would come after the
// samples of the last that follow it in time: they would be unwound and
// written without the mapping or the process they belong to (a return
// probe's first hit maps the [uprobes] page on one CPU while the thread's
// next samples land in another's ring; a drain that copies tens of
// megabytes from the first ring leaves a second's worth in the last). A
// record stamped before the drain began was in its ring when the drain
// read it: the kernel writes a record within microseconds of its stamp,
// and orderMargin allows for a virtual CPU stalled in between. So each
// drain handles the records stamped before that, all rings' in time
// order, and leaves the later ones for the next, which reads the rest of
// their moments: a perf ring's in the ring (the drain gives back only the
// space of those it handled), the BPF ring buffers' copied (detach). The
// recording is in time order across drains (perf record's finished rounds
// order its reports the same way).
func orderedUntil(now uint64) uint64 {
	return now - min(now, uint64(orderMargin))
}

// drainUntil is drain handling the records stamped up to until.
func (s *session) drainUntil(until uint64) error {
	s.drains++
	s.buf = s.buf[:0]
	s.items = s.items[:0]
	s.dec.Reset()
	for ri := range s.rings {
		r := &s.rings[ri]
		s.recs = s.recs[:0]
		s.buf, s.recs = r.Peek(s.buf, s.recs)
		r.handled = len(s.recs)
		for i, raw := range s.recs {
			rec, err := s.dec.Decode(raw, r.Event.Layout)
			if err != nil {
				// Counted as lost by the recorder, and said once.
				s.res.Lost++
				s.write(&recording.Lost{Time: monotonic(), Reason: recording.LostRecorder, Count: 1})
				s.warn("some kernel records could not be decoded and were dropped: %v", err)
				continue
			}
			if rec == nil {
				continue
			}
			it := item{time: recTime(rec), rec: rec, kind: r.kind}
			if it.time > until {
				// This record and the ring's next ones stay in the
				// ring for the next drain (orderedUntil).
				r.handled = i
				break
			}
			if _, ok := rec.(*perf.Lost); ok {
				it.since, it.cpu = r.last, recording.AnyCPU
				if r.Event.CPU >= 0 {
					it.cpu = uint32(r.Event.CPU)
				}
			} else if it.time > r.last {
				r.last = it.time
			}
			s.items = append(s.items, it)
		}
	}
	s.drainSnapshots()
	if s.sys != nil {
		// The program's records stamped up to the drain's start: as
		// until, those later were written after the drain began.
		s.drainSyscalls(until + min(uint64(orderMargin), math.MaxUint64-until))
	}
	for _, it := range s.ordered(until) {
		if smp, ok := it.rec.(*perf.Sample); ok {
			s.sample(smp, it.kind)
			continue
		}
		if l, ok := it.rec.(*perf.Lost); ok {
			s.lost(l, it.since, it.cpu)
			continue
		}
		if e, ok := it.rec.(*sysEvent); ok {
			s.syscall(e, it.kind)
			continue
		}
		s.handle(it.rec)
	}
	clear(s.items)
	s.items = s.items[:0]
	// The records were handled in place, in the rings: their space goes
	// back to the kernel only now, but for those left for the next drain.
	for ri := range s.rings {
		s.rings[ri].ReleaseFirst(s.rings[ri].handled)
	}
	clear(s.recs)
	s.expireSnapshots(until)
	s.dropEnded()
	s.writeKernelSymbols(false)
	return s.w.Flush()
}

// ordered returns the drain's items and those the last drain kept, in
// time order, up to those stamped at until; it keeps the later ones for
// the next drain.
func (s *session) ordered(until uint64) []item {
	s.items = slices.Insert(s.items, 0, s.later...)
	clear(s.later)
	s.later = s.later[:0]
	slices.SortStableFunc(s.items, func(a, b item) int { return cmp.Compare(a.time, b.time) })
	n, _ := slices.BinarySearchFunc(s.items, until, func(it item, t uint64) int {
		if it.time <= t {
			return -1
		}
		return 1
	})
	for _, it := range s.items[n:] {
		s.later = append(s.later, detach(it))
	}
	return s.items[:n]
}

// detach returns it with its own copy of what it shares with the drain's
// buffers (a system call record's stack copy), which the next drain
// reuses. The perf rings' records never need it: those a drain does not
// handle stay in their ring.
func detach(it item) item {
	switch r := it.rec.(type) {
	case *sysEvent:
		c := *r
		c.stack = slices.Clone(r.stack)
		it.rec = &c
	}
	return it
}

func recTime(rec any) uint64 {
	switch r := rec.(type) {
	case *perf.Sample:
		return r.Time
	case *perf.Mmap:
		return r.Time
	case *perf.Comm:
		return r.Time
	case *perf.Task:
		return r.Time
	case *perf.Lost:
		return r.Time
	case *perf.Switch:
		return r.Time
	}
	return 0
}

func (s *session) write(r recording.Record) {
	if err := s.w.Write(r); err != nil {
		s.warn("writing the recording: %v", err)
	}
}

// handle turns one decoded perf record into recording records.
func (s *session) handle(rec any) {
	if s.sidebandCPU && !s.keep(rec) {
		return
	}
	switch r := rec.(type) {
	case *perf.Mmap:
		if r.Prot&unix.PROT_EXEC == 0 {
			return
		}
		bid := r.BuildID
		if len(bid) == 0 {
			bid = s.objs.BuildIDs.Get(r.Path)
		}
		s.space(r.PID).Add(proc.Mapping{Start: r.Start, End: r.Start + r.Len, Offset: r.Pgoff, Path: r.Path})
		if s.awaiting[r.PID] && strings.HasPrefix(r.Path, "/") {
			s.exes[r.PID] = r.Path
			delete(s.awaiting, r.PID)
			s.plan(r.PID, r.Path)
		} else {
			s.mapped(r.PID)
		}
		s.write(&recording.Mmap{Time: r.Time, PID: r.PID, TID: r.TID, Start: r.Start, Len: r.Len, Pgoff: r.Pgoff,
			Prot: r.Prot, Flags: r.Flags, BuildID: bid, Path: r.Path})
	case *perf.Comm:
		if r.Exec {
			s.threadGone(r.TID)
		}
		if r.Exec && r.PID == r.TID {
			delete(s.ended, r.PID)
			s.spaces[r.PID] = &proc.Space{}
			delete(s.exes, r.PID)
			s.awaiting[r.PID] = true
		}
		s.write(&recording.Comm{Time: r.Time, PID: r.PID, TID: r.TID, Exec: r.Exec, Name: r.Name})
	case *perf.Task:
		exit := r.Type == perf.RecordExit
		if !exit && r.PID != r.PPID {
			delete(s.ended, r.PID)
			if parent, ok := s.spaces[r.PPID]; ok {
				s.spaces[r.PID] = parent.Clone()
			}
			if exe, ok := s.exes[r.PPID]; ok {
				s.exes[r.PID] = exe
				s.plan(r.PID, exe)
			}
		}
		if !exit {
			s.threadStarted(r.PID, r.TID)
		}
		if exit && s.processEnded(r.PID, r.TID) {
			s.endProcess(r.PID)
		}
		if exit && s.pending != nil {
			s.threadExited(r.TID)
		}
		if exit {
			s.threadGone(r.TID)
		}
		s.write(&recording.Task{Exit: exit, Time: r.Time, PID: r.PID, PPID: r.PPID, TID: r.TID, PTID: r.PTID})
	case *perf.Switch:
		if r.Out {
			return // the sched_switch tracepoint reports it, with prev_state and stack
		}
		s.switchIn(recording.Sample{Time: r.Time, PID: r.PID, TID: r.TID, CPU: r.CPU, Event: recording.EventSwitchIn})
	case *perf.Lost:
		s.lost(r, 0, 0)
	}
}

// switchIn writes the sample of a switch onto a CPU, from perf's switch
// record or the BPF switch program's.
func (s *session) switchIn(smp recording.Sample) {
	s.res.Samples++
	if err := s.w.WriteSample(smp, nil, nil); err != nil {
		s.warn("writing the recording: %v", err)
	}
	if s.onSched != nil {
		s.onSched(smp, nil)
	}
}

// lost writes a ring's report of dropped records; since is the time of
// the ring's record before them (0 if unknown) and cpu the ring's CPU.
func (s *session) lost(r *perf.Lost, since uint64, cpu uint32) {
	l := &recording.Lost{Time: r.Time, Reason: recording.LostRing, Count: r.Count}
	if r.Type == perf.RecordThrottle {
		l.Reason = recording.LostThrottled
		s.res.Throttled += r.Count
	} else {
		s.res.Lost += r.Count
		if since != 0 && since <= r.Time {
			l.Since, l.CPU = since, cpu
		}
	}
	s.write(l)
}

// unreportedLost writes the losses no ring reported, after the last
// drain: a ring tells its losses in a LOST record at its next write, so
// those of a ring full when the recording ends (a recorder that fell
// behind at the end, a ring too small for the last burst) come with no
// record; the events' own counts of the records they lost tell them
// (perf.Event.LostSamples). Inherited events count only their own.
func (s *session) unreportedLost() {
	var counted uint64
	for _, e := range s.events {
		n, ok := e.LostSamples()
		if !ok {
			return
		}
		counted += n
	}
	if counted > s.res.Lost {
		s.lost(&perf.Lost{Header: perf.Header{Type: perf.RecordLost, Time: monotonic()}, Count: counted - s.res.Lost}, 0, 0)
	}
}

func (s *session) space(pid uint32) *proc.Space {
	sp := s.spaces[pid]
	if sp == nil {
		sp = &proc.Space{}
		s.spaces[pid] = sp
	}
	return sp
}

// sample completes the user call chain and writes the sample.
func (s *session) sample(r *perf.Sample, k *eventKind) {
	if r.PID == math.MaxUint32 || r.TID == math.MaxUint32 {
		// A per-CPU event's tick in the last microseconds of a thread's
		// exit, after the kernel has released its number (perf writes
		// -1): which thread it was is no longer known.
		return
	}
	learn, sized, missing := false, false, false
	var memo uint32
	if s.stacks != nil && k.event == recording.EventCPU && len(r.Regs) == perf.NumRegs {
		learn, sized, memo = s.stackCopyFor(r)
		missing = !learn
	}
	if memo != 0 {
		if user, ok := s.memos.chain(memo); ok {
			s.write1(r, k, user, false)
			return
		}
		// Its thread exited since: the sample has its IP alone.
		s.res.Truncated++
		s.write1(r, k, []uint64{r.Regs[perf.RegIP]}, true)
		return
	}
	user, truncated := s.unwindUser(r, learn, sized)
	// Without its copy a sample has only the kernel's frame-pointer
	// chain, which leads nowhere from code keeping no frame pointer, or
	// none where the program walks it (the record carries it).
	truncated = truncated || missing
	if truncated {
		s.res.Truncated++
	}
	s.write1(r, k, user, truncated)
}

// copiesLost says which copies the samples that lost callers had: the
// CPU samples' StackBytes (sized: how many were sized to their thread's
// stack), the system call program's (EventTruncated), which start at
// sysCopyBytes and grow to their thread's stack top only once one of its
// events needed more, so a thread that makes few calls, such as a
// short-lived process starting in the dynamic loader, keeps losing its
// callers.
func (s *session) copiesLost(sized string) string {
	cpu := s.res.Truncated - s.res.EventTruncated
	ev := fmt.Sprintf("%d system call, switch or tick samples, whose copies hold %d bytes until one of their thread's proves too small (a thread that makes few calls, such as a short-lived process starting up, keeps losing them)", s.res.EventTruncated, sysCopyBytes)
	switch {
	case s.res.EventTruncated == 0:
		return fmt.Sprintf("%d bytes%s", s.o.StackBytes, sized)
	case cpu == 0:
		return ev
	}
	return fmt.Sprintf("%d CPU samples, of copies of %d bytes%s; %s", cpu, s.o.StackBytes, sized, ev)
}

// unwindUser completes a CPU sample's user call chain from its registers
// and stack copy (truncated: it lost callers) and, with learn, learns the
// thread's stack top from the unwind (learnTop; sized: the copy ended at
// the thread's top).
//
// A sample taken in the kernel has the user registers of its thread's
// entry into it (a system call's, mostly), which recur: its complete
// unwind gives the thread a memo there (memo.go). One taken in user mode
// is at an IP of its own, which seldom recurs with the same SP.
func (s *session) unwindUser(r *perf.Sample, learn, sized bool) (user []uint64, truncated bool) {
	var deps *unwind.Deps
	if learn && !r.UserMode && s.memos != nil && len(r.Stack) > 0 {
		deps = &s.memos.deps
	}
	user, truncated, stop, need := s.unwindChain(r, deps)
	if deps != nil && stop == unwind.Complete && !truncated {
		s.learnMemo(r.TID, r.Regs[perf.RegIP], r.StackSP, r.Regs[perf.RegBP], r.Stack, user, deps)
	}
	if learn && len(r.Regs) == perf.NumRegs && s.learnTop(r.TID, r.StackSP, r.Time, stop, need, sized) {
		// The sized copy ended below what the thread's outermost
		// frames need: its outer callers are missing.
		truncated = true
	}
	if truncated && s.o.CallGraph == CallGraphDWARF && stop != unwind.Complete && !need.Over {
		// Stopped in code no unwind table describes, not at the copy's
		// end: a larger copy would not help.
		s.res.NoCFI++
	}
	return user, truncated
}

// unwindChain completes a sample's user call chain from its registers
// and stack copy (truncated: it lost callers), and says how the unwind of the copy
// ended and what of it the unwind needed.
//
// With deps, the unwind also says what its chain depended on (memo.go).
func (s *session) unwindChain(r *perf.Sample, deps *unwind.Deps) (user []uint64, truncated bool, stop unwind.Stop, need unwind.Need) {
	sp := s.spaces[r.PID]
	if sp == nil {
		sp = s.refreshSpace(r.PID)
	}
	// A chain cut before data read as return addresses lost the callers
	// the walk missed.
	if len(r.Regs) != perf.NumRegs {
		user = inCode(sp, r.User)
		return user, len(user) < len(r.User), unwind.Stopped, need
	}
	regs := toDWARF(r.Regs)
	res := s.objs.In(sp)
	var cfi []uint64
	stack := unwind.StackCopy{SP: r.StackSP, Data: r.Stack, Holes: r.StackHoles}
	// Return probes of another tool (or culprit trace) put their
	// trampoline in return address slots: the kernel's chain has the
	// real addresses.
	stack.Returns = unwind.KernelReturns(regs, stack, r.User)
	if deps != nil {
		cfi, stop, need = unwind.UnwindDeps(s.pcs, regs, knownRegs(r.RegsSampled), stack, &res, 256, deps)
	} else {
		cfi, stop, need = unwind.UnwindKnown(s.pcs, regs, knownRegs(r.RegsSampled), stack, &res, 256)
	}
	if stop == unwind.Complete && need.InMain {
		cfi = s.withOuter(r, regs, &res, cfi, need) // one root (outer.go)
	}
	s.pcs = cfi // reused: Merge copies
	if stop != unwind.Complete && len(cfi) > 0 && s.inUprobes(sp, cfi[len(cfi)-1]) {
		// Stopped in the probes' page (a trampoline whose return address
		// the kernel's chain did not give back, or a single-step slot):
		// the kernel's chain beyond it is not this stack's (its
		// replacements went to other frames, and in code without frame
		// pointers it is junk).
		user = slices.Clone(cfi)
	} else {
		fp := r.User
		if stop != unwind.Complete {
			fp = inCode(sp, fp)
			truncated = len(fp) < len(r.User)
		}
		user = unwind.Merge(cfi, fp, stop == unwind.Complete)
	}
	// In dwarf mode the copy is the only source of callers; in fp mode
	// the frame-pointer chain goes on wherever the copy ends inside
	// frames that keep rbp, so only a cut in frameless code loses
	// some, or an unwind that stopped short of main's frame where the
	// chain did not lead (the copy ended inside a frame keeping rbp
	// that frameless code below it used for its own data, or a frame
	// no unwind table describes): the chain then adds nothing to the
	// copy's frames.
	switch {
	case s.o.CallGraph == CallGraphDWARF && stop != unwind.Complete, stop == unwind.Cut:
		truncated = true
	case stop == unwind.Stopped && !need.InMain && len(user) <= len(cfi):
		truncated = true
	case stop == unwind.Stopped && need.Unknown:
		// Stopped in a frame that keeps no frame pointer, for want of a
		// register its CFA is kept in: the kernel's chain skips that
		// frame's caller, so the merged chain lacks it.
		truncated = true
	}
	return user, truncated, stop, need
}

// inCode cuts the kernel's frame-pointer chain fp (fp[0] the sampled
// PC) before its first return address outside the process's code. The
// kernel's walk follows rbp without checking that it leads to a frame,
// so where code keeps data in rbp it reads data as return addresses; a
// pointer to itself (an empty list's head) repeats one data address to
// the chain's depth limit. A return address lies in executable code;
// nothing past one that does not is this stack's.
func inCode(sp *proc.Space, fp []uint64) []uint64 {
	for i := 1; i < len(fp); i++ {
		if _, ok := sp.Find(fp[i] - 1); !ok {
			return fp[:i]
		}
	}
	return fp
}

// write1 writes a sample whose user chain is complete, with the program
// state it carries.
func (s *session) write1(r *perf.Sample, k *eventKind, user []uint64, truncated bool) {
	var sn *sampleprog.Snapshot
	if k.event == recording.EventCPU {
		sn = s.snapshotFor(r)
		if s.o.Jitter > 0 {
			// The sample stands for the ticks its thread counted down.
			ticks := uint64(s.o.jitterTicks())
			if sn != nil && sn.Interval > 0 {
				ticks = uint64(sn.Interval)
			}
			r.Period = ticks * s.o.tickPeriod()
		}
	}
	var st collector.Verdict
	if s.state != nil && k.event == recording.EventCPU && len(r.Regs) == perf.NumRegs {
		st = s.sampleState(r, sn)
		if st.Keep > 0 && st.Keep < len(user) {
			user = user[:st.Keep]
		}
	}
	for _, v := range st.Records {
		s.write(v)
	}
	if st.Drop {
		s.res.Dropped++
		return
	}
	if k.tp != nil && s.tracing != nil {
		// Another tool's probe on the same tracepoint puts the kernel's
		// probe iterator under perf's chain: cut, the chain starts at the
		// tracepoint whatever else traces the machine.
		r.Kernel = s.tracing.Trim(r.Kernel)
	}
	s.kernelSymbols(r.Kernel)
	s.res.Samples++
	smp := recording.Sample{Time: r.Time, PID: r.PID, TID: r.TID, CPU: r.CPU, Period: r.Period,
		Truncated: truncated, Event: k.event}
	if k.tp != nil {
		smp.Arg, _ = k.tp.Int(r.Raw, k.arg)
	}
	if k.event == recording.EventWakeup {
		smp.Arg &= 0xffffffff
		// TRACE_FLAG_HARDIRQ, TRACE_FLAG_SOFTIRQ, TRACE_FLAG_NMI
		if fl, _ := k.tp.Int(r.Raw, "common_flags"); fl&(0x08|0x10|0x40) != 0 {
			smp.Arg |= recording.WakeupInterrupt
		}
	}
	if err := s.w.WriteSample(smp, r.Kernel, user); err != nil {
		s.warn("writing the recording: %v", err)
	}
	if s.onSched != nil && (k.event == recording.EventSwitch || k.event == recording.EventWakeup) {
		s.onSched(smp, user)
	}
}

// sampleState evaluates the expression specs and rules at a sample, over
// its registers and stack copy.
func (s *session) sampleState(r *perf.Sample, sn *sampleprog.Snapshot) collector.Verdict {
	exe, ok := s.exes[r.PID]
	if !ok {
		exe = proc.Exe(int(r.PID))
		s.exes[r.PID] = exe
	}
	if !s.state.Wants(exe) {
		return collector.Verdict{}
	}
	sp := s.spaces[r.PID]
	if sp == nil {
		return collector.Verdict{}
	}
	res := s.objs.In(sp)
	s.plan(r.PID, exe)
	frames, _ := unwind.UnwindFrames(toDWARF(r.Regs), unwind.StackCopy{SP: r.StackSP, Data: r.Stack, Holes: r.StackHoles}, &res, 64)
	return s.state.Sample(collector.Thread{PID: int(r.PID), TID: int(r.TID), Time: r.Time, Exe: exe,
		Frames: frames, Mem: memory(r, sn), Objects: &res})
}

// refreshSpace reads the mappings of a process the stream has not described
// (it can happen when records of different CPUs arrive out of order).
func (s *session) refreshSpace(pid uint32) *proc.Space {
	sp := s.space(pid)
	maps, err := proc.Maps(int(pid))
	if err != nil {
		return sp
	}
	for _, m := range maps {
		if m.Exec() {
			sp.Add(proc.Mapping{Start: m.Start, End: m.End, Offset: m.Offset, Path: m.Path})
		}
	}
	return sp
}

// knownRegs turns the perf_regs.h bits of the registers a sample carries
// into the unwinder's (DWARF x86-64 numbering, as toDWARF); 0 is all.
func knownRegs(mask uint64) uint32 {
	if mask == 0 {
		return unwind.AllRegs
	}
	var k uint32
	for i, d := range [...]int{perf.RegAX: 0, perf.RegDX: 1, perf.RegCX: 2, perf.RegBX: 3, perf.RegSI: 4, perf.RegDI: 5, perf.RegBP: 6, perf.RegSP: 7, perf.RegIP: 16} {
		if mask&(1<<i) != 0 {
			k |= 1 << d
		}
	}
	for i := 0; i < 8; i++ {
		if mask&(1<<(16+i)) != 0 { // R8–R15
			k |= 1 << (8 + i)
		}
	}
	return k
}

// toDWARF reorders perf's user registers into DWARF x86-64 numbering.
func toDWARF(r []uint64) unwind.Regs {
	var d unwind.Regs
	d[0], d[1], d[2], d[3] = r[perf.RegAX], r[perf.RegDX], r[perf.RegCX], r[perf.RegBX]
	d[4], d[5], d[6], d[7] = r[perf.RegSI], r[perf.RegDI], r[perf.RegBP], r[perf.RegSP]
	for i := 0; i < 8; i++ {
		d[8+i] = r[perf.RegR8+i]
	}
	d[16] = r[perf.RegIP]
	return d
}

func (s *session) close() {
	s.waiter.close()
	for _, r := range s.rings {
		r.Ring.Close()
	}
	for _, e := range s.events {
		e.Disable()
		e.Close()
	}
	s.rings, s.events = nil, nil
	if s.sys != nil {
		s.sys.Close()
		s.sys = nil
	}
	if s.pidfd >= 0 {
		unix.Close(s.pidfd)
		s.pidfd = -1
	}
	s.closeSnapshots()
	s.closeMemos()
	s.follow.Close()
	s.follow = nil
}

// abandon undoes a session that could not start.
func (s *session) abandon() {
	s.close()
	s.w.Discard()
}

// finish drains the rings a last time and writes the End record.
func (s *session) finish() (Result, error) {
	for _, e := range s.events {
		e.Disable()
	}
	err := s.drainAll()
	s.unreportedLost()
	var snapsLost, sysReduced, switchesOut uint64
	if s.snap != nil {
		snapsLost = s.snap.tk.Lost
	}
	if s.sys != nil {
		sysReduced = s.sys.Reduced()
		// Calls left out after their thread's last recorded entry (in
		// its window): those in windows stand for PERIOD/ON each.
		win := s.sys.UnrecordedWindowed()
		s.res.Syscalls += s.sys.Unrecorded() - min(win, s.sys.Unrecorded())
		if win > 0 {
			s.res.Syscalls += s.sysWeight(win, float64(s.o.SyscallWindowPeriod)/float64(s.o.SyscallWindowOn))
		}
		switchesOut = s.sys.SwitchesBare()
		s.res.SwitchesBetween = s.sys.SwitchesBetween()
	}
	var windows []syscallprog.Window
	var windowsErr error
	if s.sys != nil && s.sysWindows {
		windows, windowsErr = s.sys.Windows()
	}
	s.close()
	s.writeWindows(windows[min(s.sysWindowsOut, len(windows)):], true)
	if windowsErr != nil {
		s.warn("system calls were recorded only until: %v", windowsErr)
	}
	var scaled []syscallprog.Window // windows whose calls stand for more than themselves
	var steady time.Duration        // time the programs stayed attached, below the rate
	end := monotonic()
	for _, w := range windows {
		switch {
		case w.Scale > 1:
			scaled = append(scaled, w)
		case w.End == 0 && end > w.Start:
			steady += time.Duration(end - w.Start) // still open
		case w.End > w.Start:
			steady += time.Duration(w.End - w.Start)
		}
	}
	if n, r := s.res.Syscalls, s.res.SyscallsRecorded; len(scaled) > 0 {
		limit, above := "", ""
		if s.sysLimit > 0 && s.sysLimit < 1e9 {
			limit = fmt.Sprintf(", each thread recording at most %d a second beyond a burst of %d in them", s.sysLimit, s.sysBurst)
		}
		if s.o.SyscallWindowAbove > 0 {
			above = fmt.Sprintf(" (the traced threads made more than %d calls a second; every call was recorded for %v, while they made fewer)", s.o.SyscallWindowAbove, steady.Round(time.Millisecond))
		}
		between := ""
		if s.res.SwitchesBetween > 0 {
			between = fmt.Sprintf("; context switches too are recorded in the windows only, each standing for as many (%d between them were not recorded; --events wakeup records every one)", s.res.SwitchesBetween)
		}
		s.warn("system calls recorded in %d windows of %v every %v%s%s: %d recorded stand for an estimated %d calls; counts and shares of system calls are estimates (each call recorded in a window has its samples' period scaled by %.3g); calls still in progress when their window closed have no exit recorded, which counts long calls less%s; --syscall-windows off records calls all along, at more cost (docs/introperf.md)",
			len(scaled), s.o.SyscallWindowOn, s.o.SyscallWindowPeriod, above, limit, r, n, scaled[0].Scale, between)
	} else if n > r {
		sw := ""
		if switchesOut > 0 {
			sw = fmt.Sprintf("; %d context switches inside calls left out were recorded without their stacks (when and how the thread left the CPU only)", switchesOut)
		}
		s.warn("%d of %d system calls recorded (%.0f%%): each thread records at most %d calls a second beyond a burst of %d; each recorded call's samples stand for the calls its thread made since its previous recorded one (their period)%s; --syscall-limit 0 records every call, at more cost (docs/performance.md)",
			r, n, 100*float64(r)/float64(n), s.sysLimit, s.sysBurst, sw)
	}
	if m := s.memos; m != nil {
		s.res.MemoChains, s.res.MemoChecked, s.res.MemoMismatched = m.stats.hits, m.stats.checked, m.stats.mismatched
		if m.stats.mismatched > 0 {
			s.warn("%d of %d event stacks checked against the memo of their thread, IP and SP differed from its stack: those memos were dropped, and the stacks they gave before may be wrong (docs/performance.md)", m.stats.mismatched, m.stats.checked)
		}
	}
	if sysReduced > 0 {
		s.warn("%d system call or switch events were recorded without their stack copy, while the BPF program's ring was more than half full "+
			"(the recorder fell behind): their stacks may miss the caller of a function without frame pointers; a larger --mmap-pages gives the ring more room", sysReduced)
	}
	if got, want := s.smallRings[0], s.smallRings[1]; want > 0 && s.res.Lost > 0 {
		ps := os.Getpagesize() / 1024
		s.warn("ring buffers were %d KiB per CPU instead of %d KiB: the locked-memory limit (kernel.perf_event_mlock_kb, ulimit -l) allows no more; "+
			"record as root, or raise the limit, to lose fewer samples", got*ps, want*ps)
	}
	if s.stacks != nil && s.stacks.missing > 0 {
		s.warn("%d samples lost their stack copy (the recorder fell behind the BPF program's ring): callers in code without frame pointers may be missing from them; a larger --mmap-pages gives the rings more room", s.stacks.missing)
	}
	if s.stacks != nil && s.stacks.short > 0 {
		s.warn("%d samples lost outer callers: their stack copy, sized to what their thread's earlier stacks needed, ended short (they are marked truncated, and their threads copy the full %d bytes again); --stack-size %d copies the full size at every sample", s.stacks.short, s.o.StackBytes, s.o.StackBytes)
	}
	if snapsLost > 0 && s.mem != nil {
		s.warn("%d memory snapshots lost (the recorder fell behind the BPF program's ring): heap and global values of their samples are recorded missing", snapsLost)
	}
	s.writeKernelSymbols(true)
	s.write(&recording.End{Time: monotonic(), Samples: s.res.Samples, Lost: s.res.Lost,
		Throttled: s.res.Throttled, ExitCode: int32(s.res.ExitCode)})
	if cerr := s.w.Close(); err == nil {
		err = cerr
	}
	s.res.Bytes = s.w.Bytes()
	if err := perf.FastStartError(); err != nil {
		s.warn("%v", err)
	}
	if s.state != nil {
		for _, w := range s.state.Warnings() {
			s.warn("%s", w)
		}
	}
	if s.res.Samples > 0 && s.res.Truncated*10 > s.res.Samples {
		switch {
		case s.o.CallGraph == CallGraphFP && s.o.StackBytes == 0:
			s.warn("%d of %d samples lost callers: with --stack-size 0 no stack is copied, so frameless functions (leaves, libc, -O2 code) lose theirs; record without it for the CFI repair, or with --call-graph dwarf", s.res.Truncated, s.res.Samples)
		case s.o.CallGraph == CallGraphFP:
			more := ""
			if s.o.StackBytes < 4096 {
				more = ", or --stack-size 4096,"
			}
			sized := ""
			if s.stacks != nil {
				// Whether the per-thread sizing took effect.
				sized = fmt.Sprintf(" (%d samples had a copy sized to their thread's stack)", s.stacks.sized)
			}
			s.warn("%d of %d samples lost callers in code without frame pointers (libc, or -O2 code) whose callers lie beyond the stack fp mode copies: %s: record with --call-graph dwarf%s for complete stacks", s.res.Truncated, s.res.Samples, s.copiesLost(sized), more)
		case (s.res.Truncated-s.res.NoCFI)*10 > s.res.Samples:
			s.warn("%d of %d samples have incomplete user stacks: their unwind needed more than the %d bytes of stack copied; a larger --stack-size may help", s.res.Truncated-s.res.NoCFI, s.res.Samples, s.o.StackBytes)
		default:
			// No larger copy would help: the unwind stopped where no
			// unwind table describes the code (a uprobe's trampoline
			// or single-step slot while another tool probes the
			// program, JIT or hand-written code).
			s.warn("%d of %d samples lost callers in code without unwind tables (probes' trampolines, JIT or hand-written assembly); a larger --stack-size would not help", s.res.Truncated, s.res.Samples)
		}
	}
	return s.res, err
}
