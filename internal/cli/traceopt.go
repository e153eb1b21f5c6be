package cli

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/culprit-dev/culprit/internal/analysis/trace"
	"github.com/culprit-dev/culprit/internal/elfx"
	"github.com/culprit-dev/culprit/internal/schema"
	"github.com/culprit-dev/culprit/internal/tracer"
)

// optimizations are the probe-reduction methods of one trace, Perun's
// names for the flags: each empty (or 0) when off.
type optimizations struct {
	Shaping  string // call-graph shaping: match, soft, strict, prune
	Static   string // static baseline: the highest class left out
	Baseline string // dynamic baseline: soft, strict
	Diff     string // diff tracing: soft, semi-strict, strict
	Sampling string // dynamic sampling: soft, strict
	Probing  uint64 // dynamic probing: the call threshold
	// KeepHot > 0 protects from the methods that leave functions out
	// those over KeepHot per cent of the exclusive time an earlier trace
	// of the build recorded (on in the pipelines: 1).
	KeepHot float64
	// HotFrom are recordings of culprit record of the same program and
	// workload: KeepHot's shares are then their CPU samples' (untraced),
	// not earlier traces'.
	HotFrom []string
	// HotProbing > 0 sets dynamic probing, with reattach, on the functions
	// KeepHot protects: their probes are removed after this many calls and
	// set again after an interval that doubles (the pipelines' way of
	// keeping frequently called functions affordable).
	HotProbing uint64
	// Budget > 0 bounds the functions probed, after the other methods, to
	// this per cent of those matched (at least 10), the protected ones
	// counted (culprit's, on in the basic pipeline: 10, Perun's
	// min_functions_ratio).
	Budget float64
	// Stats (@REV) takes the earlier Dynamic Stats from a stored trace of
	// that commit instead of the last trace of this build.
	Stats string
}

// optNames are the names --no-optimize takes.
var optNames = []string{"diff-tracing", "call-graph-shaping", "static-baseline", "dynamic-baseline", "dynamic-sampling", "dynamic-probing"}

// pipeline fills in the methods of Perun's pipeline name (§7.3) that the
// command line left unset, then switches off those named in off.
//
//	basic:    call-graph shaping strict, dynamic baseline strict
//	advanced: diff tracing semi-strict, call-graph shaping soft,
//	          dynamic baseline soft, dynamic sampling soft
//	full:     diff tracing strict, call-graph shaping prune, static
//	          baseline constant, dynamic baseline soft, dynamic sampling
//	          soft, dynamic probing 100,000 (Table A.4's probing_threshold)
func (o *optimizations) pipeline(name string, off []string) error {
	set := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	if name != "" && o.KeepHot < 0 {
		o.KeepHot = 1
	}
	if name == "basic" && o.Budget < 0 {
		o.Budget = 10
	}
	// The hot functions kept are probed dynamically with Perun's
	// re-attaching threshold, probing_reattach_coefficient (0.2) times
	// the threshold base of the pipeline's mode (strict in basic: 1,000;
	// soft: 10,000), Table A.4.
	switch name {
	case "basic":
		o.HotProbing = 1000 * 2 / 10
	case "advanced", "full":
		o.HotProbing = 10000 * 2 / 10
	}
	switch name {
	case "":
	case "basic":
		set(&o.Shaping, "strict")
		set(&o.Baseline, "strict")
	case "advanced":
		set(&o.Diff, "semi-strict")
		set(&o.Shaping, "soft")
		set(&o.Baseline, "soft")
		set(&o.Sampling, "soft")
	case "full":
		set(&o.Diff, "strict")
		set(&o.Shaping, "prune")
		set(&o.Static, "constant")
		set(&o.Baseline, "soft")
		set(&o.Sampling, "soft")
		if o.Probing == 0 {
			o.Probing = 100000
		}
	default:
		return usagef("--optimize %q: use basic, advanced or full", name)
	}
	for _, n := range off {
		switch n {
		case "diff-tracing":
			o.Diff = ""
		case "call-graph-shaping":
			o.Shaping = ""
		case "static-baseline":
			o.Static = ""
		case "dynamic-baseline":
			o.Baseline = ""
		case "dynamic-sampling":
			o.Sampling = ""
		case "dynamic-probing":
			o.Probing, o.HotProbing = 0, 0
		default:
			return usagef("--no-optimize %q: use one of %s", n, strings.Join(optNames, ", "))
		}
	}
	return nil
}

