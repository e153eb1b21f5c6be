package profile

import "fmt"

// Source lines of sampled values, and the program a recording ran.
//
// A Value carries the PC of the frame it was read in; the loader
// symbolizes it (package loader) and records the innermost frame at it.

// FrameIndex returns the index into Profile.Frames of the innermost frame at
// the value's PC (see ValueFrame), or −1 when it was not symbolized (no PC, or
// a value built outside the loader).
func (v Value) FrameIndex() int32 { return v.frame - 1 }

// SetFrame records i, an index into Profile.Frames, as the innermost frame
// at the value's PC; −1: not symbolized. The loader sets it.
func (v *Value) SetFrame(i int32) { v.frame = i + 1 }

// ValueFrame returns the innermost frame at the value's PC: the function
// (the innermost inlined one), file and line where the value was read, or
// the call site for a value read in a caller frame. ok is false when the
// value has no symbolized PC; a PC outside every known mapping gives an
// "[unknown]" frame with ok true.
func (p *Profile) ValueFrame(v Value) (f Frame, ok bool) {
	i := v.FrameIndex()
	if i < 0 || int(i) >= len(p.Frames) {
		return Frame{}, false
	}
	return p.Frames[i], true
}

// Executable is the program a recording ran, as its Mmap records say
// (loader.Executables).
type Executable struct {
	Path    string
	BuildID []byte // GNU build-id from the Mmap record, nil when not recorded
	PID     uint32 // the process it was found in
	// FromValues is set when Path is the object holding the PC of the
	// recording's first value, i.e. the program whose variables were
	// sampled; otherwise it is the first file mapped executable in the
	// recording (the launched or attached program, as the recorder writes
	// its mappings first).
	FromValues bool
}

// String returns "path (build-id hex)" or the path alone.
func (e Executable) String() string {
	if len(e.BuildID) == 0 {
		return e.Path
	}
	return fmt.Sprintf("%s (build-id %x)", e.Path, e.BuildID)
}

// Same reports whether two executables are the same build: equal build-ids
// when both have one, else equal paths.
func (e Executable) Same(o Executable) bool {
	if len(e.BuildID) > 0 && len(o.BuildID) > 0 {
		return string(e.BuildID) == string(o.BuildID)
	}
	return e.Path == o.Path
}
