// Package bpfasm is what culprit's BPF programs (sampleprog's snapshots,
// traceprog's probes) are written with: an instruction list built through
// cilium/ebpf's asm package, with numbered jump labels and the map lookup
// every program makes. The programs are written in asm rather than C so
// that culprit needs no clang at build or run time.
package bpfasm

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/userfile"
)

// Builder accumulates a program's instructions.
type Builder struct {
	Ins   asm.Instructions
	label int
}

// Emit appends instructions.
func (b *Builder) Emit(ins ...asm.Instruction) { b.Ins = append(b.Ins, ins...) }

// NewLabel returns a label no other call returned: what_N.
func (b *Builder) NewLabel(what string) string {
	b.label++
	return fmt.Sprintf("%s_%d", what, b.label)
}

// Mark attaches label to the next instruction, a no-op jump target.
func (b *Builder) Mark(label string) { b.Emit(asm.Mov.Imm(asm.R0, 0).WithSymbol(label)) }

// NoUserAddr is an address above every user mapping (the first
// non-canonical one): bpf_probe_read_user refuses it at once, without
// touching memory, and zeroes its destination as for a read that faults.
const NoUserAddr = -1 << 63

// ReadUserUnless emits bpf_probe_read_user(R1, R2, R3), the registers
// set by the caller, but reading from NoUserAddr instead of R3 when bit
// is set in the stack word at slot: the destination is then zeroed
// without a read, as for a page that faults. A stack copy skips so the
// pages it knows are not in memory, whose read would cost a page fault
// (its buffer holds an earlier copy's bytes there). It uses R4.
func (b *Builder) ReadUserUnless(slot int16, bit int32) {
	read := b.NewLabel("readuser")
	b.Emit(
		asm.LoadMem(asm.R4, asm.RFP, slot, asm.DWord),
		asm.And.Imm(asm.R4, bit),
		asm.JEq.Imm(asm.R4, 0, read),
		asm.LoadImm(asm.R3, NoUserAddr, asm.DWord),
		asm.FnProbeReadUser.Call().WithSymbol(read),
	)
}

// Lookup looks up, in the map mapFD, the key in the stack slot at offset
// key from the frame pointer; R0 is then the value's address or 0.
func (b *Builder) Lookup(mapFD int, key int16) {
	b.Emit(
		asm.LoadMapPtr(asm.R1, mapFD),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, int32(key)),
		asm.FnMapLookupElem.Call(),
	)
}

// Update calls bpf_map_update_elem on the map mapFD with the key and the
// value in the stack slots at offsets key and value from the frame
// pointer, and flags (0: any, 1: BPF_NOEXIST); R0 is then 0 or an error.
func (b *Builder) Update(mapFD int, key, value int16, flags int32) {
	b.Emit(
		asm.LoadMapPtr(asm.R1, mapFD),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, int32(key)),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, int32(value)),
		asm.Mov.Imm(asm.R4, flags),
		asm.FnMapUpdateElem.Call(),
	)
}

// ProgName is the name of culprit's BPF programs: culprit_PID, so that
// bpftool and the tests tell one culprit's programs from another's.
func ProgName() string { return fmt.Sprintf("culprit_%d", os.Getpid()%10000000) }

// LoadError explains why the kernel would not load one of culprit's BPF
// programs (what names it: "sampling", "system call") and what to do.
func LoadError(what string, err error) error {
	switch {
	case errors.Is(err, unix.EPERM), errors.Is(err, os.ErrPermission):
		return fmt.Errorf("loading culprit's BPF %s program was refused (%v): run as root or grant CAP_BPF and CAP_PERFMON", what, err)
	}
	var ve *ebpf.VerifierError
	if errors.As(err, &ve) {
		return fmt.Errorf("the kernel's verifier refused culprit's BPF %s program: %v", what, ve)
	}
	return fmt.Errorf("culprit's BPF %s program cannot run on this kernel: %w", what, err)
}

// TaskOffsets returns the byte offsets of the named task_struct fields in
// the running kernel, from its BTF, for programs that read the current
// task (bpf_get_current_task). why says what needs them ("to follow
// forks"), for the error when the kernel has no BTF or not those fields.
func TaskOffsets(why string, fields ...string) ([]int32, error) {
	return StructOffsets(why, "task_struct", fields...)
}