// validate checks each method's mode.
func (o *optimizations) validate() error {
	check := func(flag, v string, ok ...string) error {
		if v == "" || slices.Contains(ok, v) {
			return nil
		}
		return usagef("--%s %q: use %s", flag, v, strings.Join(ok, ", "))
	}
	for _, err := range []error{
		check("call-graph-shaping", o.Shaping, "match", "soft", "strict", "prune"),
		check("static-baseline", o.Static, staticClasses...),
		check("dynamic-baseline", o.Baseline, "soft", "strict"),
		check("diff-tracing", o.Diff, "soft", "semi-strict", "strict"),
		check("dynamic-sampling", o.Sampling, "soft", "strict"),
	} {
		if err != nil {
			return err
		}
	}
	if o.Stats != "" && !strings.HasPrefix(o.Stats, "@") {
		return usagef("--stats %q: give @REV, a commit with a stored trace (culprit history add)", o.Stats)
	}
	if len(o.HotFrom) > 0 && o.KeepHot <= 0 {
		return usagef("--hot-from goes with --keep-hot PERCENT or --optimize: it says which functions are hot")
	}
	if len(o.HotFrom) > 0 && o.Stats != "" {
		return usagef("--hot-from and --stats both say which functions are hot: give one")
	}
	if o.Stats != "" && o.Baseline == "" && o.Sampling == "" && o.KeepHot <= 0 {
		return usagef("--stats goes with --dynamic-baseline, --dynamic-sampling, --keep-hot or --optimize: nothing else reads earlier statistics")
	}
	return nil
}

// staticClasses are the complexity classes of the static baseline, by
// polynomial degree.
var staticClasses = []string{"constant", "linear", "quadratic", "cubic", "quartic"}

// program is what the pre-run optimizations read of the traced
// executable: the functions the patterns match in it, its static call
// graph and the levels of its functions from the root.
type program struct {
	exe    string
	probed []string
	// profName is a probed function's name in CPU profiles, where it
	// differs (tracer.Target.ProfileName): what the samples' hot
	// functions name an overload or a template instance by.
	profName map[string]string
	cg       map[string][]string
	root     string
	levels   map[string]int // nil when the call graph has no root
}

func readProgram(exe string, pid int, pats []tracer.Pattern) (*program, error) {
	var own []tracer.Pattern
	for _, p := range pats {
		if p.Lib == "" && !p.IsPoint() {
			own = append(own, p)
		}
	}
	pr := &program{exe: exe}
	if exe == "" || len(own) == 0 {
		return pr, nil
	}
	targets, isGo, err := tracer.Resolve(exe, pid, own, false)
	if err != nil {
		return nil, err
	}
	for _, t := range targets {
		pr.probed = append(pr.probed, t.Function)
		if t.ProfileName != "" {
			if pr.profName == nil {
				pr.profName = map[string]string{}
			}
			pr.profName[t.Function] = t.ProfileName
		}
	}
	sort.Strings(pr.probed)
	if pr.cg, err = tracer.CallGraph(exe); err != nil {
		return nil, err
	}
	pr.root = "main"
	if isGo {
		pr.root = "main.main"
	}
	if _, ok := pr.cg[pr.root]; ok {
		pr.levels = (&trace.CallGraph{Callees: pr.cg}).Levels(pr.root)
	}
	return pr, nil
}

