package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/culprit-dev/culprit/internal/expr"
	"github.com/culprit-dev/culprit/internal/ptracer"
	"github.com/culprit-dev/culprit/internal/recorder"
	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/rules"
	"github.com/culprit-dev/culprit/internal/schema"
	"github.com/culprit-dev/culprit/internal/state"
)

func formatVersion() string {
	return fmt.Sprintf("%d.%d", recording.MajorVersion, recording.MinorVersion)
}

func newRecord() *cobra.Command {
	var (
		o         recorder.Options
		pid       int
		collector string
		exprSpecs []string
		rulesPath string
		jitter    float64
		values    string
		depth     int
		windows   string
	)
	c := &cobra.Command{
		Use:   "record [flags] -- CMD [ARGS...]\n  culprit record -p PID [--duration D] [flags]",
		Short: "Record where a command or a running process spends CPU time",
		Long: `Record samples the CPU time of a command and its whole process tree (threads,
forks, execs), or of a running process, with kernel and user call chains, into
a recording (default culprit.rec). Needs root.

Most common uses:
  culprit record -- ./prog ARGS                 the command's CPU time at 999 Hz
  culprit record -p PID --duration 30s          a running process for 30 s
  culprit record --call-graph dwarf -- ./prog   code built without frame pointers

Call-graph modes, collectors, events and values: docs/cli.md (culprit record).`,
		Example: `  culprit record -- ./server --port 8080
  culprit record -F 4999 --call-graph dwarf -o slow.rec -- make -j2
  culprit record -p 1234 --duration 30s
  culprit record --events cpu,syscalls,sched -- ./server   # for culprit latency/contexts
  culprit record --collector ptrace -p 1234 --duration 10s  # stop threads to sample them`,
		RunE: func(c *cobra.Command, args []string) error {
			o.Tool = "culprit " + Version
			if !o.TickClock && o.Frequency < 1 {
				return usagef("-F %d: the sampling frequency is in samples per second of CPU time, at least 1 (default 999)", o.Frequency)
			}
			if o.Duration < 0 {
				return usagef("--duration %v: a duration is positive, e.g. 500ms or 10s (leave it out to record until the command exits, or Ctrl-C)", o.Duration)
			}
			if o.SyscallLimit < 0 || o.SyscallLimit > 1e9 {
				return usagef("--syscall-limit %d: system calls a second per thread, 1 to 1000000000, or 0 to record every call", o.SyscallLimit)
			}
			if o.SyscallBurst < 0 || o.SyscallBurst > 1<<20 {
				return usagef("--syscall-burst %d: system calls a thread may make at once beyond --syscall-limit, 0 to %d", o.SyscallBurst, 1<<20)
			}
			on, period, above, werr := parseWindows(windows)
			if werr != nil {
				return usageError{werr}
			}
			if above > 0 && o.SyscallLimit == 0 {
				// Every call asked for: recorded all along.
				on, period, above = 0, 0, 0
			}
			o.SyscallWindowOn, o.SyscallWindowPeriod, o.SyscallWindowAbove = on, period, above
			if pid != 0 {
				if err := checkPID(pid); err != nil {
					return err
				}
			}
			var specs []*expr.Spec
			for _, e := range exprSpecs {
				spec, err := expr.ParseSpec(e)
				if err != nil {
					return usageError{err}
				}
				specs = append(specs, spec)
			}
			if err := checkSpecs(specs, pid, args, c.ErrOrStderr()); err != nil {
				return err
			}
			var sc *schema.Schema
			if values != "" {
				var err error
				if sc, err = valuesSchema(values, pid, args, c.ErrOrStderr()); err != nil {
					return err
				}
			}
			var rf *rules.File
			if rulesPath != "" {
				var err error
				if rf, err = rules.ParseFile(rulesPath); err != nil {
					return err
				}
			}
			if len(specs) > 0 || rf != nil || values != "" {
				// Expressions, rules and values are evaluated at each
				// sample by the collector's state hook: over the copies a
				// perf sample carries, or the whole memory of a thread
				// stopped by ptrace.
				sampler := state.NewSampler(specs, rf, 1)
				if values != "" {
					sampler.EnableValues(state.ValueOptions{Depth: depth, Globals: true, Schema: sc})
				}
				o.State = stateHook{sampler}
			}
			stderr := c.ErrOrStderr()
			switch collector {
			case "perf":
				o.Jitter = jitter
				if c.Flags().Changed("stack-size") && o.StackBytes == 0 {
					o.StackBytes = recorder.NoStackCopy
				}
			case "ptrace":
				return recordPtrace(c, o, pid, args, jitter)
			default:
				return usagef("unknown collector %q: use perf or ptrace", collector)
			}
			if o.TickClock {
				if err := o.CheckTickClock(); err != nil {
					return usageError{err}
				}
			}
			var res recorder.Result
			err := start(pid, args,
				func(stop <-chan struct{}) (err error) { res, err = recorder.Attach(o, pid, stop); return err },
				func() (err error) { res, err = recorder.Launch(o, args); return err })
			if err != nil {
				return err
			}
			for _, w := range res.Warnings {
				warnf(stderr, "%s", w)
			}
			out := o.Output
			if out == "" {
				out = "culprit.rec"
			}
			fmt.Fprintf(stderr, "culprit: %d samples%s written to %s (%s)\n", res.Samples, lostNote(res.Lost, res.Throttled), out, humanBytes(res.Bytes))
			if res.ExitCode > 0 {
				return exitError{res.ExitCode}
			}
			return nil
		},
	}
	f := c.Flags()
	f.SetInterspersed(false)
	o.Frequency = 999
	f.VarP(freqFlag{&o}, "freq", "F", "samples per second of CPU time per thread, or tick: a sample at each tick of the kernel's scheduler that finds a thread of the target running (HZ a second, "+tickRate()+"), which adds no timer interrupt of its own (fp mode; not with --values, --expr, --rules or --jitter; docs/cli.md)")
	f.BoolVar(&o.ThreadClock, "per-thread-clock", false, "sample CPU time with a cpu-clock event on each thread of the target (inherited by new threads and children), as perf record -p, instead of one event per CPU whose samples a BPF program keeps for the target's processes, as perf record -a filtered (the default where BPF and per-CPU events are allowed, without --jitter: a thread's own event restarts its timer at each switch onto a CPU, which costs a server that blocks once per request, docs/performance.md)")
	f.StringVar(&o.CallGraph, "call-graph", "fp", "how user stacks are unwound: fp (frame pointers, leaf repaired by CFI) or dwarf (copied stack, CFI)")
	f.StringVarP(&o.Output, "output", "o", "culprit.rec", "recording file to write")
	f.IntVarP(&pid, "pid", "p", 0, "attach to this running process instead of launching a command")
	f.DurationVar(&o.Duration, "duration", 0, "stop recording after this long, e.g. 500ms, 10s, 2m (default: until the command exits, or Ctrl-C)")
	f.StringSliceVar(&o.Events, "events", []string{"cpu"}, "what to sample, comma-separated: cpu (CPU time), syscalls (every system call entry and exit), sched (every context switch: off-CPU time), wakeup (who woke whom, and switches onto a CPU; implies sched)")
	f.IntVar(&o.EventPeriod, "event-period", 1, "with syscalls or sched: record one in N of those events, to bound the cost on syscall-heavy programs")
	f.IntVar(&o.SyscallLimit, "syscall-limit", 5000, "with syscalls, where culprit's BPF program records them: record at most N system calls a second per thread (beyond a burst of --syscall-burst), counting the others in the period of the thread's next recorded call, to bound the cost on syscall-heavy programs; a context switch inside a call left out is recorded without its stacks (when and how the thread left the CPU), a preemption there with them within the same budget; 0 records every call (docs/performance.md)")
	f.IntVar(&o.SyscallBurst, "syscall-burst", 256, "with --syscall-limit: the system calls a thread may make at once, beyond the limit's rate, that are all recorded")
	f.StringVar(&windows, "syscall-windows", "auto", "with syscalls, where culprit's BPF program records them: record system calls only in the first ON of every PERIOD (ON/PERIOD, e.g. 10ms/100ms), no program running at a call outside them; each recorded call's period is scaled by PERIOD/ON, so counts and shares are estimates, and a call still in progress when its window closes has no exit (long calls count less); context switches too are recorded in the windows only, each standing for PERIOD/ON (with wakeup every one is recorded all along); auto records every call (within --syscall-limit) while the traced threads make at most "+strconv.Itoa(recorder.AutoWindowAbove)+" calls a second, and in windows of "+recorder.AutoWindowOn.String()+"/"+recorder.AutoWindowPeriod.String()+" above (not with --syscall-limit 0, which records every call all along); off records calls all along; contexts compares a run recorded in windows with one recorded all along by thinning the latter to the former's windows (docs/introperf.md)")
	f.BoolVar(&o.PerfEvents, "perf-events", false, "with syscalls or sched: record system calls and context switches with perf's tracepoint events instead of culprit's BPF program (used in fp mode without --event-period, with cpu or wakeup events): the same samples at about twice the cost (docs/performance.md)")
	f.BoolVar(&o.SyscallUserStacks, "syscall-user-stacks", false, "with syscalls: record system call entries and exits with their user frames only (the kernel's frames there are always the same entry path; culprit latency and contexts then have no kernel instances for system calls); halves the cost per event where perf records them (dwarf mode, --event-period, --perf-events)")
	f.StringArrayVar(&exprSpecs, "expr", nil, "sample an expression: 'PROG@FUNC@EXPR' evaluates EXPR (e.g. n, j->size, cfg.limits[2]) in the frame of FUNC whenever FUNC is on the stack of program PROG (globs; a PROG naming a shared object, libfoo.so, evaluates EXPR in that object's functions and globals in any process that maps it); repeatable; see culprit report --exprs")
	f.StringVar(&values, "values", "", "sample the values of variables with each sample (vProf; for culprit diagnose): --values=SCHEMA samples the variables a schema file lists (culprit schema BINARY -o SCHEMA), --values alone those of a schema made for the main executable; each live in the sampled frame or its --unwind-depth callers, and its globals")
	f.Lookup("values").NoOptDefVal = "auto"
	f.IntVar(&depth, "unwind-depth", 3, "with --values: caller frames whose variables are sampled too")
	f.Float64Var(&jitter, "jitter", 0, "vary each sampling interval at random by up to ±PCT percent (0 to 90), so sampling cannot run in lock step with periodic code")
	f.StringVar(&rulesPath, "rules", "", "a rules file saying what to capture where: backtraces, expressions, counts, start/stop (see docs/rules.md)")
	f.IntVar(&o.StackBytes, "stack-size", 0, "user stack bytes copied per sample (default in fp mode: 8192, each thread's copy then ending where its earlier stacks needed, up to 24576, unless --expr, --rules or --values are given; 4096 for Go programs; 16384 in dwarf mode; max 65528; 0: none, the frame-pointer chain alone as perf record -g)")
	f.IntVar(&o.RingPages, "mmap-pages", 0, "ring buffer pages per CPU, a power of two (default: sized from rate and stack size)")
	f.BoolVar(&o.FastStart, "fast-start", false, "cut a launched command's wait for the kernel at its start (8-30 ms when no perf event has existed for a second) by asking for an expedited RCU grace period: /sys/kernel/rcu_expedited is set to 1 around culprit's first perf_event_open (a fraction of a millisecond) and put back, also if culprit is killed; an expedited grace period interrupts every CPU, so it is refused on machines with nohz_full or isolated CPUs; needs root")
	f.StringVar(&collector, "collector", "perf", "how samples are taken: perf (perf events, the program never stops) or ptrace (each sampled thread is stopped, read and resumed)")
	c.Flags().SortFlags = false
	return c
}

