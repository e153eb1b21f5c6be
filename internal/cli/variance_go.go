package cli

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/culprit-dev/culprit/internal/analysis/sched"
	"github.com/culprit-dev/culprit/internal/analysis/variance"
	"github.com/culprit-dev/culprit/internal/tracer"
)

// goState is the state a goroutine parked for reason is in: "sleep" for
// time.Sleep, "io" for the network poller, and "lock" for every wait on
// another goroutine (a channel, select, a mutex, a WaitGroup, a Cond).
// reasons are the runtime's names of its waitReasons (waitReasonStrings,
// read from the executable; nil: all "lock").
func goState(reason uint8, reasons []string) sched.State {
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

// goRuntimeOf reads what the analysis of the Go scheduler's probes needs
// from the Go executable exe; errs say what could not be read, and what
// is lost without it.
func goRuntimeOf(exe string) (rt variance.GoRuntime, errs []error) {
	rt.PollRG, rt.PollWG = -1, -1
	if rs, err := tracer.GoWaitReasons(exe); err != nil {
		errs = append(errs, fmt.Errorf("%v: every goroutine wait counts as lock", err))
	} else {
		rt.Reasons = rs
	}
	if rg, wg, err := tracer.GoPollOffsets(exe); err != nil {
		errs = append(errs, fmt.Errorf("%v: the network poller's wake-ups have no waker", err))
	} else {
		rt.PollRG, rt.PollWG = int64(rg), int64(wg)
	}
	return rt, errs
}

// goTimeline makes the goroutines' timelines, by lane, from their parks
// and wake-ups: a goroutine runs (on-cpu: the runtime ran it on a thread;
// whether the kernel ran that thread is not told apart) from its first
// traced call to its last end, except while parked: blocked from the park
// to the wake-up that readied it (the waker the goroutine that did), then
// runnable until the park returned. A park no seen wake-up ended is
// blocked throughout. The threads' names are "goroutine ID". A wait the
// runtime's timers or network poller ended has a Source for its waker
// ("(timer)", "(netpoll) fd N"): a timer's is a sleep, but for the part
// before another goroutine armed the timer (a lock wait on that
// goroutine); the poller's is the I/O wait, but for the part before a
// goroutine of the program wrote what made the descriptor ready, when
// the kernel's wake-up of the poller's thread says so (that
// goroutine's). A goroutine a
// time.AfterFunc's timer started begins as the timer's sleep since its
// arming, then runnable from its creation, with a created-by edge
// (Handoffs) to the goroutine that armed the timer.
//
// The blocked intervals' WakerStack index the wake-ups' functions: the
// program's function that called the runtime's entry the wake-up was
// made in (name names its return address), then the probed calls of the
// waker open at that moment, innermost first (probes name the calls'
// functions).
func goTimeline(g *variance.GoSched, calls []variance.Call, probes []variance.Probe, rt variance.GoRuntime, name func(uint64) string, kernel *sched.Timeline) (*sched.Timeline, [][]string) {
	reasons := rt.Reasons
	// The calls of each lane, by start (outer first at a tie), for the
	// probed calls a waker had open.
	byLane := map[uint32][]int{}
	for i, c := range calls {
		if c.TID&variance.GoroutineLane != 0 && !c.Unreturned && !c.Point {
			byLane[c.TID] = append(byLane[c.TID], i)
		}
	}
	for _, is := range byLane {
		slices.SortFunc(is, func(a, b int) int {
			return cmp.Or(cmp.Compare(calls[a].Start, calls[b].Start), cmp.Compare(calls[b].End, calls[a].End))
		})
	}
	// funcs are the wake-ups' functions (the blocked intervals'
	// WakerStack).
	var funcs [][]string
	stack := map[string]int32{}
	waker := func(w variance.GoWake) int32 {
		var fs []string
		if name != nil && w.Site != 0 {
			if f := name(w.Site); f != "" {
				fs = append(fs, f)
			}
		}
		if probes != nil {
			is := byLane[w.Waker]
			n, _ := slices.BinarySearchFunc(is, w.Time, func(i int, t uint64) int {
				if calls[i].Start <= t {
					return -1
				}
				return 1
			})
			for j := n - 1; j >= 0; j-- {
				c := calls[is[j]]
				if c.End < w.Time {
					continue
				}
				if f := probes[c.Probe].Function; !slices.Contains(fs, f) {
					fs = append(fs, f)
				}
			}
		}
		if len(fs) == 0 {
			return -1
		}
		k := strings.Join(fs, "\x00")
		i, ok := stack[k]
		if !ok {
			i = int32(len(funcs))
			stack[k] = i
			funcs = append(funcs, fs)
		}
		return i
	}
	tl := &sched.Timeline{Threads: map[uint32]*sched.Thread{}}
	lo, hi := map[uint32]uint64{}, map[uint32]uint64{}
	see := func(lane uint32, from, to uint64) {
		if lane&variance.GoroutineLane == 0 {
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
	parks := map[uint32][]variance.GoPark{}
	resumed := map[uint32][]variance.GoPark{} // by the thread they returned on, by End
	for _, p := range g.Parks {
		see(p.Lane, p.Start, p.End)
		parks[p.Lane] = append(parks[p.Lane], p)
		if p.TID != 0 && !p.Open {
			resumed[p.TID] = append(resumed[p.TID], p)
		}
	}
	for _, ps := range parks {
		slices.SortFunc(ps, func(a, b variance.GoPark) int { return cmp.Compare(a.Start, b.Start) })
	}
	for _, ps := range resumed {
		slices.SortFunc(ps, func(a, b variance.GoPark) int { return cmp.Compare(a.End, b.End) })
	}
	// on is the goroutine running on thread tid at t: the last one whose
	// park returned on it by t, when it has not parked again since; 0
	// when not known.
	on := func(tid uint32, t uint64) uint32 {
		ps := resumed[tid]
		i := sort.Search(len(ps), func(i int) bool { return ps[i].End > t })
		if i == 0 {
			return 0
		}
		last := ps[i-1]
		own := parks[last.Lane]
		j := sort.Search(len(own), func(j int) bool { return own[j].Start >= last.End })
		if j < len(own) && own[j].Start <= t {
			return 0
		}
		return last.Lane
	}
	// writer is, for the network poller's wake-up w, the goroutine whose
	// write made the descriptor ready, and when: the poller's thread
	// waited in the kernel for I/O (epoll_wait) until a thread of the
	// program woke it, then ran without waiting again to the readiness,
	// and the waker is the goroutine that thread ran at the wake-up. 0
	// when the kernel does not say (the poller found the readiness
	// without waiting, an interrupt or another program woke it: I/O
	// from outside the program).
	writer := func(w variance.GoWake) (uint32, uint64) {
		if kernel == nil || w.Poller == 0 {
			return 0, 0
		}
		kt := kernel.Thread(w.Poller)
		if kt == nil {
			return 0, 0
		}
		iv := kt.Intervals
		j := sort.Search(len(iv), func(i int) bool { return iv[i].To >= w.Time }) - 1
		if j+1 < len(iv) && iv[j+1].From < w.Time {
			j++ // the interval the readiness is in
		}
		for j >= 0 && (iv[j].State == sched.OnCPU || iv[j].State == sched.Runnable) {
			j--
		}
		if j < 0 || iv[j].State != sched.IO || iv[j].Waker == 0 || iv[j].Interrupt || iv[j].Waker == w.Poller {
			return 0, 0
		}
		return on(iv[j].Waker, iv[j].To), iv[j].To
	}
	source := func(lane uint32) {
		// Not a goroutine: a source, with a name and no states.
		if tl.Threads[lane] == nil {
			n := variance.LaneName(lane)
			if fd := variance.LaneFD(lane); fd >= 0 {
				n = fmt.Sprintf("%s fd %d", n, fd)
			}
			tl.Threads[lane] = &sched.Thread{TID: lane, Name: n, Source: true}
		}
	}
	created := map[uint32]variance.GoCreate{}
	for _, c := range g.Created() {
		created[c.Lane] = c
	}
	wakes := map[uint32][]variance.GoWake{}
	for _, w := range g.Wakeups(rt) {
		if variance.IsRuntimeLane(w.Waker) {
			source(w.Waker)
		} else {
			see(w.Waker, w.Time, w.Time)
		}
		wakes[w.Wakee] = append(wakes[w.Wakee], w)
		tl.Wakeups++
	}
	for lane, from := range lo {
		th := &sched.Thread{TID: lane, Name: fmt.Sprintf("goroutine %d", g.Goids[lane])}
		add := func(a, b uint64, st sched.State, waker uint32, ws int32, open bool) {
			if b > a || (b == a && open) {
				th.Intervals = append(th.Intervals, sched.Interval{From: a, To: b, State: st, Waker: waker, WakerStack: ws, Stack: -1, Open: open})
			}
		}
		// running adds a stretch the runtime ran the goroutine on thread
		// tid (0: not known) in the states the kernel's timeline of that
		// thread gives (preempted: runnable; in a blocking system call:
		// blocked), on-cpu where it gives none.
		running := func(a, b uint64, tid uint32) {
			var kt *sched.Thread
			if kernel != nil && tid != 0 {
				kt = kernel.Thread(tid)
			}
			if kt == nil {
				add(a, b, sched.OnCPU, 0, -1, false)
				return
			}
			kiv := kt.Intervals
			t := a
			for i := sort.Search(len(kiv), func(i int) bool { return kiv[i].To > a }); i < len(kiv) && kiv[i].From < b && t < b; i++ {
				lo, hi := max(kiv[i].From, t), min(kiv[i].To, b)
				if hi <= lo {
					continue
				}
				add(t, lo, sched.OnCPU, 0, -1, false)
				st := kiv[i].State
				if st == sched.Unknown {
					st = sched.OnCPU
				}
				add(lo, hi, st, 0, -1, false)
				t = hi
			}
			add(t, b, sched.OnCPU, 0, -1, false)
		}
		if c, ok := created[lane]; ok && c.At <= from {
			// A goroutine a time.AfterFunc's timer started: queued to
			// run by the timer's run, and before that the timer's wait
			// since the goroutine that armed it did (a created-by edge
			// to that goroutine).
			if c.Armed != 0 && c.Armed != lane && c.ArmedAt < c.At {
				source(variance.LaneTimer)
				add(c.ArmedAt, c.At, sched.Sleep, variance.LaneTimer, -1, false)
				tl.Handoffs = append(tl.Handoffs, sched.Handoff{From: sched.Point{TID: c.Armed, Time: c.ArmedAt}, To: sched.Point{TID: lane, Time: c.ArmedAt}})
			}
			add(c.At, from, sched.Runnable, 0, -1, false)
		}
		ps := parks[lane]
		ws := wakes[lane]
		slices.SortFunc(ws, func(a, b variance.GoWake) int { return cmp.Compare(a.Time, b.Time) })
		t := from
		var tid uint32 // the thread the goroutine runs on since t
		for _, p := range ps {
			if p.Start < t {
				continue // overlaps the one before: not a park of its own
			}
			running(t, p.Start, tid)
			tid = p.TID
			st := goState(p.Reason, reasons)
			i, _ := slices.BinarySearchFunc(ws, p.Start, func(w variance.GoWake, t uint64) int { return cmp.Compare(w.Time, t) })
			if i < len(ws) && ws[i].Time <= p.End && !p.Open {
				w := ws[i]
				switch {
				case w.Waker == variance.LaneTimer && w.Armed != 0 && w.Armed != lane && w.ArmedAt > p.Start && w.ArmedAt < w.Time:
					// Waiting for the goroutine that armed the timer, then
					// for the timer.
					add(p.Start, w.ArmedAt, sched.Lock, w.Armed, -1, false)
					add(w.ArmedAt, w.Time, sched.Sleep, w.Waker, -1, false)
				case w.Waker == variance.LaneTimer:
					add(p.Start, w.Time, sched.Sleep, w.Waker, -1, false)
				case variance.LaneName(w.Waker) == "(netpoll)":
					// Waiting for the goroutine whose write made the
					// descriptor ready, then for the poller.
					if wr, at := writer(w); wr != 0 && wr != lane && at > p.Start && at < w.Time {
						add(p.Start, at, st, wr, -1, false)
						add(at, w.Time, st, w.Waker, waker(w), false)
					} else {
						add(p.Start, w.Time, st, w.Waker, waker(w), false)
					}
				default:
					add(p.Start, w.Time, st, w.Waker, waker(w), false)
				}
				add(ws[i].Time, p.End, sched.Runnable, 0, -1, false)
			} else {
				add(p.Start, p.End, st, 0, -1, p.Open)
			}
			t = p.End
			tl.Switches++
		}
		running(t, hi[lane], tid)
		if len(th.Intervals) == 0 {
			continue
		}
		tl.Threads[lane] = th
		if tl.Start == 0 || th.Intervals[0].From < tl.Start {
			tl.Start = th.Intervals[0].From
		}
		tl.End = max(tl.End, th.Intervals[len(th.Intervals)-1].To)
	}
	return tl, funcs
}

// probeable reports whether refinement may propose f, a callee in the
// static call graph: tracer.Traceable, and not the Go runtime's
// morestack functions, which every Go function calls from its
// stack-check prologue and which go back to the function's start instead
// of returning (nothing to time; the tracer refuses them).
func probeable(f string) bool {
	return tracer.Traceable(f) && !strings.HasPrefix(f, "runtime.morestack")
}
