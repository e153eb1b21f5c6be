// Package check compares the runs of a base version with the runs of a
// target version, function by function, with Perun's degradation detection
// methods and a two-sample test, and reports each change with its kind
// (degradation or optimization), severity, confidence and location.
//
// Pairing: a base run and a target run are compared when their pairing keys
// (workload, parameters and collector options) are equal; runs with the same
// key on one side are averaged (from MinRunsMW runs on, their median is
// taken: see RunAmount). A function is matched by name across the
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
// Traced runs (culprit trace, stored with their recordings): a function
// traced on both sides of a pair is compared by its calls instead. Its
// amount is its mean exclusive duration per call (Perun's amount of a trace
// resource is one call's duration), a 5% trimmed mean (TrimMean); two-sample is the Mann–Whitney test of
// the two sides' per-call durations, so one run of each side suffices; and
// when the calls' arguments were recorded (trace --args), the model methods
// fit each call's duration against an argument (Options.Arg, or the numeric
// argument whose best model has the highest R²) robustly (models.
// RobustWeights: a preempted call does not decide the model), and local
// statistics split that argument's range (each value, or up to
// MaxArgIntervals bins of equal base counts). Without arguments, the x
// parameter across pairs is used as for sampled runs.
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
	"strings"

	"gonum.org/v1/gonum/stat"

	"github.com/culprit-dev/culprit/internal/analysis/models"
)

// Func is one function's statistics in a run.
type Func struct {
	Name, Object string
	Samples      int64   // self samples
	Amount       float64 // self CPU time, ns
	// Durations, in a traced run, is the exclusive duration (ns) of each
	// recorded call; Args, per numeric argument recorded (--args), the
	// value it had in each of those calls.
	Durations []float64
	Args      map[string][]float64
	// CPU, in a traced run, is each call's exclusive time on the CPU (ns,
	// aligned with Durations): without the time its thread was preempted,
	// blocked or asleep. Nil when the recording did not measure it for
	// every call.
	CPU []float64
}

// Run is one run of one side.
type Run struct {
	Pair   string  // pairing key: workload, parameters, collector options
	Series string  // the pairing key without the x parameter
	X      float64 // the x parameter's value, when HasX
	HasX   bool
	// Traced says the run's functions are traced calls (culprit trace):
	// their Durations are compared, not sampled time.
	Traced bool
	Funcs  []Func
}

// Options tune the methods.
type Options struct {
	Threshold float64 // relative change that counts (default 0.15)
	Z         float64 // two-sample significance (default 3)
	XName     string  // the x parameter's name, for locations
	// Arg names the argument traced calls' durations are modelled against;
	// empty: the numeric argument whose best model explains most.
	Arg string
	// Wall compares traced calls by their wall durations even where their
	// on-CPU times are known (Func.CPU).
	Wall bool
	// NewShare is the least share of its side's whole sampled time (all
	// functions' amounts, the same pairs) a function sampled on one side
	// only must hold to be reported (DefaultNewShare): its ratio is
	// infinite and a handful of stray samples passes the two-sample
	// test, so without a floor any function a run touched by chance
	// (a fault, a loader path) would be a degradation.
	NewShare float64
}

// DefaultNewShare is the share of the whole run's time a function new in
// the target (or gone from it) needs to count as a change: 1%, the line
// under which trace's pipelines may drop a function (docs/trace.md).
const DefaultNewShare = 0.01

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
	// X is what the model is a function of: the x parameter, or "arg:NAME"
	// for traced calls modelled against an argument.
	X string `json:"x"`
}

// Measures of a change's amount.
const (
	PerRun  = "self CPU time per run"
	PerCall = "exclusive time per call"
	// PerCallCPU is PerCall on the CPU: a function whose traced calls'
	// on-CPU times are known on both sides is compared by them (unless
	// Options.Wall), so that a busy machine's preemptions do not count.
	PerCallCPU = "exclusive on-CPU time per call"
)

// Change is one function that changed.
type Change struct {
	Function   string   `json:"function"`
	Object     string   `json:"object"`
	Kind       string   `json:"kind"`     // "degradation" or "optimization"
	Severity   float64  `json:"severity"` // relative change of the amount, e.g. 2.1 = +210%
	Measure    string   `json:"measure"`  // PerRun or PerCall
	BaseNS     float64  `json:"base_ns"`  // mean amount per pair, base
	TargetNS   float64  `json:"target_ns"`
	BaseCalls  int      `json:"base_calls,omitempty"` // traced calls compared
	TgtCalls   int      `json:"target_calls,omitempty"`
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
	amounts []float64 // per run with the function
	last    int       // 1 + the index of the last run that had the function
	durs    []float64 // traced calls' durations, all runs
	cpu     []float64 // their on-CPU times, when noCPU is not set
	noCPU   bool      // some run's calls have no on-CPU times
	args    map[string][]float64
	x       float64
	hasX    bool
	series  string
	traced  bool
}

