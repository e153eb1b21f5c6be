package profile

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/culprit-dev/culprit/internal/recording"
)

// Source lines of sampled values, and the program a recording ran.
//
// A Value carries the PC of the frame it was read in: the sampled PC at
// depth 0, the call site in a caller frame at depth > 0. Load symbolizes it in
// the address space of the value's process at the time of the value, as it
// does for stacks, and keeps the innermost frame (the innermost inlined
// function at that PC, with its file and line). Caller PCs are looked up at
// PC−1, as return addresses in stacks are: that lands in the call instruction
// whether the recorder wrote the return address or the call's own address
// (then in the instruction before it, in the same function).

// pcFrames caches the symbolized value PCs of one version of an address
// space: PC<<1 | caller → 1 + frame index (caller PCs are looked up at
// PC−1, so they are cached apart).
type pcFrames struct {
	space  int
	frames map[uint64]int32
}

// valuePCs are the loader's caches of symbolized value PCs: per space id,
// and the last one used (values come in runs from one process).
type valuePCs struct {
	last   *pcFrames
	spaces map[int]*pcFrames
}

// kernelStart is the lowest kernel address on 64-bit Linux; values are read
// in user frames, so a PC above it is not symbolized.
const kernelStart = 0xffff800000000000

// valueFrame returns 1 + the index of the innermost frame at a value's PC in
// the current address space of pid, or 0 when the PC is 0 or a kernel
// address.
func (l *loader) valueFrame(pid uint32, pc uint64, depth uint8) int32 {
	if pc == 0 || pc >= kernelStart {
		return 0
	}
	sp := l.spaces[pid]
	if sp == nil {
		sp = l.newSpace(nil)
		l.spaces[pid] = sp
	}
	c := l.vpcs.last
	if c == nil || c.space != sp.id {
		if l.vpcs.spaces == nil {
			l.vpcs.spaces = map[int]*pcFrames{}
		}
		if c = l.vpcs.spaces[sp.id]; c == nil {
			c = &pcFrames{space: sp.id, frames: map[uint64]int32{}}
			l.vpcs.spaces[sp.id] = c
		}
		l.vpcs.last = c
	}
	caller := depth > 0
	k := pc << 1
	if caller {
		k |= 1
	}
	if f, ok := c.frames[k]; ok {
		return f
	}
	f := int32(0)
	if ids := l.userFrames(pid, sp, pc, caller); len(ids) > 0 {
		f = ids[0] + 1
	}
	c.frames[k] = f
	return f
}

// FrameIndex returns the index into Profile.Frames of the innermost frame at
// the value's PC (see ValueFrame), or −1 when it was not symbolized (no PC, or
// a value built outside Load).
func (v Value) FrameIndex() int32 { return v.frame - 1 }

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

// Executable is the program a recording ran, as its Mmap records say.
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

// Executables returns, for each recording (the files given to Load), the
// program it ran: the object that holds the PC of the first Value record
// (the program whose variables were sampled), or, in a recording without
// values, the first file mapped executable. A file is read only up to its
// first value. Empty Path: the recording maps no file.
func Executables(paths []string) ([]Executable, error) {
	out := make([]Executable, len(paths))
	for i, path := range paths {
		e, err := executable(path)
		if err != nil {
			return nil, err
		}
		out[i] = e
	}
	return out, nil
}

func executable(path string) (Executable, error) {
	r, err := recording.Open(path)
	if err != nil {
		return Executable{}, err
	}
	defer r.Close()
	maps := map[uint32][]mapping{} // per process, sorted by start
	var first Executable
	misses := 0 // values whose PC no mapping explains
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return first, nil
		}
		if err != nil {
			return Executable{}, fmt.Errorf("reading %s: %w", path, err)
		}
		switch v := rec.(type) {
		case *recording.Mmap:
			m := mapping{start: v.Start, end: v.Start + v.Len, pgoff: v.Pgoff, path: v.Path, buildID: v.BuildID}
			var list []mapping
			for _, o := range maps[v.PID] {
				if o.end <= m.start || o.start >= m.end {
					list = append(list, o)
				}
			}
			list = append(list, m)
			sort.Slice(list, func(i, j int) bool { return list[i].start < list[j].start })
			maps[v.PID] = list
			if first.Path == "" && strings.HasPrefix(v.Path, "/") {
				first = Executable{Path: v.Path, BuildID: v.BuildID, PID: v.PID}
			}
		case *recording.Comm:
			if v.Exec && v.PID == v.TID {
				delete(maps, v.PID)
			}
		case *recording.Task:
			if !v.Exit && v.PID != v.PPID {
				if _, ok := maps[v.PID]; !ok {
					maps[v.PID] = append([]mapping(nil), maps[v.PPID]...)
				}
			}
		case *recording.Value:
			pc := v.PC
			if v.Depth > 0 && pc > 0 {
				pc--
			}
			sp := space{maps: maps[v.PID]}
			if m, ok := sp.find(pc); ok && strings.HasPrefix(m.path, "/") {
				return Executable{Path: m.path, BuildID: m.buildID, PID: v.PID, FromValues: true}, nil
			}
			if misses++; misses >= 1000 {
				return first, nil
			}
		}
	}
}
