// Package follow keeps, in the kernel, the set of processes a recording
// follows: a BPF hash map of thread group ids that a program on
// sched_process_fork extends with the children of the processes in it, at
// the fork, before the child runs, and a program on sched_process_exit
// shrinks when the last thread of a process exits. Both happen in the
// kernel at the moment they happen: a process whose first thread exits
// before the others is followed until its last one is gone, and its pid
// leaves the set before the kernel can give it to another process (the
// exit tracepoint fires before the task is released). The BPF programs that record a target
// (system calls and switches, internal/syscallprog; CPU samples of per-CPU
// cpu-clock events, Filter) turn away every other thread with one lookup.
//
// Programs that run at every system call may keep, per thread, whether its
// process is followed (task storage, cheaper than the hash lookup) with the
// set's generation (GenFD): Add, Remove and the exit program change the
// generation, so that a thread's cached answer from before is looked up
// again. A process the fork program adds is new, and so are its threads:
// nothing cached.
//
// The programs are written with cilium/ebpf's asm package (package
// bpfasm), so that culprit needs no clang.
package follow

import (
	"fmt"
	"sync/atomic"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/bpfasm"
)

// MaxProcesses bounds the processes followed at once.
const MaxProcesses = 4096

// Set is the followed processes and the program that adds their children.
type Set struct {
	tgids  *ebpf.Map
	gen    *ebpf.Map // one u64: the generation, changed by Add and Remove
	ngen   atomic.Uint64
	fork   *ebpf.Program
	link   link.Link
	exit   *ebpf.Program
	exitL  link.Link
	filter *ebpf.Program // loaded by the first Filter
}

// New makes an empty set and attaches its fork program. Nothing outlives
// the recorder: no object is pinned.
func New() (*Set, error) {
	// Kernels before 5.11 charge BPF memory to RLIMIT_MEMLOCK.
	_ = unix.Setrlimit(unix.RLIMIT_MEMLOCK, &unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY})
	offs, err := bpfasm.TaskOffsets("to follow forks and exits", "tgid", "signal")
	if err != nil {
		return nil, err
	}
	tgidOff, signalOff := offs[0], offs[1]
	live, err := bpfasm.StructOffsets("to follow exits", "signal_struct", "live")
	if err != nil {
		return nil, err
	}
	s := &Set{}
	fail := func(err error) (*Set, error) {
		s.Close()
		return nil, bpfasm.LoadError("process-following", err)
	}
	if s.tgids, err = ebpf.NewMap(&ebpf.MapSpec{Name: "culprit_follow", Type: ebpf.Hash, KeySize: 4, ValueSize: 4, MaxEntries: MaxProcesses}); err != nil {
		return fail(err)
	}
	if s.gen, err = ebpf.NewMap(&ebpf.MapSpec{Name: "culprit_fgen", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1}); err != nil {
		return fail(err)
	}
	if err := s.bump(); err != nil {
		return fail(err)
	}
	if s.fork, err = ebpf.NewProgramWithOptions(&ebpf.ProgramSpec{Name: bpfasm.ProgName(), Type: ebpf.RawTracepoint, License: "GPL",
		Instructions: forkProgram(s.tgids.FD(), tgidOff)}, ebpf.ProgramOptions{LogSizeStart: 1 << 16}); err != nil {
		return fail(err)
	}
	if s.link, err = link.AttachRawTracepoint(link.RawTracepointOptions{Name: "sched_process_fork", Program: s.fork}); err != nil {
		return fail(err)
	}
	if s.exit, err = ebpf.NewProgramWithOptions(&ebpf.ProgramSpec{Name: bpfasm.ProgName(), Type: ebpf.RawTracepoint, License: "GPL",
		Instructions: exitProgram(s.tgids.FD(), s.gen.FD(), tgidOff, signalOff, live[0])}, ebpf.ProgramOptions{LogSizeStart: 1 << 16}); err != nil {
		return fail(err)
	}
	if s.exitL, err = link.AttachRawTracepoint(link.RawTracepointOptions{Name: "sched_process_exit", Program: s.exit}); err != nil {
		return fail(err)
	}
	return s, nil
}

