// Package recording owns culprit's recording file: the record kinds, the streaming
// writer and the salvaging reader. It is the seam between collectors (which only
// write recordings) and analyses (which only read them). It knows nothing about
// perf events, ELF files or reports. The format is specified in docs/format.md.
package recording

// Format version. A reader refuses a file whose major version is newer than
// MajorVersion; minor versions only add record kinds or trailing fields, which
// older readers skip.
const (
	Magic        = "CULPRIT\x00"
	MajorVersion = 1
	MinorVersion = 14
)

// Kind identifies a record. New kinds may be added by later minor versions;
// readers skip kinds they do not know.
type Kind uint8

const (
	KindMeta          Kind = 1  // Meta: what was recorded, how, where
	KindMmap          Kind = 2  // Mmap: an executable mapping of a process
	KindComm          Kind = 3  // Comm: a thread's command name (exec or rename)
	KindFork          Kind = 4  // Task: a thread or process was created
	KindExit          Kind = 5  // Task: a thread or process ended
	KindStack         Kind = 6  // Stack: a call stack, referenced by samples
	KindSample        Kind = 7  // Sample: one CPU-time sample
	KindLost          Kind = 8  // Lost: samples or records the kernel or recorder dropped
	KindKernelSymbol  Kind = 9  // KernelSymbol: a kernel function seen in stacks
	KindObject        Kind = 10 // Object: an in-memory object image, e.g. the vDSO
	KindEnd           Kind = 11 // End: the recording finished cleanly
	KindSymbol        Kind = 12 // Symbol: a user function named at record or import time (1.1)
	KindValueSource   Kind = 13 // ValueSource: a variable, expression or counter whose values are sampled (1.1)
	KindValue         Kind = 14 // Value: one sampled value (1.1)
	KindProbe         Kind = 15 // Probe: a traced function (1.2)
	KindCall          Kind = 16 // Call: one traced call (1.2)
	KindProbesOff     Kind = 17 // ProbesOff: a span when every probe was removed (1.8)
	KindSyscallWindow Kind = 18 // SyscallWindow: a span system calls were recorded in (1.11)
	KindValueIndex    Kind = 19 // ValueIndex: a summary of the Value records right after it (1.12)
)

// Record is implemented by every record type.
type Record interface{ Kind() Kind }

// Meta describes the recording. There is one at the start of every file; a
// merged or restarted recording may carry several.
type Meta struct {
	Tool          string   `json:"tool"`           // "culprit <version>"
	Command       []string `json:"command"`        // the profiled command, if launched
	AttachPID     int      `json:"attach_pid"`     // the attached process, if attached
	Hostname      string   `json:"hostname"`       //
	KernelRelease string   `json:"kernel_release"` // uname -r
	Arch          string   `json:"arch"`           // GOARCH of the recorder, e.g. amd64
	StartUnixNano int64    `json:"start_unix_nano"`
	StartClock    uint64   `json:"start_clock"` // the sample clock (CLOCK_MONOTONIC ns) at StartUnixNano
	Event         string   `json:"event"`       // e.g. "cpu-clock"
	Frequency     int      `json:"frequency"`   // samples per second per thread
	CallGraph     string   `json:"call_graph"`  // "fp" or "dwarf"
	StackBytes    int      `json:"stack_bytes"` // bytes of user stack copied per sample
	// Extra holds collector-specific facts as strings, so later collectors
	// can add facts without a format change.
	Extra map[string]string `json:"extra,omitempty"`
}

// ExtraSyscallLimit is the Meta.Extra key of the rule by which the
// recorder left system calls out, "RATE/BURST": each thread recorded at
// most RATE calls a second beyond a burst of BURST; the others are
// counted in the Period of the samples of the thread's next recorded call
// (its entry and exit each stand for Period calls). Absent: every call was
// recorded (Period 1).
const ExtraSyscallLimit = "syscall_limit"

