package recorder

import (
	"fmt"
	"os"
	"slices"

	"github.com/culprit-dev/culprit/internal/perf"
	"github.com/culprit-dev/culprit/internal/proc"
	"github.com/culprit-dev/culprit/internal/unwind"
)

// One root for every stack of a thread. An unwind is complete either at
// the thread's outermost frame (_start, clone) or, when the copy ends in
// or beyond main's frame, at main (unwind.Need.Outermost false): main's
// callers are the C library's start code. Which of the two ends a
// sample's unwind depends on how far its copy reaches (a full copy from
// a stack pointer close to main reaches _start, a copy sized to a top
// learned in main's frame, or one whose main frame is large, does not),
// so the same thread's stacks would have two roots, `_start >
// __libc_start_main > … > main > …` and a bare `main > …`, and main two
// nodes in the call tree. main's callers stay the same while main runs:
// the thread's first unwind that reaches the outermost frame through
// main gives them (outerFrames), and every stack completed at main gets
// them appended. A thread whose samples are all completed at main (its
// main frame is larger than any copy) learns them once from the
// process's memory: its stack above the copy's end, read from
// /proc/PID/mem, holds main's saved registers and return address and its
// callers' frames, unchanged since the sample while main runs; the copy
// so extended unwinds to the outermost frame. Where neither gives them
// (the process is gone), the stacks end at main.

// outerRead is how much of the stack above a copy's end is read for main's
// callers: main's own frame may hold large arrays.
const outerRead = 64 << 10

// outerFrames are a thread's frames beyond main's, innermost first.
type outerFrames struct {
	pcs   []uint64
	known bool
	read  bool // the process's memory was read for them
}

// withOuter completes a chain that the unwind of a copy completed
// through main's frame (need.InMain) with the thread's known outer
// frames, and learns them from one that reached the outermost frame.
// cfi's storage may be reused.
func (s *session) withOuter(r *perf.Sample, regs unwind.Regs, res unwind.Resolver, cfi []uint64, need unwind.Need) []uint64 {
	if need.Main < 0 || need.Main >= len(cfi) {
		return cfi
	}
	if s.outer == nil {
		s.outer = map[uint32]outerFrames{}
	}
	o := s.outer[r.TID]
	if need.Outermost {
		if !o.known {
			s.outer[r.TID] = outerFrames{pcs: slices.Clone(cfi[need.Main+1:]), known: true, read: o.read}
		}
		return cfi
	}
	if !o.known && !o.read {
		o.read = true
		o.pcs, o.known = s.readOuter(r, regs, res)
		s.outer[r.TID] = o
	}
	have := cfi[need.Main+1:]
	if !o.known || len(have) > len(o.pcs) || !slices.Equal(have, o.pcs[:len(have)]) {
		return cfi
	}
	return append(cfi, o.pcs[len(have):]...)
}

// readOuter reads the thread's stack above the copy's end from the
// process's memory and unwinds the extended copy: main's callers when it
// reaches the outermost frame through main.
func (s *session) readOuter(r *perf.Sample, regs unwind.Regs, res unwind.Resolver) ([]uint64, bool) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/mem", r.PID))
	if err != nil {
		return nil, false
	}
	defer f.Close()
	end := r.StackSP + uint64(len(r.Stack))
	data := make([]byte, len(r.Stack), len(r.Stack)+outerRead)
	copy(data, r.Stack)
	// Page by page: the read stops at the end of the stack's mapping.
	for addr := end; addr < end+outerRead; {
		n := min(4096-addr%4096, end+outerRead-addr)
		k, err := f.ReadAt(data[len(data):len(data)+int(n)], int64(addr))
		data = data[:len(data)+k]
		if err != nil || k < int(n) {
			break
		}
		addr += n
	}
	if uint64(len(data)) == uint64(len(r.Stack)) {
		return nil, false
	}
	pcs, stop, need := unwind.UnwindKnown(nil, regs, knownRegs(r.RegsSampled), unwind.StackCopy{SP: r.StackSP, Data: data, Holes: r.StackHoles}, res, 256)
	if stop != unwind.Complete || !need.Outermost || !need.InMain || need.Main >= len(pcs) {
		return nil, false
	}
	return slices.Clone(pcs[need.Main+1:]), true
}

// inUprobes reports whether pc, a frame of a sample's chain, lies in the
// process's [uprobes] mapping (sp its space): a return probe's
// trampoline, or a slot where a probed instruction is single-stepped.
// The trampoline's address is the first byte past every mapping's code
// when taken as a return address, so the exact address is looked up.
func (s *session) inUprobes(sp *proc.Space, pc uint64) bool {
	m, ok := sp.Find(pc)
	return ok && m.Path == "[uprobes]"
}
