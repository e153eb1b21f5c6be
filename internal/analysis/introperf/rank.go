package introperf

import (
	"fmt"
	"sort"
	"strings"
)

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
	// Top keeps the N costliest paths; 0 keeps all.
	Top int
}

// Latency returns node v's latency under o: its normalised own latency
// (or raw with Inclusive), as a mean per instance (or a total with Totals), ns.
func (o RankOptions) Latency(v *Node) float64 {
	if v == nil {
		return 0
	}
	if o.Totals {
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
	Func      Func
	Node      *Node   // the buggy run's node
	Latency   float64 // latency in the buggy run, ns: mean own latency per instance (see RankOptions.Latency)
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
	Cost      float64     // Σ over the frames of (Latency − Base), ns
	InBase    bool        // an equivalent path (same functions, same order) is a root-to-leaf path of the base run
	Frames    []PathFrame // outermost first
	Hottest   int         // index in Frames of the frame with Rank 1
	Grew      int         // index in Frames of the frame whose latency grew most over the base
	Candidate int         // index in Frames of the root-cause candidate (see Rank)
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

// systemObject reports whether an object is the C runtime or the dynamic
// loader, whose frames mostly carry the program's calls into the kernel.
func systemObject(obj string) bool {
	for _, p := range []string{"libc.so", "libc-", "libpthread.so", "libpthread-", "ld-linux", "ld-musl",
		"libdl.so", "librt.so", "[vdso]"} {
		if strings.HasPrefix(obj, p) {
			return true
		}
	}
	return false
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
// buggy run it computes the cost Σ(μ'_x − μ_x) over the frames of the path,
// where μ_x belongs to the equivalent path of the base run (the same
// functions in the same order, itself a root-to-leaf path there), or 0 when
// the base run has no such path; it ranks each path's frames by their
// latency in the buggy run and orders the paths by cost, highest first
// (ties by path names). Both results must have been built by Analyze, which
// normalises the trees. A nil base ranks the buggy run on its own.
func Rank(base, buggy *Result, o RankOptions) []RankedPath {
	if buggy == nil {
		return nil
	}
	lat := o.Latency
	var out []RankedPath
	for _, leaf := range buggy.Tree.Leaves() {
		chain := Chain(leaf)
		rp := RankedPath{Frames: make([]PathFrame, len(chain))}
		baseNodes := base.equivalent(buggy.Tree, chain)
		rp.InBase = baseNodes != nil
		for i, v := range chain {
			fn := buggy.Tree.Funcs.Get(v.Func)
			pf := PathFrame{Func: fn, Node: v, Latency: lat(v), Count: v.Count, Layer: buggy.Objects.Layer(fn)}
			if baseNodes != nil {
				pf.Base = lat(baseNodes[i])
				pf.BaseCount = baseNodes[i].Count
			}
			rp.Cost += pf.Latency - pf.Base
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
			if f.Layer != LayerKernel && !systemObject(f.Func.Object) {
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
		return keys[idx[a]] < keys[idx[b]]
	})
	sorted := make([]RankedPath, len(out))
	for r, i := range idx {
		sorted[r] = out[i]
		sorted[r].Rank = r + 1
	}
	if o.Top > 0 && len(sorted) > o.Top {
		sorted = sorted[:o.Top]
	}
	return sorted
}

// equivalent returns the nodes of r's tree along the path equivalent to
// chain (a path of tree t), or nil when r has no such root-to-leaf path.
func (r *Result) equivalent(t *Tree, chain []*Node) []*Node {
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
				return nil
			}
			f = id
		}
		c, ok := bt.edges[edge{v.ID, f}]
		if !ok {
			return nil
		}
		out[i], v = c, c
	}
	if len(v.Children) != 0 {
		return nil
	}
	return out
}
