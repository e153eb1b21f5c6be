package cli

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/culprit-dev/culprit/internal/analysis/check"
	"github.com/culprit-dev/culprit/internal/render"
	"github.com/culprit-dev/culprit/internal/store"
)

// hookMark identifies a hook culprit wrote (and may replace).
const hookMark = "# written by culprit check --install-hook"

func newCheck() *cobra.Command {
	var (
		threshold, failAbove, z, newShare float64
		x, arg, format, output            string
		timeKind                          string
		installHook                       bool
		hookRun                           []string
	)
	c := &cobra.Command{
		Use:   "check [BASE..]TARGET",
		Short: "Find the functions that got slower (or faster) between two commits",
		Long: `Check compares the stored runs of a commit (default HEAD) with those of a
base commit (default: its nearest ancestor with stored runs) and names each
function that got slower or faster, by how much and how sure. It exits 1 on
a degradation of --fail-above or more, so it gates CI.

Most common uses:
  culprit check                          HEAD against its nearest stored ancestor
  culprit check v1.2..HEAD --format junit -o perf.xml
  culprit check --install-hook           run and check after every commit

Runs are paired by workload, parameters and collector options (culprit run
--workload, --param). Traced runs (culprit trace, then history add) are
compared by their calls: each traced function's time per call, modelled
against its arguments when trace --args recorded them. The five methods,
severity, confidence and location in detail: docs/history.md (Check).`,
		Example: `  culprit check                      # HEAD against its nearest stored ancestor
  culprit check v1.2..HEAD --format junit -o perf.xml
  culprit check --install-hook --hook-run 'make' --hook-run 'culprit run --param n=1000 -- ./prog 1000'`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("check takes one argument, [BASE..]TARGET")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if installHook {
				return writeHook(c.OutOrStdout(), hookRun)
			}
			if len(hookRun) > 0 {
				return usagef("--hook-run goes with --install-hook")
			}
			if format != "text" && format != "json" && format != "junit" {
				return usagef("unknown format %q: use text, json or junit", format)
			}
			if timeKind != "cpu" && timeKind != "wall" {
				return usagef("--time %q: use cpu or wall", timeKind)
			}
			if threshold <= 0 {
				return usagef("--threshold takes a positive percentage")
			}
			if newShare < 0 || newShare > 100 || math.IsNaN(newShare) {
				return usagef("--new-share takes a percentage from 0 to 100")
			}
			if !c.Flags().Changed("fail-above") {
				failAbove = threshold
			}
			spec := "HEAD"
			if len(args) == 1 {
				spec = args[0]
			}
			baseRev, targetRev, hasBase := strings.Cut(spec, "..")
			if !hasBase {
				targetRev, baseRev = spec, ""
			}
			baseRev, targetRev = strings.TrimPrefix(baseRev, "@"), strings.TrimPrefix(targetRev, "@")
			if targetRev == "" {
				targetRev = "HEAD"
			}
			st, err := openStore()
			if err != nil {
				return err
			}
			defer st.Close()
			h, res, err := checkCommits(st, baseRev, targetRev, x, check.Options{Threshold: threshold / 100, Z: z, Arg: arg, Wall: timeKind == "wall", NewShare: newShare / 100})
			if err != nil {
				return err
			}
			h.FailAbove = failAbove / 100
			err = writeOutput(c.OutOrStdout(), output, func(w io.Writer) error {
				switch format {
				case "json":
					return render.CheckJSON(w, h, res)
				case "junit":
					return render.CheckJUnit(w, h, res)
				}
				return render.CheckText(w, h, res)
			})
			if err != nil {
				return err
			}
			if res.Degraded(failAbove / 100) {
				return exitError{1}
			}
			return nil
		},
	}
	f := c.Flags()
	f.Float64Var(&threshold, "threshold", 15, "smallest change of a function's time reported, percent")
	f.Float64Var(&failAbove, "fail-above", 0, "exit 1 on a degradation of at least this many percent (default: --threshold)")
	f.Float64Var(&z, "z", 3, "two-sample significance: |Z| at least this")
	f.Float64Var(&newShare, "new-share", 100*check.DefaultNewShare, "a function sampled on one side only counts when it holds at least this percent of its side's time")
	f.StringVar(&x, "x", "", "the input-size parameter for the model methods (default: the one that varies)")
	f.StringVar(&arg, "arg", "", "traced runs: the argument (trace --args) calls' durations are modelled against (default: the one that explains most)")
	f.StringVar(&timeKind, "time", "cpu", "traced runs: compare calls' time on the CPU (cpu; wall time where a recording did not measure it) or their wall durations (wall)")
	f.StringVar(&format, "format", "text", "output format: text, json or junit")
	f.StringVarP(&output, "output", "o", "-", "file to write (- for standard output)")
	f.BoolVar(&installHook, "install-hook", false, "write a git post-commit hook that runs --hook-run commands, then culprit check")
	f.StringArrayVar(&hookRun, "hook-run", nil, "with --install-hook: a shell command the hook runs before the check (repeatable; e.g. a build, then culprit run)")
	f.SortFlags = false
	return c
}

