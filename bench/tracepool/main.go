// Command tracepool judges a build's pool of CPU samples (the
// BUILD-ID.cpu.json culprit trace keeps beside the Dynamic Stats) by two
// rules, against an untraced reference of the same program and workload,
// and prints for each how many functions it judges hot and how many of
// the reference's functions over 1% it keeps:
//
//	pooled  the functions' pooled counts over the pool's untraced total
//	        (trace.UntracedTotal, trace.SampledHot): what culprit trace's
//	        --keep-hot reads with no --hot-from
//	fitted  each function's samples fitted against the traces' probe
//	        traps (trace.UntracedByFunction, trace.FittedHot)
//
// With -traces K the pool is judged as it was after its first K traces.
// The reference is as bench/tracemetrics reads it (culprit record of the
// untraced program; samples under main or what it tail-calls).
//
//	tracepool [-traces K] [-root FUNC] EXE POOL.cpu.json REFERENCE.rec...
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"

	"github.com/culprit-dev/culprit/internal/analysis/trace"
	"github.com/culprit-dev/culprit/internal/loader"
	"github.com/culprit-dev/culprit/internal/tracer"
)

func main() {
	k := flag.Int("traces", 0, "judge the pool as it was after its first K traces (0: all)")
	root := flag.String("root", "main", "the function whose run the reference measures")
	flag.Parse()
	if flag.NArg() < 3 {
		fmt.Fprintln(os.Stderr, "usage: tracepool [-traces K] [-root FUNC] EXE POOL.cpu.json REFERENCE.rec...")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), flag.Arg(1), flag.Args()[2:], *k, *root); err != nil {
		fmt.Fprintln(os.Stderr, "tracepool:", err)
		os.Exit(1)
	}
}

func run(exe, path string, refs []string, k int, root string) error {
	var pool struct {
		Traces []trace.PooledTrace `json:"traces"`
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, &pool); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	traces := pool.Traces
	if k > 0 && k < len(traces) {
		traces = traces[:k]
	}
	counts, samples := map[string]int{}, 0
	for _, t := range traces {
		if t.Counts == nil {
			return fmt.Errorf("%s: a trace without its counts by function (the pool was begun before they were kept)", path)
		}
		for f, n := range t.Counts {
			counts[f] += n
		}
		samples += t.Samples
	}
	ref, err := loader.Load(refs, loader.Options{})
	if err != nil {
		return err
	}
	roots, err := tracer.StackRoots(exe, root)
	if err != nil {
		return err
	}
	shares, n := trace.SampledShares(ref, exe, roots)
	if n == 0 {
		return fmt.Errorf("the reference has no CPU samples in %s under %v", exe, roots)
	}
	var over []string
	for f, s := range shares {
		if s.Share > 0.01 {
			over = append(over, f)
		}
	}
	sort.Strings(over)
	fmt.Printf("pool: %d traces, %d samples; reference: %d samples, %d functions over 1%%\n", len(traces), samples, n, len(over))
	report := func(name string, hot map[string]bool) {
		kept, sure, keptSure := 0, 0, 0
		var missed []string
		for _, f := range over {
			s := shares[f]
			beyond := s.Share-s.Err > 0.01
			if beyond {
				sure++
			}
			if hot[f] {
				kept++
				if beyond {
					keptSure++
				}
				continue
			}
			missed = append(missed, fmt.Sprintf("%s %.2f%%", f, 100*s.Share))
		}
		fmt.Printf("%-7s judged hot %4d; kept %d of %d (%d of %d over 1%% beyond noise); missed: %s\n", name, len(hot), kept, len(over), keptSure, sure, strings.Join(missed, ", "))
	}
	total, d, ok := trace.UntracedTotal(traces)
	if !ok {
		return fmt.Errorf("the pool's traces give no line (they need traces of many and of few traps)")
	}
	fmt.Printf("untraced total %.0f samples, %.0f ns a trap\n", total, d*1e9)
	report("pooled", trace.SampledHot(counts, int(math.Round(total)), 1))
	by, ftotal, _, ok := trace.UntracedByFunction(traces)
	if !ok {
		return fmt.Errorf("the pool cannot be fitted function by function")
	}
	report("fitted", trace.FittedHot(by, ftotal, 1))
	return nil
}
