// Package check compares the runs of a base version with the runs of a
// target version, function by function, with Perun's degradation detection
// methods and a two-sample test, and reports each change with its kind
// (degradation or optimization), severity, confidence and location.
//
// Pairing: a base run and a target run are compared when their pairing keys
// (workload, parameters and collector options) are equal; runs with the same
// key on one side are averaged. A function is matched by name across the
// two versions (its object may have been rebuilt or renamed). Its amount in
// a run is its self CPU time (sampled self share times the run's CPU time):
// self, not total, so that a slower function does not make its callers look
// slower.
//
// Methods, each giving a verdict per function:
//
//   - average-amount: the ratio of the function's summed amounts over all
//     pairs, target to base; a degradation at or above 1+threshold, an
//     optimization at or below 1/(1+threshold) (Perun's Average Amount
//     Threshold).
//   - two-sample: per pair, with 3 or more runs on each side, the
//     Mann–Whitney U test of the per-run amounts (normal approximation,
//     tie-corrected), which takes run-to-run variation into account;
//     otherwise the difference of the function's mean sample counts per run
//     against its counting noise (Poisson: z = (t/m − b/n)/sqrt(t/m² + b/n²)
//     for t samples in m target runs and b in n base runs). The pairs' z
//     combined by Stouffer's method, Z = Σz/√k; a change when |Z| ≥ Z
//     (default 3, two-sided p ≈ 0.003).
//   - model-order: with the x parameter taking at least 3 values on both
//     sides, the best model of each side (package models); a degradation
//     when the target's best model is higher in the order constant <
//     logarithmic < linear < quadratic < power < exponential, both models
//     reliable (from upstream Perun).
//   - integral: the ratio of the areas under the two best models over the
//     x range both cover, judged by the threshold (Perun's Integral Method).
//   - local-statistics: the x range split at each x value measured; the mean
//     amounts of each sub-interval compared by the threshold and the
//     two-sample test of that sub-interval alone (|z| ≥ 1.96, two-sided 5%);
//     the sub-intervals that changed are the change's
//     location in the input (Perun's Local Statistics).
//
// A function is reported when average-amount and two-sample agree (a change
// larger than the threshold and beyond sampling noise); the model methods
// then describe it. Severity is the relative change of its amount; the
// confidence is the share of the applicable methods that give the same
// verdict.
package check

import (
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/culprit-dev/culprit/internal/analysis/models"
)

// Func is one function's statistics in a run.
type Func struct {
	Name, Object string
	Samples      int64   // self samples
	Amount       float64 // self CPU time, ns
}

// Run is one run of one side.
type Run struct {
	Pair   string  // pairing key: workload, parameters, collector options
	Series string  // the pairing key without the x parameter
	X      float64 // the x parameter's value, when HasX
	HasX   bool
	Funcs  []Func
}

// Options tune the methods.
type Options struct {
	Threshold float64 // relative change that counts (default 0.15)
	Z         float64 // two-sample significance (default 3)
	XName     string  // the x parameter's name, for locations
}

// Method is one method's verdict on one function.
type Method struct {
	Method  string  `json:"method"`
	Verdict string  `json:"verdict"` // "degradation", "optimization" or "none"
	Value   float64 `json:"value"`   // ratio, z or model order change
	Detail  string  `json:"detail,omitempty"`
}

// Model is a side's best model of a function.
type Model struct {
	Kind    string  `json:"kind"`
	Formula string  `json:"formula"`
	R2      float64 `json:"r2"`
}

// Change is one function that changed.
type Change struct {
	Function   string   `json:"function"`
	Object     string   `json:"object"`
	Kind       string   `json:"kind"`     // "degradation" or "optimization"
	Severity   float64  `json:"severity"` // relative change of the amount, e.g. 2.1 = +210%
	BaseNS     float64  `json:"base_ns"`  // mean amount per pair, base
	TargetNS   float64  `json:"target_ns"`
	Z          float64  `json:"z"`
	Confidence float64  `json:"confidence"`
	Location   string   `json:"location,omitempty"` // where in the input, e.g. "n=4000, n=16000"
	Base       *Model   `json:"base_model,omitempty"`
	Target     *Model   `json:"target_model,omitempty"`
	Methods    []Method `json:"methods"`
}

