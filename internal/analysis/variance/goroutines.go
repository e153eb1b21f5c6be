package variance

import (
	"cmp"
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
//     s->g): the calling goroutine wakes the one whose id the probe reads;
//   - runtime.ready, which every readying of a parked goroutine but the
//     network poller's goes through (on the scheduler's own stack, g0,
//     so the call does not say whose wake-up it is): the one it readies
//     is gp. Its waker is told by the call of the thread it was made
//     inside: runtime.closechan (a channel closed: the closing goroutine
//     readies every waiter), runtime.goroutineReady (a timer of
//     time.Sleep fired) or runtime.netpollgoready (a deadline of the
//     network poller's fired): "(timer)"; inside send, recv or
//     readyWithTime it is their wake-up, already taken; inside none, the
//     runtime's own ("(runtime)");
//   - the runtime's functions a program's own code calls to send, receive,
//     select, close a channel or unlock a mutex (GoUserEntries): the
//     return address of the one the waker was in names the program's
//     function that made the wake-up (GoWake.Site), for refinement to
//     probe;
//   - runtime.netpollready: the network poller found a descriptor ready
//     (its pollDesc pd, and mode 'r', 'w' or both) and readies the
//     goroutines parked on it, those whose gopark's lock is &pd.rg or
//     &pd.wg (at the offsets the executable's DWARF gives,
//     GoRuntime.PollRG, PollWG): "(netpoll)", with the descriptor
//     (pd->fd) the wait was for;
//   - runtime.(*timer).modify: a goroutine arms timer t (NewTimer,
//     Reset, AfterFunc; time.Sleep's own timer too, on the scheduler's
//     stack), and runtime.(*timer).unlockAndRun: timer t fires. A channel
//     send made inside the run (a time.Timer's or time.After's channel)
//     readies its receiver as "(timer)", armed by the goroutine of t's
//     last arming before it fired: the wait until that arming is that
//     goroutine's, the rest the timer's (GoWake.Armed). A time.Sleep's
//     wake-up (goroutineReady) is the sleeper's own deliberate wait. A
//     network deadline's wake-up (netpollgoready) is the timer's inside
//     a timer's run; outside one a goroutine set a deadline already
//     past or closed the descriptor (net/http aborts a pending read so),
//     and the wake-up is that goroutine's;
//   - time.goFunc, a time.AfterFunc timer's function, which starts the
//     function on a goroutine of its own, and runtime.runqput (reading
//     the goroutine it queues, gp): a runqput inside a goFunc on the
//     same thread is that goroutine's creation, a created-by edge
//     (GoCreate) from the goroutine that armed the timer;
//   - a wake-up by runtime.ready inside the garbage collector's
//     functions that ready goroutines (GoGCFuncs: the end of a cycle's
//     marking, the scan of a root that resumes a goroutine stopped to
//     scan its stack, a mark worker's drain) is the collector's,
//     "(GC)"; inside none of the calls above it is the runtime's own,
//     "(GC)" too when the wait it ends is one of the collector's by the
//     runtime's name for its reason (an allocation's assist waiting for
//     credit, the sweeper, the finalizers), else "(runtime)".
var (
	GoSchedFuncs = []string{"runtime.gopark", "runtime.send", "runtime.recv", "runtime.readyWithTime",
		goReady, goClose, goTimer, goPollTimer, goPollReady, goTimerArm, goTimerRun, goAfterFunc, goRunqput,
		"runtime.gcMarkDone", "runtime.markroot", "runtime.gcBgMarkWorker.func2"}
	// GoGCFuncs are the garbage collector's functions a runtime.ready is
	// made inside of (probed with GoSchedFuncs; they run only while a
	// collection does).
	GoGCFuncs = []string{"runtime.gcMarkDone", "runtime.markroot", "runtime.gcBgMarkWorker.func2"}
	// GoUserEntries are the functions of the runtime (and sync) that the
	// compiler's code for a channel operation, a select or a mutex's
	// Unlock calls (two names of the mutex's slow path: before Go 1.24
	// and since), probed for refinement only (they are most of the
	// scheduler probes' calls). Those the executable has not are not
	// probed.
	GoUserEntries = []string{goClose, "runtime.chansend1", "runtime.chanrecv1", "runtime.chanrecv2", "runtime.selectgo",
		"runtime.selectnbsend", "runtime.selectnbrecv", "sync.(*Mutex).unlockSlow", "internal/sync.(*Mutex).unlockSlow",
		"sync.(*RWMutex).Unlock", "sync.(*RWMutex).RUnlock", "sync.(*WaitGroup).Add", "sync.(*Cond).Signal", "sync.(*Cond).Broadcast"}
	// GoSchedReads read the woken goroutine's id at the waking probes.
	GoSchedReads = []string{"sg->g->goid", "s->g->goid", "gp->goid", pollFD}
)

// pollFD reads the descriptor of the network poller's readiness.
const pollFD = "pd->fd"

const (
	goPark      = "runtime.gopark"
	goReady     = "runtime.ready"
	goClose     = "runtime.closechan"
	goTimer     = "runtime.goroutineReady"
	goPollTimer = "runtime.netpollgoready"
	goPollReady = "runtime.netpollready"
	goTimerArm  = "runtime.(*timer).modify"
	goTimerRun  = "runtime.(*timer).unlockAndRun"
	goAfterFunc = "time.goFunc"
	goRunqput   = "runtime.runqput"
)

// The lanes of the wakers that are not goroutines (GoSched.Names).
const (
	LaneTimer   = GoroutineLane | 1<<30 | 1
	LaneNetpoll = GoroutineLane | 1<<30 | 2
	LaneRuntime = GoroutineLane | 1<<30 | 3
	LaneGC      = GoroutineLane | 1<<30 | 4
)

// IsRuntimeLane reports whether lane is one of the wakers that are not
// goroutines.
func IsRuntimeLane(lane uint32) bool { return lane&(GoroutineLane|1<<30) == GoroutineLane|1<<30 }

// NetpollLane is the waker lane of the network poller's readiness of
// descriptor fd (LaneNetpoll when fd is not known, < 0).
func NetpollLane(fd int64) uint32 {
	if fd < 0 || fd >= 1<<28 {
		return LaneNetpoll
	}
	return GoroutineLane | 1<<30 | 1<<29 | uint32(fd)
}

// LaneFD is the descriptor of a NetpollLane, -1 when none.
func LaneFD(lane uint32) int64 {
	if IsRuntimeLane(lane) && lane&(1<<29) != 0 {
		return int64(lane &^ (GoroutineLane | 1<<30 | 1<<29))
	}
	return -1
}

// isGoSched reports whether fn is one of GoSchedFuncs or GoUserEntries.
func isGoSched(fn string) bool {
	return slices.Contains(GoSchedFuncs, fn) || slices.Contains(GoUserEntries, fn)
}

// GoPark is a goroutine parked by the runtime: from Start (gopark's
// entry) to End (its return, when the goroutine ran again).
type GoPark struct {
	Lane       uint32
	Start, End uint64
	Reason     uint8  // the runtime's waitReason
	Lock       uint64 // gopark's lock argument (the network poller's: &pd.rg, &pd.wg)
	Open       bool   // still parked when tracing ended
	// TID is the thread the goroutine ran on again (gopark returned on).
	TID uint32
}

// goReadyCall is a call of runtime.ready on thread TID readying Wakee.
type goReadyCall struct {
	Time  uint64
	TID   uint32
	Wakee uint32
}

// goEnclosing is a call runtime.ready may be made inside of (fn), on
// thread TID, by lane; or a call of GoUserEntries (Site its return
// address).
type goEnclosing struct {
	fn         string
	Start, End uint64
	TID, Lane  uint32
	Site       uint64
}

// goPoll is a call of runtime.netpollready, on thread TID.
type goPoll struct {
	Time     uint64
	PD, Mode uint64
	FD       int64 // pd->fd, -1 when not read
	TID      uint32
}

// goTimerCall is a call of runtime.(*timer).modify (an arming) or
// unlockAndRun (a firing) of timer T, on thread TID by lane.
type goTimerCall struct {
	T          uint64
	Start, End uint64
	TID, Lane  uint32
}

// GoWake is a goroutine (Waker, a lane) readying another (Wakee).
type GoWake struct {
	Time         uint64
	Waker, Wakee uint32
	// Site is the return address of the call of GoUserEntries the waker
	// made it in (in the program's function that did it), 0 if none.
	Site uint64
	// Armed is, for a timer's wake-up (Waker LaneTimer), the goroutine
	// that armed the timer last before it fired, and ArmedAt when; 0
	// when not known or the sleeper's own (time.Sleep).
	Armed   uint32
	ArmedAt uint64

	// Poller is, for the network poller's wake-up, the thread that ran
	// the poller (whose wait in the kernel the descriptor's readiness
	// ended, when it waited).
	Poller uint32

	tid uint32 // the thread the wake-up was made on
}

// GoCreate is a goroutine (Lane) a time.AfterFunc's timer started: At
// when the timer's run queued it, Fired when the run began, and Armed
// the goroutine that armed the timer last before it fired, at ArmedAt
// (0, 0 when no arming was seen).
type GoCreate struct {
	Lane      uint32
	At, Fired uint64
	Armed     uint32
	ArmedAt   uint64
}

// GoSched are a Go program's parks and wake-ups, by lane.
type GoSched struct {
	Parks []GoPark
	// Wakes are the wake-ups made on the waker's own stack (send, recv,
	// readyWithTime); Wakeups adds those runtime.ready and the network
	// poller made.
	Wakes []GoWake
	// Goids are the goroutine ids (as the recording names them) of the
	// lanes.
	Goids map[uint32]uint64

	readies []goReadyCall
	encl    []goEnclosing
	polls   []goPoll
	entries map[uint32][]goEnclosing // GoUserEntries' calls by lane
	arms    map[uint64][]goTimerCall // the timers' armings, by timer
	runs    []goTimerCall            // the timers' firings
	funcs   []goTimerCall            // the calls of AfterFunc timers' function
	puts    []goReadyCall            // the goroutines queued to run (runqput)
}

// GoRuntime are facts of a Go executable's runtime the analysis of its
// scheduler's probes needs, read from the executable (they change between
// Go releases).
type GoRuntime struct {
	// Reasons name the runtime's waitReasons (runtime.waitReasonStrings).
	Reasons []string
	// PollRG and PollWG are the offsets of rg and wg in runtime.pollDesc
	// (-1: unknown, and the network poller's wake-ups are not told).
	PollRG, PollWG int64
}

// LaneName is the name of a waker lane that is not a goroutine, "" for
// others.
func LaneName(lane uint32) string {
	switch {
	case lane == LaneTimer:
		return "(timer)"
	case lane == LaneNetpoll, LaneFD(lane) >= 0:
		return "(netpoll)"
	case lane == LaneRuntime:
		return "(runtime)"
	case lane == LaneGC:
		return "(GC)"
	}
	return ""
}

// add takes a call of one of GoSchedFuncs (fn), made on lane (on thread
// tid), as a park, a wake-up or what tells a wake-up's waker. params name
// its recorded arguments: the parameters, then the reads (a wake-up's
// GoSchedReads, the woken goroutine's id).
func (g *GoSched) add(fn string, lane, tid uint32, c Call, params []string, ls lanes) {
	arg := func(i int) uint64 {
		if i < len(c.Args) {
			return c.Args[i]
		}
		return 0
	}
	switch fn {
	case goPark:
		g.Parks = append(g.Parks, GoPark{Lane: lane, Start: c.Start, End: c.End, Reason: uint8(arg(2)), Lock: arg(1), Open: c.Unreturned, TID: tid})
		return
	case goPollReady:
		fd := int64(-1)
		for i, p := range params {
			if name, _, _ := strings.Cut(p, ":"); name == pollFD && i < len(c.Args) {
				fd = int64(c.Args[i])
			}
		}
		g.polls = append(g.polls, goPoll{Time: c.Start, PD: arg(1), Mode: uint64(uint32(arg(2))), FD: fd, TID: tid})
		return
	case goTimerArm:
		if g.arms == nil {
			g.arms = map[uint64][]goTimerCall{}
		}
		g.arms[arg(0)] = append(g.arms[arg(0)], goTimerCall{T: arg(0), Start: c.Start, End: c.End, TID: tid, Lane: lane})
		return
	case goTimerRun:
		// An unreturned run ends at its recorded end (an upper bound), not
		// with the trace: the thread's later sends are not the timer's.
		g.runs = append(g.runs, goTimerCall{T: arg(0), Start: c.Start, End: c.End, TID: tid, Lane: lane})
		return
	case goTimer, goPollTimer:
		g.encl = append(g.encl, goEnclosing{fn: fn, Start: c.Start, End: c.End, TID: tid, Lane: lane})
		return
	case GoGCFuncs[0], GoGCFuncs[1], GoGCFuncs[2]:
		e := goEnclosing{fn: fn, Start: c.Start, End: c.End, TID: tid, Lane: lane}
		if c.Unreturned {
			e.End = ^uint64(0)
		}
		g.encl = append(g.encl, e)
		return
	case goAfterFunc:
		g.funcs = append(g.funcs, goTimerCall{Start: c.Start, End: c.End, TID: tid, Lane: lane})
		return
	case goRunqput:
		for i, p := range params {
			if name, _, _ := strings.Cut(p, ":"); name == "gp->goid" && i < len(c.Args) && c.Args[i] != 0 {
				g.puts = append(g.puts, goReadyCall{Time: c.Start, TID: tid, Wakee: ls.of(c.Args[i], 0)})
			}
		}
		return
	}
	if slices.Contains(GoUserEntries, fn) {
		e := goEnclosing{fn: fn, Start: c.Start, End: c.End, TID: tid, Lane: lane, Site: uint64(c.Site)}
		if c.Unreturned {
			e.End = ^uint64(0)
		}
		if fn == goClose {
			g.encl = append(g.encl, e)
		}
		if g.entries == nil {
			g.entries = map[uint32][]goEnclosing{}
		}
		g.entries[lane] = append(g.entries[lane], e)
		return
	}
	for i, p := range params {
		name, _, _ := strings.Cut(p, ":")
		if i >= len(c.Args) || c.Args[i] == 0 || name == pollFD || !slices.Contains(GoSchedReads, name) {
			continue
		}
		if fn == goReady {
			g.readies = append(g.readies, goReadyCall{Time: c.Start, TID: tid, Wakee: ls.of(c.Args[i], 0)})
			return
		}
		g.Wakes = append(g.Wakes, GoWake{Time: c.Start, Waker: lane, Wakee: ls.of(c.Args[i], 0), tid: tid})
		g.encl = append(g.encl, goEnclosing{fn: fn, Start: c.Start, End: c.End, TID: tid, Lane: lane})
		return
	}
}

// Wakeups are all the wake-ups seen: Wakes, those of runtime.ready with
// the waker its enclosing call tells, and the network poller's (rt gives
// pollDesc's layout).
func (g *GoSched) Wakeups(rt GoRuntime) []GoWake {
	out := slices.Clone(g.Wakes)
	// A channel send made inside a timer's run (a time.Timer's channel)
	// is the timer's wake-up, armed by the goroutine that armed it last.
	runs := slices.Clone(g.runs)
	slices.SortFunc(runs, func(a, b goTimerCall) int {
		return cmp.Or(cmp.Compare(a.TID, b.TID), cmp.Compare(a.Start, b.Start))
	})
	for i, w := range out {
		if r, ok := innermostRun(runs, w.tid, w.Time); ok {
			out[i].Waker = LaneTimer
			out[i].Armed, out[i].ArmedAt = g.armed(r)
		}
	}
	encl := slices.Clone(g.encl)
	slices.SortFunc(encl, func(a, b goEnclosing) int {
		if a.TID != b.TID {
			return int(a.TID) - int(b.TID)
		}
		return cmp.Compare(a.Start, b.Start)
	})
	for _, r := range g.readies {
		// The innermost call of the thread open at the ready: the last
		// begun at or before it that had not ended.
		var in *goEnclosing
		i, _ := slices.BinarySearchFunc(encl, r, func(e goEnclosing, r goReadyCall) int {
			if e.TID != r.TID {
				return int(e.TID) - int(r.TID)
			}
			if e.Start <= r.Time {
				return -1
			}
			return 1
		})
		for j := i - 1; j >= 0 && encl[j].TID == r.TID; j-- {
			if encl[j].End >= r.Time {
				in = &encl[j]
				break
			}
		}
		waker := uint32(LaneRuntime)
		if in != nil {
			switch in.fn {
			case goClose:
				waker = in.Lane
			case goTimer:
				waker = LaneTimer
			case GoGCFuncs[0], GoGCFuncs[1], GoGCFuncs[2]:
				waker = LaneGC
			case goPollTimer:
				// A deadline's timer fired, or (outside a timer's run,
				// when the runs are probed) a goroutine set a deadline
				// already past or closed the descriptor.
				waker = LaneTimer
				if _, ok := innermostRun(runs, r.TID, r.Time); !ok && len(runs) > 0 {
					waker = in.Lane
				}
			default:
				continue // send, recv, readyWithTime: their own wake-up
			}
		} else if g.gcWait(r.Wakee, r.Time, rt.Reasons) {
			waker = LaneGC
		}
		out = append(out, GoWake{Time: r.Time, Waker: waker, Wakee: r.Wakee})
	}
	if rt.PollRG >= 0 && rt.PollWG >= 0 && len(g.polls) > 0 {
		// The parks by their lock argument (a descriptor's word), by
		// start: one goroutine at a time waits on a word.
		byLock := map[uint64][]int{}
		for i, k := range g.Parks {
			byLock[k.Lock] = append(byLock[k.Lock], i)
		}
		for _, is := range byLock {
			slices.SortFunc(is, func(a, b int) int { return cmp.Compare(g.Parks[a].Start, g.Parks[b].Start) })
		}
		for _, p := range g.polls {
			var locks []uint64
			if p.Mode == 'r' || p.Mode == 'r'+'w' {
				locks = append(locks, p.PD+uint64(rt.PollRG))
			}
			if p.Mode == 'w' || p.Mode == 'r'+'w' {
				locks = append(locks, p.PD+uint64(rt.PollWG))
			}
			for _, l := range locks {
				is := byLock[l]
				// The last park on the word begun by the readiness.
				j, _ := slices.BinarySearchFunc(is, p.Time, func(i int, t uint64) int {
					if g.Parks[i].Start <= t {
						return -1
					}
					return 1
				})
				if j == 0 {
					continue
				}
				if k := g.Parks[is[j-1]]; k.Open || k.End >= p.Time {
					out = append(out, GoWake{Time: p.Time, Waker: NetpollLane(p.FD), Wakee: k.Lane, Poller: p.TID})
				}
			}
		}
	}
	slices.SortStableFunc(out, func(a, b GoWake) int { return cmp.Compare(a.Time, b.Time) })
	for _, es := range g.entries {
		slices.SortFunc(es, func(a, b goEnclosing) int { return cmp.Compare(a.Start, b.Start) })
	}
	for i, w := range out {
		if w.Site == 0 {
			out[i].Site = g.site(w.Waker, w.Time)
		}
	}
	return out
}

// gcWait reports whether the park of lane open at t waits for the
// garbage collector, by the runtime's name of its reason (reasons).
func (g *GoSched) gcWait(lane uint32, t uint64, reasons []string) bool {
	for _, p := range g.Parks {
		if p.Lane == lane && p.Start <= t && (p.Open || p.End >= t) && int(p.Reason) < len(reasons) {
			return gcReason(reasons[p.Reason])
		}
	}
	return false
}

// gcReason reports whether the runtime's name of a waitReason is one of
// the garbage collector's ("GC assist wait", "GC sweep wait", "garbage
// collection", "finalizer wait", "force gc (idle)", ...).
func gcReason(r string) bool {
	l := strings.ToLower(r)
	return strings.HasPrefix(l, "gc ") || strings.Contains(l, " gc") || strings.Contains(l, "garbage collection") ||
		r == "finalizer wait" || r == "cleanup wait"
}

// Created are the goroutines time.AfterFunc's timers started (a
// runqput inside a call of time.goFunc on its thread, inside the
// timer's run), with the goroutine that armed each timer.
func (g *GoSched) Created() []GoCreate {
	if len(g.funcs) == 0 || len(g.puts) == 0 {
		return nil
	}
	funcs := slices.Clone(g.funcs)
	slices.SortFunc(funcs, func(a, b goTimerCall) int {
		return cmp.Or(cmp.Compare(a.TID, b.TID), cmp.Compare(a.Start, b.Start))
	})
	runs := slices.Clone(g.runs)
	slices.SortFunc(runs, func(a, b goTimerCall) int {
		return cmp.Or(cmp.Compare(a.TID, b.TID), cmp.Compare(a.Start, b.Start))
	})
	var out []GoCreate
	seen := map[uint32]bool{}
	for _, p := range g.puts {
		f, ok := innermostRun(funcs, p.TID, p.Time)
		if !ok || seen[p.Wakee] {
			continue
		}
		seen[p.Wakee] = true
		c := GoCreate{Lane: p.Wakee, At: p.Time, Fired: f.Start}
		if r, ok := innermostRun(runs, f.TID, f.Start); ok {
			c.Fired = r.Start
			c.Armed, c.ArmedAt = g.armed(r)
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b GoCreate) int { return cmp.Compare(a.At, b.At) })
	return out
}

// site is the return address of the call of GoUserEntries lane was in at
// t (they do not call each other: the last begun by t), 0 when none.
// The entries are sorted by Start.
func (g *GoSched) site(lane uint32, t uint64) uint64 {
	es := g.entries[lane]
	i, _ := slices.BinarySearchFunc(es, t, func(e goEnclosing, t uint64) int {
		if e.Start <= t {
			return -1
		}
		return 1
	})
	if i == 0 || es[i-1].End < t {
		return 0
	}
	return es[i-1].Site
}

// innermostRun is the timer's run open on thread tid at t (runs sorted
// by thread, then start).
func innermostRun(runs []goTimerCall, tid uint32, t uint64) (goTimerCall, bool) {
	i, _ := slices.BinarySearchFunc(runs, t, func(r goTimerCall, t uint64) int {
		if r.TID != tid {
			return cmp.Compare(r.TID, tid)
		}
		if r.Start <= t {
			return -1
		}
		return 1
	})
	if i > 0 && runs[i-1].TID == tid && runs[i-1].End >= t {
		return runs[i-1], true
	}
	return goTimerCall{}, false
}

// armed is the goroutine that armed the timer of run r last before it
// fired, and when (0, 0 when no arming was seen).
func (g *GoSched) armed(r goTimerCall) (uint32, uint64) {
	var lane uint32
	var at uint64
	for _, a := range g.arms[r.T] {
		if a.Start <= r.Start && a.Start >= at {
			lane, at = a.Lane, a.Start
		}
	}
	return lane, at
}
