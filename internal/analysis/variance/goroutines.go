package variance

import (
	"fmt"
	"slices"
	"strings"

	"github.com/culprit-dev/culprit/internal/analysis/sched"
)

// The Go scheduler's hand-offs, which the kernel does not see (a
// goroutine parks and another runs on the same thread), come from probes
// on the runtime's own functions, set by culprit variance --sched on a Go
// program:
//
//   - runtime.gopark: a goroutine parks (its third parameter the
//     waitReason) until the call returns, when it runs again;
//   - runtime.send and runtime.recv (a channel operation that finds a
//     goroutine waiting on the other side: it hands the value over and
//     readies that goroutine, sg->g) and runtime.readyWithTime (a
//     semaphore release: sync.Mutex, RWMutex, WaitGroup, Cond readying
//     s->g): the calling goroutine wakes the one whose id the probe reads.
//
// Wake-ups the runtime makes on its own stack (timers, the network
// poller) are not seen: such a park is blocked until it returns.
var (
	GoSchedFuncs = []string{"runtime.gopark", "runtime.send", "runtime.recv", "runtime.readyWithTime"}
	// GoSchedReads read the woken goroutine's id at the waking probes.
	GoSchedReads = []string{"sg->g->goid", "s->g->goid"}
)

const goPark = "runtime.gopark"

// isGoSched reports whether fn is one of GoSchedFuncs.
func isGoSched(fn string) bool { return slices.Contains(GoSchedFuncs, fn) }

// GoPark is a goroutine parked by the runtime: from Start (gopark's
// entry) to End (its return, when the goroutine ran again).
type GoPark struct {
	Lane       uint32
	Start, End uint64
	Reason     uint8 // the runtime's waitReason
	Open       bool  // still parked when tracing ended
}

// GoWake is a goroutine (Waker, a lane) readying another (Wakee).
type GoWake struct {
	Time         uint64
	Waker, Wakee uint32
}

// GoSched are a Go program's parks and wake-ups, by lane.
type GoSched struct {
	Parks []GoPark
	Wakes []GoWake
	// Goids are the goroutine ids (as the recording names them) of the
	// lanes.
	Goids map[uint32]uint64
}

// add takes a call of one of GoSchedFuncs (fn), made on lane, as a park
// or a wake-up. params name its recorded arguments: the parameters, then
// the reads (a wake-up's GoSchedReads, the woken goroutine's id).
func (g *GoSched) add(fn string, lane uint32, c Call, params []string, ls lanes) {
	if fn == goPark {
		var reason uint8
		if len(c.Args) > 2 {
			reason = uint8(c.Args[2])
		}
		g.Parks = append(g.Parks, GoPark{Lane: lane, Start: c.Start, End: c.End, Reason: reason, Open: c.Unreturned})
		return
	}
	for i, p := range params {
		name, _, _ := strings.Cut(p, ":")
		if i < len(c.Args) && c.Args[i] != 0 && slices.Contains(GoSchedReads, name) {
			g.Wakes = append(g.Wakes, GoWake{Time: c.Start, Waker: lane, Wakee: ls.of(c.Args[i], 0)})
			return
		}
	}
}

// GoState is the state a goroutine parked for reason is in: "sleep" for
// time.Sleep, "io" for the network poller, and "lock" for every wait on
// another goroutine (a channel, select, a mutex, a WaitGroup, a Cond).
// reasons are the runtime's names of its waitReasons (waitReasonStrings,
// read from the executable; nil: all "lock").
func GoState(reason uint8, reasons []string) sched.State {
	if int(reason) < len(reasons) {
		switch r := reasons[reason]; {
		case r == "sleep":
			return sched.Sleep
		case r == "IO wait" || strings.HasPrefix(r, "IO wait"):
			return sched.IO
		}
	}
	return sched.Lock
}

// GoTimeline makes the goroutines' timelines, by lane, from their parks
// and wake-ups: a goroutine runs (on-cpu: the runtime ran it on a thread;
// whether the kernel ran that thread is not told apart) from its first
// traced call to its last end, except while parked: blocked from the park
// to the wake-up that readied it (the waker the goroutine that did), then
// runnable until the park returned. A park no seen wake-up ended is
// blocked throughout. The threads' names are "goroutine ID".
func GoTimeline(g *GoSched, calls []Call, reasons []string) *sched.Timeline {
	tl := &sched.Timeline{Threads: map[uint32]*sched.Thread{}}
	lo, hi := map[uint32]uint64{}, map[uint32]uint64{}
	see := func(lane uint32, from, to uint64) {
		if lane&GoroutineLane == 0 {
			return
		}
		if v, ok := lo[lane]; !ok || from < v {
			lo[lane] = from
		}
		if to > hi[lane] {
			hi[lane] = to
		}
	}
	for _, c := range calls {
		see(c.TID, c.Start, c.End)
	}
	parks := map[uint32][]GoPark{}
	for _, p := range g.Parks {
		see(p.Lane, p.Start, p.End)
		parks[p.Lane] = append(parks[p.Lane], p)
	}
	wakes := map[uint32][]GoWake{}
	for _, w := range g.Wakes {
		see(w.Waker, w.Time, w.Time)
		wakes[w.Wakee] = append(wakes[w.Wakee], w)
		tl.Wakeups++
	}
	for lane, from := range lo {
		th := &sched.Thread{TID: lane, Name: fmt.Sprintf("goroutine %d", g.Goids[lane])}
		add := func(a, b uint64, st sched.State, waker uint32, open bool) {
			if b > a || (b == a && open) {
				th.Intervals = append(th.Intervals, sched.Interval{From: a, To: b, State: st, Waker: waker, WakerStack: -1, Stack: -1, Open: open})
			}
		}
		ps := parks[lane]
		slices.SortFunc(ps, func(a, b GoPark) int { return compare(a.Start, b.Start) })
		ws := wakes[lane]
		slices.SortFunc(ws, func(a, b GoWake) int { return compare(a.Time, b.Time) })
		t := from
		for _, p := range ps {
			if p.Start < t {
				continue // overlaps the one before: not a park of its own
			}
			add(t, p.Start, sched.OnCPU, 0, false)
			st := GoState(p.Reason, reasons)
			i, _ := slices.BinarySearchFunc(ws, p.Start, func(w GoWake, t uint64) int { return compare(w.Time, t) })
			if i < len(ws) && ws[i].Time <= p.End && !p.Open {
				add(p.Start, ws[i].Time, st, ws[i].Waker, false)
				add(ws[i].Time, p.End, sched.Runnable, 0, false)
			} else {
				add(p.Start, p.End, st, 0, p.Open)
			}
			t = p.End
			tl.Switches++
		}
		add(t, hi[lane], sched.OnCPU, 0, false)
		if len(th.Intervals) == 0 {
			continue
		}
		tl.Threads[lane] = th
		if tl.Start == 0 || th.Intervals[0].From < tl.Start {
			tl.Start = th.Intervals[0].From
		}
		tl.End = max(tl.End, th.Intervals[len(th.Intervals)-1].To)
	}
	return tl
}

func compare(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