// preOptimize runs the methods that choose the probes before the run, in
// Perun's order: diff tracing, call-graph shaping, static baseline,
// dynamic baseline, dynamic sampling. A method whose prerequisite is
// missing is switched off, saying why. Diff tracing alone keeps only what
// changed; with other methods it protects what changed from them.
func preOptimize(o *tracer.Options, opt optimizations, exe string, pid int, diffBase, diffGit string, pipeline bool, stderr io.Writer) error {
	if exe == "" || opt.Shaping == "" && opt.Static == "" && opt.Diff == "" && opt.Sampling == "" && opt.Baseline == "" && opt.Budget <= 0 {
		return nil // no program found: the launch says so
	}
	pr, err := readProgram(exe, pid, o.Patterns)
	if err != nil {
		return err
	}
	exclude := func(fs map[string]bool) {
		if o.Exclude == nil {
			o.Exclude = map[string]bool{}
		}
		for f := range fs {
			o.Exclude[f] = true
		}
	}
	var changed map[string]bool
	var doubtful map[string]float64 // hot by the interval only: the budget's to trade
	if opt.Diff != "" {
		switch {
		case diffBase == "" && pipeline:
			fmt.Fprintf(stderr, "culprit: diff tracing is off: no older build to compare with (--diff-base PATH)\n")
		case len(pr.probed) == 0:
		default:
			changes, err := diffTrace(pr, opt.Diff, diffBase, diffGit)
			if err != nil {
				return err
			}
			changed = map[string]bool{}
			for _, c := range changes {
				changed[c.Function] = true
			}
			standalone := opt.Shaping == "" && opt.Static == "" && opt.Baseline == ""
			if standalone {
				keep := trace.DiffSelect(pr.probed, changes, pr.cg, pr.root)
				ex := map[string]bool{}
				for _, f := range pr.probed {
					if !keep[f] {
						ex[f] = true
					}
				}
				exclude(ex)
				fmt.Fprintf(stderr, "culprit: diff tracing (%s) against %s: %d functions changed; %d of %d traced\n", opt.Diff, diffBase, len(changes), len(keep), len(pr.probed))
			} else {
				fmt.Fprintf(stderr, "culprit: diff tracing (%s) against %s: %d functions changed, kept whatever the other methods say\n", opt.Diff, diffBase, len(changes))
			}
		}
	}
	if opt.KeepHot > 0 && (opt.Shaping != "" || opt.Static != "" || opt.Baseline != "" || opt.Budget > 0) {
		hot, doubt, from, err := hotFunctions(pr, opt)
		if err != nil {
			return err
		}
		if hot != nil {
			if changed == nil {
				changed = map[string]bool{}
			}
			var kept []string
			for _, f := range pr.probed {
				g := elfx.StripClones(f)
				if n, ok := pr.profName[f]; ok && !hot[g] {
					g = elfx.StripClones(n) // the samples name every overload so
				}
				if !hot[g] || changed[f] {
					continue
				}
				kept = append(kept, f)
				changed[f] = true
				if d, ok := doubt[g]; ok && opt.Budget > 0 {
					// Protected from the methods, but not from the
					// budget: it takes them before the others.
					if doubtful == nil {
						doubtful = map[string]float64{}
					}
					doubtful[f] = d
				}
			}
			how := ""
			if opt.HotProbing > 0 && len(kept) > 0 {
				if o.ProbingFor == nil {
					o.ProbingFor = map[string]uint64{}
				}
				st, _ := earlierStats(exe, opt.Stats)
				lower := 0
				for _, f := range kept {
					o.ProbingFor[f] = trace.HotThreshold(st[f].Count, opt.HotProbing)
					if o.ProbingFor[f] < opt.HotProbing {
						lower++
					}
				}
				how = fmt.Sprintf(", probed dynamically: removed after %d calls (%d of them after a tenth of the calls earlier traces saw, at least %d), set again after %s, then twice as long each time", opt.HotProbing, lower, trace.MinHotCalls, o.ProbingWait)
			}
			fmt.Fprintf(stderr, "culprit: %d functions over %g%% of %s are kept whatever the methods say (--keep-hot)%s\n", len(kept), opt.KeepHot, from, how)
			if len(doubtful) > 0 {
				fmt.Fprintf(stderr, "culprit: %d of them are judged so only by the samples' noise (under %g%% by their share), and give way to the probe budget\n", len(doubtful), opt.KeepHot)
			}
		}
	}
	if opt.Shaping != "" && len(pr.probed) > 0 {
		ex, err := shapeCallGraph(pr, opt.Shaping, changed, stderr)
		if err != nil {
			return err
		}
		exclude(ex)
	}
	if opt.Static != "" && len(pr.probed) > 0 {
		ex, err := staticBaseline(pr, opt.Static, changed)
		if err != nil {
			fmt.Fprintf(stderr, "culprit: static baseline is off: %v\n", err)
		} else {
			exclude(ex)
			fmt.Fprintf(stderr, "culprit: static baseline leaves out %d functions (%s or below, from their loops in the machine code)\n", len(ex), opt.Static)
		}
	}
	if opt.Baseline != "" {
		b, ok := map[string]trace.Baseline{"soft": trace.BaselineSoft, "strict": trace.BaselineStrict}[opt.Baseline]
		if !ok {
			return usagef("--dynamic-baseline %q: use soft or strict", opt.Baseline)
		}
		ex, err := dynamicBaseline(exe, opt.Stats, b, changed, stderr)
		if err != nil {
			return err
		}
		exclude(ex)
	}
	if opt.Budget > 0 && len(pr.probed) > 0 {
		if pr.levels == nil {
			fmt.Fprintf(stderr, "culprit: the probe budget is off: %s has no %s to order the functions from\n", filepath.Base(pr.exe), pr.root)
		} else {
			var left []string
			for _, f := range pr.probed {
				if !o.Exclude[f] {
					left = append(left, f)
				}
			}
			n := max(int(float64(len(pr.probed))*opt.Budget/100), 10)
			// The root stays whatever else the budget leaves out: called
			// once, it costs nothing, and it times the run. Without it a
			// small program whose hot functions fill the budget (CCSDS's
			// 36 of 177 against 17) was traced without main.
			protected := map[string]bool{pr.root: true}
			for f := range changed {
				if _, d := doubtful[f]; !d {
					protected[f] = true
				}
			}
			ex := (&trace.CallGraph{Callees: pr.cg}).Budget(left, protected, doubtful, pr.levels, n)
			if len(ex) > 0 {
				out := map[string]bool{}
				for _, f := range ex {
					out[f] = true
				}
				exclude(out)
				why := "those deepest in the call graph"
				if d := len(slices.DeleteFunc(ex, func(f string) bool { _, ok := doubtful[f]; return !ok })); d > 0 {
					why = fmt.Sprintf("%d of them judged over %g%% only by the samples' noise, the smallest shares", d, opt.KeepHot)
				}
				fmt.Fprintf(stderr, "culprit: the probe budget (%g%% of %d functions) leaves out %d more of the %d left, %s\n", opt.Budget, len(pr.probed), len(out), len(left), why)
			}
		}
	}
	if opt.Sampling != "" {
		sm, ok := map[string]trace.Sampling{"soft": trace.SamplingSoft, "strict": trace.SamplingStrict}[opt.Sampling]
		if !ok {
			return usagef("--dynamic-sampling %q: use soft or strict", opt.Sampling)
		}
		every, err := dynamicSampling(exe, opt.Stats, pid, o.Patterns, pr.levels, sm, stderr)
		if err != nil {
			return err
		}
		o.Every = every
	}
	return nil
}