// TaskFieldOffset returns the offset in struct task_struct of field of
// its member (of struct typ), from the kernel's BTF; -1 when either is
// missing.
func TaskFieldOffset(why, member, typ, field string) int32 {
	task, err1 := TaskOffsets(why, member)
	f, err2 := StructOffsets(why, typ, field)
	if err1 != nil || err2 != nil {
		return -1
	}
	return task[0] + f[0]
}

// ExecRuntimeOffset returns the offset of se.sum_exec_runtime in struct
// task_struct, the thread's time on a CPU as the kernel counts it
// (schedstat's first field), -1 when the kernel's BTF has no such field.
// The scheduler brings it up to date at a switch away, to the run
// queue's clock read where the switch began, and at its ticks: read at a
// switch, the growth from a thread's switch onto a CPU (or its switch away
// before) to its switch away is the run's length by the kernel's account.
func ExecRuntimeOffset(why string) int32 {
	return TaskFieldOffset(why, "se", "sched_entity", "sum_exec_runtime")
}

// RunQueueClocks are the offsets, in the running kernel, of the way from a
// task_struct to the clocks of the run queue it runs on: se.cfs_rq in
// task_struct (its CFS run queue, on the CPU it runs on), rq in struct
// cfs_rq (that CPU's run queue), and clock and clock_task in struct rq.
// The scheduler moves both clocks together (update_rq_clock), clock_task
// less the time a hypervisor took the CPU away (steal, with
// CONFIG_PARAVIRT_TIME_ACCOUNTING) and the time spent in interrupts (with
// CONFIG_IRQ_TIME_ACCOUNTING); se.sum_exec_runtime grows by clock_task.
type RunQueueClocks struct{ CfsRq, Rq, Clock, ClockTask int32 }

// RunQueueClockOffsets returns the RunQueueClocks of the running kernel;
// ok is false when its BTF has not all of them (without
// CONFIG_FAIR_GROUP_SCHED, struct cfs_rq has no rq).
func RunQueueClockOffsets(why string) (c RunQueueClocks, ok bool) {
	c.CfsRq = TaskFieldOffset(why, "se", "sched_entity", "cfs_rq")
	rq, err1 := StructOffsets(why, "cfs_rq", "rq")
	clocks, err2 := StructOffsets(why, "rq", "clock", "clock_task")
	if c.CfsRq < 0 || err1 != nil || err2 != nil {
		return c, false
	}
	c.Rq, c.Clock, c.ClockTask = rq[0], clocks[0], clocks[1]
	return c, true
}

// RunQueueClockTaskExact reports whether the running kernel's clock_task
// is its run queue's clock: its struct rq has no fields for the steal or
// interrupt time the scheduler takes out of it (prev_steal_time_rq,
// prev_irq_time).
func RunQueueClockTaskExact(why string) bool {
	_, err1 := StructOffsets(why, "rq", "prev_steal_time_rq")
	_, err2 := StructOffsets(why, "rq", "prev_irq_time")
	return err1 != nil && err2 != nil
}

// StructOffsets returns the byte offsets of the named fields of a kernel
// struct in the running kernel, from its BTF. Parsing the kernel's BTF
// takes 20–40 ms here, which a launched command would wait for at its
// exec, so the offsets of all of the struct's fields are cached on disk by
// kernel build (release and version string).
func StructOffsets(why, name string, fields ...string) ([]int32, error) {
	path, cache := structCache(name)
	if cache {
		if offs, ok := cachedOffsets(path, fields); ok {
			return offs, nil
		}
	}
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return nil, fmt.Errorf("reading the kernel's BTF (needed %s): %w", why, err)
	}
	var st *btf.Struct
	if err := spec.TypeByName(name, &st); err != nil {
		return nil, fmt.Errorf("%s in the kernel's BTF (needed %s): %w", name, why, err)
	}
	members := flatMembers(st.Members, 0)
	offs := make([]int32, len(fields))
	for i, f := range fields {
		offs[i] = -1
		for _, mb := range members {
			if mb.Name == f {
				offs[i] = int32(mb.Offset.Bytes())
			}
		}
		if offs[i] < 0 {
			return nil, fmt.Errorf("no %s.%s in the kernel's BTF (needed %s)", name, f, why)
		}
	}
	if cache && userfile.MkdirAll(filepath.Dir(path)) == nil {
		var text strings.Builder
		for _, mb := range members {
			if mb.Name != "" && mb.Offset%8 == 0 {
				fmt.Fprintf(&text, "%s %d\n", mb.Name, mb.Offset.Bytes())
			}
		}
		_ = userfile.Replace(path, func(f *os.File) error {
			_, err := f.WriteString(text.String())
			return err
		})
	}
	return offs, nil
}

