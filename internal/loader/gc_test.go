package loader

import (
	"runtime/debug"
	"testing"
)

// gcPercent returns the garbage collector's target without changing it.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// Loads that overlap (culprit view loads in the background) lower the GC
// target while any of them runs, and the last to end restores it, in
// whatever order they end; a target already lower, or off, is kept.
func TestLowerGCOverlapping(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	a := lowerGC()
	b := lowerGC()
	if p := gcPercent(); p != loadGCPercent {
		t.Fatalf("two loads running: target %d, want %d", p, loadGCPercent)
	}
	a()
	if p := gcPercent(); p != loadGCPercent {
		t.Errorf("the first load ended, one still runs: target %d, want %d", p, loadGCPercent)
	}
	b()
	if p := gcPercent(); p != 100 {
		t.Errorf("both ended: target %d, want 100 restored", p)
	}
	for _, low := range []int{20, -1} {
		debug.SetGCPercent(low)
		end := lowerGC()
		if p := gcPercent(); p != low {
			t.Errorf("target %d before: %d while loading", low, p)
		}
		end()
		if p := gcPercent(); p != low {
			t.Errorf("target %d before: %d after", low, p)
		}
	}
}
