package state

import (
	"testing"

	"github.com/culprit-dev/culprit/internal/expr"
	"github.com/culprit-dev/culprit/internal/testutil"
)

// GlobalMemory plans the globals an expression names, from DWARF: jobs.c's
// cfg (int limits[4]; long scale) is 24 bytes at the symbol's address.
func TestGlobalMemory(t *testing.T) {
	bin := testutil.C(t, "jobs", []string{"jobs.c"}, "-O2", "-g")
	cfg := testutil.Symbol(t, bin, "cfg")
	if cfg.Size != 24 {
		t.Fatalf("cfg symbol: %+v", cfg)
	}
	spec, err := expr.ParseSpec("jobs*@process@cfg.limits[2] + j->size")
	if err != nil {
		t.Fatal(err)
	}
	s := NewSampler([]*expr.Spec{spec}, nil, 1)
	got := s.GlobalMemory(bin, bin)
	// Exactly the bytes read: limits[2], 4 bytes at offset 8.
	if len(got) != 1 || got[0].Addr != cfg.Value+8 || got[0].Len != 4 || got[0].From != -1 {
		t.Errorf("GlobalMemory = %+v, want one range of 4 bytes at %#x", got, cfg.Value+8)
	}
	// A variable index: the whole array; the global itself: all of it.
	for src, want := range map[string][2]uint64{"jobs*@process@cfg.limits[n]": {cfg.Value, 16}, "jobs*@process@cfg.scale": {cfg.Value + 16, 8}, "jobs*@process@cfg.limits[1] + cfg": {cfg.Value, 24}} {
		spec, err := expr.ParseSpec(src)
		if err != nil {
			t.Fatal(err)
		}
		got := NewSampler([]*expr.Spec{spec}, nil, 1).GlobalMemory(bin, bin)
		if len(got) != 1 || got[0].Addr != want[0] || uint64(got[0].Len) != want[1] {
			t.Errorf("GlobalMemory(%s) = %+v, want %d bytes at %#x", src, got, want[1], want[0])
		}
	}
	// A program the spec does not name: nothing to copy.
	other, _ := expr.ParseSpec("other@process@cfg.scale")
	if got := NewSampler([]*expr.Spec{other}, nil, 1).GlobalMemory(bin, ""); len(got) != 0 {
		t.Errorf("GlobalMemory for a spec of another program = %+v", got)
	}
}

func TestNeedsHeap(t *testing.T) {
	for src, want := range map[string]bool{
		"jobs*@process@n + 1":         false,
		"jobs*@process@cfg.limits":    false,
		"jobs*@process@j->size":       true,
		"jobs*@process@*p":            true,
		"jobs*@process@cfg.limits[2]": true, // an index may go through a pointer
		"other@process@j->size":       false,
	} {
		spec, err := expr.ParseSpec(src)
		if err != nil {
			t.Fatal(err)
		}
		if got := NewSampler([]*expr.Spec{spec}, nil, 1).NeedsHeap("/x/jobs"); got != want {
			t.Errorf("NeedsHeap(%s) = %v, want %v", src, got, want)
		}
	}
}

func TestMayNeedHeap(t *testing.T) {
	plain, _ := expr.ParseSpec("other@f@n")
	chain, _ := expr.ParseSpec("other@f@j->size")
	if NewSampler([]*expr.Spec{plain}, nil, 1).MayNeedHeap("") {
		t.Errorf("MayNeedHeap with an expression that follows no pointer")
	}
	if !NewSampler([]*expr.Spec{plain, chain}, nil, 1).MayNeedHeap("") {
		t.Errorf("MayNeedHeap false with j->size for another program")
	}
}
