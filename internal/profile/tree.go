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
	Object  string // the object's basename ("" at the root and processes); the first frame's, when frames of several objects share the name
	Kernel  bool
	Inlined bool // every frame behind it was inlined into its caller
	Process bool // a process node, under the root
	Samples int  // samples through this node
	// Children are keyed by name (kernel frames apart), as flamegraph.pl
	// merges frames, so that the trees of two runs of a program rebuilt
	// under another name match.
	Children map[string]*TreeNode
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
	// Samples sharing a stack and a process name go in together.
	type key struct {
		stack   int32
		process string
	}
	perStack := map[key]int{}
	for _, s := range p.Samples {
		k := key{stack: s.Stack}
		if processes {
			k.process = p.ProcessNameAt(s.PID, s.TID, s.Time)
		}
		perStack[k] += s.N()
	}
	// A frame under a given node always leads to the same child: each
	// (node, frame) pair is looked up by name once.
	type step struct {
		parent *TreeNode
		frame  int32
	}
	next := map[step]*TreeNode{}
	for k, c := range perStack {
		n := root
		n.Samples += c
		if processes {
			n = n.child(k.process, "", false, false, true)
			n.Samples += c
		}
		st := p.StackAt(k.stack)
		if len(st) == 0 {
			n = n.child(Unknown, Unknown, false, false, false)
			n.Samples += c
			continue
		}
		for i := len(st) - 1; i >= 0; i-- {
			sk := step{n, st[i]}
			ch, ok := next[sk]
			if !ok {
				f := p.FrameAt(st[i])
				ch = n.child(f.Name(), f.ObjectName(), f.Kernel, f.Inlined, false)
				next[sk] = ch
			}
			n = ch
			n.Samples += c
		}
	}
	return root
}
