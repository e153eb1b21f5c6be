package recording

import (
	"bytes"
	"io"
	"reflect"
	"slices"
	"testing"
)

// valueRecs returns records as a recorder writes them with values: each
// sample of one of two processes followed by values of several sources at
// several depths (some missing, some without a PC, some late), a Stack now
// and then, a Mmap and a ValueSource midway, and values of a third process
// before its first sample.
func valueRecs(n int) []Record {
	recs := []Record{&Meta{Frequency: 99},
		&ValueSource{ID: 1, Name: "a"}, &ValueSource{ID: 2, Name: "b"}, &ValueSource{ID: 70000, Name: "big"}}
	for i := range n {
		pid := uint32(100 + i%2)
		t := uint64(1000 + 10*i)
		if i%97 == 0 {
			recs = append(recs, &Stack{ID: uint64(1 + i/97), User: []uint64{0x401000 + uint64(i), 0x402000}})
		}
		switch i {
		case n / 2:
			recs = append(recs, &Mmap{Time: t, PID: 100, TID: 100, Start: 0x400000, Len: 0x10000, Path: "/bin/x"})
		case n / 3:
			recs = append(recs, &ValueSource{ID: 3, Name: "c"})
		case n / 4:
			recs = append(recs, &Value{Time: t, PID: 300, TID: 300, Source: 1, PC: 0x500000})
			recs = append(recs, &Sample{Time: t, PID: 300, TID: 300, StackID: 1})
		}
		recs = append(recs, &Sample{Time: t, PID: pid, TID: pid, Period: 1000, StackID: uint64(1 + i/97)})
		for s := uint32(1); s <= 3; s++ {
			if s == 3 && i <= n/3 {
				continue
			}
			v := &Value{Time: t - uint64(i%7)*3, PID: pid, TID: pid, Source: s, Depth: uint8(s - 1),
				PC: 0x401000 + uint64(i%5)*16 + uint64(s), Bits: uint64(i * int(s))}
			if i%11 == 0 {
				v.Type, v.Bits = ValueMissing, 0
			}
			if i%13 == 0 {
				v.PC = 0
			}
			recs = append(recs, v)
		}
		recs = append(recs, &Value{Time: t, PID: pid, TID: pid, Source: 70000, PC: 0xffffffff81000000, Bits: 1})
	}
	return append(recs, &End{Time: uint64(1000 + 10*n)})
}

// indexOf computes the index of a run of values from the values.
func indexOf(run []*Value) ValueIndex {
	x := ValueIndex{Count: uint64(len(run)), MinTime: run[0].Time, MaxTime: run[0].Time}
	seen := map[IndexedPC]bool{}
	for i, v := range run {
		if i > 0 && v.Time < x.MaxTime {
			x.Late = max(x.Late, x.MaxTime-v.Time)
		}
		x.MinTime, x.MaxTime = min(x.MinTime, v.Time), max(x.MaxTime, v.Time)
		j := slices.IndexFunc(x.Sources, func(s IndexedSource) bool { return s.ID == v.Source })
		if j < 0 {
			x.Sources = append(x.Sources, IndexedSource{ID: v.Source})
			j = len(x.Sources) - 1
		}
		x.Sources[j].All++
		if v.Type != ValueMissing {
			x.Sources[j].Present++
		}
		k := IndexedPC{PID: v.PID, Caller: v.Depth > 0, PC: v.PC}
		if v.PC != 0 && !seen[k] {
			seen[k] = true
			k.First = uint64(i)
			x.PCs = append(x.PCs, k)
		}
	}
	return x
}

