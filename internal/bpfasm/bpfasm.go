// Package bpfasm is what culprit's BPF programs (sampleprog's snapshots,
// traceprog's probes) are written with: an instruction list built through
// cilium/ebpf's asm package, with numbered jump labels and the map lookup
// every program makes. The programs are written in asm rather than C so
// that culprit needs no clang at build or run time.
package bpfasm

import (
	"fmt"

	"github.com/cilium/ebpf/asm"
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
