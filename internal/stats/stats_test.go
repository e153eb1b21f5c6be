package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Scholz & Stephens (1987), Table 3: four sets of eight measurements of the
// smoothness of paper from four laboratories.
var paper = [][]float64{
	{38.7, 41.5, 43.8, 44.5, 45.5, 46.0, 47.7, 58.0},
	{39.2, 39.3, 39.7, 41.4, 41.8, 42.9, 43.3, 45.8},
	{34.0, 35.0, 39.0, 40.0, 43.0, 43.0, 44.0, 45.0},
	{34.0, 34.8, 34.8, 35.4, 37.2, 37.8, 41.2, 42.8},
}

func TestAndersonDarlingPublishedValues(t *testing.T) {
	for _, c := range []struct {
		midrank bool
		a2, t   float64
	}{
		{true, 8.3926, 4.4797},
		{false, 8.3559, 4.4492},
	} {
		r, err := AndersonDarling(paper, c.midrank, 0.05)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(r.A2-c.a2) > 5e-4 || math.Abs(r.T-c.t) > 5e-4 {
			t.Errorf("midrank=%v: A² = %.4f, T = %.4f; published %.4f, %.4f", c.midrank, r.A2, r.T, c.a2, c.t)
		}
		if !r.Reject {
			t.Errorf("midrank=%v: T %.4f vs critical %.4f: the laboratories differ (published p ≈ 0.002)", c.midrank, r.T, r.Critical)
		}
	}
}

func TestAndersonDarlingCritical(t *testing.T) {
	// k = 2, α = 0.05: 1.645 + 0.678 − 0.362 = 1.961.
	if c := critical(1, 0.05); math.Abs(c-1.961) > 1e-9 {
		t.Errorf("critical(1, 0.05) = %v, want 1.961", c)
	}
	if c := critical(3, 0.05); math.Abs(c-(1.645+0.678/math.Sqrt(3)-0.362/3)) > 1e-9 {
		t.Errorf("critical(3, 0.05) = %v", c)
	}
}

func TestAndersonDarlingSameAndDifferent(t *testing.T) {
	same := make([]float64, 200)
	other := make([]float64, 200)
	shifted := make([]float64, 200)
	for i := range same {
		same[i] = float64(i % 50)
		other[i] = float64((i * 7) % 50)
		shifted[i] = float64(i%50) + 40
	}
	if r, _ := AndersonDarling([][]float64{same, other}, true, 0.05); r.Reject {
		t.Errorf("same distribution rejected: T = %.3f", r.T)
	}
	if r, _ := AndersonDarling([][]float64{same, shifted}, true, 0.05); !r.Reject {
		t.Errorf("shifted distribution not rejected: T = %.3f", r.T)
	}
	if r, _ := AndersonDarling([][]float64{{5, 5, 5}, {5, 5}}, true, 0.05); r.Reject {
		t.Errorf("constant samples rejected")
	}
	if _, err := AndersonDarling([][]float64{{1, 2, 3}, {}}, true, 0.05); err != ErrTooFewSamples {
		t.Errorf("one empty sample: %v", err)
	}
}

func TestHellinger(t *testing.T) {
	a := []float64{1, 2, 2, 3}
	if h := Hellinger(a, []float64{3, 2, 1, 2}); h != 0 {
		t.Errorf("identical distributions: %v", h)
	}
	if h := Hellinger(a, []float64{7, 8}); math.Abs(h-1) > 1e-12 {
		t.Errorf("disjoint distributions: %v", h)
	}
	// p = (1/2, 1/2), q = (1, 0): H² = ((√.5−1)² + .5)/2.
	want := math.Sqrt((math.Pow(math.Sqrt(0.5)-1, 2) + 0.5) / 2)
	if h := Hellinger([]float64{0, 1}, []float64{0, 0}); math.Abs(h-want) > 1e-12 {
		t.Errorf("Hellinger = %v, want %v", h, want)
	}
	if Hellinger(nil, nil) != 0 || Hellinger(a, nil) != 1 {
		t.Error("empty samples")
	}
}

// TestHellingerOrder: the distance does not depend on the samples' order,
// to the last bit, and a NaN matches nothing.
func TestHellingerOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	p, q := make([]float64, 5000), make([]float64, 3000)
	for i := range p {
		p[i] = float64(r.IntN(400)) / 7
	}
	for i := range q {
		q[i] = float64(r.IntN(500)) / 7
	}
	want := Hellinger(p, q)
	for k := 0; k < 5; k++ {
		r.Shuffle(len(p), func(i, j int) { p[i], p[j] = p[j], p[i] })
		r.Shuffle(len(q), func(i, j int) { q[i], q[j] = q[j], q[i] })
		if h := Hellinger(p, q); h != want {
			t.Fatalf("shuffled: %v, first %v", h, want)
		}
	}
	if h := Hellinger([]float64{math.NaN()}, []float64{math.NaN()}); h != 1 {
		t.Errorf("two NaNs: %v, want 1 (disjoint)", h)
	}
	nan := math.NaN()
	// p = (NaN, 1), q = (1, 1): H² = (1/2 + (√.5 − 1)²)/2.
	want = math.Sqrt((0.5 + math.Pow(math.Sqrt(0.5)-1, 2)) / 2)
	if h := Hellinger([]float64{nan, 1}, []float64{1, 1}); math.Abs(h-want) > 1e-12 {
		t.Errorf("NaN and 1 against 1, 1: %v, want %v", h, want)
	}
}
