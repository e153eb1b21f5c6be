package loader

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
)

// ObjectLoads reads the Mmap records of recordings (the same files given to
// Load) and returns, for each process and object, its first executable
// mapping, ordered by time. Mappings that the recorder synthesised from
// /proc (attaching, or the state right after an exec) carry the time they
// were read. Damaged files are read up to their last complete
// record, as Load does.
func ObjectLoads(paths []string) ([]profile.ObjectLoad, error) {
	type key struct {
		pid  uint32
		path string
	}
	seen := map[key]bool{}
	var out []profile.ObjectLoad
	err := eachMmap(paths, func(v *recording.Mmap) {
		k := key{v.PID, v.Path}
		if !seen[k] {
			seen[k] = true
			out = append(out, profile.ObjectLoad{PID: v.PID, Path: v.Path, Time: v.Time})
		}
	})
	if err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time < out[j].Time })
	return out, nil
}

// RecordedObjects lists the files with a build-id that recordings mapped
// (ELF programs and libraries), each path and build-id once, by path.
func RecordedObjects(paths []string) ([]profile.RecordedObject, error) {
	seen := map[string]bool{}
	var out []profile.RecordedObject
	err := eachMmap(paths, func(m *recording.Mmap) {
		if len(m.BuildID) == 0 || !strings.HasPrefix(m.Path, "/") {
			return
		}
		if k := m.Path + "\x00" + string(m.BuildID); !seen[k] {
			seen[k] = true
			out = append(out, profile.RecordedObject{Path: m.Path, BuildID: append([]byte(nil), m.BuildID...)})
		}
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// eachMmap calls fn with every Mmap record of the recordings, in order.
// Damaged files are read up to their last complete record, as Load does.
// The runs of values are stepped over unread, and the samples, stacks and
// values read are decoded into one record each (Reuse): on recordings of
// sampled values, decoding the values would be nearly all of the reading.
func eachMmap(paths []string, fn func(*recording.Mmap)) error {
	for _, path := range paths {
		r, err := recording.Open(path)
		if err != nil {
			return err
		}
		r.Reuse()
		r.SkipValues(func(*recording.ValueIndex) bool { return true })
		for {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				r.Close()
				return fmt.Errorf("reading %s: %w", path, err)
			}
			if m, ok := rec.(*recording.Mmap); ok {
				fn(m)
			}
		}
		r.Close()
	}
	return nil
}
