package cli

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/culprit-dev/culprit/internal/loader"
	"github.com/culprit-dev/culprit/internal/symbol"
)

func newArchive() *cobra.Command {
	var dir string
	c := &cobra.Command{
		Use:   "archive [--dir DIR] [FILE...]",
		Short: "Keep copies of the programs and libraries a recording needs, for later reports",
		Long: `Archive keeps copies of the programs and libraries recordings (default
culprit.rec) sampled, by build-id, so reports still name their functions after
the files are rebuilt or deleted.

Most common uses:
  culprit record -- ./app && culprit archive   right after recording
  culprit archive run1.rec run2.rec            the binaries of several recordings
  culprit archive --dir /srv/archive           an archive elsewhere

Where the archive is and how it is searched: docs/cli.md (culprit archive).`,
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
			args, err := storedPaths(args, c.ErrOrStderr())
			if err != nil {
				return err
			}
			objs, err := loader.RecordedObjects(args)
			if err != nil {
				return err
			}
			var copied, bytes int64
			var there int
			var failed []string
			for _, o := range objs {
				n, err := symbol.Archive(dir, o.Path, o.BuildID)
				var ae *symbol.ArchiveError
				switch {
				case errors.As(err, &ae):
					return ae
				case err != nil:
					failed = append(failed, describeArchiveError(o.Path, err))
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
