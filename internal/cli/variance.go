package cli

import (
	"bufio"
	"debug/elf"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/culprit-dev/culprit/internal/analysis/sched"
	"github.com/culprit-dev/culprit/internal/analysis/variance"
	"github.com/culprit-dev/culprit/internal/elfx"
	"github.com/culprit-dev/culprit/internal/expr"
	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/render"
	"github.com/culprit-dev/culprit/internal/tracer"
)

func newVariance() *cobra.Command {
	var (
		spec        variance.Spec
		funcs       []string
		libs        []string
		pid         int
		duration    time.Duration
		output      string
		input       string
		format      string
		k           int
		d           float64
		rounds      int
		perRound    int
		interactive bool
		tree        bool
		schedEv     bool
		queue       string
		budget      float64
		window      time.Duration
		setShare    float64
	)
	c := &cobra.Command{
		Use:   "variance --start FUNC [--end FUNC] [flags] -- CMD [ARGS...]\n  culprit variance --start FUNC [--end FUNC] -p PID --duration D\n  culprit variance -i FILE",
		Short: "Find the functions that make a request's latency vary (VProfiler)",
		Long: `Variance times semantic intervals of an unmodified program (a request, a
transaction) with eBPF uprobes and splits the variance of their latency into
the variances and covariances of the functions they call, refining down the
call tree on the running program, as VProfiler does without a rebuild.

Most common uses:
  culprit variance --start handle_request -- ./server      each call is an interval
  culprit variance --start recv_req --end send_reply --key 'id' -p PID
  culprit variance --start usdt:culprit:interval_start --end usdt:culprit:interval_end --key arg1 --functions 'parse,handle_*' -- ./server
  culprit variance -i variance.rec --tree                  reread, draw the tree

An interval is each call of --start, or runs from --start's entry to --end's
return on one thread, or across threads when --key pairs them. The report:
interval statistics, the top factors with their share of the variance and
call sites, rounds, tree height and breadth. --format json adds the tree and
each interval's row (start in CLOCK_MONOTONIC ns, duration, key, threads, time
in each node of the tree), to pair with a program's own log of its requests.
Method, flags and how it differs from VProfiler: docs/variance.md.`,
		Example: `  culprit variance --start handle_request -- ./server --threads 4
  culprit variance --start handle_request --functions 'parse_*,lookup' -- ./server
  culprit variance --start submit --end complete --key id -- ./pipeline
  culprit variance --start dispatch -p 1234 --duration 30s --format json
  culprit variance -i variance.rec --tree`,
		RunE: func(c *cobra.Command, args []string) error {
			stderr := c.ErrOrStderr()
			if format != "text" && format != "json" {
				return usagef("unknown format %q: use text or json", format)
			}
			if k <= 0 {
				return usagef("--k takes a positive number of factors")
			}
			if d < 0 || d >= 1 {
				return usagef("-d is a fraction of the variance, from 0 to 1 (e.g. 0.05)")
			}
			if budget < 0 || window < 0 {
				return usagef("--trap-budget and --window cannot be negative")
			}
			if setShare < 0 || setShare > 1 {
				return usagef("--set-share is a fraction of the time, from 0 to 1")
			}
			if rounds < 1 || perRound < 2 {
				return usagef("--rounds must be at least 1 and --round-intervals at least 2")
			}
			if queue != "" {
				enq, deq, ok := strings.Cut(queue, ":")
				if !ok || enq == "" || deq == "" || strings.Contains(deq, ":") {
					return usagef("--queue %q: want ENQUEUE:DEQUEUE, the functions that put an item in the queue and take it out, e.g. --queue push_job:pop_job", queue)
				}
				if spec.Key != "" {
					return usagef("--key and --queue pair an interval's halves in two ways: give one (--queue-key pairs the queue's two ends)")
				}
				if spec.End == "" || spec.End == spec.Start {
					return usagef("--queue hands an interval to another thread: give the --end function that thread runs")
				}
				spec.Enqueue, spec.Dequeue = enq, deq
			} else if spec.QueueKey != "" {
				return usagef("--queue-key pairs the ends of a --queue: give --queue ENQUEUE:DEQUEUE")
			}
			if input != "" {
				if len(args) > 0 || pid != 0 {
					return usagef("-i reads a recording: give no command or -p with it")
				}
				if interactive {
					return usagef("--interactive asks while the program runs whether to probe further: -i reads a recording, whose probes were set")
				}
				return varianceReport(c.OutOrStdout(), stderr, input, spec, k, d, format, tree)
			}
			if spec.Start == "" {
				return usagef("no interval: give --start FUNC (and --end FUNC when another function ends it)")
			}
			if spec.End == "" {
				spec.End = spec.Start
			}
			if spec.Attach != "" && spec.Key == "" {
				return usagef("--attach joins calls to the interval of their key: give --key (an expression over --start's, --end's and --attach's parameters)")
			}
			if spec.Key != "" && spec.End == spec.Start {
				return usagef("--key pairs a start with an end on any thread: give an --end function other than --start")
			}
			exe := ""
			if pid > 0 {
				exe = fmt.Sprintf("/proc/%d/exe", pid)
			} else if len(args) > 0 {
				exe, _ = exec.LookPath(args[0])
			}
			var cg map[string][]string
			if exe != "" {
				g, err := tracer.CallGraph(exe)
				if err != nil {
					warnf(stderr, "%v: no automatic refinement", err)
				}
				cg = g
			}
			heights := variance.Heights(cg)
			o := tracer.Options{Output: output, Duration: duration, Tool: "culprit " + Version, Args: spec.Key != "" || spec.QueueKey != "", Sched: schedEv, SchedPathOnly: true,
				TrapBudget: budget, Window: window, SetShare: setShare,
				Extra: map[string]string{variance.ExtraStart: spec.Start, variance.ExtraEnd: spec.End, variance.ExtraKey: spec.Key, variance.ExtraAttach: spec.Attach,
					variance.ExtraQueue: spec.Queue(), variance.ExtraQueueKey: spec.QueueKey}}
			// Keys through pointers (c->id) are read at the probes.
			for _, k := range append([]string{spec.Key}, strings.Split(spec.QueueKey, ":")...) {
				if readsMemory(k) {
					o.Reads = append(o.Reads, k)
				}
			}
			names := []string{spec.Start, spec.End}
			if spec.Enqueue != "" {
				names = append(names, spec.Enqueue, spec.Dequeue)
			}
			if spec.Attach != "" {
				names = append(names, spec.Attach)
			}
			if len(funcs) > 0 {
				names = append(names, funcs...)
			} else {
				for _, f := range calleesOf(cg, spec.Start, spec.End, spec.Attach) {
					if probeable(f) {
						names = append(names, tracer.GlobQuote(f)) // a C++ name may hold [ ] * ?
					}
				}
			}
			for _, l := range libs {
				p, err := tracer.ParsePattern(l, true)
				if err != nil {
					return usageError{err}
				}
				o.Patterns = append(o.Patterns, p)
			}
			seen := map[string]bool{}
			marks := false
			for _, n := range names {
				if seen[n] {
					continue
				}
				seen[n] = true
				var p tracer.Pattern
				var err error
				if u, ok := strings.CutPrefix(n, variance.USDTPrefix); ok {
					p, err = tracer.ParseUSDT(u)
					marks = true
				} else {
					p, err = tracer.ParsePattern(n, false)
				}
				if err != nil {
					return usageError{err}
				}
				o.Patterns = append(o.Patterns, p)
			}
			// A Go program's goroutines park and are readied by the Go
			// scheduler, which the kernel does not see: probe it.
			var goRT variance.GoRuntime
			var goFunc func(uint64) string
			if schedEv && exe != "" && isGoExe(exe) {
				o.Args = true
				o.Reads = append(o.Reads, variance.GoSchedReads...)
				want := variance.GoSchedFuncs
				if cg != nil && rounds > 1 {
					// Refinement names the wakers' functions by the
					// runtime functions they called.
					want = append(slices.Clone(want), variance.GoUserEntries...)
				}
				fns, err := tracer.FuncsIn(exe, want)
				if err != nil {
					return err
				}
				for _, n := range fns {
					if !seen[n] {
						seen[n] = true
						p, err := tracer.ParsePattern(n, false)
						if err != nil {
							return usageError{err}
						}
						o.Patterns = append(o.Patterns, p)
					}
				}
				var errs []error
				goRT, errs = goRuntimeOf(exe)
				goFunc = tracer.FuncAt(exe)
				for _, err := range errs {
					warnf(stderr, "%v", err)
				}
			}
			if marks && len(funcs) == 0 && len(libs) == 0 {
				warnf(stderr, "the interval is marked by USDT probes: give --functions to time the functions called between the marks")
			}
			ref := &refiner{spec: spec, cg: cg, heights: heights, k: k, d: d, rounds: rounds, perRound: perRound,
				interactive: interactive, stderr: stderr, goRT: goRT, goFunc: goFunc}
			if interactive {
				// The questions are asked on the terminal, not on the
				// standard input and error, which are the program's and
				// may be redirected. Without one every answer would be
				// no, unasked.
				tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
				if err != nil {
					return usagef("--interactive asks on the terminal before breaking each function down, and there is none (%v): run it from a terminal, or without --interactive", err)
				}
				defer tty.Close()
				ref.in, ref.tty = bufio.NewReader(tty), tty
			}
			if cg != nil && rounds > 1 {
				o.Refine = ref.refine
			}
			res, err := runTracer(o, pid, args, stderr)
			if err != nil {
				return err
			}
			fmt.Fprintf(stderr, "culprit: %d calls of %d functions in %d rounds written to %s (%s)\n", res.Calls, res.Probes+len(ref.added), res.Rounds, output, humanBytes(res.Bytes))
			if err := varianceReport(c.OutOrStdout(), stderr, output, spec, k, d, format, tree); err != nil {
				return err
			}
			if res.ExitCode > 0 {
				return exitError{res.ExitCode}
			}
			return nil
		},
	}
	f := c.Flags()
	f.SetInterspersed(false)
	f.StringVar(&spec.Start, "start", "", "the function whose entry starts an interval (a request, a transaction), or a USDT probe usdt:PROVIDER:NAME (culprit/interval.h's usdt:culprit:interval_start)")
	f.StringVar(&spec.End, "end", "", "the function whose return ends it, or a USDT probe usdt:PROVIDER:NAME (default: --start, each call an interval)")
	f.StringVar(&spec.Key, "key", "", "pair starts and ends across threads by this expression over both functions' integer, pointer or char * (by its string) parameters (DWARF names) and what their pointers point to (read at entry), e.g. id, 'fd*65536+seq' or 'c->id'")
	f.StringVar(&spec.Attach, "attach", "", "with --key, a function whose calls join the interval of their key while it is open (a worker taking a request up on another thread)")
	f.StringVar(&queue, "queue", "", "ENQUEUE:DEQUEUE: the interval crosses a queue; the thread whose DEQUEUE returns the item its start's thread ENQUEUEd takes it over, up to that thread's next --end")
	f.StringVar(&spec.QueueKey, "queue-key", "", "pair the queue's ends by an expression, EXPR or ENQ_EXPR:DEQ_EXPR (DEQUEUE's return value is `return`), e.g. 'job:return' (default: in order, a FIFO queue)")
	f.StringSliceVar(&funcs, "functions", nil, "functions (globs) to probe in the first round, comma-separated (default: those --start calls)")
	f.StringArrayVar(&libs, "lib", nil, "also probe functions of a shared library in the first round: LIB:PATTERN, LIB a path or a name such as libevent; repeatable")
	f.IntVar(&k, "k", 3, "factors chosen in each round (VProfiler's k)")
	f.Float64VarP(&d, "threshold", "d", 0.05, "least share of the variance a chosen factor has (VProfiler's d)")
	f.IntVar(&rounds, "rounds", 8, "most rounds of probes (1: no refinement)")
	f.IntVar(&perRound, "round-intervals", 1000, "intervals timed in a round before its factors are chosen")
	f.BoolVar(&interactive, "interactive", false, "ask before breaking each chosen function down further")
	f.BoolVar(&schedEv, "sched", false, "also record the scheduler's switches and wake-ups, to split each factor's time into on-CPU, runnable and blocked (lock, I/O, sleep) and follow each interval's critical path across threads: functions a waker ran while the interval waited become factors, 'F (waker)', and refinement probes the functions on the wakers' stacks; on a Go program, the goroutines' (the Go scheduler probed)")
	f.Float64Var(&budget, "trap-budget", 10000, "most probe traps a second, on average (each costs the program 1-10 µs, two per call): above it the probes are set for --window at a time with pauses between, and only the intervals inside a window are analysed; 0: no limit")
	f.DurationVar(&window, "window", time.Second, "with --trap-budget: how long the probes stay set at a time")
	f.Float64Var(&setShare, "set-share", 0.05, "with --trap-budget: once over the budget, the most share of the time the probes are set, their setting and removal included (a trap's cost moves tenfold with the machine's load; this bounds what the probes take from the program); 0: no bound")
	f.BoolVar(&tree, "tree", false, "print the variance tree")
	f.StringVar(&format, "format", "text", "output format: text or json (json: also the tree and each interval's row)")
	f.StringVarP(&output, "output", "o", "variance.rec", "recording file to write")
	f.StringVarP(&input, "input", "i", "", "analyse this recording of culprit variance instead of running anything")
	f.IntVarP(&pid, "pid", "p", 0, "attach to this running process instead of launching a command")
	f.DurationVar(&duration, "duration", 0, "stop after this long, e.g. 30s (default: until the command exits, or Ctrl-C)")
	c.Flags().SortFlags = false
	return c
}

