package variance

import (
	"slices"
	"strings"
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
