package profile

import "github.com/culprit-dev/culprit/internal/recording"

// Probe is a traced function of the model, merged across recordings by
// function and object.
type Probe struct {
	Function string
	Object   string
	Offset   uint64   // file offset of the entry probe in Object
	Every    uint32   // every Every-th call was recorded (0, 1: all)
	Params   []string // "name:code:type" of the recorded arguments (see recording.Probe)
	Ret      string   // "code:type" of the return value (see recording.Probe)
	Since    uint64   // when it was set (recording.Probe.Since)
}

// Call is one traced call of the model.
type Call struct {
	Start, End uint64 // ns, sample clock
	Child      uint64 // ns in traced calls it made
	PID, TID   uint32
	Probe      int32 // index into Profile.Probes
	Caller     int32 // index into Profile.Probes of the traced call it was made from; -1: none
	Depth      uint32
	// Site is the index into Profile.Frames of the call site (the
	// function, or inlined function, that made the call); -1 when unknown.
	Site  int32
	Flags uint32 // recording.CallUnreturned
	Args  []uint64
	Ret   uint64
	// Strs are the strings of the probe's first two char * parameters
	// (code s8), as the call ended.
	Strs []string
	// Off is the ns its thread was off the CPU during the call, ChildOff
	// the part of it inside Child; known when Flags has
	// recording.CallCPU.
	Off, ChildOff uint64
	// Goroutine is, in a Go program, the goroutine that made the call
	// (recording.Call.Goroutine); 0 otherwise.
	Goroutine uint64
}

// Inclusive is the call's duration in ns.
func (c *Call) Inclusive() uint64 { return c.End - c.Start }

// Exclusive is the call's duration without the traced calls it made.
func (c *Call) Exclusive() uint64 {
	if c.Child > c.End-c.Start {
		return 0
	}
	return c.End - c.Start - c.Child
}

// HasCPU reports whether the call's on-CPU time is known.
func (c *Call) HasCPU() bool { return c.Flags&recording.CallCPU != 0 }

// InclusiveCPU is the ns the call's thread was on a CPU during the call
// (HasCPU): its duration less the time the thread was preempted, blocked
// or asleep.
func (c *Call) InclusiveCPU() uint64 {
	d := c.End - c.Start
	if c.Off > d {
		return 0
	}
	return d - c.Off
}

// ExclusiveCPU is InclusiveCPU without the on-CPU time of the traced
// calls it made.
func (c *Call) ExclusiveCPU() uint64 {
	in := c.InclusiveCPU()
	child := uint64(0)
	if c.ChildOff < c.Child {
		child = c.Child - c.ChildOff
	}
	if child > in {
		return 0
	}
	return in - child
}

// CPULost reports whether the call's on-CPU time was being measured but
// is not known (recording.CallCPULost).
func (c *Call) CPULost() bool { return c.Flags&recording.CallCPULost != 0 }

// Unreturned reports whether the call left without returning (longjmp,
// unwinding, exit): its end is an upper bound.
func (c *Call) Unreturned() bool { return c.Flags&recording.CallUnreturned != 0 }

// Unwound reports whether the call was left by a C++ exception or Rust
// panic (also Unreturned): its end is when the unwinder reached a catch
// or clean-up below it.
func (c *Call) Unwound() bool { return c.Flags&recording.CallUnwound != 0 }
