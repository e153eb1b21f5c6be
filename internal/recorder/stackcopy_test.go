package recorder

import (
	"testing"

	"github.com/culprit-dev/culprit/internal/perf"
	"github.com/culprit-dev/culprit/internal/sampleprog"
	"github.com/culprit-dev/culprit/internal/unwind"
)

// learnTop's decisions, sample after sample of one thread: the top comes
// from complete unwinds of full copies (a little above an outermost
// frame's reads, exactly a cut in main's), only grows, is never lowered
// from an outermost frame to main's, and a sized copy that ends short of
// where the top's unwind did is counted, marks its sample and sends the
// thread back to full copies, for good after maxShort such tops. (The Taker
// without maps sets no top in a kernel; the session's own map is what is
// checked.)
func TestLearnTop(t *testing.T) {
	s := &session{stacks: &stackTops{tops: map[uint32]threadTop{}, shorts: map[uint32]int{}},
		snap: &snaps{tk: &sampleprog.Taker{}}}
	const tid = 7
	outer := func(top uint64) unwind.Need { return unwind.Need{Top: top, Outermost: true} }
	inMain := func(top uint64) unwind.Need { return unwind.Need{Top: top, Over: true} }
	steps := []struct {
		name  string
		stop  unwind.Stop
		need  unwind.Need
		sized bool
		short bool
		top   threadTop // after the step; zero: none
	}{
		{"full copy, cut in main's frame", unwind.Complete, inMain(0x1008), false, false, threadTop{0x1008, false, false, 0}},
		{"sized, cut in main's frame as well", unwind.Complete, inMain(0x1008), true, false, threadTop{0x1008, false, false, 0}},
		{"full copy, cut in main deeper", unwind.Complete, inMain(0x0f00), false, false, threadTop{0x1008, false, false, 0}},
		{"full copy, to _start", unwind.Complete, outer(0x1200), false, false, threadTop{0x1240, true, false, 0}},
		{"full copy, cut in main again: no lower", unwind.Complete, inMain(0x1100), false, false, threadTop{0x1240, true, false, 0}},
		{"sized, to _start", unwind.Complete, outer(0x1200), true, false, threadTop{0x1240, true, false, 0}},
		{"sized, stopped without wanting more", unwind.Stopped, unwind.Need{}, true, false, threadTop{0x1240, true, false, 0}},
		{"sized, ends in main wanting more", unwind.Complete, inMain(0x1238), true, true, threadTop{}},
		{"full copy, to _start again", unwind.Complete, outer(0x1300), false, false, threadTop{0x1340, true, false, 0}},
		{"sized, cut in libc wanting more", unwind.Cut, unwind.Need{Over: true}, true, true, threadTop{}},
		{"full copy after two short: no top", unwind.Complete, outer(0x1300), false, false, threadTop{}},
	}
	for _, st := range steps {
		if short := s.learnTop(tid, 0x800, monotonic(), st.stop, st.need, st.sized); short != st.short {
			t.Errorf("%s: short %v, want %v", st.name, short, st.short)
		}
		if got := s.stacks.tops[tid]; !sameTop(got, st.top) {
			t.Errorf("%s: top %+v, want %+v", st.name, got, st.top)
		}
	}
	if s.stacks.short != 2 {
		t.Errorf("%d short copies counted, want 2", s.stacks.short)
	}
	s.threadGone(tid)
	s.learnTop(tid, 0x800, monotonic(), unwind.Complete, outer(0x1300), false)
	if got := s.stacks.tops[tid]; !sameTop(got, threadTop{0x1340, true, false, 0}) {
		t.Errorf("a new thread of the same number: top %+v", got)
	}
}

// sameTop compares tops but for when they were set.
func sameTop(a, b threadTop) bool {
	a.since, b.since = 0, 0
	return a == b
}