// pt is one function in one pair.
type pt struct {
	x        float64
	hasX     bool
	series   string
	bA, tA   float64 // mean amount per run (per call when traced)
	z        float64
	bS, tS   float64   // samples
	bN, tN   float64   // runs
	bD, tD   []float64 // traced calls' durations
	bArgs    map[string][]float64
	tArgs    map[string][]float64
	pairName string
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
		for ri, r := range runs {
			s.runs[r.Pair]++
			s.meta[r.Pair] = agg{x: r.X, hasX: r.HasX, series: r.Series, traced: r.Traced}
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
				// One amount per run: a name in two objects of a run
				// (a static function, say) is one function here.
				if a.last == ri+1 {
					a.amounts[len(a.amounts)-1] += f.Amount
				} else {
					a.amounts = append(a.amounts, f.Amount)
					a.last = ri + 1
				}
				if r.Traced {
					// Argument values stay aligned with durations: an
					// argument a run did not record is padded with NaN.
					for name, v := range f.Args {
						if a.args == nil {
							a.args = map[string][]float64{}
						}
						for len(a.args[name]) < len(a.durs) {
							a.args[name] = append(a.args[name], math.NaN())
						}
						a.args[name] = append(a.args[name], v...)
					}
					a.durs = append(a.durs, f.Durations...)
					if len(f.CPU) == len(f.Durations) {
						a.cpu = append(a.cpu, f.CPU...)
					} else {
						a.noCPU = true
					}
					for name := range a.args {
						for len(a.args[name]) < len(a.durs) {
							a.args[name] = append(a.args[name], math.NaN())
						}
					}
				}
				if s.obj[f.Name] == "" {
					s.obj[f.Name] = f.Object
				}
			}
		}
		return s
	}
	b, t := build(base), build(target)
	// whole is a side's summed amount of every function per pairing key.
	whole := func(s side) map[string]float64 {
		w := map[string]float64{}
		for _, byKey := range s.funcs {
			for k, a := range byKey {
				w[k] += RunAmount(a.amounts, s.runs[k])
			}
		}
		return w
	}
	bWhole, tWhole := whole(b), whole(t)
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
	tracedPair := func(k string) bool { return b.meta[k].traced && t.meta[k].traced }
	for name := range names {
		c := Change{Function: name, Object: t.obj[name], Measure: PerRun}
		if c.Object == "" {
			c.Object = b.obj[name]
		}
		if bo, to := b.obj[name], t.obj[name]; bo != "" && to != "" && bo != to {
			c.Object = bo + " → " + to
		}
		// A function traced on both sides of some pair is compared by its
		// calls' durations in the traced pairs; otherwise by sampled time
		// in the sampled pairs.
		traced := false
		for _, k := range pairs {
			if tracedPair(k) && b.funcs[name][k] != nil && t.funcs[name][k] != nil &&
				len(b.funcs[name][k].durs) > 0 && len(t.funcs[name][k].durs) > 0 {
				traced = true
			}
		}
		if traced {
			c.Measure = PerCall
			if !o.Wall && cpuKnown(pairs, b.funcs[name], t.funcs[name]) {
				c.Measure = PerCallCPU
				for _, k := range pairs {
					for _, a := range []*agg{b.funcs[name][k], t.funcs[name][k]} {
						if a != nil && len(a.durs) > 0 {
							a.durs = a.cpu
						}
					}
				}
			}
		}
		var pts []pt
		var sumB, sumT, sumZ float64
		for _, k := range pairs {
			if tracedPair(k) != traced {
				continue
			}
			var p pt
			p.pairName = k
			p.bN, p.tN = float64(b.runs[k]), float64(t.runs[k])
			m := t.meta[k]
			p.x, p.hasX, p.series = m.x, m.hasX, m.series
			ba, ta := b.funcs[name][k], t.funcs[name][k]
			if traced {
				if ba == nil || ta == nil || len(ba.durs) == 0 || len(ta.durs) == 0 {
					continue // called on one side only: no per-call comparison
				}
				p.bD, p.tD = ba.durs, ta.durs
				p.bArgs, p.tArgs = ba.args, ta.args
				p.bA, p.tA = TrimMean(p.bD), TrimMean(p.tD)
				p.z = MannWhitneyZ(p.bD, p.tD)
				c.BaseCalls += len(p.bD)
				c.TgtCalls += len(p.tD)
			} else {
				if ba != nil {
					p.bA, p.bS = RunAmount(ba.amounts, int(p.bN)), ba.samples
				}
				if ta != nil {
					p.tA, p.tS = RunAmount(ta.amounts, int(p.tN)), ta.samples
				}
				if p.bN >= MinRunsMW && p.tN >= MinRunsMW {
					var bv, tv []float64
					if ba != nil {
						bv = ba.amounts
					}
					if ta != nil {
						tv = ta.amounts
					}
					p.z = MannWhitneyZ(padded(bv, int(p.bN)), padded(tv, int(p.tN)))
				} else if v := p.tS/(p.tN*p.tN) + p.bS/(p.bN*p.bN); v > 0 {
					p.z = (p.tS/p.tN - p.bS/p.bN) / math.Sqrt(v)
				}
			}
			sumB += p.bA
			sumT += p.tA
			sumZ += p.z
			pts = append(pts, p)
		}
		if len(pts) == 0 {
			continue
		}
		c.BaseNS, c.TargetNS = sumB/float64(len(pts)), sumT/float64(len(pts))
		c.Z = sumZ / math.Sqrt(float64(len(pts)))
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
		if !traced && (sumB == 0) != (sumT == 0) {
			// Sampled on one side only: a change only when material.
			w, amount := tWhole, sumT
			if sumT == 0 {
				w, amount = bWhole, sumB
			}
			var all float64
			for _, p := range pts {
				all += w[p.pairName]
			}
			if amount < o.NewShare*all {
				aat = "none"
			}
		}
		per := "per pair"
		if traced {
			per = "per call"
		}
		c.Methods = append(c.Methods, Method{Method: "average-amount", Verdict: aat, Value: ratio,
			Detail: fmt.Sprintf("%s → %s %s", seconds(c.BaseNS), seconds(c.TargetNS), per)})
		ts := "none"
		if c.Z >= o.Z {
			ts = "degradation"
		} else if c.Z <= -o.Z {
			ts = "optimization"
		}
		detail := fmt.Sprintf("Z = %.1f over %d pairs (|Z| ≥ %g)", c.Z, len(pts), o.Z)
		if traced {
			detail = fmt.Sprintf("Mann–Whitney Z = %.1f over %d → %d calls, %d pairs (|Z| ≥ %g)", c.Z, c.BaseCalls, c.TgtCalls, len(pts), o.Z)
		}
		c.Methods = append(c.Methods, Method{Method: "two-sample", Verdict: ts, Value: c.Z, Detail: detail})
		if aat == "none" || aat != ts {
			continue
		}
		c.Kind = aat
		if sumB > 0 {
			c.Severity = ratio - 1
		} else {
			c.Severity = math.Inf(1)
		}
		var local []interval
		if arg, xb, yb, xt, yt := argPoints(pts, o.Arg); arg != "" {
			// Traced calls against an argument: each call is a point.
			c.modelMethods(xb, yb, xt, yt, "arg:"+arg, arg, verdict)
			local = argIntervals(arg, xb, yb, xt, yt)
		} else {
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
				c.modelMethods(xs, yb, xs, yt, o.XName, o.XName, verdict)
			}
			// Local statistics: each measured x of the chosen series (or
			// each pair when there is no x).
			if len(best) == 0 {
				best = pts
			}
			for _, p := range best {
				iv := interval{bA: p.bA, tA: p.tA, z: p.z}
				if p.hasX {
					iv.where = o.XName + "=" + strconv.FormatFloat(p.x, 'g', -1, 64)
				}
				local = append(local, iv)
			}
		}
		var where []string
		changed := 0
		for _, iv := range local {
			r := math.Inf(1)
			if iv.bA > 0 {
				r = iv.tA / iv.bA
			}
			if verdict(r) == c.Kind && math.Abs(iv.z) >= 1.96 {
				changed++
				if iv.where != "" {
					where = append(where, iv.where)
				}
			}
		}
		lv := "none"
		if changed > 0 {
			lv = c.Kind
		}
		c.Methods = append(c.Methods, Method{Method: "local-statistics", Verdict: lv, Value: float64(changed),
			Detail: fmt.Sprintf("%d of %d sub-intervals changed", changed, len(local))})
		c.Location = strings.Join(where, ", ")
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
		// Traced functions (per-call amounts) first, then by the size of
		// the change.
		if (a.Measure != PerRun) != (b.Measure != PerRun) {
			return a.Measure != PerRun
		}
		da, db := math.Abs(a.TargetNS-a.BaseNS), math.Abs(b.TargetNS-b.BaseNS)
		if da != db {
			return da > db
		}
		return a.Function < b.Function
	})
	return res
}

