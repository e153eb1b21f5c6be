package introperf

import (
	"fmt"
	"sort"
	"strings"

	"github.com/culprit-dev/culprit/internal/profile"
)

// RankMode is the latency estimate contexts and the view rank by unless
// told otherwise: aggressive. It ranks the root cause higher on the bug
// corpus than the paper's conservative latencies (--mode conservative): a
// short function called many times is mostly seen in one event per call,
// where its conservative latency is 0 and its time goes to the caller
// whose context stayed open, while its aggressive latency runs to the next
// event (docs/introperf.md, docs/accuracy.md).
const RankMode = Aggressive

// RankOptions configure Rank.
type RankOptions struct {
	Mode Mode
	// Inclusive ranks by the raw mean latency μ of each node instead of the
	// normalised μ_own. The paper normalises before ranking; raw latencies
	// count a callee's time again in each of its callers.
	Inclusive bool
	// Totals ranks by each node's total latency over all its instances
	// instead of the mean per instance (μ). Means, as in the paper, compare
	// runs of different sizes per call; totals do not depend on how the
	// events happened to cut a function's time into instances.
	Totals bool
	// Scaled ranks by totals, as Totals, with the buggy run's totals
	// scaled to the base run's length (× the base's total own latency over
	// the buggy's): a context that keeps its share of the time, such as
	// background work that runs as long as the program does, does not grow.
	Scaled bool
	// Top keeps the N costliest paths; 0 keeps all.
	Top int
	// LeafMatch is the paper's matching: a buggy path is compared with the
	// base only when the same chain is a root-to-leaf path there, else
	// every frame counts with base latency 0. By default each frame is
	// compared with the base's node of the same calling context, wherever
	// that context ends in the base.
	LeafMatch bool
	// Idle counts the time a thread waits in a readiness or sleep call
	// (see IdleWait) and a parked thread's wait (see ParkedWaits); by
	// default those frames and their callees count 0 in both runs.
	Idle bool
	// Net sums every frame's change into a path's cost, as the paper
	// does, so a frame whose latency fell takes its fall off the growth
	// of the others. By default a path's cost is its frames' growth: a
	// frame that lost time (its time went to a new callee, or an outer
	// frame's share shrank as the work below it grew) counts 0, since its
	// fall is no evidence against its callees' growth.
	Net bool
	// AllLeaves lists every root-to-leaf path, as the paper does. By
	// default the paths that differ only in their kernel frames (the same
	// user calling context entering the kernel by a system call, an
	// interrupt or a context switch) are listed once, the costliest of them
	// (of equal cost, the one costliest with idle waits counted): otherwise one
	// user context fills the top of the list with its kernel variants.
	AllLeaves bool
}

// IdleWait says whether a function is a call that waits for an outside
// event: readiness (poll, epoll, select), a new connection (accept), a
// timer (nanosleep), a signal; the C library's wrappers and the kernel's
// implementations. Such a call returns when a client sends a request or a
// timer fires, so the time spent in it measures the pace of the world
// outside the program, not work it delayed. Waits that do delay work — a
// lock (futex), I/O on a file, a pipe or socket the program itself fills —
// are not idle.
func IdleWait(name string) bool {
	switch strings.TrimLeft(name, "_") {
	case "poll", "ppoll", "epoll_wait", "epoll_pwait", "epoll_pwait2", "select", "pselect", "pselect6",
		"nanosleep", "clock_nanosleep", "usleep", "sleep", "accept", "accept4", "sigtimedwait", "sigwaitinfo", "pause",
		"do_sys_poll", "do_epoll_wait", "ep_poll", "do_select", "core_sys_select", "hrtimer_nanosleep", "do_nanosleep",
		"common_nanosleep", "do_accept", "do_sigtimedwait", "x64_sys_poll", "x64_sys_ppoll", "x64_sys_epoll_wait",
		"x64_sys_epoll_pwait", "x64_sys_select", "x64_sys_pselect6", "x64_sys_nanosleep", "x64_sys_clock_nanosleep",
		"x64_sys_accept", "x64_sys_accept4", "x64_sys_rt_sigtimedwait":
		return true
	}
	return false
}

