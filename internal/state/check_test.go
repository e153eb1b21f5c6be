package state

import "testing"

func TestMisspelt(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"generci", "generic", true}, // a transposition
		{"consme", "consume", true},
		{"phse", "phase", true},
		{"nosuchvar", "i", false},
		{"x", "i", false},
		{"same", "same", false},
		{"lenn", "len", true},
		{"worker", "dispatch", false},
	} {
		if got := misspelt(c.a, c.b); got != c.want {
			t.Errorf("misspelt(%q, %q) = %v (distance %d), want %v", c.a, c.b, got, distance(c.a, c.b), c.want)
		}
	}
	if n := nearest("consme", []string{"main", "consume", "consumer"}); n != "consume" {
		t.Errorf("nearest = %q", n)
	}
}
