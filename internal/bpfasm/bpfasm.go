// Package bpfasm is what culprit's BPF programs (sampleprog's snapshots,
// traceprog's probes) are written with: an instruction list built through
// cilium/ebpf's asm package, with numbered jump labels and the map lookup
// every program makes. The programs are written in asm rather than C so
// that culprit needs no clang at build or run time.
package bpfasm

import (
	"errors"
	"fmt"
	"os"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"
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
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return nil, fmt.Errorf("reading the kernel's BTF (needed %s): %w", why, err)
	}
	var task *btf.Struct
	if err := spec.TypeByName("task_struct", &task); err != nil {
		return nil, fmt.Errorf("task_struct in the kernel's BTF (needed %s): %w", why, err)
	}
	offs := make([]int32, len(fields))
	for i, f := range fields {
		offs[i] = -1
		for _, mb := range task.Members {
			if mb.Name == f {
				offs[i] = int32(mb.Offset.Bytes())
			}
		}
		if offs[i] < 0 {
			return nil, fmt.Errorf("no task_struct.%s in the kernel's BTF (needed %s)", f, why)
		}
	}
	return offs, nil
}
