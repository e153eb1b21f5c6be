package introperf

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/culprit-dev/culprit/internal/importer"
	"github.com/culprit-dev/culprit/internal/loader"
	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/testutil"
)

// TestWorkedExampleGolden feeds the notes' worked example (IntroPerf Figure 3
// / Table 1: stacks A,B,D / A,B,D / A,C,D / A,C at t1..t4, saved as perf
// script text) through the import path — importer.PerfScript, a recording
// file, loader.Load — and checks every inferred instance's conservative
// and aggressive latency against the notes' golden table.
func TestWorkedExampleGolden(t *testing.T) {
	src := filepath.Join(testutil.Root(), "internal", "importer", "testdata", "worked-example.perf-script")
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	rec := filepath.Join(t.TempDir(), "worked.rec")
	w, err := recording.Create(rec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := importer.PerfScript(in, w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	p, err := loader.Load([]string{rec}, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p = p.Apply(profile.Filter{AllEvents: true})
	if len(p.Samples) != 4 {
		t.Fatalf("%d samples, want 4", len(p.Samples))
	}
	for _, s := range p.Samples {
		if s.Event != recording.EventSyscallEnter {
			t.Errorf("sample at %d is %s, want syscall-enter", s.Time, s.Event)
		}
	}
	r := Analyze(p, Options{KeepInstances: true})
	ts := make([]uint64, 4)
	for i, s := range p.Samples {
		ts[i] = s.Time
	}
	// t1..t4 are 10 ms apart in the file.
	for i := 1; i < 4; i++ {
		if ts[i]-ts[i-1] != 10e6 {
			t.Fatalf("t%d−t%d = %d ns, want 10 ms", i+1, i, ts[i]-ts[i-1])
		}
	}
	checkWorkedExample(t, r, ts[0], ts[1], ts[2], ts[3])
	// Algorithm 1 on the same run: four stacks, three distinct contexts.
	if r.Tree.Paths() != 3 || r.Tree.Nodes() != 5 {
		t.Errorf("paths %d nodes %d, want 3 and 5", r.Tree.Paths(), r.Tree.Nodes())
	}
}
