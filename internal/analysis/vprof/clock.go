package vprof

import (
	"github.com/culprit-dev/culprit/internal/profile"
)

// Clock readings (docs/vprof.md, "Clock readings are not inputs"). A value
// a program took from a clock (clock_gettime, time, gettimeofday), as it
// is or scaled to seconds, milliseconds, microseconds or nanoseconds,
// names when the run happened, not what it was given: two runs of the same
// input hold other ones. The recording says when each value was sampled,
// on the sample clock (CLOCK_MONOTONIC), and the recording's start on the
// wall clock, so such a value is recognised by what it holds: a time of
// the run itself, on one of the two clocks, in one of the four units.

// clockUnits are the units, in nanoseconds, a program keeps a clock
// reading in.
var clockUnits = [...]float64{1e9, 1e6, 1e3, 1}

// clockKinds is the number of (clock, unit) pairs: the monotonic clock
// (bits 0..3) and the wall clock (bits 4..7), each in clockUnits.
const clockKinds = 2 * len(clockUnits)

// clockSlack is how far, in nanoseconds, a reading may lie before the
// run's first sample or after the sample it is read at: the time from the
// program's start to its first sample, a deadline a little ahead of the
// reading, the truncation to the unit.
const clockSlack = 1e9

// ClockShare is the part of a variable's samples in every run that must
// read as the same clock in the same unit: the rest may come before the
// program took its first reading (the initial value, 0).
const ClockShare = 19.0 / 20

// ClockDistance is how many times its own width the window of a run's
// times must lie from the clock's origin for a value in it to be taken
// for a reading of that clock: at an hour of uptime, a run of 5 s and its
// slack of 2 s span 7 s of 3,600; a quantity falls in so narrow a window
// by chance in about one case in 500, and must do so in each kind of run,
// at another time in each.
const ClockDistance = 100

// runClockWindow is what a run's values are compared with.
type runClockWindow struct {
	start   float64 // the run's first sample time, sample clock ns
	wall    float64 // wall clock minus sample clock, ns
	hasWall bool
}

// runClock returns the clock window of the run p: its first sample time,
// and the wall clock's offset from the sample clock when the recording
// says (Meta.StartUnixNano at Meta.StartClock).
func runClock(p *profile.Profile) runClockWindow {
	w := runClockWindow{start: float64(p.StartTime)}
	for _, m := range p.Metas {
		if m.StartUnixNano > 0 && m.StartClock > 0 {
			w.wall, w.hasWall = float64(m.StartUnixNano)-float64(m.StartClock), true
			if c := float64(m.StartClock); c < w.start || w.start == 0 {
				w.start = c
			}
			break
		}
	}
	return w
}

// match returns the (clock, unit) pairs, as bits, in which x, sampled at
// time t (sample clock ns), reads as a time of the run: from its start
// (less clockSlack) to t (plus clockSlack).
func (w runClockWindow) match(x float64, t uint64) uint32 {
	if x <= 0 || w.start == 0 {
		return 0
	}
	lo, hi := w.start-clockSlack, float64(t)+clockSlack
	// Near the monotonic clock's origin (a machine just booted), the
	// window holds small numbers, which counts and sizes are too.
	mono := lo >= ClockDistance*(hi-lo)
	var m uint32
	for i, u := range clockUnits {
		ns := x * u
		if mono && ns >= lo-u && ns <= hi+u {
			m |= 1 << i
		}
		if w.hasWall {
			if ns -= w.wall; ns >= lo-u && ns <= hi+u {
				m |= 1 << (len(clockUnits) + i)
			}
		}
	}
	return m
}

// clockReading says whether v holds a clock reading: in each normal run
// and in the buggy runs, at least ClockShare of its values read as the
// same clock in the same unit.
func clockReading(v *variable) bool {
	if v.src.Pointer {
		return false
	}
	sers := []*series{&v.buggy}
	for _, s := range v.normal {
		if s != nil && s.values.len() > 0 {
			sers = append(sers, s)
		}
	}
	if len(sers) < 2 || v.buggy.values.len() == 0 {
		return false
	}
next:
	for k := 0; k < clockKinds; k++ {
		for _, s := range sers {
			if float64(s.clocks[k]) < ClockShare*float64(s.values.len()) {
				continue next
			}
		}
		return true
	}
	return false
}