// Trim is the share of calls TrimMean drops at each end.
const Trim = 0.05

// TrimMean is the mean of v without its ⌊Trim·n⌋ smallest and largest
// values (scipy.stats.trim_mean(v, 0.05)): a call preempted for a time
// slice takes milliseconds among calls of microseconds, and a few such
// calls would otherwise decide the mean.
func TrimMean(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	k := int(Trim * float64(len(s)))
	return stat.Mean(s[k:len(s)-k], nil)
}

func seconds(ns float64) string {
	return strconv.FormatFloat(ns/1e9, 'g', 3, 64) + "s"
}

// modelMethods fits both sides' points and adds the model-order and
// integral methods; xlabel names x in formulas and details.
func (c *Change) modelMethods(xb, yb, xt, yt []float64, modelX, xlabel string, verdict func(float64) string) {
	fit := func(x, y []float64) (models.Fit, error) {
		fs, err := models.FitAllWeighted(x, y, models.RobustWeights(x, y))
		if err != nil {
			return models.Fit{}, err
		}
		return models.Best(fs), nil
	}
	mb, errB := fit(xb, yb)
	mt, errT := fit(xt, yt)
	if errB != nil || errT != nil {
		return
	}
	c.Base = &Model{Kind: mb.Kind.String(), Formula: mb.Formula(xlabel), R2: mb.R2, X: modelX}
	c.Target = &Model{Kind: mt.Kind.String(), Formula: mt.Formula(xlabel), R2: mt.R2, X: modelX}
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
	lo, hi := math.Max(mb.XMin, mt.XMin), math.Min(mb.XMax, mt.XMax)
	if hi <= lo {
		return
	}
	ib, it := mb.Integral(lo, hi), mt.Integral(lo, hi)
	ir := math.Inf(1)
	if ib > 0 {
		ir = it / ib
	}
	c.Methods = append(c.Methods, Method{Method: "integral", Verdict: verdict(ir), Value: ir,
		Detail: fmt.Sprintf("area under the model over %s in [%g, %g]: %.3g → %.3g s·%s", xlabel, lo, hi, ib, it, xlabel)})
}