// ExtraSyscallWindows is the Meta.Extra key of the windows the recorder
// recorded system calls in, "ON/PERIOD" (Go durations): the first ON of
// every PERIOD; each recorded call's Period is scaled by PERIOD/ON, so
// that counts and shares are estimates of the whole run's; "ON/PERIOD>N"
// (record --syscall-windows auto): in windows while the traced threads
// made more than N calls a second, every call (Period unscaled) while
// they made fewer. Absent: calls were recorded all along.
const ExtraSyscallWindows = "syscall_windows"

// ExtraStackCopy is the Meta.Extra key of how the user stack copy of CPU
// samples was sized: StackCopyThreadTop when each thread's copy went from
// the stack pointer up to what its earlier unwinds needed (at most
// StackBytes). Absent: StackBytes at every sample.
const ExtraStackCopy = "stack_copy"

// StackCopyThreadTop is ExtraStackCopy's value for copies sized per thread.
const StackCopyThreadTop = "thread-top"

// ExtraUserChain is the Meta.Extra key of who walked the user call chain
// of CPU samples: UserChainBPF when culprit's sampling program did, along
// the frame pointers as the kernel's perf walk does. Absent: the kernel.
const ExtraUserChain = "user_chain"

// UserChainBPF is ExtraUserChain's value for chains the sampling program
// walked.
const UserChainBPF = "bpf"

// Mmap is an executable mapping of a process, as the kernel reported it or as
// read from /proc/PID/maps when attaching.
type Mmap struct {
	Time    uint64 // sample clock, ns
	PID     uint32
	TID     uint32
	Start   uint64 // first address
	Len     uint64
	Pgoff   uint64 // file offset of Start
	Prot    uint32
	Flags   uint32
	BuildID []byte // GNU build-id, if known
	Path    string // file path, or a pseudo name such as "[vdso]"
}

// Comm is a thread's command name; Exec marks an exec.
type Comm struct {
	Time uint64
	PID  uint32
	TID  uint32
	Exec bool
	Name string
}

// Task is a fork (KindFork) or exit (KindExit) of a thread or process.
type Task struct {
	Exit bool // false: KindFork, true: KindExit
	Time uint64
	PID  uint32
	PPID uint32
	TID  uint32
	PTID uint32
}

// Stack is a call stack, defined once and referenced by samples through ID.
// Addresses are innermost first. Element 0 of User (or of Kernel, for samples
// taken in the kernel) is the exact sampled PC; every other element is a return
// address, so symbolizers look up address-1 for it. Kernel holds kernel frames,
// User the user frames of the same sample.
type Stack struct {
	ID     uint64
	Kernel []uint64
	User   []uint64
}

// Sample is one CPU-time sample.
type Sample struct {
	Time    uint64 // sample clock (CLOCK_MONOTONIC), ns
	PID     uint32
	TID     uint32
	CPU     uint32
	Period  uint64 // ns of CPU time this sample stands for
	StackID uint64 // a Stack defined earlier in the file; 0 = no stack
	// Truncated is set when the user stack lost callers: in dwarf mode it
	// could not be unwound to its outermost frame (unknown mapping, missing
	// unwind info, short stack copy); in fp mode the copy ended inside a
	// frame that keeps no frame pointer (unwind.Cut).
	Truncated bool
	// Event says what took the sample (format 1.1; 0 = a CPU-time tick).
	Event Event
	// Arg is the event's argument: the system call number for syscall
	// events, the leaving thread's state (prev_state) for context switches,
	// the woken thread's TID for wake-ups (with WakeupInterrupt).
	Arg uint64
	// RunDelay is, for a context switch with HasRunDelay (format 1.13),
	// the leaving thread's time spent waiting on a run queue since it was
	// created, ns, as the kernel counts it (its schedstat's run_delay):
	// the growth between two of the thread's switches is its wait for a
	// CPU before the run between them.
	RunDelay    uint64
	HasRunDelay bool
	// ExecRuntime is, for a context switch away or onto a CPU with
	// HasExecRuntime (format 1.14), the thread's time on a CPU since it
	// was created, ns, as the kernel counts it (task_struct's
	// se.sum_exec_runtime, its schedstat's first field): at a switch away
	// up to the switch (to the run queue's clock read where the kernel's
	// switch began), at a switch onto a CPU before the run it starts. The
	// difference between a thread's switch away and its switch in before
	// it is the run's length by the kernel's account; the switches'
	// stamps are taken later than the clock it reads, by tens of
	// microseconds on a busy machine.
	ExecRuntime    uint64
	HasExecRuntime bool
}

