package ptracer

import (
	"sort"

	"github.com/culprit-dev/culprit/internal/unwind"
)

// mapping is an executable mapping of a traced process.
type mapping struct {
	start, end, pgoff uint64
	path              string
}

// space is the executable address space of one process, sorted by start.
type space struct {
	maps []mapping
}

func (sp *space) add(m mapping) {
	// A new mapping replaces whatever it overlaps, as mmap(2) does.
	out := sp.maps[:0:0]
	for _, o := range sp.maps {
		if o.end <= m.start || o.start >= m.end {
			out = append(out, o)
		}
	}
	i := sort.Search(len(out), func(i int) bool { return out[i].start >= m.start })
	out = append(out, mapping{})
	copy(out[i+1:], out[i:])
	out[i] = m
	sp.maps = out
}

func (sp *space) find(pc uint64) (mapping, bool) {
	i := sort.Search(len(sp.maps), func(i int) bool { return sp.maps[i].end > pc })
	if i < len(sp.maps) && sp.maps[i].start <= pc {
		return sp.maps[i], true
	}
	return mapping{}, false
}

func (sp *space) clone() *space {
	return &space{maps: append([]mapping(nil), sp.maps...)}
}

// tableFor returns the CFI table of an object file, nil when it has none.
// Pseudo-objects such as [vdso] are registered in s.objects beforehand.
func (s *session) tableFor(path string) *unwind.Table {
	if t, ok := s.objects[path]; ok {
		return t
	}
	var t *unwind.Table
	if len(path) > 0 && path[0] == '/' {
		t, _ = s.tables.Get(path)
	}
	s.objects[path] = t
	return t
}

// resolver finds the CFI of the object mapped at a PC of one process, and
// notes PCs that no known mapping holds.
type resolver struct {
	s    *session
	sp   *space
	miss bool
}

func (r *resolver) Resolve(pc uint64) (unwind.Module, bool) {
	m, ok := r.sp.find(pc)
	if !ok {
		r.miss = true
		return unwind.Module{}, false
	}
	t := r.s.tableFor(m.path)
	if t == nil {
		return unwind.Module{}, false
	}
	bias, ok := t.Bias(m.start, m.pgoff)
	if !ok {
		return unwind.Module{}, false
	}
	return unwind.Module{Table: t, Bias: bias}, true
}
