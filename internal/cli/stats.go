package cli

import (
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/culprit-dev/culprit/internal/analysis/trace"
	"github.com/culprit-dev/culprit/internal/render"
	"github.com/culprit-dev/culprit/internal/store"
)

func newHistoryStats() *cobra.Command {
	var (
		format, fn, output string
		exclusive          bool
		top                int
		timeK              string
	)
	c := &cobra.Command{
		Use:   "stats [ID|@REV[:KEY=VALUE,...]]",
		Short: "Per-function statistics of stored runs: count, mean, quartiles, min, max",
		Long: `Stats prints Perun's per-function statistics of the stored runs of a commit
(default @HEAD): for a traced run (culprit trace, then history add), its
calls' durations; for sampled runs, each function's self CPU time across
the runs that share a workload and parameters.

Fields, as Perun's Dynamic Stats: sampled_count (calls recorded), sample
(every N-th call traced), count (calls made, sampled_count +
(sampled_count − 1)·(sample − 1)), total, min, max, avg, median, Q1, Q3 and
IQR = Q3 − Q1 (quartiles by linear interpolation). Traced times are
inclusive, as Perun's are; --exclusive leaves out the traced callees' time.
They are each call's time on the CPU, without the time its thread was
preempted, blocked or asleep, where the trace measured it (--time wall:
durations, Perun's measure); the first line of each run says which.`,
		Example: `  culprit history stats
  culprit history stats @v1.2:workload=parse --func '^xml' --format json
  culprit history stats 12 --exclusive`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("stats takes at most one run: an id, or @REV")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if format != "text" && format != "json" {
				return usagef("unknown format %q: use text or json", format)
			}
			if timeK != "cpu" && timeK != "wall" {
				return usagef("--time %q: use cpu or wall", timeK)
			}
			var re *regexp.Regexp
			if fn != "" {
				var err error
				if re, err = regexp.Compile(fn); err != nil {
					return usagef("--func %q: %v", fn, err)
				}
			}
			ref := "@HEAD"
			if len(args) == 1 {
				ref = args[0]
				if _, err := strconv.ParseInt(ref, 10, 64); err != nil && !strings.HasPrefix(ref, "@") {
					ref = "@" + ref
				}
			}
			st, err := openStore()
			if err != nil {
				return err
			}
			defer st.Close()
			runs, err := storedRuns(st, ref)
			if err != nil {
				return err
			}
			groups, err := runStats(st, runs, exclusive, timeK == "cpu", re, c.ErrOrStderr())
			if err != nil {
				return err
			}
			return writeOutput(c.OutOrStdout(), output, func(w io.Writer) error {
				if format == "json" {
					return render.StatsJSON(w, groups)
				}
				return render.StatsText(w, groups, top)
			})
		},
	}
	f := c.Flags()
	f.BoolVar(&exclusive, "exclusive", false, "traced runs: times without the traced callees' time")
	f.StringVar(&timeK, "time", "cpu", "traced runs: each call's time on the CPU (cpu; wall time where the trace did not measure it) or its wall duration (wall)")
	f.StringVar(&fn, "func", "", "only functions whose names match this regular expression")
	f.IntVar(&top, "top", 20, "functions to print per run in text output, most total time first (0: all)")
	f.StringVar(&format, "format", "text", "output format: text or json")
	f.StringVarP(&output, "output", "o", "-", "file to write (- for standard output)")
	f.SortFlags = false
	return c
}