// refiner is Algorithm 3 on the running program: after each round's
// intervals, the chosen factors' functions have their callees probed.
type refiner struct {
	spec        variance.Spec
	goRT        variance.GoRuntime  // a Go program's runtime (goRuntimeOf)
	goFunc      func(uint64) string // names a Go program's return addresses (tracer.FuncAt)
	cg          map[string][]string
	heights     map[string]int
	k           int
	d           float64
	rounds      int
	perRound    int
	interactive bool
	stderr      io.Writer
	round       int
	last        []string // the factors chosen last round
	added       []string
	in          *bufio.Reader // with interactive, the terminal's answers
	tty         io.Writer     // and where the questions are asked
	// wakers are the functions the wake-ups ending the intervals' waits
	// came from (--sched), opened those whose callees were proposed.
	wakers []string
	opened map[string]bool
}

func (r *refiner) refine(calls []recording.Call, probes []recording.Probe, off []recording.ProbesOff, lost []recording.Lost, events []tracer.SchedEvent) ([]string, bool) {
	in := variance.FromRecords(r.spec, calls, probes, off, lost)
	in.Heights, in.K, in.D = r.heights, r.k, r.d
	var live *liveSched
	if len(events) > 0 && !in.Goroutines {
		// The critical paths as they ran: functions of a waker that are
		// probed are factors "F (waker)", refined like the others.
		if live = newLiveSched(events); live.tl != nil {
			schedStates(&in, live.tl)
			in.Spans = true
		}
	} else if in.Go != nil {
		// The goroutines' critical paths; the functions that made the
		// wake-ups on them (the callers of the runtime's channel, select
		// and mutex functions) are the wakers' to propose.
		// The kernel's switches of the goroutines' threads tell when the
		// thread of a running goroutine was preempted.
		var kernel *sched.Timeline
		if len(events) > 0 {
			kernel = newLiveSched(events).tl
		}
		tl, funcs := goTimeline(in.Go, in.Calls, in.Probes, r.goRT, r.goFunc, kernel)
		schedStates(&in, tl)
		in.Spans = true
		live = &liveSched{tl: tl, funcs: funcs, base: map[string]bool{}}
	}
	res, err := variance.Analyse(in)
	if res == nil || res.Intervals < r.perRound {
		return nil, false
	}
	if err != nil {
		fmt.Fprintf(r.stderr, "culprit: round %d: %v; refinement stops\n", res.Rounds, err)
		return nil, true
	}
	var chosen, labels []string
	for _, f := range res.Factors {
		chosen = append(chosen, f.Label())
		labels = append(labels, fmt.Sprintf("%s %.1f%%", f.Label(), 100*f.Contribution))
	}
	fmt.Fprintf(r.stderr, "culprit: round %d: %d intervals, mean %s, p99 %s; factors: %s\n", res.Rounds, res.Intervals,
		render.Duration(res.Mean), render.Duration(res.P99), strings.Join(labels, ", "))
	if res.Rounds >= r.rounds {
		return nil, true
	}
	probed := map[string]bool{}
	for _, p := range probes {
		probed[p.Function] = true
	}
	// Functions of the threads that ended the intervals' waits, from the
	// wake-ups' stacks, chosen by their share of the variance and their
	// specificity as factors are (k, d). A probe's return trampoline
	// hides the frames above it from the unwinder, so each is proposed
	// the round its stack shows it. A waker that returned in none of the
	// round's calls (its thread's loop) is timed by nothing: its callees
	// are proposed instead; so are those of a waker whose stacks show it
	// is its thread's base, without probing it first.
	var wk []string
	if live != nil && live.tl != nil {
		ret := returned(calls, probes)
		// The candidates: not yet chosen, and not timed by a probe
		// already (a probed function that returns is a node of the
		// tree, chosen or not as its factors are).
		var cands []wakerShare
		for _, w := range live.wakers(res) {
			if slices.Contains(r.wakers, w.fn) || probed[w.fn] && ret[w.fn] || !probed[w.fn] && !probeable(w.fn) {
				continue
			}
			cands = append(cands, w)
		}
		r.wakers = append(r.wakers, selectWakers(cands, r.heights, res.Top, r.k, r.d)...)
		for _, f := range r.wakers {
			switch {
			case !probed[f] && live.base[f] && !r.opened[f]:
				// A waker thread's base (its start routine): it returns
				// only when the thread ends, so its callees are probed
				// at once rather than it first.
				wk = r.open(f, probed, wk)
			case !probed[f] && !r.opened[f]:
				if probeable(f) {
					wk = append(wk, f)
				}
			case !ret[f] && !r.opened[f]:
				wk = r.open(f, probed, wk)
			}
		}
	}
	if slices.Equal(chosen, r.last) && len(wk) == 0 {
		return nil, true
	}
	r.last = chosen
	var more []string
	for _, f := range res.Factors {
		fn := f.Function()
		if fn == "" {
			continue
		}
		var kids []string
		for _, c := range r.cg[fn] {
			if !probed[c] && probeable(c) {
				kids = append(kids, c)
			}
		}
		if len(kids) == 0 {
			continue
		}
		if r.interactive && !r.ask(fmt.Sprintf("break %s (%.1f%% of the variance) down further, into %d callees?", fn, 100*f.Contribution, len(kids))) {
			continue
		}
		for _, c := range kids {
			probed[c] = true
			more = append(more, c)
		}
	}
	var woke []string
	for _, c := range wk {
		if probed[c] || r.interactive && !r.ask(fmt.Sprintf("probe %s, which a thread ending the intervals' waits ran?", c)) {
			continue
		}
		probed[c] = true
		woke = append(woke, c)
	}
	if len(woke) > 0 {
		fmt.Fprintf(r.stderr, "culprit: probing %d functions of the threads that ended the intervals' waits: %s\n", len(woke), abbreviate(woke, 8))
		more = append(more, woke...)
	}
	if len(more) == 0 {
		return nil, true
	}
	fmt.Fprintf(r.stderr, "culprit: probing %d more functions: %s\n", len(more), abbreviate(more, 8))
	r.added = append(r.added, more...)
	return more, false
}

