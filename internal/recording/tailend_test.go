package recording

import (
	"bytes"
	"math"
	"testing"
)

// TestTailEnd checks that the End record ending a recording is found from
// its last bytes, largest fields included, and that a file ending
// otherwise (cut short, with bytes after its End, its End damaged, no End)
// gives none.
func TestTailEnd(t *testing.T) {
	ends := []*End{
		{},
		{Time: 123456789, Samples: 1000000, Lost: 3, Throttled: 1, ExitCode: -1, Calls: 7},
		{Time: math.MaxUint64, Samples: math.MaxUint64, Lost: math.MaxUint64, Throttled: math.MaxUint64,
			ExitCode: math.MinInt32, Calls: math.MaxUint64},
	}
	body := []Record{&Meta{}, &Stack{ID: 1, User: []uint64{0x401000}}, &Sample{Time: 5, StackID: 1},
		// A sample whose payload ends with an End's kind byte.
		&Sample{Time: 6, StackID: 1, Arg: uint64(KindEnd)}}
	for _, want := range ends {
		data := encodeRecords(t, append(body[:len(body):len(body)], want))
		got, ok := TailEnd(bytes.NewReader(data), int64(len(data)))
		if !ok || *got != *want {
			t.Errorf("TailEnd of a recording ending with %+v: %+v, %v", want, got, ok)
		}
		cases := map[string][]byte{
			"cut in its End":      data[:len(data)-1],
			"a byte after it":     append(bytes.Clone(data), 0),
			"its CRC damaged":     append(bytes.Clone(data[:len(data)-1]), data[len(data)-1]^1),
			"its payload damaged": damage(data, len(data)-crcSize-1),
		}
		for name, d := range cases {
			if got, ok := TailEnd(bytes.NewReader(d), int64(len(d))); ok {
				t.Errorf("%s: TailEnd gave %+v", name, got)
			}
		}
	}
	for _, recs := range [][]Record{nil, body, {&Meta{}, &End{Samples: 9}, &Sample{Time: 1}}} {
		data := encodeRecords(t, recs)
		if got, ok := TailEnd(bytes.NewReader(data), int64(len(data))); ok {
			t.Errorf("TailEnd of %d records ending without an End: %+v", len(recs), got)
		}
	}
}

// damage returns a copy of data with the byte at i changed.
func damage(data []byte, i int) []byte {
	d := bytes.Clone(data)
	d[i] ^= 0x40
	return d
}
