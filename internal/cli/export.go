package cli

import (
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/culprit-dev/culprit/internal/analysis/sched"
	"github.com/culprit-dev/culprit/internal/analysis/variance"
	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/render"
)

var exporters = map[string]func(io.Writer, *profile.Profile) error{
	"pprof":      render.WritePprof,
	"folded":     render.WriteFolded,
	"speedscope": render.WriteSpeedscope,
	"chrome":     render.WriteChrome,
	"svg":        render.WriteFlameSVG,
}

func newExport() *cobra.Command {
	var (
		ff     filterFlags
		format string
		output string
	)
	c := &cobra.Command{
		Use:   "export --format pprof|folded|speedscope|chrome|svg -o OUT [FILE...]",
		Short: "Convert recordings for other viewers (pprof, flame graphs, speedscope, Perfetto), or draw a flame graph",
		Long: `Export writes recordings (default culprit.rec) for other tools: pprof, folded
stacks, speedscope, Chrome trace, or an SVG flame graph.

Most common uses:
  culprit export --format svg -o flame.svg            a flame graph for the browser
  culprit export --format pprof -o cpu.pb.gz          for go tool pprof
  culprit export --format folded -o - | flamegraph.pl > flame.svg

The formats: docs/cli.md (culprit export).`,
		Example: `  culprit export --format svg -o flame.svg && xdg-open flame.svg
  culprit export --format pprof -o cpu.pb.gz && go tool pprof -top cpu.pb.gz
  culprit export --format folded -o - | flamegraph.pl > flame.svg`,
		RunE: func(c *cobra.Command, args []string) error {
			write, ok := exporters[format]
			if !ok {
				return usagef("unknown export format %q: use pprof, folded, speedscope, chrome or svg", format)
			}
			if output == "" {
				return usagef("no output file: give -o FILE (or -o - for standard output)")
			}
			// pprof profiles, folded stacks and flame graphs are totals:
			// samples merge as they are read. Speedscope and Chrome traces
			// are timelines of every sample, read from the recordings
			// again in time order rather than held.
			var p, whole *profile.Profile
			var err error
			if format == "speedscope" || format == "chrome" {
				p, whole, err = ff.loadStream(args, c.ErrOrStderr())
			} else {
				p, whole, err = ff.loadWhole(args, c.ErrOrStderr(), format == "pprof" || format == "folded" || format == "svg")
			}
			if err != nil {
				return err
			}
			if format == "chrome" {
				// Threads' states and wake-ups, when the recording has them.
				flt, err := ff.filter()
				if err != nil {
					return err
				}
				flt.AllEvents = true
				tl, err := sched.States(whole.Apply(flt))
				if err != nil && err != sched.ErrNoEvents {
					return err
				}
				// A recording of culprit variance: its intervals and their
				// critical paths.
				if spec, ok := variance.SpecOf(p.Metas); ok && len(p.Probes) > 0 {
					res, err := varianceOf(p, strings.Join(args, ", "), variance.Spec{}, 0, 0, true, tl)
					if err != nil && (res == nil || res.Spans == nil) {
						return err
					}
					label := spec.Start
					if spec.End != spec.Start {
						label = spec.Start + " … " + spec.End
					}
					return writeOutput(c.OutOrStdout(), output, func(w io.Writer) error {
						return render.WriteChromeIntervals(w, p, tl, label, res.Spans)
					})
				}
				return writeOutput(c.OutOrStdout(), output, func(w io.Writer) error { return render.WriteChromeSched(w, p, tl) })
			}
			return writeOutput(c.OutOrStdout(), output, func(w io.Writer) error { return write(w, p) })
		},
	}
	f := c.Flags()
	f.StringVar(&format, "format", "", "pprof, folded, speedscope, chrome or svg")
	f.StringVarP(&output, "output", "o", "", "file to write (- for standard output)")
	ff.register(f)
	f.SortFlags = false
	return c
}
