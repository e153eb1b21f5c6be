package introperf

import (
	"github.com/culprit-dev/culprit/internal/profile"
)

// Func is a function identity: what frames are compared by. Two frames are
// the same function when their names and objects (basenames) are equal, so
// identities survive ASLR and are shared between runs of the same program.
type Func struct {
	Name   string // function name, or object+0xoffset when the frame has none
	Object string // object basename, e.g. "libc.so.6", "[kernel.kallsyms]"
	Path   string // object path as recorded (first seen)
	Kernel bool
}

// Key is the identity compared across frames and runs.
func (f Func) Key() string { return f.Name + "\x00" + f.Object }

// Label is "name (object)".
func (f Func) Label() string { return f.Name + " (" + f.Object + ")" }

// FuncTable interns function identities. A table may be shared by the
// analyses of several runs, so that their function ids are comparable.
type FuncTable struct {
	Funcs []Func
	index map[string]int32
}

// NewFuncTable returns an empty table.
func NewFuncTable() *FuncTable { return &FuncTable{index: map[string]int32{}} }

// ID interns the function of frame f.
func (t *FuncTable) ID(f profile.Frame) int32 {
	fn := Func{Name: f.Name(), Object: f.ObjectName(), Path: f.Object, Kernel: f.Kernel}
	if fn.Path == "" {
		fn.Path = fn.Object
	}
	return t.Intern(fn)
}

// Intern returns the id of fn, adding it when new.
func (t *FuncTable) Intern(fn Func) int32 {
	if t.index == nil {
		t.index = map[string]int32{}
	}
	k := fn.Key()
	if id, ok := t.index[k]; ok {
		return id
	}
	id := int32(len(t.Funcs))
	t.Funcs = append(t.Funcs, fn)
	t.index[k] = id
	return id
}

// Get returns the function with id i.
func (t *FuncTable) Get(i int32) Func {
	if i < 0 || int(i) >= len(t.Funcs) {
		return Func{Name: profile.Unknown, Object: profile.Unknown, Path: profile.Unknown}
	}
	return t.Funcs[i]
}

// Node is a node of a calling context tree: a function in one calling
// context (the path of functions from the root to it). After inference it
// carries the performance annotations of the PA-CCT.
type Node struct {
	ID       int32 // node id (map_node key); the root is -1
	Func     int32 // function id in the tree's FuncTable; -1 for the root
	PathID   int32 // path id (map_path key) when some stack ended here, else -1
	Depth    int   // 0 for the outermost frame; -1 for the root
	Parent   *Node
	Children []*Node // in creation order

	// PA-CCT annotations, filled by inference and Normalize.
	Count int64     // function instances inferred in this context (C)
	Total [2]uint64 // sum of instance latencies, ns, by Mode
	Own   [2]uint64 // Total minus the children's Total (top-down normalisation), ns
}

// Mean is the mean latency per instance (μ) in mode m, ns.
func (n *Node) Mean(m Mode) float64 {
	if n.Count == 0 {
		return 0
	}
	return float64(n.Total[m]) / float64(n.Count)
}

// OwnMean is the normalised latency per instance (μ_own) in mode m, ns:
// the node's own total (its total minus its children's totals) over its
// instance count.
func (n *Node) OwnMean(m Mode) float64 {
	if n.Count == 0 {
		return 0
	}
	return float64(n.Own[m]) / float64(n.Count)
}

type edge struct {
	parent int32
	fn     int32
}

// Tree is a calling context tree of one run, built by dynamic calling-context
// indexing (IntroPerf Algorithm 1). Identical contexts always get the same
// path id; ids are handed out in the order contexts are first seen, so the
// same input gives the same ids.
type Tree struct {
	Funcs   *FuncTable
	Root    *Node
	mapPath []*Node // path id → node
	mapNode []*Node // node id → node
	edges   map[edge]*Node
}

// NewTree returns an empty tree naming functions in funcs (a new table when
// nil).
func NewTree(funcs *FuncTable) *Tree {
	if funcs == nil {
		funcs = NewFuncTable()
	}
	return &Tree{
		Funcs: funcs,
		Root:  &Node{ID: -1, Func: -1, PathID: -1, Depth: -1},
		edges: map[edge]*Node{},
	}
}

// getNode returns v's child for function f, creating it (getNode of
// Algorithm 1).
func (t *Tree) getNode(v *Node, f int32) *Node {
	k := edge{v.ID, f}
	if c, ok := t.edges[k]; ok {
		return c
	}
	c := &Node{ID: int32(len(t.mapNode)), Func: f, PathID: -1, Depth: v.Depth + 1, Parent: v}
	v.Children = append(v.Children, c)
	t.mapNode = append(t.mapNode, c)
	t.edges[k] = c
	return c
}

