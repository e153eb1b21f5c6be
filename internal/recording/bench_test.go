package recording

import (
	"io"
	"path/filepath"
	"testing"
)

const benchSamples = 1_000_000

// benchRecording writes a recording of 1M realistic samples (with 5000
// distinct stacks). With b.Loop the benchmark body, and so this, runs once.
func benchRecording(b *testing.B) (string, int64) {
	path := filepath.Join(b.TempDir(), "bench.rec")
	w, err := Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w.Write(&Meta{Tool: "culprit bench", Event: "cpu-clock", Frequency: 99})
	g := newProfileGen(5000)
	for range benchSamples {
		s, k, u := g.sample()
		if err := w.WriteSample(s, k, u); err != nil {
			b.Fatal(err)
		}
	}
	w.Write(&End{Samples: benchSamples})
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return path, w.Bytes()
}

// BenchmarkReadSamples reads a whole recording of 1M samples per op.
func BenchmarkReadSamples(b *testing.B) {
	path, size := benchRecording(b)
	b.SetBytes(size)
	b.ReportAllocs()
	var n int
	for b.Loop() {
		r, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		n = 0
		for {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if _, ok := rec.(*Sample); ok {
				n++
			}
		}
		r.Close()
	}
	if n != benchSamples {
		b.Fatalf("read %d samples", n)
	}
	b.ReportMetric(float64(size)/benchSamples, "file-bytes/sample")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchSamples, "ns/sample")
}

// BenchmarkWriteSamples writes 1M samples with stack deduplication per op.
func BenchmarkWriteSamples(b *testing.B) {
	g := newProfileGen(5000)
	type in struct {
		s    Sample
		k, u []uint64
	}
	ins := make([]in, 4096)
	for i := range ins {
		s, k, u := g.sample()
		ins[i] = in{s, k, u}
	}
	path := filepath.Join(b.TempDir(), "w.rec")
	b.ReportAllocs()
	for b.Loop() {
		w, err := Create(path)
		if err != nil {
			b.Fatal(err)
		}
		for i := range benchSamples {
			x := &ins[i%len(ins)]
			if err := w.WriteSample(x.s, x.k, x.u); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchSamples, "ns/sample")
}