// Add follows a process (a thread group) and the processes it forks from
// now on.
func (s *Set) Add(tgid uint32) error {
	if err := s.tgids.Update(tgid, uint32(1), ebpf.UpdateAny); err != nil {
		return err
	}
	return s.bump()
}

// Remove stops following a process. A process that exits leaves the set
// by itself.
func (s *Set) Remove(tgid uint32) {
	_ = s.tgids.Delete(tgid)
	_ = s.bump()
}

// bump changes the generation, after the set changed. The generation only
// grows, so that no thread's cached one matches it again: the exit program
// adds 1, and bump writes its own count in the upper 32 bits (from 1, so
// that a thread's zeroed cache never matches), above any value before.
func (s *Set) bump() error {
	return s.gen.Update(uint32(0), s.ngen.Add(1)<<32, ebpf.UpdateAny)
}

// GenFD is the file descriptor of the generation map: an array of one u64,
// never 0, that grows each time Add, Remove or a followed process's exit
// changes the set.
func (s *Set) GenFD() int { return s.gen.FD() }

// Has reports whether a process is followed.
func (s *Set) Has(tgid uint32) bool {
	var v uint32
	return s.tgids.Lookup(tgid, &v) == nil
}

// FD is the map's file descriptor, for programs that test membership (Emit).
func (s *Set) FD() int { return s.tgids.FD() }

// Filter makes a sampling perf event (a per-CPU cpu-clock event) keep only
// the samples of followed processes: the others are dropped in the
// kernel's overflow handler before anything is written.
func (s *Set) Filter(perfFD int) error {
	if s.filter == nil {
		var b bpfasm.Builder
		Emit(&b, s.FD(), "keep")
		b.Emit(
			asm.Mov.Imm(asm.R0, 0),
			asm.Return(),
			asm.Mov.Imm(asm.R0, 1).WithSymbol("keep"),
			asm.Return(),
		)
		p, err := ebpf.NewProgramWithOptions(&ebpf.ProgramSpec{Name: bpfasm.ProgName(), Type: ebpf.PerfEvent, License: "GPL",
			Instructions: b.Ins}, ebpf.ProgramOptions{LogSizeStart: 1 << 16})
		if err != nil {
			return bpfasm.LoadError("sample filter", err)
		}
		s.filter = p
	}
	if err := unix.IoctlSetInt(perfFD, unix.PERF_EVENT_IOC_SET_BPF, s.filter.FD()); err != nil {
		return fmt.Errorf("attaching culprit's sample filter to a perf event: %w", err)
	}
	return nil
}

// Emit emits a test of the current thread's process: a jump to label when
// it is followed, else on to the next instruction. It overwrites R0–R5
// (save the context first) and the stack slot at -4 from R10.
func Emit(b *bpfasm.Builder, fd int, label string) {
	b.Emit(
		asm.FnGetCurrentPidTgid.Call(),
		asm.RSh.Imm(asm.R0, 32),
		asm.StoreMem(asm.RFP, -4, asm.R0, asm.Word),
	)
	b.Lookup(fd, -4)
	b.Emit(asm.JNE.Imm(asm.R0, 0, label))
}

// Close detaches the programs and frees the map.
func (s *Set) Close() {
	if s == nil {
		return
	}
	for _, l := range []link.Link{s.link, s.exitL} {
		if l != nil {
			l.Close()
		}
	}
	// cilium's Close methods accept nil: parts a failed New never made.
	for _, c := range []interface{ Close() error }{s.fork, s.exit, s.filter, s.tgids, s.gen} {
		c.Close()
	}
	s.tgids, s.gen, s.fork, s.link, s.exit, s.exitL, s.filter = nil, nil, nil, nil, nil, nil, nil
}