// PathToID indexes a calling context (function ids, outermost first) and
// returns its path id. An empty path is the root and has id -1.
func (t *Tree) PathToID(path []int32) int32 {
	_, id := t.index(path, nil)
	return id
}

// index is PathToID that also returns the nodes along the path (appended to
// nodes), outermost first.
func (t *Tree) index(path []int32, nodes []*Node) ([]*Node, int32) {
	v := t.Root
	for _, f := range path {
		v = t.getNode(v, f)
		nodes = append(nodes, v)
	}
	if v == t.Root {
		return nodes, -1
	}
	if v.PathID == -1 {
		v.PathID = int32(len(t.mapPath))
		t.mapPath = append(t.mapPath, v)
	}
	return nodes, v.PathID
}

// IDToPath returns the calling context (function ids, outermost first) of
// path id, or nil when the id is unknown.
func (t *Tree) IDToPath(id int32) []int32 {
	if id < 0 || int(id) >= len(t.mapPath) {
		return nil
	}
	return t.NodePath(t.mapPath[id])
}

// NodePath returns the functions from the root to v, outermost first.
func (t *Tree) NodePath(v *Node) []int32 {
	var s []int32
	for ; v != nil && v != t.Root; v = v.Parent {
		s = append(s, v.Func)
	}
	for l, r := 0, len(s)-1; l < r; l, r = l+1, r-1 {
		s[l], s[r] = s[r], s[l]
	}
	return s
}

// Node returns the node with id i (map_node), or nil.
func (t *Tree) Node(i int32) *Node {
	if i < 0 || int(i) >= len(t.mapNode) {
		return nil
	}
	return t.mapNode[i]
}

// PathNode returns the node that path id i ends at (map_path), or nil.
func (t *Tree) PathNode(i int32) *Node {
	if i < 0 || int(i) >= len(t.mapPath) {
		return nil
	}
	return t.mapPath[i]
}

// Nodes is the number of nodes, root excluded.
func (t *Tree) Nodes() int { return len(t.mapNode) }

// Paths is the number of path ids handed out (distinct stacks seen).
func (t *Tree) Paths() int { return len(t.mapPath) }

// nodeIDFromPath walks from the end of path pid up to depth d
// (getNodeIDfromCCT of Algorithm 2).
func (t *Tree) nodeIDFromPath(pid int32, d int) *Node {
	v := t.PathNode(pid)
	for v != nil && v.Depth > d {
		v = v.Parent
	}
	return v
}

// Lookup returns the node reached by path (function ids, outermost first),
// or nil when the tree has no such context. It does not add nodes.
func (t *Tree) Lookup(path []int32) *Node {
	v := t.Root
	for _, f := range path {
		c, ok := t.edges[edge{v.ID, f}]
		if !ok {
			return nil
		}
		v = c
	}
	return v
}

// Normalize computes Own for every node (top-down latency normalisation of
// Algorithm 3, on totals): Own = Total − Σ children's Total, clamped at 0.
// With totals, a child's instances lie inside its parent's instances on the
// same thread and do not overlap each other, so the difference is not
// negative in either mode; the clamp only guards against odd input.
func (t *Tree) Normalize() {
	// Iterative post-order: children are created after their parent, so
	// walking node ids backwards visits children first.
	for i := len(t.mapNode) - 1; i >= 0; i-- {
		v := t.mapNode[i]
		for m := range v.Own {
			var sum uint64
			for _, c := range v.Children {
				sum += c.Total[m]
			}
			if v.Total[m] > sum {
				v.Own[m] = v.Total[m] - sum
			} else {
				v.Own[m] = 0
			}
		}
	}
}

// Leaves returns the root-to-leaf paths of the tree (getPathSet of
// Algorithm 3) as their leaf nodes, in depth-first order.
func (t *Tree) Leaves() []*Node {
	var out []*Node
	stack := []*Node{t.Root}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if len(v.Children) == 0 {
			if v != t.Root {
				out = append(out, v)
			}
			continue
		}
		for i := len(v.Children) - 1; i >= 0; i-- {
			stack = append(stack, v.Children[i])
		}
	}
	return out
}

// Chain returns the nodes from the outermost frame to v.
func Chain(v *Node) []*Node {
	var s []*Node
	for ; v != nil && v.Depth >= 0; v = v.Parent {
		s = append(s, v)
	}
	for l, r := 0, len(s)-1; l < r; l, r = l+1, r-1 {
		s[l], s[r] = s[r], s[l]
	}
	return s
}
