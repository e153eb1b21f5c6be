package loader

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
)

// Values' source lines, and the program a recording ran.
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
// space: PC<<1 | caller → frame index, −1 for none (caller PCs are looked up at
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

// valueFrame returns the index of the innermost frame at a value's PC in
// the current address space of pid, or −1 when the PC is 0 or a kernel
// address.
func (l *loader) valueFrame(pid uint32, pc uint64, depth uint8) int32 {
	if pc == 0 || pc >= kernelStart {
		return -1
	}
	sp := l.spaces[pid]
	if sp == nil {
		sp = l.newSpace(nil)
		l.setSpace(pid, sp)
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
	f := int32(-1)
	if ids := l.userFrames(pid, sp, pc, caller); len(ids) > 0 {
		f = ids[0]
	}
	c.frames[k] = f
	return f
}

// Executables returns, for each recording (the files given to Load), the
// program it ran: the executable of the process of the first Value record
// (the program whose variables were sampled: the first file mapped after
// its exec, else the object that holds the value's PC, which may be one of
// its libraries), or, in a recording without values, the first file
// mapped executable. A file is read only up to its first value. Empty
// Path: the recording maps no file.
func Executables(paths []string) ([]profile.Executable, error) {
	out := make([]profile.Executable, len(paths))
	for i, path := range paths {
		e, err := executable(path)
		if err != nil {
			return nil, err
		}
		out[i] = e
	}
	return out, nil
}

func executable(path string) (profile.Executable, error) {
	r, err := recording.Open(path)
	if err != nil {
		return profile.Executable{}, err
	}
	defer r.Close()
	maps := map[uint32][]mapping{} // per process, sorted by start
	exes := map[uint32]mapping{}   // per process: its first file mapping since its exec
	var first profile.Executable
	misses := 0 // values whose PC no mapping explains
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return first, nil
		}
		if err != nil {
			return profile.Executable{}, fmt.Errorf("reading %s: %w", path, err)
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
				first = profile.Executable{Path: v.Path, BuildID: v.BuildID, PID: v.PID}
			}
			if _, ok := exes[v.PID]; !ok && strings.HasPrefix(v.Path, "/") {
				exes[v.PID] = m
			}
		case *recording.Comm:
			if v.Exec && v.PID == v.TID {
				delete(maps, v.PID)
				delete(exes, v.PID)
			}
		case *recording.Task:
			if !v.Exit && v.PID != v.PPID {
				if _, ok := maps[v.PID]; !ok {
					maps[v.PID] = append([]mapping(nil), maps[v.PPID]...)
				}
				if e, ok := exes[v.PPID]; ok {
					if _, ok := exes[v.PID]; !ok {
						exes[v.PID] = e
					}
				}
			}
		case *recording.Value:
			if e, ok := exes[v.PID]; ok {
				return profile.Executable{Path: e.path, BuildID: e.buildID, PID: v.PID, FromValues: true}, nil
			}
			pc := v.PC
			if v.Depth > 0 && pc > 0 {
				pc--
			}
			sp := space{maps: maps[v.PID]}
			if m, ok := sp.find(pc); ok && strings.HasPrefix(m.path, "/") {
				return profile.Executable{Path: m.path, BuildID: m.buildID, PID: v.PID, FromValues: true}, nil
			}
			if misses++; misses >= 1000 {
				return first, nil
			}
		}
	}
}
