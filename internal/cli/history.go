package cli

import (
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/culprit-dev/culprit/internal/analysis/exprs"
	"github.com/culprit-dev/culprit/internal/analysis/trace"
	"github.com/culprit-dev/culprit/internal/loader"
	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/render"
	"github.com/culprit-dev/culprit/internal/store"
	"github.com/culprit-dev/culprit/internal/symbol"
)

func newHistory() *cobra.Command {
	c := &cobra.Command{
		Use:   "history",
		Short: "Keep recordings per git commit: add, list, show, stats, rm, gc",
		Long: `History keeps recordings as runs of git commits, so that models and check can
compare versions and every command reads a stored run as @REV
(culprit report @HEAD~3, culprit diff @v1.2 @HEAD).

Most common uses:
  culprit run --param n=1000 -- ./prog 1000   record and store in one step
  culprit history list                        the stored runs, newest first
  culprit history add --param n=1000 culprit.rec

The store is .culprit/ at the repository's root (SQLite), or a shared
PostgreSQL database: --store postgres://... or CULPRIT_STORE. Runs, pairing
and the store in detail: docs/history.md.`,
		Example: `  culprit history add --param n=1000 culprit.rec
  culprit history list
  culprit history show 3
  culprit history stats @HEAD --func '^parse'
  culprit history rm @HEAD~5 && culprit history gc`,
	}
	c.AddCommand(newHistoryAdd(), newHistoryList(), newHistoryShow(), newHistoryStats(), newHistoryRm(), newHistoryGC())
	return c
}

// parseParams reads KEY=VALUE words.
func parseParams(kvs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.ContainsAny(k, " ,:") {
			return nil, usagef("--param %q: want KEY=VALUE, e.g. --param n=1000", kv)
		}
		out[k] = v
	}
	return out, nil
}

// collectorConfig is what of a recording's collector options decides
// whether two runs are comparable.
func collectorConfig(p *profile.Profile) string {
	if len(p.Metas) == 0 {
		return ""
	}
	m := p.Metas[0]
	cfg := fmt.Sprintf("event=%s freq=%d call-graph=%s", m.Event, m.Frequency, m.CallGraph)
	if c := m.Extra["collector"]; c != "" {
		cfg = "collector=" + c + " " + cfg
	}
	if len(p.Calls) > 0 {
		// Traced runs are compared by their calls, and the probes'
		// overhead is in their sampled time: they pair with traced runs.
		cfg = "traced " + cfg
	}
	return cfg
}

func spread(d trace.Dist) store.Spread {
	return store.Spread{Known: true, Min: float64(d.Min), Q1: d.Q1, Median: d.Median, Q3: d.Q3, Max: float64(d.Max)}
}

