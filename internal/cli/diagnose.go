package cli

import (
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/culprit-dev/culprit/internal/analysis/vprof"
	"github.com/culprit-dev/culprit/internal/loader"
	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/render"
)

func newDiagnose() *cobra.Command {
	o := vprof.DefaultOptions()
	var (
		format    string
		output    string
		top       int
		different bool
		calls     []string
	)
	c := &cobra.Command{
		Use:   "diagnose --normal FILE... --buggy FILE... [flags]",
		Short: "Rank the functions that cause a slowdown, from a normal and a buggy run with sampled variable values",
		Long: `Diagnose compares normal and buggy runs recorded with culprit record --values
and ranks the functions most likely to cause the slowdown, with the bug pattern
and one line saying why (differential by default; --method vprof: vProf's).
With --buggy-calls, a trace of a buggy run (culprit trace --args) shows the
work a request does twice with the same arguments.

Most common uses:
  culprit diagnose --normal normal.rec --buggy buggy.rec
  culprit diagnose --normal n1.rec n2.rec --buggy b1.rec b2.rec   several runs of each
  culprit diagnose --normal normal.rec --buggy buggy.rec --format json
  culprit diagnose --normal normal.rec --buggy buggy.rec --buggy-calls buggy.trace
                   with a trace (culprit trace --args) of a buggy run: work a
                   request does twice with the same arguments

The methods, evidence and patterns: docs/cli.md (culprit diagnose), docs/vprof.md.`,
		Example: `  culprit record --values -o normal.rec -- ./server --small
  culprit record --values -o buggy.rec -- ./server --large
  culprit diagnose --normal normal.rec --buggy buggy.rec
  culprit diagnose --normal n1.rec n2.rec n3.rec --buggy b1.rec b2.rec b3.rec --format json`,
		DisableFlagParsing: true,
		RunE: func(c *cobra.Command, args []string) error {
			normal, buggy, rest := splitRuns(args)
			fs := c.Flags()
			if err := fs.Parse(rest); err != nil {
				if errors.Is(err, pflag.ErrHelp) {
					return c.Help()
				}
				return usageError{err}
			}
			if h, _ := fs.GetBool("help"); h {
				return c.Help()
			}
			if extra := fs.Args(); len(extra) > 0 {
				return usagef("unexpected argument %q: give recordings after --normal or --buggy", extra[0])
			}
			if len(normal) == 0 || len(buggy) == 0 {
				return usagef("give at least one normal and one buggy run: culprit diagnose --normal FILE... --buggy FILE...")
			}
			if format != "text" && format != "json" {
				return usagef("unknown format %q: use text or json", format)
			}
			if top < 0 {
				return usagef("--top takes a positive number")
			}
			if err := o.Check(); err != nil {
				return usageError{err}
			}
			res, err := diagnoseRuns(normal, buggy, calls, o, different, nil, c.ErrOrStderr())
			if err != nil {
				return err
			}
			return writeOutput(c.OutOrStdout(), output, func(w io.Writer) error {
				if format == "json" {
					return render.DiagnoseJSON(w, res)
				}
				return render.DiagnoseText(w, res, top)
			})
		},
	}
	f := c.Flags()
	f.StringArray("normal", nil, "recordings of normal runs (several after the flag, or the flag repeated)")
	f.StringArray("buggy", nil, "recordings of buggy runs")
	f.StringArrayVar(&calls, "buggy-calls", nil, "a trace of a buggy run (culprit trace --args -f REQUEST -f ...): calls a request repeats with the same arguments (the flag repeated for several)")
	f.StringVar(&format, "format", "text", "output format: text or json")
	f.StringVarP(&output, "output", "o", "-", "file to write (- for standard output)")
	f.IntVar(&top, "top", 20, "functions to print in text output (0: all)")
	f.Var(methodFlag{&o.Method}, "method", "ranking: differential (growth of each function's share of CPU time over complete stacks, weighted by evidence from its variables and own time) or vprof (the paper's calibrated cost)")
	f.Float64Var(&o.Alpha, "alpha", o.Alpha, "significance level of the Anderson–Darling test")
	f.Float64Var(&o.DefaultDiscount, "default-discount", o.DefaultDiscount, "discount of a variable whose normal and buggy samples look alike")
	f.Float64Var(&o.ValidDiscount, "valid-discount", o.ValidDiscount, "discounts 1 − Hellinger below this become 0")
	f.BoolVar(&different, "allow-different-binaries", false, "compare runs of two builds of the program (e.g. an older version as the normal run)")
	f.BoolP("help", "h", false, "help for diagnose")
	f.SortFlags = false
	return c
}

