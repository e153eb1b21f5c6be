package state

import (
	"os"
	"path/filepath"
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

// A library's globals are planned for a spec whose program pattern names
// the library (libfoo.so also matching libfoo.so.1), at the library's ELF
// addresses, and for value sampling when the library has DWARF; the
// executable's plan does not get them, nor another library's.
func TestGlobalMemoryOfLibrary(t *testing.T) {
	lib := testutil.C(t, "libglob.so", []string{"libglob.c"}, "-O2", "-g", "-shared", "-fPIC")
	versioned := filepath.Join(t.TempDir(), "libglob.so.1.2")
	if err := os.Symlink(lib, versioned); err != nil {
		t.Fatal(err)
	}
	exe := testutil.C(t, "jobs", []string{"jobs.c"}, "-O2", "-g")
	g := testutil.Symbol(t, lib, "gstate")
	round := g.Value + 6*8 // after base and pad[5]
	spec, err := expr.ParseSpec("libglob.so@glob_spin@gstate.round")
	if err != nil {
		t.Fatal(err)
	}
	s := NewSampler([]*expr.Spec{spec}, nil, 1)
	if !s.Wants(exe) {
		t.Errorf("a spec naming a library does not apply to a process that may map it")
	}
	got := s.GlobalMemory(exe, versioned)
	if len(got) != 1 || got[0].Addr != round || got[0].Len != 8 || got[0].From != -1 {
		t.Errorf("GlobalMemory(%s) = %+v, want 8 bytes at %#x", versioned, got, round)
	}
	if got := s.GlobalMemory(exe, lib); len(got) != 0 {
		t.Errorf("GlobalMemory of %s (not named libglob.so) = %+v, want nothing", filepath.Base(lib), got)
	}
	if got := s.GlobalMemory(exe, exe); len(got) != 0 {
		t.Errorf("the executable's plan holds a library spec's globals: %+v", got)
	}
	// Value sampling: the library's schema globals, gstate's members.
	v := NewSampler(nil, nil, 1)
	v.EnableValues(ValueOptions{Depth: -1, Globals: true})
	got = v.GlobalMemory(exe, lib)
	covered := false
	for _, r := range got {
		if r.From < 0 && r.Addr <= round && round+8 <= r.Addr+uint64(r.Len) {
			covered = true
		}
	}
	if !covered {
		t.Errorf("--values plan of %s = %+v, want gstate.round (%#x) in it", lib, got, round)
	}
}
