package tracer

import (
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/testutil"
)

// A trace's End record counts the CPU samples their rings had no room
// for, as the Lost records copied from the samples' own recording tell
// them: a recording says what it lost. The samples' stack copies and
// user chains go to the sampling program's own ring, so a sample in the
// perf ring is small and a ring of one page holds a few dozen: drained
// every half second it overflows (the threads' CPU time is about 3,000
// samples at 9999 Hz), and the losses of a ring still full at the
// end, which no LOST record reports, are counted too (at the default
// interval a loaded run's rings overflowed only at the end, and the
// recording said it lost nothing).
func TestCPUSamplesLost(t *testing.T) {
	testutil.NeedRoot(t)
	defer func(d time.Duration) { pollInterval = d }(pollInterval)
	pollInterval = 500 * time.Millisecond
	bin := testutil.C(t, "threads", []string{"threads.c"}, "-O2", "-g", "-pthread")
	dir := t.TempDir()
	out := filepath.Join(dir, "trace.rec")
	res, err := Launch(Options{
		Output:       out,
		Patterns:     []Pattern{{Glob: "spin_a"}},
		CPUSamples:   filepath.Join(dir, "cpu.rec"),
		CPUHz:        9999,
		CPURingPages: 1,
	}, []string{bin, "100000000"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := recording.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var ring, throttled, samples uint64
	var end *recording.End
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch v := rec.(type) {
		case *recording.Lost:
			switch v.Reason {
			case recording.LostRing:
				ring += v.Count
			case recording.LostThrottled:
				throttled += v.Count
			default:
				t.Errorf("lost %d records for reason %d", v.Count, v.Reason)
			}
		case *recording.Sample:
			samples++
		case *recording.End:
			end = v
		}
	}
	t.Logf("%d samples, %d lost in the rings, %d throttled; result %d lost, %d throttled; end %+v", samples, ring, throttled, res.CPULost, res.CPUThrottled, end)
	if end == nil {
		t.Fatal("no End record")
	}
	if ring == 0 {
		t.Fatalf("no sample lost with rings of one page (%d kept)", samples)
	}
	if end.Lost != ring || res.CPULost != ring {
		t.Errorf("End record: %d lost, result %d, Lost records %d", end.Lost, res.CPULost, ring)
	}
	if end.Throttled != throttled || res.CPUThrottled != throttled {
		t.Errorf("End record: %d throttled, result %d, Lost records %d", end.Throttled, res.CPUThrottled, throttled)
	}
}
