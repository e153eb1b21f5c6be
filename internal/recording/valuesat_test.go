package recording

import (
	"io"
	"os"
	"reflect"
	"testing"
)

// regionsOf reads the recording at path as a loader's first reading does
// (SkipValues), noting where its values are with Offset: the bytes of each
// run stepped over, and of each value read one by one. It returns them
// with the values a Reader reads without SkipValues, in file order.
func regionsOf(t *testing.T, path string) (regions [][2]int64, values []Value) {
	t.Helper()
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.SkipValues(func(*ValueIndex) bool { return true })
	for {
		at := r.Offset()
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch x := rec.(type) {
		case *ValueIndex:
			regions = append(regions, [2]int64{r.Offset() - int64(x.Size), r.Offset()})
		case *Value:
			regions = append(regions, [2]int64{at, r.Offset()})
		}
	}
	all, _ := readAll(t, path)
	for _, rec := range all {
		if v, ok := rec.(*Value); ok {
			values = append(values, *v)
		}
	}
	return regions, values
}

// eachValueAt reads the values of regions of path with EachValueAt.
func eachValueAt(t *testing.T, path string, regions [][2]int64) []Value {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []Value
	var buf []byte
	for _, g := range regions {
		var stop bool
		buf, stop, err = EachValueAt(f, g[0], g[1]-g[0], buf, func(v *Value) bool {
			out = append(out, *v)
			return true
		})
		if err != nil || stop {
			t.Fatalf("EachValueAt(%d, %d): stop %v, %v", g[0], g[1]-g[0], stop, err)
		}
	}
	return out
}

// EachValueAt reads, from the bytes of the runs a Reader stepped over and
// of the values it read one by one (Offset before and after), the values a
// Reader reads, in the same order; a damaged value is skipped as Next
// skips it; it stops when asked; bytes the file no longer holds are an
// error.
func TestEachValueAt(t *testing.T) {
	data := encodeRecords(t, valueRecs(3000))
	path := writeTemp(t, data)
	regions, want := regionsOf(t, path)
	runs := 0
	for _, g := range regions {
		if g[1]-g[0] > 1000 {
			runs++
		}
	}
	if runs < 3 || len(want) < 9000 {
		t.Fatalf("%d regions, %d of them runs, %d values: want runs", len(regions), runs, len(want))
	}
	if got := eachValueAt(t, path, regions); !reflect.DeepEqual(got, want) {
		t.Fatalf("EachValueAt read %d values, a Reader %d: they differ", len(got), len(want))
	}

	// A byte of a value in the middle of the second run damaged: the
	// values a Reader reads from the damaged file, whose regions are
	// those of the intact one.
	var mid [2]int64
	for _, g := range regions {
		if g[1]-g[0] > 1000 {
			mid = g
			if runs--; runs < 2 {
				break
			}
		}
	}
	bad := append([]byte(nil), data...)
	bad[(mid[0]+mid[1])/2] ^= 0x55
	badPath := writeTemp(t, bad)
	_, wantBad := regionsOf(t, badPath)
	if len(wantBad) >= len(want) {
		t.Fatalf("the damaged file reads %d values, the intact one %d: want fewer", len(wantBad), len(want))
	}
	if got := eachValueAt(t, badPath, regions); !reflect.DeepEqual(got, wantBad) {
		t.Errorf("damaged: EachValueAt read %d values, a Reader %d: they differ", len(got), len(wantBad))
	}

	// Past maxInPlace bytes the same values, read a chunk at a time.
	big := append([]byte(nil), data...)
	for len(big) <= maxInPlace {
		big = append(big, data[HeaderSize:]...)
	}
	bigPath := writeTemp(t, big)
	_, wantBig := regionsOf(t, bigPath)
	if got := eachValueAt(t, bigPath, [][2]int64{{HeaderSize, int64(len(big))}}); !reflect.DeepEqual(got, wantBig) {
		t.Errorf("%d bytes read at once: %d values, a Reader %d: they differ", len(big)-HeaderSize, len(got), len(wantBig))
	}

	// Stopped after 10 values.
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	_, stop, err := EachValueAt(f, mid[0], mid[1]-mid[0], nil, func(*Value) bool { n++; return n < 10 })
	if !stop || err != nil || n != 10 {
		t.Errorf("EachValueAt asked to stop at the 10th value: %d read, stop %v, %v", n, stop, err)
	}
	// A file cut since: an error.
	if _, _, err := EachValueAt(f, int64(len(data))-10, 20, nil, func(*Value) bool { return true }); err == nil {
		t.Errorf("EachValueAt past the end of the file: no error")
	}
}
