// Command tracemetrics reads a recording of culprit trace and prints
// Perun's evaluation metrics for it (Pavela 2020, §5.1), one line of
// tab-separated fields, for bench/traceopt.sh:
//
//	PL    probed functions (probes set)
//	PLR   probed functions with at least one recorded call
//	calls calls recorded
//	PRT   the root's inclusive time in ms (the program's run; "-" if the
//	      root was not traced): its outermost call
//	FC    functions whose best model of duration against call order has
//	      R² ≥ 0.5 (internal/analysis/models), per cent of PLR
//	hot   with reference recordings of the same program and workload: of
//	      the functions whose exclusive time is over 1% of the run, how many
//	      were probed here. A reference of culprit record (CPU samples of
//	      untraced runs, as many files as needed for enough samples) gives
//	      the shares trace.SampledShares reads; a traced reference (without
//	      optimization) its summed exclusive times, inflated by the probes'
//	      own cost. A function not probed is said to be over 1% beyond
//	      sampling noise when the lower end of its two-sigma interval is.
//
// The root (--root, default main) is the function whose run is measured:
// the samples of the reference count when it is on their stack, or a
// function it tail-calls is (tracer.StackRoots: CPython's main jumps to
// Py_BytesMain, so no sampled stack holds main).
//
//	tracemetrics [--root FUNC] CASE.rec [REFERENCE.rec...]
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"

	"github.com/culprit-dev/culprit/internal/analysis/models"
	"github.com/culprit-dev/culprit/internal/analysis/trace"
	"github.com/culprit-dev/culprit/internal/elfx"
	"github.com/culprit-dev/culprit/internal/loader"
	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/tracer"
)

func main() {
	root := flag.String("root", "main", "the function whose run is measured")
	flag.Parse()
	if flag.NArg() < 1 {
		fmt.Fprintln(os.Stderr, "usage: tracemetrics [--root FUNC] CASE.rec [REFERENCE.rec...]")
		os.Exit(2)
	}
	if err := run(*root, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "tracemetrics:", err)
		os.Exit(1)
	}
}

func run(root string, args []string) error {
	p, err := loader.Load([]string{args[0]}, loader.Options{})
	if err != nil {
		return err
	}
	durs := make([][]float64, len(p.Probes))
	prt, depth := "-", -1
	for i := range p.Calls {
		c := &p.Calls[i]
		durs[c.Probe] = append(durs[c.Probe], float64(c.Inclusive()))
		if p.Probes[c.Probe].Function == root && (depth < 0 || int(c.Depth) < depth) {
			prt, depth = fmt.Sprintf("%.1f", float64(c.Inclusive())/1e6), int(c.Depth)
		}
	}
	plr, reliable := 0, 0
	for _, y := range durs {
		if len(y) == 0 {
			continue
		}
		plr++
		x := make([]float64, len(y))
		for i := range x {
			x[i] = float64(i + 1)
		}
		fits, err := models.FitAll(x, y)
		if err != nil {
			continue // fewer than 3 calls: no model
		}
		if models.Best(fits).Reliable() {
			reliable++
		}
	}
	fc := 0.0
	if plr > 0 {
		fc = 100 * float64(reliable) / float64(plr)
	}
	hot := "-"
	if len(args) >= 2 {
		ref, err := loader.Load(args[1:], loader.Options{})
		if err != nil {
			return err
		}
		over, sure, err := hotSet(ref, p, root)
		if err != nil {
			return err
		}
		probed := map[string]bool{}
		for _, pr := range p.Probes {
			probed[elfx.StripClones(pr.Function)] = true
		}
		kept := 0
		var missing []string
		for _, f := range over {
			if probed[f] {
				kept++
			} else {
				missing = append(missing, f)
			}
		}
		hot = fmt.Sprintf("%d/%d", kept, len(over))
		if len(missing) > 0 {
			hot += fmt.Sprintf(" (not probed: %v", missing)
			if sure != nil {
				n := 0
				for _, f := range missing {
					if sure[f] {
						n++
					}
				}
				hot += fmt.Sprintf("; %d of them over 1%% beyond sampling noise", n)
			}
			hot += ")"
		}
	}
	fmt.Printf("%d\t%d\t%d\t%s\t%.1f\t%s\n", len(p.Probes), plr, len(p.Calls), prt, fc, hot)
	return nil
}

// hotSet returns the functions over 1% of the run of root in the
// reference ref, clone suffixes removed: by CPU samples if it has them, else by the
// summed exclusive times of its traced calls. With samples it also says
// which are over 1% beyond sampling noise (the lower end of the share's
// two-sigma interval).
func hotSet(ref, traced *profile.Profile, root string) ([]string, map[string]bool, error) {
	var out []string
	if len(ref.Calls) == 0 {
		exe := ""
		for _, pr := range traced.Probes {
			if pr.Function == root {
				exe = pr.Object
			}
		}
		if exe == "" {
			return nil, nil, fmt.Errorf("a sampled reference needs %s traced, to know the executable", root)
		}
		roots, err := tracer.StackRoots(exe, root)
		if err != nil {
			return nil, nil, err
		}
		if len(roots) == 0 {
			return nil, nil, fmt.Errorf("%s has no function %s", exe, root)
		}
		shares, n := trace.SampledShares(ref, exe, roots)
		if n == 0 {
			return nil, nil, fmt.Errorf("the reference has no CPU samples in %s under %v", exe, roots)
		}
		sure := map[string]bool{}
		for f, s := range shares {
			if s.Share > 0.01 {
				out = append(out, f)
				sure[f] = s.Share-s.Err > 0.01
			}
		}
		sort.Strings(out)
		fmt.Fprintf(os.Stderr, "tracemetrics: %d samples under %v in the reference\n", n, roots)
		return out, sure, nil
	}
	excl := map[string]uint64{}
	var total uint64
	for i := range ref.Calls {
		c := &ref.Calls[i]
		excl[elfx.StripClones(ref.Probes[c.Probe].Function)] += c.Exclusive()
		total += c.Exclusive()
	}
	for f, e := range excl {
		if float64(e) > 0.01*float64(total) {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out, nil, nil
}
