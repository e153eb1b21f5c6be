package variance

import (
	"testing"

	"github.com/culprit-dev/culprit/internal/recording"
)

// The calls of the Go scheduler's probes are parks and wake-ups, not
// nodes of the tree: a park by the goroutine that made it, a wake-up from
// that goroutine to the one whose id the probe read.
func TestGoSchedCalls(t *testing.T) {
	probes := []recording.Probe{
		{ID: 1, Function: "main.handle"},
		{ID: 2, Function: "runtime.gopark", Params: []string{"unlockf:p8:func()", "lock:p8:void *", "reason:u1:runtime.waitReason"}},
		{ID: 3, Function: "runtime.send", Params: []string{"c:p8:runtime.hchan *", "sg:p8:runtime.sudog *", "ep:p8:void *", "sg->g->goid:u8:uint64"}},
		{ID: 4, Function: "runtime.readyWithTime", Params: []string{"s:p8:runtime.sudog *", "traceskip:i8:int", "s->g->goid:u8:uint64"}},
	}
	calls := []recording.Call{
		{Start: 10, End: 300, Probe: 1, Goroutine: 7, TID: 100},
		{Start: 100, End: 160, Probe: 2, Goroutine: 7, TID: 100, Args: []uint64{1, 2, 14}},
		{Start: 150, End: 151, Probe: 3, Goroutine: 9, TID: 101, Args: []uint64{1, 2, 3, 7}},
		{Start: 170, End: 171, Probe: 4, Goroutine: 9, TID: 101, Args: []uint64{1, 4, 0}}, // the read faulted
	}
	in := FromRecords(Spec{Start: "main.handle", End: "main.handle"}, calls, probes, nil, nil)
	if len(in.Calls) != 1 || in.Probes[in.Calls[0].Probe].Function != "main.handle" {
		t.Fatalf("calls %+v", in.Calls)
	}
	a := in.Calls[0].TID
	if in.Go == nil || len(in.Go.Parks) != 1 || len(in.Go.Wakes) != 1 {
		t.Fatalf("go %+v", in.Go)
	}
	if p := in.Go.Parks[0]; p.Lane != a || p.Start != 100 || p.End != 160 || p.Reason != 14 {
		t.Errorf("park %+v", p)
	}
	w := in.Go.Wakes[0]
	if w.Wakee != a || w.Waker == a || w.Waker&GoroutineLane == 0 || w.Time != 150 {
		t.Errorf("wake %+v", w)
	}
	if in.Go.Goids[a] != 7 || in.Go.Goids[w.Waker] != 9 {
		t.Errorf("goids %v", in.Go.Goids)
	}
}
