package loader

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
)

// streamed lists what a profile's samples say, in the order EachSample
// yields them, each with its stack's frames: what a view that goes through
// them in time order sees.
func streamed(t *testing.T, p *profile.Profile) []string {
	t.Helper()
	var out []string
	err := p.EachSample(func(s *profile.Sample) bool {
		var frames []profile.Frame
		for _, fi := range p.StackAt(s.Stack) {
			frames = append(frames, p.FrameAt(fi))
		}
		out = append(out, fmt.Sprintf("%d %d/%d cpu%d %d %v %d %d %v", s.Time, s.PID, s.TID, s.CPU, s.Period, s.Event, s.Arg, s.Stack, frames))
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// streamedValues lists a profile's values, in the order EachValue yields
// them, each with its frame.
func streamedValues(t *testing.T, p *profile.Profile) []string {
	t.Helper()
	var out []string
	err := p.EachValue(func(v *profile.Value) bool {
		f, ok := p.ValueFrame(*v)
		out = append(out, fmt.Sprintf("%d %d/%d src%d d%d %v %#x %d %v %+v", v.Time, v.PID, v.TID, v.Source, v.Depth, v.Type, v.PC, v.Bits, ok, f))
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameWithin checks that p's values of a span of time, read in no set
// order without their frames (EachValueWithin), are those EachValue
// yields in that span, of the whole recording and of its middle third;
// and that ValuesWithinCost counts at least as many.
func sameWithin(t *testing.T, p *profile.Profile) {
	t.Helper()
	line := func(v *profile.Value) string {
		return fmt.Sprintf("%d %d/%d src%d d%d %v %#x %d", v.Time, v.PID, v.TID, v.Source, v.Depth, v.Type, v.PC, v.Bits)
	}
	var times []uint64
	if err := p.EachValue(func(v *profile.Value) bool { times = append(times, v.Time); return true }); err != nil {
		t.Fatal(err)
	}
	spans := [][2]uint64{{0, math.MaxUint64}}
	if n := len(times); n >= 3 {
		spans = append(spans, [2]uint64{times[n/3], times[2*n/3]})
	}
	for _, sp := range spans {
		var want, got []string
		if err := p.EachValue(func(v *profile.Value) bool {
			if v.Time >= sp[0] && v.Time < sp[1] {
				want = append(want, line(v))
			}
			return true
		}); err != nil {
			t.Fatal(err)
		}
		if err := p.EachValueWithin(sp[0], sp[1], func(v *profile.Value) bool {
			if v.FrameIndex() >= 0 {
				t.Errorf("EachValueWithin: a value with a frame: %s", line(v))
			}
			got = append(got, line(v))
			return true
		}); err != nil {
			t.Fatal(err)
		}
		slices.Sort(want)
		slices.Sort(got)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("values from %d to %d: %d read within, %d in time order", sp[0], sp[1], len(got), len(want))
		}
		if c := p.ValuesWithinCost(sp[0], sp[1]); c < len(got) {
			t.Errorf("values from %d to %d: cost %d, fewer than the %d read", sp[0], sp[1], c, len(got))
		}
	}
}

// sameAsLoad checks that reading paths as a stream gives what Load holds:
// the same samples in the same order with the same stacks, and the same
// values with the same frames, unfiltered and through filters; with the
// samples streamed, and with only the values streamed.
func sameAsLoad(t *testing.T, paths []string) {
	t.Helper()
	full, err := Load(paths, Options{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := Load(paths, Options{Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	if !st.Streamed() || len(st.Samples) != 0 || len(st.Values) != 0 {
		t.Fatalf("streamed=%v with %d samples and %d values held", st.Streamed(), len(st.Samples), len(st.Values))
	}
	sameAs(t, full, st)
	sv, err := Load(paths, Options{StreamValues: true})
	if err != nil {
		t.Fatal(err)
	}
	if sv.Streamed() || len(sv.Samples) != full.SampleCount() || len(sv.Values) != 0 {
		t.Fatalf("values streamed: streamed=%v with %d samples and %d values held", sv.Streamed(), len(sv.Samples), len(sv.Values))
	}
	if !reflect.DeepEqual(sv.Samples, full.Samples) {
		t.Errorf("values streamed: the samples held differ")
	}
	sameAs(t, full, sv)
}

// sameAs checks that st, a load of full's recordings streaming samples or
// values, says what full does.
func sameAs(t *testing.T, full, st *profile.Profile) {
	t.Helper()
	ca, err := full.ValueCounts()
	if err != nil {
		t.Fatal(err)
	}
	cb, err := st.ValueCounts()
	if err != nil || !reflect.DeepEqual(ca, cb) {
		t.Errorf("value counts: streamed %v (%v), loaded %v", cb, err, ca)
	}
	if !reflect.DeepEqual(st.ValueSources, full.ValueSources) {
		t.Errorf("value sources differ: streamed %v, loaded %v", st.ValueSources, full.ValueSources)
	}
	if st.SampleCount() != full.SampleCount() || st.StartTime != full.StartTime {
		t.Errorf("stream: %d samples from %d, Load: %d from %d", st.SampleCount(), st.StartTime, full.SampleCount(), full.StartTime)
	}
	if !reflect.DeepEqual(st.Stacks, full.Stacks) || !reflect.DeepEqual(st.Frames, full.Frames) ||
		!reflect.DeepEqual(st.Threads, full.Threads) || !reflect.DeepEqual(st.EventCounts(), full.EventCounts()) {
		t.Errorf("stacks, frames, threads or event counts differ")
	}
	for _, f := range []profile.Filter{{AllEvents: true}, {}, {Kernel: profile.KernelExclude}, {Comms: []string{"other"}},
		{TIDs: []uint32{12}, Hide: regexp.MustCompile("dispatch"), AllEvents: true}, {Focus: regexp.MustCompile("dispatch_2")},
		{HasFrom: true, From: 1000, HasTo: true, To: 5000}} {
		qa, qb := full.Apply(f), st.Apply(f)
		if qa.SampleCount() != qb.SampleCount() || !reflect.DeepEqual(qa.EventCounts(), qb.EventCounts()) || qa.HasSamples() != qb.HasSamples() {
			t.Errorf("filter %+v: %d samples streamed (%v), %d loaded (%v)", f, qb.SampleCount(), qb.EventCounts(), qa.SampleCount(), qa.EventCounts())
		}
		a, b := streamed(t, qa), streamed(t, qb)
		if !reflect.DeepEqual(a, b) {
			n := 0
			for n < len(a) && n < len(b) && a[n] == b[n] {
				n++
			}
			t.Errorf("filter %+v: %d samples streamed, %d loaded, first difference at %d", f, len(b), len(a), n)
		}
		if len(a) == 0 && f.Comms == nil {
			t.Errorf("filter %+v: no sample", f)
		}
		sameWithin(t, qa)
		sameWithin(t, qb)
		va, vb := streamedValues(t, qa), streamedValues(t, qb)
		if !reflect.DeepEqual(va, vb) {
			n := 0
			for n < len(va) && n < len(vb) && va[n] == vb[n] {
				n++
			}
			t.Errorf("filter %+v: %d values streamed, %d loaded, first difference at %d", f, len(vb), len(va), n)
		}
	}
}

// mapMidway writes a recording like mergeRec's with process 11's
// executable mapped again in the middle of its samples (a new version of
// its address space, whose samples are keyed by it), stacks seen late, and
// samples out of time order by up to 300 ns.
func mapMidway(t *testing.T, timeBase uint64) string {
	return writeRec(t, mapMidwayRecs(t, timeBase)...)
}

func mapMidwayRecs(t *testing.T, timeBase uint64) []recording.Record {
	bin, offs, bid := hierFuncs(t)
	st, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	const base = 0x555555554000
	mm := &recording.Mmap{Time: 1, PID: 11, TID: 11, Start: base, Len: uint64(st.Size()), Path: bin, BuildID: bid}
	recs := []recording.Record{
		&recording.Meta{Frequency: 1000},
		&recording.Comm{Time: 1, PID: 11, TID: 11, Exec: true, Name: "hier"},
		mm,
		&recording.Comm{Time: 2, PID: 11, TID: 12, Name: "hier"},
		&recording.Comm{Time: 3, PID: 21, TID: 21, Exec: true, Name: "other"},
	}
	leaf := func(fn string, d uint64) uint64 { return base + offs[fn] + d }
	ret := func(fn string) uint64 { return base + offs[fn] + 9 }
	stacks := [][]uint64{
		{leaf("worker", 4), ret("dispatch_1"), ret("main")},
		{leaf("worker", 8), ret("dispatch_2"), ret("main")},
		{leaf("dispatch_2", 2), ret("main")},
		{leaf("main", 1)},
	}
	tasks := [][2]uint32{{11, 11}, {11, 12}, {21, 21}}
	for i := range 3000 {
		if i%700 == 0 && i/700 < len(stacks) {
			recs = append(recs, &recording.Stack{ID: uint64(i/700 + 1), User: stacks[i/700]})
		}
		if i == 1500 {
			again := *mm
			again.Time = timeBase + uint64(10*i)
			recs = append(recs, &again)
		}
		task := tasks[i%3]
		// Each block of 30 written back to front: up to 290 ns late.
		j := i - i%30 + 29 - i%30
		s := &recording.Sample{Time: timeBase + uint64(10*j), PID: task[0], TID: task[1], CPU: uint32(i % 2),
			Period: 1000, StackID: uint64(1 + (i*7)%min(len(stacks), 1+i/700))}
		if i%9 == 0 {
			s.Event, s.Arg = recording.EventSyscallEnter, uint64(i%4)
		}
		recs = append(recs, s)
		// Values read at the sample, as the recorder writes them: two
		// variables (one of an ID too large to index a slice by), one whose source is defined again with its
		// enumerators midway, at the leaf and in a caller, some missing
		// or without a PC, and some of a process never mapped.
		switch {
		case i == 0:
			recs = append(recs, &recording.ValueSource{ID: 1, Class: recording.SourceVariable, Name: "n", Function: "worker"},
				&recording.ValueSource{ID: 70000, Class: recording.SourceVariable, Name: "state", Function: "main", Type: "enum st"})
		case i == 2000:
			recs = append(recs, &recording.ValueSource{ID: 70000, Class: recording.SourceVariable, Name: "state", Function: "main", Type: "enum st", Enum: "0=IDLE,1=BUSY"})
		}
		if i%3 != 2 {
			st := stacks[(i*7)%min(len(stacks), 1+i/700)]
			recs = append(recs, &recording.Value{Time: s.Time, PID: task[0], TID: task[1], Source: 1, PC: st[0], Bits: uint64(i % 17)},
				&recording.Value{Time: s.Time, PID: task[0], TID: task[1], Source: 70000, Depth: uint8(len(st) - 1), PC: st[len(st)-1], Bits: uint64(i % 2)})
		}
		switch i % 50 {
		case 7:
			recs = append(recs, &recording.Value{Time: s.Time, PID: task[0], TID: task[1], Source: 1, Type: recording.ValueMissing})
		case 8:
			recs = append(recs, &recording.Value{Time: s.Time, PID: 99, TID: 99, Source: 70000, PC: 0x1234 + uint64(i)})
		}
		if i == 8 {
			// A sample of that process after its first values: the
			// address space its values made is the sample's.
			recs = append(recs, &recording.Sample{Time: s.Time + 1, PID: 99, TID: 99, Period: 1000, StackID: 1})
		}
	}
	recs = append(recs, &recording.End{Time: timeBase + 40000})
	return recs
}

func TestStreamSameAsLoad(t *testing.T) {
	t.Run("drained out of order", func(t *testing.T) { sameAsLoad(t, []string{mergeRec(t, false, 0)}) })
	t.Run("renamed", func(t *testing.T) { sameAsLoad(t, []string{mergeRec(t, true, 0)}) })
	t.Run("large stack ids", func(t *testing.T) { sameAsLoad(t, []string{mergeRec(t, false, 1<<40)}) })
	t.Run("mapped again", func(t *testing.T) { sameAsLoad(t, []string{mapMidway(t, 100)}) })
	// Two files whose times interleave, and tie: merged by time, the
	// first file's first at equal times.
	t.Run("two files", func(t *testing.T) {
		sameAsLoad(t, []string{mapMidway(t, 100), mapMidway(t, 105), mergeRec(t, false, 1<<40)})
	})
}

// A file still being written is read up to its last complete record: the
// stream yields what the first reading saw, however much has been written
// since.
func TestStreamGrowingFile(t *testing.T) {
	whole, err := os.ReadFile(mapMidway(t, 100))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, cut := range []int{len(whole) / 3, len(whole)/2 + 7, len(whole) - 3} {
		t.Run(fmt.Sprint(cut), func(t *testing.T) {
			part := filepath.Join(dir, fmt.Sprintf("part%d.rec", cut))
			if err := os.WriteFile(part, whole[:cut], 0o600); err != nil {
				t.Fatal(err)
			}
			full, err := Load([]string{part}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			st, err := Load([]string{part}, Options{Stream: true})
			if err != nil {
				t.Fatal(err)
			}
			if full.Sources[0].Complete || st.Sources[0].Complete || full.SampleCount() == 0 {
				t.Fatalf("cut at %d: complete %v/%v, %d samples", cut, full.Sources[0].Complete, st.Sources[0].Complete, full.SampleCount())
			}
			// The rest is written before the samples are read again.
			f, err := os.OpenFile(part, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.WriteString(f, string(whole[cut:])); err != nil {
				t.Fatal(err)
			}
			f.Close()
			for _, flt := range []profile.Filter{{AllEvents: true}, {}} {
				if a, b := streamed(t, full.Apply(flt)), streamed(t, st.Apply(flt)); !reflect.DeepEqual(a, b) {
					t.Errorf("filter %+v: %d samples streamed after the file grew, %d read before", flt, len(b), len(a))
				}
			}
		})
	}
}

// A file cut between the two readings is an error, not fewer samples.
func TestStreamCutFile(t *testing.T) {
	path := mapMidway(t, 100)
	st, err := Load([]string{path}, Options{Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	n := 0
	err = st.EachSample(func(*profile.Sample) bool { n++; return true })
	if err == nil || !strings.Contains(err.Error(), "cut since it was first read") {
		t.Errorf("after %d samples: error %v, want that the file was cut", n, err)
	}
}

// A recording that cannot be read twice (a pipe) is read once, its samples
// held: asking for a stream still gives them.
func TestStreamFromPipe(t *testing.T) {
	path := mapMidway(t, 100)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(t.TempDir(), "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		f.Write(data)
		f.Close()
	}()
	p, err := Load([]string{fifo}, Options{Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	full, err := Load([]string{path}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := streamed(t, full), streamed(t, p); !reflect.DeepEqual(a, b) || len(a) == 0 {
		t.Errorf("from a pipe: %d samples, from the file %d", len(b), len(a))
	}
}

// A recording whose values a Writer indexed (format 1.12), its runs
// stepped over by the first reading and by the samples' second, loads as
// the same records written without an index, each value where the
// recorder wrote it (a Writer flushed after every record writes no run
// long enough to index).
func TestStreamValueIndex(t *testing.T) {
	recs := mapMidwayRecs(t, 100)
	indexed := writeRec(t, recs...)
	plain := filepath.Join(t.TempDir(), "plain.rec")
	w, err := recording.Create(plain)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	runs := func(path string) (n int) {
		r, err := recording.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		r.SkipValues(func(*recording.ValueIndex) bool { return true })
		for {
			rec, err := r.Next()
			if err == io.EOF {
				return n
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := rec.(*recording.ValueIndex); ok {
				n++
			}
		}
	}
	if n, m := runs(indexed), runs(plain); n < 2 || m != 0 {
		t.Fatalf("%d runs of values indexed, %d in the file written record by record", n, m)
	}
	full, err := Load([]string{plain}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []Options{{}, {Stream: true}, {StreamValues: true}} {
		p, err := Load([]string{indexed}, o)
		if err != nil {
			t.Fatal(err)
		}
		sameAs(t, full, p)
		if fmt.Sprint(p.Sources[0].Salvage, p.Sources[0].Complete) != fmt.Sprint(full.Sources[0].Salvage, full.Sources[0].Complete) {
			t.Errorf("%+v: source %+v, unindexed %+v", o, p.Sources[0], full.Sources[0])
		}
	}
	sameAsLoad(t, []string{indexed, plain})
	// The mappings read stepping over the runs of values are those read
	// value by value.
	la, erra := ObjectLoads([]string{indexed})
	lb, errb := ObjectLoads([]string{plain})
	if erra != nil || errb != nil || len(la) == 0 || !reflect.DeepEqual(la, lb) {
		t.Errorf("object loads: %v (%v) with runs of values, %v (%v) without", la, erra, lb, errb)
	}
	// The time index reads a span's runs only.
	p, err := Load([]string{indexed}, Options{StreamValues: true})
	if err != nil {
		t.Fatal(err)
	}
	var times []uint64
	if err := p.EachValue(func(v *profile.Value) bool { times = append(times, v.Time); return true }); err != nil {
		t.Fatal(err)
	}
	n := len(times)
	if all, mid := p.ValuesWithinCost(0, math.MaxUint64), p.ValuesWithinCost(times[n/3], times[2*n/3]); all != n || mid >= n {
		t.Errorf("values read for every time: %d of %d; for the middle third: %d, want fewer", all, n, mid)
	}
	// Stopped early: no more values, no error.
	got := 0
	if err := p.EachValueWithin(0, math.MaxUint64, func(*profile.Value) bool { got++; return got < 5 }); err != nil || got != 5 {
		t.Errorf("EachValueWithin stopped at the 5th value: %d yielded (%v)", got, err)
	}
}

// skim notes the values of the recording at path as the first reading
// does (readAhead), stepping over indexed runs when skip is set, and
// returns what it noted: the tallies in order and the file's totals.
func skim(t *testing.T, path string, skip bool) string {
	t.Helper()
	r, err := recording.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	vs := &valueSkip{}
	if skip {
		r.SkipValues(vs.indexed)
	}
	var out []string
	note := func() {
		if x := vs.flush(); x != nil {
			out = append(out, fmt.Sprintf("%+v", *x))
		}
	}
	var n uint64
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
		switch v := rec.(type) {
		case *recording.ValueIndex:
			vs.addIndex(v, n)
			n += v.Count - 1
		case *recording.Value:
			vs.add(v, n)
		case *recording.Stack:
		case *recording.Sample:
			if vs.newPID(v.PID) {
				note()
			}
		default:
			if s, ok := v.(*recording.ValueSource); ok {
				vs.define(s.ID)
			}
			note()
		}
	}
	note()
	return fmt.Sprintf("%d records, %d values, late %d, max %d, tallies %v", n, vs.values, vs.late, vs.max, out)
}

// The first reading notes from an index what it notes from the run's
// values: the same tallies (counts by source, each PC with the record of
// its first value), lateness and latest time.
func TestValueIndexNotes(t *testing.T) {
	recs := mapMidwayRecs(t, 100)
	// Late values across runs too: a run's values earlier than the
	// values before it.
	for i, r := range recs {
		if v, ok := r.(*recording.Value); ok && i%401 == 0 {
			v.Time -= 700
		}
	}
	path := writeRec(t, recs...)
	a, b := skim(t, path, false), skim(t, path, true)
	if a != b {
		t.Errorf("noted from the values:\n%s\nfrom the indexes:\n%s", a, b)
	}
	var n, values, late int
	if _, err := fmt.Sscanf(a, "%d records, %d values, late %d", &n, &values, &late); err != nil || late < 700 {
		t.Errorf("no value 700 ns late (%v): %s", err, a[:min(len(a), 200)])
	}
}