// Event is the kind of event a sample was taken at.
type Event uint8

const (
	EventCPU          Event = 0 // a cpu-clock tick: Period ns of CPU time
	EventSyscallEnter Event = 1 // entry of a system call (raw_syscalls:sys_enter)
	EventSyscallExit  Event = 2 // return from a system call (raw_syscalls:sys_exit)
	EventSwitch       Event = 3 // the thread leaves the CPU (sched:sched_switch, prev side)
	// EventWakeup: the sample's thread (the waker, whose stack the sample
	// carries) wakes thread Arg (sched:sched_waking; format 1.4).
	EventWakeup Event = 4
	// EventSwitchIn: the thread enters the CPU (no stack; format 1.4).
	EventSwitchIn Event = 5
)

// WakeupInterrupt is set in an EventWakeup's Arg (above the woken TID in
// its low 32 bits) when the wake-up came from interrupt context (a timer, a
// device, a softirq): the sample's thread was only the one running then,
// not the waker.
const WakeupInterrupt = 1 << 32

// Kernel task states in EventSwitch's Arg (prev_state), as the
// sched_switch tracepoint reports them.
const (
	TaskRunning         = 0 // preempted: still runnable
	TaskInterruptible   = 1 // sleeping (S): futexes, sockets, pipes, sleeps
	TaskUninterruptible = 2 // sleeping (D): disk I/O and kernel locks
	TaskStopped         = 4 // stopped by a signal (T)
	TaskTraced          = 8 // stopped by a tracer (t)
	TaskDead            = 0x10 | 0x20
	// TaskPreempted is what the tracepoint reports for a thread switched
	// away while runnable (TASK_REPORT_MAX, shown "R+"); 0 is a thread
	// that yielded or was woken before it could sleep.
	TaskPreempted = 0x100
	// TaskStateMask holds the states above but TaskPreempted.
	TaskStateMask = 0xff
)

// String names the event as the --events flag does.
func (e Event) String() string {
	switch e {
	case EventCPU:
		return "cpu"
	case EventSyscallEnter:
		return "syscall-enter"
	case EventSyscallExit:
		return "syscall-exit"
	case EventSwitch:
		return "switch"
	case EventWakeup:
		return "wakeup"
	case EventSwitchIn:
		return "switch-in"
	}
	return "event(" + itoa(uint64(e)) + ")"
}

// LostReason says who dropped what.
type LostReason uint8

const (
	LostRing      LostReason = 1 // the kernel's ring buffer overflowed (PERF_RECORD_LOST)
	LostThrottled LostReason = 2 // the kernel throttled sampling (PERF_RECORD_THROTTLE)
	LostRecorder  LostReason = 3 // the recorder dropped samples it could not process
	LostCalls     LostReason = 4 // call records the tracer's ring had no room for
	LostDepth     LostReason = 5 // calls nested deeper than the tracer's shadow stack holds
)

// Lost counts samples that were not recorded.
type Lost struct {
	Time   uint64
	Reason LostReason
	Count  uint64
	// Since, for records a CPU's ring dropped (LostRing), is the time of
	// the last record that ring kept before the drop, and CPU is that
	// ring's CPU: the records were lost between Since and Time on CPU.
	// Since is 0 when unknown (then CPU means nothing).
	Since uint64
	CPU   uint32
}