// freqFlag is record's -F: a frequency in Hz, or tick (Options.TickClock).
type freqFlag struct{ o *recorder.Options }

func (f freqFlag) String() string {
	if f.o.TickClock {
		return "tick"
	}
	return strconv.Itoa(f.o.Frequency)
}

func (f freqFlag) Set(v string) error {
	if v == "tick" {
		f.o.TickClock = true
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return fmt.Errorf("%q is no frequency: give samples per second of CPU time (e.g. 999) or tick", v)
	}
	f.o.Frequency, f.o.TickClock = n, false
	return nil
}

func (freqFlag) Type() string { return "HZ|tick" }

// tickRate says the scheduler's tick rate here, for the help.
func tickRate() string {
	if hz := recorder.TickRate(); hz > 0 {
		return fmt.Sprintf("%d here", hz)
	}
	return "unknown here"
}

// recordPtrace runs the ptrace collector with the flags that apply to it.
func recordPtrace(c *cobra.Command, o recorder.Options, pid int, args []string, jitter float64) error {
	f := c.Flags()
	if o.TickClock {
		return usagef("-F tick applies to --collector perf only: --collector ptrace stops threads at a timer of its own")
	}
	for _, name := range []string{"call-graph", "stack-size", "mmap-pages", "event-period"} {
		if f.Changed(name) {
			return usagef("--%s applies to --collector perf only (ptrace unwinds each stopped thread's live stack with CFI)", name)
		}
	}
	if f.Changed("events") && (len(o.Events) != 1 || o.Events[0] != "cpu") {
		return usagef("--events applies to --collector perf only: --collector ptrace samples CPU time")
	}
	po := ptracer.Options{Output: o.Output, Frequency: o.Frequency, Duration: o.Duration, Tool: o.Tool, Jitter: jitter, State: o.State, FastStart: o.FastStart}
	var res ptracer.Result
	err := start(pid, args,
		func(stop <-chan struct{}) (err error) { res, err = ptracer.Attach(po, pid, stop); return err },
		func() (err error) { res, err = ptracer.Launch(po, args); return err })
	if err != nil {
		return err
	}
	stderr := c.ErrOrStderr()
	for _, w := range res.Warnings {
		warnf(stderr, "%s", w)
	}
	out := po.Output
	if out == "" {
		out = "culprit.rec"
	}
	fmt.Fprintf(stderr, "culprit: %d samples%s written to %s (%s); ptrace stops (%s): %.1f µs median, %.1f µs p99\n",
		res.Samples, lostNote(res.Lost, 0), out, humanBytes(res.Bytes), res.Mechanism,
		float64(res.CostMedian.Nanoseconds())/1e3, float64(res.CostP99.Nanoseconds())/1e3)
	if res.ExitCode > 0 {
		return exitError{res.ExitCode}
	}
	return nil
}

