// Command replicate makes a large recording out of a real one, for measuring
// report speed: it copies the input's metadata and repeats its samples (with
// their real stacks) shifted in time until the output holds N samples.
//
//	go run ./bench/replicate [-cpu-clock] -n 1000000 in.rec out.rec
//
// With -cpu-clock the input's CPU samples are first placed on each
// thread's CPU time (a thread's sample at the sum of the periods of its
// samples before it, from the first sample's time) instead of their wall
// times: the timeline the program has on an idle machine. A recording made
// on a busy machine spreads its samples over the time its threads waited
// for a CPU, so the output's span, and what the views draw over time (the
// time view's cells), would otherwise depend on the load at recording.
package main

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/culprit-dev/culprit/internal/recording"
)

func main() {
	n := flag.Int("n", 1000000, "samples to write")
	flag.BoolVar(&cpuClock, "cpu-clock", false, "place the CPU samples on their threads' CPU time, not their wall times (see the doc)")
	flag.Parse()
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: replicate [-n N] IN.rec OUT.rec")
		os.Exit(2)
	}
	if err := replicate(flag.Arg(0), flag.Arg(1), *n); err != nil {
		fmt.Fprintln(os.Stderr, "replicate:", err)
		os.Exit(1)
	}
}

var cpuClock bool

func replicate(in, out string, n int) error {
	r, err := recording.Open(in)
	if err != nil {
		return err
	}
	defer r.Close()
	stacks := map[uint64]*recording.Stack{}
	var samples []recording.Sample
	var other []recording.Record
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		switch v := rec.(type) {
		case *recording.Stack:
			stacks[v.ID] = v
		case *recording.Sample:
			samples = append(samples, *v)
		case *recording.End:
		default:
			other = append(other, rec)
		}
	}
	if len(samples) == 0 {
		return fmt.Errorf("%s has no samples", in)
	}
	if cpuClock {
		if err := onCPUClock(samples); err != nil {
			return fmt.Errorf("%s: %v", in, err)
		}
	}
	w, err := recording.Create(out)
	if err != nil {
		return err
	}
	for _, rec := range other {
		if err := w.Write(rec); err != nil {
			return err
		}
	}
	span := samples[len(samples)-1].Time - samples[0].Time + 1
	for i := 0; i < n; i++ {
		s := samples[i%len(samples)]
		s.Time += uint64(i/len(samples)) * span
		var k, u []uint64
		if st := stacks[s.StackID]; st != nil {
			k, u = st.Kernel, st.User
		}
		if err := w.WriteSample(s, k, u); err != nil {
			return err
		}
	}
	if err := w.Write(&recording.End{Samples: uint64(n), ExitCode: -1}); err != nil {
		return err
	}
	return w.Close()
}

// onCPUClock places samples, CPU samples in time order, on their threads'
// CPU time: each at the first sample's time plus the periods of its
// thread's samples before it; then sorts them by that time (a stable
// sort: a tie keeps the order read).
func onCPUClock(samples []recording.Sample) error {
	t0 := samples[0].Time
	used := map[uint32]uint64{} // by thread, the CPU time of its samples so far
	for i := range samples {
		s := &samples[i]
		if s.Event != recording.EventCPU {
			return fmt.Errorf("-cpu-clock: a sample of event %v, want CPU samples alone", s.Event)
		}
		s.Time, used[s.TID] = t0+used[s.TID], used[s.TID]+s.Period
	}
	slices.SortStableFunc(samples, func(a, b recording.Sample) int { return cmp.Compare(a.Time, b.Time) })
	return nil
}
