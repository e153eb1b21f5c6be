package models

import (
	"errors"
	"math"
	"sort"

	"gonum.org/v1/gonum/stat"
)

// Smooth is a non-parametric model: fitted values at the data points
// (sorted by x) and their R².
type Smooth struct {
	Method string // "regressogram", "sma", "smm", "ema", "kernel-box", "kernel-gaussian"
	X, Y   []float64
	Fitted []float64
	R2     float64
	// Bins are the regressogram's bin edges (len = bins+1); Window the
	// moving average's window; Bandwidth the kernel regression's h; Decay
	// the EMA's λ.
	Bins      []float64
	Window    int
	Bandwidth float64
	Decay     float64
}

// sorted returns the points ordered by x.
func sorted(x, y []float64) ([]float64, []float64) {
	idx := make([]int, len(x))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return x[idx[a]] < x[idx[b]] })
	sx, sy := make([]float64, len(x)), make([]float64, len(x))
	for i, j := range idx {
		sx[i], sy[i] = x[j], y[j]
	}
	return sx, sy
}

func finish(s Smooth) Smooth {
	s.R2 = R2(s.Y, s.Fitted)
	return s
}

// DoaneBins is the number of bins by Doane's rule:
// 1 + log2(n) + log2(1 + |g1|/σg1), g1 the sample skewness and
// σg1 = sqrt(6(n−2)/((n+1)(n+3))) (numpy's 'doane', rounded up).
func DoaneBins(y []float64) int {
	n := float64(len(y))
	if n <= 2 {
		return 1
	}
	mean := stat.Mean(y, nil)
	var m2, m3 float64
	for _, v := range y {
		d := v - mean
		m2 += d * d
		m3 += d * d * d
	}
	m2 /= n
	m3 /= n
	g1 := 0.0
	if m2 > 0 {
		g1 = m3 / math.Pow(m2, 1.5)
	}
	sg1 := math.Sqrt(6 * (n - 2) / ((n + 1) * (n + 3)))
	return int(math.Ceil(1 + math.Log2(n) + math.Log2(1+math.Abs(g1)/sg1)))
}

// Regressogram splits the x range into equal-width bins (bins ≤ 0: Doane's
// rule on x, as Perun's default) and fits each point with the mean y of its
// bin.
func Regressogram(x, y []float64, bins int) (Smooth, error) {
	if len(x) == 0 || len(x) != len(y) {
		return Smooth{}, errors.New("regressogram needs points")
	}
	sx, sy := sorted(x, y)
	if bins <= 0 {
		bins = DoaneBins(sx)
	}
	lo, hi := sx[0], sx[len(sx)-1]
	w := (hi - lo) / float64(bins)
	bin := func(v float64) int {
		if w == 0 {
			return 0
		}
		b := int((v - lo) / w)
		if b >= bins {
			b = bins - 1
		}
		return b
	}
	sum, cnt := make([]float64, bins), make([]float64, bins)
	for i, v := range sx {
		b := bin(v)
		sum[b] += sy[i]
		cnt[b]++
	}
	s := Smooth{Method: "regressogram", X: sx, Y: sy, Fitted: make([]float64, len(sx))}
	for i, v := range sx {
		b := bin(v)
		s.Fitted[i] = sum[b] / cnt[b]
	}
	for b := 0; b <= bins; b++ {
		s.Bins = append(s.Bins, lo+float64(b)*w)
	}
	return finish(s), nil
}

