package cli

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/culprit-dev/culprit/internal/analysis/introperf"
	"github.com/culprit-dev/culprit/internal/render"
)

func newContexts() *cobra.Command {
	var (
		ff        filterFlags
		base      string
		buggy     string
		top       int
		mode      string
		format    string
		output    string
		events    string
		inclusive bool
		totals    bool
		match     string
		idle      bool
		mean      bool
	)
	c := &cobra.Command{
		Use:   "contexts --base FILE --buggy FILE [flags]",
		Short: "Rank the calling contexts whose latency grew between a base run and a buggy run",
		Long: `Contexts compares two recordings of the same program made with
culprit record --events cpu,syscalls,sched: a base run on an input that
behaves well (often a smaller one) and a buggy run on the input that is slow.
It finds the calling contexts, in every layer (main program, libraries,
dlopen'ed plug-ins, kernel), whose latency grew most (IntroPerf):

 1. Each run's stacks are indexed into a calling context tree (one node per
    function per calling context) and its function latencies are inferred
    from the continuity of the stacks, as culprit latency does.
 2. The tree is annotated with instance counts and mean latencies and
    normalised top-down: each node keeps its total latency minus its
    children's totals, so a caller does not count its callees again and own
    time is never negative (--inclusive ranks raw latencies instead).
 3. Every root-to-leaf path of the buggy run gets the cost
    Σ (buggy latency − base latency) over its frames, each frame compared
    with the base's node of the same calling context (0 where the base has
    none; --match leaf: the paper's rule, only whole root-to-leaf paths of
    the base match), and paths are ranked by cost, highest first. Latency
    is each context's total own time, the buggy run's scaled to the base
    run's length (--mean: the paper's mean per instance; --totals: unscaled).
    Time blocked waiting for outside events (poll, epoll, select, accept,
    sleeps) counts 0: an idle event loop is not growth (--idle counts it).

For each ranked path it shows the frames, outermost first, with their mean
latency per instance in both runs, their rank inside the path, their distance
from the hottest frame (0; callers are negative), and the root-cause
candidate (the frame whose latency grew most) with its binary and whether it
is the main program, a library, a plug-in (an object mapped after the
program started running) or the kernel. The patch is often a caller a few
frames above the hottest frame: read the neighbours too.

  text  the ranked paths
  json  paths ordered by rank with rank, cost and frames (docs/report-json.md)
  dot   both runs' calling context trees overlaid (Graphviz: dot -Tsvg)
  html  a self-contained heat map of the top paths, one row per path,
        latency in log-scale colour`,
		Example: `  culprit record --events cpu,syscalls,sched -o base.rec -- ./app small.in
  culprit record --events cpu,syscalls,sched -o slow.rec -- ./app big.in
  culprit contexts --base base.rec --buggy slow.rec
  culprit contexts --base base.rec --buggy slow.rec --format html -o heat.html
  culprit contexts --base base.rec --buggy slow.rec --format dot -o cct.dot && dot -Tsvg cct.dot > cct.svg`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if base == "" || buggy == "" {
				return usagef("give both recordings: --base FILE (a run that behaves well) and --buggy FILE (the slow run)")
			}
			m, err := introperf.ParseMode(mode)
			if err != nil {
				return usageError{err}
			}
			switch format {
			case "text", "json", "dot", "html":
			default:
				return usagef("unknown format %q: use text, json, dot or html", format)
			}
			if top < 0 {
				return usagef("--top takes a positive number")
			}
			set, err := introperf.ParseEvents(events)
			if err != nil {
				return usageError{err}
			}
			flt, err := ff.filter()
			if err != nil {
				return err
			}
			funcs := introperf.NewFuncTable()
			stderr := c.ErrOrStderr()
			_, rb, err := loadRun(base, stderr, flt, set, introperf.Options{Funcs: funcs})
			if err != nil {
				return err
			}
			_, rg, err := loadRun(buggy, stderr, flt, set, introperf.Options{Funcs: funcs})
			if err != nil {
				return err
			}
			if match != "context" && match != "leaf" {
				return usagef("unknown --match %q: use context or leaf", match)
			}
			if mean && totals {
				return usagef("--mean and --totals are two rankings: give one (neither: totals scaled to the base run's length)")
			}
			ro := introperf.RankOptions{Mode: m, Inclusive: inclusive, Totals: totals, Scaled: !mean && !totals,
				Top: top, LeafMatch: match == "leaf", Idle: idle}
			cmp := introperf.Comparison{Base: rb, Buggy: rg, BaseName: base, BuggyName: buggy,
				Options: ro, Paths: introperf.Rank(rb, rg, ro)}
			return writeOutput(c.OutOrStdout(), output, func(w io.Writer) error {
				switch format {
				case "json":
					return render.ContextsJSON(w, cmp)
				case "dot":
					return render.ContextsDOT(w, cmp)
				case "html":
					return render.ContextsHTML(w, cmp)
				}
				return render.ContextsText(w, cmp)
			})
		},
	}
	f := c.Flags()
	f.StringVar(&base, "base", "", "recording of a run that behaves well (required)")
	f.StringVar(&buggy, "buggy", "", "recording of the slow run (required)")
	f.IntVar(&top, "top", 10, "paths to show (0: all)")
	f.StringVar(&mode, "mode", "conservative", "latency estimate: conservative or aggressive")
	f.StringVar(&format, "format", "text", "output format: text, json, dot or html")
	f.StringVarP(&output, "output", "o", "-", "file to write (- for standard output)")
	f.BoolVar(&inclusive, "inclusive", false, "rank by raw (inclusive) latencies instead of normalised own time")
	f.BoolVar(&totals, "totals", false, "rank by total latency over all instances, unscaled")
	f.BoolVar(&mean, "mean", false, "rank by the mean latency per instance (the paper's)")
	f.StringVar(&match, "match", "context", "how a buggy frame finds its base latency: context (the base's node of the same calling context, wherever its path ends) or leaf (the paper's: only when the whole path is a root-to-leaf path of the base)")
	f.BoolVar(&idle, "idle", false, "count time spent waiting for outside events (poll, epoll, select, accept, sleeps) as latency")
	f.StringVar(&events, "events", "cpu,syscalls,sched", "events whose stacks are used: cpu, syscalls, sched")
	f.StringVar(&ff.kernel, "kernel", "include", "kernel frames: include, exclude (merge contexts that differ only in the kernel) or only")
	ff.registerHide(f, "contexts")
	f.SortFlags = false
	return c
}