// Result is the comparison.
type Result struct {
	Pairs     int      `json:"pairs"`     // pairing keys found on both sides
	Unpaired  []string `json:"unpaired"`  // keys found on one side only
	Functions int      `json:"functions"` // functions compared
	Changes   []Change `json:"changes"`
}

type agg struct {
	samples float64
	amount  float64
	amounts []float64 // per run with the function
	runs    int
	x       float64
	hasX    bool
	series  string
}

// Compare compares base and target runs.
func Compare(base, target []Run, o Options) Result {
	if o.Threshold <= 0 {
		o.Threshold = 0.15
	}
	if o.Z <= 0 {
		o.Z = 3
	}
	if o.XName == "" {
		o.XName = "x"
	}
	// side[pair][function] = summed figures over the pair's runs.
	type side struct {
		runs  map[string]int
		funcs map[string]map[string]*agg
		obj   map[string]string
		meta  map[string]agg
	}
	build := func(runs []Run) side {
		s := side{runs: map[string]int{}, funcs: map[string]map[string]*agg{}, obj: map[string]string{}, meta: map[string]agg{}}
		for _, r := range runs {
			s.runs[r.Pair]++
			s.meta[r.Pair] = agg{x: r.X, hasX: r.HasX, series: r.Series}
			for _, f := range r.Funcs {
				m := s.funcs[f.Name]
				if m == nil {
					m = map[string]*agg{}
					s.funcs[f.Name] = m
				}
				a := m[r.Pair]
				if a == nil {
					a = &agg{}
					m[r.Pair] = a
				}
				a.samples += float64(f.Samples)
				a.amount += f.Amount
				a.amounts = append(a.amounts, f.Amount)
				if s.obj[f.Name] == "" {
					s.obj[f.Name] = f.Object
				}
			}
		}
		return s
	}
	b, t := build(base), build(target)
	var res Result
	var pairs []string
	for k := range b.runs {
		if t.runs[k] > 0 {
			pairs = append(pairs, k)
		} else {
			res.Unpaired = append(res.Unpaired, k)
		}
	}
	for k := range t.runs {
		if b.runs[k] == 0 {
			res.Unpaired = append(res.Unpaired, k)
		}
	}
	sort.Strings(pairs)
	sort.Strings(res.Unpaired)
	res.Pairs = len(pairs)
	if len(pairs) == 0 {
		return res
	}
	names := map[string]bool{}
	for n := range b.funcs {
		names[n] = true
	}
	for n := range t.funcs {
		names[n] = true
	}
	res.Functions = len(names)
	for name := range names {
		c := Change{Function: name, Object: t.obj[name]}
		if c.Object == "" {
			c.Object = b.obj[name]
		}
		if bo, to := b.obj[name], t.obj[name]; bo != "" && to != "" && bo != to {
			c.Object = bo + " → " + to
		}
		// Per pair: mean amount and samples per run.
		type pt struct {
			x        float64
			hasX     bool
			series   string
			bA, tA   float64 // mean amount per run
			z        float64
			bS, tS   float64 // samples
			bN, tN   float64 // runs
			pairName string
		}
		var pts []pt
		var sumB, sumT, sumZ float64
		for _, k := range pairs {
			var p pt
			p.pairName = k
			p.bN, p.tN = float64(b.runs[k]), float64(t.runs[k])
			if a := b.funcs[name][k]; a != nil {
				p.bA, p.bS = a.amount/p.bN, a.samples
			}
			if a := t.funcs[name][k]; a != nil {
				p.tA, p.tS = a.amount/p.tN, a.samples
			}
			m := t.meta[k]
			p.x, p.hasX, p.series = m.x, m.hasX, m.series
			if p.bN >= MinRunsMW && p.tN >= MinRunsMW {
				var ba, ta []float64
				if a := b.funcs[name][k]; a != nil {
					ba = a.amounts
				}
				if a := t.funcs[name][k]; a != nil {
					ta = a.amounts
				}
				p.z = MannWhitneyZ(padded(ba, int(p.bN)), padded(ta, int(p.tN)))
			} else if v := p.tS/(p.tN*p.tN) + p.bS/(p.bN*p.bN); v > 0 {
				p.z = (p.tS/p.tN - p.bS/p.bN) / math.Sqrt(v)
			}
			sumB += p.bA
			sumT += p.tA
			sumZ += p.z
			pts = append(pts, p)
		}
		c.BaseNS, c.TargetNS = sumB/float64(len(pairs)), sumT/float64(len(pairs))
		c.Z = sumZ / math.Sqrt(float64(len(pairs)))
		verdict := func(ratio float64) string {
			switch {
			case ratio >= 1+o.Threshold:
				return "degradation"
			case ratio <= 1/(1+o.Threshold):
				return "optimization"
			}
			return "none"
		}
		ratio := math.Inf(1)
		if sumB > 0 {
			ratio = sumT / sumB
		}
		aat := verdict(ratio)
		c.Methods = append(c.Methods, Method{Method: "average-amount", Verdict: aat, Value: ratio,
			Detail: fmt.Sprintf("%.3gs → %.3gs per pair", c.BaseNS/1e9, c.TargetNS/1e9)})
		ts := "none"
		if c.Z >= o.Z {
			ts = "degradation"
		} else if c.Z <= -o.Z {
			ts = "optimization"
		}
		c.Methods = append(c.Methods, Method{Method: "two-sample", Verdict: ts, Value: c.Z,
			Detail: fmt.Sprintf("Z = %.1f over %d pairs (|Z| ≥ %g)", c.Z, len(pairs), o.Z)})
		if aat == "none" || aat != ts {
			continue
		}
		c.Kind = aat
		if sumB > 0 {
			c.Severity = ratio - 1
		} else {
			c.Severity = math.Inf(1)
		}
		// Model methods, on the series with the most x values.
		bySeries := map[string][]pt{}
		for _, p := range pts {
			if p.hasX {
				bySeries[p.series] = append(bySeries[p.series], p)
			}
		}
		var best []pt
		for _, s := range sortedKeys(bySeries) {
			if len(bySeries[s]) > len(best) {
				best = bySeries[s]
			}
		}
		if len(best) >= models.MinPoints {
			sort.Slice(best, func(i, j int) bool { return best[i].x < best[j].x })
			var xs, yb, yt []float64
			for _, p := range best {
				xs = append(xs, p.x)
				yb = append(yb, p.bA/1e9) // models in seconds
				yt = append(yt, p.tA/1e9)
			}
			fb, errB := models.FitAll(xs, yb)
			ft, errT := models.FitAll(xs, yt)
			if errB == nil && errT == nil {
				mb, mt := models.Best(fb), models.Best(ft)
				c.Base = &Model{Kind: mb.Kind.String(), Formula: mb.Formula(o.XName), R2: mb.R2}
				c.Target = &Model{Kind: mt.Kind.String(), Formula: mt.Formula(o.XName), R2: mt.R2}
				order := "none"
				if (mb.Reliable() || mb.Kind == models.Constant) && (mt.Reliable() || mt.Kind == models.Constant) {
					if mt.Kind > mb.Kind {
						order = "degradation"
					} else if mt.Kind < mb.Kind {
						order = "optimization"
					}
				}
				c.Methods = append(c.Methods, Method{Method: "model-order", Verdict: order, Value: float64(mt.Kind - mb.Kind),
					Detail: fmt.Sprintf("%s (R² %.2f) → %s (R² %.2f)", mb.Kind, mb.R2, mt.Kind, mt.R2)})
				lo, hi := xs[0], xs[len(xs)-1]
				ib, it := mb.Integral(lo, hi), mt.Integral(lo, hi)
				ir := math.Inf(1)
				if ib > 0 {
					ir = it / ib
				}
				c.Methods = append(c.Methods, Method{Method: "integral", Verdict: verdict(ir), Value: ir,
					Detail: fmt.Sprintf("area under the model over %s in [%g, %g]: %.3g → %.3g s·%s", o.XName, lo, hi, ib, it, o.XName)})
			}
		}
		// Local statistics: each measured x of the chosen series (or each
		// pair when there is no x).
		local := best
		if len(local) == 0 {
			local = pts
		}
		var where []string
		changed := 0
		for _, p := range local {
			r := math.Inf(1)
			if p.bA > 0 {
				r = p.tA / p.bA
			}
			if verdict(r) == c.Kind && math.Abs(p.z) >= 1.96 {
				changed++
				if p.hasX {
					where = append(where, o.XName+"="+strconv.FormatFloat(p.x, 'g', -1, 64))
				}
			}
		}
		lv := "none"
		if changed > 0 {
			lv = c.Kind
		}
		c.Methods = append(c.Methods, Method{Method: "local-statistics", Verdict: lv, Value: float64(changed),
			Detail: fmt.Sprintf("%d of %d sub-intervals changed", changed, len(local))})
		for i, w := range where {
			if i > 0 {
				c.Location += ", "
			}
			c.Location += w
		}
		agree := 0
		for _, m := range c.Methods {
			if m.Verdict == c.Kind {
				agree++
			}
		}
		c.Confidence = float64(agree) / float64(len(c.Methods))
		res.Changes = append(res.Changes, c)
	}
	sort.Slice(res.Changes, func(i, j int) bool {
		a, b := res.Changes[i], res.Changes[j]
		da, db := math.Abs(a.TargetNS-a.BaseNS), math.Abs(b.TargetNS-b.BaseNS)
		if da != db {
			return da > db
		}
		return a.Function < b.Function
	})
	return res
}

