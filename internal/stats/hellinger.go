package stats

import "math"

// Hellinger is the Hellinger distance between the empirical distributions of
// two samples, over the exact distinct values of the pooled samples (as
// vProf's implementation bins them): H = sqrt(Σ (√p_i − √q_i)²) / √2, in
// [0, 1]. It is 0 for identical distributions and 1 for disjoint supports;
// it is 1 when exactly one sample is empty and 0 when both are.
func Hellinger(p, q []float64) float64 {
	switch {
	case len(p) == 0 && len(q) == 0:
		return 0
	case len(p) == 0 || len(q) == 0:
		return 1
	}
	cp := map[float64]float64{}
	cq := map[float64]float64{}
	for _, v := range p {
		cp[v]++
	}
	for _, v := range q {
		cq[v]++
	}
	np, nq := float64(len(p)), float64(len(q))
	var sum float64
	for v, c := range cp {
		d := math.Sqrt(c/np) - math.Sqrt(cq[v]/nq)
		sum += d * d
	}
	for v, c := range cq {
		if _, ok := cp[v]; !ok {
			sum += c / nq
		}
	}
	return math.Min(1, math.Sqrt(sum)/math.Sqrt2)
}
