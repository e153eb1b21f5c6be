package cli

import (
	"cmp"
	"slices"

	"gonum.org/v1/gonum/stat"

	"github.com/culprit-dev/culprit/internal/analysis/sched"
	"github.com/culprit-dev/culprit/internal/analysis/variance"
	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/tracer"
)

// liveSched is the scheduler timeline of a round of culprit variance
// --sched while the program runs, from the events the tracer passes to
// refinement: the critical paths of the round's intervals, and which
// functions of the executable each wake-up's waker was in.
type liveSched struct {
	tl    *sched.Timeline // nil: no usable events
	funcs [][]string      // a wake-up stack's functions, by its index
	// base are the functions seen as a waker thread's base (its start
	// routine, or main: tracer.SchedEvent.Base).
	base map[string]bool
}

// newLiveSched builds the timeline. The switches away carry no kernel
// stack here, so every wait is "io": the path and its wakers are right,
// the kind of wait is the recording's to tell.
func newLiveSched(events []tracer.SchedEvent) *liveSched {
	ls := &liveSched{base: map[string]bool{}}
	p := &profile.Profile{Samples: make([]profile.Sample, 0, len(events))}
	for _, e := range events {
		if e.Base != "" {
			ls.base[e.Base] = true
		}
		st := int32(-1)
		if len(e.Funcs) > 0 {
			st = int32(len(ls.funcs))
			ls.funcs = append(ls.funcs, e.Funcs)
		}
		p.Samples = append(p.Samples, profile.Sample{Time: e.Time, PID: e.PID, TID: e.TID, CPU: e.CPU, Stack: st, Event: e.Event, Arg: profile.SwitchArg(&e.Sample)})
		p.NoteSwitchAway(&e.Sample)
	}
	// Each drain writes its records in time order; rings of different
	// CPUs can interleave across drains.
	slices.SortStableFunc(p.Samples, func(a, b profile.Sample) int { return cmp.Compare(a.Time, b.Time) })
	p.Stacks = make([][]int32, len(ls.funcs)) // blocking stacks: none (classified as io)
	if tl, err := sched.States(p); err == nil {
		ls.tl = tl
	}
	return ls
}

// wakerShare is a function of the executable on the stacks of the
// wake-ups that ended waits on the intervals' critical paths, with the
// share of the intervals' latency variance its stretches of the paths
// hold.
type wakerShare struct {
	fn    string
	share float64
}

// wakers are the functions of the executable on the stacks of the
// wake-ups that ended waits on the intervals' critical paths (a waker's
// own waits followed to its waker), each with the share of the
// intervals' latency variance its stretches of the paths hold
// (Cov(x_f, T) / Var(T), x_f the time of interval T's path that a
// wake-up from f stood for), in the order seen.
func (ls *liveSched) wakers(res *variance.Result) []wakerShare {
	if ls.tl == nil || len(res.Spans) < 2 {
		return nil
	}
	n := len(res.Spans)
	T := make([]float64, n)
	x := map[string][]float64{}
	var order []string
	for i, sp := range res.Spans {
		T[i] = float64(sp.End - sp.Start)
		for _, sg := range sp.Path {
			if sg.For == 0 || slices.Contains(sp.Threads, sg.TID) {
				continue // the interval's own threads: their calls are the tree's
			}
			th := ls.tl.Thread(sg.For)
			if th == nil {
				continue
			}
			iv, ok := th.At(sg.To)
			if !ok || iv.Waker != sg.TID || iv.WakerStack < 0 || int(iv.WakerStack) >= len(ls.funcs) {
				continue
			}
			for _, f := range ls.funcs[iv.WakerStack] {
				col := x[f]
				if col == nil {
					col = make([]float64, n)
					x[f] = col
					order = append(order, f)
				}
				col[i] += float64(sg.To - sg.From)
			}
		}
	}
	v := stat.Variance(T, nil)
	if v <= 0 {
		return nil
	}
	out := make([]wakerShare, 0, len(order))
	for _, f := range order {
		out = append(out, wakerShare{f, stat.Covariance(x[f], T, nil) / v})
	}
	return out
}

// selectWakers chooses among the wakers' functions as Algorithm 1
// chooses factors: ranked by share × specificity², (H − h)² with h the
// function's height in the static call graph and H the root's (top),
// the k best, of which those whose share is over d.
func selectWakers(ws []wakerShare, heights map[string]int, top, k int, d float64) []string {
	type scored struct {
		wakerShare
		score float64
	}
	ranked := make([]scored, 0, len(ws))
	for _, w := range ws {
		s := float64(max(top-heights[w.fn], 0))
		ranked = append(ranked, scored{w, w.share * s * s})
	}
	slices.SortStableFunc(ranked, func(a, b scored) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		if c := cmp.Compare(b.share, a.share); c != 0 {
			return c
		}
		return cmp.Compare(a.fn, b.fn)
	})
	var out []string
	for i := 0; i < k && i < len(ranked); i++ {
		if ranked[i].share > d {
			out = append(out, ranked[i].fn)
		}
	}
	return out
}

// returned are the functions with a call in calls that returned.
func returned(calls []recording.Call, probes []recording.Probe) map[string]bool {
	byID := map[uint32]string{}
	for _, p := range probes {
		byID[p.ID] = p.Function
	}
	out := map[string]bool{}
	for _, c := range calls {
		if c.Flags&recording.CallUnreturned == 0 {
			out[byID[c.Probe]] = true
		}
	}
	return out
}