// hasArg says whether some traced function of runs recorded argument name.
func hasArg(runs []check.Run, name string) bool {
	for _, r := range runs {
		for _, f := range r.Funcs {
			if _, ok := f.Args[name]; ok {
				return true
			}
		}
	}
	return false
}

// writeHook installs the post-commit hook.
func writeHook(stdout io.Writer, cmds []string) error {
	if len(cmds) == 0 {
		return usagef("--install-hook needs the workload to run: --hook-run 'culprit run --param n=1000 -- ./prog 1000' (repeatable)")
	}
	path, err := git("rev-parse", "--git-path", "hooks/post-commit")
	if err != nil {
		return err
	}
	root, err := repoRoot()
	if err != nil {
		return err
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(root, path)
	}
	if old, err := os.ReadFile(path); err == nil && !strings.Contains(string(old), hookMark) {
		return fmt.Errorf("%s exists and was not written by culprit: add the commands to it by hand", path)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		self = "culprit"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "#!/bin/sh\n%s\n# Runs the workload on each commit and checks it against the last stored one.\ncd \"$(git rev-parse --show-toplevel)\" || exit 0\n", hookMark)
	for _, c := range cmds {
		fmt.Fprintf(&b, "%s || { echo 'culprit hook: %s failed' >&2; exit 0; }\n", c, strings.ReplaceAll(c, "'", ""))
	}
	// check's own output says what it found, or why it could not compare
	// (the first commit with stored runs has nothing to compare with); its
	// exit code (1 for both a degradation and an error) cannot stop a
	// commit already made.
	fmt.Fprintf(&b, "%s check || true\n", shellQuote(self))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := writeOutput(io.Discard, path, func(w io.Writer) error {
		_, err := io.WriteString(w, b.String())
		return err
	}); err != nil {
		return err
	}
	if err := os.Chmod(path, 0o755); err != nil { // git runs it
		return err
	}
	fmt.Fprintf(stdout, "installed %s\n", path)
	return nil
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// checkCommits compares the stored runs of targetRev with those of baseRev
// (when "", its nearest ancestor with stored runs), the model methods
// against the parameter x (when "", the one that varies).
func checkCommits(st *store.Store, baseRev, targetRev, x string, o check.Options) (render.CheckHeader, check.Result, error) {
	fail := func(err error) (render.CheckHeader, check.Result, error) {
		return render.CheckHeader{}, check.Result{}, err
	}
	target, _, err := commitOf(targetRev)
	if err != nil {
		return fail(err)
	}
	tRuns, err := st.Runs(target)
	if err != nil {
		return fail(err)
	}
	if len(tRuns) == 0 {
		return fail(fmt.Errorf("no runs of %s (%s) in %s: culprit run -- CMD on that commit stores them", targetRev, target[:12], st.Where()))
	}
	var base string
	if baseRev != "" {
		if base, _, err = commitOf(baseRev); err != nil {
			return fail(err)
		}
	} else {
		anc, err := ancestors(target+"~1", 1000)
		if err != nil {
			return fail(fmt.Errorf("%s has no parent to compare with: give BASE..TARGET", targetRev))
		}
		stored, err := st.Runs()
		if err != nil {
			return fail(err)
		}
		have := map[string]bool{}
		for _, r := range stored {
			have[r.Commit] = true
		}
		for _, a := range anc {
			if have[a] {
				base = a
				break
			}
		}
		if base == "" {
			return fail(fmt.Errorf("no ancestor of %s has stored runs: store runs of an earlier commit, or give BASE..TARGET", targetRev))
		}
	}
	bRuns, err := st.Runs(base)
	if err != nil {
		return fail(err)
	}
	if len(bRuns) == 0 {
		return fail(fmt.Errorf("no runs of %s (%s) in %s", baseRev, base[:12], st.Where()))
	}
	xname, err := pickX(append(append([]store.Run(nil), bRuns...), tRuns...), x)
	if err != nil {
		return fail(err)
	}
	bc, err := checkRuns(st, bRuns, xname, true)
	if err != nil {
		return fail(err)
	}
	tc, err := checkRuns(st, tRuns, xname, true)
	if err != nil {
		return fail(err)
	}
	if o.Arg != "" && !hasArg(bc, o.Arg) && !hasArg(tc, o.Arg) {
		return fail(usagef("--arg %s: no stored trace recorded an argument %s (culprit trace --args records them)", o.Arg, o.Arg))
	}
	o.XName = xname
	res := check.Compare(bc, tc, o)
	if res.Pairs == 0 {
		return fail(fmt.Errorf("no run of %s pairs with a run of %s (same workload, parameters and collector options): culprit history list shows them", base[:12], target[:12]))
	}
	h := render.CheckHeader{Base: base, Target: target, BaseRuns: len(bRuns), TgtRuns: len(tRuns),
		Threshold: o.Threshold, Z: o.Z, XName: xname}
	return h, res, nil
}
