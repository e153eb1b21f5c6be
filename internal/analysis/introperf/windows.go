package introperf

import (
	"cmp"
	"slices"

	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
)

// Regime is when a run recorded its system calls (record
// --syscall-windows), on a clock relative to the run's start, so that two
// runs can be compared like with like (Options.Like).
//
// A run without windows recorded its calls all along. A run with windows
// (recording.SyscallWindow) recorded them in its windows only: a window of
// scale 1 (On 0) is a time the programs stayed attached ("steady": every
// call recorded, as without windows); between and in the windows of scale
// above 1 the run was "windowed": calls in those windows stand for
// PERIOD/ON each, calls between them were not recorded.
type Regime struct {
	// Windows are the run's windows, relative to its start, by start.
	Windows []RegimeWindow
	// Unknown: the run was recorded in windows whose times the recording
	// does not hold (a recording made before they were written).
	Unknown bool
	origin  uint64
}

// RegimeWindow is one window of a Regime, in ns from the run's start.
type RegimeWindow struct {
	Start, End uint64
	On, Period uint64 // recording.SyscallWindow's: On 0, scale 1
}

// RegimeOf returns when p recorded its system calls. The run's start is
// its recording's start (its first Meta's StartClock, at which the
// recorder starts the windows' cycle with the first traced thread), else
// its first sample.
func RegimeOf(p *profile.Profile) Regime {
	var g Regime
	g.origin = p.StartTime
	windowed := false
	for i, m := range p.Metas {
		if i == 0 && m.StartClock != 0 {
			g.origin = m.StartClock
		}
		if m.Extra[recording.ExtraSyscallWindows] != "" {
			windowed = true
		}
	}
	if len(p.SyscallWindows) == 0 {
		g.Unknown = windowed
		return g
	}
	for _, w := range p.SyscallWindows {
		if w.End < g.origin {
			continue
		}
		g.Windows = append(g.Windows, RegimeWindow{Start: max(w.Start, g.origin) - g.origin, End: w.End - g.origin, On: w.On, Period: w.Period})
	}
	slices.SortFunc(g.Windows, func(a, b RegimeWindow) int { return cmp.Compare(a.Start, b.Start) })
	return g
}

// AllAlong reports whether the run recorded every call (within the limit)
// all along: no windows, or only windows of scale 1.
func (g *Regime) AllAlong() bool {
	for _, w := range g.Windows {
		if w.On != 0 {
			return false
		}
	}
	return !g.Unknown
}

// Windowed reports whether the run was recorded in windows of scale
// above 1 at rel (ns from its start), and then whether rel lies in one of
// them and what each call recorded there stands for. Before its first
// window the run had traced nothing yet: not windowed. After its last,
// its last window's state goes on (its windows' grid, when they were
// scaled).
func (g *Regime) Windowed(rel uint64) (windowed, in bool, scale float64) {
	windowed, in, scale, _ = g.locate(rel)
	return windowed, in, scale
}

// WindowedAt is Windowed at t, a time on the recording's clock.
func (g *Regime) WindowedAt(t uint64) (windowed, in bool, scale float64) {
	return g.Windowed(max(t, g.origin) - g.origin)
}

// locate is Windowed, with the index of the window rel lies in or
// after (past the last window, of its grid's).
func (g *Regime) locate(rel uint64) (windowed, in bool, scale float64, k int64) {
	ws := g.Windows
	if len(ws) == 0 {
		return false, true, 1, 0
	}
	i, _ := slices.BinarySearchFunc(ws, rel, func(w RegimeWindow, t uint64) int { return cmp.Compare(w.Start, t+1) })
	// ws[i-1] is the last window starting at or before rel.
	if i == 0 {
		return false, true, 1, 0
	}
	w := ws[i-1]
	k = int64(i - 1)
	if w.On == 0 {
		if rel < w.End || i == len(ws) {
			return false, true, 1, k
		}
		// After a steady span: detached until the next window.
		return true, false, 1, k
	}
	sc := recording.SyscallWindow{On: w.On, Period: w.Period}.Scale()
	if rel < w.End {
		return true, true, sc, k
	}
	if i == len(ws) && w.Period > 0 {
		// The grid of the last window, beyond it.
		n := (rel - w.Start) / w.Period
		return true, (rel-w.Start)%w.Period < w.End-w.Start, sc, k + int64(n)
	}
	return true, false, sc, k
}

