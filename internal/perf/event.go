// Package perf speaks the kernel's perf_event vocabulary: it opens sampling
// events with perf_event_open(2), maps and drains their ring buffers, and
// decodes the records found there (samples with call chains, registers and
// stack copies; mmap, comm, fork, exit, context switch, lost and throttle records).
//
// It knows nothing about recording files, symbols or reports. The decoding is
// written by hand because no maintained Go library reads the live ring
// buffer: golang.org/x/sys/unix gives the system call and the attribute
// layout, cilium/ebpf's perf reader only decodes BPF output records, and
// perf.data parsers (aclements/go-perf) read files, not rings.
package perf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Sample fields culprit asks for. The decoder relies on this exact set.
const (
	sampleType = unix.PERF_SAMPLE_IP | unix.PERF_SAMPLE_TID | unix.PERF_SAMPLE_TIME |
		unix.PERF_SAMPLE_CPU | unix.PERF_SAMPLE_PERIOD | unix.PERF_SAMPLE_CALLCHAIN |
		unix.PERF_SAMPLE_REGS_USER | unix.PERF_SAMPLE_STACK_USER

	// RegsMask selects AX BX CX DX SI DI BP SP IP and R8–R15 (perf_regs.h order).
	RegsMask = 0x1ff | 0xff<<16
	// RegsUnwind selects BX, DI, BP, SP and IP only: what CFI needs to
	// unwind the first frames of almost any code. Compiled code's CFA is
	// rsp- or rbp-based; the dynamic loader's hand-written trampolines
	// (the lazy-binding resolver, which realigns rsp for the CPU's
	// extended state, and the TLS descriptor and audit ones) keep it in
	// rbx; glibc's vfork keeps its return address in rdi across the
	// system call (the child runs on the parent's stack), where both
	// processes spend their samples of the call. Each register sampled
	// costs the sampled thread about 35 ns per sample
	// (bench/samplecost.sh).
	RegsUnwind = 1<<1 | 1<<5 | 1<<6 | 1<<7 | 1<<8

	bitBuildID = 1 << 34 // perf_event_attr.build_id: MMAP2 carries build-ids (Linux 5.12+)
)

// Config describes a sampling event: cpu-clock by default, or a tracepoint.
type Config struct {
	Tracepoint *Tracepoint // sample this tracepoint instead of cpu-clock
	Period     uint64      // for tracepoints: one sample every Period hits (0 = 1)
	// Sideband opens a dummy event that samples nothing: only its mmap,
	// comm and task records (and switches with ContextSwitch) are written,
	// with the sample's identifying fields, for cpu-clock events opened
	// per CPU rather than on the task.
	Sideband bool
	// NoSideband leaves mmap, comm and task records to another event of the
	// same task, so that they are not reported twice.
	NoSideband bool
	// ContextSwitch asks for a PERF_RECORD_SWITCH record each time a
	// thread of the task enters or leaves a CPU (decoded as *Switch).
	ContextSwitch bool
	// NoKernelChain leaves the kernel's part out of the call chain
	// (exclude_callchain_kernel): the kernel unwinder is the largest part
	// of a tracepoint sample's cost (about 1.6 µs of 3.2 here).
	NoKernelChain bool
	// NoUserChain leaves the user part out of the call chain
	// (exclude_callchain_user), for events whose BPF program walks it.
	NoUserChain bool
	// NoBuildID leaves the build-ids out of MMAP2 records (which carry
	// the file's device and inode instead). An event that sees every
	// process's mappings (pid -1) must: the kernel then marks other
	// tools' MMAP2 records of the same mappings as carrying a build-id
	// although they hold the device and inode (6.18 here), and perf 6.1
	// aborts reading them.
	NoBuildID bool
	Frequency int // samples per second per thread
	// ClockPeriod, when not 0, samples cpu-clock every ClockPeriod ns of
	// CPU time instead of at Frequency (which the kernel adapts).
	ClockPeriod   uint64
	StackBytes    int  // bytes of user stack copied per sample (0: none)
	ExcludeKernel bool // sample user mode only (needed without privileges)
	// ExcludeIdle takes no sample of a CPU's idle task (exclude_idle), for
	// per-CPU events whose samples are only kept for some processes: the
	// kernel then neither walks the idle task's call chain nor runs the
	// event's BPF program at the ticks of an idle CPU. The timer still
	// fires.
	ExcludeIdle bool
	Inherit     bool // follow threads and children created after opening
	Disabled    bool // opened stopped, until Enable
	MaxStack    int  // deepest call chain the kernel walks (0: kernel default)
	// UserRegs are the user registers sampled, perf_regs.h bits within
	// RegsMask (0: RegsMask); the others decode as 0.
	UserRegs uint64
}

func (c Config) userRegs() uint64 {
	if c.UserRegs == 0 {
		return RegsMask
	}
	return c.UserRegs & RegsMask
}

