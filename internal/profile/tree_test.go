package profile

import (
	"fmt"
	"testing"
)

func TestCallTree(t *testing.T) {
	p := testProfile()
	root := p.CallTree(true)
	if root.Samples != 10 || len(root.Children) != 1 {
		t.Fatalf("root: %d samples, %d children", root.Samples, len(root.Children))
	}
	app := root.BySamples()[0]
	if !app.Process || app.Name != "app" || app.Samples != 10 || app.Object != "" {
		t.Fatalf("process node %+v", app)
	}
	// main is outermost in 9 stacks; entry_SYSCALL_64 alone in one.
	kids := app.BySamples()
	if len(kids) != 2 || kids[0].Name != "main" || kids[0].Samples != 9 || kids[1].Name != "entry_SYSCALL_64" || !kids[1].Kernel {
		t.Fatalf("outermost frames %+v", kids)
	}
	m := kids[0]
	// main: dispatch_2 6, recurse 1, libc+0x1234 1, entry_SYSCALL_64 (a
	// kernel frame: a child of its own) 1; main is never innermost.
	if m.Self() != 0 || len(m.Children) != 4 || m.BySamples()[0].Name != "dispatch_2" {
		t.Errorf("main: self %d, children %d", m.Self(), len(m.Children))
	}
	w := m.Children["dispatch_2"].Children["worker"]
	if w == nil || w.Samples != 6 || w.Self() != 4 || w.Object != "app" || len(w.Children) != 2 {
		t.Fatalf("worker %+v", w)
	}
	if h := w.Children["helper"]; h == nil || !h.Inlined || h.Samples != 1 {
		t.Errorf("inlined helper %+v", h)
	}
	if mc := w.Children["memcpy"]; mc == nil || !mc.IsLibrary() || mc.Inlined {
		t.Errorf("memcpy %+v", mc)
	}
	// Recursion is a chain, not merged.
	r := m.Children["recurse"]
	if r == nil || r.Children["recurse"] == nil || r.Children["recurse"].Children["recurse"] == nil {
		t.Errorf("recursion not three deep: %+v", r)
	}
	// all, app, then main, dispatch_2, worker, helper, memcpy,
	// entry_SYSCALL_64, ksys_write, recurse ×3, libc.so.6+0x1234 under it,
	// and entry_SYSCALL_64 alone.
	if n := root.Size(); n != 14 {
		t.Errorf("tree of %d nodes, want 14", n)
	}
	// Without processes the frames hang from the root.
	if flat := p.CallTree(false); len(flat.Children) != 2 || flat.Children["main"] == nil {
		t.Errorf("tree without processes: %v", flat.Children)
	}
}

// Frames of two objects with one name under one node make one node, named
// by the object with most samples through it, whichever comes first; a node
// with many children finds each of them again.
func TestCallTreeSharedNamesAndWideNodes(t *testing.T) {
	p := &Profile{
		Frames: []Frame{
			{Function: "_start", Object: "/lib/ld-linux-x86-64.so.2"},
			{Function: "_start", Object: "/usr/bin/app"},
			{Function: "main", Object: "/usr/bin/app"},
		},
		Threads: map[uint32]Thread{1: {PID: 1, TID: 1, Comm: "app"}},
	}
	p.Stacks = [][]int32{{0}, {1}, {2, 1}}
	p.Samples = []Sample{{PID: 1, TID: 1, Stack: 0}, {PID: 1, TID: 1, Stack: 1, More: 2}, {PID: 1, TID: 1, Stack: 2}}
	// main calls 40 functions (more than a node keeps in its list), each
	// in two samples reached through two stacks.
	for i := range 40 {
		p.Frames = append(p.Frames, Frame{Function: fmt.Sprintf("f%02d", i), Object: "/usr/bin/app"})
		f := int32(len(p.Frames) - 1)
		p.Stacks = append(p.Stacks, []int32{f, 2, 1})
		p.Samples = append(p.Samples, Sample{PID: 1, TID: 1, Stack: int32(len(p.Stacks) - 1)})
	}
	for i := range 40 {
		p.Stacks = append(p.Stacks, []int32{int32(3 + i), 2, 1})
		p.Samples = append(p.Samples, Sample{PID: 1, TID: 1, Stack: int32(len(p.Stacks) - 1)})
	}
	for range 2 {
		root := p.CallTree(true)
		start := root.Children["app"].Children["_start"]
		if start == nil || start.Samples != 85 || start.Object != "app" {
			t.Fatalf("_start %+v", start)
		}
		m := start.Children["main"]
		if m == nil || m.Samples != 81 || len(m.Children) != 40 {
			t.Fatalf("main %+v", m)
		}
		for name, c := range m.Children {
			if c.Samples != 2 || len(c.Children) != 0 {
				t.Errorf("%s: %d samples, %d children", name, c.Samples, len(c.Children))
			}
		}
	}
	// With the counts the other way round, the loader's _start names it.
	p.Samples[0].More, p.Samples[1].More = 90, 0
	if s := p.CallTree(false).Children["_start"]; s.Object != "ld-linux-x86-64.so.2" {
		t.Errorf("_start object %q", s.Object)
	}
}
