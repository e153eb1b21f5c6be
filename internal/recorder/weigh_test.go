package recorder

import "testing"

// TestWeigh: weights scaled by a fraction carry what is left over to the
// next, so that four switches in a window of scale 2.5 weigh 10 in all;
// without switches recorded in windows a switch weighs 1.
func TestWeigh(t *testing.T) {
	var frac float64
	sum := uint64(0)
	for i := 0; i < 4; i++ {
		sum += weigh(1, 2.5, &frac)
	}
	if sum != 10 {
		t.Errorf("4 switches in a window of scale 2.5 weigh %d, want 10", sum)
	}
	if w := weigh(3, 1, &frac); w != 3 {
		t.Errorf("3 calls at scale 1 weigh %d, want 3", w)
	}
	if w := (&session{}).switchWeight(10); w != 1 {
		t.Errorf("without windowed switches a switch weighs %d, want 1", w)
	}
}
