// Command samplegaps says what each sample cost the sampled thread. It reads
// the interruptions that bench/samplegaps/spin/spin.c saw (start and end, ns of
// CLOCK_MONOTONIC) and the sample times of a recording of it — a culprit
// recording, or the output of `perf script -F time --ns` of a perf.data
// recorded with -k CLOCK_MONOTONIC — and charges each sample the
// interruption that holds it. Interruptions that hold no sample are the
// machine's own (timer ticks, the hypervisor); they are summed apart, so
// that the per-sample figure is free of this VM's noise, which decides
// whole-run timings at the 1% level.
//
//	samplegaps GAPS [SAMPLES]
//
// It prints one line of space-separated key value pairs.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/culprit-dev/culprit/internal/recording"
)

type gap struct{ start, end float64 }

func main() {
	if len(os.Args) < 2 || len(os.Args) > 3 {
		fmt.Fprintln(os.Stderr, "usage: samplegaps GAPS [culprit.rec | perf-script-times.txt]")
		os.Exit(2)
	}
	gaps, err := readGaps(os.Args[1])
	if err != nil {
		fail(err)
	}
	var times []float64
	if len(os.Args) == 3 {
		if times, err = readTimes(os.Args[2]); err != nil {
			fail(err)
		}
	}
	// A sample is taken inside the interruption it causes; allow 2 µs for
	// the two clocks' conversion.
	const slack = 2000
	used := make([]bool, len(gaps))
	var costs []float64
	j := 0
	for _, t := range times {
		for j < len(gaps) && gaps[j].end < t-slack {
			j++
		}
		if j < len(gaps) && gaps[j].start <= t+slack && !used[j] {
			used[j] = true
			costs = append(costs, (gaps[j].end-gaps[j].start)/1e3)
		}
	}
	var other float64
	nother := 0
	for i, g := range gaps {
		if !used[i] {
			other += g.end - g.start
			nother++
		}
	}
	slices.Sort(costs)
	var sum float64
	for _, c := range costs {
		sum += c
	}
	p50, mean := 0.0, 0.0
	if len(costs) > 0 {
		p50, mean = costs[len(costs)/2], sum/float64(len(costs))
	}
	fmt.Printf("samples %d matched %d p50_us %.2f mean_us %.2f sample_ms %.2f other_gaps %d other_ms %.2f\n",
		len(times), len(costs), p50, mean, sum/1e3, nother, other/1e6)
}

func readGaps(path string) ([]gap, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var gaps []gap
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var g gap
		if _, err := fmt.Sscan(sc.Text(), &g.start, &g.end); err != nil {
			return nil, fmt.Errorf("%s: %q: %v", path, sc.Text(), err)
		}
		gaps = append(gaps, g)
	}
	return gaps, sc.Err()
}

// readTimes reads the sample times of a culprit recording, or lines of
// perf script's "SECONDS.NANOSECONDS:".
func readTimes(path string) ([]float64, error) {
	var times []float64
	if r, err := recording.Open(path); err == nil {
		defer r.Close()
		for {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %v", path, err)
			}
			if s, ok := rec.(*recording.Sample); ok {
				times = append(times, float64(s.Time))
			}
		}
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			s := strings.TrimSuffix(strings.TrimSpace(sc.Text()), ":")
			sec, ns, ok := strings.Cut(s, ".")
			a, err1 := strconv.ParseInt(sec, 10, 64)
			b, err2 := strconv.ParseInt(ns, 10, 64)
			if !ok || err1 != nil || err2 != nil || len(ns) != 9 {
				return nil, fmt.Errorf("%s: %q is not a perf script --ns time", path, sc.Text())
			}
			times = append(times, float64(a*1e9+b))
		}
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	slices.Sort(times)
	return times, nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "samplegaps:", err)
	os.Exit(1)
}
