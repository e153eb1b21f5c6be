package cli

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/culprit-dev/culprit/internal/analysis/trace"
	"github.com/culprit-dev/culprit/internal/elfx"
	"github.com/culprit-dev/culprit/internal/loader"
	"github.com/culprit-dev/culprit/internal/proc"
	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recorder"
	"github.com/culprit-dev/culprit/internal/symbol"
	"github.com/culprit-dev/culprit/internal/traceprog"
	"github.com/culprit-dev/culprit/internal/tracer"
	"github.com/culprit-dev/culprit/internal/userfile"
)

func newTrace() *cobra.Command {
	var (
		o        tracer.Options
		pid      int
		funcs    []string
		libs     []string
		opt      optimizations
		optimize string
		noOpt    []string
		diffBase string
		diffGit  string
		strategy string
		sample   uint32
		lines    []string
		usdts    []string
	)
	c := &cobra.Command{
		Use:   "trace -f PATTERN[#N]... [flags] -- CMD [ARGS...]\n  culprit trace -f PATTERN[#N]... -p PID [--duration D]",
		Short: "Time every call of chosen functions of a command or a running process",
		Long: `Trace times every call of chosen functions with eBPF uprobes: each call's
start, inclusive and exclusive duration, thread, depth and traced caller, and
with --args its arguments and return value by their DWARF types. The probes
are set before the program's first instruction and removed however culprit
ends.

Most common uses:
  culprit trace -f 'parse_*' -- ./prog input      every call of the parse functions
  culprit trace -f '*' --optimize basic -- ./prog  the whole program, fewer probes
  culprit trace -f handle_request -p PID --duration 10s

Read the recording with culprit report (--calls FUNC lists the slowest
calls), export --format chrome and diff. Patterns (#N sampling, --lib,
--line, --usdt), the optimizations and what is counted: docs/trace.md.`,
		Example: `  culprit trace -f 'parse_*' -f compress -- ./server --port 8080
  culprit trace -f 'fib#100' --args -- ./fib 30
  culprit trace -f 'send_*' --args --read 'b->len' -- ./server
  culprit trace --lib libz.so.1:deflate -f main -- ./zip big.txt
  culprit trace --usdt app:request_start:request_done -- ./server
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
			for _, l := range lines {
				p, err := tracer.ParseLine(l)
				if err != nil {
					return usageError{err}
				}
				o.Patterns = append(o.Patterns, p)
			}
			for _, u := range usdts {
				p, err := tracer.ParseUSDT(u)
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
			switch strategy {
			case "", "custom":
			case "all", "a_sampled":
				o.Patterns = append(o.Patterns, tracer.Pattern{Glob: "*"})
			case "userspace", "u_sampled":
				o.Patterns = append(o.Patterns, tracer.Pattern{Glob: "*", UserOnly: true})
			default:
				return usagef("--strategy %q: use custom (the -f patterns only), all, userspace, a_sampled or u_sampled", strategy)
			}
			if strings.HasSuffix(strategy, "_sampled") && !c.Flags().Changed("sample") {
				sample = 20
			}
			if sample > 1 {
				for i := range o.Patterns {
					if o.Patterns[i].Every == 0 {
						o.Patterns[i].Every = uint32(sample)
					}
				}
			}
			if len(o.Patterns) == 0 {
				return usagef("nothing to trace: give -f PATTERN (a glob on function names, e.g. -f 'parse_*' or -f 'ns::Class::*'), --lib LIB:PATTERN, --line FILE:LINE or --usdt PROVIDER:NAME[:END]")
			}
			if o.TimedHz < 0 || o.TimedHz > 10000 {
				return usagef("--timed-sampling takes a frequency from 1 to 10000 (Hz), or 0 for off")
			}
			if o.Probing == 0 && (c.Flags().Changed("reattach") || (c.Flags().Changed("probing-check") || c.Flags().Changed("probing-wait")) && optimize == "") {
				return usagef("--reattach goes with --dynamic-probing N; --probing-check and --probing-wait with --dynamic-probing N or --optimize")
			}
			if o.ProbingCheck <= 0 || o.ProbingWait <= 0 {
				return usagef("--probing-check and --probing-wait must be positive durations")
			}
			if len(o.Reads) > 0 && !o.Args {
				return usagef("--read goes with --args: it records a value the arguments point to")
			}
			if o.Depth < 0 || o.Depth > traceprog.MaxDepth {
				return usagef("--depth takes a number of nested traced calls from 1 to %d, or 0 for all", traceprog.MaxDepth)
			}
			if o.Duration < 0 {
				return usagef("--duration must not be negative")
			}
			exe := ""
			if pid > 0 {
				exe = fmt.Sprintf("/proc/%d/exe", pid)
			} else if len(args) > 0 {
				exe, _ = exec.LookPath(args[0])
			}
			stderr := c.ErrOrStderr()
			pipeline := optimize != ""
			if err := opt.pipeline(optimize, noOpt); err != nil {
				return err
			}
			if opt.KeepHot < 0 {
				opt.KeepHot = 0 // no pipeline: off unless given
			}
			if opt.Budget < 0 {
				opt.Budget = 0 // off unless given or in the basic pipeline
			}
			if err := opt.validate(); err != nil {
				return err
			}
			if opt.Diff != "" && diffBase == "" && !pipeline {
				return usagef("--diff-tracing compares with an older build of the program: give it with --diff-base PATH or @REV (a stored run's)")
			}
			if (diffBase != "" || diffGit != "") && opt.Diff == "" {
				return usagef("--diff-base and --diff-git go with --diff-tracing MODE or --optimize advanced|full")
			}
			if strings.HasPrefix(diffBase, "@") && opt.Diff != "" {
				path, commit, err := storedProgram(diffBase, exe, stderr)
				if err != nil {
					return err
				}
				diffBase = path
				if diffGit == "" {
					diffGit = commit // the source diff from that commit, too
				}
			}
			if o.Probing == 0 {
				o.Probing = opt.Probing
			}
			if o.TrapBudget < 0 || o.Window <= 0 {
				return usagef("--trap-budget cannot be negative and --window must be a positive duration")
			}
			if c.Flags().Changed("window") && o.TrapBudget == 0 {
				return usagef("--window goes with --trap-budget N")
			}
			if o.TrapBudget > 0 && o.Probing > 0 {
				return usagef("--trap-budget and --dynamic-probing both remove probes to bound the cost: use one")
			}
			if c.Flags().Changed("dynamic-probing") || o.TrapBudget > 0 {
				// the threshold given is for every function; a trap
				// budget bounds the hot functions' cost instead
				opt.HotProbing = 0
			}
			if opt.HotProbing > 0 && o.Probing == 0 && !c.Flags().Changed("probing-check") {
				// Only the hot functions are checked: a few map reads,
				// cheap to make often, and each check's delay is calls
				// of the busiest functions traced in full.
				o.ProbingCheck = 20 * time.Millisecond
			}
			if err := preOptimize(&o, opt, exe, pid, diffBase, diffGit, pipeline, stderr); err != nil {
				return err
			}
			if o.CPUHz < -1 || o.CPUHz > 10000 {
				return usagef("--cpu-sample takes a frequency from 1 to 10000 (Hz), or 0 for off")
			}
			if o.CPUHz < 0 {
				// Quietly: the help and docs/trace.md say how the rate follows the pool.
				o.CPUHz = defaultCPURate(exe)
			}
			if o.CPUHz > 0 {
				o.CPUSamples = cpuSamplesPath(exe)
				defer os.Remove(o.CPUSamples)
			}
			// The build's statistics are gathered as the calls are
			// written, not read back from the recording.
			sum := trace.NewSummary()
			o.Observe = sum.Add
			res, err := runTracer(o, pid, args, stderr)
			if err != nil {
				return err
			}
			sched := ""
			if o.Sched {
				sched = fmt.Sprintf(" and %d scheduler events", res.Events)
			}
			samples := ""
			if res.Samples > 0 {
				samples = fmt.Sprintf(" with %d CPU samples", res.Samples)
			}
			fmt.Fprintf(stderr, "culprit: %d calls of %d functions%s written to %s (%s)%s; probes set in %s, removed in %s\n", res.Calls, res.Probes, sched, o.Output, humanBytes(res.Bytes),
				samples, res.Attach.Round(time.Millisecond), res.Detach.Round(time.Millisecond))
			if err := keepStats(exe, sum, o.CPUSamples, o.CPUHz, res.Removed, stderr); err != nil {
				warnf(stderr, "keeping the functions' statistics for the next trace: %v", err)
			}
			if res.ExitCode > 0 {
				return exitError{res.ExitCode}
			}
			return nil
		},
	}
	f := c.Flags()
	f.SetInterspersed(false)
	f.StringArrayVarP(&funcs, "func", "f", nil, "trace the functions of the program whose names (C++ and Rust ones demangled: 'ns::Class::method', also without outer scopes: 'Class::method') or symbols match this glob; PATTERN#N records the first and every N-th call; repeatable")
	f.StringArrayVar(&lines, "line", nil, "record each time the program reaches a source line, [LIB@]FILE:LINE (from the DWARF line table; FILE may be a base name; LIB@: in that shared library); repeatable")
	f.StringArrayVar(&usdts, "usdt", nil, "record each hit of the USDT probe [LIB@]PROVIDER:NAME (sys/sdt.h; its semaphore is counted up while traced), or time the code between two as a call, [LIB@]PROVIDER:BEGIN:END; repeatable")
	f.StringArrayVar(&libs, "lib", nil, "trace functions of a shared library: LIB:PATTERN[#N], LIB a path or a name such as libc.so.6 or libz; repeatable")
	f.StringVar(&strategy, "strategy", "", "which functions of the program to trace besides -f (Perun's strategies): custom (only -f), all (every function symbol), userspace (all but the compiler's and C library's helpers: names starting __ or _ and a capital, _init, _fini, frame_dummy, the tm_clones), a_sampled and u_sampled (all and userspace with --sample 20 unless given)")
	f.Uint32Var(&sample, "sample", 0, "record the first and every N-th call of every traced function (Perun's global sampling); a pattern's #N takes priority")
	f.BoolVar(&o.Args, "args", false, "record each call's arguments (named and typed from DWARF) and its return value")
	f.StringArrayVar(&o.Reads, "read", nil, "with --args: also record, at each call's entry, what this expression over a pointer parameter reads (p->len, c->req->hdr.id, *p, p[2]; member offsets and types from DWARF), shown as p->len=4; at most 2 a function; repeatable")
	f.BoolVar(&o.Sched, "sched", false, "also record the threads' scheduler events (switches, with the blocking stack, and who woke whom), for culprit states")
	f.IntVar(&o.CPUHz, "cpu-sample", -1, "also sample where the traced program's time goes, this many times a second per CPU, and keep the counts with the build's statistics: --keep-hot and the pipelines judge what is hot by them (the probes' own traps told apart); 0: off (default: 99 for a build's first trace; while its pool of traces of many and of few probes holds fewer than 500 samples an untraced run would have taken, the rate at which a trace as long as the last brings it to 500, at most 9999 and 2,000 samples over the last trace's length, at a cost to the traced calls' times; 99 once it holds 2,000; otherwise the rate at which the samples take 1% of the program's time by what a sample costs on this machine, measured and kept beside the statistics, 99 to 999)")
	f.BoolVar(&o.NoCPU, "no-cpu-time", false, "do not measure each call's time on the CPU, only its wall duration (saves a BPF program on every context switch of the machine and two map lookups per call)")
	f.IntVar(&o.Depth, "depth", 0, "record only calls made with fewer than this many traced calls open below them on their thread (1: the outermost traced calls); 0: all")
	f.IntVar(&o.TimedHz, "timed-sampling", 0, "record calls only in alternate phases of 1/HZ seconds, gathering then dormant (Perun's timed sampling: a cpu-clock event flips a flag the probes read); 0: always")
	f.Uint64Var(&o.Probing, "dynamic-probing", 0, "remove a function's probes once it has been called this many times (Perun's dynamic probing; the thesis uses 100000); 0: never")
	f.BoolVar(&o.ProbingReattach, "reattach", false, "with --dynamic-probing: set removed probes again after an interval (--probing-wait) that doubles each time")
	f.DurationVar(&o.ProbingCheck, "probing-check", 100*time.Millisecond, "with --dynamic-probing or --optimize: how often the call counts are read")
	f.DurationVar(&o.ProbingWait, "probing-wait", time.Second, "with --reattach or --optimize: the first interval before removed probes are set again")
	f.StringVar(&opt.Baseline, "dynamic-baseline", "", "leave out the functions an earlier trace of the same build found called too often or too constant to be worth it (Perun's dynamic baseline): soft or strict")
	f.StringVar(&opt.Shaping, "call-graph-shaping", "", "leave out functions by the program's static call graph (Perun's call-graph shaping): match (those main cannot reach), soft or strict (trimming: also the lower levels, keeping the top half or quarter), prune (the bottom functions and short chains of their callers)")
	f.StringVar(&opt.Static, "static-baseline", "", "leave out functions whose machine code bounds their time by a class at most this one, from the nesting of their loops (Perun's static baseline): constant, linear, quadratic, cubic or quartic")
	f.StringVar(&opt.Diff, "diff-tracing", "", "trace only the functions that changed since an older build (--diff-base), compared by call graph and control-flow graph (Perun's diff tracing): soft (instruction counts), semi-strict (mnemonics) or strict (operands too)")
	f.StringVar(&diffBase, "diff-base", "", "with --diff-tracing: the older build of the program to compare with, a file or @REV (the program as a stored run of that commit recorded it; its git diff counts too)")
	f.StringVar(&diffGit, "diff-git", "", "with --diff-tracing: also count as changed the functions the hunks of `git diff REV` (run here) name")
	f.StringVar(&opt.Sampling, "dynamic-sampling", "", "record every N-th call of each function, N chosen from its call-graph level and an earlier trace's counts to aim at 10,000 (soft) or 1,000 (strict) records (Perun's dynamic sampling)")
	f.StringVar(&optimize, "optimize", "", "a pipeline of Perun's optimizations: basic (call-graph shaping strict, dynamic baseline strict), advanced (diff tracing semi-strict, shaping soft, dynamic baseline and sampling soft) or full (diff tracing strict, shaping prune, static baseline, dynamic baseline and sampling soft, dynamic probing 100000); flags given set their method")
	f.StringVar(&opt.Stats, "stats", "", "the earlier statistics dynamic baseline, dynamic sampling and --keep-hot start from: @REV, a stored trace of that commit (default: the last trace of this build)")
	f.Float64Var(&opt.KeepHot, "keep-hot", -1, "keep, whatever call-graph shaping and the baselines say, the functions over this per cent of the exclusive time earlier traces of the build recorded (default 1 with --optimize, else 0: off)")
	f.Float64Var(&opt.Budget, "probe-budget", -1, "after the other methods, leave out the functions deepest in the call graph until at most this per cent of those matched (at least 10) are probed, counting those --keep-hot and diff tracing protect, which stay (default 10 with --optimize basic, else 0: off)")
	f.StringArrayVar(&opt.HotFrom, "hot-from", nil, "with --keep-hot or --optimize: judge which functions are hot by the CPU samples of this recording of culprit record of the same program and workload (untraced, so not inflated by the probes' cost) instead of earlier traces; repeatable, to pool runs")
	f.StringArrayVar(&noOpt, "no-optimize", nil, "switch off one method of the --optimize pipeline: "+strings.Join(optNames, ", ")+"; repeatable")
	f.Float64Var(&o.TrapBudget, "trap-budget", 0, "most probe traps a second, on average (each costs the program 1-10 µs, two per call): above it every probe is removed for a pause after each --window, and the calls made then are not recorded (as culprit variance does); 0: no limit, every call recorded")
	f.DurationVar(&o.Window, "window", time.Second, "with --trap-budget: how long the probes stay set at a time")
	f.StringVarP(&o.Output, "output", "o", "culprit.rec", "recording file to write")
	f.IntVarP(&pid, "pid", "p", 0, "attach to this running process instead of launching a command")
	f.DurationVar(&o.Duration, "duration", 0, "stop tracing after this long, e.g. 500ms, 10s (default: until the command exits, or Ctrl-C)")
	c.Flags().SortFlags = false
	return c
}

// statsFile is where the Dynamic Stats of traces of the executable with
// build-id bid are kept: $CULPRIT_TRACE_STATS, else culprit/trace-stats in
// the user's cache directory, one file per build-id.
// storedProgram finds the build of the program exe that a stored run of
// ref (@REV[:KEY=VALUE,...]) recorded: the newest such run's object of the
// same base name, as archived by build-id when the run was added (or still
// at its path, unchanged). It returns the file and the run's commit.
func storedProgram(ref, exe string, stderr io.Writer) (string, string, error) {
	if exe == "" {
		return "", "", fmt.Errorf("--diff-base %s: the program to trace was not found", ref)
	}
	if strings.HasPrefix(exe, "/proc/") {
		if p, err := os.Readlink(exe); err == nil {
			exe = p
		}
	}
	name := filepath.Base(exe)
	st, err := openStore()
	if err != nil {
		return "", "", err
	}
	defer st.Close()
	runs, err := storedRuns(st, ref)
	if err != nil {
		return "", "", fmt.Errorf("--diff-base: %w", err)
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].Added.After(runs[j].Added) })
	for _, r := range runs {
		rec, err := st.RecordingPath(r.Recording)
		if err != nil {
			return "", "", err
		}
		objs, err := loader.RecordedObjects([]string{rec})
		if err != nil {
			return "", "", err
		}
		for _, o := range objs {
			if filepath.Base(o.Path) != name {
				continue
			}
			if dir := symbol.ArchiveDir(); dir != "" {
				if p := symbol.ArchivePath(dir, o.BuildID); fileExists(p) {
					fmt.Fprintf(stderr, "culprit: diff tracing against %s as run %d of %.12s recorded it (build-id %x)\n", name, r.ID, r.Commit, o.BuildID)
					return p, r.Commit, nil
				}
			}
			if bytes.Equal(elfx.FileBuildID(o.Path), o.BuildID) {
				fmt.Fprintf(stderr, "culprit: diff tracing against %s as run %d of %.12s recorded it (build-id %x)\n", o.Path, r.ID, r.Commit, o.BuildID)
				return o.Path, r.Commit, nil
			}
		}
	}
	return "", "", fmt.Errorf("--diff-base %s: none of its %d stored runs recorded a %s still archived or on disk: store a run of that build (culprit run or history add) while it exists", ref, len(runs), name)
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// earlierStats reads the Dynamic Stats the pre-run optimizations start
// from: with ref (@REV[:KEY=VALUE]), those of the newest stored trace of
// that commit whose command ran a program of exe's name, computed from its
// recording as a trace computes them; otherwise those the last trace of
// this build left (an error satisfying os.IsNotExist when there is none).
func earlierStats(exe, ref string) (map[string]trace.FuncStats, error) {
	if ref == "" {
		path, err := statsFile(exe)
		if err != nil {
			return nil, err
		}
		return readStats(path)
	}
	p, err := storedTrace(exe, ref)
	if err != nil {
		return nil, err
	}
	return trace.DynamicStats(p), nil
}

// storedTrace loads the newest trace stored in the history store for
// commit ref (@REV) whose command ran a program named as exe is.
func storedTrace(exe, ref string) (*profile.Profile, error) {
	st, err := openStore()
	if err != nil {
		return nil, err
	}
	defer st.Close()
	runs, err := storedRuns(st, ref)
	if err != nil {
		return nil, fmt.Errorf("--stats: %w", err)
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].Added.After(runs[j].Added) })
	name := filepath.Base(exe)
	for _, r := range runs {
		if len(r.Command) == 0 || filepath.Base(r.Command[0]) != name {
			continue
		}
		if traced, err := st.TracedCalls(r.ID); err != nil || len(traced) == 0 {
			continue
		}
		path, err := st.RecordingPath(r.Recording)
		if err != nil {
			return nil, err
		}
		return loadProfile([]string{path}, io.Discard, false) // each sample's own time, for trace.InnermostOpen
	}
	return nil, fmt.Errorf("--stats %s: none of its %d stored runs is a trace of %s: store one (culprit trace, then culprit history add)", ref, len(runs), name)
}

func statsFile(exe string) (string, error) {
	bid := elfx.FileBuildID(exe)
	if len(bid) == 0 {
		return "", fmt.Errorf("%s has no build-id: its statistics cannot be told from another build's", exe)
	}
	dir := os.Getenv("CULPRIT_TRACE_STATS")
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("no cache directory: set CULPRIT_TRACE_STATS")
		}
		dir = filepath.Join(cache, "culprit", "trace-stats")
	}
	return filepath.Join(dir, hex.EncodeToString(bid)+".json"), nil
}

func readStats(path string) (map[string]trace.FuncStats, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var st map[string]trace.FuncStats
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("reading %s: %w (remove it to start again)", path, err)
	}
	return st, nil
}

// dynamicBaseline reads the stats an earlier trace of exe left and returns
// the functions to leave out, saying how many and why.
func dynamicBaseline(exe, statsRef string, b trace.Baseline, changed map[string]bool, stderr io.Writer) (map[string]bool, error) {
	st, err := earlierStats(exe, statsRef)
	if os.IsNotExist(err) && statsRef == "" {
		fmt.Fprintf(stderr, "culprit: dynamic baseline: no earlier trace of this build of %s, so nothing is left out this time (the statistics of this trace are kept for the next)\n", filepath.Base(exe))
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ex := trace.DynamicBaseline(st, b, changed)
	out := map[string]bool{}
	by := map[string]int{}
	for _, e := range ex {
		out[e.Function] = true
		by[e.Filter]++
	}
	var parts []string
	for _, f := range []string{"call_limit", "constant", "wrapped"} {
		if by[f] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", by[f], f))
		}
	}
	if len(parts) > 0 {
		fmt.Fprintf(stderr, "culprit: dynamic baseline leaves out %d functions (%s)\n", len(ex), strings.Join(parts, ", "))
	}
	return out, nil
}

// keepStats computes the Dynamic Stats of the trace just written (sum,
// its calls) and merges them into the executable's stats file (functions
// not traced this time keep their earlier stats, as in Perun). removed
// are the functions dynamic probing removed: their counts are of the
// calls made while their probes were set (FuncStats.Partial). cpu, when
// not "", is the recording of the CPU samples taken beside the trace, hz
// times a second: their counts are added to the build's (cpuStats).
func keepStats(exe string, sum *trace.Summary, cpu string, hz int, removed []string, stderr io.Writer) error {
	if exe == "" {
		return nil
	}
	path, err := statsFile(exe)
	if err != nil {
		return nil // no build-id: nothing to key them by
	}
	st, err := readStats(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	if st == nil {
		st = map[string]trace.FuncStats{}
	}
	partial := map[string]bool{}
	for _, f := range removed {
		partial[f] = true
	}
	now := sum.Stats()
	for name, s := range now {
		if partial[name] {
			s.Partial = true
			if old, ok := st[name]; ok && old.Count > s.Count {
				s.Count = old.Count // both are at least the calls made
			}
		}
		st[name] = s
	}
	data, err := json.MarshalIndent(st, "", " ")
	if err != nil {
		return err
	}
	if err := userfile.MkdirAll(filepath.Dir(path)); err != nil {
		return err
	}
	if err := userfile.Replace(path, func(f *os.File) error {
		_, err := f.Write(data)
		return err
	}); err != nil {
		return err
	}
	if cpu == "" {
		return nil
	}
	out, _ := tracer.JumpsOut(exe) // none known: every open call counts as itself
	own, traps, err := keepSamples(exe, path, cpu, hz, entryOffsets(sum.Probes(), exe), sum.Traps(), sum.InnermostOpen(out), stderr)
	if err != nil {
		return err
	}
	if w := probeCost(own, traps, now); w != "" {
		warnf(stderr, "%s", w)
	}
	// The next trace's rate may need this machine's cost of a sample:
	// measured now, after the traced program, when it is due, so that
	// the next trace does not start with it.
	if c, err := readCPUStats(cpuStatsFile(path)); err == nil {
		cpuRate(c, 0, func() int { return budgetRate(path) })
	}
	return nil
}

// probeCost warns when the probes cost the traced program more CPU time
// than its own code took: own and traps are the CPU samples taken beside
// the trace in the executable's code and in the probes' traps, st the
// trace's calls by function. The ratio is a lower bound of the slowing:
// the program's own code also runs slower after each trap (caches,
// branch predictors), and that time is counted as its own. "" when the
// probes cost less, or too few samples were taken to tell (fewer than
// 20).
func probeCost(own, traps int, st map[string]trace.FuncStats) string {
	if traps <= own || own+traps < 20 {
		return ""
	}
	type fc struct {
		name  string
		calls uint64
	}
	var fs []fc
	var all uint64
	for f, s := range st {
		fs = append(fs, fc{f, s.Count})
		all += s.Count
	}
	sort.Slice(fs, func(i, j int) bool {
		if fs[i].calls != fs[j].calls {
			return fs[i].calls > fs[j].calls
		}
		return fs[i].name < fs[j].name
	})
	var busy []string
	for _, f := range fs[:min(len(fs), 3)] {
		busy = append(busy, fmt.Sprintf("%s (%d calls)", f.name, f.calls))
	}
	slow := "it spent no sampled time in its own code"
	if r := float64(own+traps) / float64(max(own, 1)); own > 0 && r >= 10 {
		slow = fmt.Sprintf("it ran at least %.0f× slower than untraced", r)
	} else if own > 0 {
		slow = fmt.Sprintf("it ran at least %.1f× slower than untraced", r)
	}
	return fmt.Sprintf("the probes cost the program more time than its own code: %d of its CPU samples were in their traps, %d in its code: %s (each traced call traps twice, 1-11 µs). %d calls were made, most by %s. "+
		"To trace at less cost, remove a function's probes after N calls (--dynamic-probing N, or --optimize basic, which does so for the functions it keeps), bound the traps a second (--trap-budget N), or trace fewer functions; sampling (-f 'PATTERN#N', --sample N) cuts the records, not the traps",
		traps, own, slow, all, strings.Join(busy, ", "))
}

// entryOffsets are the file offsets of the entry probes of a trace
// (its probes ps) set in exe (matched by base name), sorted: what
// trace.SampledCounts takes as its probes.
func entryOffsets(ps []profile.Probe, exe string) []uint64 {
	var probes []uint64
	for _, pr := range ps {
		if filepath.Base(pr.Object) == filepath.Base(exe) {
			probes = append(probes, pr.Offset)
		}
	}
	slices.Sort(probes)
	return probes
}

// cpuStats are the CPU samples traces of one build took beside their
// probes, pooled: where the runs' time went, by the function of the
// executable it was spent in (trace.SampledCounts).
type cpuStats struct {
	Runs    int            `json:"runs"`
	Samples int            `json:"samples"` // counted: under the root, outside the probes' traps
	Traps   int            `json:"traps"`   // taken in the probes' traps, not counted
	Counts  map[string]int `json:"counts"`  // samples by function
	// Traces are each trace's samples, rate, probe traps and counts by
	// function: trace.UntracedTotal reads the first three to take the
	// probes' indirect cost out of the total; the counts let a pool be
	// judged again trace by trace (bench/tracepool). Pools written before
	// the counts were kept have traces without them.
	Traces []trace.PooledTrace `json:"traces,omitempty"`
}

// cpuStatsFile is where the CPU samples of the build whose Dynamic Stats
// are at statsPath are pooled.
func cpuStatsFile(statsPath string) string {
	return strings.TrimSuffix(statsPath, ".json") + ".cpu.json"
}

// defaultCPUHz bounds the default rate of a trace's CPU samples while its
// build's pool holds poolNeed to poolFull samples, and while a pool
// whose traces give no line holds fewer: the rate is the cost budget's
// (budgetCPUHz), at most this. The samples cost the traced program +4%
// of its time at 999 Hz and +21% at 9999 Hz (sqlite3's main under one
// probe, docs/performance.md), and that cost falls on the traced calls'
// own times: at 9999 Hz a model of callgrowth's insert_sorted against its
// call order came out quadratic where it is linear (e2e
// TestModelsCallOrder). A short program then pools few samples a trace
// (sqlite3's benchmark workload: about 1.5), so under poolNeed, with a
// line, the rate is raised.
const defaultCPUHz = 999

// fullPoolHz is the default rate of a trace's CPU samples once the
// build's pool is full (poolFull samples), and of a build's first trace
// (no pool yet). Once full, it is enough for a profile of where the
// traced run's time went (a one-second trace, about 100 samples) at a
// tenth of the timer interrupts. Each sample interrupts the traced
// program: about 50 µs of its CPU a sample on the VM measured, as much
// as two probe pairs, so at 999 Hz a function called back to back paid
// 5% a call, more than culprit's BPF programs save a call against
// bpftrace's, and a rarer one pays more (the cost is a second's, not a
// call's). A first trace knows nothing yet of how often its probes fire
// nor of what the pool needs, and what its samples give the pool is
// small where the probes fire often (a trace of every function of
// lua5.4 kept 17-41 samples outside the traps at 999 Hz): the traces
// after it, which know both from the pool, sample faster (cpuRate).
const fullPoolHz = 99

// poolFull is how many samples an untraced run would have taken (the
// pool's total as --keep-hot divides by it: poolTotal) that make a
// build's pool full: a function's share at 1% is then measured to
// ±0.45% (two sigma), and more samples a trace change what --keep-hot
// judges hot little.
const poolFull = 2000

// poolNeed is the untraced-run-equivalent total (poolTotal) a build's
// pool needs to see a function at 1% of the run: 5 samples expected,
// none 0.7% of the time (e^-5). While a pool whose traces give a line
// holds fewer, a trace samples faster (raisedCPURate).
const poolNeed = 500

// maxDefaultCPUHz bounds a raised default rate: at 9999 Hz the samples
// cost a short traced run a fifth of its time (docs/performance.md).
const maxDefaultCPUHz = 9999

// maxTraceSamples bounds how many samples a trace at a raised default
// rate takes, over the length of the last trace of the build: each
// costs the traced program a timer interrupt and culprit an unwinding.
const maxTraceSamples = 2000

// sampleBudget is the share of a traced program's CPU time its CPU
// samples may take at the default rate of a build's later traces while
// the pool is short (budgetCPUHz): the samples are a second's cost, not a
// call's, so over a trace of a function called back to back they add to
// each call what culprit's BPF programs save a call against bpftrace's
// (a few per cent on a single-stepped first instruction,
// docs/performance.md), and 1% leaves most of that.
const sampleBudget = 0.01

// sampleCostAge is how long a measured cost of a sample (sampleCost) is
// used before it is measured again: a VM's interrupts change cost with
// its host's state (50 and 120 µs a sample an hour apart on the one
// measured).
const sampleCostAge = 10 * time.Minute

// budgetCPUHz is the rate at which samples costing perSample each take
// sampleBudget of the traced program's CPU time, within fullPoolHz and
// defaultCPUHz: defaultCPUHz where a sample costs 10 µs or less (a timer
// interrupt on a machine without a hypervisor's slow path), 200 Hz at
// 50 µs, fullPoolHz from 101 µs on (the rate of a build's first trace: the
// pool still fills, if slowly). A cost measured at or under 0 (a cheap
// sample lost in the measurement's noise) is cheap.
func budgetCPUHz(perSample time.Duration) int {
	if perSample <= 0 {
		return defaultCPUHz
	}
	hz := int(sampleBudget * float64(time.Second) / float64(perSample))
	return min(max(hz, fullPoolHz), defaultCPUHz)
}

// sampleCostFile is the cost of a sample measured on this machine, as
// sampleCost keeps it beside the builds' statistics.
type sampleCostFile struct {
	Boot      string    `json:"boot"` // the kernel's boot_id when measured
	Measured  time.Time `json:"measured"`
	PerSample int64     `json:"per_sample_ns"`
	Samples   int       `json:"samples"`
}

// sampleCost is what a cpu-clock sample costs a thread on this machine
// (recorder.MeasureSampleCost, about 80 ms of one CPU), kept in dir and
// measured again after sampleCostAge, a reboot or the clock set back; ok
// is false when it cannot be measured.
func sampleCost(dir string) (time.Duration, bool) {
	path := filepath.Join(dir, "sample-cost.json")
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	var k sampleCostFile
	if data, err := os.ReadFile(path); err == nil && json.Unmarshal(data, &k) == nil &&
		k.Boot == strings.TrimSpace(string(boot)) && k.Samples > 0 {
		if age := time.Since(k.Measured); age >= 0 && age < sampleCostAge {
			return time.Duration(k.PerSample), true
		}
	}
	c, err := recorder.MeasureSampleCost()
	if err != nil {
		return 0, false
	}
	k = sampleCostFile{Boot: strings.TrimSpace(string(boot)), Measured: time.Now(), PerSample: int64(c.PerSample), Samples: c.Samples}
	if data, err := json.Marshal(k); err == nil && userfile.MkdirAll(dir) == nil {
		userfile.Replace(path, func(f *os.File) error {
			_, err := f.Write(data)
			return err
		})
	}
	return c.PerSample, true
}

// budgetRate is the default rate of a build's later traces while its
// pool is short (cpuRate's base) on this machine: budgetCPUHz of the
// cost of a sample measured here (sampleCost, kept beside the statistics
// at statsPath), fullPoolHz when it cannot be measured.
func budgetRate(statsPath string) int {
	d, ok := sampleCost(filepath.Dir(statsPath))
	if !ok {
		return fullPoolHz
	}
	return budgetCPUHz(d)
}

// defaultCPURate is the rate of the CPU samples of a trace of exe when
// --cpu-sample is not given (cpuRate of the build's pool, under the
// kernel's perf_event_max_sample_rate, with the budget of this machine's
// cost of a sample).
func defaultCPURate(exe string) int {
	if exe == "" {
		return fullPoolHz
	}
	path, err := statsFile(exe)
	if err != nil {
		return fullPoolHz // no pool can be kept
	}
	c, err := readCPUStats(cpuStatsFile(path))
	if err != nil {
		return fullPoolHz // none yet, or one keepStats will say is unreadable
	}
	return cpuRate(c, kernelMaxSampleRate(), func() int { return budgetRate(path) })
}

// cpuRate is the default rate of a trace's CPU samples for a build whose
// pool is c, kernelMax the highest rate the kernel takes (0: not known),
// base the rate the samples' cost budget allows on this machine
// (budgetRate; called only when needed: it may measure): fullPoolHz for
// a build's first trace (no pool) and once the pool's total (poolTotal)
// reaches poolFull; base from poolNeed on, and for a pool whose traces
// give no line (traces alike, such as repeated traces of a few functions
// run to time their calls, where the samples' cost to the calls' times
// matters more than the pool); under poolNeed, the rate at which this
// trace brings the pool to poolNeed (raisedCPURate), not under base.
func cpuRate(c cpuStats, kernelMax int, base func() int) int {
	if c.Runs == 0 {
		return fullPoolHz
	}
	total, perTrap, line := poolTotal(c)
	switch {
	case total >= poolFull:
		return fullPoolHz
	case total >= poolNeed || !line:
		return base()
	}
	return raisedCPURate(poolNeed-total, c.Traces[len(c.Traces)-1], perTrap, kernelMax, base())
}

// raisedCPURate is the rate at which a trace as long as last (the
// build's last trace) brings need more samples an untraced run would
// have taken to the pool: need over last's untraced-run-equivalent
// seconds (its seconds of samples less perTrap a probe trap; its seconds
// of samples when that leaves nothing), at most maxTraceSamples over its
// seconds of samples, at most maxDefaultCPUHz, and at most kernelMax when
// that is known, but not under floor (the budget's rate, budgetRate).
func raisedCPURate(need float64, last trace.PooledTrace, perTrap float64, kernelMax, floor int) int {
	if last.Hz <= 0 || last.Samples <= 0 {
		return floor
	}
	taken := float64(last.Samples) / float64(last.Hz)
	own := taken - perTrap*float64(last.Traps)
	if own <= 0 {
		own = taken
	}
	hz := min(need/own, maxTraceSamples/taken, maxDefaultCPUHz)
	if kernelMax > 0 {
		hz = min(hz, float64(kernelMax))
	}
	return max(floor, int(hz))
}

// kernelMaxSampleRate is the kernel's perf_event_max_sample_rate (it
// lowers it when sampling interrupts take long), 0 when it cannot be
// read; culprit never changes it.
func kernelMaxSampleRate() int {
	b, err := os.ReadFile("/proc/sys/kernel/perf_event_max_sample_rate")
	if err != nil {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n <= 0 {
		return 0
	}
	return n
}

// poolTotal is the total --keep-hot divides a pool's counts by: what
// untraced runs would have sampled (trace.UntracedTotal, with perTrap the
// time a probe trap added), or, when the pool's traces give no line
// (line false), its samples as taken.
func poolTotal(c cpuStats) (total, perTrap float64, line bool) {
	if len(c.Traces) == c.Runs {
		if total, d, ok := trace.UntracedTotal(c.Traces); ok {
			return total, d, true
		}
	}
	return float64(c.Samples), 0, false
}

// cpuSamplesPath is where a trace of exe writes its CPU samples, to be
// pooled by keepStats and removed: beside the build's statistics; "" (no
// samples) when they cannot be kept.
func cpuSamplesPath(exe string) string {
	if exe == "" {
		return ""
	}
	path, err := statsFile(exe)
	if err != nil || userfile.MkdirAll(filepath.Dir(path)) != nil {
		return ""
	}
	base := strings.TrimSuffix(path, ".json")
	// Those of traces that did not end (culprit killed) go.
	old, _ := filepath.Glob(base + ".*.cpu.rec")
	for _, f := range old {
		pid, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(f, base+"."), ".cpu.rec"))
		if err == nil && pid != os.Getpid() && !proc.Exists(pid) {
			os.Remove(f)
		}
	}
	return base + fmt.Sprintf(".%d.cpu.rec", os.Getpid())
}

func readCPUStats(path string) (cpuStats, error) {
	var c cpuStats
	data, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return c, fmt.Errorf("reading %s: %w (remove it to start again)", path, err)
	}
	return c, nil
}

// keepSamples adds the CPU samples of recording cpu (hz a second), of
// the executable exe, to the build's pool; probes are the file offsets of
// the entry probes the trace set in exe (sorted), probeTraps how many times
// they trapped (trace.ProbeTraps), and open names the trace's innermost
// call open at a time (trace.InnermostOpen, a library function reached
// by a tail call counted for the call that jumped's caller).
func keepSamples(exe, statsPath, cpu string, hz int, probes []uint64, probeTraps int, open func(uint32, uint64) string, stderr io.Writer) (own, traps int, err error) {
	if _, err := os.Stat(cpu); err != nil {
		return 0, 0, nil // not taken: the tracer said why
	}
	// Each sample's own time, for open (not merged). Only the
	// executable's functions are counted: no other object's symbols are
	// read (a library's DWARF costs more than the rest of the trace's end).
	base := filepath.Base(exe)
	if strings.HasPrefix(exe, "/proc/") { // attached: the samples name the file
		if path, err := os.Readlink(exe); err == nil {
			base = filepath.Base(path)
		}
	}
	p, err := loadProfileWith([]string{cpu}, io.Discard, loader.Options{Objects: func(path string) bool { return filepath.Base(path) == base }})
	if err != nil {
		return 0, 0, fmt.Errorf("the CPU samples: %w", err)
	}
	// Every sample with a frame of the executable counts, not only those
	// under main as with --hot-from: the return probes replace return
	// addresses on the stack with their trampoline's, so that the frames
	// above a traced call, main's among them, are not seen. What runs of
	// the executable outside main (constructors, exit handlers) is little.
	if strings.HasPrefix(exe, "/proc/") { // attached: the samples name the file
		if path, err := os.Readlink(exe); err == nil {
			exe = path
		}
	}
	counts, total, traps := trace.SampledCounts(p, exe, nil, probes, open)
	if total == 0 {
		return 0, traps, nil // no sample of the executable's own code: a run too short to sample
	}
	path := cpuStatsFile(statsPath)
	c, err := readCPUStats(path)
	if err != nil && !os.IsNotExist(err) {
		return 0, 0, err
	}
	if c.Counts == nil {
		c.Counts = map[string]int{}
	}
	// Each trace is kept with its counts, also in a pool begun before
	// they were (whose earlier traces keep only their totals, or nothing:
	// such a pool is judged by its pooled counts alone, as before).
	c.Traces = append(c.Traces, trace.PooledTrace{Samples: total, Hz: hz, Traps: probeTraps, Counts: counts})
	c.Runs++
	c.Samples += total
	c.Traps += traps
	for f, n := range counts {
		c.Counts[f] += n
	}
	data, err := json.MarshalIndent(c, "", " ")
	if err != nil {
		return 0, 0, err
	}
	if err := userfile.Replace(path, func(f *os.File) error {
		_, err := f.Write(data)
		return err
	}); err != nil {
		return 0, 0, err
	}
	fmt.Fprintf(stderr, "culprit: %d CPU samples of %s's time kept for choosing the next trace's hot functions (%d more in the probes' traps, not counted); %d from %d traces of this build\n",
		total, filepath.Base(exe), traps, c.Samples, c.Runs)
	return total, traps, nil
}

// shapeCallGraph returns the probed functions call-graph shaping leaves
// out: those the root cannot reach (match), and with trimming (soft: the
// top half of the levels kept, strict: the top quarter) the lower levels,
// or with pruning the bottom functions and their near callers. changed
// functions (diff tracing) are never left out.
func shapeCallGraph(pr *program, mode string, changed map[string]bool, stderr io.Writer) (map[string]bool, error) {
	ratio := map[string]float64{"match": 0, "soft": 0.5, "strict": 0.25, "prune": 0}
	r, ok := ratio[mode]
	if !ok {
		return nil, usagef("--call-graph-shaping %q: use match, soft, strict or prune", mode)
	}
	if pr.levels == nil {
		fmt.Fprintf(stderr, "culprit: call-graph shaping is off: %s has no %s to start the call graph from\n", filepath.Base(pr.exe), pr.root)
		return nil, nil
	}
	g := &trace.CallGraph{Callees: pr.cg}
	reach := g.Reachable(pr.root)
	keep := map[string]bool{}
	for _, f := range pr.probed {
		if reach[f] {
			keep[f] = true
		}
	}
	unreached := len(pr.probed) - len(keep)
	switch mode {
	case "soft", "strict":
		keep = g.Trim(keep, pr.levels, r)
	case "prune":
		keep = g.Prune(keep, pr.levels)
	}
	out := map[string]bool{}
	for _, f := range pr.probed {
		if !keep[f] && !changed[f] {
			out[f] = true
		}
	}
	fmt.Fprintf(stderr, "culprit: call-graph shaping (%s) keeps %d of %d functions (%d not reached from %s)\n", mode, len(pr.probed)-len(out), len(pr.probed), unreached, pr.root)
	return out, nil
}

// dynamicSampling chooses each matched function's sample from its level in
// exe's call graph (first trace of the build) or the counts of the
// earlier trace.
func dynamicSampling(exe, statsRef string, pid int, pats []tracer.Pattern, levels map[string]int, sm trace.Sampling, stderr io.Writer) (map[string]uint32, error) {
	if exe == "" {
		return nil, nil
	}
	targets, _, err := tracer.Resolve(exe, pid, pats, false)
	if err != nil {
		return nil, err
	}
	var funcs []string
	for _, t := range targets {
		funcs = append(funcs, t.Function)
	}
	st, err := earlierStats(exe, statsRef)
	if err != nil && statsRef != "" {
		return nil, err
	}
	every := trace.DynamicSampling(funcs, levels, st, sm)
	n, most := 0, uint32(1)
	for _, e := range every {
		if e > 1 {
			n++
			most = max(most, e)
		}
	}
	phase := "refinement, from the earlier trace's counts"
	if st == nil {
		phase = "initial, from call-graph levels"
	}
	fmt.Fprintf(stderr, "culprit: dynamic sampling (%s): %d of %d functions sampled, up to 1 call in %d\n", phase, n, len(funcs), most)
	return every, nil
}

// runTracer traces the launched command args, or process pid when it is
// not 0, and prints the tracer's warnings.
func runTracer(o tracer.Options, pid int, args []string, stderr io.Writer) (tracer.Result, error) {
	var res tracer.Result
	err := start(pid, args,
		func(stop <-chan struct{}) (err error) { res, err = tracer.Attach(o, pid, stop); return err },
		func() (err error) { res, err = tracer.Launch(o, args); return err })
	if err != nil {
		return res, err
	}
	for _, w := range res.Warnings {
		warnf(stderr, "%s", w)
	}
	return res, nil
}
