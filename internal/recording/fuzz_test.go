package recording

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"strconv"
	"testing"
	"testing/iotest"
	"time"
)

// FuzzReader feeds arbitrary bytes to the reader. It must not panic, must end,
// must report no error but io.EOF once the header is accepted, and must read
// the same whether the source returns everything at once or a byte at a time.
func FuzzReader(f *testing.F) {
	for _, seed := range fuzzSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// Go's fuzzer has no time limit per input: a reader that loops
		// forever must crash the worker so that the input is kept.
		tm := time.AfterFunc(10*time.Second, func() {
			debug.SetTraceback("all")
			panic(fmt.Sprintf("reading %d bytes took more than 10s", len(data)))
		})
		defer tm.Stop()
		recs, s, err := readFuzz(bytes.NewReader(data), len(data))
		if err != nil {
			return // refused at the header
		}
		if s.Bytes+s.TailBytes > int64(len(data)) || s.SkippedBytes > s.Bytes || s.Records != int64(len(recs)) {
			t.Fatalf("inconsistent salvage for %d bytes: %+v", len(data), s)
		}
		_ = s.String()
		// Everything read can be written again.
		var buf bytes.Buffer
		w, _ := NewWriter(&buf)
		for _, r := range recs {
			if err := w.Write(r); err != nil {
				t.Fatalf("rewriting %T: %v", r, err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if len(data) > 4096 {
			return // keep the byte-at-a-time comparison cheap
		}
		recs1, s1, err := readFuzz(iotest.OneByteReader(bytes.NewReader(data)), len(data))
		if err != nil {
			t.Fatalf("byte at a time: %v", err)
		}
		if !reflect.DeepEqual(recs1, recs) || s1 != s {
			t.Fatalf("byte at a time: %d records %+v; at once: %d records %+v", len(recs1), s1, len(recs), s)
		}
	})
}

// readFuzz reads every record; an error is an error of the header.
func readFuzz(src io.Reader, size int) ([]Record, Salvage, error) {
	r, err := NewReader(src)
	if err != nil {
		return nil, Salvage{}, err
	}
	var recs []Record
	for i := 0; ; i++ {
		if i > size { // every record takes at least 6 bytes
			panic(fmt.Sprintf("more than %d records from %d bytes", i, size))
		}
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			panic(fmt.Sprintf("Next: %v", err))
		}
		recs = append(recs, rec)
	}
	// At the end, Next keeps saying io.EOF.
	if _, err := r.Next(); err != io.EOF {
		panic(fmt.Sprintf("Next after io.EOF: %v", err))
	}
	return recs, r.Salvage(), nil
}

// fuzzSeeds returns valid and damaged recordings.
func fuzzSeeds(t testing.TB) [][]byte {
	small, _ := smallFile(t)
	big := bigFile(t, 40)
	seeds := [][]byte{
		small,
		big,
		encodeRecords(t, zeroRecords()),
		small[:len(small)/2], // cut short
		small[:HeaderSize],   // header only
		append(bytes.Clone(big[:HeaderSize]), rawFrame(200, []byte("future kind"))...),
		[]byte("PERFILE2\x68\x00\x00\x00\x00\x00\x00\x00"),
	}
	flipped := bytes.Clone(big)
	flipped[len(flipped)/2] ^= 0x10
	seeds = append(seeds, flipped)
	zeroed := bytes.Clone(big)
	clear(zeroed[100:300])
	seeds = append(seeds, zeroed)
	badLen := bytes.Clone(small)
	badLen[HeaderSize+1] = 0xff
	seeds = append(seeds, badLen)
	return seeds
}

var genCorpus = flag.Bool("gen-corpus", false, "write the FuzzReader seed corpus to testdata/fuzz/FuzzReader")

// TestGenCorpus writes the committed seed corpus (go test -run TestGenCorpus -gen-corpus).
func TestGenCorpus(t *testing.T) {
	if !*genCorpus {
		t.Skip("run with -gen-corpus to rewrite testdata/fuzz/FuzzReader")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzReader")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	names := []string{"small", "big", "zero-fields", "cut-short", "header-only", "unknown-kind", "perf",
		"flipped-byte", "zeroed-region", "bad-length"}
	for i, seed := range fuzzSeeds(t) {
		body := "go test fuzz v1\n[]byte(" + strconv.Quote(string(seed)) + ")\n"
		if err := os.WriteFile(filepath.Join(dir, "seed-"+names[i]), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
