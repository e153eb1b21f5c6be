package loader

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
)

// TestSamplesSizedFromEnd checks that a load reads the same samples
// whatever the End records say was recorded: as many as it holds (one
// piece, no copy), fewer, more, an absurd count, or no End; over one file
// and two.
func TestSamplesSizedFromEnd(t *testing.T) {
	const n = 70000 // more than two of chunked's chunks
	recs := func(pid uint32, end *recording.End) []recording.Record {
		r := []recording.Record{&recording.Meta{Frequency: 1000},
			&recording.Comm{Time: 1, PID: pid, TID: pid, Exec: true, Name: "prog"}}
		for i := range 4 {
			r = append(r, &recording.Stack{ID: uint64(i + 1), User: []uint64{0x401000 + uint64(i)*16, 0x402000}})
		}
		for i := range n {
			// Blocks of 10 written back to front: sorted by the load.
			j := i - i%10 + 9 - i%10
			r = append(r, &recording.Sample{Time: 1000 + 10*uint64(j) + uint64(pid%2), PID: pid, TID: pid + uint32(i%3),
				Period: 1000, StackID: uint64(1 + i%4), CPU: uint32(i % 2)})
		}
		if end != nil {
			r = append(r, end)
		}
		return r
	}
	load := func(paths ...string) *profile.Profile {
		t.Helper()
		p, err := Load(paths, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Samples) != n*len(paths) {
			t.Fatalf("%d samples, want %d", len(p.Samples), n*len(paths))
		}
		return p
	}
	same := func(name string, want, got *profile.Profile) {
		t.Helper()
		if !reflect.DeepEqual(want.Samples, got.Samples) || !reflect.DeepEqual(want.Stacks, got.Stacks) ||
			!reflect.DeepEqual(want.Frames, got.Frames) {
			t.Errorf("%s: loaded otherwise than without an End", name)
		}
	}
	none := writeRec(t, recs(7, nil)...)
	want := load(none)
	for _, samples := range []uint64{n, n / 3, n - 1, n + 1, 3 * n, 1 << 62} {
		name := fmt.Sprintf("End of %d samples", samples)
		p := writeRec(t, recs(7, &recording.End{Time: 2e6, Samples: samples})...)
		if got, _ := recorded([]string{p}); got > n*6 || (samples <= n && got != int(samples)) {
			t.Errorf("%s: sized for %d", name, got)
		}
		same(name, want, load(p))
	}
	other := writeRec(t, recs(8, &recording.End{Time: 2e6, Samples: n})...)
	want2 := load(none, writeRec(t, recs(8, nil)...))
	same("two files", want2, load(writeRec(t, recs(7, &recording.End{Time: 2e6, Samples: n})...), other))
	same("two files, one without an End", want2, load(none, other))
	if got, _ := recorded([]string{none, other}); got != 0 {
		t.Errorf("two files, one without an End: sized for %d", got)
	}
}

// TestCallsSizedFromEnd checks that a trace's calls load the same
// whatever its End says was recorded, and that a true count gives the
// calls' slice its length at once (no copy while it grows).
func TestCallsSizedFromEnd(t *testing.T) {
	const n = 3000
	recs := func(end *recording.End) []recording.Record {
		r := []recording.Record{&recording.Meta{Frequency: 1000},
			&recording.Comm{Time: 1, PID: 7, TID: 7, Exec: true, Name: "prog"},
			&recording.Probe{ID: 1, Function: "f", Object: "/prog", Offset: 0x1000}}
		for i := range n {
			// Out of order in blocks of 10, as threads' batches are.
			j := i - i%10 + 9 - i%10
			r = append(r, &recording.Call{Start: 100 + 10*uint64(j), End: 105 + 10*uint64(j), PID: 7, TID: 7 + uint32(i%3), Probe: 1})
		}
		if end != nil {
			r = append(r, end)
		}
		return r
	}
	load := func(path string) *profile.Profile {
		t.Helper()
		p, err := Load([]string{path}, Options{NoSamples: true})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	want := load(writeRec(t, recs(nil)...))
	if len(want.Calls) != n {
		t.Fatalf("%d calls, want %d", len(want.Calls), n)
	}
	for _, calls := range []uint64{n, n / 3, n + 1, 1 << 62} {
		p := load(writeRec(t, recs(&recording.End{Time: 1e6, Calls: calls})...))
		if !reflect.DeepEqual(p.Calls, want.Calls) {
			t.Errorf("End of %d calls: loaded otherwise than without an End", calls)
		}
		if calls == n && cap(p.Calls) != n {
			t.Errorf("End of %d calls: the calls' slice holds %d", calls, cap(p.Calls))
		}
	}
}
