package profile

import (
	"cmp"
	"slices"
	"strings"
)

// TreeNode is one function in one calling context of a top-down call tree
// (report --tree, flame graphs): the samples whose stacks pass through it.
type TreeNode struct {
	Name    string // Frame.Name; "all" at the root; the process name at a process node
	Object  string // the object's basename ("" at the root and processes); that of most of its samples, when frames of several objects share the name
	Kernel  bool
	Inlined bool // every frame behind it was inlined into its caller
	Process bool // a process node, under the root
	Samples int  // samples through this node
	// Children are keyed by name (kernel frames apart), as flamegraph.pl
	// merges frames, so that the trees of two runs of a program rebuilt
	// under another name match.
	Children map[string]*TreeNode

	id    int32 // CallTree's number for the node while it builds the tree
	mixed bool  // frames of several objects lead to the node
}

// Self is the samples whose stacks end at n.
func (n *TreeNode) Self() int {
	s := n.Samples
	for _, c := range n.Children {
		s -= c.Samples
	}
	return s
}

// Size is the number of nodes from n up.
func (n *TreeNode) Size() int {
	s := 1
	for _, c := range n.Children {
		s += c.Size()
	}
	return s
}

// ByName returns n's children in name order, then object order.
func (n *TreeNode) ByName() []*TreeNode {
	out := n.children()
	slices.SortFunc(out, func(a, b *TreeNode) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Object, b.Object))
	})
	return out
}

// BySamples returns n's children, most samples first, then in name order.
func (n *TreeNode) BySamples() []*TreeNode {
	out := n.children()
	slices.SortFunc(out, func(a, b *TreeNode) int {
		return cmp.Or(cmp.Compare(b.Samples, a.Samples), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Object, b.Object))
	})
	return out
}

func (n *TreeNode) children() []*TreeNode {
	out := make([]*TreeNode, 0, len(n.Children))
	for _, c := range n.Children {
		out = append(out, c)
	}
	return out
}

// IsLibrary reports whether n is code of a shared library (its object is
// named like one).
func (n *TreeNode) IsLibrary() bool { return strings.Contains(n.Object, ".so") }

func (n *TreeNode) child(name, object string, kernel, inlined, process bool) *TreeNode {
	key := name
	if kernel {
		key += "\x00k"
	}
	c := n.Children[key]
	if c == nil {
		c = &TreeNode{Name: name, Object: object, Kernel: kernel, Inlined: inlined, Process: process, Children: map[string]*TreeNode{}}
		n.Children[key] = c
	}
	c.Inlined = c.Inlined && inlined
	return c
}

// CallTree returns the top-down call tree of p: the root "all", then (with
// processes) one node per process name as at each sample, then the frames
// of the stacks from the outermost in. An empty stack is one "[unknown]"
// frame.
func (p *Profile) CallTree(processes bool) *TreeNode {
	root := &TreeNode{Name: "all", Children: map[string]*TreeNode{}}
	// Samples sharing a stack and a process name go in together: the
	// pairs are sorted and summed, processes numbered by name.
	type count struct {
		proc  int32
		stack int32
		n     int
	}
	var procs []string
	procID := map[string]int32{}
	counts := make([]count, 0, len(p.Samples))
	for _, s := range p.Samples {
		c := count{stack: s.Stack, n: s.N()}
		if processes {
			name := p.ProcessNameAt(s.PID, s.TID, s.Time)
			id, ok := procID[name]
			if !ok {
				id = int32(len(procs))
				procs = append(procs, name)
				procID[name] = id
			}
			c.proc = id
		}
		counts = append(counts, c)
	}
	// In stack order, neighbours mostly share their outer frames (stacks
	// are numbered as first seen), and the path of the previous stack is
	// reused as far as the frames agree.
	slices.SortFunc(counts, func(a, b count) int {
		return cmp.Or(cmp.Compare(a.proc, b.proc), cmp.Compare(a.stack, b.stack))
	})
	keys := counts[:0]
	for _, c := range counts {
		if n := len(keys); n > 0 && keys[n-1].proc == c.proc && keys[n-1].stack == c.stack {
			keys[n-1].n += c.n
			continue
		}
		keys = append(keys, c)
	}

	b := treeBuilder{p: p, many: map[uint64]int32{}}
	var (
		prevProc  int32
		prevStack []int32 // frames, outermost first
		prevPath  []int32 // prevPath[i]: the edge of prevStack[i]
		top       int32   // the node the stack's frames hang from
	)
	b.node(root)
	for i, k := range keys {
		c := k.n
		root.Samples += c
		if i == 0 || k.proc != prevProc {
			prevProc, prevStack, prevPath = k.proc, prevStack[:0], prevPath[:0]
			top = 0
			if processes {
				top = b.node(root.child(procs[k.proc], "", false, false, true))
			}
		}
		if processes {
			b.nodes[top].Samples += c
		}
		st := p.StackAt(k.stack)
		if len(st) == 0 {
			n := b.nodes[top].child(Unknown, Unknown, false, false, false)
			n.Samples += c
			continue
		}
		// Frames shared with the previous stack, outermost first.
		same := 0
		for same < len(prevStack) && same < len(st) && prevStack[same] == st[len(st)-1-same] {
			same++
		}
		prevStack, prevPath = prevStack[:same], prevPath[:same]
		n := top
		if same > 0 {
			n = b.edges[prevPath[same-1]].child
		}
		for j := len(st) - 1 - same; j >= 0; j-- {
			e := b.edge(n, st[j])
			n = b.edges[e].child
			prevStack = append(prevStack, st[j])
			prevPath = append(prevPath, e)
		}
		for _, e := range prevPath {
			b.edges[e].n += c
			b.nodes[b.edges[e].child].Samples += c
		}
	}
	b.pickObjects()
	return root
}

