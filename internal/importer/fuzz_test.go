package importer

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/culprit-dev/culprit/internal/loader"
	"github.com/culprit-dev/culprit/internal/recording"
)

// FuzzPerfScript feeds arbitrary text to the importer. It must not panic,
// must end, and when it succeeds must write an intact recording that loads
// with as many samples as it reports.
func FuzzPerfScript(f *testing.F) {
	example, err := os.ReadFile("testdata/worked-example.perf-script")
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		string(example),
		cpuSample,
		namesText,
		strings.ReplaceAll(cpuSample, "\n", "\r\n"),
		cpuSample[:len(cpuSample)/2],
		"            hier 12159  2517.533861:     250000 cpu-clock:      55aa10ff0176 worker+0x3d (/tmp/pimp/hier)\n",
		"a b  9167 [001]  2347.395956: sched:sched_switch: a b:9167 [120] S ==> swapper/1:0 [120]\n\t1 x+0x0 (inlined)\n\t1 y+0x1 (inlined)\n",
		"hello\n\x00\xff\n",
	} {
		f.Add([]byte(seed))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		tm := time.AfterFunc(10*time.Second, func() {
			debug.SetTraceback("all")
			panic(fmt.Sprintf("importing %d bytes took more than 10s", len(data)))
		})
		defer tm.Stop()
		out, err := os.CreateTemp(dir, "fuzz-*.rec")
		if err != nil {
			t.Fatal(err)
		}
		defer os.Remove(out.Name())
		defer out.Close()
		w, err := recording.NewWriter(out)
		if err != nil {
			t.Fatal(err)
		}
		st, err := PerfScript(bytes.NewReader(data), w)
		if cerr := w.Close(); cerr != nil {
			t.Fatal(cerr)
		}
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if st.Samples == 0 {
			t.Fatalf("no error but no samples: %+v", st)
		}
		r, err := recording.Open(out.Name())
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		n := 0
		for {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := rec.(*recording.Sample); ok {
				n++
			}
		}
		if s := r.Salvage(); !s.Intact() || !s.End || n != st.Samples {
			t.Fatalf("%d samples read back, %d imported; salvage %+v", n, st.Samples, s)
		}
		p, err := loader.Load([]string{filepath.Clean(out.Name())}, loader.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Samples) != st.Samples {
			t.Fatalf("%d samples loaded, %d imported", len(p.Samples), st.Samples)
		}
	})
}