// MovingAverage smooths y (ordered by x) with a centred window of width
// window (odd; shrunk at the ends): "sma" the mean, "smm" the median.
func MovingAverage(x, y []float64, method string, window int) (Smooth, error) {
	if len(x) == 0 || len(x) != len(y) {
		return Smooth{}, errors.New("moving average needs points")
	}
	if window < 1 {
		return Smooth{}, errors.New("moving average window must be at least 1")
	}
	if method != "sma" && method != "smm" {
		return Smooth{}, errors.New("moving average method is sma or smm")
	}
	sx, sy := sorted(x, y)
	k := window / 2
	s := Smooth{Method: method, X: sx, Y: sy, Fitted: make([]float64, len(sx)), Window: window}
	for i := range sx {
		a, b := max(0, i-k), min(len(sy), i+k+1)
		win := append([]float64(nil), sy[a:b]...)
		if method == "sma" {
			s.Fitted[i] = stat.Mean(win, nil)
		} else {
			sort.Float64s(win)
			m := len(win) / 2
			if len(win)%2 == 1 {
				s.Fitted[i] = win[m]
			} else {
				s.Fitted[i] = (win[m-1] + win[m]) / 2
			}
		}
	}
	return finish(s), nil
}

// EMA smooths y (ordered by x) exponentially with decay 0 < λ < 1:
// (P_t + λP_{t−1} + … + λ^t P_0) / (1 + λ + … + λ^t).
func EMA(x, y []float64, decay float64) (Smooth, error) {
	if len(x) == 0 || len(x) != len(y) {
		return Smooth{}, errors.New("EMA needs points")
	}
	if decay <= 0 || decay >= 1 {
		return Smooth{}, errors.New("EMA decay must lie strictly between 0 and 1")
	}
	sx, sy := sorted(x, y)
	s := Smooth{Method: "ema", X: sx, Y: sy, Fitted: make([]float64, len(sx)), Decay: decay}
	var num, den float64
	for i, v := range sy {
		num = v + decay*num
		den = 1 + decay*den
		s.Fitted[i] = num / den
	}
	return finish(s), nil
}

// SilvermanBandwidth is the rule-of-thumb bandwidth 0.9·min(σ, IQR/1.34)·n^(−1/5)
// of x (Silverman 1986, eq. 3.31); it falls back to σ alone when the IQR is
// 0, and to 1 for constant x.
func SilvermanBandwidth(x []float64) float64 {
	n := float64(len(x))
	if n < 2 {
		return 1
	}
	sd := stat.StdDev(x, nil)
	s := append([]float64(nil), x...)
	sort.Float64s(s)
	iqr := stat.Quantile(0.75, stat.LinInterp, s, nil) - stat.Quantile(0.25, stat.LinInterp, s, nil)
	a := sd
	if iqr > 0 && iqr/1.34 < a {
		a = iqr / 1.34
	}
	if a == 0 {
		return 1
	}
	return 0.9 * a * math.Pow(n, -0.2)
}

// Kernel is Nadaraya–Watson kernel regression: m̂(x) = Σ y_i K((x−x_i)/h) /
// Σ K((x−x_i)/h), kernel "box" (½ for |u| ≤ 1) or "gaussian", bandwidth h
// (≤ 0: SilvermanBandwidth of x).
func Kernel(x, y []float64, kernel string, h float64) (Smooth, error) {
	if len(x) == 0 || len(x) != len(y) {
		return Smooth{}, errors.New("kernel regression needs points")
	}
	var K func(u float64) float64
	switch kernel {
	case "box":
		K = func(u float64) float64 {
			if math.Abs(u) <= 1 {
				return 0.5
			}
			return 0
		}
	case "gaussian":
		K = func(u float64) float64 { return math.Exp(-u*u/2) / math.Sqrt(2*math.Pi) }
	default:
		return Smooth{}, errors.New("kernel is box or gaussian")
	}
	sx, sy := sorted(x, y)
	if h <= 0 {
		h = SilvermanBandwidth(sx)
	}
	s := Smooth{Method: "kernel-" + kernel, X: sx, Y: sy, Fitted: make([]float64, len(sx)), Bandwidth: h}
	for i, xi := range sx {
		var num, den float64
		for j, xj := range sx {
			k := K((xi - xj) / h)
			num += k * sy[j]
			den += k
		}
		s.Fitted[i] = num / den // den > 0: the point itself is in its window
	}
	return finish(s), nil
}