// forkProgram: sched_process_fork(parent, child), a raw tracepoint whose
// arguments are the two task_structs: a followed process's child is
// followed. A new thread of a followed process finds its thread group
// there already.
func forkProgram(fd int, tgidOff int32) asm.Instructions {
	var b bpfasm.Builder
	b.Emit(asm.Mov.Reg(asm.R6, asm.R1))
	Emit(&b, fd, "followed")
	b.Emit(
		asm.Ja.Label("done"),
		// The child's tgid: ctx->args[1] is the child's task_struct.
		asm.Mov.Reg(asm.R1, asm.RFP).WithSymbol("followed"),
		asm.Add.Imm(asm.R1, -16),
		asm.Mov.Imm(asm.R2, 4),
		asm.LoadMem(asm.R3, asm.R6, 8, asm.DWord),
		asm.Add.Imm(asm.R3, tgidOff),
		asm.FnProbeReadKernel.Call(),
		asm.JNE.Imm(asm.R0, 0, "done"),
		asm.StoreImm(asm.RFP, -24, 1, asm.Word),
	)
	b.Update(fd, -16, -24, 0)
	b.Emit(
		asm.Mov.Imm(asm.R0, 0).WithSymbol("done"),
		asm.Return(),
	)
	return b.Ins
}

// exitProgram: sched_process_exit(task), a raw tracepoint whose argument is
// the exiting task_struct. The kernel has already counted the thread out
// of its process (signal->live), so live is 0 for the last thread: its
// process leaves the set. Any exit on the machine runs this, a deletion of
// a key that is mostly absent.
func exitProgram(fd, genFD int, tgidOff, signalOff, liveOff int32) asm.Instructions {
	var b bpfasm.Builder
	b.Emit(
		asm.LoadMem(asm.R6, asm.R1, 0, asm.DWord), // ctx->args[0]: the task
		// task->signal
		asm.Mov.Reg(asm.R1, asm.RFP),
		asm.Add.Imm(asm.R1, -16),
		asm.Mov.Imm(asm.R2, 8),
		asm.Mov.Reg(asm.R3, asm.R6),
		asm.Add.Imm(asm.R3, signalOff),
		asm.FnProbeReadKernel.Call(),
		asm.JNE.Imm(asm.R0, 0, "done"),
		// task->signal->live
		asm.Mov.Reg(asm.R1, asm.RFP),
		asm.Add.Imm(asm.R1, -8),
		asm.Mov.Imm(asm.R2, 4),
		asm.LoadMem(asm.R3, asm.RFP, -16, asm.DWord),
		asm.Add.Imm(asm.R3, liveOff),
		asm.FnProbeReadKernel.Call(),
		asm.JNE.Imm(asm.R0, 0, "done"),
		asm.LoadMem(asm.R0, asm.RFP, -8, asm.Word),
		asm.JNE.Imm(asm.R0, 0, "done"),
		// task->tgid, the key
		asm.Mov.Reg(asm.R1, asm.RFP),
		asm.Add.Imm(asm.R1, -4),
		asm.Mov.Imm(asm.R2, 4),
		asm.Mov.Reg(asm.R3, asm.R6),
		asm.Add.Imm(asm.R3, tgidOff),
		asm.FnProbeReadKernel.Call(),
		asm.JNE.Imm(asm.R0, 0, "done"),
		asm.LoadMapPtr(asm.R1, fd),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapDeleteElem.Call(),
		// A followed process left: the generation changes, so that its
		// exiting thread's cached answer is not used for its last switches.
		asm.JNE.Imm(asm.R0, 0, "done"),
		asm.StoreImm(asm.RFP, -8, 0, asm.Word),
	)
	b.Lookup(genFD, -8)
	b.Emit(
		asm.JEq.Imm(asm.R0, 0, "done"),
		asm.Mov.Imm(asm.R1, 1),
		asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("done"),
		asm.Return(),
	)
	return b.Ins
}
