package cli

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/culprit-dev/culprit/internal/analysis/sched"
	"github.com/culprit-dev/culprit/internal/render"
)

func newStates() *cobra.Command {
	var (
		ff        filterFlags
		format    string
		output    string
		intervals bool
	)
	c := &cobra.Command{
		Use:   "states [flags] [FILE]",
		Short: "Show each thread's time on the CPU, runnable and blocked, and who woke it",
		Long: `States splits each thread's time, from a recording made with
culprit record --events wakeup (or culprit trace --sched), into time on the
CPU, runnable (preempted, or woken and waiting for a CPU), blocked on a lock
(futex waits: mutexes, condition variables), blocked on I/O (pipes, sockets,
disk, poll), sleeping and stopped, and names the threads whose wake-ups ended
its waits: a lock's holder, a condition's signaller, a queue's producer.

Most common uses:
  culprit states run.rec                      per thread, with its wakers
  culprit states --format json run.rec        the same, for scripts
  culprit states --format json --intervals run.rec   every interval too

Wake-ups from outside the recorded processes (a timer's interrupt on another
task, another program) end their waits with no waker named; with
--perf-events they are not recorded, and such a wait ends when the thread runs
again.`,
		Example: `  culprit record --events cpu,wakeup -o run.rec -- ./server
  culprit states run.rec`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if format != "text" && format != "json" {
				return usagef("unknown format %q: use text or json", format)
			}
			if intervals && format != "json" {
				return usagef("--intervals needs --format json")
			}
			flt, err := ff.filter()
			if err != nil {
				return err
			}
			p, err := loadProfile(args, c.ErrOrStderr(), false)
			if err != nil {
				return err
			}
			flt.AllEvents = true
			p = p.Apply(flt)
			tl, err := sched.States(p)
			if err != nil {
				return err
			}
			sums := tl.Summarize()
			return writeOutput(c.OutOrStdout(), output, func(w io.Writer) error {
				if format == "json" {
					return render.StatesJSON(w, tl, sums, intervals)
				}
				return render.StatesText(w, tl, sums)
			})
		},
	}
	f := c.Flags()
	f.StringVar(&format, "format", "text", "output format: text or json")
	f.StringVarP(&output, "output", "o", "-", "file to write (- for standard output)")
	f.BoolVar(&intervals, "intervals", false, "with --format json: every thread's intervals, with their wakers")
	f.StringVar(&ff.from, "from", "", "start of the time window, from the first sample")
	f.StringVar(&ff.to, "to", "", "end of the time window, from the first sample")
	f.SortFlags = false
	return c
}
