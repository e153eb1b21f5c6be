package trace

import (
	"math"
	"sort"
)

// CallGraph is a program's static call graph (Perun's call graph
// resource): functions by name and their direct callees.
type CallGraph struct {
	Callees map[string][]string
}

// Reachable returns the functions reachable from root (root included).
func (g *CallGraph) Reachable(root string) map[string]bool {
	seen := map[string]bool{root: true}
	stack := []string{root}
	for len(stack) > 0 {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, c := range g.Callees[f] {
			if !seen[c] {
				seen[c] = true
				stack = append(stack, c)
			}
		}
	}
	return seen
}

// Levels estimates each function's level, the longest acyclic path from
// root (level 0), with Perun's level estimator (Algorithm 1): a
// breadth-first walk that settles a function once every caller reachable
// from root has been seen, and, when only functions on cycles are left,
// settles the one whose callers' levels are lowest. A settled function's
// level is one more than the highest settled level among its callers and
// callees (the thesis's pseudocode reads proposed levels there; settled
// ones give correct levels on a chain).
func (g *CallGraph) Levels(root string) map[string]int {
	reach := g.Reachable(root)
	callers := map[string][]string{}
	for f := range reach {
		for _, c := range g.Callees[f] {
			callers[c] = append(callers[c], f)
		}
	}
	level := map[string]int{root: 0}
	seenCallers := map[string]int{}
	queue := []string{root}
	settle := func(f string) {
		best := -1
		for _, n := range append(append([]string{}, callers[f]...), g.Callees[f]...) {
			if l, ok := level[n]; ok && l > best {
				best = l
			}
		}
		level[f] = best + 1
		queue = append(queue, f)
	}
	for {
		for len(queue) > 0 {
			f := queue[0]
			queue = queue[1:]
			for _, c := range g.Callees[f] {
				if _, done := level[c]; done {
					continue
				}
				seenCallers[c]++
				if seenCallers[c] == len(callers[c]) {
					settle(c)
				}
			}
		}
		// Cycles: the unsettled function with the lowest highest caller
		// level (ties by name) is settled next.
		pick, low := "", math.MaxInt
		for f := range reach {
			if _, done := level[f]; done || seenCallers[f] == 0 {
				continue
			}
			hi := -1
			for _, c := range callers[f] {
				if l, ok := level[c]; ok && l > hi {
					hi = l
				}
			}
			if hi < low || hi == low && f < pick {
				pick, low = f, hi
			}
		}
		if pick == "" {
			return level
		}
		settle(pick)
	}
}

// Trim is Perun's call-graph trimming (Algorithm 3) of the functions
// probed, given their levels: the top keepTop levels are kept (their
// leaves only when keepLeaf), and below them whole levels are trimmed
// once minFunctions are kept, those that reach the most functions kept
// first until then. ratio is 0.25 (strict) or 0.5 (soft): keepTop =
// max(depth·ratio, 2), minFunctions = max(|probed|·0.1, 10), keepLeaf iff
// |probed| ≤ 20. It returns the functions kept.
func (g *CallGraph) Trim(probed map[string]bool, levels map[string]int, ratio float64) map[string]bool {
	depth := 0
	byLevel := map[int][]string{}
	for f := range probed {
		l, ok := levels[f]
		if !ok {
			continue // not reachable from main: matching removes it
		}
		byLevel[l] = append(byLevel[l], f)
		depth = max(depth, l)
	}
	keepTop := max(int(float64(depth)*ratio), 2)
	minFunctions := max(int(float64(len(probed))*0.1), 10)
	keepLeaf := len(probed) <= 20
	reach := map[string]int{}
	keep := map[string]bool{}
	for l := 0; l <= depth; l++ {
		fs := byLevel[l]
		sort.Strings(fs)
		if l <= keepTop {
			for _, f := range fs {
				if keepLeaf || len(g.Callees[f]) > 0 {
					keep[f] = true
				}
			}
			continue
		}
		if len(keep) >= minFunctions {
			break
		}
		for _, f := range fs {
			if _, ok := reach[f]; !ok {
				reach[f] = len(g.Reachable(f))
			}
		}
		sort.SliceStable(fs, func(i, j int) bool { return reach[fs[i]] > reach[fs[j]] })
		for _, f := range fs[:min(len(fs), minFunctions-len(keep))] {
			keep[f] = true
		}
	}
	return keep
}

// Budget returns which of the functions probed to leave out so that at
// most n stay: the protected ones always stay (they count toward n), then
// those in prefer, the largest value first (the functions judged hot only
// because sampling noise cannot rule it out, by their share), then the
// others in trimming's order — by level from the top, within a level
// those that reach the most functions first, then by name; functions
// without a level (not reached from the root) come last. Trimming's size
// is set by its top levels, whose population depends on the program's
// shape (on sqlite3 a quarter of the levels hold 10.4% of the functions,
// on lua5.4 2%); a budget bounds it, counting the functions other methods
// protect, which trimming does not see.
func (g *CallGraph) Budget(probed []string, protected map[string]bool, prefer map[string]float64, levels map[string]int, n int) []string {
	var rest []string
	kept := 0
	for _, f := range probed {
		if protected[f] {
			kept++
		} else {
			rest = append(rest, f)
		}
	}
	if kept+len(rest) <= n {
		return nil
	}
	reach := map[string]int{}
	for _, f := range rest {
		reach[f] = len(g.Reachable(f))
	}
	level := func(f string) int {
		if l, ok := levels[f]; ok {
			return l
		}
		return math.MaxInt
	}
	sort.Slice(rest, func(i, j int) bool {
		a, b := rest[i], rest[j]
		va, pa := prefer[a]
		vb, pb := prefer[b]
		if pa != pb {
			return pa
		}
		if pa && va != vb {
			return va > vb
		}
		if la, lb := level(a), level(b); la != lb {
			return la < lb
		}
		if reach[a] != reach[b] {
			return reach[a] > reach[b]
		}
		return a < b
	})
	out := rest[min(len(rest), max(n-kept, 0)):]
	sort.Strings(out)
	return out
}