// MinRunsMW is how many runs each side needs for a pair to be tested with
// Mann–Whitney instead of the counting-noise test.
const MinRunsMW = 3

// padded gives n per-run amounts: the runs without the function had 0.
func padded(a []float64, n int) []float64 {
	out := append([]float64(nil), a...)
	for len(out) < n {
		out = append(out, 0)
	}
	return out
}

// MannWhitneyZ is the normal approximation of the Mann–Whitney U test that
// y tends to be larger than x: z = (U − mn/2)/σ_U, U the rank sum of y minus
// n(n+1)/2 (ties get their mean rank), σ_U² = mn/12·((N+1) − Σ(t³−t)/(N(N−1)))
// with the tie correction; 0 when every value is equal.
func MannWhitneyZ(x, y []float64) float64 {
	m, n := float64(len(x)), float64(len(y))
	if m == 0 || n == 0 {
		return 0
	}
	type v struct {
		val float64
		y   bool
	}
	all := make([]v, 0, len(x)+len(y))
	for _, a := range x {
		all = append(all, v{a, false})
	}
	for _, a := range y {
		all = append(all, v{a, true})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].val < all[j].val })
	N := m + n
	var ry, ties float64
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].val == all[i].val {
			j++
		}
		rank := float64(i+j+1) / 2 // mean of ranks i+1 … j
		t := float64(j - i)
		ties += t*t*t - t
		for k := i; k < j; k++ {
			if all[k].y {
				ry += rank
			}
		}
		i = j
	}
	u := ry - n*(n+1)/2
	variance := m * n / 12 * ((N + 1) - ties/(N*(N-1)))
	if variance <= 0 {
		return 0
	}
	return (u - m*n/2) / math.Sqrt(variance)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Degraded says whether a degradation of at least minSeverity was found.
func (r Result) Degraded(minSeverity float64) bool {
	for _, c := range r.Changes {
		if c.Kind == "degradation" && c.Severity >= minSeverity {
			return true
		}
	}
	return false
}
