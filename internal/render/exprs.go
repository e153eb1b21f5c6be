package render

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/culprit-dev/culprit/internal/analysis/exprs"
)

// ExprStats are the views of `report --exprs --stat`.
var ExprStats = []string{"mean", "quantiles", "hist", "series"}

// ExprsText prints expression summaries: with stat "mean" a table of count,
// missing, time-weighted mean, min, max and median; "quantiles" adds p90
// and p99; "hist" draws each histogram; "series" lists values over time.
func ExprsText(w io.Writer, list []exprs.Summary, stat string) error {
	if len(list) == 0 {
		_, err := fmt.Fprintln(w, "no expressions were sampled: record with --expr 'PROG@FUNC@EXPR' or --rules FILE")
		return err
	}
	var b strings.Builder
	switch stat {
	case "mean", "quantiles":
		fmt.Fprintf(&b, "%8s %8s %12s %12s %12s %12s", "count", "missing", "mean", "min", "max", "p50")
		if stat == "quantiles" {
			fmt.Fprintf(&b, " %12s %12s", "p90", "p99")
		}
		b.WriteString("  expression\n")
		for _, s := range list {
			fmt.Fprintf(&b, "%8d %8d %12s %12s %12s %12s", s.Count, s.Missing, num(s.Mean), val(s, s.Min), val(s, s.Max), val(s, s.P50))
			if stat == "quantiles" {
				fmt.Fprintf(&b, " %12s %12s", val(s, s.P90), val(s, s.P99))
			}
			fmt.Fprintf(&b, "  %s%s\n", label(s), shares(s))
		}
	case "hist":
		for _, s := range list {
			fmt.Fprintf(&b, "%s: %d values, %d missing\n", label(s), s.Count, s.Missing)
			max := 0
			for _, h := range s.Hist {
				if h.Count > max {
					max = h.Count
				}
			}
			for _, h := range s.Hist {
				bar := 0
				if max > 0 {
					bar = h.Count * 40 / max
				}
				fmt.Fprintf(&b, "  [%12s, %12s) %8d %s\n", num(h.Lo), num(h.Hi), h.Count, strings.Repeat("#", bar))
			}
		}
	case "series":
		for _, s := range list {
			fmt.Fprintf(&b, "%s:\n", label(s))
			for _, p := range s.Series {
				fmt.Fprintf(&b, "  %9.3fs %s\n", p.T, num(p.Value))
			}
		}
	default:
		return fmt.Errorf("unknown statistic %q: use %s", stat, strings.Join(ExprStats, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ExprsJSON writes {"samples": N, "lost": L, "throttled": T, "exprs": [...]}.
func ExprsJSON(w io.Writer, list []exprs.Summary, samples int, extra JSONExtra) error {
	if list == nil {
		list = []exprs.Summary{}
	}
	v := struct {
		Samples   int             `json:"samples"`
		Lost      uint64          `json:"lost"`
		Throttled uint64          `json:"throttled"`
		Exprs     []exprs.Summary `json:"exprs"`
		Warnings  []string        `json:"warnings,omitempty"`
	}{samples, extra.Lost, extra.Throttled, list, extra.Warnings}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func label(s exprs.Summary) string {
	if s.Class == "counter" {
		return "count " + s.Expr
	}
	if s.Function != "" && s.Function != "#global" {
		return s.Function + "@" + s.Expr
	}
	return s.Expr
}

// val formats a value of s: an enumerator by name, else a number.
func val(s exprs.Summary, v float64) string {
	if n, ok := s.Lookup(v); ok {
		return n
	}
	return num(v)
}

// shares spells the time shares of an enum's values: " (RUN 78%, IDLE 22%)".
func shares(s exprs.Summary) string {
	var parts []string
	for _, n := range s.Names {
		if n.Count > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f%%", n.Name, 100*n.Share))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// num formats a value compactly: integers as integers, others with 4
// significant digits (8.38e+06 as PCT prints).
func num(v float64) string {
	if v == float64(int64(v)) && v < 1e15 && v > -1e15 {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}
