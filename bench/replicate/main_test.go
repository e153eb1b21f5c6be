package main

import (
	"testing"

	"github.com/culprit-dev/culprit/internal/recording"
)

// TestOnCPUClock checks that -cpu-clock places each thread's samples at
// the first sample's time plus the periods of that thread's samples before
// it, whatever their wall times (a thread that waited for a CPU between
// samples), sorted by that time with ties in the order read, and refuses
// samples of other events.
func TestOnCPUClock(t *testing.T) {
	const t0 = 1_000_000
	s := []recording.Sample{
		{Time: t0, TID: 1, Period: 100, Event: recording.EventCPU},
		{Time: t0 + 5, TID: 2, Period: 100, Event: recording.EventCPU},
		{Time: t0 + 9_000, TID: 1, Period: 100, Event: recording.EventCPU}, // after a wait
		{Time: t0 + 9_500, TID: 2, Period: 300, Event: recording.EventCPU},
		{Time: t0 + 20_000, TID: 2, Period: 100, Event: recording.EventCPU},
		{Time: t0 + 20_001, TID: 1, Period: 100, Event: recording.EventCPU},
	}
	if err := onCPUClock(s); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		tid  uint32
		time uint64
	}{{1, t0}, {2, t0}, {1, t0 + 100}, {2, t0 + 100}, {1, t0 + 200}, {2, t0 + 400}}
	for i, w := range want {
		if s[i].TID != w.tid || s[i].Time != w.time {
			t.Errorf("sample %d: thread %d at %d, want thread %d at %d", i, s[i].TID, s[i].Time, w.tid, w.time)
		}
	}
	if err := onCPUClock([]recording.Sample{{Time: t0, TID: 1, Event: recording.EventSwitch}}); err == nil {
		t.Errorf("a context switch placed on the CPU clock, want an error")
	}
}