// A thread whose full copies never unwind complete because they end
// inside its frames gets a reach above its stack pointer instead of no
// top; the first complete unwind of a copy that reach gave replaces it,
// lower or not; a thread that went short maxShort times gets a reach as
// well, since the full size would lose every caller of such a thread.
func TestLearnTopReach(t *testing.T) {
	s := &session{stacks: &stackTops{tops: map[uint32]threadTop{}, shorts: map[uint32]int{}},
		snap: &snaps{tk: &sampleprog.Taker{}}}
	const tid, sp = 9, 0x7000
	over := unwind.Need{Over: true}
	s.learnTop(tid, sp, monotonic(), unwind.Stopped, unwind.Need{}, false)
	if _, ok := s.stacks.tops[tid]; ok {
		t.Errorf("a stop not wanting more gave a top: %+v", s.stacks.tops[tid])
	}
	s.learnTop(tid, sp, monotonic(), unwind.Stopped, over, false)
	if got, want := s.stacks.tops[tid], (threadTop{reachOf(sp), false, true, 0}); !sameTop(got, want) {
		t.Fatalf("full copy ending in its frames: top %+v, want %+v", got, want)
	}
	if reachOf(sp)-sp > sampleprog.MaxStack || reachOf(sp)-sp <= fpStackBytes {
		t.Errorf("reach %d bytes: not between the full copy and the largest", reachOf(sp)-sp)
	}
	s.learnTop(tid, sp, monotonic(), unwind.Complete, unwind.Need{Top: sp + 0x2400, Outermost: true}, true)
	if got, want := s.stacks.tops[tid], (threadTop{(sp + 0x2400 + topMargin + 63) &^ 63, true, false, 0}); !sameTop(got, want) {
		t.Errorf("complete unwind of a reached copy: top %+v, want %+v", got, want)
	}
	s.threadGone(tid)
	s.stacks.shorts[tid] = maxShort
	s.learnTop(tid, sp, monotonic(), unwind.Stopped, over, false)
	if got, want := s.stacks.tops[tid], (threadTop{reachOf(sp), false, true, 0}); !sameTop(got, want) {
		t.Errorf("a thread short %d times whose full copy ends in its frames: top %+v, want the reach %+v", maxShort, got, want)
	}
	s.learnTop(tid, sp, monotonic(), unwind.Complete, unwind.Need{Top: sp + 0x2400, Outermost: true}, true)
	if got := s.stacks.tops[tid]; !got.reach {
		t.Errorf("a thread short %d times, after its reach's complete unwind: %+v, want the reach kept", maxShort, got)
	}
}

// One short top costs a thread one of its maxShort, however many samples
// were copied with it: a drain unwinds the samples of a period all copied
// before it, so the top's first short copy forgets it, and the drain's
// next samples, copied with it too, are short but count for nothing. The
// thread's next full copy, ending in its frames, gets it a reach, and the
// reach's complete unwind a top again. Counted per sample, one drain of
// short copies used up maxShort and left the thread with full copies, and
// every caller lost, for the rest of its life.
func TestLearnTopOneDrain(t *testing.T) {
	s := &session{stacks: &stackTops{tops: map[uint32]threadTop{}, shorts: map[uint32]int{}},
		snap: &snaps{tk: &sampleprog.Taker{}}}
	const tid, sp = 11, 0x7000
	over := unwind.Need{Over: true}
	outer := unwind.Need{Top: sp + 0x2458, Outermost: true}
	top := threadTop{top: (outer.Top + topMargin + 63) &^ 63, outermost: true}

	s.learnTop(tid, sp, monotonic(), unwind.Stopped, over, false) // a reach
	s.learnTop(tid, sp, monotonic(), unwind.Complete, outer, true)
	if got := s.stacks.tops[tid]; !sameTop(got, top) {
		t.Fatalf("after the reach's complete unwind: top %+v, want %+v", got, top)
	}
	// A drain of samples all copied with that top, which turns out short.
	copied := monotonic()
	for i := range 5 {
		if !s.learnTop(tid, sp, copied+uint64(i), unwind.Stopped, over, true) {
			t.Errorf("short copy %d of the drain not marked short", i)
		}
	}
	if n := s.stacks.shorts[tid]; n != 1 {
		t.Errorf("one short top counted %d times", n)
	}
	if s.stacks.short != 5 {
		t.Errorf("%d short samples counted, want 5", s.stacks.short)
	}
	// The next drain: full copies, the first gets a reach, whose copies
	// unwind complete.
	s.learnTop(tid, sp, monotonic(), unwind.Stopped, over, false)
	if got := s.stacks.tops[tid]; !got.reach {
		t.Fatalf("full copy after one short top: %+v, want a reach", got)
	}
	s.learnTop(tid, sp, monotonic(), unwind.Complete, outer, true)
	if got := s.stacks.tops[tid]; !sameTop(got, top) {
		t.Errorf("the reach's complete unwind: top %+v, want %+v", got, top)
	}
}

