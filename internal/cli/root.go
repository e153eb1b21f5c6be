// Package cli wires culprit's subcommands: flags, help text, and the choice of
// output. Each subcommand lives in its own file and calls into the packages
// that do the work; nothing here touches the kernel or parses files itself.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// Version is set at build time with -ldflags "-X .../internal/cli.Version=...".
var Version = "0.1.0-dev"

// exitError carries an exit code that is not a failure of culprit itself
// (the profiled command's own exit code).
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit code %d", e.code) }

// usageError marks errors in how culprit was called.
type usageError struct{ error }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "culprit",
		Short: "Find why a native program is slow",
		Long: `culprit profiles unmodified native programs (C, C++, Rust, Go) from outside
the process with the kernel's perf events, and explains where their time goes.

  culprit record -- ./myprog args     record a run into culprit.rec
  culprit report                      where the time went
  culprit report --callers 3          ... by calling context
  culprit export --format pprof -o cpu.pb.gz culprit.rec`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.CompletionOptions.HiddenDefaultCmd = true
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{err}
	})
	root.AddCommand(newRecord(), newTrace(), newVariance(), newReport(), newDiff(), newExport(), newArchive(), newImport(), newLatency(), newContexts(), newStates(), newDiagnose(), newSchema(), newDemo(), newHistory(), newRun(), newModels(), newCheck(), newView(), newVersion())
	root.PersistentFlags().StringVar(&storeSpec, "store", "", storeHelp)
	return root
}

// Main runs culprit with args and returns the process exit code.
func Main(args []string) int {
	return run(args, os.Stdout, os.Stderr)
}

func run(args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		// A bug must not show users a Go stack trace; say what happened.
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "culprit: internal error: %v\nPlease report this with the command you ran.\n", r)
			code = 70
		}
	}()
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return 0
	}
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	msg := err.Error()
	fmt.Fprintf(stderr, "culprit: %s\n", cleanMessage(msg))
	var ue usageError
	if errors.As(err, &ue) || strings.HasPrefix(msg, "unknown command") || strings.HasPrefix(msg, "unknown flag") {
		sub := "culprit"
		if c, _, ferr := root.Find(args); ferr == nil && c != root {
			sub = c.CommandPath()
		}
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", sub)
		return 2
	}
	return 1
}

func newVersion() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print culprit's version and recording format version",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			fmt.Fprintf(c.OutOrStdout(), "culprit %s (recording format %s)\n", Version, formatVersion())
			return nil
		},
	}
}

// warnf prints a warning on stderr.
func warnf(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "culprit: warning: %s\n", cleanMessage(fmt.Sprintf(format, args...)))
}

// cleanMessage drops advice libraries add to their errors that is wrong
// for culprit: cilium/ebpf suggests raising RLIMIT_MEMLOCK on any EPERM,
// which culprit does itself; the cause left is the missing privilege,
// which culprit's own message names.
func cleanMessage(msg string) string {
	return strings.ReplaceAll(msg, " (MEMLOCK may be too low, consider rlimit.RemoveMemlock)", "")
}
