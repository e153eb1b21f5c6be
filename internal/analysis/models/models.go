// Package models fits performance models, as Perun's postprocessors do: how
// a function's time y grows with an input parameter x.
//
// Parametric models have the form y = b0 + b1·f(x) and are fitted by least
// squares (gonum's stat.LinearRegression on the transformed variable):
//
//	constant     y = b0
//	logarithmic  y = b0 + b1·ln x
//	linear       y = b0 + b1·x
//	quadratic    y = b0 + b1·x²
//	power        y = b1·x^b0       (least squares of ln y on ln x)
//	exponential  y = b1·e^(b0·x)   (least squares of ln y on x)
//
// R² is 1 − SS_res/SS_tot in the original y for every model (for power and
// exponential too, so that models compare on one scale; numpy: 1 −
// sum((y−ŷ)²)/sum((y−ȳ)²)); the constant model explains no variance and has
// R² 0 (it is the best model when no other is reliable). A fit needs at least 3 points with distinct x; it is reliable when
// R² ≥ 0.5. The best model is the one with the highest R², except that a
// reliable model whose unexplained variance 1 − R² is at most twice the
// best's plus BestTolerance counts as equally good, and then the one lowest
// in the order constant < logarithmic < linear < quadratic < power < exponential wins:
// with few, noisy points power (any exponent) fits linear data a hair better
// than the line does, and the simpler model is the truthful one. With many
// points chance moves the ratio of two fits' unexplained variances far less
// than twofold: the factor is then the 95% quantile of F(n−2, n−2) for n
// points (1.88 at 30, 1.40 at 100, 1.11 at 1000), so that a logarithm
// leaving 27% of 1000 calls' variance unexplained does not pass for a line
// leaving 23%.
//
// Non-parametric models (regressogram, moving averages, Nadaraya–Watson
// kernel regression) give fitted values at the data points and their R².
//
// The package reads numbers only: the caller turns stored runs into points.
package models

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Kind is a parametric model kind; its order is its growth order.
type Kind int

// The kinds, in growth order.
const (
	Constant Kind = iota
	Logarithmic
	Linear
	Quadratic
	Power
	Exponential
)

var kindNames = []string{"constant", "logarithmic", "linear", "quadratic", "power", "exponential"}

func (k Kind) String() string { return kindNames[k] }

// Kinds lists the parametric kinds in growth order.
var Kinds = []Kind{Constant, Logarithmic, Linear, Quadratic, Power, Exponential}

// ReliableR2 is the R² from which a model is reliable (Perun's threshold).
const ReliableR2 = 0.5

// MinPoints is the fewest distinct x values a fit needs.
const MinPoints = 3

// BestTolerance is the unexplained variance (1 − R²) a model may have above
// twice the best model's and still count as equally good.
const BestTolerance = 0.002

// Fit is a fitted parametric model.
type Fit struct {
	Kind   Kind
	B0, B1 float64
	R2     float64
	// XMin and XMax are the range of the data it was fitted on.
	XMin, XMax float64
	// Points is how many points it was fitted on (with weights, those of
	// positive weight); 0 when unknown.
	Points int
}

// Reliable says whether the fit explains enough of the variance.
func (f Fit) Reliable() bool { return f.R2 >= ReliableR2 }

// Eval is the model's y at x.
func (f Fit) Eval(x float64) float64 {
	switch f.Kind {
	case Constant:
		return f.B0
	case Logarithmic:
		return f.B0 + f.B1*math.Log(x)
	case Linear:
		return f.B0 + f.B1*x
	case Quadratic:
		return f.B0 + f.B1*x*x
	case Power:
		return f.B1 * math.Pow(x, f.B0)
	case Exponential:
		return f.B1 * math.Exp(f.B0*x)
	}
	return math.NaN()
}

// Integral is ∫ model dx over [a, b] (Perun's integral comparison).
func (f Fit) Integral(a, b float64) float64 {
	F := func(x float64) float64 {
		switch f.Kind {
		case Constant:
			return f.B0 * x
		case Logarithmic:
			return f.B0*x + f.B1*(x*math.Log(x)-x)
		case Linear:
			return f.B0*x + f.B1*x*x/2
		case Quadratic:
			return f.B0*x + f.B1*x*x*x/3
		case Power:
			if math.Abs(f.B0+1) < 1e-12 {
				return f.B1 * math.Log(x)
			}
			return f.B1 * math.Pow(x, f.B0+1) / (f.B0 + 1)
		case Exponential:
			if f.B0 == 0 {
				return f.B1 * x
			}
			return f.B1 / f.B0 * math.Exp(f.B0*x)
		}
		return math.NaN()
	}
	return F(b) - F(a)
}