// open marks f opened (its callees proposed instead of it) and appends to
// wk its static callees that are neither probed nor untraceable.
func (r *refiner) open(f string, probed map[string]bool, wk []string) []string {
	if r.opened == nil {
		r.opened = map[string]bool{}
	}
	r.opened[f] = true
	for _, c := range r.cg[f] {
		if !probed[c] && probeable(c) {
			wk = append(wk, c)
		}
	}
	return wk
}

// ask asks q on the terminal; an empty answer is yes, the end of the
// terminal's input (Ctrl-D) no: a user who closes it wants no more rounds.
func (r *refiner) ask(q string) bool {
	fmt.Fprintf(r.tty, "culprit: %s [Y/n] ", q)
	line, err := r.in.ReadString('\n')
	if err != nil && line == "" {
		fmt.Fprintln(r.tty)
		return false
	}
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "" || a == "y" || a == "yes"
}

func abbreviate(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:n], ", ") + fmt.Sprintf(" and %d more", len(names)-n)
}

// varianceReport analyses a recording of culprit variance and prints it.
func varianceReport(stdout, stderr io.Writer, path string, spec variance.Spec, k int, d float64, format string, tree bool) error {
	p, err := loadProfile([]string{path}, stderr, false)
	if err != nil {
		return err
	}
	res, err := varianceOf(p, path, spec, k, d, false, nil)
	if err != nil {
		return err
	}
	if format == "json" {
		return render.VarianceJSON(stdout, res)
	}
	return render.VarianceText(stdout, res, tree)
}

