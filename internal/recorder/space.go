package recorder

import (
	"github.com/culprit-dev/culprit/internal/proc"
	"github.com/culprit-dev/culprit/internal/unwind"
)

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

// resolver finds the CFI of the object mapped at a PC of one process.
type resolver struct {
	s  *session
	sp *proc.Space
}

// Object tells the expression sampler which file is mapped at pc and its
// load bias.
func (r *resolver) Object(pc uint64) (string, uint64, bool) {
	m, ok := r.sp.Find(pc)
	if !ok || len(m.Path) == 0 || m.Path[0] != '/' {
		return "", 0, false
	}
	t := r.s.tableFor(m.Path)
	if t == nil {
		return "", 0, false
	}
	bias, ok := t.Bias(m.Start, m.Offset)
	return m.Path, bias, ok
}

func (r *resolver) Resolve(pc uint64) (unwind.Module, bool) {
	m, ok := r.sp.Find(pc)
	if !ok {
		return unwind.Module{}, false
	}
	t := r.s.tableFor(m.Path)
	if t == nil {
		return unwind.Module{}, false
	}
	bias, ok := t.Bias(m.Start, m.Offset)
	if !ok {
		return unwind.Module{}, false
	}
	return unwind.Module{Table: t, Bias: bias}, true
}
