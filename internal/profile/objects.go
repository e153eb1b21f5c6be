package profile

import (
	"fmt"
	"io"
	"sort"

	"github.com/culprit-dev/culprit/internal/recording"
)

// ObjectLoad says when an object was first mapped executable into a process:
// analyses use it to tell objects loaded at start (the executable and the
// libraries the dynamic loader maps before the program runs) from objects
// dlopen'ed later (plug-ins).
type ObjectLoad struct {
	PID  uint32
	Path string // object path as recorded
	Time uint64 // sample clock, ns, of the first Mmap record of Path in PID
}

// ObjectLoads reads the Mmap records of recordings (the same files given to
// Load) and returns, for each process and object, its first executable
// mapping, ordered by time. Mappings that the recorder synthesised from
// /proc (attaching, or the state right after an exec) carry the time they
// were read. Damaged files are read up to their last complete
// record, as Load does.
func ObjectLoads(paths []string) ([]ObjectLoad, error) {
	type key struct {
		pid  uint32
		path string
	}
	seen := map[key]bool{}
	var out []ObjectLoad
	for _, path := range paths {
		r, err := recording.Open(path)
		if err != nil {
			return nil, err
		}
		for {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				r.Close()
				return nil, fmt.Errorf("reading %s: %w", path, err)
			}
			switch v := rec.(type) {
			case *recording.Mmap:
				k := key{v.PID, v.Path}
				if seen[k] {
					continue
				}
				seen[k] = true
				out = append(out, ObjectLoad{PID: v.PID, Path: v.Path, Time: v.Time})
			}
		}
		r.Close()
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time < out[j].Time })
	return out, nil
}