// diagnoseRuns runs vProf's analysis on the recordings of normal and buggy
// runs, read one at a time, with the traces of buggy runs in calls; of the
// buggy runs, only what window selects (nil: everything).
func diagnoseRuns(normal, buggy, calls []string, o vprof.Options, different bool, window *profile.Filter, stderr io.Writer) (*vprof.Result, error) {
	d, err := newDiagnoser(normal, buggy, o, different, stderr)
	if err != nil {
		return nil, err
	}
	if d.calls, err = storedPaths(calls, stderr); err != nil {
		return nil, err
	}
	// Streamed: the analyzer takes the samples and values as they are
	// read again, in time order, and keeps what it compares. A profile
	// is no longer needed once added: its memory is given back before
	// the next run loads.
	return d.run(func(path string) (*profile.Profile, error) {
		return loadProfileWith([]string{path}, stderr, loader.Options{Stream: true})
	}, debug.FreeOSMemory, window, nil)
}

// diagnoser runs vProf's analysis on the recordings of normal and buggy
// runs of one program, as often as asked (culprit view: once per time
// range), reading the program's machine code (basic blocks, reads,
// deciders, guards) once for every analysis it runs.
type diagnoser struct {
	mu            sync.Mutex // one analysis at a time: the code's caches are not shared
	o             vprof.Options
	normal, buggy []string // the recordings (stored runs resolved)
	calls         []string // traces of buggy runs (culprit trace --args)
	exes          []profile.Executable
	blocks        vprof.BlockFunc
	reads         vprof.ReadsFunc
	writes        vprof.WritesFunc
	deciders      vprof.DecideFunc
	repairs       vprof.RepairFunc
	guards        vprof.GuardFunc
	direct        vprof.CallFunc
	params        vprof.ParamFunc
	thresholds    vprof.ThresholdFunc
	branches      vprof.BranchFunc
	shapes        vprof.ShapeFunc
	bounds        vprof.BoundFunc
	loopCalls     vprof.LoopCallFunc
}

// newDiagnoser checks the runs (one program, unless different) and
// prepares their analysis with o.
func newDiagnoser(normal, buggy []string, o vprof.Options, different bool, stderr io.Writer) (*diagnoser, error) {
	normal, err := storedPaths(normal, stderr)
	if err != nil {
		return nil, err
	}
	if buggy, err = storedPaths(buggy, stderr); err != nil {
		return nil, err
	}
	exes, err := sameBinary(normal, buggy, different)
	if err != nil {
		return nil, err
	}
	if _, err := vprof.New(o); err != nil {
		return nil, usageError{err}
	}
	code := newCodeFinder(exes)
	return &diagnoser{o: o, normal: normal, buggy: buggy, exes: exes, blocks: blockFinder(code, stderr),
		reads: readsFinder(code), writes: writesFinder(code), deciders: deciderFinder(code), repairs: repairFinder(code), guards: guardFinder(code), direct: callFinder(code), params: paramFinder(code), thresholds: thresholdFinder(code),
		branches: branchFinder(exes[len(exes)-1]), shapes: shapeFinder(code), bounds: boundFinder(code), loopCalls: loopCallFinder(code)}, nil
}

