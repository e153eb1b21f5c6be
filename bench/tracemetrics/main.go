// Command tracemetrics reads a recording of culprit trace and prints
// Perun's evaluation metrics for it (Pavela 2020, §5.1), one line of
// tab-separated fields, for bench/traceopt.sh:
//
//	PL    probed functions (probes set)
//	PLR   probed functions with at least one recorded call
//	calls calls recorded
//	PRT   main's inclusive time in ms (the program's run; "-" if main was not traced)
//	FC    functions whose best model of duration against call order has
//	      R² ≥ 0.5 (internal/analysis/models), per cent of PLR
//	hot   with a reference recording of the same program traced without
//	      optimization: of its functions whose exclusive time is over 1% of
//	      the run (the sum of all exclusive times), how many were probed here
//
//	tracemetrics CASE.rec [REFERENCE.rec]
package main

import (
	"fmt"
	"os"

	"github.com/culprit-dev/culprit/internal/analysis/models"
	"github.com/culprit-dev/culprit/internal/loader"
)

func main() {
	if len(os.Args) < 2 || len(os.Args) > 3 {
		fmt.Fprintln(os.Stderr, "usage: tracemetrics CASE.rec [REFERENCE.rec]")
		os.Exit(2)
	}
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "tracemetrics:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	p, err := loader.Load([]string{args[0]}, loader.Options{})
	if err != nil {
		return err
	}
	durs := make([][]float64, len(p.Probes))
	prt := "-"
	for i := range p.Calls {
		c := &p.Calls[i]
		durs[c.Probe] = append(durs[c.Probe], float64(c.Inclusive()))
		if p.Probes[c.Probe].Function == "main" && c.Depth == 0 {
			prt = fmt.Sprintf("%.1f", float64(c.Inclusive())/1e6)
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
	if len(args) == 2 {
		ref, err := loader.Load([]string{args[1]}, loader.Options{})
		if err != nil {
			return err
		}
		excl := map[string]uint64{}
		var total uint64
		for i := range ref.Calls {
			c := &ref.Calls[i]
			excl[ref.Probes[c.Probe].Function] += c.Exclusive()
			total += c.Exclusive()
		}
		probed := map[string]bool{}
		for _, pr := range p.Probes {
			probed[pr.Function] = true
		}
		n, kept := 0, 0
		var missing []string
		for f, e := range excl {
			if float64(e) > 0.01*float64(total) {
				n++
				if probed[f] {
					kept++
				} else {
					missing = append(missing, f)
				}
			}
		}
		hot = fmt.Sprintf("%d/%d", kept, n)
		if len(missing) > 0 {
			hot += fmt.Sprintf(" (not probed: %v)", missing)
		}
	}
	fmt.Printf("%d\t%d\t%d\t%s\t%.1f\t%s\n", len(p.Probes), plr, len(p.Calls), prt, fc, hot)
	return nil
}
