package models

import (
	"math"
	"sort"

	"gonum.org/v1/gonum/stat"
)

// Robust fitting. Per-call durations carry outliers no model explains: a
// call preempted for a whole time slice takes milliseconds among calls of
// microseconds, and one such point decides a least-squares fit and its R².
// AnalyzeRobust therefore fits by weighted least squares with Tukey's
// bisquare weights, the usual robust M-estimator weights (as in R's
// MASS::rlm(psi.bisquare) and statsmodels' RLM(TukeyBiweight)):
//
//	w = (1 − u²)² for |u| < 1, else 0;  u = r / (c·s),  c = 4.685
//
// with s = 1.4826·MAD(r), the normal-consistent scale of the residuals r.
// The residuals are taken from a running median of y over x (window
// RobustWindow points), not from each model, so that every model is
// weighted alike and their weighted R² still compare: with one model's own
// residuals, a line fitted to quadratic data would give the points that
// show the curvature no weight and look as good as the parabola.
// c = 4.685 keeps 95% of least squares' efficiency on normal errors.

// RobustC is the bisquare's tuning constant.
const RobustC = 4.685

// MinRobustPoints is the fewest points robust weights are computed for:
// with fewer, a running median and a MAD say little, and the points are
// fitted by plain least squares.
const MinRobustPoints = 10

// RobustWindow is the running median's window: an odd number of points
// near n/10, at least 5 and at most 101.
func RobustWindow(n int) int {
	w := n / 10
	w = max(5, min(101, w))
	if w%2 == 0 {
		w++
	}
	return w
}

// RobustWeights gives each point its bisquare weight (see above); nil when
// there are fewer than MinRobustPoints points or the residuals have no
// spread (then every point counts alike).
func RobustWeights(x, y []float64) []float64 {
	n := len(x)
	if n < MinRobustPoints || len(y) != n {
		return nil
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return x[idx[a]] < x[idx[b]] })
	half := RobustWindow(n) / 2
	res := make([]float64, n)
	win := make([]float64, 0, 2*half+1)
	for k, i := range idx {
		lo, hi := k-half, k+half
		if lo < 0 {
			lo, hi = 0, min(n-1, 2*half)
		}
		if hi > n-1 {
			lo, hi = max(0, n-1-2*half), n-1
		}
		win = win[:0]
		for _, j := range idx[lo : hi+1] {
			win = append(win, y[j])
		}
		res[i] = y[i] - median(win)
	}
	abs := make([]float64, n)
	for i, r := range res {
		abs[i] = math.Abs(r)
	}
	s := 1.4826 * median(abs)
	if s == 0 {
		// More than half the points sit on the running median (durations
		// quantised to a clock tick): the mean absolute deviation scales
		// the rest.
		s = 1.2533 * stat.Mean(abs, nil)
	}
	if s == 0 || math.IsNaN(s) {
		return nil
	}
	w := make([]float64, n)
	for i, r := range res {
		if u := r / (RobustC * s); math.Abs(u) < 1 {
			w[i] = (1 - u*u) * (1 - u*u)
		}
	}
	return w
}

// median of v (reorders v).
func median(v []float64) float64 {
	sort.Float64s(v)
	m := len(v) / 2
	if len(v)%2 == 1 {
		return v[m]
	}
	return (v[m-1] + v[m]) / 2
}