// addRecording reads a recording, computes each function's self and total
// CPU time (its share of the samples times the run's sampled CPU time; kernel
// time charged to the user code that was running, as Perun's tracer measures
// a function's time including the system calls, faults and preemptions in
// it: kernel scheduling and interrupt paths otherwise grow with any longer
// run and read as changes of their own), keeps
// copies of the sampled objects in the archive (so stored runs still name
// their functions after a rebuild) and stores the run.
func addRecording(st *store.Store, path string, r *store.Run, stderr io.Writer) error {
	p, err := loadProfile([]string{path}, stderr, false)
	if err != nil {
		return err
	}
	q := p.Apply(profile.Filter{Kernel: profile.KernelExclude})
	if len(q.Samples) == 0 && len(p.Calls) == 0 {
		return fmt.Errorf("%s has no CPU-time samples and no traced calls: nothing to store", path)
	}
	// Traced calls (culprit trace): each function's call statistics, Perun's
	// Dynamic Stats.
	var traced []store.Traced
	if len(p.Calls) > 0 {
		for _, f := range trace.Functions(p, false) {
			traced = append(traced, store.Traced{Name: f.Name, Object: f.Object, Calls: int64(f.Calls), Estimated: int64(f.Estimated),
				InclTotal: int64(f.Incl.Total), InclMean: f.Incl.Mean, InclP50: int64(f.Incl.P50), InclP99: int64(f.Incl.P99),
				InclMax: int64(f.Incl.Max), ExclTotal: int64(f.Excl.Total), ExclMean: f.Excl.Mean, Sample: int64(max(f.Every, 1)),
				InclSpread: spread(f.Incl), ExclSpread: spread(f.Excl)})
		}
	}
	var cpu uint64
	for _, s := range q.Samples {
		cpu += s.Period
	}
	mean := 0.0
	if len(q.Samples) > 0 {
		mean = float64(cpu) / float64(len(q.Samples))
	}
	var funcs []store.Func
	for _, row := range q.Flat(profile.ByFunction).Rows {
		funcs = append(funcs, store.Func{Name: row.Name, Object: row.Object, Self: int64(row.Self), Total: int64(row.Total),
			SelfNS: int64(float64(row.Self)*mean + 0.5), TotalNS: int64(float64(row.Total)*mean + 0.5)})
	}
	r.Samples, r.CPU = int64(len(q.Samples)), int64(cpu)
	r.Config = collectorConfig(p)
	if len(p.Metas) > 0 {
		r.Command = p.Metas[0].Command
	}
	if r.Workload == "" {
		r.Workload = "attached"
		if len(r.Command) > 0 {
			r.Workload = filepath.Base(r.Command[0])
		}
	}
	// Sampled expressions (--expr) become parameters "expr:EXPR" with their
	// time-weighted mean over the run: Perun's structure size, an x for
	// models and check (never part of the pairing key).
	for _, sm := range exprs.Summarize(q, exprs.Options{}) {
		if sm.Class != "expression" || sm.Count == 0 {
			continue
		}
		if r.Params == nil {
			r.Params = map[string]string{}
		}
		r.Params[store.ExprParam+sm.Expr] = strconv.FormatFloat(sm.Mean, 'g', 6, 64)
	}
	if dir := symbol.ArchiveDir(); dir != "" {
		if objs, err := loader.RecordedObjects([]string{path}); err == nil {
			for _, o := range objs {
				_, _ = symbol.Archive(dir, o.Path, o.BuildID) // best effort: a missing library is not this run's problem
			}
		}
	}
	return st.Add(r, path, funcs, traced)
}