// hotFunctions returns the functions (clone suffixes removed) over
// opt.KeepHot per cent of the run, and where that was measured: by the CPU
// samples of opt.HotFrom, counting a function as over when the upper end of
// its share's two-sigma interval is, so that sampling noise does not drop
// one; else by the CPU samples earlier traces took beside their probes:
// the build's pool, or with opt.Stats (@REV) the trace stored for that
// commit; else by the exclusive times those traces recorded (nil when
// there are none). doubt are those of them judged so only by the upper
// end of their share's interval, with their shares (trace.SampledDoubtful;
// none when judged by exclusive times).
func hotFunctions(pr *program, opt optimizations) (hot map[string]bool, doubt map[string]float64, from string, err error) {
	if len(opt.HotFrom) > 0 {
		p, err := loadProfile(opt.HotFrom, io.Discard, false)
		if err != nil {
			return nil, nil, "", fmt.Errorf("--hot-from: %w", err)
		}
		roots, err := tracer.StackRoots(pr.exe, pr.root)
		if err != nil {
			return nil, nil, "", err
		}
		counts, n, _ := trace.SampledCounts(p, pr.exe, roots, nil, nil)
		if n == 0 {
			if len(roots) == 0 {
				return nil, nil, "", fmt.Errorf("--hot-from: no CPU sample of %s is in %s: record the same program with culprit record", strings.Join(opt.HotFrom, ", "), filepath.Base(pr.exe))
			}
			return nil, nil, "", fmt.Errorf("--hot-from: no CPU sample of %s has %s on its stack: record the same program with culprit record", strings.Join(opt.HotFrom, ", "), strings.Join(roots, " or "))
		}
		return trace.SampledHot(counts, n, opt.KeepHot), trace.SampledDoubtful(counts, n, opt.KeepHot), fmt.Sprintf("the run's time by %d CPU samples", n), nil
	}
	if opt.Stats == "" {
		if path, err := statsFile(pr.exe); err == nil {
			c, err := readCPUStats(cpuStatsFile(path))
			if err != nil && !os.IsNotExist(err) {
				return nil, nil, "", err
			}
			if c.Samples > 0 {
				if total, d, line := poolTotal(c); line {
					t := int(math.Round(total))
					return trace.SampledHot(c.Counts, t, opt.KeepHot), trace.SampledDoubtful(c.Counts, t, opt.KeepHot),
						fmt.Sprintf("the time of %d earlier traces by %d CPU samples, %.0f of them an untraced run's (each probe trap slowed the code after it by %.0f ns)%s", c.Runs, c.Samples, total, d*1e9, fewSamples(total, opt.KeepHot)), nil
				}
				// A build's first trace samples at fullPoolHz: a short run
				// pools a few samples, which say nothing of a function
				// they missed, however hot; say so, as for a line.
				return trace.SampledHot(c.Counts, c.Samples, opt.KeepHot), trace.SampledDoubtful(c.Counts, c.Samples, opt.KeepHot),
					fmt.Sprintf("the time of %d earlier traces by %d CPU samples%s", c.Runs, c.Samples, fewSamples(float64(c.Samples), opt.KeepHot)), nil
			}
		}
	}
	if opt.Stats != "" {
		// The stored trace's own CPU samples, as the pool's would be: a
		// commit's trace stands for the traces of this build.
		p, err := storedTrace(pr.exe, opt.Stats)
		if err != nil {
			return nil, nil, "", err
		}
		if counts, n, _ := trace.SampledCounts(p, pr.exe, nil, entryOffsets(p.Probes, pr.exe), trace.InnermostOpen(p, jumpsOut(pr.exe))); n > 0 {
			return trace.SampledHot(counts, n, opt.KeepHot), trace.SampledDoubtful(counts, n, opt.KeepHot), fmt.Sprintf("the time of the trace stored for %s by %d CPU samples%s", strings.TrimPrefix(opt.Stats, "@"), n, fewSamples(float64(n), opt.KeepHot)), nil
		}
		hot := map[string]bool{}
		for f := range trace.Hot(trace.DynamicStats(p), opt.KeepHot/100, pr.root) {
			hot[elfx.StripClones(f)] = true
		}
		return hot, nil, fmt.Sprintf("the exclusive time of the trace stored for %s (it has no CPU samples of %s)", strings.TrimPrefix(opt.Stats, "@"), filepath.Base(pr.exe)), nil
	}
	st, err := earlierStats(pr.exe, "")
	if err != nil {
		return nil, nil, "", nil
	}
	hot = map[string]bool{}
	for f := range trace.Hot(st, opt.KeepHot/100, pr.root) {
		hot[elfx.StripClones(f)] = true
	}
	return hot, nil, "the exclusive time of earlier traces", nil
}

