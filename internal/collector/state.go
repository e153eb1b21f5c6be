package collector

import (
	"errors"

	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/unwind"
)

// State is the hook through which a collector has program state sampled
// (expressions, rules, vProf values): internal/cli implements it over
// internal/state and hands it to the collector, which calls it at each CPU
// sample it can read state at. A nil State samples none.
type State interface {
	// Wants reports whether samples of processes running exe are to be
	// looked at (a collector skips unwinding frames for the others).
	Wants(exe string) bool
	// Sample evaluates at one sample. The thread's memory and frames are
	// valid only during the call.
	Sample(Thread) Verdict
	// Warnings are said once the run is over.
	Warnings() []string
}

// MemoryState is a State that says which memory must be copied at the
// sampled instant by a collector that cannot read the process afterwards
// (the perf collector copies it with a BPF program in the sample's
// interrupt).
type MemoryState interface {
	State
	// GlobalMemory lists the ranges of the globals of obj, an object
	// mapped in processes of exe (exe itself or a shared library), to copy
	// at each sample, at obj's ELF addresses (From < 0: add obj's load bias
	// in the process) or behind a pointer of another range of the list.
	GlobalMemory(exe, obj string) []MemoryRange
	// NeedsHeap reports whether evaluating in exe follows pointers.
	NeedsHeap(exe string) bool
	// MayNeedHeap is NeedsHeap for the main executable, asked before the
	// run starts (it may build the executable's schema).
	MayNeedHeap(mainExe string) bool
}

// MemoryRange is memory a sample must copy: Len bytes at Addr (an ELF
// address of the object planned) when From < 0, else at the pointer found PtrOff bytes into the
// copy of range From. Names are the expressions and variables read there.
type MemoryRange struct {
	Addr   uint64
	Len    int
	From   int
	PtrOff int
	Names  []string
}

// Thread is a thread at a sample.
type Thread struct {
	PID, TID int
	Time     uint64 // CLOCK_MONOTONIC ns, the recording's clock
	Exe      string // the process's executable
	// Frames are the unwound frames, innermost first, each with the
	// registers CFI restores in it and its CFA (unwind.UnwindFrames).
	Frames []unwind.Frame
	// Mem reads memory as it was at the sample; nil: none.
	Mem func(addr uint64, buf []byte) error
	// Objects says which object is mapped at a PC and its load bias.
	Objects interface {
		Object(pc uint64) (path string, bias uint64, ok bool)
	}
}

// Verdict is what the hook decided at a sample.
type Verdict struct {
	Records []recording.Record // written after the sample
	Drop    bool               // leave the sample out of the recording
	Keep    int                // keep this many innermost user frames (0: all)
}

// ErrNotInCopy is returned by StackMemory outside the copied stack.
var ErrNotInCopy = errors.New("outside the stack copied at the sample (use --collector ptrace to read heap and globals)")

// StackMemory reads memory from a copy of the user stack taken at the
// sample, and nothing else: what a perf-event sample carries.
func StackMemory(sp uint64, data []byte) func(addr uint64, buf []byte) error {
	return func(addr uint64, buf []byte) error {
		if addr < sp || addr-sp+uint64(len(buf)) > uint64(len(data)) {
			return ErrNotInCopy
		}
		copy(buf, data[addr-sp:])
		return nil
	}
}
