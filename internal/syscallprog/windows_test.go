package syscallprog

import "testing"

// TestScaleAt: a switch recorded in a window of scale 10 stands for 10,
// one outside the windows (recorded as its window closed) or in a time
// the programs stayed attached (scale 1) for itself, one in the window
// still open for its scale; without windows every one for itself.
func TestScaleAt(t *testing.T) {
	tr := &Tracer{win: &windows{spans: []Window{
		{Start: 100, End: 200, Scale: 1},
		{Start: 300, End: 400, Scale: 10},
		{Start: 500, End: 600, Scale: 10},
		{Start: 800, Scale: 4}, // open
	}}}
	for _, c := range []struct {
		at   uint64
		want float64
	}{{50, 1}, {150, 1}, {250, 1}, {300, 10}, {400, 10}, {401, 1}, {550, 10}, {700, 1}, {800, 4}, {5000, 4}} {
		if got := tr.ScaleAt(c.at); got != c.want {
			t.Errorf("at %d: %v, want %v", c.at, got, c.want)
		}
	}
	if got := (&Tracer{}).ScaleAt(350); got != 1 {
		t.Errorf("without windows: %v, want 1", got)
	}
}
