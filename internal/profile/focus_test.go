package profile

import (
	"regexp"
	"testing"
)

// stackNames are the function names of each sample's stack, innermost first.
func stackNames(p *Profile) [][]string {
	var out [][]string
	for _, s := range p.Samples {
		var names []string
		for _, fi := range p.StackAt(s.Stack) {
			names = append(names, p.FrameAt(fi).Name())
		}
		out = append(out, names)
	}
	return out
}

func TestFocusIgnoreHide(t *testing.T) {
	p := testProfile()
	re := regexp.MustCompile
	count := func(f Filter) int { return len(p.Apply(f).Samples) }

	// worker is on 6 stacks (4 sharing one stack), dispatch_2 on the same 6.
	if n := count(Filter{Focus: re(`^worker$`)}); n != 6 {
		t.Errorf("focus worker kept %d samples, want 6", n)
	}
	if n := count(Filter{Ignore: re(`^worker$`)}); n != 4 {
		t.Errorf("ignore worker kept %d samples, want 4", n)
	}
	if n := count(Filter{Focus: re(`^worker$`), Ignore: re(`^(helper|memcpy)$`)}); n != 4 {
		t.Errorf("focus worker, ignore helper and memcpy kept %d, want 4", n)
	}
	// By file:line: work.h:5 is the inlined helper's line.
	if n := count(Filter{Focus: re(`work\.h:5$`)}); n != 1 {
		t.Errorf("focus on work.h:5 kept %d, want 1", n)
	}
	// Focus on a kernel function still works when kernel frames are then
	// dropped: the sample is kept, charged to main.
	q := p.Apply(Filter{Focus: re(`^ksys_write$`), Kernel: KernelExclude})
	if got := stackNames(q); len(got) != 1 || len(got[0]) != 1 || got[0][0] != "main" {
		t.Errorf("focus ksys_write, kernel excluded: %v", got)
	}

	// Hide worker: its self time goes to dispatch_2, its callees keep theirs.
	h := p.Apply(Filter{Hide: re(`^worker$`)})
	if len(h.Samples) != len(p.Samples) {
		t.Fatalf("hide dropped samples: %d of %d", len(h.Samples), len(p.Samples))
	}
	self := map[string]int{}
	for _, r := range h.Flat(ByFunction).Rows {
		self[r.Name] = r.Self
		if r.Name == "worker" {
			t.Errorf("hidden worker still has a row: %+v", r)
		}
	}
	if self["dispatch_2"] != 4 || self["helper"] != 1 || self["memcpy"] != 1 {
		t.Errorf("self after hiding worker: %v, want dispatch_2 4, helper 1, memcpy 1", self)
	}
	// Hiding every frame of a stack leaves an empty stack, kept.
	e := p.Apply(Filter{Hide: re(`.`)})
	if len(e.Samples) != len(p.Samples) || len(e.Flat(ByFunction).Rows) != 1 || e.Flat(ByFunction).Rows[0].Name != Unknown {
		t.Errorf("hide everything: %d samples, rows %+v", len(e.Samples), e.Flat(ByFunction).Rows)
	}
	// Hide then focus: focus sees the whole stack, so hiding worker does not
	// lose the samples a focus on worker selects.
	if n := count(Filter{Focus: re(`^worker$`), Hide: re(`^worker$`)}); n != 6 {
		t.Errorf("focus and hide worker kept %d, want 6", n)
	}
	// The four samples sharing a stack are decided together and keep sharing
	// one stack.
	w := p.Apply(Filter{Focus: re(`^dispatch_2$`), Hide: re(`^memcpy$`)})
	stacks := map[int32]int{}
	for _, s := range w.Samples {
		stacks[s.Stack]++
	}
	if len(w.Samples) != 6 || len(stacks) != 3 {
		t.Errorf("focus dispatch_2 hide memcpy: %d samples on %d stacks (%v), want 6 on 3", len(w.Samples), len(stacks), stackNames(w))
	}
}
