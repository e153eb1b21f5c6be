package render

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/culprit-dev/culprit/internal/store"
)

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

func seconds(ns int64) string { return fmt.Sprintf("%.3fs", float64(ns)/1e9) }

// HistoryText lists stored runs, one a line.
func HistoryText(w io.Writer, runs []store.Run) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCOMMIT\tCOMMITTED\tWORKLOAD\tPARAMS\tSAMPLES\tCPU\tSIZE")
	for _, r := range runs {
		c := shortHash(r.Commit)
		if r.Dirty {
			c += "+dirty"
		}
		params := store.ParamString(r.Params)
		if params == "" {
			params = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", r.ID, c, time.Unix(r.CommitTime, 0).UTC().Format("2006-01-02 15:04"),
			r.Workload, params, r.Samples, seconds(r.CPU), bytesText(r.Size))
	}
	return tw.Flush()
}

func bytesText(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

type runJSON struct {
	ID         int64             `json:"id"`
	Commit     string            `json:"commit"`
	CommitTime int64             `json:"commit_time"`
	Dirty      bool              `json:"dirty"`
	Workload   string            `json:"workload"`
	Command    []string          `json:"command"`
	Params     map[string]string `json:"params"`
	Config     string            `json:"config"`
	Recording  string            `json:"recording"`
	Size       int64             `json:"size"`
	Samples    int64             `json:"samples"`
	CPUNS      int64             `json:"cpu_ns"`
	Added      time.Time         `json:"added"`
	Functions  []funcJSON        `json:"functions,omitempty"`
}

type funcJSON struct {
	Name    string `json:"name"`
	Object  string `json:"object"`
	Self    int64  `json:"self_samples"`
	Total   int64  `json:"total_samples"`
	SelfNS  int64  `json:"self_ns"`
	TotalNS int64  `json:"total_ns"`
}

func toRunJSON(r store.Run, funcs []store.Func) runJSON {
	j := runJSON{ID: r.ID, Commit: r.Commit, CommitTime: r.CommitTime, Dirty: r.Dirty, Workload: r.Workload,
		Command: r.Command, Params: r.Params, Config: r.Config, Recording: r.Recording, Size: r.Size,
		Samples: r.Samples, CPUNS: r.CPU, Added: r.Added.UTC()}
	if j.Command == nil {
		j.Command = []string{}
	}
	if j.Params == nil {
		j.Params = map[string]string{}
	}
	for _, f := range funcs {
		j.Functions = append(j.Functions, funcJSON(f))
	}
	return j
}

// HistoryJSON writes stored runs as a JSON array.
func HistoryJSON(w io.Writer, runs []store.Run) error {
	out := make([]runJSON, 0, len(runs))
	for _, r := range runs {
		out = append(out, toRunJSON(r, nil))
	}
	return writeJSON(w, out)
}

// RunText describes one stored run and its busiest functions (top of them;
// 0: all).
func RunText(w io.Writer, r store.Run, funcs []store.Func, top int) error {
	fmt.Fprintf(w, "run %d\ncommit     %s", r.ID, r.Commit)
	if r.Dirty {
		fmt.Fprint(w, " (uncommitted changes)")
	}
	fmt.Fprintf(w, "\ncommitted  %s\nworkload   %s\ncommand    %s\nparams     %s\ncollector  %s\nrecording  %s (%s)\nadded      %s\nsamples    %d (%s of CPU time)\n\n",
		time.Unix(r.CommitTime, 0).UTC().Format(time.RFC3339), r.Workload, strings.Join(r.Command, " "),
		store.ParamString(r.Params), r.Config, r.Recording, bytesText(r.Size), r.Added.UTC().Format(time.RFC3339),
		r.Samples, seconds(r.CPU))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "SELF\tSELF CPU\tTOTAL\tTOTAL CPU\t FUNCTION\t")
	for i, f := range funcs {
		if top > 0 && i == top {
			fmt.Fprintf(tw, "\t\t\t\t (%d more)\t\n", len(funcs)-top)
			break
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t %s (%s)\t\n", f.Self, seconds(f.SelfNS), f.Total, seconds(f.TotalNS), f.Name, f.Object)
	}
	return tw.Flush()
}

// RunJSON writes one stored run with its function statistics.
func RunJSON(w io.Writer, r store.Run, funcs []store.Func) error {
	j := toRunJSON(r, funcs)
	if j.Functions == nil {
		j.Functions = []funcJSON{}
	}
	return writeJSON(w, j)
}