// AnyCPU is Lost.CPU for a ring that serves every CPU.
const AnyCPU = ^uint32(0)

// KernelSymbol names a kernel function that appeared in the recording's stacks,
// so that kernel frames can be named on another machine or after a reboot.
type KernelSymbol struct {
	Addr   uint64
	Size   uint64 // 0 when unknown (then it extends to the next symbol)
	Name   string
	Module string // "" for the core kernel, else the module name
}

// Object is the image of an object that exists only in memory, such as the
// vDSO, stored so that it can be symbolized later.
type Object struct {
	Name    string // e.g. "[vdso]"
	BuildID []byte
	Data    []byte // the ELF image
}

// Symbol names a user function at an address that no Mmap explains, as
// imported stacks (perf script) or JIT symbol maps provide. Readers consult
// Symbol records only for addresses outside every known mapping.
type Symbol struct {
	PID    uint32 // the process it belongs to; 0 = every process
	Addr   uint64
	Size   uint64
	Name   string
	Object string // the object it belongs to, e.g. a library path
}

// SourceKind says what a ValueSource is (ValueSource.Class).
type SourceKind uint8

const (
	SourceVariable   SourceKind = 1 // a program variable (vProf schema entry)
	SourceExpression SourceKind = 2 // a user expression (PROG@FUNC@EXPR or a rule's capture)
	SourceCounter    SourceKind = 3 // a rule's named event counter
)

// ValueSource defines something whose values are sampled; Value records
// refer to it by ID. Defined once, before its first Value.
type ValueSource struct {
	ID       uint32
	Class    SourceKind
	Name     string // variable name, expression text or counter name
	Function string // the function whose frame it is evaluated in; "#global" for globals
	File     string // declaring file, for variables
	Line     int    // declaring line, for variables
	Type     string // C type as written, e.g. "unsigned long", "struct job *"
	Tags     string // vProf schema tags: "loop,cond,args" subset or "none"
	Global   bool
	Pointer  bool // the value is an address (vProf then only uses run lengths)
	// Enum names the values of an enum-typed source: "NAME=VALUE"
	// pairs separated by commas, in declaration order (format 1.3).
	Enum string
	// Schema is the identity of the vProf schema that listed a variable
	// (schema.Schema.ID), so that an analysis of several runs tells a
	// variable of another schema from one whose code did not run (format
	// 1.4); empty for expressions, counters and older recordings.
	Schema string
}

// ValueKind says how Value.Bits is to be read (Value.Type).
type ValueKind uint8

const (
	ValueInt     ValueKind = 0 // int64 in two's complement
	ValueUint    ValueKind = 1
	ValueFloat   ValueKind = 2 // float64 bits
	ValueMissing ValueKind = 3 // not available at this sample (optimized out, unreadable)
)

// Value is one sampled value, taken at a sample (Time, TID) in the frame at
// Depth (0 = the sampled frame, 1 = its caller, ...), whose PC is PC (the
// call-site PC for callers).
type Value struct {
	Time   uint64
	PID    uint32
	TID    uint32
	Source uint32 // a ValueSource ID
	Depth  uint8
	Type   ValueKind
	PC     uint64
	Bits   uint64
}

// Probe is a traced function: an entry probe and a return probe (or probes
// on its RET instructions) in an object. Call records refer to it by ID.
type Probe struct {
	ID       uint32 // 1-based; 0 in Call.Caller means no traced caller
	Function string // the symbol name
	Object   string // the object's path
	BuildID  []byte
	Offset   uint64 // file offset of the entry
	Every    uint32 // every Every-th call is recorded, the first always (0, 1: all)
	// Params name the arguments Call.Args holds, in order, for --args:
	// "name:code:type" each, e.g. "n:i8:long"; empty when not recorded.
	// After the registers' may come values of memory the probe read at
	// entry, named by their path ("c->id:i4:int").
	Params []string
	// Ret is the return value's "code:type", code as in Params; RetVoid
	// when DWARF says the function returns nothing; RetUnread and the
	// type's name ("n:double") when it returns a floating-point value,
	// which is not recorded; "" when not recorded, not known, or not an
	// integer, pointer or enum.
	Ret string
	// Since is when the probe was set (sample clock, ns; format 1.5): a
	// probe set on a running program (culprit variance's refinement)
	// sees only the calls entered from then on. 0: before the command's
	// first instruction, or not known.
	Since uint64
}

