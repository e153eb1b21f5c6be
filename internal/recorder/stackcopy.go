package recorder

import (
	"github.com/culprit-dev/culprit/internal/perf"
	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/sampleprog"
	"github.com/culprit-dev/culprit/internal/unwind"
)

// Stack copies sized per thread: in fp mode the stack copy only repairs
// what the frame-pointer chain skips, and how much of the stack that takes
// depends on the thread: a loop a few frames below main needs the stack up
// to main's frame, the same addresses sample after sample. perf's copy
// (PERF_SAMPLE_STACK_USER) has one size per event, so in the default fp
// mode, for programs without frame pointers (bpfStackFor), the sampling
// program (internal/sampleprog) makes the copy instead,
// in a record of its own paired with the sample like the snapshots: the
// full size (stackFor) until an unwind of the thread's has completed, then
// from the stack pointer up to the highest address that unwind needed
// (unwind.UnwindReach), plus topMargin. The top only grows; a sample whose
// sized copy cut its callers forgets it, so the next copies the full size
// and the thread's top is learned again. Value sampling, expressions and
// rules read caller frames and pointers into the stack from the same copy
// and keep perf's fixed-size copy.

// topMargin is added to what an unwind needed; a little more than nothing
// so that the same outer frames, entered again at another depth of the
// same code, are still covered.
const topMargin = 64

// stackTops is the per-thread state of the copies.
type stackTops struct {
	tops    map[uint32]uint64 // by thread: the top set in the program's map
	missing uint64            // samples whose copy was not found (lost)
}

// wantsBPFStack says whether the cpu-clock samples should have their stack
// copied by the sampling program rather than by perf.
func (s *session) wantsBPFStack() bool {
	if s.o.CallGraph != CallGraphFP || !s.o.autoStack || s.state != nil {
		return false
	}
	for _, k := range s.kinds {
		if k.event == recording.EventCPU {
			return true
		}
	}
	return false
}

// decideStacks decides who copies the cpu-clock samples' stacks, before
// the first event opens (and the Meta is written): the sampling program
// when it is wanted and loaded, perf otherwise.
func (s *session) decideStacks() error {
	if !s.wantsBPFStack() {
		return nil
	}
	if err := s.loadSnapshots(); err != nil {
		return err
	}
	s.useBPFStack()
	return nil
}

// bpfStackFor says whether the sampling program is to copy the stacks of
// the program exe in fp mode. It copies only where perf's copy is the
// large one, in programs without frame pointers (8 KiB, stackFor): where
// it is 4 KiB (programs that keep them, whose frame-pointer chain needs
// only the first frames repaired) perf's copy costs a sample about what
// the program's own record does (docs/performance.md) and stays.
func bpfStackFor(exe string) bool {
	return stackFor(exe) >= bpfStackMin
}

// bpfStackMin is the smallest full copy the sampling program makes.
const bpfStackMin = 8192

// useBPFStack has the sampling program copy the stacks if it loaded.
func (s *session) useBPFStack() {
	if s.stacks != nil || s.snap == nil || !s.snap.stack || s.o.StackBytes < bpfStackMin || s.o.StackBytes > sampleprog.MaxStack {
		return
	}
	if err := s.snap.tk.SetStackBytes(s.o.StackBytes); err != nil {
		return
	}
	s.stacks = &stackTops{tops: map[uint32]uint64{}}
}

// stackCopyFor gives a cpu-clock sample its stack copy from the program's
// record: ok false when the record is missing; sized when the copy ended
// at the thread's top.
func (s *session) stackCopyFor(r *perf.Sample) (ok, sized bool) {
	c := matchRecord(s.snap.stacks, r, s.o.Frequency)
	if c == nil {
		s.stacks.missing++
		return false, false
	}
	r.Stack, r.StackSP = c.Stack, c.StackSP
	return true, c.Sized
}

// learnTop sets the thread's top from an unwind of one of its samples:
// stop and reach as unwind.UnwindReach says, sized whether the copy ended
// at the thread's top.
func (s *session) learnTop(tid uint32, stop unwind.Stop, reach uint64, sized bool) {
	cur := s.stacks.tops[tid]
	switch {
	case stop == unwind.Cut && sized:
		s.forgetTop(tid)
	case stop == unwind.Complete && reach > 0:
		top := (reach + topMargin + 63) &^ 63
		if top > cur && s.snap.tk.SetTop(tid, top) == nil {
			s.stacks.tops[tid] = top
		}
	}
}

// forgetTop forgets a thread's top: it exited, exec'd or outgrew it.
func (s *session) forgetTop(tid uint32) {
	if s.stacks == nil {
		return
	}
	if _, ok := s.stacks.tops[tid]; ok {
		delete(s.stacks.tops, tid)
		_ = s.snap.tk.SetTop(tid, 0)
	}
}