// A top or reach the program does not apply at a sample's stack pointer
// (above it, or more than MaxStack below) leaves that sample a full copy:
// where its unwind wants more, the thread gets a reach at that stack
// pointer instead of keeping, for good, a top that never sizes a copy. A
// full copy stamped before the top was set says nothing about it.
func TestLearnTopNotApplied(t *testing.T) {
	s := &session{stacks: &stackTops{tops: map[uint32]threadTop{}, shorts: map[uint32]int{}},
		snap: &snaps{tk: &sampleprog.Taker{}}}
	const tid = 13
	over := unwind.Need{Over: true}
	early := monotonic()
	s.learnTop(tid, 0x9000, monotonic(), unwind.Stopped, over, false)
	if got := s.stacks.tops[tid]; got.top != reachOf(0x9000) {
		t.Fatalf("first full copy: top %+v, want the reach %#x", got, reachOf(0x9000))
	}
	// Copied before the reach, at a stack pointer it would not cover.
	s.learnTop(tid, 0x7000, early, unwind.Stopped, over, false)
	if got := s.stacks.tops[tid]; got.top != reachOf(0x9000) {
		t.Errorf("a full copy from before the reach replaced it: %+v", got)
	}
	// Copied since, at a stack pointer more than MaxStack below it.
	if reachOf(0x9000)-0x7000 <= sampleprog.MaxStack {
		t.Fatalf("the reach covers 0x7000: the test needs a stack pointer it does not")
	}
	s.learnTop(tid, 0x7000, monotonic(), unwind.Stopped, over, false)
	if got := s.stacks.tops[tid]; got.top != reachOf(0x7000) || !got.reach {
		t.Errorf("a full copy the reach did not size: top %+v, want the reach %#x", got, reachOf(0x7000))
	}
	// A top from an outermost unwind, then a full copy above it.
	s.learnTop(tid, 0x7000, monotonic(), unwind.Complete, unwind.Need{Top: 0x9400, Outermost: true}, true)
	if got := s.stacks.tops[tid]; !got.outermost {
		t.Fatalf("complete unwind of the reach: top %+v", got)
	}
	s.learnTop(tid, 0xa000, monotonic(), unwind.Stopped, over, false)
	if got := s.stacks.tops[tid]; got.top != reachOf(0xa000) || !got.reach {
		t.Errorf("a full copy above the top: top %+v, want the reach %#x", got, reachOf(0xa000))
	}
}

