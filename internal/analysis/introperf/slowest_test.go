package introperf

import (
	"math/rand"
	"slices"
	"testing"
)

// TestSlowest checks the selection against sorting every instance, in
// both modes, for n below, at and above the number of instances.
func TestSlowest(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for round := range 200 {
		list := make([]Instance, r.Intn(50))
		for i := range list {
			list[i] = Instance{Node: int32(r.Intn(4)), Start: uint64(r.Intn(20)),
				Conservative: uint64(r.Intn(10)), Aggressive: uint64(r.Intn(10))}
		}
		for _, m := range []Mode{Conservative, Aggressive} {
			for _, n := range []int{0, 1, 5, len(list), len(list) + 3} {
				s := NewSlowest(m, n)
				for _, in := range list {
					s.Add(in)
				}
				all := slices.Clone(list)
				slices.SortStableFunc(all, s.less)
				if n > 0 && n < len(all) {
					all = all[:n]
				}
				got := s.List()
				// Instances equal in latency, start and context may come
				// in either order: compare their keys.
				if len(got) != len(all) || s.Count() != len(list) {
					t.Fatalf("round %d, n %d: %d of %d, want %d of %d", round, n, len(got), s.Count(), len(all), len(list))
				}
				for i := range got {
					if s.less(got[i], all[i]) != 0 {
						t.Fatalf("round %d, mode %v, n %d: instance %d is %+v, want %+v", round, m, n, i, got[i], all[i])
					}
				}
			}
		}
	}
}