// Formula writes the model with its coefficients, e.g.
// "y = 1.2e-03 + 3.1e-09·x²".
func (f Fit) Formula(x string) string {
	g := func(v float64) string { return fmt.Sprintf("%.3g", v) }
	switch f.Kind {
	case Constant:
		return "y = " + g(f.B0)
	case Logarithmic:
		return fmt.Sprintf("y = %s %s·ln %s", g(f.B0), signed(f.B1), x)
	case Linear:
		return fmt.Sprintf("y = %s %s·%s", g(f.B0), signed(f.B1), x)
	case Quadratic:
		return fmt.Sprintf("y = %s %s·%s²", g(f.B0), signed(f.B1), x)
	case Power:
		return fmt.Sprintf("y = %s·%s^%s", g(f.B1), x, g(f.B0))
	case Exponential:
		return fmt.Sprintf("y = %s·e^(%s·%s)", g(f.B1), g(f.B0), x)
	}
	return ""
}

func signed(v float64) string {
	if v < 0 {
		return fmt.Sprintf("− %.3g", -v)
	}
	return fmt.Sprintf("+ %.3g", v)
}

// ErrTooFewPoints is returned for data with fewer than MinPoints distinct x.
var ErrTooFewPoints = errors.New("too few points: a model needs at least 3 distinct x values")

func distinct(x []float64) int {
	s := append([]float64(nil), x...)
	sort.Float64s(s)
	n := 0
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			n++
		}
	}
	return n
}

// R2 is 1 − SS_res/SS_tot of fitted values yhat for y (0 when y is
// constant and fitted exactly, as the constant model).
func R2(y, yhat []float64) float64 { return WeightedR2(y, yhat, nil) }

// WeightedR2 is 1 − Σw(y−ŷ)²/Σw(y−ȳ_w)², ȳ_w the weighted mean (nil w:
// all 1, which is R2; statsmodels' WLS rsquared).
func WeightedR2(y, yhat, w []float64) float64 {
	mean := stat.Mean(y, w)
	var res, tot float64
	for i := range y {
		wi := 1.0
		if w != nil {
			wi = w[i]
		}
		res += wi * (y[i] - yhat[i]) * (y[i] - yhat[i])
		tot += wi * (y[i] - mean) * (y[i] - mean)
	}
	if tot == 0 {
		return 0
	}
	return 1 - res/tot
}

// FitKind fits one kind to the points. Kinds that need positive x (log,
// power) or positive y (power, exponential) fail on other data.
func FitKind(k Kind, x, y []float64) (Fit, error) {
	return FitKindWeighted(k, x, y, nil)
}

// FitKindWeighted fits one kind by weighted least squares (nil w: all 1);
// R² is then the weighted R² (see WeightedR2).
func FitKindWeighted(k Kind, x, y, w []float64) (Fit, error) {
	if len(x) != len(y) || (w != nil && len(w) != len(x)) {
		return Fit{}, errors.New("x, y and weights differ in length")
	}
	if distinct(x) < MinPoints {
		return Fit{}, ErrTooFewPoints
	}
	f := Fit{Kind: k, XMin: x[0], XMax: x[0]}
	for i, v := range x {
		f.XMin, f.XMax = math.Min(f.XMin, v), math.Max(f.XMax, v)
		if w == nil || w[i] > 0 {
			f.Points++
		}
	}
	tx := make([]float64, len(x))
	ty := append([]float64(nil), y...)
	switch k {
	case Constant:
		f.B0 = stat.Mean(y, w)
		f.R2 = 0
		return f, nil
	case Logarithmic, Power:
		for i, v := range x {
			if v <= 0 {
				return Fit{}, fmt.Errorf("%s model needs positive x", k)
			}
			tx[i] = math.Log(v)
		}
	case Linear:
		copy(tx, x)
	case Quadratic:
		for i, v := range x {
			tx[i] = v * v
		}
	case Exponential:
		copy(tx, x)
	}
	if k == Power || k == Exponential {
		for i, v := range y {
			if v <= 0 {
				return Fit{}, fmt.Errorf("%s model needs positive y", k)
			}
			ty[i] = math.Log(v)
		}
	}
	a, b := stat.LinearRegression(tx, ty, w, false)
	switch k {
	case Power, Exponential:
		f.B0, f.B1 = b, math.Exp(a)
	default:
		f.B0, f.B1 = a, b
	}
	yhat := make([]float64, len(x))
	for i, v := range x {
		yhat[i] = f.Eval(v)
	}
	f.R2 = WeightedR2(y, yhat, w)
	return f, nil
}