// attr builds the perf_event_attr for a cpu-clock sampling event.
func (c Config) attr() *unix.PerfEventAttr {
	a := &unix.PerfEventAttr{
		Type:        unix.PERF_TYPE_SOFTWARE,
		Config:      unix.PERF_COUNT_SW_CPU_CLOCK,
		Size:        uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Sample:      uint64(c.Frequency),
		Sample_type: sampleType,
		Bits: unix.PerfBitFreq | unix.PerfBitMmap | unix.PerfBitMmap2 | unix.PerfBitComm |
			unix.PerfBitCommExec | unix.PerfBitTask | unix.PerfBitSampleIDAll |
			unix.PerfBitUseClockID | unix.PerfBitWatermark | unix.PerfBitExcludeHv | bitBuildID,
		Clockid:           unix.CLOCK_MONOTONIC,
		Sample_regs_user:  c.userRegs(),
		Sample_stack_user: uint32(c.StackBytes),
	}
	if c.ClockPeriod > 0 {
		a.Sample = c.ClockPeriod
		a.Bits &^= unix.PerfBitFreq
	}
	if c.Tracepoint != nil {
		a.Type = unix.PERF_TYPE_TRACEPOINT
		a.Config = c.Tracepoint.ID
		a.Sample = max(c.Period, 1)
		a.Bits &^= unix.PerfBitFreq
		// With PERF_SAMPLE_PERIOD the kernel samples every hit of a
		// tracepoint whatever the period (perf_swevent_event), so leave it out.
		a.Sample_type = a.Sample_type&^unix.PERF_SAMPLE_PERIOD | unix.PERF_SAMPLE_RAW
	}
	if c.Sideband {
		a.Config = unix.PERF_COUNT_SW_DUMMY
	}
	if c.NoSideband {
		a.Bits &^= unix.PerfBitMmap | unix.PerfBitMmap2 | unix.PerfBitComm | unix.PerfBitCommExec | unix.PerfBitTask
	}
	if c.Inherit {
		a.Bits |= unix.PerfBitInherit
	}
	if c.Disabled {
		a.Bits |= unix.PerfBitDisabled
	}
	if c.ContextSwitch {
		a.Bits |= unix.PerfBitContextSwitch
	}
	if c.NoKernelChain {
		a.Bits |= unix.PerfBitExcludeCallchainKernel
	}
	if c.NoUserChain {
		a.Bits |= unix.PerfBitExcludeCallchainUser
	}
	if c.ExcludeKernel {
		a.Bits |= unix.PerfBitExcludeKernel
	}
	if c.ExcludeIdle {
		a.Bits |= unix.PerfBitExcludeIdle
	}
	if c.MaxStack > 0 {
		a.Sample_max_stack = uint16(c.MaxStack)
	}
	return a
}

// Event is one open perf event.
type Event struct {
	FD     int
	CPU    int
	TID    int
	Layout Layout // how its samples are laid out

	lostFormat bool // its count carries the samples it lost (LostSamples)
}

// LostSamples returns how many of the event's own records the kernel
// could not write to its ring, as the count of the event reads it (Linux
// 6.0 on; ok false before). A ring reports its losses in a LOST record
// only at its next write, so the losses of a ring full at the end of a
// recording are told by this count alone. An inherited event's count is
// its own, not its children's.
func (e *Event) LostSamples() (n uint64, ok bool) {
	if !e.lostFormat {
		return 0, false
	}
	var b [16]byte // the count, then the lost samples
	if k, err := unix.Read(e.FD, b[:]); err != nil || k != len(b) {
		return 0, false
	}
	return binary.LittleEndian.Uint64(b[8:]), true
}

// Layout says which optional fields an event's samples carry.
type Layout struct {
	Raw bool // raw tracepoint data (PERF_SAMPLE_RAW)
	// Period, when not 0, is the event's fixed sample period: the samples
	// then carry no PERF_SAMPLE_PERIOD field and Sample.Period is set to it.
	Period uint64
	// Regs are the user registers the samples carry, perf_regs.h bits (0:
	// RegsMask).
	Regs uint64
}

// Open opens a sampling event on thread tid (or a process with Inherit) and
// cpu. On kernels older than 5.12 its MMAP2 records carry no build-ids
// (mmapBuildIDs). Errors say what the user can do.
func Open(c Config, tid, cpu int, group int) (*Event, error) {
	a := c.attr()
	if !mmapBuildIDs() || c.NoBuildID {
		a.Bits &^= bitBuildID
	}
	if formatLost() {
		a.Read_format |= unix.PERF_FORMAT_LOST
	}
	fd, err := OpenTask(a, tid, cpu, group, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return nil, explain(err, c, tid, cpu)
	}
	ev := &Event{FD: fd, CPU: cpu, TID: tid, lostFormat: a.Read_format&unix.PERF_FORMAT_LOST != 0}
	if c.Tracepoint != nil {
		ev.Layout = Layout{Raw: true, Period: max(c.Period, 1)}
	}
	if r := c.userRegs(); r != RegsMask {
		ev.Layout.Regs = r
	}
	return ev, nil
}

