package trace

import (
	"testing"

	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
)

// A function whose calls all have their on-CPU time but one that was lost
// (a context switch went unseen) and one that did not return is compared
// on the CPU without those two; one with a call never measured (a Go call
// that came back on another thread) keeps its wall durations.
func TestFunctionsCPULostCalls(t *testing.T) {
	cpu := func(probe int32, d, off uint64) profile.Call {
		return profile.Call{Probe: probe, Caller: -1, Site: -1, Start: 1000, End: 1000 + d, Flags: recording.CallCPU, Off: off}
	}
	p := &profile.Profile{
		Probes: []profile.Probe{{Function: "f"}, {Function: "g"}},
		Calls: []profile.Call{
			cpu(0, 100, 40), cpu(0, 200, 80),
			{Probe: 0, Caller: -1, Site: -1, Start: 1000, End: 90000, Flags: recording.CallCPULost},
			{Probe: 0, Caller: -1, Site: -1, Start: 1000, End: 90000, Flags: recording.CallUnreturned},
			cpu(1, 100, 40),
			{Probe: 1, Caller: -1, Site: -1, Start: 1000, End: 1300},
		},
	}
	fs := map[string]Function{}
	for _, f := range FunctionsCPU(p, false) {
		fs[f.Name] = f
	}
	f, g := fs["f"], fs["g"]
	if !f.OnCPU || f.Incl.Total != 180 || f.Incl.Max != 120 {
		t.Errorf("f: on CPU %v, total %d ns, max %d ns: want on the CPU, 60+120 ns", f.OnCPU, f.Incl.Total, f.Incl.Max)
	}
	if g.OnCPU || g.Incl.Total != 400 || g.Incl.Max != 300 {
		t.Errorf("g: on CPU %v, total %d ns, max %d ns: want wall durations, 100+300 ns", g.OnCPU, g.Incl.Total, g.Incl.Max)
	}
}
