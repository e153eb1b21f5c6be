package cli

import (
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/culprit-dev/culprit/internal/analysis/flatdiff"
	"github.com/culprit-dev/culprit/internal/analysis/trace"
	"github.com/culprit-dev/culprit/internal/render"
)

func newDiff() *cobra.Command {
	var (
		ff      filterFlags
		by      string
		byTotal bool
		format  string
		top     int
		output  string
		list    string
		srcPath string
		timeK   string
	)
	c := &cobra.Command{
		Use:   "diff [flags] BASE NEW",
		Short: "Compare where the time went in two recordings (what grew, what shrank)",
		Long: `Diff compares two recordings, a base run and a new one: each function's share
in both, the change with a ±2σ error (* beyond noise), its CPU time in each.

Most common uses:
  culprit diff before.rec after.rec                        what grew, what shrank
  culprit diff --list '^parse$' before.rec after.rec       the same per source line
  culprit diff --format svg -o diff.svg before.rec after.rec   a differential flame graph

Ranking, noise and renamed programs: docs/cli.md (culprit diff).`,
		Example: `  culprit diff before.rec after.rec
  culprit diff --format svg -o diff.svg before.rec after.rec
  culprit diff --list '^parse$' before.rec after.rec
  culprit diff --total --top 10 v1.rec v2.rec
  culprit diff --by object --format json base.rec new.rec`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usagef("diff takes two recordings, BASE and NEW (got %d)", len(args))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			svg := format == "svg"
			if svg {
				format = "text" // for the checks; the flame graph has no rows
			}
			g, err := groupingAndFormat(by, format)
			if err != nil {
				return usagef("%v (or svg)", err)
			}
			if timeK != "cpu" && timeK != "wall" {
				return usagef("--time %q: use cpu or wall", timeK)
			}
			if top < 0 {
				return usagef("--top takes a positive number")
			}
			var listRE *regexp.Regexp
			if list != "" {
				if listRE, err = regexp.Compile(list); err != nil {
					return usagef("--list %q: %v", list, err)
				}
				if svg || c.Flags().Changed("by") || byTotal {
					return usagef("--list compares the lines of functions: it does not combine with --by, --total or --format svg")
				}
			}
			base, err := ff.load(args[:1], c.ErrOrStderr(), true)
			if err != nil {
				return err
			}
			cur, err := ff.load(args[1:], c.ErrOrStderr(), true)
			if err != nil {
				return err
			}
			// Traces are compared per function, unless a view of CPU
			// samples is asked for and both have them (those a trace
			// takes beside its probes).
			traced := len(base.Probes) > 0 || len(cur.Probes) > 0
			if traced && (svg || listRE != nil || byTotal || c.Flags().Changed("by")) && len(base.Samples) > 0 && len(cur.Samples) > 0 {
				traced = false
			}
			if traced {
				if len(base.Probes) == 0 || len(cur.Probes) == 0 {
					return usagef("one recording is a trace of function calls (culprit trace) and the other has CPU samples: diff compares two of a kind")
				}
				if svg || listRE != nil || byTotal || c.Flags().Changed("by") {
					return usagef("two traces of function calls are compared per function: --by, --total, --list and --format svg read CPU samples, which one of them does not have (--cpu-sample 0)")
				}
			}
			return writeOutput(c.OutOrStdout(), output, func(w io.Writer) error {
				if traced {
					d := trace.Diff(base, cur, timeK == "cpu")
					if format == "json" {
						return render.TraceDiffJSON(w, d)
					}
					return render.TraceDiffText(w, d, top)
				}
				if svg {
					return render.WriteFlameDiffSVG(w, base, cur)
				}
				if listRE != nil {
					d := flatdiff.CompareLines(base, cur, listRE)
					if len(d.Listings) == 0 {
						return fmt.Errorf("no sampled function matches --list %q in either run: the busiest in the new run are %s%s", list, strings.Join(busiest(cur, 5), ", "), lostHint(base.Lost+cur.Lost))
					}
					read := sourceReader(srcPath)
					if format == "json" {
						return render.DiffListingJSON(w, d, args[0], args[1], read, append(base.Warnings, cur.Warnings...))
					}
					return render.DiffListingText(w, d, args[0], args[1], read, top)
				}
				d := flatdiff.Compare(base, cur, g, byTotal)
				if format == "json" {
					return render.DiffJSON(w, d, args[0], args[1], append(base.Warnings, cur.Warnings...))
				}
				return render.DiffText(w, d, args[0], args[1], top)
			})
		},
	}
	f := c.Flags()
	f.StringVar(&by, "by", "function", "group samples by function, line, object, process or thread")
	f.BoolVar(&byTotal, "total", false, "compare and rank by total share (callees included) instead of self")
	ff.register(f)
	f.StringVar(&list, "list", "", "compare the source lines of the functions matching this regular expression")
	f.StringVar(&srcPath, "source-path", "", "with --list: directories to look for source files in (colon-separated)")
	f.StringVar(&timeK, "time", "cpu", "traced runs: compare calls' time on the CPU (cpu; wall time where a recording did not measure it) or their wall durations (wall)")
	f.StringVar(&format, "format", "text", "output format: text, json or svg (a differential flame graph)")
	f.StringVarP(&output, "output", "o", "-", "file to write (- for standard output)")
	f.IntVar(&top, "top", 30, "rows to print in text output (0: all)")
	f.SortFlags = false
	return c
}
