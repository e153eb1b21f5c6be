package cli

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/culprit-dev/culprit/internal/analysis/introperf"
	"github.com/culprit-dev/culprit/internal/loader"
	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/render"
)

func newLatency() *cobra.Command {
	var (
		ff     filterFlags
		mode   string
		format string
		output string
		events string
		top    int
	)
	c := &cobra.Command{
		Use:   "latency [flags] FILE",
		Short: "Infer function latencies from the stacks of system calls and context switches",
		Long: `Latency infers function latencies from the stacks of a recording made with
culprit record --events cpu,syscalls,sched (IntroPerf), slowest first.

Most common uses:
  culprit latency run.rec                          the slowest function instances
  culprit latency --format json run.rec            every instance, for scripts
  culprit latency --format chrome -o run.json run.rec   a timeline for Perfetto

How latencies are inferred: docs/cli.md (culprit latency), docs/introperf.md.`,
		Example: `  culprit record --events cpu,syscalls,sched -o run.rec -- ./server
  culprit latency run.rec
  culprit latency --mode aggressive --format chrome -o run.trace.json run.rec`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			m, err := introperf.ParseMode(mode)
			if err != nil {
				return usageError{err}
			}
			if format != "text" && format != "json" && format != "chrome" {
				return usagef("unknown format %q: use text, json or chrome", format)
			}
			if top < 0 {
				return usagef("--top takes a positive number")
			}
			set, err := introperf.ParseEvents(events)
			if err != nil {
				return usageError{err}
			}
			flt, err := ff.filter()
			if err != nil {
				return err
			}
			path := "culprit.rec"
			if len(args) > 0 {
				path = args[0]
			}
			// The text prints the slowest instances, selected as they are
			// inferred; JSON and Chrome traces list them all in time order.
			o := introperf.Options{KeepInstances: format != "text", Timeline: true}
			if format == "text" {
				o.Slowest = introperf.NewSlowest(m, top)
			}
			p, r, err := loadRun(path, c.ErrOrStderr(), flt, set, o)
			if err != nil {
				return err
			}
			defer r.Close()
			return writeOutput(c.OutOrStdout(), output, func(w io.Writer) error {
				switch format {
				case "json":
					return render.LatencyJSON(w, r, render.LatencyView{Mode: m, Name: path})
				case "chrome":
					return render.LatencyChrome(w, p, r, m)
				}
				return render.LatencyText(w, r, render.LatencyView{Mode: m, Top: top, Name: path, Slowest: o.Slowest})
			})
		},
	}
	f := c.Flags()
	f.StringVar(&mode, "mode", "conservative", "latency estimate: conservative or aggressive")
	f.StringVar(&format, "format", "text", "output format: text, json or chrome")
	f.StringVarP(&output, "output", "o", "-", "file to write (- for standard output)")
	f.IntVar(&top, "top", 40, "instances to print in text output (0: all)")
	f.StringVar(&events, "events", "cpu,syscalls,sched", "events whose stacks are used: cpu, syscalls, sched")
	f.StringVar(&ff.kernel, "kernel", "include", "kernel frames: include, exclude or only")
	f.StringVar(&ff.from, "from", "", "start of the time window, from the first sample")
	f.StringVar(&ff.to, "to", "", "end of the time window, from the first sample")
	ff.registerHide(f, "latency")
	f.SortFlags = false
	return c
}

// loadRun reads one recording with all its events, checks that it holds the
// kernel events IntroPerf needs (unless only CPU samples were asked for), and
// runs the latency inference on it.
func loadRun(path string, stderr io.Writer, flt profile.Filter, set introperf.EventSet, o introperf.Options) (*profile.Profile, *introperf.Result, error) {
	// The inference goes through the samples in time order: they are read
	// again from the recording rather than held.
	p, err := loadProfileWith([]string{path}, stderr, loader.Options{Stream: true})
	if err != nil {
		return nil, nil, err
	}
	return analyzeRun(p, []string{path}, stderr, flt, set, o)
}

// analyzeRun runs the latency inference on p, every event of the
// recordings paths, after checking that it holds the kernel events
// IntroPerf needs (unless only CPU samples were asked for).
func analyzeRun(p *profile.Profile, paths []string, stderr io.Writer, flt profile.Filter, set introperf.EventSet, o introperf.Options) (*profile.Profile, *introperf.Result, error) {
	path := strings.Join(paths, ", ")
	if !p.HasSamples() {
		return nil, nil, fmt.Errorf("%s has no samples", path)
	}
	counts := introperf.CountEvents(p)
	kernelEvents := -counts[0]
	for _, n := range counts {
		kernelEvents += n
	}
	if kernelEvents == 0 && set != introperf.EventsCPU {
		return nil, nil, fmt.Errorf("%s has no system call or context switch events (only %d CPU samples), and IntroPerf infers latencies from the stacks of those events.\n"+
			"Record with: culprit record --events cpu,syscalls,sched -o %s -- CMD ARGS...\n"+
			"(or pass --events cpu to infer latencies from CPU samples alone)", path, counts[0], path)
	}
	flt.AllEvents = true
	p = p.Apply(flt)
	loads, err := loader.ObjectLoads(paths)
	if err != nil {
		warnf(stderr, "%s: mapping times not read (%v): plug-ins are shown as libraries", path, err)
	}
	o.Events = set
	o.Loads = loads
	r := introperf.Analyze(p, o)
	if r.Err != nil {
		r.Close()
		return nil, nil, r.Err
	}
	if r.Used == 0 {
		return nil, nil, fmt.Errorf("%s: no event with a stack among the selected events (%s)", path, set)
	}
	if r.Empty > 0 && r.Empty*10 > r.Used {
		warnf(stderr, "%s: %d events had empty stacks and were skipped", path, r.Empty)
	}
	return p, r, nil
}

// writeOutput writes through write to stdout (output "-" or "") or to the
// file output. A file is written under a temporary name beside it and
// renamed into place, so a failed write leaves an existing file as it was
// and a reader never sees half of one.
func writeOutput(stdout io.Writer, output string, write func(io.Writer) error) error {
	if output == "" || output == "-" {
		bw := bufio.NewWriter(stdout)
		if err := write(bw); err != nil {
			return err
		}
		return bw.Flush()
	}
	if fi, err := os.Stat(output); err == nil && !fi.Mode().IsRegular() {
		// A device or a pipe (/dev/stdout, a FIFO) cannot be renamed over.
		f, err := os.OpenFile(output, os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("opening %s: %w", output, err)
		}
		bw := bufio.NewWriter(f)
		err = write(bw)
		if err == nil {
			err = bw.Flush()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("writing %s: %w", output, err)
		}
		return nil
	}
	f, err := os.CreateTemp(filepath.Dir(output), "."+filepath.Base(output)+".tmp*")
	if err != nil {
		return fmt.Errorf("creating %s: %w", output, err)
	}
	bw := bufio.NewWriter(f)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Chmod(0o644) // an output to share, as os.Create makes it under the usual umask
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), output)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("writing %s: %w", output, err)
	}
	return nil
}