// FitAll fits every kind that applies to the data, in growth order.
func FitAll(x, y []float64) ([]Fit, error) {
	return FitAllWeighted(x, y, nil)
}

// FitAllWeighted fits every kind that applies by weighted least squares.
func FitAllWeighted(x, y, w []float64) ([]Fit, error) {
	if distinct(x) < MinPoints {
		return nil, ErrTooFewPoints
	}
	var out []Fit
	for _, k := range Kinds {
		if f, err := FitKindWeighted(k, x, y, w); err == nil && !math.IsNaN(f.R2) {
			out = append(out, f)
		}
	}
	return out, nil
}

// Best picks the best of fits (see the package doc). When no model is
// reliable the data show no growth a model explains, and the constant model
// is the best.
func Best(fits []Fit) Fit {
	top := math.Inf(-1)
	for _, f := range fits {
		top = math.Max(top, f.R2)
	}
	if top < ReliableR2 {
		return fits[0]
	}
	factor := 2.0
	if n := fits[0].Points; n > 2 {
		factor = math.Min(factor, distuv.F{D1: float64(n - 2), D2: float64(n - 2)}.Quantile(0.95))
	}
	for _, f := range fits { // in growth order
		// An unreliable model is never as good: with a best R² of 0.6,
		// twice its unexplained variance would let a logarithm that
		// explains 0.2 of it beat the line.
		if f.Kind != Constant && f.Reliable() && 1-f.R2 <= factor*(1-top)+BestTolerance {
			return f
		}
	}
	return fits[0]
}

// Function is everything fitted to one function's points.
type Function struct {
	Name, Object string
	Series       string // the runs' workload, collector and other parameters
	X, Y         []float64
	Fits         []Fit // every parametric kind that applies, in growth order
	Best         Fit
	Smooth       []Smooth // regressogram (Doane), SMA and SMM (window 3), EMA (λ 0.5), kernels (Silverman)
	// Outliers is how many points a robust fit gave no weight.
	Outliers int
}

// MaxKernelPoints is the most points Analyze runs kernel regression on (it
// costs n² kernel evaluations).
const MaxKernelPoints = 5000

// Analyze fits the parametric models and the non-parametric ones with their
// default settings.
func Analyze(name, object, series string, x, y []float64) (Function, error) {
	return analyze(name, object, series, x, y, nil)
}

// AnalyzeRobust is Analyze with the parametric models fitted robustly
// (RobustWeights); the non-parametric ones are unchanged.
func AnalyzeRobust(name, object, series string, x, y []float64) (Function, error) {
	w := RobustWeights(x, y)
	f, err := analyze(name, object, series, x, y, w)
	if w != nil {
		for _, v := range w {
			if v == 0 {
				f.Outliers++
			}
		}
	}
	return f, err
}

func analyze(name, object, series string, x, y, w []float64) (Function, error) {
	fits, err := FitAllWeighted(x, y, w)
	if err != nil {
		return Function{}, err
	}
	f := Function{Name: name, Object: object, Series: series, Fits: fits, Best: Best(fits)}
	f.X, f.Y = sorted(x, y)
	add := func(s Smooth, err error) {
		if err == nil {
			f.Smooth = append(f.Smooth, s)
		}
	}
	add(Regressogram(x, y, 0))
	add(MovingAverage(x, y, "sma", 3))
	add(MovingAverage(x, y, "smm", 3))
	add(EMA(x, y, 0.5))
	if len(x) <= MaxKernelPoints {
		add(Kernel(x, y, "box", 0))
		add(Kernel(x, y, "gaussian", 0))
	}
	return f, nil
}
