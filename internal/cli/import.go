package cli

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/culprit-dev/culprit/internal/importer"
	"github.com/culprit-dev/culprit/internal/recording"
)

// importers are the formats import reads, by --from name.
var importers = map[string]func(io.Reader, *recording.Writer) (importer.Stats, error){
	"perf-script": importer.PerfScript,
}

func importerNames() string {
	var names []string
	for n := range importers {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func newImport() *cobra.Command {
	var from, output string
	c := &cobra.Command{
		Use:   "import --from perf-script [-o OUT] FILE",
		Short: "Convert another profiler's stack traces into a culprit recording",
		Long: `Import converts the stack traces of perf script into a culprit recording
(default culprit.rec), for report, export and the other commands.

Most common uses:
  perf script > prog.perf && culprit import --from perf-script prog.perf
  perf script | culprit import --from perf-script -o perf.rec -
  culprit import --from perf-script prog.perf && culprit report --callers 3

Events read and what is skipped: docs/cli.md (culprit import).`,
		Example: `  perf record -g -- ./myprog && perf script > myprog.perf
  culprit import --from perf-script myprog.perf && culprit report
  perf script -i perf.data | culprit import --from perf-script -o perf.rec -`,
		RunE: func(c *cobra.Command, args []string) error {
			imp, ok := importers[from]
			switch {
			case from == "":
				return usagef("no input format: give --from %s", importerNames())
			case !ok:
				return usagef("unknown input format %q: use --from %s", from, importerNames())
			case len(args) == 0:
				return usagef("no input: give a file to import, or - for standard input")
			case len(args) > 1:
				return usagef("one input at a time: got %d files", len(args))
			case output == "":
				return usagef("no output file: give -o FILE")
			}
			in, name := c.InOrStdin(), "standard input"
			if args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return err
				}
				defer f.Close()
				in, name = f, args[0]
			}
			st, err := importTo(output, in, imp, c.OutOrStdout())
			if err != nil {
				return fmt.Errorf("importing %s: %w", name, err)
			}
			stderr := c.ErrOrStderr()
			if len(st.Ignored) > 0 {
				var evs []string
				for ev, n := range st.Ignored {
					evs = append(evs, fmt.Sprintf("%s (%d)", ev, n))
				}
				sort.Strings(evs)
				warnf(stderr, "left out the samples of events culprit does not use: %s", strings.Join(evs, ", "))
			}
			if st.Truncated {
				warnf(stderr, "%s ends in the middle of a sample (cut short?): that sample is left out", name)
			}
			where := output
			if output == "-" {
				where = "standard output"
			}
			fmt.Fprintf(stderr, "culprit: imported %d samples (%d lines skipped) into %s\n", st.Samples, st.Skipped, where)
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&from, "from", "", "input format: "+importerNames())
	f.StringVarP(&output, "output", "o", "culprit.rec", "recording to write (- for standard output)")
	f.SortFlags = false
	return c
}

// importTo writes the recording to output through a temporary file, so that
// a failed import leaves an existing recording as it was.
func importTo(output string, in io.Reader, imp func(io.Reader, *recording.Writer) (importer.Stats, error), stdout io.Writer) (importer.Stats, error) {
	if output == "-" {
		w, err := recording.NewWriter(stdout)
		if err != nil {
			return importer.Stats{}, err
		}
		st, err := imp(in, w)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		return st, err
	}
	tmp := fmt.Sprintf("%s.importing-%d", output, os.Getpid())
	w, err := recording.Create(tmp)
	if err != nil {
		return importer.Stats{}, err
	}
	st, err := imp(in, w)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, output)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return st, err
}
