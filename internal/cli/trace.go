package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/culprit-dev/culprit/internal/tracer"
)

func newTrace() *cobra.Command {
	var (
		o     tracer.Options
		pid   int
		funcs []string
		libs  []string
	)
	c := &cobra.Command{
		Use:   "trace -f PATTERN[#N]... [flags] -- CMD [ARGS...]\n  culprit trace -f PATTERN[#N]... -p PID [--duration D]",
		Short: "Time every call of chosen functions of a command or a running process",
		Long: `Trace times every call of the functions whose symbol names match the -f
globs (and --lib LIB:PATTERN in shared libraries, also ones the program
loads later with dlopen), with eBPF uprobes: each call's start, inclusive
and exclusive duration (exclusive leaves out the traced calls it made),
thread, depth and traced caller, and with --args its arguments by name and
type from DWARF and its return value. A pattern ending in #N records the
first and every N-th call of each function it matches.

The probes are set while the command is stopped at its exec, so no call is
missed, and removed when culprit exits, however it ends. Recursion,
threads, and calls that never return (longjmp, C++ exceptions) are
counted correctly; in Go programs return probes sit on the RET
instructions. Calls that could not be recorded are counted and reported.

Read the recording with culprit report (per function: calls, total, mean,
max, p99; --calls FUNC lists the slowest calls), export --format chrome
(every call on its thread's timeline) and diff.`,
		Example: `  culprit trace -f 'parse_*' -f compress -- ./server --port 8080
  culprit trace -f 'fib#100' --args -- ./fib 30
  culprit trace --lib libz.so.1:deflate -f main -- ./zip big.txt
  culprit trace -f 'handle_*' -p 1234 --duration 10s`,
		RunE: func(c *cobra.Command, args []string) error {
			o.Tool = "culprit " + Version
			for _, f := range funcs {
				p, err := tracer.ParsePattern(f, false)
				if err != nil {
					return usageError{err}
				}
				o.Patterns = append(o.Patterns, p)
			}
			for _, l := range libs {
				p, err := tracer.ParsePattern(l, true)
				if err != nil {
					return usageError{err}
				}
				o.Patterns = append(o.Patterns, p)
			}
			if len(o.Patterns) == 0 {
				return usagef("no function to trace: give -f PATTERN (a glob on symbol names, e.g. -f 'parse_*') or --lib LIB:PATTERN")
			}
			if o.TimedHz < 0 || o.TimedHz > 10000 {
				return usagef("--timed-sampling takes a frequency from 1 to 10000 (Hz), or 0 for off")
			}
			if o.Probing == 0 && (c.Flags().Changed("reattach") || c.Flags().Changed("probing-check") || c.Flags().Changed("probing-wait")) {
				return usagef("--reattach, --probing-check and --probing-wait go with --dynamic-probing N")
			}
			if o.ProbingCheck <= 0 || o.ProbingWait <= 0 {
				return usagef("--probing-check and --probing-wait must be positive durations")
			}
			if o.Duration < 0 {
				return usagef("--duration must not be negative")
			}
			var res tracer.Result
			err := start(pid, args,
				func(stop <-chan struct{}) (err error) { res, err = tracer.Attach(o, pid, stop); return err },
				func() (err error) { res, err = tracer.Launch(o, args); return err })
			if err != nil {
				return err
			}
			stderr := c.ErrOrStderr()
			for _, w := range res.Warnings {
				warnf(stderr, "%s", w)
			}
			fmt.Fprintf(stderr, "culprit: %d calls of %d functions written to %s (%s); probes set in %s, removed in %s\n", res.Calls, res.Probes, o.Output, humanBytes(res.Bytes),
				res.Attach.Round(time.Millisecond), res.Detach.Round(time.Millisecond))
			if res.ExitCode > 0 {
				return exitError{res.ExitCode}
			}
			return nil
		},
	}
	f := c.Flags()
	f.SetInterspersed(false)
	f.StringArrayVarP(&funcs, "func", "f", nil, "trace the functions of the program whose symbol names match this glob; PATTERN#N records the first and every N-th call; repeatable")
	f.StringArrayVar(&libs, "lib", nil, "trace functions of a shared library: LIB:PATTERN[#N], LIB a path or a name such as libc.so.6 or libz; repeatable")
	f.BoolVar(&o.Args, "args", false, "record each call's arguments (named and typed from DWARF) and its return value")
	f.IntVar(&o.TimedHz, "timed-sampling", 0, "record calls only in alternate phases of 1/HZ seconds, gathering then dormant (Perun's timed sampling: a cpu-clock event flips a flag the probes read); 0: always")
	f.Uint64Var(&o.Probing, "dynamic-probing", 0, "remove a function's probes once it has been called this many times (Perun's dynamic probing; the thesis uses 100000); 0: never")
	f.BoolVar(&o.ProbingReattach, "reattach", false, "with --dynamic-probing: set removed probes again after an interval (--probing-wait) that doubles each time")
	f.DurationVar(&o.ProbingCheck, "probing-check", 100*time.Millisecond, "with --dynamic-probing: how often the call counts are read")
	f.DurationVar(&o.ProbingWait, "probing-wait", time.Second, "with --reattach: the first interval before removed probes are set again")
	f.StringVarP(&o.Output, "output", "o", "culprit.rec", "recording file to write")
	f.IntVarP(&pid, "pid", "p", 0, "attach to this running process instead of launching a command")
	f.DurationVar(&o.Duration, "duration", 0, "stop tracing after this long, e.g. 500ms, 10s (default: until the command exits, or Ctrl-C)")
	c.Flags().SortFlags = false
	return c
}
