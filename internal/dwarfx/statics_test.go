package dwarfx

import (
	"debug/elf"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// StaticType finds the type of a file-scope struct, a function's static
// struct and a function's static scalar by their symbols' addresses, and
// nothing at a function's.
func TestStaticType(t *testing.T) {
	for _, level := range []string{"-O0", "-O2"} {
		t.Run(level, func(t *testing.T) {
			bin := testutil.C(t, "statics"+level, []string{"statics.c"}, level, "-g")
			info, err := Open(bin)
			if err != nil {
				t.Fatal(err)
			}
			f, err := elf.Open(bin)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			syms, err := f.Symbols()
			if err != nil {
				t.Fatal(err)
			}
			addr := map[string]uint64{}
			for _, s := range syms {
				name := s.Name
				if base, _, ok := strings.Cut(name, "."); ok && elf.ST_TYPE(s.Info) == elf.STT_OBJECT {
					name = base // tally.1, seen.0: a function's static
				}
				if _, dup := addr[name]; !dup {
					addr[name] = s.Value
				}
			}
			for _, tc := range []struct {
				sym    string
				kind   Kind
				fields string
			}{
				{"opts", Struct, "a,b"},
				{"tally", Struct, "a,b"},
				{"seen", Int, ""},
			} {
				a, ok := addr[tc.sym]
				if !ok {
					t.Fatalf("no symbol %s", tc.sym)
				}
				ty, ok := info.StaticType(a)
				if !ok {
					t.Errorf("%s at %#x: no type", tc.sym, a)
					continue
				}
				u := ty.Underlying()
				var names []string
				for _, fl := range u.Fields {
					names = append(names, fl.Name)
				}
				if u.Kind != tc.kind || strings.Join(names, ",") != tc.fields {
					t.Errorf("%s: %v with fields %q; want %v with %q", tc.sym, u.Kind, strings.Join(names, ","), tc.kind, tc.fields)
				}
			}
			if ty, ok := info.StaticType(addr["main"]); ok {
				t.Errorf("main's address has a variable's type: %s", ty.Name)
			}
		})
	}
}
