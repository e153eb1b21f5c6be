// Package profile holds the in-memory model built from one or more recordings:
// symbolized frames, stacks, time-ordered samples, threads. Analyses and views
// work on this model; they never read recording files or ELF files themselves.
// Load builds the model, reading recordings through package recording and
// naming frames through package symbol. The package does not talk to the
// kernel and does not print.
package profile

import "github.com/culprit-dev/culprit/internal/recording"

// Frame is one symbolized frame. Inlined functions are frames of their own.
type Frame struct {
	Function string // source-level function name (clone suffixes removed); "" when unknown
	File     string // source file, "" when unknown
	Line     int    // source line, 0 when unknown
	Object   string // object path, "[kernel.kallsyms]", a kernel module "[name]", "[vdso]" or "[unknown]"
	Offset   uint64 // file offset inside Object for user frames, address for kernel frames
	Kernel   bool   // a kernel frame
	Inlined  bool   // inlined into the next (outer) frame of the stack
}

// Sample is one CPU-time sample of the model.
type Sample struct {
	Time   uint64 // ns, sample clock (CLOCK_MONOTONIC)
	PID    uint32
	TID    uint32
	CPU    uint32
	Period uint64          // ns of CPU time this sample stands for
	Stack  int32           // index into Profile.Stacks
	Event  recording.Event // what took the sample (CPU tick, syscall, switch)
	Arg    uint64          // the event's argument (syscall number, prev_state)
}

// Thread is what is known of a thread.
type Thread struct {
	PID  uint32
	TID  uint32
	Comm string
}

// Source describes one recording file that went into the profile.
type Source struct {
	Path     string
	Complete bool   // the file ended with an End record
	Salvage  string // what the reader salvaged from a damaged file, "" if intact
	Samples  int
}

// Profile is the model built from recordings.
type Profile struct {
	Frames    []Frame   // unique frames
	Stacks    [][]int32 // frame indexes, innermost first: kernel frames, then user frames
	Samples   []Sample  // ordered by time
	Threads   map[uint32]Thread
	Lost      uint64 // samples the kernel or recorder dropped
	Throttled uint64 // throttle events reported by the kernel
	Metas     []recording.Meta
	Sources   []Source
	Warnings  []string // things the user should know, e.g. objects without symbols
	// StartTime is the smallest sample time, used as the origin of --from/--to.
	StartTime uint64
}
