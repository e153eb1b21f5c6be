package render

import (
	"fmt"
	"html"
	"io"
	"strings"

	"github.com/culprit-dev/culprit/internal/analysis/exprs"
)

// histColours are the runs' colours in HistogramsSVG, in order.
var histColours = []string{"rgb(60,130,200)", "rgb(220,80,40)", "rgb(90,170,90)", "rgb(150,90,180)"}

// HistogramsSVG draws histograms over the same bins (exprs.Histograms) side
// by side, one colour per run, each run's bars scaled to its own share of
// values (runs of different lengths compare), with a legend of names.
func HistogramsSVG(w io.Writer, title string, names []string, hists [][]exprs.Bin) error {
	const width, height, top, bottom = 560, 160, 22, 20
	var b strings.Builder
	bins := 0
	if len(hists) > 0 {
		bins = len(hists[0])
	}
	fmt.Fprintf(&b, `<svg class="hist" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`, width, height+top+bottom)
	fmt.Fprintf(&b, `<title>%s</title>`, html.EscapeString(title))
	x := 0
	for i, n := range names {
		fmt.Fprintf(&b, `<rect x="%d" y="4" width="10" height="10" fill="%s"/><text x="%d" y="13">%s</text>`,
			x, histColours[i%len(histColours)], x+14, html.EscapeString(n))
		x += 24 + 7*len(n)
	}
	if bins == 0 {
		b.WriteString(`</svg>`)
		_, err := io.WriteString(w, b.String())
		return err
	}
	slot := float64(width) / float64(bins)
	barW := slot / float64(len(hists)+1)
	share := func(h []exprs.Bin, k int) float64 {
		total := 0
		for _, x := range h {
			total += x.Count
		}
		if total == 0 {
			return 0
		}
		return float64(h[k].Count) / float64(total)
	}
	var most float64
	for _, h := range hists {
		for k := range h {
			most = max(most, share(h, k))
		}
	}
	for i, h := range hists {
		for k, bin := range h {
			f := share(h, k)
			if f == 0 {
				continue
			}
			bh := f / most * height
			fmt.Fprintf(&b, `<rect class="bar run%d" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s: %d values in [%s, %s] (%.1f%%)</title></rect>`,
				i, float64(k)*slot+float64(i)*barW+barW/2, top+height-bh, barW, bh, histColours[i%len(histColours)],
				html.EscapeString(names[i]), bin.Count, num(bin.Lo), num(bin.Hi), 100*f)
		}
	}
	fmt.Fprintf(&b, `<line x1="0" y1="%d" x2="%d" y2="%d" stroke="#888"/>`, top+height, width, top+height)
	fmt.Fprintf(&b, `<text x="0" y="%d">%s</text><text x="%d" y="%d" text-anchor="end">%s</text>`,
		top+height+bottom-4, num(hists[0][0].Lo), width, top+height+bottom-4, num(hists[0][bins-1].Hi))
	b.WriteString(`</svg>`)
	_, err := io.WriteString(w, b.String())
	return err
}
