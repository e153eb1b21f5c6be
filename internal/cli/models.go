package cli

import (
	"fmt"
	"io"
	"maps"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/culprit-dev/culprit/internal/analysis/check"
	"github.com/culprit-dev/culprit/internal/analysis/models"
	"github.com/culprit-dev/culprit/internal/analysis/trace"
	"github.com/culprit-dev/culprit/internal/render"
	"github.com/culprit-dev/culprit/internal/store"
)

// pickX chooses the parameter models fit against: the one given, else the
// only parameter whose values are numbers and vary across the runs.
func pickX(runs []store.Run, given string) (string, error) {
	if given != "" {
		for _, r := range runs {
			if _, ok := r.Params[given]; ok {
				return given, nil
			}
		}
		return "", usagef("--x %s: no stored run has that parameter", given)
	}
	values := map[string]map[string]bool{}
	for _, r := range runs {
		for k, v := range store.InputParams(r.Params) {
			if _, err := strconv.ParseFloat(v, 64); err != nil {
				continue
			}
			if values[k] == nil {
				values[k] = map[string]bool{}
			}
			values[k][v] = true
		}
	}
	var varying []string
	for k, vs := range values {
		if len(vs) > 1 {
			varying = append(varying, k)
		}
	}
	sort.Strings(varying)
	switch len(varying) {
	case 0:
		return "", nil
	case 1:
		return varying[0], nil
	}
	return "", usagef("several parameters vary across the runs (%s): say which is x with --x", strings.Join(varying, ", "))
}

// seriesKey is a run's pairing key without the x parameter.
func seriesKey(r store.Run, x string) string {
	p := map[string]string{}
	for k, v := range store.InputParams(r.Params) {
		if k != x {
			p[k] = v
		}
	}
	return r.Workload + "\x00" + store.ParamString(p) + "\x00" + r.Config
}

// checkRuns reads the function statistics of runs for package check; with
// calls, a traced run's functions are its traced calls, read from its
// recording (per-call exclusive durations and numeric arguments).
func checkRuns(st *store.Store, runs []store.Run, x string, calls bool) ([]check.Run, error) {
	var out []check.Run
	for _, r := range runs {
		cr := check.Run{Pair: r.PairKey(), Series: seriesKey(r, x)}
		if v, ok := r.Params[x]; ok && x != "" {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				cr.X, cr.HasX = f, true
			}
		}
		if calls {
			traced, err := st.TracedCalls(r.ID)
			if err != nil {
				return nil, err
			}
			if len(traced) > 0 {
				if cr.Funcs, err = tracedFuncs(st, r); err != nil {
					return nil, err
				}
				cr.Traced = true
				out = append(out, cr)
				continue
			}
		}
		funcs, err := st.Functions(r.ID)
		if err != nil {
			return nil, err
		}
		for _, f := range funcs {
			cr.Funcs = append(cr.Funcs, check.Func{Name: f.Name, Object: f.Object, Samples: f.Self, Amount: float64(f.SelfNS)})
		}
		out = append(out, cr)
	}
	return out, nil
}

// tracedFuncs reads a stored traced run's calls: per function, each
// returned call's exclusive duration and the numeric arguments it had.
func tracedFuncs(st *store.Store, r store.Run) ([]check.Func, error) {
	path, err := st.RecordingPath(r.Recording)
	if err != nil {
		return nil, err
	}
	p, err := loadProfile([]string{path}, io.Discard, false)
	if err != nil {
		return nil, fmt.Errorf("run %d: %w", r.ID, err)
	}
	byName := map[string]*check.Func{}
	var order []string
	for _, c := range p.Calls {
		if c.Unreturned() || c.CPULost() {
			// Its end is only a bound, or its on-CPU time is missing
			// while its function's others are known (the lists of
			// durations, on-CPU times and arguments are paired).
			continue
		}
		pr := &p.Probes[c.Probe]
		f := byName[pr.Function]
		if f == nil {
			f = &check.Func{Name: pr.Function, Object: pr.Object}
			byName[pr.Function] = f
			order = append(order, pr.Function)
		}
		for i, a := range trace.Args(pr, &c) {
			v, ok := trace.Numeric(c.Args[i], pr.Params, i)
			if !ok {
				continue
			}
			if f.Args == nil {
				f.Args = map[string][]float64{}
			}
			for len(f.Args[a.Name]) < len(f.Durations) {
				f.Args[a.Name] = append(f.Args[a.Name], math.NaN())
			}
			f.Args[a.Name] = append(f.Args[a.Name], v)
		}
		f.Durations = append(f.Durations, float64(c.Exclusive()))
		f.Amount += float64(c.Exclusive())
		if c.HasCPU() {
			f.CPU = append(f.CPU, float64(c.ExclusiveCPU()))
		}
	}
	out := make([]check.Func, 0, len(order))
	for _, n := range order {
		f := byName[n]
		for a := range f.Args {
			for len(f.Args[a]) < len(f.Durations) {
				f.Args[a] = append(f.Args[a], math.NaN())
			}
		}
		if len(f.CPU) != len(f.Durations) {
			f.CPU = nil // some call's on-CPU time is not known
		}
		out = append(out, *f)
	}
	return out, nil
}

