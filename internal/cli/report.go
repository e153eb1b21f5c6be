package cli

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/culprit-dev/culprit/internal/analysis/exprs"
	"github.com/culprit-dev/culprit/internal/analysis/trace"
	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/render"
)

func newReport() *cobra.Command {
	var (
		ff      filterFlags
		by      string
		callers int
		format  string
		top     int
		exprsOn bool
		stat    string
		list    string
		srcPath string
		peek    string
		asm     bool
		tree    bool
		minPct  float64
		calls   string
	)
	c := &cobra.Command{
		Use:   "report [flags] [FILE...]",
		Short: "Show where the recorded time went",
		Long: `Report prints where the CPU time of recordings (default culprit.rec) went:
a flat profile with ±2σ errors, calling contexts, source lines, a call tree;
on a trace of function calls, each function's calls and durations.

Most common uses:
  culprit report                   each function's self and total share
  culprit report --callers 3       calling contexts of 3 frames, leaf first
  culprit report --list '^main$'   main's source lines with the time at each

Views, selections and filters in detail: docs/cli.md (culprit report).`,
		Example: `  culprit report
  culprit report --by line --top 20
  culprit report --by process
  culprit report --comm make --callers 4
  culprit report --list worker
  culprit report --list '^worker$' --asm
  culprit report --list 'parse_.*' --source-path ~/src/app
  culprit report --peek '^malloc$'
  culprit report --tree --min-share 2
  culprit report --focus 'parse_.*' --hide '^(malloc|free)$' --callers 4
  culprit report --callers 3 run1.rec run2.rec
  culprit report --calls '^parse$' --top 10   # a trace: the slowest calls
  culprit report --kernel exclude --from 1s --to 2s --format json`,
		RunE: func(c *cobra.Command, args []string) error {
			byCaller := by == "caller"
			if byCaller || calls != "" {
				return reportTrace(c, ff, args, format, calls, byCaller, top)
			}
			g, err := groupingAndFormat(by, format)
			if err != nil {
				return err
			}
			if callers < 0 || top < 0 {
				return usagef("--callers and --top take a positive number")
			}
			var listRE, peekRE *regexp.Regexp
			for _, x := range []struct {
				flag, val string
				re        **regexp.Regexp
			}{{"list", list, &listRE}, {"peek", peek, &peekRE}} {
				if x.val == "" {
					continue
				}
				if *x.re, err = regexp.Compile(x.val); err != nil {
					return usagef("--%s %q: %v", x.flag, x.val, err)
				}
				if callers > 0 || exprsOn || c.Flags().Changed("by") || list != "" && peek != "" {
					return usagef("--%s looks at functions: it does not combine with --by, --callers, --exprs or the other of --list and --peek", x.flag)
				}
			}
			if tree && (callers > 0 || exprsOn || list != "" || peek != "" || c.Flags().Changed("by")) {
				return usagef("--tree shows functions top-down: it does not combine with --by, --callers, --exprs, --list or --peek")
			}
			if minPct < 0 || minPct > 100 {
				return usagef("--min-share takes a percentage from 0 to 100")
			}
			if asm && list == "" {
				return usagef("--asm annotates the machine code of the functions --list names: give --list REGEX")
			}
			if callers > 0 && !g.PerFrame() {
				return usagef("--by %s gives a flat profile: for the calling contexts of one process or thread, select it with --pid, --tid or --comm", g)
			}
			p, err := ff.load(args, c.ErrOrStderr(), !exprsOn)
			if err != nil {
				return err
			}
			out := c.OutOrStdout()
			if len(p.Probes) > 0 {
				// A trace: its calls, unless a view of CPU samples is asked
				// for, which reads the samples the trace took beside its
				// probes.
				if !(tree || listRE != nil || peekRE != nil || callers > 0 || exprsOn || c.Flags().Changed("by")) {
					return traceView(c, p, format, "", false, top)
				}
				if len(p.Samples) == 0 {
					return usagef("this is a trace of function calls (culprit trace) without CPU samples (--cpu-sample 0): report shows its functions, --by caller, or --calls REGEX; --tree, --list, --peek, --callers, --exprs and --by read CPU samples")
				}
			}
			if exprsOn {
				o := exprs.Options{}
				switch stat {
				case "hist":
					o.Bins = 10
				case "series":
					o.Series = 50
				case "mean", "quantiles":
				default:
					return usagef("unknown statistic %q: use %s", stat, strings.Join(render.ExprStats, ", "))
				}
				list := exprs.Summarize(p, o)
				if format == "json" {
					return render.ExprsJSON(out, list, p.SampleCount(), render.JSONExtra{Warnings: p.Warnings, Lost: p.Lost, Throttled: p.Throttled})
				}
				if err := render.LostNote(out, p.Lost, p.Throttled); err != nil {
					return err
				}
				return render.ExprsText(out, list, stat)
			}
			extra := render.JSONExtra{Sources: p.Sources, Warnings: p.Warnings,
				Lost: p.Lost, Throttled: p.Throttled, Grouping: g.String()}
			if tree {
				t := p.CallTree(true)
				if format == "json" {
					return render.TreeJSON(out, t, minPct/100, extra)
				}
				return render.TreeText(out, t, p.Lost, p.Throttled, minPct/100)
			}
			if peekRE != nil {
				pk := p.Peeks(peekRE)
				if len(pk) == 0 && p.SampleCount() > 0 {
					return fmt.Errorf("no sampled function matches --peek %q: the busiest are %s%s", peek, strings.Join(busiest(p, 5), ", "), lostHint(p.Lost))
				}
				if format == "json" {
					return render.PeekJSON(out, pk, p.SampleCount(), extra)
				}
				if err := render.LostNote(out, p.Lost, p.Throttled); err != nil {
					return err
				}
				return render.PeekText(out, pk, p.SampleCount(), top)
			}
			if listRE != nil {
				ls := p.Listings(listRE)
				if len(ls) == 0 && p.SampleCount() > 0 {
					return fmt.Errorf("no sampled function matches --list %q: the busiest are %s%s", list, strings.Join(busiest(p, 5), ", "), lostHint(p.Lost))
				}
				read := sourceReader(srcPath)
				var dis render.Disassembler
				if asm {
					if dis, err = disassembler(args); err != nil {
						return err
					}
				}
				if format == "json" {
					return render.ListingJSON(out, ls, p.SampleCount(), read, dis, extra)
				}
				if err := render.LostNote(out, p.Lost, p.Throttled); err != nil {
					return err
				}
				return render.ListingText(out, ls, p.SampleCount(), read, dis, top)
			}
			if callers > 0 {
				rows := p.Callers(g, callers)
				if format == "json" {
					return render.CallersJSON(out, rows, p.SampleCount(), extra)
				}
				if err := render.LostNote(out, p.Lost, p.Throttled); err != nil {
					return err
				}
				return render.CallersText(out, rows, p.SampleCount(), top)
			}
			flat := p.Flat(g)
			if format == "json" {
				return render.FlatJSON(out, flat, extra)
			}
			return render.FlatText(out, flat, top)
		},
	}
	f := c.Flags()
	f.StringVar(&by, "by", "function", "group samples by function, line, object, process or thread; in a trace (culprit trace): caller, each function's calls by the function that made them")
	f.IntVar(&callers, "callers", 0, "show calling contexts of N frames (leaf <- caller <- ...) instead of a flat profile")
	f.StringVar(&list, "list", "", "show the source lines of the functions matching this regular expression, with the samples at each")
	f.StringVar(&srcPath, "source-path", "", "with --list: directories to look for source files in (colon-separated)")
	f.BoolVar(&asm, "asm", false, "with --list: show the machine code with the samples at each instruction (perf annotate)")
	f.BoolVar(&tree, "tree", false, "show the call tree top-down, each function under its caller")
	f.Float64Var(&minPct, "min-share", 0.5, "with --tree: leave out functions under this share of the samples (percent)")
	f.StringVar(&calls, "calls", "", "in a trace (culprit trace): list the slowest calls of the functions matching this regular expression, with their arguments (--top of them)")
	f.StringVar(&peek, "peek", "", "show the callers and callees of the functions matching this regular expression")
	ff.register(f)
	f.BoolVar(&exprsOn, "exprs", false, "summarize the sampled expressions, counters and variables instead (recorded with --expr, --rules or --values)")
	f.StringVar(&stat, "stat", "mean", "with --exprs: mean (count, missing, time-weighted mean, min, max, median), quantiles, hist or series")
	f.StringVar(&format, "format", "text", "output format: text or json")
	f.IntVar(&top, "top", 40, "rows (with --list or --peek: functions) to print in text output (0: all)")
	f.SortFlags = false
	return c
}