// fewSamples says, for a pool whose untraced total is total samples
// (its samples as taken when its traces give no line), when a function
// at percent of the run has no sample in it more than one time in twenty
// (fewer than 3 expected): the two-sigma rule never keeps a function
// with none.
func fewSamples(total, percent float64) string {
	at := total * percent / 100
	if at >= 3 {
		return ""
	}
	return fmt.Sprintf("; too few to see every function over %g%%: one at the line has %.1f samples, none %.0f%% of the time (more traces, or --cpu-sample 9999, fill the pool)", percent, at, 100*math.Pow(1-percent/100, total))
}

// staticBaseline returns the probed functions of a class at most class
// (constant, linear, …) by their machine code's loops.
func staticBaseline(pr *program, class string, changed map[string]bool) (map[string]bool, error) {
	limit := slices.Index(staticClasses, class)
	if pr.levels == nil {
		return nil, fmt.Errorf("%s has no %s to place the protected top levels from", filepath.Base(pr.exe), pr.root)
	}
	code, err := schema.OpenCode(pr.exe)
	if err != nil {
		return nil, err
	}
	cls := trace.Classes(code.Shape, pr.probed)
	out := map[string]bool{}
	for _, f := range trace.StaticBaseline(pr.probed, cls, pr.levels, limit, changed) {
		out[f] = true
	}
	return out, nil
}

