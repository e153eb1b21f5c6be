package render

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/culprit-dev/culprit/internal/analysis/models"
)

// ModelsText writes each function's best model, e.g.
// "worker  quadratic  y = 0.002 + 3.1e-09·n²  R² 0.98", and its other fits.
func ModelsText(w io.Writer, fs []models.Function, xname, unit string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "FUNCTION\tBEST MODEL (y in %s)\tR²\tPOINTS\tOTHER MODELS (R²)\n", unit)
	for _, f := range fs {
		best := f.Best.Formula(xname)
		if !f.Best.Reliable() && f.Best.Kind != models.Constant {
			best += " (unreliable)"
		}
		var others []string
		for _, m := range f.Fits {
			if m.Kind != f.Best.Kind && m.Kind != models.Constant {
				others = append(others, fmt.Sprintf("%s %.2f", m.Kind, m.R2))
			}
		}
		name := f.Name
		if f.Object != "" {
			name += " (" + f.Object + ")"
		}
		fmt.Fprintf(tw, "%s\t%s: %s\t%.3f\t%d\t%s\n", name, f.Best.Kind, best, f.Best.R2, len(f.X), strings.Join(others, ", "))
	}
	return tw.Flush()
}

// fitJSON is one fit as JSON, which has no NaN or infinity: a
// coefficient that is not finite (a degenerate fit) is null, and an R²
// that is not finite is 0, a model that explains nothing (as in check's
// JSON).
type fitJSON struct {
	Kind     string   `json:"kind"`
	B0       *float64 `json:"b0"`
	B1       *float64 `json:"b1"`
	R2       float64  `json:"r2"`
	Reliable bool     `json:"reliable"`
	Formula  string   `json:"formula"`
}

type smoothJSON struct {
	Method    string     `json:"method"`
	Fitted    []*float64 `json:"fitted"` // null where the smoother has no value
	R2        float64    `json:"r2"`
	Bins      []float64  `json:"bins,omitempty"`
	Window    int        `json:"window,omitempty"`
	Bandwidth float64    `json:"bandwidth,omitempty"`
	Decay     float64    `json:"decay,omitempty"`
}

// r2JSON is an R² JSON can hold: 0 when it is not finite.
func r2JSON(r2 float64) float64 {
	if !isFinite(r2) {
		return 0
	}
	return r2
}

// ModelsJSON writes every fit of every function.
func ModelsJSON(w io.Writer, fs []models.Function, xname, unit string) error {
	type fn struct {
		Function string       `json:"function"`
		Object   string       `json:"object"`
		Series   string       `json:"series"`
		X        []float64    `json:"x"`
		Y        []float64    `json:"y"`
		Best     fitJSON      `json:"best"`
		Fits     []fitJSON    `json:"fits"`
		Smooth   []smoothJSON `json:"nonparametric"`
		Outliers int          `json:"outliers"` // points a robust fit gave no weight
	}
	conv := func(f models.Fit) fitJSON {
		return fitJSON{Kind: f.Kind.String(), B0: finite(f.B0), B1: finite(f.B1), R2: r2JSON(f.R2), Reliable: f.Reliable(), Formula: f.Formula(xname)}
	}
	out := struct {
		X         string `json:"x"`
		Unit      string `json:"y_unit"`
		Functions []fn   `json:"functions"`
	}{X: xname, Unit: unit, Functions: []fn{}}
	for _, f := range fs {
		j := fn{Function: f.Name, Object: f.Object, Series: f.Series, X: f.X, Y: f.Y, Best: conv(f.Best), Outliers: f.Outliers}
		for _, m := range f.Fits {
			j.Fits = append(j.Fits, conv(m))
		}
		for _, s := range f.Smooth {
			fitted := make([]*float64, len(s.Fitted))
			for i, v := range s.Fitted {
				fitted[i] = finite(v)
			}
			j.Smooth = append(j.Smooth, smoothJSON{Method: s.Method, Fitted: fitted, R2: r2JSON(s.R2), Bins: s.Bins, Window: s.Window, Bandwidth: s.Bandwidth, Decay: s.Decay})
		}
		out.Functions = append(out.Functions, j)
	}
	return writeJSON(w, out)
}

