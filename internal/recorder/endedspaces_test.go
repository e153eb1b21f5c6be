package recorder

import (
	"testing"

	"github.com/culprit-dev/culprit/internal/proc"
)

// The spaces of ended processes stay findable, the last maxGoneSpaces of
// them, a process ended twice (its pid reused) counted once, its latest
// space kept.
func TestGoneSpaces(t *testing.T) {
	var g goneSpaces
	space := func(start uint64) *proc.Space {
		sp := &proc.Space{}
		sp.Add(proc.Mapping{Start: start, End: start + 0x1000, Path: "/lib"})
		return sp
	}
	g.add(1, space(0x1000))
	g.add(1, space(0x5000))
	if _, ok := g.find(1, 0x1800); ok {
		t.Errorf("pid 1's first space found after its second")
	}
	if m, ok := g.find(1, 0x5800); !ok || m.Start != 0x5000 {
		t.Errorf("pid 1's second space: %+v %v", m, ok)
	}
	for pid := uint32(2); pid <= maxGoneSpaces+1; pid++ {
		g.add(pid, space(0x9000))
	}
	if _, ok := g.find(1, 0x5800); ok || len(g.order) != maxGoneSpaces || len(g.spaces) != maxGoneSpaces {
		t.Errorf("%d spaces kept (%d in order), pid 1 still found: want the last %d", len(g.spaces), len(g.order), maxGoneSpaces)
	}
	if _, ok := g.find(maxGoneSpaces+1, 0x9800); !ok {
		t.Errorf("the last space added is not found")
	}
	var none *goneSpaces
	if _, ok := none.find(1, 0x5800); ok {
		t.Errorf("found in no spaces")
	}
}