// ErrPermission is wrapped by errors caused by missing privileges.
var ErrPermission = errors.New("not permitted")

// ErrNoSuchThread is wrapped when the target thread is gone.
var ErrNoSuchThread = errors.New("no such thread")

func explain(err error, c Config, tid, cpu int) error {
	switch err {
	case unix.EACCES, unix.EPERM:
		return fmt.Errorf("perf_event_open: %w: %s", ErrPermission, PermissionAdvice(!c.ExcludeKernel))
	case unix.ESRCH:
		return fmt.Errorf("perf_event_open on thread %d: %w", tid, ErrNoSuchThread)
	case unix.ENOENT, unix.EOPNOTSUPP, unix.ENODEV:
		what := "the cpu-clock software event"
		if c.Tracepoint != nil {
			what = "tracepoint " + c.Tracepoint.Name
		}
		return fmt.Errorf("perf_event_open: %s is not supported by this kernel (%v)", what, err)
	case unix.EMFILE:
		return fmt.Errorf("perf_event_open: too many open files: raise the limit with `ulimit -n`")
	case unix.EINVAL:
		return fmt.Errorf("perf_event_open (cpu %d, %d Hz, %d stack bytes): invalid argument: the frequency may exceed kernel.perf_event_max_sample_rate (%s) or the stack size 65528 bytes",
			cpu, c.Frequency, c.StackBytes, ReadSysctl("kernel/perf_event_max_sample_rate"))
	}
	return fmt.Errorf("perf_event_open: %w", err)
}

// PermissionAdvice tells a user how to get the right to profile.
func PermissionAdvice(kernel bool) string {
	p := ReadSysctl("kernel/perf_event_paranoid")
	if kernel {
		return fmt.Sprintf("recording kernel call chains needs root or the CAP_PERFMON capability (kernel.perf_event_paranoid is %s; setting it to 1 or lower with `sysctl kernel.perf_event_paranoid=1` also allows it)", p)
	}
	return fmt.Sprintf("profiling needs root, CAP_PERFMON, or kernel.perf_event_paranoid ≤ 2 for your own processes (it is %s; lower it with `sysctl kernel.perf_event_paranoid=2`)", p)
}

// ReadSysctl returns the value of /proc/sys/<name>, or "unknown".
func ReadSysctl(name string) string {
	b, err := os.ReadFile("/proc/sys/" + name)
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

// SetOutput redirects e's samples into the ring buffer of target (same CPU).
// The ring's records are then decoded as e's: target takes e's Layout (the
// events sharing a ring must share a layout; a ring holder has none of its
// own).
func (e *Event) SetOutput(target *Event) error {
	if err := unix.IoctlSetInt(e.FD, unix.PERF_EVENT_IOC_SET_OUTPUT, target.FD); err != nil {
		return fmt.Errorf("redirecting perf event output: %w", err)
	}
	target.Layout = e.Layout
	return nil
}

// Enable starts counting.
func (e *Event) Enable() error {
	return unix.IoctlSetInt(e.FD, unix.PERF_EVENT_IOC_ENABLE, 0)
}

// Disable stops counting.
func (e *Event) Disable() error {
	return unix.IoctlSetInt(e.FD, unix.PERF_EVENT_IOC_DISABLE, 0)
}

// Close closes the event.
func (e *Event) Close() error { return unix.Close(e.FD) }

// formatLost reports whether an event's count can carry the records it
// lost (PERF_FORMAT_LOST, Linux 6.0+).
var formatLost = sync.OnceValue(func() bool {
	return kernelAccepts(func(a *unix.PerfEventAttr) { a.Read_format = unix.PERF_FORMAT_LOST })
})

// mmapBuildIDs reports whether the kernel can put build-ids in MMAP2 records
// (Linux 5.12+).
var mmapBuildIDs = sync.OnceValue(func() bool {
	return kernelAccepts(func(a *unix.PerfEventAttr) {
		a.Bits |= unix.PerfBitMmap | unix.PerfBitMmap2 | bitBuildID
	})
})

// kernelAccepts probes an attribute of events as cilium/ebpf probes
// features: a disabled dummy event on the calling process with what set
// asks set, which an older kernel refuses with EINVAL (a reserved bit or
// field value). Any other failure leaves the question to the real open,
// whose error is explained. Callers probe once (sync.OnceValue).
func kernelAccepts(set func(*unix.PerfEventAttr)) bool {
	a := &unix.PerfEventAttr{
		Type:   unix.PERF_TYPE_SOFTWARE,
		Config: unix.PERF_COUNT_SW_DUMMY,
		Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Bits:   unix.PerfBitDisabled | unix.PerfBitExcludeKernel | unix.PerfBitExcludeHv,
	}
	set(a)
	fd, err := OpenTask(a, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err == nil {
		unix.Close(fd)
	}
	return err != unix.EINVAL
}
