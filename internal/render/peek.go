package render

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/culprit-dev/culprit/internal/profile"
)

// withObject follows a name with its object in brackets, or with a pseudo
// object that has its own ("[kernel.kallsyms]", "[vdso]").
func withObject(name, object string) string {
	if strings.HasPrefix(object, "[") {
		return name + " " + object
	}
	return name + " [" + object + "]"
}

// PeekText writes each function's callers and callees (report --peek), as
// pprof -peek does: callers above the function, callees below, each with
// its samples, its share of all samples and its share of the function's
// total:
//
//	PEEK worker in hier: total 99.0% (2014), self 98.9% (2012) of 2033 samples
//	 samples    all%     fn%
//	    1346   66.2%   66.8%  <- dispatch_2
//	     668   32.9%   33.2%  <- dispatch_1
//	    2012   98.9%   99.9%  == worker (self)
//	       2    0.1%    0.1%  -> asm_sysvec_apic_timer_interrupt [kernel.kallsyms]
//
// A neighbour in another object than the function is followed by its object
// in brackets (kernel frames by "[kernel.kallsyms]"). Only the first top functions are written (0 = all).
func PeekText(w io.Writer, peeks []profile.Peek, samples int, top int) error {
	bw := bufio.NewWriter(w)
	if samples == 0 || len(peeks) == 0 {
		fmt.Fprintln(bw, "no samples in the functions peeked at")
		return bw.Flush()
	}
	shown := peeks
	if top > 0 && len(shown) > top {
		shown = shown[:top]
	}
	of := func(n, total int) string {
		if total == 0 {
			return "-"
		}
		return pct(fraction(n, total))
	}
	for i, pk := range shown {
		if i > 0 {
			fmt.Fprintln(bw)
		}
		fmt.Fprintf(bw, "PEEK %s in %s: total %s (%d), self %s (%d) of %d samples\n",
			pk.Function, pk.Object, of(pk.Total, samples), pk.Total, of(pk.Self, samples), pk.Self, samples)
		fmt.Fprintf(bw, "%8s %7s %7s\n", "samples", "all%", "fn%")
		row := func(n int, mark, name string) {
			fmt.Fprintf(bw, "%8d %7s %7s  %s %s\n", n, of(n, samples), of(n, pk.Total), mark, name)
		}
		named := func(e profile.Edge) string {
			if e.Object == "" || e.Object == pk.Object {
				return e.Name
			}
			return withObject(e.Name, e.Object)
		}
		for _, e := range pk.Callers {
			row(e.Samples, "<-", named(e))
		}
		row(pk.Self, "==", pk.Function+" (self)")
		for _, e := range pk.Callees {
			row(e.Samples, "->", named(e))
		}
	}
	if n := len(peeks) - len(shown); n > 0 {
		fmt.Fprintf(bw, "\n(%d more functions match, not shown: raise --top or narrow --peek)\n", n)
	}
	return bw.Flush()
}

type peekEdgeJSON struct {
	Name    string  `json:"name"`
	Object  string  `json:"object"`
	Samples int     `json:"samples"`
	Share   float64 `json:"share"`
}

type peekJSON struct {
	Function string `json:"function"`
	Object   string `json:"object"`
	countsJSON
	Callers []peekEdgeJSON `json:"callers"`
	Callees []peekEdgeJSON `json:"callees"`
}

type peeksJSON struct {
	Samples   int          `json:"samples"`
	Lost      uint64       `json:"lost"`
	Throttled uint64       `json:"throttled"`
	Peeks     []peekJSON   `json:"peeks"`
	Sources   []jsonSource `json:"sources"`
	Warnings  []string     `json:"warnings"`
}

// PeekJSON writes each function's callers and callees as JSON
// (docs/report-json.md); shares are of all samples.
func PeekJSON(w io.Writer, peeks []profile.Peek, samples int, extra JSONExtra) error {
	out := peeksJSON{Samples: samples, Lost: extra.Lost, Throttled: extra.Throttled, Peeks: []peekJSON{},
		Sources: jsonSources(extra.Sources), Warnings: jsonWarnings(extra.Warnings)}
	edges := func(es []profile.Edge) []peekEdgeJSON {
		out := make([]peekEdgeJSON, 0, len(es))
		for _, e := range es {
			out = append(out, peekEdgeJSON{Name: e.Name, Object: e.Object, Samples: e.Samples, Share: fraction(e.Samples, samples)})
		}
		return out
	}
	for _, pk := range peeks {
		out.Peeks = append(out.Peeks, peekJSON{Function: pk.Function, Object: pk.Object,
			countsJSON: counts(pk.Self, pk.Total, samples), Callers: edges(pk.Callers), Callees: edges(pk.Callees)})
	}
	return writeJSON(w, out)
}