// ParkedWaits returns the nodes of t that are a parked thread's waits:
// the calls of a thread's start routine that blocked in the kernel (a stack
// through the scheduler), when the thread ran nothing but the C runtime and
// the kernel below its start routine and no event saw the start routine's
// own code running (no stack ended in it). The start routine is the
// outermost frame outside the C runtime and the kernel (below clone and
// start_thread; a frame of no known object, the root of a truncated stack,
// is not one). Such a thread did no work in the run: whenever a wait
// ended (a wake-up, if any), the thread ran none of the program's code
// before it waited again or exited, only waits and the synchronisation
// around them (a signal, an unlock), so no work followed the wait and none
// was delayed by its length. A maintenance, crawler or logging thread
// waiting on a condition variable for work that did not come is parked; a
// worker whose lock wait is followed by its work (a call into the program
// or a library, or its own code) is not, and neither is a wrapper that
// only takes a lock, since its caller's work follows.
func ParkedWaits(t *Tree, objs *Objects) map[*Node]bool {
	out := map[*Node]bool{}
	outside := func(v *Node) bool {
		fn := t.Funcs.Get(v.Func)
		return objs.Layer(fn) == LayerKernel || profile.RuntimeObject(fn.Object)
	}
	var walk func(v *Node)
	walk = func(v *Node) {
		for _, c := range v.Children {
			if outside(c) {
				walk(c)
				continue
			}
			// c is a start routine: the outermost frame of its own. A
			// frame of no known object is a truncated stack's root, not
			// a start routine.
			if c.PathID >= 0 || objs.Layer(t.Funcs.Get(c.Func)) == LayerUnknown {
				continue
			}
			var blocked []*Node
			inside := true
			for _, w := range c.Children {
				b := false
				stack := []*Node{w}
				for len(stack) > 0 && inside {
					x := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					if !outside(x) {
						inside = false
					}
					if n := strings.TrimLeft(t.Funcs.Get(x.Func).Name, "_"); n == "schedule" {
						b = true
					}
					stack = append(stack, x.Children...)
				}
				if b {
					blocked = append(blocked, w)
				}
			}
			if inside {
				for _, w := range blocked {
					out[w] = true
				}
			}
		}
	}
	walk(t.Root)
	return out
}

// Latency returns node v's latency under o: its normalised own latency
// (or raw with Inclusive), as a mean per instance (or a total with Totals), ns.
func (o RankOptions) Latency(v *Node) float64 {
	if v == nil {
		return 0
	}
	if o.Totals || o.Scaled {
		if o.Inclusive {
			return float64(v.Total[o.Mode])
		}
		return float64(v.Own[o.Mode])
	}
	if o.Inclusive {
		return v.Mean(o.Mode)
	}
	return v.OwnMean(o.Mode)
}

// PathFrame is one frame of a ranked path.
type PathFrame struct {
	Func    Func
	Node    *Node   // the buggy run's node
	Latency float64 // latency in the buggy run, ns: mean own latency per instance (see RankOptions.Latency)
	// Inclusive is the frame's inclusive latency in the buggy run, ns: its
	// own and its callees' in this calling context, aggregated and scaled
	// as Latency (the raw μ, or the total). It is what the heat map shows:
	// own latencies sit wherever the estimate leaves the time (aggressive
	// ones mostly in the leaves), inclusive ones are read down a path as
	// the time each caller spent. 0, as Latency, where the frame counts 0
	// (an idle wait and its callees).
	Inclusive float64
	Base      float64 // the same in the base run's equivalent path; 0 when the path is not in the base
	Count     int64   // instances in the buggy run
	BaseCount int64   // instances in the base run
	Rank      int     // 1 for the frame with the highest Latency in the path
	Distance  int     // position relative to the hottest frame: 0 is the hottest, -k a caller k frames above, +k a callee
	Layer     Layer
}

// Delta is the frame's latency increase over the base, ns.
func (f PathFrame) Delta() float64 { return f.Latency - f.Base }

// RankedPath is a root-to-leaf calling context of the buggy run with its cost.
type RankedPath struct {
	Rank      int
	Cost      float64     // Σ over the frames of max(0, Latency − Base) (with Net, of Latency − Base), ns
	InBase    bool        // an equivalent path (same functions, same order) is a root-to-leaf path of the base run
	Frames    []PathFrame // outermost first
	Hottest   int         // index in Frames of the frame with Rank 1
	Grew      int         // index in Frames of the frame whose latency grew most over the base
	Candidate int         // index in Frames of the root-cause candidate (see Rank)
	// whole is Cost with idle waits counted, in aggressive latencies: it
	// orders paths of equal Cost, which are common when idle waits count 0
	// or a wait's time goes to the callers it shares with the next event
	// (conservative latencies): every kernel variant of one sleeping user
	// context then costs the same, and the variant listed for that context
	// is to be where its time went, the sleep, not the first by name.
	whole float64
}

