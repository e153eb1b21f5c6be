package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/culprit-dev/culprit/internal/store"
)

// newRun is record followed by history add: record's flags and behaviour,
// plus the run's workload, parameters and commit.
func newRun() *cobra.Command {
	var (
		workload string
		params   []string
		dirty    bool
	)
	c := newRecord()
	record := c.RunE
	c.Use = "run [--workload NAME] [--param KEY=VALUE]... [record flags] -- CMD [ARGS...]"
	c.Short = "Record a command and store the run under the current commit"
	c.Long = `Run records a command as culprit record does and stores the recording as a
run of the commit checked out, for culprit check and culprit models.

Most common uses:
  culprit run --param n=1000 -- ./prog 1000          one input size of a series
  culprit run --workload parse-big -- ./parser big.json
  culprit run --store postgres://ci@db/perf -- ./prog

It refuses a working tree whose tracked files have uncommitted changes (the
run would be filed under a commit that did not produce it; --dirty stores it
marked dirty). The recording is kept only in the store unless -o names a
file. Runs and pairing in detail: docs/history.md.`
	c.Example = `  culprit run --param n=1000 -- ./prog 1000
  culprit run --workload parse-big --param size=64M -- ./parser big.json
  culprit run --store postgres://ci@db/perf --param n=1000 -- ./prog 1000`
	c.RunE = func(c *cobra.Command, args []string) error {
		ps, err := parseParams(params)
		if err != nil {
			return err
		}
		if len(args) == 0 {
			return usagef("no command to run: use culprit run [--param KEY=VALUE]... -- CMD [ARGS...]")
		}
		hash, when, err := commitOf("HEAD")
		if err != nil {
			return err
		}
		files, err := dirtyFiles()
		if err != nil {
			return err
		}
		if len(files) > 0 && !dirty {
			more := ""
			if len(files) > 3 {
				more = fmt.Sprintf(" and %d more", len(files)-3)
				files = files[:3]
			}
			return usagef("uncommitted changes to %s%s: the run would be filed under %s, which did not produce it; commit first, or give --dirty to store it marked dirty",
				strings.Join(files, ", "), more, hash[:12])
		}
		st, err := openStore()
		if err != nil {
			return err
		}
		defer st.Close()
		keep := c.Flags().Changed("output")
		if !keep {
			tmp, err := os.CreateTemp("", "culprit-run-*.rec")
			if err != nil {
				return err
			}
			tmp.Close()
			defer os.Remove(tmp.Name())
			if err := c.Flags().Set("output", tmp.Name()); err != nil {
				return err
			}
		}
		out, _ := c.Flags().GetString("output")
		err = record(c, args)
		var ee exitError
		if errors.As(err, &ee) {
			if keep {
				return fmt.Errorf("the command exited with status %d: run not stored (the recording is in %s)", ee.code, out)
			}
			return fmt.Errorf("the command exited with status %d: run not stored", ee.code)
		}
		if err != nil {
			return err
		}
		r := store.Run{Commit: hash, CommitTime: when, Dirty: len(files) > 0, Workload: workload, Params: ps}
		if err := addRecording(st, out, &r, io.Discard); err != nil { // record printed its warnings
			return err
		}
		fmt.Fprintf(c.ErrOrStderr(), "culprit: stored as run %d of %s (%s %s)\n", r.ID, hash[:12], r.Workload, store.ParamString(r.Params))
		return nil
	}
	f := c.Flags()
	f.StringVar(&workload, "workload", "", "workload name (default the program's base name)")
	f.StringArrayVar(&params, "param", nil, "a parameter of the run, KEY=VALUE (e.g. n=1000, the input size); repeatable")
	f.BoolVar(&dirty, "dirty", false, "store the run even though tracked files have uncommitted changes (marked dirty)")
	return c
}