// RetVoid is Probe.Ret of a function whose DWARF type says it returns
// nothing (void): its calls' Call.Ret is whatever RAX held, not a value.
const RetVoid = "v:void"

// RetUnread is the code of Probe.Ret ("n:double") for a function whose
// DWARF type says it returns a floating-point value: x86-64 returns it in
// XMM0, which a uprobe's saved registers (pt_regs) do not hold and a BPF
// program cannot read, so its calls' Call.Ret is whatever RAX held, not
// the value.
const RetUnread = "n"

// CallUnreturned flags a call that did not return through its return probe
// (longjmp, C++ unwinding, exit): its End is when that was noticed.
const CallUnreturned = 1

// CallPoint flags the hit of a point probe (a source line, a USDT probe):
// Start = End.
const CallPoint = 2

// CallCPU flags a call whose thread's time off the CPU was measured
// (Call.Off, Call.ChildOff; format 1.9), so that its on-CPU time is known.
const CallCPU = 4

// CallCPULost flags a call whose time off the CPU was being measured but
// one of its thread's context switches went unseen (the kernel did not
// deliver it): its on-CPU time is not known, and analyses that compare
// on-CPU times leave the call out rather than fall back to durations.
const CallCPULost = 8

// CallChained flags a call a traced caller jumped to (a tail call): the
// kernel chained its return to the caller's, so its Site is the caller's
// return address, and while it ran the stack held the kernel's return
// trampoline (the [uprobes] mapping) in that place.
const CallChained = 16

// CallUnwound flags a call (also CallUnreturned) that a C++ exception or
// Rust panic left: it was open when the unwinder reached a catch or a
// clean-up in a function below it, and its End is that moment.
const CallUnwound = 32

// CallTailJumped flags a call that ended by jumping to another function
// (a tail call) in code whose return probes sit on its RET instructions
// (an object that unwinds for C++ exceptions or Rust panics): the callee,
// given the call's frame, is not part of it, and Ret is not a value.
const CallTailJumped = 64

// Call is one call of a traced function.
type Call struct {
	Start  uint64 // sample clock (CLOCK_MONOTONIC), ns
	End    uint64
	Child  uint64 // ns spent in traced calls it made
	PID    uint32
	TID    uint32
	Probe  uint32 // a Probe defined earlier in the file
	Caller uint32 // the Probe of the traced call it was made from; 0: none
	Depth  uint32 // traced calls open below it on its thread
	Site   uint64 // return address: the instruction after the call; 0: not known (a call that did not return)
	Flags  uint32 // CallUnreturned, CallPoint, CallCPU, CallCPULost, CallChained, CallUnwound, CallTailJumped
	Args   []uint64
	Ret    uint64
	// Strs (format 1.7) are the strings of the Probe's first two
	// parameters of code s8 (char *), read when the call ended, at most
	// 63 bytes each.
	Strs []string
	// Off (format 1.9, with CallCPU) is the ns the call's thread spent
	// off the CPU (preempted, blocked, asleep) between its start and end;
	// ChildOff the part of Off inside the traced calls it made (Child).
	Off, ChildOff uint64
	// Goroutine (format 1.10) is, for a call of a Go program, the
	// goroutine that made it (its goid; without DWARF to find the goid
	// in, the address of its runtime g, unique among the goroutines alive
	// at once): TID is the thread it returned on,
	// and a goroutine that blocks can move between threads. 0 otherwise.
	Goroutine uint64
}