// treeBuilder numbers the nodes of a call tree being built and the
// (node, frame) steps between them, so that a frame under a node is looked
// up by name once and the steps are counted.
type treeBuilder struct {
	p     *Profile
	nodes []*TreeNode
	edges []treeEdge
	kids  [][]int32        // kids[node]: its edges, while few
	many  map[uint64]int32 // (node, frame) → edge, for nodes with many
	mixed []int32          // nodes reached through frames of several objects
}

type treeEdge struct {
	frame, child int32
	n            int // samples through the edge
}

// A node with more edges than this finds them in the map.
const treeFew = 16

// node numbers n (TreeNode.id is 0 until then; the root is node 0 and never
// a child) and returns its number.
func (b *treeBuilder) node(n *TreeNode) int32 {
	if n.id != 0 || len(b.nodes) > 0 && b.nodes[0] == n {
		return n.id
	}
	n.id = int32(len(b.nodes))
	b.nodes = append(b.nodes, n)
	b.kids = append(b.kids, nil)
	return n.id
}

// edge returns the step from node n through frame, adding it (and the
// child it leads to, unless a frame of the same name made it) if new.
func (b *treeBuilder) edge(n, frame int32) int32 {
	key := uint64(uint32(n))<<32 | uint64(uint32(frame))
	if k := b.kids[n]; len(k) <= treeFew {
		for _, e := range k {
			if b.edges[e].frame == frame {
				return e
			}
		}
	} else if e, ok := b.many[key]; ok {
		return e
	}
	f := b.p.FrameAt(frame)
	obj := f.ObjectName()
	c := b.nodes[n].child(f.Name(), obj, f.Kernel, f.Inlined, false)
	if c.id != 0 && c.Object != obj && !c.mixed {
		c.mixed = true
		b.mixed = append(b.mixed, c.id)
	}
	e := int32(len(b.edges))
	b.edges = append(b.edges, treeEdge{frame: frame, child: b.node(c)})
	b.kids[n] = append(b.kids[n], e)
	switch k := b.kids[n]; {
	case len(k) == treeFew+1: // from now on in the map
		for _, x := range k {
			b.many[uint64(uint32(n))<<32|uint64(uint32(b.edges[x].frame))] = x
		}
	case len(k) > treeFew+1:
		b.many[key] = e
	}
	return e
}

// pickObjects names the object of a node that frames of several objects
// lead to by the one with the most samples through it (then the first in
// name order).
func (b *treeBuilder) pickObjects() {
	if len(b.mixed) == 0 {
		return
	}
	per := map[int32]map[string]int{}
	for _, id := range b.mixed {
		per[id] = map[string]int{}
	}
	for _, e := range b.edges {
		if m := per[e.child]; m != nil {
			m[b.p.FrameAt(e.frame).ObjectName()] += e.n
		}
	}
	for _, id := range b.mixed {
		best, bestN := "", -1
		for obj, n := range per[id] {
			if n > bestN || n == bestN && obj < best {
				best, bestN = obj, n
			}
		}
		b.nodes[id].Object = best
	}
}