// parseOffset parses a time offset such as 1.5s, 200ms or a bare number of seconds.
func parseOffset(s string) (time.Duration, error) {
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		if v < 0 {
			return 0, fmt.Errorf("negative offset")
		}
		return time.Duration(v * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("not a duration: use e.g. 1.5s or 200ms")
	}
	if d < 0 {
		return 0, fmt.Errorf("negative offset")
	}
	return d, nil
}

// reportTrace reports a trace of function calls: per function, --by
// caller, or --calls REGEX.
func reportTrace(c *cobra.Command, ff filterFlags, args []string, format, calls string, byCaller bool, top int) error {
	if format != "text" && format != "json" {
		return usagef("unknown format %q: use text or json", format)
	}
	if calls != "" && byCaller {
		return usagef("--calls lists single calls: it does not combine with --by caller")
	}
	p, err := ff.load(args, c.ErrOrStderr(), true)
	if err != nil {
		return err
	}
	if len(p.Probes) == 0 {
		if byCaller {
			return usagef("--by caller reads a trace of function calls (culprit trace -f PATTERN -- CMD); for the callers of sampled functions use --callers N or --peek REGEX")
		}
		return usagef("--calls reads a trace of function calls (culprit trace -f PATTERN -- CMD); this recording has CPU samples")
	}
	return traceView(c, p, format, calls, byCaller, top)
}

