package ptracer

import (
	"github.com/culprit-dev/culprit/internal/proc"
	"github.com/culprit-dev/culprit/internal/unwind"
)

// resolver finds the CFI of the object mapped at a PC of one process, and
// notes PCs that no known mapping holds.
type resolver struct {
	s    *session
	sp   *proc.Space
	miss bool
}

func (r *resolver) Resolve(pc uint64) (unwind.Module, bool) {
	m, ok := r.sp.Find(pc)
	if !ok {
		r.miss = true
		return unwind.Module{}, false
	}
	t := r.s.tables.Lookup(m.Path)
	if t == nil {
		return unwind.Module{}, false
	}
	bias, ok := t.Bias(m.Start, m.Offset)
	if !ok {
		return unwind.Module{}, false
	}
	return unwind.Module{Table: t, Bias: bias}, true
}
