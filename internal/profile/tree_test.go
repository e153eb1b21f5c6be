package profile

import "testing"

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