// runStats computes the statistics of runs: one group per traced run, one
// per pairing key of the sampled runs. A traced run's are computed from its
// recording, by the calls' time on the CPU with cpu where it was measured;
// from the statistics stored with the run (wall durations) when the
// recording cannot be read.
func runStats(st *store.Store, runs []store.Run, exclusive, cpu bool, re *regexp.Regexp, stderr io.Writer) ([]render.StatsGroup, error) {
	sort.Slice(runs, func(i, j int) bool { return runs[i].ID < runs[j].ID })
	var groups []render.StatsGroup
	sampled := map[string][]store.Run{}
	var keys []string
	for _, r := range runs {
		traced, err := st.TracedCalls(r.ID)
		if err != nil {
			return nil, err
		}
		if len(traced) == 0 {
			k := r.PairKey()
			if sampled[k] == nil {
				keys = append(keys, k)
			}
			sampled[k] = append(sampled[k], r)
			continue
		}
		g := render.StatsGroup{Runs: []int64{r.ID}, Commit: r.Commit, Workload: r.Workload, Params: store.ParamString(r.Params)}
		kind := "inclusive"
		if exclusive {
			kind = "exclusive"
		}
		fs, err := tracedStats(st, r, exclusive, cpu, re)
		if err == nil {
			g.Funcs = fs
			g.Measure = kind + " duration per call, ns"
			if cpu {
				g.Measure = kind + " time on the CPU per call, ns"
				for _, f := range fs {
					if f.Wall {
						g.Measure += "; (wall): wall duration, its time on the CPU was not measured"
						break
					}
				}
			}
			groups = append(groups, g)
			continue
		}
		warnf(stderr, "run %d: %v; its stored statistics are wall durations", r.ID, err)
		g.Measure = kind + " duration per call, ns"
		for _, t := range traced {
			if re != nil && !re.MatchString(t.Name) {
				continue
			}
			s := trace.FuncStats{SampledCount: uint64(t.Calls), Sample: uint64(max(t.Sample, 1)), Count: uint64(t.Estimated),
				Total: uint64(t.InclTotal), Avg: t.InclMean}
			sp := t.InclSpread
			if exclusive {
				s.Total, s.Avg, sp = uint64(t.ExclTotal), t.ExclMean, t.ExclSpread
			}
			if sp.Known {
				s.Min, s.Max, s.Q1, s.Median, s.Q3 = uint64(sp.Min), uint64(sp.Max), sp.Q1, sp.Median, sp.Q3
				s.IQR = s.Q3 - s.Q1
			}
			g.Funcs = append(g.Funcs, render.FuncStats{Function: t.Name, Object: t.Object, Stats: s, Spread: sp.Known})
		}
		groups = append(groups, g)
	}
	for _, k := range keys {
		rs := sampled[k]
		g := render.StatsGroup{Commit: rs[0].Commit, Workload: rs[0].Workload, Params: store.ParamString(store.InputParams(rs[0].Params)),
			Measure: "self CPU time per run, ns"}
		values := map[string][]uint64{}
		objs := map[string]string{}
		for i, r := range rs {
			g.Runs = append(g.Runs, r.ID)
			funcs, err := st.Functions(r.ID)
			if err != nil {
				return nil, err
			}
			for _, f := range funcs {
				if re != nil && !re.MatchString(f.Name) {
					continue
				}
				v := values[f.Name]
				for len(v) < i {
					v = append(v, 0) // not sampled in that run
				}
				values[f.Name] = append(v, uint64(max(f.SelfNS, 0)))
				objs[f.Name] = f.Object
			}
		}
		for name, v := range values {
			for len(v) < len(rs) {
				v = append(v, 0)
			}
			g.Funcs = append(g.Funcs, render.FuncStats{Function: name, Object: objs[name], Stats: trace.Stats(v, 1), Spread: true})
		}
		sort.Slice(g.Funcs, func(i, j int) bool {
			if g.Funcs[i].Stats.Total != g.Funcs[j].Stats.Total {
				return g.Funcs[i].Stats.Total > g.Funcs[j].Stats.Total
			}
			return g.Funcs[i].Function < g.Funcs[j].Function
		})
		groups = append(groups, g)
	}
	if len(groups) == 0 {
		return nil, fmt.Errorf("no stored runs to summarise")
	}
	return groups, nil
}

// tracedStats computes a stored traced run's Dynamic Stats from its
// recording: by the calls' time on the CPU with cpu (a function whose
// trace did not measure it for every returned call by wall durations,
// marked Wall), else by wall durations; the most total time first.
func tracedStats(st *store.Store, r store.Run, exclusive, cpu bool, re *regexp.Regexp) ([]render.FuncStats, error) {
	path, err := st.RecordingPath(r.Recording)
	if err != nil {
		return nil, err
	}
	p, err := loadProfile([]string{path}, io.Discard, false)
	if err != nil {
		return nil, err
	}
	fs := trace.Functions(p, false)
	if cpu {
		fs = trace.FunctionsCPU(p, false)
	}
	var out []render.FuncStats
	for _, f := range fs {
		if re != nil && !re.MatchString(f.Name) {
			continue
		}
		d := f.Incl
		if exclusive {
			d = f.Excl
		}
		s := trace.FuncStats{SampledCount: uint64(f.Calls), Sample: uint64(max(f.Every, 1)), Count: f.Estimated,
			Total: d.Total, Avg: d.Mean, Min: d.Min, Max: d.Max, Q1: d.Q1, Median: d.Median, Q3: d.Q3, IQR: d.Q3 - d.Q1}
		out = append(out, render.FuncStats{Function: f.Name, Object: f.Object, Stats: s, Spread: true, Wall: cpu && !f.OnCPU})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Stats.Total != out[j].Stats.Total {
			return out[i].Stats.Total > out[j].Stats.Total
		}
		return out[i].Function < out[j].Function
	})
	return out, nil
}