// matchRecord pairs each sample with its own stack record: one its
// program wrote 658 µs after the sample's stamp (a stalled virtual CPU),
// behind another thread's, is still the sample's, the other thread's stays
// for its own sample, and a sample whose record is missing takes neither
// its neighbour's (a period later, or at another stack pointer) nor one of
// another thread; records too old for any later sample are dropped.
func TestMatchRecord(t *testing.T) {
	const us = uint64(1000)
	rec := func(tid uint32, at, sp uint64) *sampleprog.Snapshot {
		return &sampleprog.Snapshot{TID: tid, Time: at, IsStack: true, StackSP: sp}
	}
	smp := func(tid uint32, at uint64) *perf.Sample {
		return &perf.Sample{Header: perf.Header{TID: tid, Time: at, CPU: 1}}
	}
	// Thread 1 runs on CPU 1 from 1 ms on, sampled every millisecond.
	a1, b1, a2, a3, a5 := rec(1, 1000*us+658*us, 0xa0), rec(2, 1000*us+310*us, 0xb0), rec(1, 2000*us+20*us, 0xa0), rec(1, 3000*us+5*us, 0xa8), rec(1, 5000*us+30*us, 0xa0)
	pending := map[uint32][]*sampleprog.Snapshot{1: {rec(3, 100*us, 0xc0), b1, a1, a2, a3, a5}}
	for _, c := range []struct {
		s    *perf.Sample
		sp   uint64
		want *sampleprog.Snapshot
	}{
		{smp(1, 1000*us), 0xa0, a1},
		{smp(2, 1000*us+300*us), 0xb0, b1},
		{smp(1, 2000*us), 0xa0, a2},
		{smp(1, 3000*us), 0xa0, nil}, // a3 is at another stack pointer
		{smp(3, 3000*us), 0xc0, nil}, // thread 3's record is long gone
		{smp(1, 4000*us), 0xa0, nil}, // its record is missing: a5 is the next sample's
		{smp(1, 5000*us), 0xa0, a5},
	} {
		if got := matchRecord(pending, c.s, 999, c.sp); got != c.want {
			t.Errorf("sample of %d at %d µs: record %+v, want %+v", c.s.TID, c.s.Time/us, got, c.want)
		}
	}
	if q := pending[1]; len(q) != 0 {
		t.Errorf("left pending: %d records, want none", len(q))
	}
}

// matchRecord pairs a sample with the record stamped with its time,
// whatever the timing: the record of a sample whose virtual CPU stalled
// for 2 ms between the sample's stamp and the program (more than any
// window), and of a sample handled after a later one of the same CPU (two
// rings read one after the other), is still its own; a sample whose record
// was lost takes none, not even its thread's next, 400 µs later at the
// same stack pointer (a timer catching up after a stall); a record that no
// sample took stays for expireRecords.
func TestMatchRecordStamped(t *testing.T) {
	const us = uint64(1000)
	rec := func(tid uint32, stamp, at, sp uint64) *sampleprog.Snapshot {
		return &sampleprog.Snapshot{TID: tid, Stamp: stamp, Time: at, IsStack: true, StackSP: sp}
	}
	smp := func(tid uint32, at uint64) *perf.Sample {
		return &perf.Sample{Header: perf.Header{TID: tid, Time: at, CPU: 1}}
	}
	stalled := rec(1, 1000*us, 3000*us, 0xa0)    // the program ran 2 ms after the stamp
	other := rec(2, 2000*us, 2000*us+3*us, 0xb0) // written before the stalled one's
	next := rec(1, 4400*us, 4400*us+5*us, 0xa0)  // the sample at 4 ms lost its record
	early, late := rec(1, 5000*us, 5000*us+4*us, 0xa8), rec(1, 7000*us, 7000*us+4*us, 0xa8)
	orphan := rec(3, 6000*us, 6000*us+2*us, 0xc0) // its sample was lost
	pending := map[uint32][]*sampleprog.Snapshot{1: {other, stalled, next, early, orphan, late}}
	for _, c := range []struct {
		s    *perf.Sample
		sp   uint64
		want *sampleprog.Snapshot
	}{
		{smp(1, 1000*us), 0xa0, stalled},
		{smp(2, 2000*us), 0xb0, other},
		{smp(1, 4000*us), 0xa0, nil},
		{smp(1, 4400*us), 0xa0, next},
		{smp(1, 7000*us), 0xa8, late},
		{smp(1, 5000*us), 0xa8, early},
		{smp(3, 6001*us), 0xc0, nil}, // another time: not its sample's
	} {
		if got := matchRecord(pending, c.s, 999, c.sp); got != c.want {
			t.Errorf("sample of %d at %d µs: record %+v, want %+v", c.s.TID, c.s.Time/us, got, c.want)
		}
	}
	unstamped := &sampleprog.Snapshot{TID: 4, Time: 9000 * us}
	pending[1] = append(pending[1], rec(3, 8000*us, 8000*us+2*us, 0xc0), unstamped)
	expireRecords(pending, 7000*us)
	if q := pending[1]; len(q) != 2 || q[0].Stamp != 8000*us || q[1] != unstamped {
		t.Errorf("after expiring records stamped up to 7 ms: %d records left, want the one at 8 ms and the unstamped one", len(q))
	}
}
