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
// to the start code's frames, the same addresses sample after sample.
// perf's copy (PERF_SAMPLE_STACK_USER) has one size per event, so in the
// default fp mode, for every program but Go's (bpfStackFor), the sampling
// program (internal/sampleprog) makes the copy instead, in a record of its
// own paired with the sample like the snapshots: the full size
// (fpStackBytes) until an unwind of a full copy of the thread's was
// complete, then from the stack pointer up to the highest address that
// unwind read (unwind.Need): the thread's top, however far above the stack
// pointer it lies (at most sampleprog.MaxStack). The pages of the range
// that are not in memory (a large array the thread never wrote) are left
// out of the copy and of the unwind's reads (unwind.StackCopy.Holes).
//
// A frame of a page or more above another (bzip2's input block above
// libbz2's sort tables) can put a thread's outer frames more than the full
// size above its stack pointer from its first sample on: no full copy then
// unwinds complete and the thread would never learn a top. Such a thread,
// once a full copy's unwind wanted more (Need.Over), gets a reach instead
// (reachOf): its copies go three quarters of MaxStack above that sample's
// stack pointer until one unwinds complete and gives it its real top. Its
// samples before the first drain lose their callers. A full size of
// MaxStack would spare those but cost every thread whose outer frames are
// large (libcalls' main holds 8 KiB of arrays): its copies would reach
// _start through them, 10 KB a sample, where the 8 KiB copy ends cut in
// main's frame and sets a top there, 1.4 KB.
//
// The unwind that sets the top ends where the full copy's would: at the
// thread's outermost frame (_start, clone), the top then a little above
// what it read; or, where main's frame is larger than the full copy, cut
// in main's frame or beyond it (in the C library's start code), the top
// then exactly what it read, so that the sized copies end in the same
// frame and the samples of a thread do not have two roots. Every frame of
// a later sample lies between its stack pointer and those outer frames,
// which stay where they are while the thread lives, so the sized copy
// holds what the unwind reads. Where it does not (a thread that switches
// stacks, CFI that reads above its frame), the unwind of the sized copy
// wants bytes past its end (Need.Over) and ends short of where the top's
// unwind did: the sample is marked truncated, counted and said at the
// end, and the thread copies the full size again and learns its top anew;
// after maxShort such tops it keeps the full size. A top only grows.
//
// A top is judged by the copies made with it: those of the samples
// stamped after it was set (threadTop.since; the kernel stamps a sample
// before the program copies its stack, Linux 6.3 on). A drain unwinds
// samples that were all copied before it, so when a top turns out short
// the drain's later samples were copied with it too: they are short as
// well and marked, but the top counts once. A full copy whose unwind
// wanted more, made while the thread had no top, or had one the program
// did not apply (the stack pointer above it, or more than MaxStack
// below), gets the thread a reach at its stack pointer; after maxShort
// too, since the full size would lose such a thread's callers for the
// rest of its life.
//
// Value sampling, expressions and rules read caller frames and pointers
// into the stack from the same copy and keep perf's fixed-size copy.

// topMargin is added to what an unwind that reached the outermost frame
// needed: a little more than nothing.
const topMargin = 64

// maxShort is how many of a thread's tops may turn out short before the
// thread keeps the full size (or a reach, reachOf).
const maxShort = 2

// stackTops is the per-thread state of the copies.
type stackTops struct {
	tops    map[uint32]threadTop // by thread: the top set in the program's map
	shorts  map[uint32]int       // by thread: tops that turned out short
	missing uint64               // samples whose copy was not found (lost)
	short   uint64               // samples whose sized copy was short
	sized   uint64               // samples whose copy was sized (to a top or a reach)
}

// threadTop is a thread's top and whether the unwind it came from reached
// the thread's outermost frame; reach says it came from no unwind but is
// a reach (reachOf); since is when it was set in the program's map
// (CLOCK_MONOTONIC, the samples' clock): samples stamped since were copied
// with it.
type threadTop struct {
	top       uint64
	outermost bool
	reach     bool
	since     uint64
}

// reachOf is the top given a thread none of whose full copies unwound
// complete because they ended inside its frames, at stack pointer sp:
// three quarters of MaxStack above it, leaving a quarter for deeper
// samples.
func reachOf(sp uint64) uint64 { return sp + sampleprog.MaxStack*3/4 }