// ModelsSVG draws one scatter plot per function with its best model (solid)
// and the Gaussian kernel regression (dashed).
func ModelsSVG(w io.Writer, fs []models.Function, xname, unit string) error {
	const pw, ph, cols, m = 360, 240, 2, 40
	rows := (len(fs) + cols - 1) / cols
	W, H := cols*pw, max(rows, 1)*ph
	fmt.Fprintf(w, `<?xml version="1.0" standalone="no"?>
<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Verdana, sans-serif" font-size="11">
<rect width="100%%" height="100%%" fill="white"/>
`, W, H, W, H)
	for i, f := range fs {
		ox, oy := float64((i%cols)*pw), float64((i/cols)*ph)
		x0, x1 := f.X[0], f.X[len(f.X)-1]
		y0, y1 := 0.0, 0.0
		for _, v := range f.Y {
			y1 = math.Max(y1, v)
		}
		curve := func(fn func(float64) float64) []float64 {
			var ys []float64
			for k := 0; k <= 60; k++ {
				ys = append(ys, fn(x0+(x1-x0)*float64(k)/60))
			}
			return ys
		}
		best := curve(f.Best.Eval)
		for _, v := range best {
			if isFinite(v) {
				y1 = math.Max(y1, v)
			}
		}
		if y1 == y0 {
			y1 = y0 + 1
		}
		if x1 == x0 {
			x1 = x0 + 1
		}
		px := func(x float64) float64 { return ox + m + (x-x0)/(x1-x0)*(pw-2*m) }
		py := func(y float64) float64 { return oy + ph - m + 10 - (y-y0)/(y1-y0)*(ph-2*m) }
		title := fmt.Sprintf("%s: %s, R² %.2f", f.Name, f.Best.Kind, f.Best.R2)
		fmt.Fprintf(w, `<g><title>%s</title>
<text x="%.1f" y="%.1f" font-weight="bold">%s</text>
<text x="%.1f" y="%.1f" font-size="10" fill="#555">%s</text>
<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#888"/>
<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#888"/>
<text x="%.1f" y="%.1f" font-size="9" text-anchor="middle">%s = %g … %g</text>
<text x="%.1f" y="%.1f" font-size="9">%.3g %s</text>
`, html.EscapeString(title), ox+m, oy+16, html.EscapeString(title), ox+m, oy+29, html.EscapeString(f.Best.Formula(xname)),
			px(x0), py(y0), px(x1), py(y0), px(x0), py(y0), px(x0), py(y1),
			ox+pw/2, py(y0)+14, html.EscapeString(xname), x0, x1, ox+4, py(y1)+3, y1, unit)
		path := func(ys []float64, style string) {
			var b strings.Builder
			for k, v := range ys {
				if !isFinite(v) {
					continue
				}
				cmd := "L"
				if b.Len() == 0 {
					cmd = "M"
				}
				fmt.Fprintf(&b, "%s%.1f,%.1f ", cmd, px(x0+(x1-x0)*float64(k)/float64(len(ys)-1)), py(math.Min(v, y1)))
			}
			fmt.Fprintf(w, `<path d="%s" fill="none" %s/>`+"\n", b.String(), style)
		}
		path(best, `stroke="#c0392b" stroke-width="2"`)
		for _, s := range f.Smooth {
			if s.Method == "kernel-gaussian" {
				var b strings.Builder
				for k := range s.X {
					cmd := "L"
					if k == 0 {
						cmd = "M"
					}
					fmt.Fprintf(&b, "%s%.1f,%.1f ", cmd, px(s.X[k]), py(s.Fitted[k]))
				}
				fmt.Fprintf(w, `<path d="%s" fill="none" stroke="#2471a3" stroke-dasharray="4,3"/>`+"\n", b.String())
			}
		}
		for k := range f.X {
			fmt.Fprintf(w, `<circle cx="%.1f" cy="%.1f" r="3" fill="#333"><title>%s=%g: %.4g %s</title></circle>`+"\n",
				px(f.X[k]), py(f.Y[k]), html.EscapeString(xname), f.X[k], f.Y[k], unit)
		}
		fmt.Fprintln(w, "</g>")
	}
	_, err := fmt.Fprintln(w, "</svg>")
	return err
}