// flatMembers lists a struct's members with those of its anonymous
// structs and unions in their place (mm_struct keeps nearly all of its
// fields in one), their offsets from the outer struct's start (base, in
// bits, the anonymous member's).
func flatMembers(ms []btf.Member, base btf.Bits) []btf.Member {
	var out []btf.Member
	for _, mb := range ms {
		mb.Offset += base
		if mb.Name == "" {
			switch t := btf.UnderlyingType(mb.Type).(type) {
			case *btf.Struct:
				out = append(out, flatMembers(t.Members, mb.Offset)...)
				continue
			case *btf.Union:
				out = append(out, flatMembers(t.Members, mb.Offset)...)
				continue
			}
		}
		out = append(out, mb)
	}
	return out
}

// structCache is the file of the running kernel's offsets of a struct's
// fields.
func structCache(name string) (string, bool) {
	rel, err1 := os.ReadFile("/proc/sys/kernel/osrelease")
	ver, err2 := os.ReadFile("/proc/sys/kernel/version")
	dir, err3 := os.UserCacheDir()
	if err1 != nil || err2 != nil || err3 != nil {
		return "", false
	}
	h := sha256.New()
	h.Write(rel)
	h.Write(ver)
	return filepath.Join(dir, "culprit", name+"-"+hex.EncodeToString(h.Sum(nil)[:12])), true
}

// cachedOffsets reads fields' offsets from the cache; ok is false unless
// it has every one.
func cachedOffsets(path string, fields []string) (offs []int32, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	all := map[string]int32{}
	for _, line := range strings.Split(string(b), "\n") {
		name, v, _ := strings.Cut(line, " ")
		if n, err := strconv.ParseInt(v, 10, 32); err == nil {
			all[name] = int32(n)
		}
	}
	for _, f := range fields {
		o, found := all[f]
		if !found {
			return nil, false
		}
		offs = append(offs, o)
	}
	return offs, true
}

// KfuncCall returns the call of the kernel function name (a kfunc),
// found by its id in the running kernel's BTF; why says what needs it,
// for the error when the kernel has none. The id is cached on disk by
// kernel build, as StructOffsets' offsets are.
func KfuncCall(why, name string) (asm.Instruction, error) {
	path, cache := structCache("kfunc-" + name)
	id := int64(-1)
	if cache {
		if b, err := os.ReadFile(path); err == nil {
			if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 32); err == nil {
				id = n
			}
		}
	}
	if id < 0 {
		spec, err := btf.LoadKernelSpec()
		if err != nil {
			return asm.Instruction{}, fmt.Errorf("reading the kernel's BTF (needed %s): %w", why, err)
		}
		var fn *btf.Func
		if err := spec.TypeByName(name, &fn); err != nil {
			return asm.Instruction{}, fmt.Errorf("%s in the kernel's BTF (needed %s): %w", name, why, err)
		}
		tid, err := spec.TypeID(fn)
		if err != nil {
			return asm.Instruction{}, fmt.Errorf("%s in the kernel's BTF (needed %s): %w", name, why, err)
		}
		id = int64(tid)
		if cache && userfile.MkdirAll(filepath.Dir(path)) == nil {
			_ = userfile.Replace(path, func(f *os.File) error {
				_, err := fmt.Fprintf(f, "%d\n", id)
				return err
			})
		}
	}
	return asm.Instruction{OpCode: asm.OpCode(asm.JumpClass).SetJumpOp(asm.Call), Src: asm.PseudoKfuncCall, Constant: id}, nil
}