// varianceOf runs the variance analysis on the traced calls of p, read
// from path, with the interval spec (the recording's own when not given);
// spans keeps each interval's span and critical path in the result; tl,
// when given, is the recording's scheduler timeline (else made from p).
func varianceOf(p *profile.Profile, path string, spec variance.Spec, k int, d float64, spans bool, tl *sched.Timeline) (*variance.Result, error) {
	rec, ok := variance.SpecOf(p.Metas)
	if spec.Start == "" {
		if !ok {
			return nil, fmt.Errorf("%s was not made by culprit variance: give --start (and --end) to say what an interval is", path)
		}
		spec = rec
	} else {
		if spec.End == "" {
			spec.End = spec.Start
		}
		if spec.Enqueue == "" {
			spec.Enqueue, spec.Dequeue, spec.QueueKey = rec.Enqueue, rec.Dequeue, rec.QueueKey
		}
	}
	if len(p.Probes) == 0 {
		return nil, fmt.Errorf("%s has no traced calls: record it with culprit variance or culprit trace", path)
	}
	in := variance.FromProfile(p, spec)
	in.K, in.D, in.Spans = k, d, spans
	// Heights from the call graph of the object the start function is in.
	for _, pr := range p.Probes {
		if pr.Function == spec.Start {
			if cg, err := tracer.CallGraph(pr.Object); err == nil {
				in.Heights = variance.Heights(cg)
			}
			break
		}
	}
	var warn string
	if in.Go != nil {
		// A Go program's states and critical paths are its goroutines'.
		rt := variance.GoRuntime{PollRG: -1, PollWG: -1}
		for _, pr := range p.Probes {
			if pr.Function == "runtime.gopark" {
				rt, _ = goRuntimeOf(pr.Object)
				break
			}
		}
		// The kernel's timeline of the threads, when recorded: their
		// preemptions while the runtime ran a goroutine.
		kernel := tl
		if kernel == nil && hasSched(p.Metas) {
			kernel, _ = sched.States(p)
		}
		gtl, _ := goTimeline(in.Go, in.Calls, in.Probes, rt, nil, kernel)
		schedStates(&in, gtl)
	} else if in.Goroutines && (tl != nil || hasSched(p.Metas)) {
		warn = "no scheduler states: they are the OS threads', and the calls of a Go program are placed by goroutine, and the recording has no probes on the Go scheduler (culprit variance --sched sets them)"
	} else if tl != nil {
		schedStates(&in, tl)
	} else if hasSched(p.Metas) {
		if tl, err := sched.States(p); err != nil {
			warn = fmt.Sprintf("no scheduler states: %v", err)
		} else {
			schedStates(&in, tl)
		}
	}
	in.Fallback = true
	res, err := variance.Analyse(in)
	if res != nil && warn != "" {
		res.Warnings = append(res.Warnings, warn)
	}
	return res, err
}

