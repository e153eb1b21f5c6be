package render

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/culprit-dev/culprit/internal/analysis/trace"
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
	Traced     []tracedJSON      `json:"traced,omitempty"`
}

type tracedJSON struct {
	Name      string  `json:"name"`
	Object    string  `json:"object"`
	Calls     int64   `json:"calls"`
	Estimated int64   `json:"estimated_calls"`
	InclTotal int64   `json:"inclusive_total_ns"`
	InclMean  float64 `json:"inclusive_mean_ns"`
	InclP50   int64   `json:"inclusive_p50_ns"`
	InclP99   int64   `json:"inclusive_p99_ns"`
	InclMax   int64   `json:"inclusive_max_ns"`
	ExclTotal int64   `json:"exclusive_total_ns"`
	ExclMean  float64 `json:"exclusive_mean_ns"`
}

type funcJSON struct {
	Name    string `json:"name"`
	Object  string `json:"object"`
	Self    int64  `json:"self_samples"`
	Total   int64  `json:"total_samples"`
	SelfNS  int64  `json:"self_ns"`
	TotalNS int64  `json:"total_ns"`
}

func toRunJSON(r store.Run, funcs []store.Func, traced []store.Traced) runJSON {
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
	for _, t := range traced {
		j.Traced = append(j.Traced, tracedJSON{Name: t.Name, Object: t.Object, Calls: t.Calls, Estimated: t.Estimated,
			InclTotal: t.InclTotal, InclMean: t.InclMean, InclP50: t.InclP50, InclP99: t.InclP99, InclMax: t.InclMax,
			ExclTotal: t.ExclTotal, ExclMean: t.ExclMean})
	}
	return j
}

// HistoryJSON writes stored runs as a JSON array.
func HistoryJSON(w io.Writer, runs []store.Run) error {
	out := make([]runJSON, 0, len(runs))
	for _, r := range runs {
		out = append(out, toRunJSON(r, nil, nil))
	}
	return writeJSON(w, out)
}

// RunText describes one stored run and its busiest functions (top of them;
// 0: all).
func RunText(w io.Writer, r store.Run, funcs []store.Func, traced []store.Traced, top int) error {
	fmt.Fprintf(w, "run %d\ncommit     %s", r.ID, r.Commit)
	if r.Dirty {
		fmt.Fprint(w, " (uncommitted changes)")
	}
	fmt.Fprintf(w, "\ncommitted  %s\nworkload   %s\ncommand    %s\nparams     %s\ncollector  %s\nrecording  %s (%s)\nadded      %s\nsamples    %d (%s of CPU time)\n\n",
		time.Unix(r.CommitTime, 0).UTC().Format(time.RFC3339), r.Workload, strings.Join(r.Command, " "),
		store.ParamString(r.Params), r.Config, r.Recording, bytesText(r.Size), r.Added.UTC().Format(time.RFC3339),
		r.Samples, seconds(r.CPU))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	if len(funcs) > 0 {
		fmt.Fprintln(tw, "SELF\tSELF CPU\tTOTAL\tTOTAL CPU\t FUNCTION\t")
	}
	for i, f := range funcs {
		if top > 0 && i == top {
			fmt.Fprintf(tw, "\t\t\t\t (%d more)\t\n", len(funcs)-top)
			break
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t %s (%s)\t\n", f.Self, seconds(f.SelfNS), f.Total, seconds(f.TotalNS), f.Name, f.Object)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(traced) == 0 {
		return nil
	}
	if len(funcs) > 0 {
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "traced calls")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "CALLS\tTOTAL\tMEAN\tP50\tP99\tMAX\tSELF TOTAL\t FUNCTION\t")
	for i, t := range traced {
		if top > 0 && i == top {
			fmt.Fprintf(tw, "\t\t\t\t\t\t\t (%d more)\t\n", len(traced)-top)
			break
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t %s (%s)\t\n", t.Estimated, seconds(t.InclTotal), micro(t.InclMean), micro(float64(t.InclP50)),
			micro(float64(t.InclP99)), micro(float64(t.InclMax)), seconds(t.ExclTotal), t.Name, t.Object)
	}
	return tw.Flush()
}

func micro(ns float64) string { return fmt.Sprintf("%.1fµs", ns/1e3) }

// RunJSON writes one stored run with its function and traced-call
// statistics.
func RunJSON(w io.Writer, r store.Run, funcs []store.Func, traced []store.Traced) error {
	j := toRunJSON(r, funcs, traced)
	if j.Functions == nil {
		j.Functions = []funcJSON{}
	}
	return writeJSON(w, j)
}