// slot is where a time lies in the system call windows that apply to a
// run: its own (src 1), the compared run's it is thinned to (src 2), or
// none (src 0: calls recorded all along); in window k or in the gap after
// it.
type slot struct {
	src   int8
	gap   bool
	k     int64
	scale uint64 // what each call recorded in the window stands for
}

// edges tells where a run's windows open and close: between two events
// of a thread on either side of a gap between windows its calls were not
// recorded, and a function that returned and another that was called
// there would be read as one instance lasting across it (as across a
// loss window, Profile.Gaps), so the inference is cut there.
type edges struct {
	own, like Regime
	thin      bool // thinned to like's windows
}

func newEdges(p *profile.Profile, t *thinning) *edges {
	if t != nil {
		return &edges{own: t.own, like: t.like, thin: true}
	}
	g := RegimeOf(p)
	if g.AllAlong() || g.Unknown {
		return nil
	}
	return &edges{own: g}
}

func (e *edges) slot(t uint64) slot {
	rel := uint64(0)
	if t > e.own.origin {
		rel = t - e.own.origin
	}
	if w, in, sc, k := e.own.locate(rel); w {
		return slot{src: 1, gap: !in, k: k, scale: uint64(sc + 0.5)}
	}
	if e.thin {
		if w, in, sc, k := e.like.locate(rel); w {
			return slot{src: 2, gap: !in, k: k, scale: uint64(sc + 0.5)}
		}
	}
	return slot{scale: 1}
}

// cut reports whether a thread's events in slots a and b have a gap
// between windows between them: only from calls recorded all along into
// a window is there none (the programs stay attached).
func cut(a, b slot) bool {
	return a != b && (a.src != 0 || b.gap)
}

// thinning thins the events of a run that recorded its system calls all
// along to another run's windows (Options.Like): at each time (from each
// run's start) the other run was windowed and this one was not, a call
// entered outside the other's windows is dropped with its exit, a context
// switch inside it made bare (no stack: skipped, as the windowed run
// records it), and a call kept stands for the other's scale.
type thinning struct {
	own, like Regime
	// dropped: the threads inside a dropped call, by PID<<32|TID.
	dropped map[uint64]bool
}

func newThinning(p *profile.Profile, like *Regime) *thinning {
	if like == nil || like.Unknown || like.AllAlong() {
		return nil
	}
	own := RegimeOf(p)
	if own.Unknown {
		return nil
	}
	return &thinning{own: own, like: *like, dropped: map[uint64]bool{}}
}

// keep returns whether event s stays, and what a system call entry kept
// stands for (its period times the other run's scale).
func (t *thinning) keep(s *profile.Sample) (bool, float64) {
	key := uint64(s.PID)<<32 | uint64(s.TID)
	switch s.Event {
	case recording.EventSyscallEnter, recording.EventSyscallExit:
	case recording.EventSwitch:
		// A blocking switch inside a dropped call has no stack in a run
		// recorded in windows; a preemption walks its chains there.
		return !t.dropped[key] || runnable(s.Arg), 1
	default:
		return true, 1
	}
	if s.Event == recording.EventSyscallExit {
		drop := t.dropped[key]
		delete(t.dropped, key)
		return !drop, 1
	}
	delete(t.dropped, key)
	rel := uint64(0)
	if s.Time > t.own.origin {
		rel = s.Time - t.own.origin
	}
	if windowed, _, _ := t.own.Windowed(rel); windowed {
		return true, 1 // recorded in windows already: alike
	}
	windowed, in, scale := t.like.Windowed(rel)
	if !windowed {
		return true, 1
	}
	if !in {
		t.dropped[key] = true
		return false, 1
	}
	return true, scale
}
