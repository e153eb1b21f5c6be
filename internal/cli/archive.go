package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/symbol"
)

func newArchive() *cobra.Command {
	var dir string
	c := &cobra.Command{
		Use:   "archive [--dir DIR] [FILE...]",
		Short: "Keep copies of the programs and libraries a recording needs, for later reports",
		Long: `Archive copies every program and shared library that recordings (default
culprit.rec) sampled into an archive, by build-id, so that report, export and
the analyses still name their functions after the files are rebuilt, upgraded
or deleted. Without it, frames of a binary whose build-id changed since
recording are shown as object+0xoffset, never with the new binary's names.

The archive is $CULPRIT_ARCHIVE, else culprit/ in the user's cache directory
($XDG_CACHE_HOME, else ~/.cache); report and the other commands look there
(and in /usr/lib/debug) for any object whose recorded build-id no longer
matches the file on disk. Files already archived are not copied again.
Run it right after recording, before the binaries change.`,
		Example: `  culprit record -- ./app && culprit archive
  # rebuild ./app, then the old recording still reports with the old names:
  culprit report`,
		RunE: func(c *cobra.Command, args []string) error {
			if dir == "" {
				if dir = symbol.ArchiveDir(); dir == "" {
					return usagef("no cache directory for the archive: set CULPRIT_ARCHIVE or give --dir")
				}
			}
			if len(args) == 0 {
				args = []string{"culprit.rec"}
			}
			objs, err := recordedObjects(args, c.ErrOrStderr())
			if err != nil {
				return err
			}
			var copied, bytes int64
			var there int
			var failed []string
			for _, o := range objs {
				n, err := symbol.Archive(dir, o.path, o.buildID)
				switch {
				case err != nil:
					failed = append(failed, describeArchiveError(o.path, err))
				case n == 0:
					there++
				default:
					copied++
					bytes += n
				}
			}
			for _, f := range failed {
				warnf(c.ErrOrStderr(), "%s", f)
			}
			fmt.Fprintf(c.OutOrStdout(), "archived %d of %d objects (%.1f MiB) in %s", copied, len(objs), float64(bytes)/(1<<20), dir)
			if there > 0 {
				fmt.Fprintf(c.OutOrStdout(), "; %d already there", there)
			}
			fmt.Fprintln(c.OutOrStdout())
			if len(failed) > 0 && copied == 0 && there == 0 {
				return fmt.Errorf("nothing archived")
			}
			return nil
		},
	}
	c.Flags().StringVar(&dir, "dir", "", "archive directory (default $CULPRIT_ARCHIVE, else culprit/ in the user's cache directory)")
	return c
}

func describeArchiveError(path string, err error) string {
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Sprintf("%s: no longer exists, not archived", path)
	case errors.Is(err, symbol.ErrChanged):
		return fmt.Sprintf("%v: not archived", err)
	}
	return err.Error()
}

type recordedObject struct {
	path    string
	buildID []byte
}

// recordedObjects lists the files with a build-id that the recordings
// mapped, each once. A recording cut short gives what it holds.
func recordedObjects(paths []string, stderr io.Writer) ([]recordedObject, error) {
	seen := map[string]bool{}
	var out []recordedObject
	for _, p := range paths {
		r, err := recording.Open(p)
		if err != nil {
			return nil, err
		}
		for {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				warnf(stderr, "%s: %v; archiving the objects read before it", p, err)
				break
			}
			m, ok := rec.(*recording.Mmap)
			if !ok || len(m.BuildID) == 0 || !strings.HasPrefix(m.Path, "/") {
				continue
			}
			k := m.Path + "\x00" + string(m.BuildID)
			if !seen[k] {
				seen[k] = true
				out = append(out, recordedObject{m.Path, append([]byte(nil), m.BuildID...)})
			}
		}
		r.Close()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out, nil
}