func lostNote(lost, throttled uint64) string {
	switch {
	case lost > 0 && throttled > 0:
		return fmt.Sprintf(" (%d lost, throttled %d times)", lost, throttled)
	case lost > 0:
		return fmt.Sprintf(" (%d lost)", lost)
	case throttled > 0:
		return fmt.Sprintf(" (throttled %d times)", throttled)
	}
	return ""
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// start checks the target flags and runs attach — with a channel closed on
// Ctrl-C, SIGTERM or SIGHUP — or launch.
func start(pid int, args []string, attach func(stop <-chan struct{}) error, launch func() error) error {
	switch {
	case pid != 0 && len(args) > 0:
		return usagef("give either -p PID or a command, not both")
	case pid != 0:
		stop := make(chan struct{})
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
		defer signal.Stop(sigs)
		go func() {
			defer func() { recover() }() // a collector goroutine never ends culprit
			<-sigs
			close(stop)
		}()
		return attach(stop)
	case len(args) == 0:
		return usagef("no command to record: use culprit record -- CMD [ARGS...] or -p PID")
	}
	return launch()
}

// checkSpecs resolves the --expr specs against the program about to be
// sampled, before it starts: a name that exists nowhere in it is a usage
// error (with the close one that does, if any); a pattern that matches
// only programs it may exec later, or a function only a library may
// define, is a warning.
func checkSpecs(specs []*expr.Spec, pid int, args []string, stderr io.Writer) error {
	exe := mainExe(pid, args)
	if exe == "" {
		return nil
	}
	var fatal []string
	for _, sp := range specs {
		for _, p := range state.CheckSpec(sp, exe) {
			if p.Fatal {
				fatal = append(fatal, p.Msg)
			} else {
				warnf(stderr, "%s", p.Msg)
			}
		}
	}
	if len(fatal) > 0 {
		return usageError{errors.New(strings.Join(fatal, "\nculprit: "))}
	}
	return nil
}

// checkPID refuses a process culprit cannot profile, before attaching,
// with the reason: a kernel thread (no user code), or another user's
// process for a user without the privilege.
func checkPID(pid int) error {
	if pid < 0 {
		return usagef("-p %d: a process ID is positive", pid)
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil // gone: attaching says so
	}
	// comm is in parentheses and may hold spaces; flags is the 7th field after it.
	i := strings.LastIndexByte(string(stat), ')')
	fields := strings.Fields(string(stat[i+1:]))
	comm := string(stat[strings.IndexByte(string(stat), '(')+1 : i])
	const pfKthread = 0x00200000
	if len(fields) > 6 {
		var flags uint64
		fmt.Sscan(fields[6], &flags)
		if flags&pfKthread != 0 {
			return usagef("-p %d: %s is a kernel thread, which runs no user code to profile: give the ID of a user process (culprit records user programs and the kernel code they call)", pid, comm)
		}
	}
	// The kernel lets a user without CAP_SYS_PTRACE profile only processes
	// whose user IDs are all the user's own.
	if uid := os.Getuid(); uid != 0 && !hasCapability(capSysPtrace) {
		if owner, ok := processUIDs(pid); ok && (owner[0] != uid || owner[1] != uid || owner[2] != uid) {
			return fmt.Errorf("-p %d: %s is not your process (it runs as user %d, you are %d): profile your own processes, or run culprit as root (or with CAP_SYS_PTRACE and CAP_PERFMON)",
				pid, comm, owner[1], uid)
		}
	}
	return nil
}

const capSysPtrace = 19

// hasCapability reports whether culprit runs with a capability in its
// effective set.
func hasCapability(bit uint) bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			var eff uint64
			fmt.Sscanf(strings.TrimSpace(v), "%x", &eff)
			return eff&(1<<bit) != 0
		}
	}
	return false
}

