package view

import (
	"io"
	"slices"
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

// TestTimeWindows: a recording whose system calls and switches were
// recorded in windows standing for more than themselves gives the time
// view those windows (ms from the start, the ones closer than a lane
// draws apart joined), which its thread lanes shade; one recorded all
// along, or in windows of every call (scale 1), gives none.
func TestTimeWindows(t *testing.T) {
	const start, ms = 1_000_000_000, 1_000_000
	frames, stacks := []profile.Frame{{Function: "main"}}, [][]int32{{0}}
	threads := map[uint32]profile.Thread{1: {PID: 1, TID: 1, Comm: "one"}}
	var cpu []profile.Sample
	for i := range 1000 { // a second of samples
		cpu = append(cpu, profile.Sample{Time: start + uint64(i)*ms, PID: 1, TID: 1, Period: ms, Event: recording.EventCPU})
	}
	for _, c := range []struct {
		name    string
		windows []recording.SyscallWindow
		want    [][2]float64
	}{
		{"scaled", []recording.SyscallWindow{
			// Out of order as read; the third 0.1 ms after the second
			// (closer than a lane's 1/2000 of the second, 0.5 ms).
			{Start: start + 400*ms, End: start + 420*ms, On: 20 * ms, Period: 200 * ms},
			{Start: start + 200*ms, End: start + 220*ms, On: 20 * ms, Period: 200 * ms},
			{Start: start + 420*ms + ms/10, End: start + 440*ms, On: 20 * ms, Period: 200 * ms},
		}, [][2]float64{{200, 220}, {400, 440}}},
		{"every call", []recording.SyscallWindow{{Start: start, End: start + 500*ms}}, nil},
		{"all along", nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := &profile.Profile{Frames: frames, Stacks: stacks, Threads: threads, StartTime: start, Samples: cpu}
			ev := &profile.Profile{Frames: frames, Stacks: stacks, Threads: threads, StartTime: start, SyscallWindows: c.windows,
				Samples: []profile.Sample{
					{Time: start + 205*ms, PID: 1, TID: 1, Period: 10, Event: recording.EventSyscallEnter},
					{Time: start + 206*ms, PID: 1, TID: 1, Period: 10, Event: recording.EventSyscallExit},
				}}
			s, err := New(Inputs{Profile: p, Events: ev, Names: []string{"a.rec"}}, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			d := s.heatMaps(nil)
			ls := s.laneSet(d.Seconds, d.cellNS(), d.SpanMS)
			if !slices.Equal(ls.windows, c.want) || len(ls.threads) != 1 {
				t.Errorf("windows %v (%d thread lanes), want %v", ls.windows, len(ls.threads), c.want)
			}
		})
	}
}