// Prune is Perun's call-graph pruning (Algorithm 4) of the functions
// probed, given their levels; it returns the functions kept. The bottom
// set ⊥ is the probed functions that reach no probed function on a deeper
// level. Each of them on level keepTop or below is pruned, and so are the
// callers met walking back from it for chainLength steps, each visited
// once, those on levels within chainLength/2 of its own and not above
// keepTop. depth is the deepest probed level; chainLength =
// max(depth·0.1, 1) and keepTop = max(depth·0.1, 2) (Table A.4). Probed
// functions without a level (not reached from the root) are not kept:
// matching removes them.
func (g *CallGraph) Prune(probed map[string]bool, levels map[string]int) map[string]bool {
	depth := 0
	for f := range probed {
		if l, ok := levels[f]; ok {
			depth = max(depth, l)
		}
	}
	return g.prune(probed, levels, max(int(float64(depth)*0.1), 1), max(int(float64(depth)*0.1), 2))
}

func (g *CallGraph) prune(probed map[string]bool, levels map[string]int, chainLength, keepTop int) map[string]bool {
	callers := map[string][]string{}
	for f, cs := range g.Callees {
		for _, c := range cs {
			callers[c] = append(callers[c], f)
		}
	}
	for _, cs := range callers {
		sort.Strings(cs)
	}
	var bottom []string
	for f := range probed {
		l, ok := levels[f]
		if !ok {
			continue
		}
		deeper := false
		for r := range g.Reachable(f) {
			if lr, ok := levels[r]; ok && probed[r] && lr > l {
				deeper = true
				break
			}
		}
		if !deeper {
			bottom = append(bottom, f)
		}
	}
	sort.Strings(bottom)
	pruned := map[string]bool{}
	half := float64(chainLength) / 2
	for _, bot := range bottom {
		bl := levels[bot]
		if bl < keepTop {
			continue
		}
		pruned[bot] = true
		seen := map[string]bool{bot: true}
		front := []string{bot}
		for step := 0; step < chainLength && len(front) > 0; step++ {
			var next []string
			for _, f := range front {
				for _, c := range callers[f] {
					cl, ok := levels[c]
					if seen[c] || !ok || cl < keepTop || float64(cl) < float64(bl)-half || float64(cl) > float64(bl)+half {
						continue
					}
					seen[c] = true
					pruned[c] = true
					next = append(next, c)
				}
			}
			front = next
		}
	}
	keep := map[string]bool{}
	for f := range probed {
		if _, ok := levels[f]; ok && !pruned[f] {
			keep[f] = true
		}
	}
	return keep
}

// Sampling configures Perun's dynamic sampling (Algorithm 5).
type Sampling struct {
	Threshold float64 // records wanted per function: 10,000 (soft) or 1,000 (strict)
	EpsRatio  float64 // the band threshold·(1 ± EpsRatio) counts as reached; not given by the thesis
	Step      float64 // the initial sample grows as Step^level (2)
	Max       uint32  // the largest sample
}

// SamplingSoft and SamplingStrict are Table A.4's modes.
var (
	SamplingSoft   = Sampling{Threshold: 10000, EpsRatio: 0.1, Step: 2, Max: 1 << 20}
	SamplingStrict = Sampling{Threshold: 1000, EpsRatio: 0.1, Step: 2, Max: 1 << 20}
)

// DynamicSampling chooses each function's sample (record every sample-th
// call): for a function without stats (initial phase) round(Step^level)
// (complexity ratio 1: no bounds analysis here); with stats (refinement)
// the earlier sample scaled by sampled_count/Threshold unless the count is
// within the eps band; bounded to [1, Max]. Functions without a level
// (unreachable) keep 1 in the initial phase.
func DynamicSampling(funcs []string, levels map[string]int, stats map[string]FuncStats, s Sampling) map[string]uint32 {
	out := map[string]uint32{}
	eps := s.Threshold * s.EpsRatio
	for _, f := range funcs {
		sample := 1.0
		if st, ok := stats[f]; ok && st.SampledCount > 0 {
			sample = float64(max(st.Sample, 1))
			calls := float64(st.SampledCount)
			if calls < s.Threshold-eps || calls > s.Threshold+eps {
				sample = math.Round(sample / (s.Threshold / calls))
			}
		} else if l, ok := levels[f]; ok {
			sample = math.Round(math.Pow(s.Step, float64(l)))
		}
		out[f] = uint32(min(max(sample, 1), float64(s.Max)))
	}
	return out
}