func hasSched(metas []recording.Meta) bool {
	for _, m := range metas {
		if m.Extra["sched"] == "1" {
			return true
		}
	}
	return false
}

// schedStates gives the analysis the scheduler states of the recording's
// threads: a call's time split into on-cpu, runnable, lock, io, sleep, and
// each interval's critical path (wake-up edges and the queue's hand-offs).
func schedStates(in *variance.Input, tl *sched.Timeline) {
	// overlap calls fn with each of thread tid's state intervals that
	// overlap [from, to) and the length of the overlap.
	overlap := func(tid uint32, from, to uint64, fn func(iv sched.Interval, ns uint64)) bool {
		th := tl.Thread(tid)
		if th == nil || to <= from {
			return false
		}
		iv := th.Intervals
		for i := sort.Search(len(iv), func(i int) bool { return iv[i].To > from }); i < len(iv) && iv[i].From < to; i++ {
			if lo, hi := max(iv[i].From, from), min(iv[i].To, to); hi > lo {
				fn(iv[i], hi-lo)
			}
		}
		return true
	}
	in.States = func(tid uint32, from, to uint64) map[string]uint64 {
		out := map[string]uint64{}
		if !overlap(tid, from, to, func(iv sched.Interval, ns uint64) { out[iv.State.String()] += ns }) {
			return nil
		}
		return out
	}
	in.Holders = func(tid uint32, from, to uint64) map[string]uint64 {
		out := map[string]uint64{}
		ok := overlap(tid, from, to, func(iv sched.Interval, ns uint64) {
			w := tl.Thread(iv.Waker)
			if iv.Waker == 0 || iv.State != sched.Lock && !(iv.State.Blocked() && w != nil && w.Source) {
				return
			}
			name := "?"
			if w != nil && w.Name != "" {
				name = w.Name
			}
			if iv.Waker&variance.GoroutineLane != 0 && w != nil {
				out[name] += ns // "goroutine ID"
				return
			}
			out[fmt.Sprintf("%s[%d]", name, iv.Waker)] += ns
		})
		if !ok {
			return nil
		}
		return out
	}
	in.Path = func(from uint64, endTID uint32, end uint64, handoffs []variance.Handoff) []variance.Segment {
		var hs []sched.Handoff
		for _, h := range handoffs {
			hs = append(hs, sched.Handoff{From: sched.Point{TID: h.FromTID, Time: h.From}, To: sched.Point{TID: h.ToTID, Time: h.To}})
		}
		var out []variance.Segment
		for _, s := range tl.CriticalPath(from, sched.Point{TID: endTID, Time: end}, hs) {
			sg := variance.Segment{TID: s.TID, From: s.From, To: s.To, State: s.State.String(), For: s.For}
			if s.Wait != sched.Unknown {
				sg.Wait = s.Wait.String()
			}
			out = append(out, sg)
		}
		return out
	}
}