// A Writer writes values in indexed runs, moved only past Samples of
// processes sampled before and Stacks; a reader without SkipValues reads
// every value, and one with it gets each run's index in place of its
// values, which says what the values do.
func TestValueRuns(t *testing.T) {
	recs := valueRecs(3000)
	data := encodeRecords(t, recs)
	path := writeTemp(t, data)
	got, sal := readAll(t, path)
	if sal.Records != int64(len(recs)) || !sal.Intact() {
		t.Fatalf("read %d records of %d (%+v)", sal.Records, len(recs), sal)
	}
	// The same records, values in the same order, and every other record
	// in its place among the records that are not values, samples of
	// processes seen before or stacks.
	split := func(rs []Record) (vals []Value, fixed, moved []string) {
		pids := map[uint32]bool{}
		for _, r := range rs {
			switch v := r.(type) {
			case *Value:
				vals = append(vals, *v)
				continue
			case *Stack:
				moved = append(moved, "stack")
				continue
			case *Sample:
				if pids[v.PID] {
					moved = append(moved, "sample")
					continue
				}
				pids[v.PID] = true
			}
			fixed = append(fixed, r.Kind().String())
		}
		return
	}
	wv, wf, wm := split(recs)
	gv, gf, gm := split(got)
	if !reflect.DeepEqual(wv, gv) || !reflect.DeepEqual(wf, gf) || !reflect.DeepEqual(wm, gm) {
		t.Fatalf("records read differ from those written")
	}
	// Where each value stands relative to the records that stay: the
	// same count of them before it.
	stays := func(rs []Record) []int {
		var out []int
		n := 0
		pids := map[uint32]bool{}
		for _, r := range rs {
			switch v := r.(type) {
			case *Value:
				out = append(out, n)
				continue
			case *Stack:
				continue
			case *Sample:
				if pids[v.PID] {
					continue
				}
				pids[v.PID] = true
			}
			n++
		}
		return out
	}
	if !reflect.DeepEqual(stays(recs), stays(got)) {
		t.Errorf("a value moved across a record other than a stack or a sample of a process sampled before")
	}

	// With SkipValues: indexes in place of runs; between them, values
	// read one by one (runs too short to index, values before a
	// process's first sample).
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !r.SkipValues(func(*ValueIndex) bool { return true }) {
		t.Fatal("SkipValues refused a file")
	}
	skipped, ssal := drain(t, r)
	if ssal != sal {
		t.Errorf("salvage with SkipValues %+v, without %+v", ssal, sal)
	}
	var runs, values int
	i := 0 // into got
	for _, rec := range skipped {
		x, ok := rec.(*ValueIndex)
		if !ok {
			if !reflect.DeepEqual(rec, got[i]) {
				t.Fatalf("record %d: %#v with SkipValues, %#v without", i, rec, got[i])
			}
			i++
			continue
		}
		var run []*Value
		for j := 0; j < int(x.Count); j++ {
			v, ok := got[i+j].(*Value)
			if !ok {
				t.Fatalf("an index of %d values at record %d, but record %d is a %s", x.Count, i, i+j, got[i+j].Kind())
			}
			run = append(run, v)
		}
		want := indexOf(run)
		x.Size = 0
		if !reflect.DeepEqual(*x, want) {
			t.Errorf("index at record %d:\n%+v\nwant\n%+v", i, *x, want)
		}
		i += int(x.Count)
		runs++
		values += int(x.Count)
	}
	if runs < 3 || values < 9000 {
		t.Errorf("%d runs of %d values indexed: want most values indexed", runs, values)
	}
}

// A run that is not whole in the file (the recorder was killed while
// writing it, or the file is being written), that accept refuses, or
// whose index is damaged is read value by value.
func TestValueRunsNotSkipped(t *testing.T) {
	data := encodeRecords(t, valueRecs(3000))
	all, _ := readAll(t, writeTemp(t, data))
	read := func(data []byte, accept func(*ValueIndex) bool) ([]Record, Salvage) {
		r, err := Open(writeTemp(t, data))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		r.SkipValues(accept)
		return drain(t, r)
	}
	yes := func(*ValueIndex) bool { return true }
	// A source that cannot seek: refused.
	rs, err := NewReader(struct{ io.Reader }{bytes.NewReader(data)})
	if err != nil {
		t.Fatal(err)
	}
	if rs.SkipValues(yes) {
		t.Error("SkipValues accepted a reader that cannot seek")
	}
	// The first index: where it is, where its run ends.
	var first *ValueIndex
	idxAt, end := int64(-1), int64(-1)
	{
		r, err := Open(writeTemp(t, data))
		if err != nil {
			t.Fatal(err)
		}
		r.SkipValues(yes)
		for first == nil {
			before := r.Salvage().Bytes
			rec, err := r.Next()
			if err != nil {
				t.Fatal("no index:", err)
			}
			if x, ok := rec.(*ValueIndex); ok {
				first, idxAt, end = x, before, r.Salvage().Bytes
			}
		}
		r.Close()
	}
	// Cut in the middle of the first run: everything before the cut.
	cut := data[:(idxAt+end)/2]
	got, sal := read(cut, yes)
	want, wsal := readAll(t, writeTemp(t, cut))
	if !reflect.DeepEqual(got, want) || sal != wsal || len(got) < 10 {
		t.Errorf("a cut run: %d records with SkipValues (%+v), %d without (%+v)", len(got), sal, len(want), wsal)
	}
	// Refused: every value read.
	got, _ = read(data, func(*ValueIndex) bool { return false })
	if !reflect.DeepEqual(got, all) {
		t.Errorf("runs refused: %d records, want the %d values and others", len(got), len(all))
	}
	// A damaged index: its run is read value by value.
	bad := bytes.Clone(data)
	bad[idxAt+3] ^= 0x40
	got, _ = read(bad, yes)
	n := 0
	for _, rec := range got {
		if _, ok := rec.(*Value); ok {
			n++
		}
	}
	if first == nil || n < int(first.Count) {
		t.Errorf("the run of a damaged index: %d values read", n)
	}
}

// A ValueIndex is the Writer's to write.
func TestWriteValueIndexRefused(t *testing.T) {
	w, err := NewWriter(&bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(&ValueIndex{Count: 1, Size: 10}); err == nil {
		t.Error("Write of a ValueIndex: no error")
	}
}
