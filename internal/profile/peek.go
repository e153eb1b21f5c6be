package profile

import (
	"cmp"
	"regexp"
	"slices"
)

// Peek is one function's neighbourhood in the call graph: who called it and
// what it called, with the samples through each, as pprof -peek and perf
// report's caller/callee graphs show.
type Peek struct {
	Function string // Frame.Name of the function
	Object   string // basename of its object
	Self     int    // samples whose innermost frame is the function
	Total    int    // samples with the function on the stack, once per sample
	// Callers are the functions found right outside the function's frames,
	// Callees right inside them; an edge counts a sample once however often
	// recursion repeats it. A stack that starts at the function has the
	// caller "(root)". Most samples first.
	Callers, Callees []Edge
}

// Edge is a neighbouring function and the samples through it.
type Edge struct {
	Name    string
	Object  string
	Samples int
}

// RootCaller names the caller of a function found at the outer end of a
// stack: a thread's start, or a stack the unwinder could not finish.
const RootCaller = "(root)"

// Peeks returns a Peek for each function whose name (Frame.Name) matches re
// and that has samples, by total samples then self samples, most first.
// Functions of the same name in different objects are apart.
func (p *Profile) Peeks(re *regexp.Regexp) []Peek {
	type fnKey struct{ name, object string }
	type acc struct {
		Peek
		callers, callees map[fnKey]int
	}
	key := func(fi int32) fnKey {
		fr := p.FrameAt(fi)
		return fnKey{fr.Name(), fr.ObjectName()}
	}
	matched := map[fnKey]bool{}
	accs := map[fnKey]*acc{}
	perStack := map[int32]int{}
	for _, s := range p.Samples {
		perStack[s.Stack] += s.N()
	}
	type seenKey struct {
		fn, other fnKey
		dir       int8 // 0: the function, 1: caller, 2: callee
	}
	seen := map[seenKey]bool{}
	for st, n := range perStack {
		clear(seen)
		stack := p.StackAt(st)
		for i, fi := range stack {
			k := key(fi)
			m, ok := matched[k]
			if !ok {
				m = re.MatchString(k.name)
				matched[k] = m
			}
			if !m {
				continue
			}
			a := accs[k]
			if a == nil {
				a = &acc{Peek: Peek{Function: k.name, Object: k.object}, callers: map[fnKey]int{}, callees: map[fnKey]int{}}
				accs[k] = a
			}
			if i == 0 {
				a.Self += n
			}
			if sk := (seenKey{fn: k}); !seen[sk] {
				seen[sk] = true
				a.Total += n
			}
			caller := fnKey{RootCaller, ""}
			if i+1 < len(stack) {
				caller = key(stack[i+1])
			}
			if sk := (seenKey{k, caller, 1}); !seen[sk] {
				seen[sk] = true
				a.callers[caller] += n
			}
			if i > 0 {
				callee := key(stack[i-1])
				if sk := (seenKey{k, callee, 2}); !seen[sk] {
					seen[sk] = true
					a.callees[callee] += n
				}
			}
		}
	}
	edges := func(m map[fnKey]int) []Edge {
		out := make([]Edge, 0, len(m))
		for k, n := range m {
			out = append(out, Edge{Name: k.name, Object: k.object, Samples: n})
		}
		slices.SortFunc(out, func(x, y Edge) int {
			return cmp.Or(cmp.Compare(y.Samples, x.Samples), cmp.Compare(x.Name, y.Name), cmp.Compare(x.Object, y.Object))
		})
		return out
	}
	out := make([]Peek, 0, len(accs))
	for _, a := range accs {
		pk := a.Peek
		pk.Callers, pk.Callees = edges(a.callers), edges(a.callees)
		out = append(out, pk)
	}
	slices.SortFunc(out, func(x, y Peek) int {
		return cmp.Or(cmp.Compare(y.Total, x.Total), cmp.Compare(y.Self, x.Self),
			cmp.Compare(x.Function, y.Function), cmp.Compare(x.Object, y.Object))
	})
	return out
}
