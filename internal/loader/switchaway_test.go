package loader

import (
	"testing"

	"github.com/culprit-dev/culprit/internal/recording"
)

// A loaded profile, whole or streamed, keeps each thread's last switch
// away with its time on a CPU (profile.LastSwitchAway), whatever the
// order the file has the samples in; a later switch without one, a switch
// onto a CPU and another thread's change nothing, and a merged profile
// keeps none (its samples have no order).
func TestLoadKeepsLastSwitchAway(t *testing.T) {
	sw := func(tm uint64, tid uint32, ev recording.Event, rt uint64, has bool) *recording.Sample {
		return &recording.Sample{Time: tm, PID: 11, TID: tid, Period: 1, Event: ev, ExecRuntime: rt, HasExecRuntime: has}
	}
	path := writeRec(t,
		&recording.Meta{Frequency: 1000},
		&recording.Comm{Time: 1, PID: 11, TID: 11, Exec: true, Name: "t"},
		sw(300, 12, recording.EventSwitch, 3000, true),
		sw(100, 12, recording.EventSwitch, 1000, true),
		sw(200, 11, recording.EventSwitch, 500, true),
		sw(400, 12, recording.EventSwitch, 0, false),
		sw(500, 12, recording.EventSwitchIn, 3000, true),
		&recording.End{Time: 600},
	)
	for _, o := range []Options{{}, {Stream: true}} {
		p, err := Load([]string{path}, o)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			tid  uint32
			at   uint64
			want uint64
			ok   bool
		}{{12, 300, 3000, true}, {12, 100, 0, false}, {12, 400, 0, false}, {12, 500, 0, false}, {11, 200, 500, true}} {
			if got, ok := p.LastSwitchAway(c.tid, c.at); got != c.want || ok != c.ok {
				t.Errorf("stream %v: LastSwitchAway(%d, %d) = %d, %v; want %d, %v", o.Stream, c.tid, c.at, got, ok, c.want, c.ok)
			}
		}
	}
	p, err := Load([]string{path}, Options{Merge: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.LastSwitchAway(12, 300); ok {
		t.Errorf("merged: a last switch away kept")
	}
}
