package view

import (
	"io"
	"testing"

	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
)

// TestOffCPUSpanOfWindowedSwitch: a switch recorded in a system call
// window stands for PERIOD/ON switches (its period): the off-CPU profile
// charges its span that many times, while the thread's lane in the time
// view draws and counts the span once, where it was.
func TestOffCPUSpanOfWindowedSwitch(t *testing.T) {
	const start = 1_000_000_000
	frames, stacks := []profile.Frame{{Function: "main"}}, [][]int32{{0}}
	threads := map[uint32]profile.Thread{1: {PID: 1, TID: 1, Comm: "one"}}
	p := &profile.Profile{Frames: frames, Stacks: stacks, Threads: threads, StartTime: start, Samples: []profile.Sample{
		{Time: start, PID: 1, TID: 1, Period: 1_000_000, Event: recording.EventCPU},
		{Time: start + 20_000_000, PID: 1, TID: 1, Period: 1_000_000, Event: recording.EventCPU},
	}}
	ev := &profile.Profile{Frames: frames, Stacks: stacks, Threads: threads, StartTime: start, Samples: []profile.Sample{
		{Time: start + 1_000_000, PID: 1, TID: 1, Period: 10, Event: recording.EventSwitch, Arg: 1}, // asleep, in a window of scale 10
		{Time: start + 6_000_000, PID: 1, TID: 1, Period: 1_000_000, Event: recording.EventCPU},
	}}
	s, err := New(Inputs{Profile: p, Events: ev, Names: []string{"a.rec"}}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	off, err := s.offCPU()
	if err != nil {
		t.Fatal(err)
	}
	if len(off.Samples) != 1 || off.Samples[0].Period != 50_000_000 || off.Samples[0].N() != 10 {
		t.Fatalf("off-CPU samples %+v, want one of 50 ms standing for 10 switches", off.Samples)
	}
	var lane *Lane
	for _, l := range s.threadLanes(1, 1e9/rowsPerSecond, 1000) {
		if l.l.TID == 1 {
			lane = &l.l
		}
	}
	if lane == nil || len(lane.Spans) != 1 || lane.Spans[0] != [2]float64{1, 6} || lane.OffMS != 5 {
		t.Fatalf("thread 1's lane %+v, want one span off the CPU from 1 to 6 ms, 5 ms in all", lane)
	}
}
