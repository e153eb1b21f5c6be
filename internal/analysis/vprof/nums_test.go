package vprof

import (
	"math"
	"testing"
)

// A series reads back every number it was given, in order and to the bit,
// through each widening: small integers, then wider ones, then numbers only
// a float64 holds.
func TestNums(t *testing.T) {
	in := []float64{0, 1, -128, 127, 5, -129, 32767, -32768, 40000, math.MaxInt32, math.MinInt32,
		3, math.MaxInt32 + 1, 0.5, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), 1e300, -7}
	for n := 1; n <= len(in); n++ {
		var s nums
		if n%2 == 0 {
			s.grow(n)
		}
		for _, x := range in[:n] {
			s.add(x)
		}
		if s.len() != n {
			t.Fatalf("%d numbers: len %d", n, s.len())
		}
		got := s.floats()
		for i, x := range in[:n] {
			if math.Float64bits(s.at(i)) != math.Float64bits(x) || math.Float64bits(got[i]) != math.Float64bits(x) {
				t.Fatalf("%d numbers: [%d] = %g (%g), want %g", n, i, s.at(i), got[i], x)
			}
		}
		if app := s.appendTo([]float64{42}); len(app) != n+1 || app[0] != 42 || app[n] != in[n-1] {
			t.Fatalf("%d numbers: appendTo %v", n, app)
		}
	}
	// The narrowest form holds the numbers: one byte each for small ones.
	var s nums
	for i := range 1000 {
		s.add(float64(i%7 - 3))
	}
	if s.w != 1 || len(s.i8) != 1000 {
		t.Errorf("small integers take width %d", s.w)
	}
	s.add(200)
	if s.w != 2 || s.len() != 1001 || s.at(0) != -3 || s.at(1000) != 200 {
		t.Errorf("after 200: width %d, len %d", s.w, s.len())
	}
	if w := width(math.NaN()); w != 8 {
		t.Errorf("NaN width %d", w)
	}
}