// wantsBPFStack says whether the cpu-clock samples should have their stack
// copied by the sampling program rather than by perf.
func (s *session) wantsBPFStack() bool {
	if s.o.CallGraph != CallGraphFP || !s.o.autoStack || s.state != nil || s.o.TickClock {
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
// the program exe in fp mode: wherever perf's copy would be the full
// size (stackFor), so for every program but Go's.
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
	s.stacks = &stackTops{tops: map[uint32]threadTop{}, shorts: map[uint32]int{}}
}

// stackCopyFor gives a cpu-clock sample its stack copy from the program's
// record: ok false when the record is missing; sized when the copy ended
// at the thread's top; memo the id of the memo whose chain is the
// sample's, the record having no copy (memo.go).
func (s *session) stackCopyFor(r *perf.Sample) (ok, sized bool, memo uint32) {
	c := matchRecord(s.snap.stacks, r, s.o.Frequency, r.Regs[perf.RegSP])
	if c == nil {
		s.stacks.missing++
		return false, false, 0
	}
	if c.Memo != 0 {
		return true, false, c.Memo
	}
	r.Stack, r.StackSP, r.StackHoles = c.Stack, c.StackSP, c.StackHoles
	if c.Sized {
		s.stacks.sized++
	}
	if c.Walked {
		// The program walked the user chain, as perf's walk would
		// have: the events leave it out (WalksUser).
		r.User = c.User
	}
	return true, c.Sized, 0
}

// learnTop learns the thread's top from an unwind of one of its samples
// (sp its stack pointer, at its time; stop and need, as
// unwind.UnwindReach says; sized: the copy ended at the thread's top or
// reach). short says the sized copy ended short of where the unwind that
// set the top did: the sample lost callers, and, when the copy was made
// with the thread's current top, the thread copies the full size again.
func (s *session) learnTop(tid uint32, sp, at uint64, stop unwind.Stop, need unwind.Need, sized bool) (short bool) {
	cur, ok := s.stacks.tops[tid]
	// current: the copy was made while the thread's top was in the map.
	current := ok && at >= cur.since
	if !sized && stop != unwind.Complete && need.Over && sp != 0 && (!ok || current) {
		// The full copy ended inside the thread's frames, with no top
		// or with one the program did not apply at this stack pointer.
		s.setTop(tid, threadTop{top: reachOf(sp), reach: true})
		return false
	}
	if sized {
		if need.Over && (!need.Outermost && cur.outermost || stop != unwind.Complete) {
			s.stacks.short++
			if current {
				s.stacks.shorts[tid]++
				s.forgetTop(tid)
			}
			return true
		}
		if !need.Outermost {
			return false
		}
	}
	if stop != unwind.Complete || need.Top == 0 || s.stacks.shorts[tid] >= maxShort || ok && cur.outermost && !need.Outermost {
		return false
	}
	t := threadTop{top: need.Top, outermost: need.Outermost}
	if t.outermost {
		t.top = (need.Top + topMargin + 63) &^ 63
	}
	if ok && !cur.reach && t.top <= cur.top && t.outermost == cur.outermost {
		return false
	}
	if ok && !cur.reach {
		t.top = max(t.top, cur.top) // a top only grows; a reach is replaced
	}
	s.setTop(tid, t)
	return false
}

// setTop sets a thread's top in the program's map, and notes when.
func (s *session) setTop(tid uint32, t threadTop) {
	if s.snap.tk.SetTop(tid, t.top) == nil {
		t.since = monotonic()
		s.stacks.tops[tid] = t
	}
}

// forgetTop forgets a thread's top: it outgrew it.
func (s *session) forgetTop(tid uint32) {
	if _, ok := s.stacks.tops[tid]; ok {
		delete(s.stacks.tops, tid)
		_ = s.snap.tk.SetTop(tid, 0)
	}
}

// threadGone forgets what a thread learned: it exited or exec'd.
func (s *session) threadGone(tid uint32) {
	delete(s.outer, tid)
	s.forgetMemos(tid)
	if _, ok := s.sysTops[tid]; ok {
		delete(s.sysTops, tid)
		_ = s.sys.SetTop(tid, 0)
	}
	if s.stacks == nil {
		return
	}
	s.forgetTop(tid)
	delete(s.stacks.shorts, tid)
}
