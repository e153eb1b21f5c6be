package recorder

import (
	"testing"

	"github.com/culprit-dev/culprit/internal/syscallprog"
)

// TestSwitchScales: a switch recorded in a window of scale 10 stands for
// 10, one outside the windows (recorded as its window closed) or in a
// time the programs stayed attached (scale 1) for itself; the window
// still open at the last drain counts from its start, and once closed it
// is taken from the closed ones.
func TestSwitchScales(t *testing.T) {
	var s switchScales
	s.see(syscallprog.Window{Start: 100, End: 200, Scale: 1})
	s.see(syscallprog.Window{Start: 300, End: 400, Scale: 10})
	s.see(syscallprog.Window{Start: 500, Scale: 10}) // open
	for _, c := range []struct {
		t    uint64
		want float64
	}{{150, 1}, {250, 1}, {300, 10}, {400, 10}, {401, 1}, {500, 10}, {900, 10}} {
		if got := s.at(c.t); got != c.want {
			t.Errorf("at %d: %v, want %v", c.t, got, c.want)
		}
	}
	s.see(syscallprog.Window{Start: 500, End: 600, Scale: 10}) // closed
	s.see(syscallprog.Window{Start: 800, Scale: 4})
	for _, c := range []struct {
		t    uint64
		want float64
	}{{550, 10}, {700, 1}, {800, 4}} {
		if got := s.at(c.t); got != c.want {
			t.Errorf("after the close, at %d: %v, want %v", c.t, got, c.want)
		}
	}
	ss := &session{switchScales: &switchScales{}}
	ss.switchScales.see(syscallprog.Window{Start: 5, Scale: 2.5})
	sum := uint64(0)
	for i := 0; i < 4; i++ {
		sum += ss.switchWeight(10)
	}
	if sum != 10 {
		t.Errorf("4 switches in a window of scale 2.5 weigh %d, want 10", sum)
	}
	if w := (&session{}).switchWeight(10); w != 1 {
		t.Errorf("without windowed switches a switch weighs %d, want 1", w)
	}
}