// readsMemory reports whether a key expression goes through memory (a
// member, an element, a dereference) rather than only registers.
func readsMemory(src string) bool {
	if src == "" {
		return false
	}
	n, err := expr.Parse(src)
	if err != nil {
		return false // the analysis says what is wrong with it
	}
	var walk func(expr.Node) bool
	walk = func(n expr.Node) bool {
		switch n := n.(type) {
		case *expr.Member, *expr.Index:
			return true
		case *expr.Unary:
			return n.Op == "*" || walk(n.X)
		case *expr.Binary:
			return walk(n.X) || walk(n.Y)
		case *expr.Cast:
			return walk(n.X)
		}
		return false
	}
	return walk(n)
}

// isGoExe reports whether the executable at path was built by Go.
func isGoExe(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	return elfx.IsGo(f)
}

// calleesOf returns the callees in the call graph cg of the functions the
// names name, each a function's name or a glob in any enclosing scope as
// -f takes it (--start handle names svc::handle).
func calleesOf(cg map[string][]string, names ...string) []string {
	var out []string
	for _, name := range names {
		if name == "" {
			continue
		}
		if cs, ok := cg[name]; ok {
			out = append(out, cs...)
			continue
		}
		for _, fn := range slices.Sorted(maps.Keys(cg)) {
			if elfx.MatchName(name, fn) {
				out = append(out, cg[fn]...)
			}
		}
	}
	return out
}
