package schema

import (
	"reflect"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// How functions compare their locals: with constants only (an error code
// and an end, a threshold), or with another variable.
func TestCompared(t *testing.T) {
	for _, level := range levels {
		t.Run(level, func(t *testing.T) {
			bin := testutil.C(t, "compare"+level, []string{"compare.c"}, level, "-g")
			cmps, err := Compared(bin)
			if err != nil {
				t.Fatal(err)
			}
			find := func(fn, name string) (Comparisons, bool) {
				for k, c := range cmps {
					if k.Function == fn && k.Variable == name {
						return c, true
					}
				}
				return Comparisons{}, false
			}
			outcomes := func(c Comparisons, x int64) uint64 {
				o, ok := c.Outcomes(x)
				if !ok {
					t.Fatalf("%+v: no outcomes for %d", c, x)
				}
				return o
			}
			// got: -1 and 0 take branches of their own; 35 and 15911 take
			// the same ones.
			got, ok := find("consume", "got")
			if !ok || got.Unknown || len(got.Known) == 0 {
				t.Fatalf("consume:got: %+v, %v; want comparisons with constants only", got, ok)
			}
			if outcomes(got, 35) != outcomes(got, 15911) {
				t.Errorf("consume:got: 35 and 15911 take other branches (%+v)", got)
			}
			if outcomes(got, -1) == outcomes(got, 35) || outcomes(got, 0) == outcomes(got, 35) || outcomes(got, -1) == outcomes(got, 0) {
				t.Errorf("consume:got: -1, 0 and 35 do not take branches of their own (%+v)", got)
			}
			// n < 16: 3 and 15 one way, 16 and 1000 the other.
			n, ok := find("small", "n")
			if !ok || n.Unknown || len(n.Known) == 0 {
				t.Fatalf("small:n: %+v, %v; want comparisons with constants only", n, ok)
			}
			if outcomes(n, 3) != outcomes(n, 15) || outcomes(n, 16) != outcomes(n, 1000) || outcomes(n, 15) == outcomes(n, 16) {
				t.Errorf("small:n: the threshold 16 is not where the branches change (%+v)", n)
			}
			if outcomes(n, -5) != outcomes(n, 3) {
				t.Errorf("small:n: -5 is not below 16 (signed) (%+v)", n)
			}
			// n > limit: not evaluable.
			if b, ok := find("bounded", "n"); ok {
				if _, ok := b.Outcomes(5); ok {
					t.Errorf("bounded:n: %+v; a comparison with another variable has outcomes", b)
				}
			}
			// A Comparer, analysing a function when asked, answers as the
			// analysis of every function does.
			c, err := NewComparer(bin)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for k, want := range cmps {
				if got, ok := c.Of(k); !ok || !reflect.DeepEqual(got, want) {
					t.Errorf("%+v: the Comparer gives %+v, %v; the whole analysis %+v", k, got, ok, want)
				}
			}
			if _, ok := c.Of(Key{Function: "nosuch", Variable: "n"}); ok {
				t.Error("a local of no function has comparisons")
			}
		})
	}
}

// The conditions, signed and unsigned, at operand widths.
func TestCompareTaken(t *testing.T) {
	for _, tc := range []struct {
		k    Compare
		x    int64
		want bool
	}{
		{Compare{Cond: "E", Const: -1, Bits: 32}, -1, true},
		{Compare{Cond: "E", Const: 0xffffffff, Bits: 32}, -1, true}, // the same 32 bits
		{Compare{Cond: "NE", Const: 0, Bits: 32}, 0, false},
		{Compare{Cond: "L", Const: 16, Bits: 64}, -5, true},
		{Compare{Cond: "B", Const: 16, Bits: 64}, -5, false}, // unsigned: huge
		{Compare{Cond: "G", Const: 0, Bits: 8}, 200, false},  // 200 is −56 in 8 bits
		{Compare{Cond: "A", Const: 0, Bits: 8}, 200, true},
		{Compare{Cond: "LE", Add: 1, Const: 10, Bits: 32}, 9, true},
		{Compare{Cond: "LE", Add: 1, Const: 10, Bits: 32}, 10, false},
		{Compare{Cond: "S", Const: 0, Bits: 32}, -3, true},
		{Compare{Cond: "NS", Const: 0, Bits: 32}, 3, true},
		{Compare{Cond: "GE", Const: 100, Bits: 16}, 100, true},
		{Compare{Cond: "BE", Const: 100, Bits: 16}, 101, false},
		{Compare{Cond: "AE", Const: 100, Bits: 16}, 100, true},
	} {
		got, ok := tc.k.taken(tc.x)
		if !ok || got != tc.want {
			t.Errorf("%+v at %d: %v, %v; want %v", tc.k, tc.x, got, ok, tc.want)
		}
	}
	if _, ok := (Compare{Cond: "P", Bits: 32}).taken(1); ok {
		t.Error("parity: evaluated")
	}
	if _, ok := (Comparisons{Known: []Compare{{Cond: "E", Bits: 32}}, Unknown: true}).Outcomes(1); ok {
		t.Error("a variable with an unknown use has outcomes")
	}
}