// processUIDs returns the real, effective and saved user IDs of a process.
func processUIDs(pid int) ([3]int, bool) {
	var out [3]int
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return out, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Uid:"); ok {
			n, _ := fmt.Sscan(v, &out[0], &out[1], &out[2])
			return out, n == 3
		}
	}
	return out, false
}

// parseWindows reads --syscall-windows ON/PERIOD, auto or off (on 0).
func parseWindows(s string) (on, period time.Duration, above int, err error) {
	switch s {
	case "off":
		return 0, 0, 0, nil
	case "auto":
		return recorder.AutoWindowOn, recorder.AutoWindowPeriod, recorder.AutoWindowAbove, nil
	}
	on, period, err = parseOnPeriod(s)
	return on, period, 0, err
}

func parseOnPeriod(s string) (on, period time.Duration, err error) {
	a, b, ok := strings.Cut(s, "/")
	if !ok {
		return 0, 0, fmt.Errorf("--syscall-windows %q: ON/PERIOD, two durations, e.g. 10ms/100ms, or auto, or off", s)
	}
	if on, err = time.ParseDuration(a); err != nil {
		return 0, 0, fmt.Errorf("--syscall-windows %q: ON %q is not a duration, e.g. 10ms", s, a)
	}
	if period, err = time.ParseDuration(b); err != nil {
		return 0, 0, fmt.Errorf("--syscall-windows %q: PERIOD %q is not a duration, e.g. 100ms", s, b)
	}
	if err := recorder.CheckSyscallWindows(on, period); err != nil {
		return 0, 0, fmt.Errorf("--syscall-windows %q: %v", s, err)
	}
	if on == 0 {
		return 0, 0, fmt.Errorf("--syscall-windows %q: ON is above 0", s)
	}
	return on, period, nil
}