// CandidateFrame returns the root-cause candidate's frame.
func (r RankedPath) CandidateFrame() PathFrame {
	if r.Candidate < 0 || r.Candidate >= len(r.Frames) {
		return PathFrame{Func: Func{Name: "[unknown]", Object: "[unknown]"}}
	}
	return r.Frames[r.Candidate]
}

// Verdict says where the root-cause candidate lies: its function, binary
// and layer, and whether that is internal or external to the program.
func (r RankedPath) Verdict() string {
	c := r.CandidateFrame()
	side := "internal to the program"
	switch c.Layer {
	case LayerPlugin:
		side = "external: a dlopen'ed plug-in"
	case LayerLibrary:
		side = "external: a library loaded at start"
	case LayerKernel:
		side = "external: the kernel"
	case LayerUnknown:
		side = "binary of unknown layer"
	}
	v := fmt.Sprintf("%s in %s (%s; %s)", c.Func.Name, c.Func.Object, c.Layer, side)
	if r.Grew != r.Candidate && r.Grew >= 0 && r.Grew < len(r.Frames) {
		g := r.Frames[r.Grew]
		v += fmt.Sprintf(", whose time grew in %s (%s)", g.Func.Name, g.Func.Object)
	}
	return v
}

// Names returns the path's function names, outermost first.
func (r RankedPath) Names() []string {
	out := make([]string, len(r.Frames))
	for i, f := range r.Frames {
		out[i] = f.Func.Name
	}
	return out
}

// Rank is DiffRankPaths of Algorithm 3: for each root-to-leaf path of the
// buggy run it computes the cost Σ max(0, μ'_x − μ_x) over the frames of
// the path (Σ(μ'_x − μ_x) with Net, the paper's),
// where μ_x belongs to the equivalent path of the base run (the same
// functions in the same order, itself a root-to-leaf path there), or 0 when
// the base run has no such path; it ranks each path's frames by their
// latency in the buggy run and orders the paths by cost, highest first
// (ties by the aggressive cost with idle waits counted, then by path
// names). Both results must have been built by Analyze, which normalises
// the trees. A nil base ranks the buggy run on its own.
func Rank(base, buggy *Result, o RankOptions) []RankedPath {
	if buggy == nil {
		return nil
	}
	lat := o.Latency
	incOpts := o
	incOpts.Inclusive = true
	wholeOpts := o
	wholeOpts.Mode = Aggressive
	scale := 1.0
	if o.Scaled && base != nil {
		if tb, tg := ownSum(base.Tree, o.Mode), ownSum(buggy.Tree, o.Mode); tb > 0 && tg > 0 {
			scale = tb / tg
		}
	}
	var parked map[*Node]bool
	if !o.Idle {
		parked = ParkedWaits(buggy.Tree, &buggy.Objects)
	}
	var out []RankedPath
	for _, leaf := range buggy.Tree.Leaves() {
		chain := Chain(leaf)
		rp := RankedPath{Frames: make([]PathFrame, len(chain))}
		var baseNodes []*Node
		if o.LeafMatch {
			baseNodes = base.equivalent(buggy.Tree, chain)
			rp.InBase = baseNodes != nil
		} else {
			baseNodes = base.contexts(buggy.Tree, chain)
			rp.InBase = len(baseNodes) > 0 && baseNodes[len(baseNodes)-1] != nil
		}
		idle := false
		for i, v := range chain {
			fn := buggy.Tree.Funcs.Get(v.Func)
			idle = idle || (!o.Idle && (IdleWait(fn.Name) || parked[v]))
			pf := PathFrame{Func: fn, Node: v, Latency: lat(v) * scale, Inclusive: incOpts.Latency(v) * scale, Count: v.Count, Layer: buggy.Objects.Layer(fn)}
			if baseNodes != nil && baseNodes[i] != nil {
				pf.Base = lat(baseNodes[i])
				pf.BaseCount = baseNodes[i].Count
			}
			rp.whole += wholeOpts.Latency(v) * scale
			if baseNodes != nil && baseNodes[i] != nil {
				rp.whole -= wholeOpts.Latency(baseNodes[i])
			}
			if idle {
				pf.Latency, pf.Base, pf.Inclusive = 0, 0, 0
			}
			if d := pf.Latency - pf.Base; d > 0 || o.Net {
				rp.Cost += d
			}
			rp.Frames[i] = pf
		}
		order := make([]int, len(chain))
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(a, b int) bool {
			return rp.Frames[order[a]].Latency > rp.Frames[order[b]].Latency
		})
		for r, i := range order {
			rp.Frames[i].Rank = r + 1
		}
		if len(order) > 0 {
			rp.Hottest = order[0]
		}
		rp.Grew = rp.Hottest
		for i, f := range rp.Frames {
			f.Distance = i - rp.Hottest
			rp.Frames[i] = f
			g := rp.Frames[rp.Grew]
			if f.Delta() > g.Delta() || (f.Delta() == g.Delta() && f.Rank < g.Rank) {
				rp.Grew = i
			}
		}
		// The candidate is the frame that grew most, or, when that frame is
		// in the kernel or the C runtime, the nearest caller outside them:
		// the code that made those calls.
		rp.Candidate = rp.Grew
		for i := rp.Grew; i >= 0; i-- {
			f := rp.Frames[i]
			if f.Layer != LayerKernel && !profile.RuntimeObject(f.Func.Object) {
				rp.Candidate = i
				break
			}
		}
		out = append(out, rp)
	}
	keys := make([]string, len(out))
	for i := range out {
		keys[i] = strings.Join(out[i].Names(), "\x00")
	}
	idx := make([]int, len(out))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		if out[idx[a]].Cost != out[idx[b]].Cost {
			return out[idx[a]].Cost > out[idx[b]].Cost
		}
		if out[idx[a]].whole != out[idx[b]].whole {
			return out[idx[a]].whole > out[idx[b]].whole
		}
		return keys[idx[a]] < keys[idx[b]]
	})
	sorted := make([]RankedPath, 0, len(out))
	seen := map[string]bool{}
	for _, i := range idx {
		if !o.AllLeaves {
			k := out[i].userKey()
			if seen[k] {
				continue
			}
			seen[k] = true
		}
		rp := out[i]
		rp.Rank = len(sorted) + 1
		sorted = append(sorted, rp)
	}
	if o.Top > 0 && len(sorted) > o.Top {
		sorted = sorted[:o.Top]
	}
	return sorted
}

