package loader

import (
	"os"
	"testing"

	"github.com/culprit-dev/culprit/internal/recording"
)

// NoSamples keeps a trace's calls and probes and leaves its samples out;
// Objects names the frames of the objects it accepts only, the others by
// object and offset with no warning.
func TestNoSamplesAndObjects(t *testing.T) {
	bin, offs, bid := hierFuncs(t)
	st, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	const base = 0x555555554000
	path := writeRec(t,
		&recording.Meta{Frequency: 1000},
		&recording.Comm{Time: 1, PID: 12, TID: 12, Exec: true, Name: "hier"},
		&recording.Mmap{Time: 1, PID: 12, TID: 12, Start: base, Len: uint64(st.Size()), Path: bin, BuildID: bid},
		&recording.Probe{ID: 1, Function: "worker", Object: bin, BuildID: bid, Offset: offs["worker"]},
		&recording.Stack{ID: 1, User: []uint64{base + offs["worker"] + 4, base + offs["main"] + 9}},
		&recording.Sample{Time: 10, PID: 12, TID: 12, Period: 1000, StackID: 1},
		&recording.Call{Start: 5, End: 20, PID: 12, TID: 12, Probe: 1},
		&recording.End{Time: 30},
	)
	p, err := Load([]string{path}, Options{NoSamples: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Samples) != 0 || len(p.Calls) != 1 || len(p.Probes) == 0 || p.Probes[p.Calls[0].Probe].Function != "worker" {
		t.Fatalf("NoSamples: %d samples, calls %+v, probes %+v; want no sample and worker's call", len(p.Samples), p.Calls, p.Probes)
	}
	for _, c := range []struct {
		accept bool
		want   string
	}{{true, "worker"}, {false, ""}} {
		p, err := Load([]string{path}, Options{Objects: func(string) bool { return c.accept }})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Samples) != 1 || len(p.Warnings) != 0 {
			t.Fatalf("Objects (accept %v): %d samples, warnings %q", c.accept, len(p.Samples), p.Warnings)
		}
		f := p.FrameAt(p.StackAt(p.Samples[0].Stack)[0])
		if f.Function != c.want || f.Object != bin {
			t.Errorf("Objects (accept %v): innermost frame %+v, want function %q of %s", c.accept, f, c.want, bin)
		}
	}
}