// interval is one sub-interval of local statistics.
type interval struct {
	where  string
	bA, tA float64
	z      float64
}

// MaxModelCalls is the most calls per side the argument models take: more
// are thinned to every k-th call (in recorded order), which keeps the
// running median of the robust fit cheap and changes no model.
const MaxModelCalls = 20000

// argPoints picks the argument the traced calls' durations are modelled
// against (want, or the one whose best model has the highest R² on either
// side among the arguments with MinPoints or more distinct values on both
// sides) and returns each side's points (x: the argument, y: seconds).
func argPoints(pts []pt, want string) (string, []float64, []float64, []float64, []float64) {
	collect := func(arg string, target bool) ([]float64, []float64) {
		var xs, ys []float64
		for _, p := range pts {
			d, args := p.bD, p.bArgs
			if target {
				d, args = p.tD, p.tArgs
			}
			v := args[arg]
			for i := range d {
				if i < len(v) && !math.IsNaN(v[i]) {
					xs = append(xs, v[i])
					ys = append(ys, d[i]/1e9)
				}
			}
		}
		if n := len(xs); n > MaxModelCalls {
			step := (n + MaxModelCalls - 1) / MaxModelCalls
			k := 0
			for i := 0; i < n; i += step {
				xs[k], ys[k] = xs[i], ys[i]
				k++
			}
			xs, ys = xs[:k], ys[:k]
		}
		return xs, ys
	}
	names := map[string]bool{}
	for _, p := range pts {
		for a := range p.bArgs {
			if _, ok := p.tArgs[a]; ok {
				names[a] = true
			}
		}
	}
	bestArg, bestR2 := "", math.Inf(-1)
	var bx, by, tx, ty []float64
	for _, a := range sortedKeys(names) {
		if want != "" && a != want {
			continue
		}
		xb, yb := collect(a, false)
		xt, yt := collect(a, true)
		if distinctCount(xb) < models.MinPoints || distinctCount(xt) < models.MinPoints {
			continue
		}
		r2 := math.Inf(-1)
		for _, side := range [][2][]float64{{xb, yb}, {xt, yt}} {
			fs, err := models.FitAllWeighted(side[0], side[1], models.RobustWeights(side[0], side[1]))
			if err == nil {
				r2 = math.Max(r2, models.Best(fs).R2)
			}
		}
		if r2 > bestR2 {
			bestArg, bestR2, bx, by, tx, ty = a, r2, xb, yb, xt, yt
		}
	}
	return bestArg, bx, by, tx, ty
}

