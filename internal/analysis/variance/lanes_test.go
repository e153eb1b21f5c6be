package variance

import (
	"testing"

	"github.com/culprit-dev/culprit/internal/recording"
)

// Go: goroutine A's handle blocks in slow and goes on on thread 2, where
// goroutine B ran a whole short request meanwhile. Placed by goroutine,
// every interval holds its own slow call only; placed by the threads the
// calls returned on, B's calls nest into A's interval.
func TestGoroutineLanes(t *testing.T) {
	probes := []recording.Probe{{ID: 1, Function: "handle"}, {ID: 2, Function: "slow"}}
	var calls []recording.Call
	const gA, gB = 0xc000001000, 0xc000002000
	t0 := uint64(1_000_000)
	var slows []float64
	for i := range 40 {
		d := uint64(1000 + 500*(i%4)) // A's slow
		calls = append(calls,
			recording.Call{Start: t0 + 10, End: t0 + 10 + d, TID: 2, Probe: 2, Depth: 1, Caller: 1, Goroutine: gA},
			recording.Call{Start: t0, End: t0 + 20 + d, TID: 2, Probe: 1, Goroutine: gA},
			recording.Call{Start: t0 + 40, End: t0 + 340, TID: 2, Probe: 2, Depth: 1, Caller: 1, Goroutine: gB},
			recording.Call{Start: t0 + 30, End: t0 + 350, TID: 2, Probe: 1, Goroutine: gB})
		slows = append(slows, float64(d), 300)
		t0 += 10_000
	}
	in := FromRecords(Spec{Start: "handle", End: "handle"}, calls, probes, nil, nil)
	if !in.Goroutines {
		t.Fatal("calls with goroutines: Input.Goroutines not set")
	}
	r, err := Analyse(in)
	if err != nil {
		t.Fatal(err)
	}
	if r.Intervals != 80 {
		t.Fatalf("%d intervals, want 80", r.Intervals)
	}
	f := factor(r, "slow")
	if f == nil {
		t.Fatalf("no factor slow: %+v", r.Ranked)
	}
	mean := 0.0
	for _, s := range slows {
		mean += s
	}
	mean /= float64(len(slows))
	if f.MeanNS != mean || len(f.Sites) != 1 {
		t.Errorf("slow: mean %.0f ns at %d sites, want %.0f ns at one (its own goroutine's call only)", f.MeanNS, len(f.Sites), mean)
	}
	// Without goroutines (the same calls by thread) the intervals mix.
	for i := range calls {
		calls[i].Goroutine = 0
	}
	mixed, err := Analyse(FromRecords(Spec{Start: "handle", End: "handle"}, calls, probes, nil, nil))
	if err == nil && mixed.Intervals == 80 {
		if g := factor(mixed, "slow"); g != nil && g.MeanNS == mean && len(g.Sites) == 1 {
			t.Errorf("the calls placed by thread give the same tree: the test does not tell goroutines apart")
		}
	}
}