func newModels() *cobra.Command {
	var (
		x, fn, format, output, workload string
		timeKind                        string
		minShare                        float64
	)
	c := &cobra.Command{
		Use:   "models [REV] [--x PARAM] [--func REGEX] [--format text|json|svg]\n  culprit models --x call-order [--func REGEX] [FILE|@REV]",
		Short: "Fit how each function's time grows with an input parameter",
		Long: `Models fits, for each function, how its self CPU time grows with an input
parameter across the stored runs of a commit (default HEAD): constant, log,
linear, quadratic, power or exponential, the best by R², as Perun does.

Most common uses:
  culprit models                       each function's model against the one varying parameter
  culprit models --x n --func '^parse' the parse functions against n
  culprit models --x call-order t.rec  traced calls that get slower as the run goes on

Runs come from culprit run --param KEY=VALUE at 3 or more values; --x
expr:EXPR fits against a sampled expression's mean instead. Models,
parameters and the non-parametric fits in detail: docs/history.md (Models).`,
		Example: `  culprit models
  culprit models --x n --func '^(parse|sort)'
  culprit models v1.2 --format svg -o models.svg
  culprit trace -f 'insert*' -o t.rec -- ./prog && culprit models --x call-order t.rec`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("models takes at most one revision")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if format != "text" && format != "json" && format != "svg" {
				return usagef("unknown format %q: use text, json or svg", format)
			}
			var re *regexp.Regexp
			if fn != "" {
				var err error
				if re, err = regexp.Compile(fn); err != nil {
					return usagef("--func %q: %v", fn, err)
				}
			}
			if timeKind != "cpu" && timeKind != "wall" {
				return usagef("--time %q: use cpu or wall", timeKind)
			}
			if x == "call-order" {
				fs, err := callOrderModels(args, re, timeKind == "wall", c.ErrOrStderr())
				if err != nil {
					return err
				}
				return writeModels(c.OutOrStdout(), output, format, fs, "call")
			}
			rev := "HEAD"
			if len(args) == 1 {
				rev = strings.TrimPrefix(args[0], "@")
			}
			st, err := openStore()
			if err != nil {
				return err
			}
			defer st.Close()
			fs, xname, err := modelsAt(st, rev, x, workload, re, minShare/100)
			if err != nil {
				return err
			}
			return writeModels(c.OutOrStdout(), output, format, fs, xname)
		},
	}
	f := c.Flags()
	f.StringVar(&x, "x", "", "the parameter to fit against (default: the one that varies across the runs); expr:EXPR, the mean of an expression sampled with --expr; or call-order: traced calls' durations against their order in one recording")
	f.StringVar(&fn, "func", "", "only functions whose names match this regular expression")
	f.StringVar(&workload, "workload", "", "only runs of this workload")
	f.StringVar(&timeKind, "time", "cpu", "call-order: model each call's time on the CPU (cpu; wall time for recordings that did not measure it) or its wall duration (wall)")
	f.Float64Var(&minShare, "min-share", 1, "only functions with at least this percentage of the samples of some run")
	f.StringVar(&format, "format", "text", "output format: text, json or svg (scatter plots with the fitted curves)")
	f.StringVarP(&output, "output", "o", "-", "file to write (- for standard output)")
	return c
}

// modelsAt fits the functions (matching re, when not nil) of the stored
// runs of rev (of workload, when not "") against the parameter x (when
// "", the one that varies), those with at least minShare of some run's
// samples; and returns the parameter's name.
func modelsAt(st *store.Store, rev, x, workload string, re *regexp.Regexp, minShare float64) ([]models.Function, string, error) {
	hash, _, err := commitOf(rev)
	if err != nil {
		return nil, "", err
	}
	runs, err := st.Runs(hash)
	if err != nil {
		return nil, "", err
	}
	if workload != "" {
		var keep []store.Run
		for _, r := range runs {
			if r.Workload == workload {
				keep = append(keep, r)
			}
		}
		runs = keep
	}
	if len(runs) == 0 {
		return nil, "", fmt.Errorf("no runs of %s (%s) in %s: culprit run --param n=... -- CMD stores them", rev, hash[:12], st.Where())
	}
	xname, err := pickX(runs, x)
	if err != nil {
		return nil, "", err
	}
	if xname == "" {
		return nil, "", fmt.Errorf("no numeric parameter varies across the %d runs of %s: store runs at several input sizes (culprit run --param n=1000 -- CMD)", len(runs), rev)
	}
	crs, err := checkRuns(st, runs, xname, false)
	if err != nil {
		return nil, "", err
	}
	fs := fitFunctions(crs, re, minShare)
	if len(fs) == 0 {
		return nil, "", fmt.Errorf("no function has runs at %d or more values of %s in %s", models.MinPoints, xname, rev)
	}
	return fs, xname, nil
}

