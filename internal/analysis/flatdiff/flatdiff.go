// Package flatdiff compares the flat profiles of two runs of a program, as
// perf diff and pprof -diff_base do: for each function (or line, object,
// process, thread) its share of the samples and its CPU time in a base run
// and in a new run, the change of share, and whether that change exceeds
// sampling noise. It reads only profile.Profile.
//
// Noise: a share p estimated from N samples has variance p(1−p)/N, and the
// two runs are sampled independently, so the difference p₂−p₁ has standard
// deviation sqrt(p₁(1−p₁)/N₁ + p₂(1−p₂)/N₂). A change is significant when
// it exceeds two of those (the two-sigma rule of PCT §6.2, applied to two
// runs instead of two rows of one run).
package flatdiff

import (
	"math"
	"sort"
	"strings"

	"github.com/culprit-dev/culprit/internal/profile"
)

// Run summarizes one side of the comparison.
type Run struct {
	Samples int
	CPU     uint64 // ns of CPU time the samples stand for
}

// Side is one row's figures in one run.
type Side struct {
	Self, Total         int     // samples
	SelfFrac, TotalFrac float64 // of the run's samples
	SelfCPU, TotalCPU   uint64  // ns: samples times the run's mean sample period
}

// Row compares one label of the two runs.
type Row struct {
	Name, Object string
	Base, New    Side
	// DeltaSelf and DeltaTotal are New minus Base fractions; ErrSelf and
	// ErrTotal are two standard deviations of those differences.
	DeltaSelf, DeltaTotal float64
	ErrSelf, ErrTotal     float64
	// Significant says whether the ranked delta (self, or total with
	// Options.Total) exceeds its error.
	Significant bool
}

// Result is the comparison.
type Result struct {
	Base, New Run
	Grouping  profile.Grouping
	ByTotal   bool // rows are ranked by total rather than self change
	Rows      []Row
}

// Compare compares base and new under grouping g. Rows are ranked by the
// size of the change of self share (of total share with byTotal), largest
// first. Labels are told apart by object, as in profile.Flat, except that a
// label found in a single object of each run, not the same one, is one row
// whose Object reads "base → new". Processes and threads are compared by
// name ("comm", all the processes of that name together).
func Compare(base, new *profile.Profile, g profile.Grouping, byTotal bool) Result {
	res := Result{Base: run(base), New: run(new), Grouping: g, ByTotal: byTotal}
	type key struct{ name, object string }
	rows := map[key]*Row{}
	add := func(r profile.FlatRow, run Run, pick func(*Row) *Side) {
		if !g.PerFrame() {
			// Processes and threads are compared by name: their IDs
			// differ from run to run.
			if i := strings.LastIndexByte(r.Name, '['); i > 0 {
				r.Name = r.Name[:i]
			}
		}
		k := key{r.Name, r.Object}
		if rows[k] == nil {
			rows[k] = &Row{Name: r.Name, Object: r.Object}
		}
		sd := pick(rows[k])
		sd.Self += r.Self
		sd.Total += r.Total
		*sd = side(sd.Self, sd.Total, run)
	}
	for _, r := range base.Flat(g).Rows {
		add(r, res.Base, func(r *Row) *Side { return &r.Base })
	}
	for _, r := range new.Flat(g).Rows {
		add(r, res.New, func(r *Row) *Side { return &r.New })
	}
	// A label found in one object of the base run and in one other object of
	// the new run is one row: the program was rebuilt under another name
	// (prog-v1, prog-v2).
	alone := map[string][2][]key{}
	for k, r := range rows {
		a := alone[k.name]
		switch {
		case r.New.Total == 0:
			a[0] = append(a[0], k)
		case r.Base.Total == 0:
			a[1] = append(a[1], k)
		}
		alone[k.name] = a
	}
	// A label in several objects of a run (_start in the program and in
	// the dynamic loader, say) is paired along the objects the unambiguous
	// labels paired, when they paired that object with one other only.
	join := func(bk, nk key) {
		b, n := rows[bk], rows[nk]
		n.Base = b.Base
		if b.Object != n.Object {
			n.Object = b.Object + " → " + n.Object
		}
		delete(rows, bk)
	}
	renamed := map[string]string{} // base object → new object; "" when not one
	for _, a := range alone {
		if len(a[0]) == 1 && len(a[1]) == 1 {
			bo, no := a[0][0].object, a[1][0].object
			if to, seen := renamed[bo]; seen && to != no {
				renamed[bo] = ""
			} else if !seen {
				renamed[bo] = no
			}
		}
	}
	for _, a := range alone {
		if len(a[0]) == 1 && len(a[1]) == 1 {
			join(a[0][0], a[1][0])
			continue
		}
		for _, bk := range a[0] {
			to := renamed[bk.object]
			if to == "" {
				continue
			}
			for _, nk := range a[1] {
				if nk.object == to {
					join(bk, nk)
					break
				}
			}
		}
	}
	for _, r := range rows {
		r.DeltaSelf = r.New.SelfFrac - r.Base.SelfFrac
		r.DeltaTotal = r.New.TotalFrac - r.Base.TotalFrac
		r.ErrSelf = diffErr(r.Base.SelfFrac, res.Base.Samples, r.New.SelfFrac, res.New.Samples)
		r.ErrTotal = diffErr(r.Base.TotalFrac, res.Base.Samples, r.New.TotalFrac, res.New.Samples)
		d, e := r.DeltaSelf, r.ErrSelf
		if byTotal {
			d, e = r.DeltaTotal, r.ErrTotal
		}
		r.Significant = res.Base.Samples > 0 && res.New.Samples > 0 && math.Abs(d) > e
		res.Rows = append(res.Rows, *r)
	}
	rank := func(r Row) float64 {
		if byTotal {
			return math.Abs(r.DeltaTotal)
		}
		return math.Abs(r.DeltaSelf)
	}
	sort.Slice(res.Rows, func(i, j int) bool {
		a, b := res.Rows[i], res.Rows[j]
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra > rb
		}
		if a.New.Total != b.New.Total {
			return a.New.Total > b.New.Total
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Object < b.Object
	})
	return res
}

func run(p *profile.Profile) Run {
	r := Run{Samples: p.SampleCount()}
	for _, s := range p.Samples {
		r.CPU += s.Period
	}
	return r
}

// side gives the figures of self and total samples of a run.
func side(self, total int, run Run) Side {
	s := Side{Self: self, Total: total}
	if run.Samples > 0 {
		n := float64(run.Samples)
		mean := float64(run.CPU) / n
		s.SelfFrac, s.TotalFrac = float64(self)/n, float64(total)/n
		s.SelfCPU = uint64(float64(self)*mean + 0.5)
		s.TotalCPU = uint64(float64(total)*mean + 0.5)
	}
	return s
}

// diffErr is two standard deviations of p2−p1, shares estimated from n1 and
// n2 independent samples (0 when either run has none).
func diffErr(p1 float64, n1 int, p2 float64, n2 int) float64 {
	if n1 <= 0 || n2 <= 0 {
		return 0
	}
	return 2 * math.Sqrt(p1*(1-p1)/float64(n1)+p2*(1-p2)/float64(n2))
}