// diffTrace compares the traced executable with an older build of it,
// and with gitRev the functions the hunks of `git diff gitRev` (run in
// the current directory) name.
func diffTrace(pr *program, mode, base, gitRev string) ([]trace.Changed, error) {
	m, ok := map[string]trace.CFGMode{"soft": trace.CFGSoft, "semi-strict": trace.CFGSemiStrict, "strict": trace.CFGStrict}[mode]
	if !ok {
		return nil, usagef("--diff-tracing %q: use soft, semi-strict or strict", mode)
	}
	oldCG, err := tracer.CallGraph(base)
	if err != nil {
		return nil, fmt.Errorf("--diff-base: %w", err)
	}
	oldCode, err := schema.OpenCode(base)
	if err != nil {
		return nil, fmt.Errorf("--diff-base %s: %w", base, err)
	}
	curCode, err := schema.OpenCode(pr.exe)
	if err != nil {
		return nil, err
	}
	var hunks map[string]bool
	if gitRev != "" {
		cmd := exec.Command("git", "diff", "--no-color", gitRev, "--")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("--diff-git %s: git diff: %v: %s", gitRev, err, strings.TrimSpace(errb.String()))
		}
		hunks = trace.HunkFunctions(&out, pr.cg)
	}
	return trace.DiffTrace(trace.Version{Callees: oldCG, Flow: oldCode.Flow}, trace.Version{Callees: pr.cg, Flow: curCode.Flow}, hunks, m, true), nil
}

// jumpsOut are the functions of exe that tail-call a library function
// (tracer.JumpsOut); none when its code cannot be read.
func jumpsOut(exe string) map[string]bool {
	out, _ := tracer.JumpsOut(exe)
	return out
}
