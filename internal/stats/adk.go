// Package stats holds the statistics culprit's analyses rely on, each checked
// against published values: the k-sample Anderson–Darling test (Scholz &
// Stephens 1987, as vProf uses it) and the Hellinger distance between
// empirical distributions. (The two-sigma error of sample shares is
// profile.Err, next to the reports that print it.) The
// k-sample Anderson–Darling test is written here because neither gonum nor
// any other maintained Go library implements it.
package stats

import (
	"errors"
	"math"
	"sort"
)

// ADResult is the outcome of a k-sample Anderson–Darling test.
type ADResult struct {
	A2       float64 // A²akN (midrank) or A²kN
	T        float64 // standardized statistic (A² − (k−1)) / σN
	Critical float64 // critical value of T at the requested α
	Reject   bool    // T > Critical: the samples do not come from one distribution
}

// ErrTooFewSamples is returned when the test cannot be computed.
var ErrTooFewSamples = errors.New("anderson-darling: need at least two non-empty samples and four values in all")

// AndersonDarling runs the k-sample Anderson–Darling test of Scholz and
// Stephens (1987). midrank selects the version for samples with ties
// (A²akN), which is what vProf uses (through scipy.stats.anderson_ksamp).
// alpha is the significance level (e.g. 0.05).
func AndersonDarling(samples [][]float64, midrank bool, alpha float64) (ADResult, error) {
	var k, N int
	var pooled []float64
	for _, s := range samples {
		if len(s) > 0 {
			k++
			N += len(s)
			pooled = append(pooled, s...)
		}
	}
	if k < 2 || N < 4 {
		return ADResult{}, ErrTooFewSamples
	}
	sort.Float64s(pooled)
	// Distinct values z_1 < … < z_L and their tie counts l_j.
	var z []float64
	var l []float64
	for i, v := range pooled {
		if i == 0 || v != pooled[i-1] {
			z = append(z, v)
			l = append(l, 0)
		}
		l[len(l)-1]++
	}
	if len(z) < 2 {
		// All values equal: no evidence of difference.
		return ADResult{A2: 0, T: math.Inf(-1), Critical: critical(k-1, alpha)}, nil
	}
	n := float64(N)
	var a2 float64
	for _, s := range samples {
		if len(s) == 0 {
			continue
		}
		sorted := append([]float64(nil), s...)
		sort.Float64s(sorted)
		ni := float64(len(s))
		var inner float64
		B := 0.0 // B_j: pooled values ≤ z_j
		pos := 0 // index into sorted
		for j := range z {
			// f_ij: values of sample i equal to z_j; M_ij: values ≤ z_j.
			f := 0.0
			for pos < len(sorted) && sorted[pos] == z[j] {
				f++
				pos++
			}
			M := float64(pos)
			B += l[j]
			if midrank {
				Ba := B - l[j]/2
				Ma := M - f/2
				den := Ba*(n-Ba) - n*l[j]/4
				if den > 0 {
					inner += l[j] / n * (n*Ma - ni*Ba) * (n*Ma - ni*Ba) / den
				}
			} else if j < len(z)-1 { // the last term has B = N and is left out
				den := B * (n - B)
				inner += l[j] * (n*M - ni*B) * (n*M - ni*B) / den
			}
		}
		a2 += inner / ni
	}
	if midrank {
		a2 *= (n - 1) / n
	} else {
		a2 /= n
	}
	sigma := math.Sqrt(varianceAkN(samples, k, N))
	t := (a2 - float64(k-1)) / sigma
	c := critical(k-1, alpha)
	return ADResult{A2: a2, T: t, Critical: c, Reject: t > c}, nil
}

// varianceAkN is Scholz & Stephens' σ²N of A²kN under H0.
func varianceAkN(samples [][]float64, k, N int) float64 {
	n := float64(N)
	var H float64
	for _, s := range samples {
		if len(s) > 0 {
			H += 1 / float64(len(s))
		}
	}
	var h float64
	for i := 1; i < N; i++ {
		h += 1 / float64(i)
	}
	var g float64
	for i := 1; i <= N-2; i++ {
		for j := i + 1; j <= N-1; j++ {
			g += 1 / (float64(N-i) * float64(j))
		}
	}
	K := float64(k)
	a := (4*g-6)*(K-1) + (10-6*g)*H
	b := (2*g-4)*K*K + 8*h*K + (2*g-14*h-4)*H - 8*h + 4*g - 6
	c := (6*h+2*g-2)*K*K + (4*h-4*g+6)*K + (2*h-6)*H + 4*h
	d := (2*h+6)*K*K - 4*h*K
	return (a*n*n*n + b*n*n + c*n + d) / ((n - 1) * (n - 2) * (n - 3))
}

// critical returns the critical value of the standardized statistic for m =
// k−1 degrees of freedom at level alpha, interpolating Scholz & Stephens'
// table (their equation t_m(α) = b0 + b1/√m + b2/m) in log(α).
func critical(m int, alpha float64) float64 {
	// Coefficients b0, b1, b2 for α = 0.25, 0.10, 0.05, 0.025, 0.01 (Table 2).
	alphas := []float64{0.25, 0.10, 0.05, 0.025, 0.01}
	b := [][3]float64{
		{0.675, -0.245, -0.105},
		{1.281, 0.250, -0.305},
		{1.645, 0.678, -0.362},
		{1.960, 1.149, -0.391},
		{2.326, 1.822, -0.396},
	}
	tm := make([]float64, len(b))
	M := float64(m)
	for i, c := range b {
		tm[i] = c[0] + c[1]/math.Sqrt(M) + c[2]/M
	}
	la := math.Log(alpha)
	switch {
	case alpha >= alphas[0]:
		return tm[0]
	case alpha <= alphas[len(alphas)-1]:
		return tm[len(tm)-1]
	}
	for i := 0; i+1 < len(alphas); i++ {
		if alpha <= alphas[i] && alpha >= alphas[i+1] {
			x0, x1 := math.Log(alphas[i]), math.Log(alphas[i+1])
			return tm[i] + (tm[i+1]-tm[i])*(la-x0)/(x1-x0)
		}
	}
	return tm[2]
}
