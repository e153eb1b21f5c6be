// Package offcpu turns the context switches of a recording into off-CPU
// time: the stack a thread left the CPU with, charged with how long it
// stayed off. It reads only profile.Profile.
//
// A recording with switches onto a CPU and wake-ups (culprit record --events
// wakeup) has exact off-CPU intervals: analysis/sched's thread timelines,
// whose every interval off the CPU (blocked, runnable, stopped) carries the
// stack its thread left with. One with only the switches away (--events
// sched: sched_switch's prev side) has no return to the CPU, so a span ends
// at the thread's next recorded event of any kind: a CPU tick, a system
// call's entry or exit, or its next switch. That is exact for a thread that
// blocked in a system call (its exit is recorded as it returns) and an
// overestimate by at most the time to its next event otherwise (one tick of
// CPU time when it runs). A switch with no later event of its thread (it
// exited, or the recording ended) has no known end and is left out.
// Recorded in system call windows (record --syscall-windows, without
// wakeup), switches come in the windows only, each standing for the
// window's scale of them (its period): its span is charged that many
// times, as each call recorded there stands for that many calls, and the
// sample stands for that many spans (profile.Sample's More: its Period
// over N is the span itself).
package offcpu

import (
	"cmp"
	"errors"
	"slices"

	"github.com/culprit-dev/culprit/internal/analysis/sched"
	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
)

// Stats says what went into an off-CPU profile.
type Stats struct {
	Exact    bool   // the spans are sched's intervals (switch-ins recorded)
	Switches int    // context switches away seen
	Spans    int    // spans with an end: the samples of the profile
	Total    uint64 // ns off the CPU, summed over the spans
}

// Profile returns the off-CPU profile of p, whose samples must keep their
// times (loaded without merging) and every event kind (profile.Filter
// AllEvents): one sample per span off the CPU with an end, at the span's
// start, with the stack and thread that left the CPU, its Period the span's
// ns. The result shares p's frames, stacks and threads.
func Profile(p *profile.Profile) (*profile.Profile, Stats, error) {
	var st Stats
	var out []profile.Sample
	tl, err := sched.States(p)
	switch {
	case err == nil:
		st.Exact, st.Switches = true, tl.Switches
		for _, th := range tl.Threads {
			left := int32(-1) // the stack of the thread's last switch away
			for _, iv := range th.Intervals {
				switch {
				case iv.State == sched.OnCPU || iv.State == sched.Unknown:
					left = -1
					continue
				case iv.Stack >= 0:
					left = iv.Stack
				}
				// A wait for a CPU after a wake-up is charged to the
				// stack the thread slept with.
				if left < 0 || iv.Open || iv.To <= iv.From {
					continue
				}
				out = append(out, profile.Sample{Time: iv.From, PID: th.PID, TID: th.TID, Period: iv.Duration(),
					Stack: left, Event: recording.EventSwitch})
				st.Spans++
				st.Total += iv.Duration()
			}
		}
	case errors.Is(err, sched.ErrNoEvents):
		open := map[uint32]int{} // tid → index in p.Samples of its last switch without an end
		for i, s := range p.Samples {
			if j, ok := open[s.TID]; ok {
				sw := p.Samples[j]
				if s.Time >= sw.Time {
					// A switch that stands for more (its period: one
					// recorded in a system call window) is charged
					// its span that many times, as that many
					// switches (More).
					w := max(sw.Period, 1)
					sw.Period, sw.More = (s.Time-sw.Time)*w, uint32(w-1)
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
	default:
		return nil, st, err
	}
	slices.SortStableFunc(out, func(a, b profile.Sample) int {
		return cmp.Or(cmp.Compare(a.Time, b.Time), cmp.Compare(a.TID, b.TID))
	})
	q := *p
	q.Samples = out
	return &q, st, nil
}
