package recorder

import (
	"debug/elf"
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

// object is what the recorder knows of an ELF file for unwinding.
type object struct {
	table *unwind.Table // nil when the file has no CFI
	loads []elf.ProgHeader
}

func loadSegments(f *elf.File) []elf.ProgHeader {
	var out []elf.ProgHeader
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			out = append(out, p.ProgHeader)
		}
	}
	return out
}

func (s *session) object(path string) *object {
	if o, ok := s.objects[path]; ok {
		return o
	}
	o := &object{}
	s.objects[path] = o
	if len(path) == 0 || path[0] != '/' {
		return o
	}
	f, err := elf.Open(path)
	if err != nil {
		return o
	}
	defer f.Close()
	o.loads = loadSegments(f)
	if t, err := s.tables.Get(path); err == nil {
		o.table = t
	}
	return o
}

// resolver finds the CFI of the object mapped at a PC of one process.
type resolver struct {
	s   *session
	sp  *space
	pid uint32
}

func (r *resolver) Resolve(pc uint64) (unwind.Module, bool) {
	m, ok := r.sp.find(pc)
	if !ok {
		return unwind.Module{}, false
	}
	o := r.s.object(m.path)
	if o.table == nil {
		return unwind.Module{}, false
	}
	// ELF vaddr = pc - (start - pgoff + p_offset - p_vaddr) for the segment
	// holding file offset pgoff.
	off := pc - m.start + m.pgoff
	for _, p := range o.loads {
		if off >= p.Off && off < p.Off+p.Filesz {
			return unwind.Module{Table: o.table, Bias: m.start - m.pgoff + p.Off - p.Vaddr}, true
		}
	}
	if len(o.loads) == 0 {
		return unwind.Module{}, false
	}
	p := o.loads[0]
	return unwind.Module{Table: o.table, Bias: m.start - m.pgoff + p.Off - p.Vaddr}, true
}
