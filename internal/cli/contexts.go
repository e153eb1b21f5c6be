package cli

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/culprit-dev/culprit/internal/analysis/introperf"
	"github.com/culprit-dev/culprit/internal/loader"
	"github.com/culprit-dev/culprit/internal/profile"
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
		leaves    string
		cost      string
		mean      bool
	)
	c := &cobra.Command{
		Use:   "contexts --base FILE --buggy FILE [flags]",
		Short: "Rank the calling contexts whose latency grew between a base run and a buggy run",
		Long: `Contexts compares a base run and a slow (buggy) run, both recorded with
culprit record --events cpu,syscalls,sched, and ranks the calling contexts whose
latency grew most, naming the root-cause candidate and its layer (IntroPerf).

Most common uses:
  culprit contexts --base base.rec --buggy slow.rec                the ranked paths
  culprit contexts --base base.rec --buggy slow.rec --format html -o heat.html
  culprit contexts --base base.rec --buggy slow.rec --format json

The ranking, step by step: docs/cli.md (culprit contexts), docs/introperf.md.`,
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
			// The inference goes through the samples in time order: they
			// are read again from the recordings rather than held.
			pb, err := loadProfileWith([]string{base}, stderr, loader.Options{Stream: true})
			if err != nil {
				return err
			}
			pg, err := loadProfileWith([]string{buggy}, stderr, loader.Options{Stream: true})
			if err != nil {
				return err
			}
			likeB, likeG := likeWithLike(stderr, pb, pg, base, buggy)
			_, rb, err := analyzeRun(pb, []string{base}, stderr, flt, set, introperf.Options{Funcs: funcs, Like: likeB})
			if err != nil {
				return err
			}
			_, rg, err := analyzeRun(pg, []string{buggy}, stderr, flt, set, introperf.Options{Funcs: funcs, Like: likeG})
			if err != nil {
				return err
			}
			if match != "context" && match != "leaf" {
				return usagef("unknown --match %q: use context or leaf", match)
			}
			if leaves != "user" && leaves != "all" {
				return usagef("unknown --leaves %q: use user or all", leaves)
			}
			if mean && totals {
				return usagef("--mean and --totals are two rankings: give one (neither: totals scaled to the base run's length)")
			}
			if cost != "growth" && cost != "net" {
				return usagef("unknown --cost %q: use growth or net", cost)
			}
			ro := introperf.RankOptions{Mode: m, Inclusive: inclusive, Totals: totals, Scaled: !mean && !totals,
				Top: top, LeafMatch: match == "leaf", Idle: idle, AllLeaves: leaves == "all", Net: cost == "net"}
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
	f.StringVar(&mode, "mode", introperf.RankMode.String(), "latency estimate: aggressive (to the event that broke the context) or conservative (first to last event with the context)")
	f.StringVar(&format, "format", "text", "output format: text, json, dot or html")
	f.StringVarP(&output, "output", "o", "-", "file to write (- for standard output)")
	f.BoolVar(&inclusive, "inclusive", false, "rank by raw (inclusive) latencies instead of normalised own time")
	f.BoolVar(&totals, "totals", false, "rank by total latency over all instances, unscaled")
	f.BoolVar(&mean, "mean", false, "rank by the mean latency per instance (the paper's)")
	f.StringVar(&match, "match", "context", "how a buggy frame finds its base latency: context (the base's node of the same calling context, wherever its path ends) or leaf (the paper's: only when the whole path is a root-to-leaf path of the base)")
	f.StringVar(&cost, "cost", "growth", "a path's cost: growth (the sum of its frames' increases; a frame whose latency fell counts 0) or net (the sum of their changes, the paper's)")
	f.StringVar(&leaves, "leaves", "user", "which paths to list: user (the costliest of the paths that differ only in kernel frames) or all (every root-to-leaf path, the paper's)")
	f.BoolVar(&idle, "idle", false, "count time spent waiting for outside events (poll, epoll, select, accept, sleeps) and a parked thread's waits as latency")
	f.StringVar(&events, "events", "cpu,syscalls,sched", "events whose stacks are used: cpu, syscalls, sched")
	f.StringVar(&ff.kernel, "kernel", "include", "kernel frames: include, exclude (merge contexts that differ only in the kernel) or only")
	ff.registerHide(f, "contexts")
	f.SortFlags = false
	return c
}

// likeWithLike returns, for a base and a buggy run, the windows each is to
// be thinned to (introperf.Options.Like): the other's. Where one was
// recorded in windows whose times its recording does not hold, and the
// other otherwise, it says that their system calls are not compared alike.
func likeWithLike(stderr io.Writer, base, buggy *profile.Profile, baseName, buggyName string) (forBase, forBuggy *introperf.Regime) {
	gb, gg := introperf.RegimeOf(base), introperf.RegimeOf(buggy)
	for _, u := range []struct {
		g, o        *introperf.Regime
		name, other string
	}{{&gb, &gg, baseName, buggyName}, {&gg, &gb, buggyName, baseName}} {
		if u.g.Unknown && !u.o.Unknown {
			warnf(stderr, "%s: its system calls were recorded in windows whose times it does not hold (recorded by an older culprit): %s cannot be thinned to them, and the two runs' system calls are not compared alike", u.name, u.other)
		}
	}
	return &gg, &gb
}
