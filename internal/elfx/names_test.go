package elfx

import "testing"

func TestIsPartClone(t *testing.T) {
	for _, c := range []struct {
		in   string
		want bool
	}{
		{"fill.part.0", true},
		{"fill.part.12", true},
		{"fill.part.0.isra.0", true},
		{"fill.constprop.0.part.0", true},
		{"fill.part.0.cold", true},
		{"fill.part.0@@V1", true},
		{"fill", false},
		{"fill.constprop.0", false},
		{"fill.isra.0", false},
		{"fill.cold", false},
		{"part.0", false},
		{"my.part", true},
		{"depart.0", false},
		{"fill.parts.0", false},
	} {
		if got := IsPartClone(c.in); got != c.want {
			t.Errorf("IsPartClone(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}
