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

// A glob names a function in any enclosing scope, as a debugger's
// breakpoint does; "::" anchors it; scopes inside template arguments and
// parameter lists are not scopes of the function.
func TestMatchName(t *testing.T) {
	for _, c := range []struct {
		glob, name string
		want       bool
	}{
		{"area", "geo::Square::area", true},
		{"Square::area", "geo::Square::area", true},
		{"geo::Square::area", "geo::Square::area", true},
		{"*::area", "geo::Square::area", true},
		{"::area", "geo::Square::area", false},
		{"::geo::Square::area", "geo::Square::area", true},
		{"uare::area", "geo::Square::area", false},
		{"add(long)", "geo::Accum<long>::add(long)", true},
		{"Accum<long>::add*", "geo::Accum<long>::add(long)", true},
		{"string>::g", "ns::F<std::string>::g", false},
		{"vector<int>)", "ns::g(std::vector<int>)", false},
		{"parse_*", "svc::parse_size", true},
		{"parse_*", "parse_size", true},
		{"::parse_size", "parse_size", true},
		{"size", "parse_size", false},
		{"work", "main.work", false}, // Go's package paths are not C++ scopes
	} {
		if got := MatchName(c.glob, c.name); got != c.want {
			t.Errorf("MatchName(%q, %q) = %v, want %v", c.glob, c.name, got, c.want)
		}
	}
}
