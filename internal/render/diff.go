package render

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/culprit-dev/culprit/internal/analysis/flatdiff"
)

// writeRuns writes a line per run: its path, samples and CPU time.
func writeRuns(w io.Writer, basePath, newPath string, base, cur flatdiff.Run) {
	for _, x := range []struct {
		label, path string
		run         flatdiff.Run
	}{{"base", basePath, base}, {"new ", newPath, cur}} {
		fmt.Fprintf(w, "%s %s: %d samples, %.3f s of CPU\n", x.label, x.path, x.run.Samples, float64(x.run.CPU)/1e9)
	}
}

// DiffText writes a comparison of two runs: a line per run (path, samples,
// CPU time), then a table with the base and new shares, the change in
// percentage points with its two-sigma error (marked * when significant),
// the CPU time in each run (ms) and the name. The share is self time, or
// total time when the comparison is ranked by total. Only the first top rows
// are written (0 = all), leaving out those that are 0 in both runs; a name
// found in two objects, or in a program rebuilt under another name, is
// followed by its object in brackets.
func DiffText(w io.Writer, d flatdiff.Result, basePath, newPath string, top int) error {
	bw := bufio.NewWriter(w)
	writeRuns(bw, basePath, newPath, d.Base, d.New)
	if len(d.Rows) == 0 {
		return bw.Flush()
	}
	what := "self"
	if d.ByTotal {
		what = "total"
	}
	// Rows that are 0 in both runs under the ranking (callers, in a self
	// comparison) say nothing here; JSON keeps them.
	var rows []flatdiff.Row
	for _, r := range d.Rows {
		if d.ByTotal && (r.Base.Total > 0 || r.New.Total > 0) || !d.ByTotal && (r.Base.Self > 0 || r.New.Self > 0) {
			rows = append(rows, r)
		}
	}
	shown := len(rows)
	if top > 0 && len(rows) > top {
		rows = rows[:top]
	}
	count := map[string]int{}
	for _, r := range rows {
		count[r.Name]++
	}
	fmt.Fprintf(bw, "%7s %7s %8s %6s %9s %9s  %s\n", "base%", "new%", "change", "±err", "base ms", "new ms", "name ("+what+")")
	for _, r := range rows {
		b, n, delta, e, bc, nc := r.Base.SelfFrac, r.New.SelfFrac, r.DeltaSelf, r.ErrSelf, r.Base.SelfCPU, r.New.SelfCPU
		if d.ByTotal {
			b, n, delta, e, bc, nc = r.Base.TotalFrac, r.New.TotalFrac, r.DeltaTotal, r.ErrTotal, r.Base.TotalCPU, r.New.TotalCPU
		}
		mark := " "
		if r.Significant {
			mark = "*"
		}
		name := r.Name
		if r.Object != "" && (count[name] > 1 || strings.Contains(r.Object, "→")) {
			name += " [" + r.Object + "]"
		}
		fmt.Fprintf(bw, "%7s %7s %+7.1f%s %6s %9.1f %9.1f  %s\n", pct(b), pct(n), 100*delta, mark, pm(e), float64(bc)/1e6, float64(nc)/1e6, name)
	}
	if n := shown - len(rows); n > 0 {
		fmt.Fprintf(bw, "(%d more not shown)\n", n)
	}
	fmt.Fprintf(bw, "* the change exceeds two sigma of sampling noise\n")
	return bw.Flush()
}

type diffSide struct {
	Self         float64 `json:"self"`
	Total        float64 `json:"total"`
	SelfSamples  int     `json:"self_samples"`
	TotalSamples int     `json:"total_samples"`
	SelfCPUNs    uint64  `json:"self_cpu_ns"`
	TotalCPUNs   uint64  `json:"total_cpu_ns"`
}

func diffSideOf(s flatdiff.Side) diffSide {
	return diffSide{s.SelfFrac, s.TotalFrac, s.Self, s.Total, s.SelfCPU, s.TotalCPU}
}

type diffEntry struct {
	Name        string   `json:"name"`
	Object      string   `json:"object"`
	Base        diffSide `json:"base"`
	New         diffSide `json:"new"`
	SelfChange  float64  `json:"self_change"`
	SelfErr     float64  `json:"self_err"`
	TotalChange float64  `json:"total_change"`
	TotalErr    float64  `json:"total_err"`
	Significant bool     `json:"significant"`
}

type diffRun struct {
	Path    string `json:"path"`
	Samples int    `json:"samples"`
	CPUNs   uint64 `json:"cpu_ns"`
}

type diffJSON struct {
	Base     diffRun     `json:"base"`
	New      diffRun     `json:"new"`
	Grouping string      `json:"grouping"`
	RankedBy string      `json:"ranked_by"`
	Entries  []diffEntry `json:"entries"`
	Warnings []string    `json:"warnings"`
}

// DiffJSON writes a comparison as documented in docs/report-json.md.
func DiffJSON(w io.Writer, d flatdiff.Result, basePath, newPath string, warnings []string) error {
	out := diffJSON{
		Base:     diffRun{basePath, d.Base.Samples, d.Base.CPU},
		New:      diffRun{newPath, d.New.Samples, d.New.CPU},
		Grouping: d.Grouping.String(),
		RankedBy: "self",
		Entries:  make([]diffEntry, 0, len(d.Rows)),
		Warnings: jsonWarnings(warnings),
	}
	if d.ByTotal {
		out.RankedBy = "total"
	}
	for _, r := range d.Rows {
		out.Entries = append(out.Entries, diffEntry{Name: r.Name, Object: r.Object, Base: diffSideOf(r.Base), New: diffSideOf(r.New),
			SelfChange: r.DeltaSelf, SelfErr: r.ErrSelf, TotalChange: r.DeltaTotal, TotalErr: r.ErrTotal, Significant: r.Significant})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