func distinctCount(v []float64) int {
	seen := map[float64]bool{}
	for _, x := range v {
		seen[x] = true
	}
	return len(seen)
}

// MaxArgIntervals is the most sub-intervals local statistics splits an
// argument's range into.
const MaxArgIntervals = 8

// argIntervals splits the argument's values into sub-intervals: each
// distinct value when there are at most MaxArgIntervals, else that many
// bins of equal counts of the base's calls; per bin the mean durations and
// the Mann–Whitney z of the two sides' calls.
func argIntervals(arg string, xb, yb, xt, yt []float64) []interval {
	vals := append([]float64(nil), xb...)
	sort.Float64s(vals)
	var edges []float64 // upper bounds, inclusive
	if distinctCount(vals) <= MaxArgIntervals {
		for i, v := range vals {
			if i == 0 || v != vals[i-1] {
				edges = append(edges, v)
			}
		}
	} else {
		for k := 1; k <= MaxArgIntervals; k++ {
			e := vals[min(len(vals)-1, k*len(vals)/MaxArgIntervals-1)]
			if len(edges) == 0 || e > edges[len(edges)-1] {
				edges = append(edges, e)
			}
		}
		edges[len(edges)-1] = math.Inf(1)
	}
	bin := func(x float64) int {
		return sort.SearchFloat64s(edges, x) // first edge ≥ x
	}
	db := make([][]float64, len(edges))
	dt := make([][]float64, len(edges))
	for i, x := range xb {
		if k := bin(x); k < len(edges) {
			db[k] = append(db[k], yb[i])
		}
	}
	for i, x := range xt {
		if k := bin(x); k < len(edges) {
			dt[k] = append(dt[k], yt[i])
		}
	}
	var out []interval
	lo := math.Inf(-1)
	for k, e := range edges {
		if len(db[k]) > 0 && len(dt[k]) > 0 {
			iv := interval{bA: TrimMean(db[k]), tA: TrimMean(dt[k]), z: MannWhitneyZ(db[k], dt[k])}
			switch {
			case distinctCount(vals) <= MaxArgIntervals:
				iv.where = arg + "=" + strconv.FormatFloat(e, 'g', -1, 64)
			case math.IsInf(e, 1):
				iv.where = arg + ">" + strconv.FormatFloat(lo, 'g', -1, 64)
			case math.IsInf(lo, -1):
				iv.where = arg + "≤" + strconv.FormatFloat(e, 'g', -1, 64)
			default:
				iv.where = arg + " in (" + strconv.FormatFloat(lo, 'g', -1, 64) + ", " + strconv.FormatFloat(e, 'g', -1, 64) + "]"
			}
			out = append(out, iv)
		}
		lo = e
	}
	return out
}

// MinRunsMW is how many runs each side needs for a pair to be tested with
// Mann–Whitney instead of the counting-noise test.
const MinRunsMW = 3

// padded gives n per-run amounts: the runs without the function had 0.
// RunAmount is a function's amount per run from its amounts in the runs that
// had it, of runs runs in all (the others count 0): the mean, or from
// MinRunsMW runs on the median. A run that another program slowed for a
// while (on a shared or virtual machine the same code's CPU time can grow
// 2–3× for a second) then does not decide the amount.
func RunAmount(amounts []float64, runs int) float64 {
	if runs <= 0 {
		return 0
	}
	if runs < MinRunsMW {
		var sum float64
		for _, a := range amounts {
			sum += a
		}
		return sum / float64(runs)
	}
	v := padded(amounts, runs)
	sort.Float64s(v)
	if runs%2 == 1 {
		return v[runs/2]
	}
	return (v[runs/2-1] + v[runs/2]) / 2
}

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

// cpuKnown says whether every traced call of a function, on both sides
// of every pair, has its on-CPU time.
func cpuKnown(pairs []string, b, t map[string]*agg) bool {
	found := false
	for _, k := range pairs {
		for _, a := range []*agg{b[k], t[k]} {
			if a == nil || len(a.durs) == 0 {
				continue
			}
			if a.noCPU || len(a.cpu) != len(a.durs) {
				return false
			}
			found = true
		}
	}
	return found
}
