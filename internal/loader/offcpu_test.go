package loader

import (
	"testing"

	"github.com/culprit-dev/culprit/internal/recording"
)

// A call its recording says was off the CPU for all its duration (or
// more) has its time on the CPU unknown, not 0: its probes ran on the
// CPU, so no call is. Analyses that compare times on the CPU then leave
// it out (models fits power and exponential curves to positive times
// only) as they leave out a call with a context switch unseen.
func TestOffCPUWholeCallIsLost(t *testing.T) {
	path := writeRec(t,
		&recording.Meta{Frequency: 1000},
		&recording.Comm{Time: 1, PID: 12, TID: 12, Exec: true, Name: "prog"},
		&recording.Probe{ID: 1, Function: "lookup", Object: "/prog", Offset: 0x1000},
		&recording.Call{Start: 100, End: 200, PID: 12, TID: 12, Probe: 1, Flags: recording.CallCPU, Off: 60},
		&recording.Call{Start: 300, End: 400, PID: 12, TID: 12, Probe: 1, Flags: recording.CallCPU, Off: 100},
		&recording.Call{Start: 500, End: 600, PID: 12, TID: 12, Probe: 1, Flags: recording.CallCPU, Off: 137},
		&recording.Call{Start: 700, End: 800, PID: 12, TID: 12, Probe: 1, Flags: recording.CallCPULost},
		&recording.End{Time: 900},
	)
	p, err := Load([]string{path}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Calls) != 4 {
		t.Fatalf("%d calls, want 4", len(p.Calls))
	}
	for i, want := range []struct {
		cpu, lost bool
		incl      uint64
	}{{true, false, 40}, {false, true, 0}, {false, true, 0}, {false, true, 0}} {
		c := &p.Calls[i]
		if c.HasCPU() != want.cpu || c.CPULost() != want.lost || (want.cpu && c.InclusiveCPU() != want.incl) {
			t.Errorf("call %d (%d ns, %d off the CPU): on-CPU time known %v, lost %v, %d ns; want %v, %v, %d ns",
				i, c.End-c.Start, c.Off, c.HasCPU(), c.CPULost(), c.InclusiveCPU(), want.cpu, want.lost, want.incl)
		}
	}
}
