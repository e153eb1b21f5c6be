package offcpu

import (
	"testing"

	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
)

func TestProfile(t *testing.T) {
	sw, cpu, exit := recording.EventSwitch, recording.EventCPU, recording.EventSyscallExit
	p := &profile.Profile{Samples: []profile.Sample{
		{Time: 100, TID: 1, Event: sw, Stack: 7},
		{Time: 150, TID: 2, Event: sw, Stack: 8, Period: 10}, // stands for 10 (a window's)
		{Time: 200, TID: 3, Event: cpu},
		{Time: 300, TID: 1, Event: exit},         // 1 was off 200 ns
		{Time: 400, TID: 2, Event: sw, Stack: 9}, // 2 was off 250 ns (10 times), and leaves again
		{Time: 420, TID: 1, Event: cpu},
	}}
	q, st, err := Profile(p)
	if err != nil {
		t.Fatal(err)
	}
	if st != (Stats{Switches: 3, Spans: 2, Total: 2700}) {
		t.Errorf("stats %+v, want 3 switches, 2 spans, 2700 ns", st)
	}
	want := []profile.Sample{
		{Time: 100, TID: 1, Event: sw, Stack: 7, Period: 200},
		{Time: 150, TID: 2, Event: sw, Stack: 8, Period: 2500, More: 9},
	}
	if len(q.Samples) != len(want) {
		t.Fatalf("samples %+v, want %+v", q.Samples, want)
	}
	for i := range want {
		if q.Samples[i] != want[i] {
			t.Errorf("sample %d: %+v, want %+v", i, q.Samples[i], want[i])
		}
	}
	if len(p.Samples) != 6 {
		t.Errorf("the input lost samples: %d", len(p.Samples))
	}
}
