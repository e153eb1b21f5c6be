package stats

import (
	"math"
	"slices"
)

// Hellinger is the Hellinger distance between the empirical distributions of
// two samples, over the exact distinct values of the pooled samples (as
// vProf's implementation bins them): H = sqrt(Σ (√p_i − √q_i)²) / √2, in
// [0, 1]. It is 0 for identical distributions and 1 for disjoint supports;
// it is 1 when exactly one sample is empty and 0 when both are. A NaN
// equals no value, itself included. The sum runs over the values in
// ascending order, so that the same samples give the same distance to the
// last bit, whatever their order.
func Hellinger(p, q []float64) float64 {
	switch {
	case len(p) == 0 && len(q) == 0:
		return 0
	case len(p) == 0 || len(q) == 0:
		return 1
	}
	sp, sq := slices.Clone(p), slices.Clone(q)
	slices.Sort(sp) // NaNs first
	slices.Sort(sq)
	np, nq := float64(len(p)), float64(len(q))
	var sum float64
	i, j := 0, 0
	for ; i < len(sp) && math.IsNaN(sp[i]); i++ {
		sum += 1 / np
	}
	for ; j < len(sq) && math.IsNaN(sq[j]); j++ {
		sum += 1 / nq
	}
	for i < len(sp) || j < len(sq) {
		var cp, cq float64
		switch {
		case j == len(sq) || i < len(sp) && sp[i] < sq[j]:
			v := sp[i]
			for ; i < len(sp) && sp[i] == v; i++ {
				cp++
			}
		case i == len(sp) || sq[j] < sp[i]:
			v := sq[j]
			for ; j < len(sq) && sq[j] == v; j++ {
				cq++
			}
		default: // equal
			v := sp[i]
			for ; i < len(sp) && sp[i] == v; i++ {
				cp++
			}
			for ; j < len(sq) && sq[j] == v; j++ {
				cq++
			}
		}
		d := math.Sqrt(cp/np) - math.Sqrt(cq/nq)
		sum += d * d
	}
	return math.Min(1, math.Sqrt(sum)/math.Sqrt2)
}