func newHistoryAdd() *cobra.Command {
	var (
		commit   string
		workload string
		params   []string
	)
	c := &cobra.Command{
		Use:   "add [--commit REV] [--workload NAME] [--param KEY=VALUE]... FILE...",
		Short: "Store recordings as runs of a commit",
		Long: `Add stores recordings as runs of a commit (default HEAD of the working tree;
marked dirty when tracked files have uncommitted changes), with per-function
statistics computed now, while the recorded binaries still exist.`,
		Example: `  culprit history add --param n=1000 culprit.rec
  culprit history add --commit v1.2 --workload parse big.rec`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("add takes one or more recording files")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			ps, err := parseParams(params)
			if err != nil {
				return err
			}
			rev := commit
			if rev == "" {
				rev = "HEAD"
			}
			hash, when, err := commitOf(rev)
			if err != nil {
				return err
			}
			dirty := false
			if commit == "" {
				files, err := dirtyFiles()
				if err != nil {
					return err
				}
				dirty = len(files) > 0
			}
			st, err := openStore()
			if err != nil {
				return err
			}
			defer st.Close()
			for _, path := range args {
				r := store.Run{Commit: hash, CommitTime: when, Dirty: dirty, Workload: workload, Params: ps}
				if err := addRecording(st, path, &r, c.ErrOrStderr()); err != nil {
					return err
				}
				fmt.Fprintf(c.OutOrStdout(), "run %d: %s at %s\n", r.ID, path, hash[:12])
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&commit, "commit", "", "the commit the recordings were made on (default HEAD)")
	f.StringVar(&workload, "workload", "", "workload name (default the recorded program's base name)")
	f.StringArrayVar(&params, "param", nil, "a parameter of the run, KEY=VALUE (e.g. n=1000, the input size); repeatable")
	return c
}

func newHistoryList() *cobra.Command {
	var (
		format, sortBy string
		top            int
	)
	c := &cobra.Command{
		Use:   "list [REV...]",
		Short: "List stored runs, newest commit first",
		Example: `  culprit history list                        every run, newest commit first
  culprit history list HEAD HEAD~1            the runs of two commits
  culprit history list --sort size --top 10   the ten largest recordings`,
		RunE: func(c *cobra.Command, args []string) error {
			if format != "text" && format != "json" {
				return usagef("unknown format %q: use text or json", format)
			}
			if sortBy != "commit" && sortBy != "size" {
				return usagef("unknown --sort %q: use commit or size", sortBy)
			}
			if top < 0 {
				return usagef("--top %d: give a count of runs, or 0 for all", top)
			}
			var commits []string
			for _, a := range args {
				h, _, err := commitOf(strings.TrimPrefix(a, "@"))
				if err != nil {
					return err
				}
				commits = append(commits, h)
			}
			st, err := openStore()
			if err != nil {
				return err
			}
			defer st.Close()
			runs, err := st.Runs(commits...)
			if err != nil {
				return err
			}
			if sortBy == "size" {
				sort.SliceStable(runs, func(i, j int) bool { return runs[i].Size > runs[j].Size })
			}
			if top > 0 && len(runs) > top {
				runs = runs[:top]
			}
			if format == "json" {
				return render.HistoryJSON(c.OutOrStdout(), runs)
			}
			if len(runs) == 0 {
				fmt.Fprintf(c.ErrOrStderr(), "culprit: no runs stored in %s (culprit run -- CMD records and stores one)\n", st.Where())
				return nil
			}
			return render.HistoryText(c.OutOrStdout(), runs)
		},
	}
	c.Flags().StringVar(&format, "format", "text", "output format: text or json")
	c.Flags().StringVar(&sortBy, "sort", "commit", "order: commit (newest first) or size (largest recording first)")
	c.Flags().IntVar(&top, "top", 0, "list only the first N runs (0: all)")
	return c
}

// storedRuns resolves run references: a run id, or @REV[:KEY=VALUE,...] for
// the runs of a commit (with those parameters; the key workload selects the
// workload).
func storedRuns(st *store.Store, ref string) ([]store.Run, error) {
	if id, err := strconv.ParseInt(ref, 10, 64); err == nil {
		r, err := st.Get(id)
		if err != nil {
			return nil, err
		}
		return []store.Run{r}, nil
	}
	if !strings.HasPrefix(ref, "@") {
		return nil, usagef("%q: give a run id (culprit history list) or @REV", ref)
	}
	rev, sel, _ := strings.Cut(ref[1:], ":")
	want := map[string]string{}
	if sel != "" {
		for _, kv := range strings.Split(sel, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, usagef("%q: select runs with @REV:KEY=VALUE[,KEY=VALUE] (a parameter, or workload=NAME)", ref)
			}
			want[k] = v
		}
	}
	hash, _, err := commitOf(rev)
	if err != nil {
		return nil, err
	}
	runs, err := st.Runs(hash)
	if err != nil {
		return nil, err
	}
	var out []store.Run
	for _, r := range runs {
		ok := true
		for k, v := range want {
			if k == "workload" {
				ok = ok && r.Workload == v
			} else {
				ok = ok && r.Params[k] == v
			}
		}
		if ok {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		if len(runs) == 0 {
			return nil, fmt.Errorf("no runs of %s (%s) in %s: culprit run -- CMD on that commit stores one", rev, hash[:12], st.Where())
		}
		return nil, fmt.Errorf("none of the %d runs of %s (%s) has %s", len(runs), rev, hash[:12], sel)
	}
	return out, nil
}

func newHistoryShow() *cobra.Command {
	var (
		format string
		top    int
	)
	c := &cobra.Command{
		Use:   "show ID|@REV",
		Short: "Show a stored run and its busiest functions",
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("show takes one run: an id from culprit history list, or @REV")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if format != "text" && format != "json" {
				return usagef("unknown format %q: use text or json", format)
			}
			st, err := openStore()
			if err != nil {
				return err
			}
			defer st.Close()
			runs, err := storedRuns(st, args[0])
			if err != nil {
				return err
			}
			w := c.OutOrStdout()
			for i, r := range runs {
				funcs, err := st.Functions(r.ID)
				if err != nil {
					return err
				}
				traced, err := st.TracedCalls(r.ID)
				if err != nil {
					return err
				}
				if format == "json" {
					if err := render.RunJSON(w, r, funcs, traced); err != nil {
						return err
					}
					continue
				}
				if i > 0 {
					fmt.Fprintln(w)
				}
				if err := render.RunText(w, r, funcs, traced, top); err != nil {
					return err
				}
			}
			return nil
		},
	}
	c.Flags().StringVar(&format, "format", "text", "output format: text or json (one document per run)")
	c.Flags().IntVar(&top, "top", 20, "functions to print in text output (0: all)")
	return c
}

