package recorder

import (
	"slices"
	"testing"

	"github.com/culprit-dev/culprit/internal/perf"
	"github.com/culprit-dev/culprit/internal/unwind"
)

// A stack completed at main gets the frames beyond main of the thread's
// unwind that reached the outermost frame, whichever came first; frames
// it already has beyond main must agree with them.
func TestWithOuter(t *testing.T) {
	s := &session{}
	r := &perf.Sample{}
	r.PID, r.TID = 7, 7
	const main, lscm, lsm, start = 0x1100, 0x9100, 0x9200, 0x1020
	// Completed at main before anything was learned, and the process's
	// memory was read already without result: the stack ends at main.
	s.outer = map[uint32]outerFrames{7: {read: true}}
	at := unwind.Need{InMain: true, Main: 2}
	if got := s.withOuter(r, unwind.Regs{}, nil, []uint64{0x10, 0x20, main}, at); !slices.Equal(got, []uint64{0x10, 0x20, main}) {
		t.Errorf("nothing learned: %x", got)
	}
	// The outermost unwind through main: learned, unchanged.
	full := []uint64{0x30, main, lscm, lsm, start}
	if got := s.withOuter(r, unwind.Regs{}, nil, slices.Clone(full), unwind.Need{InMain: true, Outermost: true, Main: 1}); !slices.Equal(got, full) {
		t.Errorf("outermost: %x", got)
	}
	// Completed at main: the learned frames appended.
	if got := s.withOuter(r, unwind.Regs{}, nil, []uint64{0x10, 0x20, main}, at); !slices.Equal(got, []uint64{0x10, 0x20, main, lscm, lsm, start}) {
		t.Errorf("at main: %x", got)
	}
	// Completed beyond main, in the start code: the rest appended.
	if got := s.withOuter(r, unwind.Regs{}, nil, []uint64{0x10, main, lscm}, unwind.Need{InMain: true, Main: 1}); !slices.Equal(got, []uint64{0x10, main, lscm, lsm, start}) {
		t.Errorf("beyond main: %x", got)
	}
	// Frames beyond main that differ from the learned ones: left alone.
	if got := s.withOuter(r, unwind.Regs{}, nil, []uint64{0x10, main, 0x5555}, unwind.Need{InMain: true, Main: 1}); !slices.Equal(got, []uint64{0x10, main, 0x5555}) {
		t.Errorf("disagreeing: %x", got)
	}
	// Another thread learns its own; an exit forgets.
	r.TID = 8
	s.outer[8] = outerFrames{read: true}
	if got := s.withOuter(r, unwind.Regs{}, nil, []uint64{0x10, main}, unwind.Need{InMain: true, Main: 1}); len(got) != 2 {
		t.Errorf("other thread: %x", got)
	}
	s.threadGone(7)
	if _, ok := s.outer[7]; ok {
		t.Error("thread 7's frames kept after it ended")
	}
}

// fp mode samples rbx and rdi beside rbp, rsp and rip: the dynamic
// loader's lazy-binding resolver keeps its CFA in rbx, glibc's vfork its
// return address in rdi, and without them a sample there loses its
// caller (the kernel's frame-pointer chain skips it). The unwinder knows
// only the registers a sample carries.
func TestKnownRegs(t *testing.T) {
	if k := knownRegs(perf.RegsUnwind); k != 1<<3|1<<5|1<<6|1<<7|1<<16 {
		t.Errorf("fp mode's registers are DWARF %b, want rbx, rdi, rbp, rsp and rip", k)
	}
	if k := knownRegs(perf.RegsMask); k != unwind.AllRegs {
		t.Errorf("all registers are DWARF %b, want %b", k, unwind.AllRegs)
	}
}