// run analyses the runs, each profile loaded by load from its recording's
// path (normal runs first) and, after it is added, done called (nil: not);
// of the buggy runs, only what window selects (nil: everything). The
// analysis calls pause (nil: none) at regular steps (vprof's SetPause).
func (d *diagnoser) run(load func(path string) (*profile.Profile, error), done func(), window *profile.Filter, pause func()) (*vprof.Result, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	a, err := vprof.New(d.o)
	if err != nil {
		return nil, usageError{err}
	}
	a.SetBlocks(d.blocks)
	a.SetReads(d.reads)
	a.SetWrites(d.writes)
	a.SetDeciders(d.deciders)
	a.SetRepairs(d.repairs)
	a.SetGuards(d.guards)
	a.SetCalls(d.direct)
	a.SetParams(d.params)
	a.SetThresholds(d.thresholds)
	a.SetBranches(d.branches)
	a.SetShapes(d.shapes)
	a.SetBounds(d.bounds)
	a.SetLoopCalls(d.loopCalls)
	a.SetPause(pause)
	for i, path := range append(append([]string(nil), d.normal...), d.buggy...) {
		p, err := load(path)
		if err != nil {
			return nil, err
		}
		info := vprof.Run{Path: path}
		if d.exes[i].Path != "" {
			info.Executable = d.exes[i].String()
		}
		if i < len(d.normal) {
			err = a.AddNormal(p, info)
		} else {
			if window != nil {
				p = p.Apply(*window)
			}
			err = a.AddBuggy(p, info)
		}
		if err != nil {
			return nil, err
		}
		if done != nil {
			done()
		}
	}
	for _, path := range d.calls {
		// Whole, not streamed: its calls are what is read. Its warnings
		// are of its samples, which are not used.
		p, err := loadProfileWith([]string{path}, io.Discard, loader.Options{})
		if err != nil {
			return nil, err
		}
		if err := a.AddCalls(p); err != nil {
			if errors.Is(err, vprof.ErrNoArgs) || errors.Is(err, vprof.ErrNoCalls) {
				return nil, usagef("%s: %v", path, err)
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if done != nil {
			done()
		}
	}
	return a.Result()
}

// splitRuns takes the recordings that follow --normal and --buggy out of
// args (cobra cannot give a flag several values separated by spaces):
// "--normal a b --buggy c" and "--normal=a,b --buggy c --normal d" both
// work. Everything else is returned for the flag set.
func splitRuns(args []string) (normal, buggy, rest []string) {
	var cur *[]string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			rest = append(rest, args[i:]...)
			return
		case a == "--normal":
			cur = &normal
		case a == "--buggy":
			cur = &buggy
		case strings.HasPrefix(a, "--normal="):
			cur = &normal
			normal = append(normal, splitList(strings.TrimPrefix(a, "--normal="))...)
		case strings.HasPrefix(a, "--buggy="):
			cur = &buggy
			buggy = append(buggy, splitList(strings.TrimPrefix(a, "--buggy="))...)
		case strings.HasPrefix(a, "-") && a != "-":
			cur = nil
			rest = append(rest, a)
		case cur != nil:
			*cur = append(*cur, a)
		default:
			rest = append(rest, a)
		}
	}
	return
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// sameBinary checks that every run ran the program of the first normal run
// (by build-id, else by path), unless different builds are allowed, and
// returns the programs in the order normal..., buggy....
func sameBinary(normal, buggy []string, allow bool) ([]profile.Executable, error) {
	all := append(append([]string(nil), normal...), buggy...)
	exes, err := loader.Executables(all)
	if err != nil {
		return nil, err
	}
	if allow {
		return exes, nil
	}
	kind := func(i int) string {
		if i < len(normal) {
			return "normal"
		}
		return "buggy"
	}
	ref := -1
	for i, e := range exes {
		if e.Path == "" {
			continue
		}
		if ref < 0 {
			ref = i
			continue
		}
		if !e.Same(exes[ref]) {
			return nil, fmt.Errorf("runs of different binaries compared: %s run %s ran %s, but %s run %s ran %s.\n"+
				"vProf compares runs of one build. Record both kinds of run with the same binary, or pass\n"+
				"--allow-different-binaries to compare two builds (e.g. an older version as the normal run):\n"+
				"variables are then matched by name, function, file, declaring line and type, and functions by name and object file name",
				kind(ref), all[ref], exes[ref], kind(i), all[i], e)
		}
	}
	return exes, nil
}

// methodFlag is --method: differential or vprof.
type methodFlag struct{ m *vprof.Method }

func (f methodFlag) String() string {
	if f.m == nil || *f.m == "" {
		return string(vprof.MethodDifferential)
	}
	return string(*f.m)
}

func (f methodFlag) Set(s string) error {
	switch vprof.Method(s) {
	case vprof.MethodDifferential, vprof.MethodVprof:
		*f.m = vprof.Method(s)
		return nil
	}
	return fmt.Errorf("unknown method %q: use differential or vprof", s)
}

func (f methodFlag) Type() string { return "method" }
