package trace

import (
	"sort"

	"github.com/culprit-dev/culprit/internal/schema"
)

// Classes estimates each function's complexity class for Perun's static
// baseline (§7.2.1) from its machine code, where Perun runs the Loopus
// bounds analyser on the C source (tied to clang 3.5, C only): the class
// is a polynomial degree, 0 constant, 1 linear, 2 quadratic, …, taken as
// the deepest nesting of the function's natural loops, or, for a call
// inside d loops, d plus the callee's class, whichever is more. A trip
// count is not read (a loop of 4 iterations counts as linear), which errs
// on the side of keeping. The class is unknown (−1) for a function whose
// code does not all decode, that calls something without a symbol of this
// program (the PLT, a pointer), or that takes part in a cycle of calls
// (recursion): Loopus leaves those unbounded, and unbounded functions are
// kept.
func Classes(shape func(string) (schema.Shape, bool), funcs []string) map[string]int {
	const busy = -2
	class := map[string]int{}
	var of func(f string) int
	of = func(f string) int {
		if c, ok := class[f]; ok {
			if c == busy {
				return -1
			}
			return c
		}
		class[f] = busy
		s, ok := shape(f)
		c := s.Loops
		if !ok || s.Unknown {
			c = -1
		}
		for _, call := range s.Calls {
			if c < 0 {
				break
			}
			if call.Callee == "" {
				c = -1
				break
			}
			cc := of(call.Callee)
			if cc < 0 {
				c = -1
				break
			}
			c = max(c, call.LoopDepth+cc)
		}
		class[f] = c
		return c
	}
	out := map[string]int{}
	for _, f := range funcs {
		out[f] = of(f)
	}
	return out
}

// StaticBaseline returns, in name order, the probed functions whose class
// is known and at most complexity (0: constant, Perun's default), except
// those on the top keepTop levels of the call graph, keepTop =
// max(depth·0.1, 1) with depth its deepest level (Table A.4's
// top_static_ratio), and the changed ones.
func StaticBaseline(probed []string, classes map[string]int, levels map[string]int, complexity int, changed map[string]bool) []string {
	depth := 0
	for _, l := range levels {
		depth = max(depth, l)
	}
	keepTop := max(int(float64(depth)*0.1), 1)
	var out []string
	for _, f := range probed {
		c, ok := classes[f]
		if !ok || c < 0 || c > complexity || changed[f] {
			continue
		}
		if l, ok := levels[f]; ok && l < keepTop {
			continue
		}
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}
