// Package offcpu turns the context switches of a recording (culprit record
// --events sched) into off-CPU time: the stack a thread left the CPU with,
// charged with how long it stayed off. It reads only profile.Profile.
//
// The recorder takes the leaving side of each switch (sched_switch's prev
// task), not the return, so a span ends at the thread's next recorded event
// of any kind: a CPU tick, a system call's entry or exit, or its next
// switch. That is exact for a thread that blocked in a system call (its
// exit is recorded as it returns) and an overestimate by at most the time
// to its next event otherwise (one tick of CPU time when it runs; a thread
// preempted back to its loop). A switch with no later event of its thread
// (it exited, or the recording ended) has no known end and is left out.
package offcpu

import (
	"cmp"
	"slices"

	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
)

// Stats says what went into an off-CPU profile.
type Stats struct {
	Switches int    // context switches seen
	Spans    int    // switches with an end: the samples of the profile
	Total    uint64 // ns off the CPU, summed over the spans
}

// Profile returns the off-CPU profile of p, whose samples must keep their
// times (loaded without merging) and every event kind (profile.Filter
// AllEvents): one sample per context switch with an end, at the switch's
// time, stack and thread, its Period the ns until the thread's next event.
// The result shares p's frames, stacks and threads.
func Profile(p *profile.Profile) (*profile.Profile, Stats) {
	var st Stats
	open := map[uint32]int{} // tid → index in p.Samples of its last switch without an end
	var out []profile.Sample
	for i, s := range p.Samples {
		if j, ok := open[s.TID]; ok {
			sw := p.Samples[j]
			if s.Time >= sw.Time {
				sw.Period = s.Time - sw.Time
				out = append(out, sw)
				st.Spans++
				st.Total += sw.Period
			}
			delete(open, s.TID)
		}
		if s.Event == recording.EventSwitch {
			st.Switches++
			open[s.TID] = i
		}
	}
	slices.SortStableFunc(out, func(a, b profile.Sample) int { return cmp.Compare(a.Time, b.Time) })
	q := *p
	q.Samples = out
	return &q, st
}