func traceView(c *cobra.Command, p *profile.Profile, format, calls string, byCaller bool, top int) error {
	out := c.OutOrStdout()
	// Loading printed the recording's own warnings; the ones about how the
	// calls were recorded are added here, for every view of the trace.
	var own []string
	for _, m := range p.Metas {
		if hz := m.Extra["timed_sampling_hz"]; hz != "" {
			own = append(own, fmt.Sprintf("calls were recorded only in alternate phases of 1/%s s (--timed-sampling): the counts are of the calls made in the gathering phases", hz))
			break
		}
	}
	if n := len(p.ProbesOff); n > 0 {
		var off uint64
		for _, o := range p.ProbesOff {
			off += o[1] - o[0]
		}
		own = append(own, fmt.Sprintf("the probes were removed %d times, %s in all, to keep within a trap budget (--trap-budget): calls made then are not counted", n, time.Duration(off).Round(time.Millisecond)))
	}
	extra := render.JSONExtra{Sources: p.Sources, Warnings: append(slices.Clip(p.Warnings), own...), Lost: p.Lost}
	if format != "json" {
		for _, w := range own {
			warnf(c.ErrOrStderr(), "%s", w)
		}
	}
	if calls != "" {
		re, err := regexp.Compile(calls)
		if err != nil {
			return usagef("--calls %q: %v", calls, err)
		}
		list := trace.Slowest(p, re, top)
		if len(list) == 0 {
			var names []string
			for _, f := range trace.Functions(p, false) {
				names = append(names, f.Name)
			}
			return fmt.Errorf("no traced call of a function matching --calls %q: the traced functions with calls are %s", calls, strings.Join(names, ", "))
		}
		if format == "json" {
			return render.CallsJSON(out, list, extra)
		}
		return render.CallsText(out, list)
	}
	fs := trace.Functions(p, byCaller)
	if format == "json" {
		return render.TraceJSON(out, fs, extra)
	}
	return render.TraceText(out, fs, p.Lost, top)
}
