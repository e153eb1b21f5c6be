package profile

import (
	"testing"

	"github.com/culprit-dev/culprit/internal/recording"
)

// A switch's Arg keeps what the recording has of it: a switch away's
// prev_state and run delay, a switch onto a CPU's time on a CPU before
// the run (also 0, a new thread's), and nothing more for either when the
// recording has neither.
func TestSwitchArg(t *testing.T) {
	for _, c := range []struct {
		rec      recording.Sample
		state    uint64
		rd       uint32
		hasRD    bool
		rt       uint64
		hasRT    bool
		rawEqual bool
	}{
		{rec: recording.Sample{Event: recording.EventSwitch, Arg: recording.TaskPreempted, RunDelay: 1<<32 + 5, HasRunDelay: true,
			ExecRuntime: 77, HasExecRuntime: true}, state: recording.TaskPreempted, rd: 5, hasRD: true},
		{rec: recording.Sample{Event: recording.EventSwitch, Arg: recording.TaskInterruptible}, state: recording.TaskInterruptible, rawEqual: true},
		{rec: recording.Sample{Event: recording.EventSwitchIn, ExecRuntime: 123456789012345, HasExecRuntime: true}, rt: 123456789012345, hasRT: true},
		{rec: recording.Sample{Event: recording.EventSwitchIn, HasExecRuntime: true}, hasRT: true},
		{rec: recording.Sample{Event: recording.EventSwitchIn}, rawEqual: true},
	} {
		s := Sample{Event: c.rec.Event, Arg: SwitchArg(&c.rec)}
		rd, hasRD := s.RunDelay()
		rt, hasRT := s.ExecRuntime()
		if rd != c.rd || hasRD != c.hasRD || rt != c.rt || hasRT != c.hasRT || c.rec.Event == recording.EventSwitch && s.SwitchState() != c.state ||
			c.rawEqual && s.Arg != c.rec.Arg {
			t.Errorf("%+v: Arg %#x: run delay %d %v, time on a CPU %d %v, state %#x", c.rec, s.Arg, rd, hasRD, rt, hasRT, s.SwitchState())
		}
	}
}

// TestLastSwitchAway: a profile keeps each thread's latest switch away
// with a run time, whatever the order it is told them in, and a selection
// of it (Apply) has them too; other samples, and switches without one,
// change nothing.
func TestLastSwitchAway(t *testing.T) {
	p := &Profile{Threads: map[uint32]Thread{}}
	for _, s := range []recording.Sample{
		{Time: 20, TID: 1, Event: recording.EventSwitch, ExecRuntime: 200, HasExecRuntime: true},
		{Time: 10, TID: 1, Event: recording.EventSwitch, ExecRuntime: 100, HasExecRuntime: true},
		{Time: 30, TID: 1, Event: recording.EventSwitch},
		{Time: 40, TID: 1, Event: recording.EventSwitchIn, ExecRuntime: 300, HasExecRuntime: true},
		{Time: 15, TID: 2, Event: recording.EventSwitch, ExecRuntime: 50, HasExecRuntime: true},
	} {
		p.NoteSwitchAway(&s)
	}
	q := p.Apply(Filter{})
	for _, c := range []struct {
		tid  uint32
		t    uint64
		want uint64
		ok   bool
	}{{1, 20, 200, true}, {1, 10, 0, false}, {1, 30, 0, false}, {1, 40, 0, false}, {2, 15, 50, true}, {3, 15, 0, false}} {
		for name, pr := range map[string]*Profile{"profile": p, "selection": q} {
			if got, ok := pr.LastSwitchAway(c.tid, c.t); got != c.want || ok != c.ok {
				t.Errorf("%s: LastSwitchAway(%d, %d) = %d, %v; want %d, %v", name, c.tid, c.t, got, ok, c.want, c.ok)
			}
		}
	}
}