// StatsGroup is the per-function statistics of one traced run, or of the
// sampled runs that share a pairing key.
type StatsGroup struct {
	Runs     []int64
	Commit   string
	Workload string
	Params   string
	Measure  string // what the amounts are, with their unit
	Funcs    []FuncStats
}

// FuncStats is one function's statistics in a group; Spread says whether
// min, max and the quartiles are known (runs stored before the store kept
// them have only count, total and mean).
type FuncStats struct {
	Function, Object string
	Stats            trace.FuncStats
	Spread           bool
	// Wall marks a traced function given by wall durations in a group
	// measured on the CPU (its trace did not measure that time).
	Wall bool
}

// StatsText writes each group as a table, most total time first.
func StatsText(w io.Writer, groups []StatsGroup, top int) error {
	for i, g := range groups {
		if i > 0 {
			fmt.Fprintln(w)
		}
		ids := make([]string, len(g.Runs))
		for k, id := range g.Runs {
			ids[k] = strconv.FormatInt(id, 10)
		}
		noun := "run"
		if len(ids) > 1 {
			noun = "runs"
		}
		fmt.Fprintf(w, "%s %s of %s, workload %s", noun, strings.Join(ids, ", "), shortHash(g.Commit), g.Workload)
		if g.Params != "" {
			fmt.Fprintf(w, ", %s", g.Params)
		}
		fmt.Fprintf(w, ": %s\n", g.Measure)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "COUNT\tSAMPLED\tSAMPLE\tTOTAL\tAVG\tMIN\tQ1\tMEDIAN\tQ3\tMAX\tIQR\t FUNCTION\t")
		for k, f := range g.Funcs {
			if top > 0 && k == top {
				fmt.Fprintf(tw, "\t\t\t\t\t\t\t\t\t\t\t (%d more)\t\n", len(g.Funcs)-top)
				break
			}
			s := f.Stats
			num := func(v float64) string {
				if !f.Spread {
					return "-"
				}
				return strconv.FormatFloat(v, 'f', 0, 64)
			}
			wall := ""
			if f.Wall {
				wall = " (wall)"
			}
			fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t %s (%s)\t\n", s.Count, s.SampledCount, s.Sample, s.Total, s.Avg,
				num(float64(s.Min)), num(s.Q1), num(s.Median), num(s.Q3), num(float64(s.Max)), num(s.IQR), f.Function+wall, f.Object)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// StatsJSON writes the groups with Perun's field names; min, max and the
// quartiles are null when not known.
func StatsJSON(w io.Writer, groups []StatsGroup) error {
	type fn struct {
		Function     string   `json:"function"`
		Object       string   `json:"object"`
		SampledCount uint64   `json:"sampled_count"`
		Sample       uint64   `json:"sample"`
		Count        uint64   `json:"count"`
		Total        uint64   `json:"total"`
		Avg          float64  `json:"avg"`
		Min          *float64 `json:"min"`
		Q1           *float64 `json:"Q1"`
		Median       *float64 `json:"median"`
		Q3           *float64 `json:"Q3"`
		Max          *float64 `json:"max"`
		IQR          *float64 `json:"IQR"`
		Wall         bool     `json:"wall,omitempty"`
	}
	type group struct {
		Runs      []int64 `json:"runs"`
		Commit    string  `json:"commit"`
		Workload  string  `json:"workload"`
		Params    string  `json:"params"`
		Measure   string  `json:"measure"`
		Functions []fn    `json:"functions"`
	}
	out := []group{}
	for _, g := range groups {
		j := group{Runs: g.Runs, Commit: g.Commit, Workload: g.Workload, Params: g.Params, Measure: g.Measure, Functions: []fn{}}
		for _, f := range g.Funcs {
			s := f.Stats
			x := fn{Function: f.Function, Object: f.Object, SampledCount: s.SampledCount, Sample: s.Sample, Count: s.Count, Total: s.Total, Avg: s.Avg, Wall: f.Wall}
			if f.Spread {
				p := func(v float64) *float64 { return &v }
				x.Min, x.Q1, x.Median, x.Q3, x.Max, x.IQR = p(float64(s.Min)), p(s.Q1), p(s.Median), p(s.Q3), p(float64(s.Max)), p(s.IQR)
			}
			j.Functions = append(j.Functions, x)
		}
		out = append(out, j)
	}
	return writeJSON(w, map[string]any{"groups": out})
}
