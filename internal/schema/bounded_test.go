package schema

import (
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// Which functions of bounded.c do at most a fixed amount of work per
// call, at -O2 (where counters live in registers): a wait whose polls run
// to a constant, and the polls themselves, and a loop counting up to a
// constant; not a loop to a length it is handed, a list followed to its
// end, their caller, nor straight-line code (no loop).
func TestBoundedAt(t *testing.T) {
	bin := testutil.C(t, "bounded-O2", []string{"bounded.c"}, "-O2", "-g")
	code := mustOpenCode(t, bin)
	for _, tc := range []struct {
		fn   string
		want bool
	}{
		{"poll", true},
		{"wait", true},
		{"count_up", true},
		{"walk", false},
		{"chase", false},
		{"drain", false},
		{"straight", false},
		{"main", false},
	} {
		a, _ := symbolAddr(t, bin, tc.fn)
		got, ok := code.BoundedAt(a + 1)
		if !ok || got != tc.want {
			t.Errorf("%s: bounded %v, ok %v; want %v", tc.fn, got, ok, tc.want)
		}
	}
	if _, ok := code.BoundedAt(1); ok {
		t.Error("an address outside every function is known")
	}
}
