package render

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/culprit-dev/culprit/internal/analysis/variance"
)

// VarianceText prints culprit variance's result: the intervals' latency,
// the chosen factors with their share of the variance and call sites, the
// next-ranked factors, VProfiler's Table 3 figures, and with tree the
// variance tree.
func VarianceText(w io.Writer, r *variance.Result, tree bool) error {
	var b strings.Builder
	what := r.Spec.Start
	if r.Spec.End != r.Spec.Start {
		what = r.Spec.Start + " … " + r.Spec.End
		if r.Spec.Key != "" {
			what += " (key " + r.Spec.Key + ")"
		}
		if q := r.Spec.Queue(); q != "" {
			what = r.Spec.Start + " … " + q + " … " + r.Spec.End
		}
	}
	fmt.Fprintf(&b, "%d intervals of %s: mean %s, stddev %s, p50 %s, p99 %s, p99.9 %s\n", r.Intervals, what,
		Duration(r.Mean), Duration(r.StdDev), Duration(r.P50), Duration(r.P99), Duration(r.P999))
	if s := statesText(r.States); s != "" {
		fmt.Fprintf(&b, "time in an interval: %s\n", s)
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	if r.Unpaired > 0 {
		fmt.Fprintf(&b, "%d starts or ends had no other half (left out)\n", r.Unpaired)
	}
	rounds := "1 round"
	if r.Rounds != 1 {
		rounds = fmt.Sprintf("%d rounds", r.Rounds)
	}
	fmt.Fprintf(&b, "%s of probes, %d functions; variance tree height %d, breadth %d\n\n", rounds, r.Probes, r.Height, r.Breadth)
	if len(r.Factors) == 0 {
		b.WriteString("no factor holds more than the threshold of the variance: probe more functions (--functions) or lower -d\n")
	} else {
		b.WriteString("factors (share of the latency variance; score = share × specificity²):\n")
		for i, f := range r.Factors {
			factorText(&b, i+1, f)
		}
	}
	var next []*variance.Factor
	for _, f := range r.Ranked {
		if len(next) == 5 {
			break
		}
		chosen := false
		for _, c := range r.Factors {
			chosen = chosen || c == f
		}
		if !chosen && math.Abs(f.Contribution) >= 0.01 {
			next = append(next, f)
		}
	}
	if len(next) > 0 {
		b.WriteString("\nnext by score:\n")
		for _, f := range next {
			fmt.Fprintf(&b, "  %6.1f%%  %-40s score %.3g\n", 100*f.Contribution, f.Label(), f.Score)
		}
	}
	if tree && r.Tree != nil {
		b.WriteString("\nvariance tree (share of the root's variance; covariances ×2, shown from 0.5%):\n")
		treeText(&b, r.Tree, "", true, true)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func factorText(b *strings.Builder, n int, f *variance.Factor) {
	kind := ""
	switch {
	case f.Kind == "covariance":
		kind = "slow together"
	case f.Leaf:
		kind = "mean " + Duration(f.MeanNS)
	default:
		kind = "mean " + Duration(f.MeanNS) + ", has unprobed callees"
	}
	fmt.Fprintf(b, "%2d. %5.1f%%  %s  (%s; score %.3g)\n", n, 100*f.Contribution, f.Label(), kind, f.Score)
	if s := statesText(f.States); s != "" {
		fmt.Fprintf(b, "      time: %s\n", s)
	}
	if s := statesText(f.Holders); s != "" {
		fmt.Fprintf(b, "      waits ended by: %s\n", s)
	}
	for i, s := range f.Sites {
		if i == 4 {
			fmt.Fprintf(b, "              and %d more call sites\n", len(f.Sites)-4)
			break
		}
		letter := ""
		if s.Letter != "" {
			letter = "[" + s.Letter + "] "
		}
		fmt.Fprintf(b, "      %s%5.1f%%  %s\n", letter, 100*s.Contribution, s.Path)
	}
}

func treeText(b *strings.Builder, n *variance.TreeNode, indent string, last, root bool) {
	branch := ""
	if !root {
		branch = "├─ "
		if last {
			branch = "└─ "
		}
	}
	what := "Var"
	if n.Kind == "covariance" {
		what = "2·Cov"
	}
	label := n.Label
	if n.Site != "" {
		label += " @ " + n.Site
	}
	fmt.Fprintf(b, "%s%s%s %s %.1f%%", indent, branch, what, label, 100*n.Contribution)
	if n.Kind == "variance" {
		fmt.Fprintf(b, "  (mean %s)", Duration(n.MeanNS))
	}
	b.WriteByte('\n')
	var shown []*variance.TreeNode
	for _, c := range n.Children {
		if c.Kind == "variance" || math.Abs(c.Contribution) >= 0.005 {
			shown = append(shown, c)
		}
	}
	next := indent
	if !root {
		if last {
			next += "   "
		} else {
			next += "│  "
		}
	}
	for i, c := range shown {
		treeText(b, c, next, i == len(shown)-1, false)
	}
}

// VarianceJSON writes the result as JSON: the interval statistics, the
// chosen and ranked factors with their sites, and the whole tree.
func VarianceJSON(w io.Writer, r *variance.Result) error {
	return writeJSON(w, r)
}

// statesText says how a mean splits by scheduler state, largest first:
// "lock 80%, on-cpu 15%, runnable 5%".
func statesText(st map[string]float64) string {
	total := 0.0
	for _, v := range st {
		total += v
	}
	if total <= 0 {
		return ""
	}
	keys := make([]string, 0, len(st))
	for k := range st {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if st[keys[i]] != st[keys[j]] {
			return st[keys[i]] > st[keys[j]]
		}
		return keys[i] < keys[j]
	})
	var parts []string
	for _, k := range keys {
		if p := 100 * st[k] / total; p >= 0.5 {
			parts = append(parts, fmt.Sprintf("%s %.0f%%", k, p))
		}
	}
	return strings.Join(parts, ", ")
}