func newHistoryRm() *cobra.Command {
	var all bool
	c := &cobra.Command{
		Use:   "rm ID|@REV...",
		Short: "Remove stored runs (their recordings go at the next gc)",
		Example: `  culprit history rm 12 13             two runs by id
  culprit history rm @HEAD~5           every run of a commit
  culprit history rm @HEAD:n=9000      the runs of a commit with a parameter
  culprit history rm --all && culprit history gc   empty the store`,
		Args: func(c *cobra.Command, args []string) error {
			if all && len(args) > 0 {
				return usagef("rm takes run ids or @REV, or --all, not both")
			}
			if !all && len(args) == 0 {
				return usagef("rm takes run ids or @REV (or --all for every run)")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			st, err := openStore()
			if err != nil {
				return err
			}
			defer st.Close()
			var ids []int64
			if all {
				runs, err := st.Runs()
				if err != nil {
					return err
				}
				for _, r := range runs {
					ids = append(ids, r.ID)
				}
			}
			for _, a := range args {
				runs, err := storedRuns(st, a)
				if err != nil {
					return err
				}
				for _, r := range runs {
					ids = append(ids, r.ID)
				}
			}
			n, err := st.Remove(ids)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "removed %d runs\n", n)
			return nil
		},
	}
	c.Flags().BoolVar(&all, "all", false, "remove every stored run")
	return c
}

func newHistoryGC() *cobra.Command {
	return &cobra.Command{
		Use:   "gc",
		Short: "Delete stored recordings no run refers to",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			st, err := openStore()
			if err != nil {
				return err
			}
			defer st.Close()
			n, b, err := st.GC()
			if err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "deleted %d recordings", n)
			if b > 0 {
				fmt.Fprintf(c.OutOrStdout(), " (%s)", humanBytes(b))
			}
			fmt.Fprintln(c.OutOrStdout())
			return nil
		},
	}
}

// runFile resolves a stored-run reference (@REV...) to its recording file,
// warning when the reference names several runs (the newest is used).
func runFile(ref string, stderr io.Writer) (string, error) {
	st, err := openStore()
	if err != nil {
		return "", err
	}
	defer st.Close()
	runs, err := storedRuns(st, ref)
	if err != nil {
		return "", err
	}
	r := runs[0]
	for _, x := range runs[1:] {
		if x.Added.After(r.Added) {
			r = x
		}
	}
	if len(runs) > 1 {
		warnf(stderr, "%s names %d runs; using run %d (%s %s): select one with %s:KEY=VALUE", ref, len(runs), r.ID, r.Workload, store.ParamString(r.Params), strings.SplitN(ref, ":", 2)[0])
	}
	return st.RecordingPath(r.Recording)
}