// fitFunctions fits each function of each series with points at enough x
// values (y: self CPU seconds per run at each x, check.RunAmount of its
// runs there: the median from three runs on).
func fitFunctions(runs []check.Run, re *regexp.Regexp, minShare float64) []models.Function {
	type key struct{ series, name string }
	type acc struct {
		at  map[float64][]float64 // self CPU seconds of each run with the function
		obj string
		big bool
	}
	runsAt := map[string]map[float64]int{}
	for _, r := range runs {
		if r.HasX {
			if runsAt[r.Series] == nil {
				runsAt[r.Series] = map[float64]int{}
			}
			runsAt[r.Series][r.X]++
		}
	}
	data := map[key]*acc{}
	for _, r := range runs {
		if !r.HasX {
			continue
		}
		var total int64
		for _, f := range r.Funcs {
			total += f.Samples
		}
		inRun := map[key]float64{} // one amount per run, whatever objects a name is in
		for _, f := range r.Funcs {
			if re != nil && !re.MatchString(f.Name) {
				continue
			}
			k := key{r.Series, f.Name}
			a := data[k]
			if a == nil {
				a = &acc{at: map[float64][]float64{}, obj: f.Object}
				data[k] = a
			}
			inRun[k] += f.Amount / 1e9
			if total > 0 && float64(f.Samples) >= minShare*float64(total) {
				a.big = true
			}
		}
		for k, v := range inRun {
			data[k].at[r.X] = append(data[k].at[r.X], v)
		}
	}
	var out []models.Function
	for k, a := range data {
		if !a.big {
			continue
		}
		// In x's order: the fit's rounding, and so what it prints, does
		// not then depend on a map's.
		xs := slices.Sorted(maps.Keys(runsAt[k.series]))
		ys := make([]float64, len(xs))
		for i, x := range xs {
			ys[i] = check.RunAmount(a.at[x], runsAt[k.series][x]) // a run without the function: 0
		}
		f, err := models.Analyze(k.name, a.obj, strings.ReplaceAll(k.series, "\x00", " "), xs, ys)
		if err != nil {
			continue
		}
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool {
		yi, yj := out[i].Y[len(out[i].Y)-1], out[j].Y[len(out[j].Y)-1]
		if yi != yj {
			return yi > yj
		}
		return out[i].Name < out[j].Name
	})
	return out
}

func writeModels(stdout io.Writer, output, format string, fs []models.Function, xname string) error {
	return writeOutput(stdout, output, func(w io.Writer) error {
		switch format {
		case "json":
			return render.ModelsJSON(w, fs, xname, "s")
		case "svg":
			return render.ModelsSVG(w, fs, xname, "s")
		}
		return render.ModelsText(w, fs, xname, "s")
	})
}

// callOrderModels fits each traced function's per-call inclusive time (s)
// against the call's order among the function's calls (1, 2, ...): its
// time on the CPU when every call of the function has it and wall is not
// set, else its duration.
func callOrderModels(args []string, re *regexp.Regexp, wall bool, stderr io.Writer) ([]models.Function, error) {
	if len(args) > 1 {
		return nil, usagef("--x call-order reads one recording of traced calls")
	}
	p, err := loadProfile(args, stderr, false)
	if err != nil {
		return nil, err
	}
	if len(p.Calls) == 0 {
		return nil, fmt.Errorf("no traced calls in the recording: --x call-order fits the calls culprit trace records")
	}
	byProbe := map[int32][]int{}
	for i, c := range p.Calls {
		byProbe[c.Probe] = append(byProbe[c.Probe], i)
	}
	var out []models.Function
	for probe, idx := range byProbe {
		pr := p.Probes[probe]
		if re != nil && !re.MatchString(pr.Function) {
			continue
		}
		sort.Slice(idx, func(a, b int) bool { return p.Calls[idx[a]].Start < p.Calls[idx[b]].Start })
		cpu := !wall
		for _, i := range idx {
			if c := &p.Calls[i]; !c.Unreturned() && !c.HasCPU() && !c.CPULost() {
				cpu = false
			}
		}
		var xs, ys []float64
		for k, i := range idx {
			c := &p.Calls[i]
			if c.Unreturned() || (cpu && c.CPULost()) {
				continue // its end is only a bound, or its on-CPU time is lost
			}
			xs = append(xs, float64(k+1))
			if cpu {
				ys = append(ys, float64(c.InclusiveCPU())/1e9)
			} else {
				ys = append(ys, float64(c.Inclusive())/1e9)
			}
		}
		f, err := models.AnalyzeRobust(pr.Function, pr.Object, "call order", xs, ys)
		if err != nil {
			continue
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no traced function has %d or more calls", models.MinPoints)
	}
	sort.Slice(out, func(i, j int) bool {
		if len(out[i].X) != len(out[j].X) {
			return len(out[i].X) > len(out[j].X)
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}