// userKey names a path's frames outside the kernel; a path entirely in the
// kernel (a kernel thread) is named by all of its frames.
func (r RankedPath) userKey() string {
	var b strings.Builder
	for _, f := range r.Frames {
		if f.Layer != LayerKernel {
			b.WriteString(f.Func.Name)
			b.WriteByte(0)
			b.WriteString(f.Func.Object)
			b.WriteByte(0)
		}
	}
	if b.Len() == 0 {
		return "k\x00" + strings.Join(r.Names(), "\x00")
	}
	return b.String()
}

// ownSum is the total own latency of every node of t (its root's total).
func ownSum(t *Tree, m Mode) float64 {
	var s float64
	stack := []*Node{t.Root}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if v.Depth >= 0 {
			s += float64(v.Own[m])
		}
		for _, c := range v.Children {
			stack = append(stack, c)
		}
	}
	return s
}

// contexts returns, for each prefix of chain (a path of tree t), the node of
// r's tree with the same calling context, nil where r has none (and for
// every longer prefix); nil when r is nil.
func (r *Result) contexts(t *Tree, chain []*Node) []*Node {
	if r == nil || len(chain) == 0 {
		return nil
	}
	bt := r.Tree
	out := make([]*Node, len(chain))
	v := bt.Root
	for i, n := range chain {
		f := n.Func
		if bt.Funcs != t.Funcs {
			id, ok := bt.Funcs.index[t.Funcs.Get(f).Key()]
			if !ok {
				return out
			}
			f = id
		}
		c, ok := bt.edges[edge{v.ID, f}]
		if !ok {
			return out
		}
		out[i], v = c, c
	}
	return out
}

// equivalent returns the nodes of r's tree along the path equivalent to
// chain (a path of tree t), or nil when r has no such root-to-leaf path:
// the contexts of every prefix, ending at a leaf.
func (r *Result) equivalent(t *Tree, chain []*Node) []*Node {
	out := r.contexts(t, chain)
	if len(out) == 0 || out[len(out)-1] == nil || len(out[len(out)-1].Children) != 0 {
		return nil
	}
	return out
}
