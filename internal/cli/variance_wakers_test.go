package cli

import (
	"slices"
	"testing"
)

// The wakers' functions are chosen as factors are: by share ×
// specificity², the k best, of those the ones over d.
func TestSelectWakers(t *testing.T) {
	heights := map[string]int{"loop": 4, "serve": 2, "lookup": 0, "encode": 0, "reply": 1}
	ws := []wakerShare{
		{"loop", 0.9},    // the thread's loop: above the root, specificity 0
		{"serve", 0.8},   // (3-2)² = 1
		{"lookup", 0.6},  // 9
		{"encode", 0.04}, // 9, but under d
		{"reply", 0.3},   // 4
	}
	for _, c := range []struct {
		k    int
		d    float64
		want []string
	}{
		{3, 0.05, []string{"lookup", "reply", "serve"}},
		{2, 0.05, []string{"lookup", "reply"}},
		{3, 0.5, []string{"lookup", "serve"}},
		// Of the k best, those over d: encode takes the fourth place
		// and does not fill it; loop, fifth, is not reached.
		{4, 0.05, []string{"lookup", "reply", "serve"}},
		{5, 0.01, []string{"lookup", "reply", "serve", "encode", "loop"}},
		{1, 0.7, nil},
	} {
		if got := selectWakers(ws, heights, 3, c.k, c.d); !slices.Equal(got, c.want) {
			t.Errorf("k=%d d=%g: chose %v, want %v", c.k, c.d, got, c.want)
		}
	}
}
