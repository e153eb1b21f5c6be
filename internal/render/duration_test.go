package render

import "testing"

// Durations in a table keep three figures in their unit, and a negative
// one (a difference, as variance's other can be) the unit of its size.
func TestDuration(t *testing.T) {
	for _, c := range []struct {
		ns   float64
		want string
	}{
		{0, "0ns"}, {999, "999ns"}, {73207, "73.2µs"}, {2.5e6, "2.5ms"}, {3e9, "3s"},
		{-73207, "-73.2µs"}, {-12, "-12ns"}, {-1.25e6, "-1.25ms"},
	} {
		if got := Duration(c.ns); got != c.want {
			t.Errorf("Duration(%g) = %q, want %q", c.ns, got, c.want)
		}
	}
}