// ProbesOff is a span when the tracer had removed every probe (culprit
// variance's trap budget sets them in windows): calls in it, and calls
// that were open across its edges, are missing or incomplete, so an
// analysis leaves out whatever overlaps it. Start is when the removal
// began, End when every probe was set again (or tracing ended).
type ProbesOff struct {
	Start, End uint64 // sample clock, ns
}

// SyscallWindow is a span of time in which the recorder's system call
// programs were attached (record --syscall-windows): calls entered in it
// were recorded (within the limit, ExtraSyscallLimit); calls outside every
// window of a recording that has them were not, and context switches
// inside those calls carry no stacks. The windows are the same for every
// traced thread. Each recorded call stands for Period/On calls (its
// samples' Period is scaled by that); On 0 marks a span in which the
// programs stayed attached and every call stands for itself (record
// --syscall-windows auto, while the traced threads made few calls). A
// recording without windows (and without ExtraSyscallWindows) recorded
// calls all along.
type SyscallWindow struct {
	Start, End uint64 // sample clock, ns
	On, Period uint64 // ns; On 0: every call stands for itself
}

// Scale returns what each call recorded in the window stands for.
func (w SyscallWindow) Scale() float64 {
	if w.On == 0 || w.Period <= w.On {
		return 1
	}
	return float64(w.Period) / float64(w.On)
}

// ValueIndex summarizes the run of Value records that follows it in the
// file, so that a reader that needs only what it says can step over the run
// unread (Reader.SkipValues). A Writer writes it itself, before each run of
// values it buffered; Next does not return it unless asked to skip values.
type ValueIndex struct {
	Size  uint64 // bytes of the run: Count whole Value frames
	Count uint64
	// The earliest and latest Time of the run's values, and the largest
	// lateness among them: how far a value's Time lies before the latest
	// Time of the values before it in the run.
	MinTime, MaxTime, Late uint64
	Sources                []IndexedSource // by source ID, in the order of their first value
	PCs                    []IndexedPC     // each distinct PC once, in the order of its first value
}

// IndexedSource counts the values of one source in a run: All of them,
// Present those not ValueMissing.
type IndexedSource struct {
	ID           uint32
	All, Present uint64
}

// IndexedPC is a PC values of a run were read at, PC ≠ 0: in process PID,
// at depth 0 (Caller false) or in a caller frame; First is the position in
// the run of its first value (0 for the run's first).
type IndexedPC struct {
	PID    uint32
	Caller bool
	PC     uint64
	First  uint64
}

// End marks a clean end of recording with its totals. A file without an End
// record was cut short (recorder killed) or is still being written.
type End struct {
	Time      uint64
	Samples   uint64
	Lost      uint64
	Throttled uint64
	ExitCode  int32  // exit code of the launched command, -1 if unknown
	Calls     uint64 // traced calls recorded (1.2)
}

func (*Meta) Kind() Kind          { return KindMeta }
func (*Mmap) Kind() Kind          { return KindMmap }
func (*Comm) Kind() Kind          { return KindComm }
func (*Stack) Kind() Kind         { return KindStack }
func (*Sample) Kind() Kind        { return KindSample }
func (*Lost) Kind() Kind          { return KindLost }
func (*KernelSymbol) Kind() Kind  { return KindKernelSymbol }
func (*Object) Kind() Kind        { return KindObject }
func (*End) Kind() Kind           { return KindEnd }
func (*Symbol) Kind() Kind        { return KindSymbol }
func (*ValueSource) Kind() Kind   { return KindValueSource }
func (*Value) Kind() Kind         { return KindValue }
func (*Probe) Kind() Kind         { return KindProbe }
func (*Call) Kind() Kind          { return KindCall }
func (*ProbesOff) Kind() Kind     { return KindProbesOff }
func (*SyscallWindow) Kind() Kind { return KindSyscallWindow }
func (*ValueIndex) Kind() Kind    { return KindValueIndex }
func (t *Task) Kind() Kind {
	if t.Exit {
		return KindExit
	}
	return KindFork
}
