package render

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/culprit-dev/culprit/internal/analysis/models"
)

// A degenerate fit (all x equal, no spread in y) has coefficients and an
// R² that are not finite, and a smoother can leave a point without a
// value: JSON has no NaN or infinity, so those are null (R², 0) and the
// rest of the function is written.
func TestModelsJSONNotFinite(t *testing.T) {
	bad := models.Fit{Kind: models.Linear, B0: math.NaN(), B1: math.Inf(1), R2: math.NaN()}
	fs := []models.Function{{Name: "scan", X: []float64{4, 4}, Y: []float64{1e-3, 2e-3}, Best: bad,
		Fits:   []models.Fit{bad, {Kind: models.Constant, B0: 1.5e-3, R2: 0}},
		Smooth: []models.Smooth{{Method: "kernel-gaussian", Fitted: []float64{1.5e-3, math.NaN()}, R2: math.Inf(-1)}}}}
	var b bytes.Buffer
	if err := ModelsJSON(&b, fs, "n", "s"); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Functions []struct {
			Function string `json:"function"`
			Y        []float64
			Best     struct {
				B0, B1 *float64
				R2     float64
			}
			Fits []struct {
				B0 *float64
			}
			Smooth []struct {
				Fitted []*float64
				R2     float64
			} `json:"nonparametric"`
		}
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if len(got.Functions) != 1 {
		t.Fatalf("%d functions\n%s", len(got.Functions), b.String())
	}
	f := got.Functions[0]
	if f.Function != "scan" || len(f.Y) != 2 || f.Best.B0 != nil || f.Best.B1 != nil || f.Best.R2 != 0 {
		t.Errorf("function %+v\n%s", f, b.String())
	}
	if len(f.Fits) != 2 || f.Fits[0].B0 != nil || f.Fits[1].B0 == nil || *f.Fits[1].B0 != 1.5e-3 {
		t.Errorf("fits %+v", f.Fits)
	}
	if len(f.Smooth) != 1 || len(f.Smooth[0].Fitted) != 2 || f.Smooth[0].Fitted[0] == nil || *f.Smooth[0].Fitted[0] != 1.5e-3 ||
		f.Smooth[0].Fitted[1] != nil || f.Smooth[0].R2 != 0 {
		t.Errorf("smoothers %+v", f.Smooth)
	}
}
