// Command replicate makes a large recording out of a real one, for measuring
// report speed: it copies the input's metadata and repeats its samples (with
// their real stacks) shifted in time until the output holds N samples.
//
//	go run ./bench/replicate -n 1000000 in.rec out.rec
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/culprit-dev/culprit/internal/recording"
)

func main() {
	n := flag.Int("n", 1000000, "samples to write")
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
