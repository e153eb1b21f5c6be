package view

import (
	"io"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/culprit-dev/culprit/internal/loader"
	"github.com/culprit-dev/culprit/internal/recording"
)

// TestValueLanesStreamed checks that the lanes of values of a recording
// whose values are read again from it (loader.Options.StreamValues, as
// culprit view loads: the values' bytes read in place, in no set order,
// through the loader's time index) are those of the same recording with
// its values held: of the whole recording and of ranges, a source held
// value by value and two summarised ones, drawn from the buckets and from
// the values read again.
func TestValueLanesStreamed(t *testing.T) {
	const start = 1_000_000_000
	recs := []recording.Record{&recording.Meta{Frequency: 1000},
		&recording.Comm{PID: 1, TID: 1, Name: "main"},
		&recording.ValueSource{ID: 1, Name: "few"}, &recording.ValueSource{ID: 2, Name: "many"},
		&recording.Stack{ID: 1, User: []uint64{0x401000}}}
	// 4 s of samples every ms; at each, 5 values of "many" (i*5+k, some
	// missing), and every 2nd a value of "few"; a third source defined
	// midway, with 5 values a sample from then on.
	for i := range 4000 {
		tm := uint64(start + i*1_000_000)
		if i == 2000 {
			recs = append(recs, &recording.ValueSource{ID: 3, Name: "late"})
		}
		recs = append(recs, &recording.Sample{Time: tm, PID: 1, TID: 1, Period: 1_000_000, StackID: 1})
		for k := range 5 {
			v := &recording.Value{Time: tm + uint64(k)*1000, PID: 1, TID: 1, Source: 2, Type: recording.ValueInt, Bits: uint64(i*5 + k)}
			if (i+k)%17 == 0 {
				v.Type, v.Bits = recording.ValueMissing, 0
			}
			recs = append(recs, v)
		}
		if i%2 == 0 {
			recs = append(recs, &recording.Value{Time: tm + 10, PID: 1, TID: 1, Source: 1, Type: recording.ValueUint, Bits: uint64(i % 300)})
		}
		if i >= 2000 {
			for k := range 5 {
				recs = append(recs, &recording.Value{Time: tm + 50_000 + uint64(k)*100, PID: 1, TID: 1, Source: 3, Type: recording.ValueInt, Bits: uint64(1000 - i)})
			}
		}
	}
	path := filepath.Join(t.TempDir(), "v.rec")
	w, err := recording.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	server := func(o loader.Options) *Server {
		p, err := loader.Load([]string{path}, o)
		if err != nil {
			t.Fatal(err)
		}
		s, err := New(Inputs{Profile: p, Names: []string{path}}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	held, streamed := server(loader.Options{}), server(loader.Options{StreamValues: true})
	if len(held.p.Values) == 0 || len(streamed.p.Values) != 0 {
		t.Fatalf("%d values held, %d held when streamed", len(held.p.Values), len(streamed.p.Values))
	}
	vs, err := streamed.values()
	if err != nil {
		t.Fatal(err)
	}
	srcs := make([]int, len(vs.sources))
	summarised := 0
	for i := range srcs {
		srcs[i] = i
		if vs.sources[i].b != nil {
			summarised++
		}
	}
	if len(srcs) != 3 || summarised != 2 {
		t.Fatalf("%d sources, %d summarised; want 3, 2", len(srcs), summarised)
	}
	for _, readMost := range []int{0, rawReadMost} {
		for _, rng := range []Range{{}, {From: time.Second, To: 1010 * time.Millisecond},
			{From: 2500 * time.Millisecond, To: 2540 * time.Millisecond}, {From: time.Second, To: 3 * time.Second}} {
			held.readMost, streamed.readMost = readMost, readMost
			want, err := held.valueLanes(srcs, rng)
			if err != nil {
				t.Fatal(err)
			}
			got, err := streamed.valueLanes(srcs, rng)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("lanes of %v (read again up to %d values): streamed\n%+v\nheld\n%+v", rng, readMost, got, want)
			}
			if l := got[1]; l.Total == 0 || len(l.Points) == 0 {
				t.Errorf("lanes of %v (read again up to %d values): %s has %d values, %d points", rng, readMost, l.Name, l.Total, len(l.Points))
			}
		}
	}
}
