package recorder

import (
	"github.com/culprit-dev/culprit/internal/proc"
	"github.com/culprit-dev/culprit/internal/unwind"
)

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
	t := r.s.tables.Lookup(m.Path)
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
