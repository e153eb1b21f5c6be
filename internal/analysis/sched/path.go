package sched

import "slices"

// Point is a thread at a time.
type Point struct {
	TID  uint32
	Time uint64
}

// Handoff is a created-by edge: work that thread From.TID handed over at
// From.Time (an enqueue) and thread To.TID took up at To.Time (the
// matching dequeue). Callers that know their program's queues pass them to
// CriticalPath.
type Handoff struct{ From, To Point }

// Segment is a stretch of one thread's time on a critical path.
type Segment struct {
	TID      uint32
	From, To uint64
	State    State
	// Waker names, for a blocked segment, the thread that ended the wait
	// (0: not known, or an interrupt). A blocked segment appears on a
	// path only when its waker is not known, or after the wake-up, up to
	// the thread's queueing (Interval.Woken); otherwise the waker's own
	// segments stand for the wait.
	Waker uint32
	// For is, for segments that stand for another thread's wait (the
	// waker's work while that thread was blocked), the waiting thread, and
	// Wait the state it waited in (Lock, IO, Sleep); 0 and Unknown on the
	// path's own threads.
	For  uint32
	Wait State
}

// Duration is To - From.
func (s Segment) Duration() uint64 { return s.To - s.From }

// maxDepth bounds how many wake-up and hand-off edges a walk follows into
// each other.
const maxDepth = 64

// CriticalPath walks back from end to the time from (VProfiler's
// Algorithm 2, as repaired in the implementation notes), and returns the
// segments that make up that span in time order; their durations add up to
// end.Time - from. On a thread, time on the CPU, runnable and stopped is on
// the path as it is. A blocked interval with a known waker is replaced by
// the waker's own path over the same span, up to the wake-up (so a lock
// wait becomes the holder's time until it released the lock, a condition
// wait the signaller's); a wait a Source ended (a timer, the I/O a
// poller waited on) is a segment of the source's, in the wait's state. A hand-off landing on the thread (a dequeue) ends
// the walk on it: the path goes on in the thread that handed the work over,
// from the hand-off's start, and the time between is Queued (the
// timeline's own Handoffs too). Time before a
// thread's first recorded event is Unknown.
func (tl *Timeline) CriticalPath(from uint64, end Point, handoffs []Handoff) []Segment {
	if end.Time <= from {
		return nil
	}
	w := walker{tl: tl, handoffs: handoffs}
	w.walk(end.TID, from, end.Time, 0, 0, Unknown)
	slices.Reverse(w.out)
	return w.out
}

type walker struct {
	tl       *Timeline
	handoffs []Handoff
	out      []Segment // in reverse time order while walking
}

func (w *walker) emit(s Segment) {
	if s.To <= s.From {
		return
	}
	// Merge with the segment emitted last (just after it in time) when
	// nothing tells them apart.
	if n := len(w.out); n > 0 {
		l := &w.out[n-1]
		if l.TID == s.TID && l.State == s.State && l.Waker == s.Waker && l.For == s.For && l.Wait == s.Wait && l.From == s.To {
			l.From = s.From
			return
		}
	}
	w.out = append(w.out, s)
}

// handoff returns the latest hand-off landing on tid in (lo, hi].
func (w *walker) handoff(tid uint32, lo, hi uint64) (Handoff, bool) {
	var best Handoff
	found := false
	for _, h := range slices.Concat(w.handoffs, w.tl.Handoffs) {
		if h.To.TID == tid && h.To.Time > lo && h.To.Time <= hi && (!found || h.To.Time > best.To.Time) {
			best, found = h, true
		}
	}
	return best, found
}

// walk emits, latest first, the path of thread tid over (lo, hi]; for and
// wait are set on the segments when the walk stands for a blocked thread.
func (w *walker) walk(tid uint32, lo, hi uint64, depth int, forTID uint32, wait State) {
	th := w.tl.Threads[tid]
	if depth < maxDepth {
		if h, ok := w.handoff(tid, lo, hi); ok {
			w.span(th, tid, h.To.Time, hi, depth, forTID, wait)
			from := max(h.From.Time, lo)
			w.emit(Segment{TID: tid, From: from, To: h.To.Time, State: Queued, For: forTID, Wait: wait})
			if from > lo {
				w.walk(h.From.TID, lo, from, depth+1, forTID, wait)
			}
			return
		}
	}
	w.span(th, tid, lo, hi, depth, forTID, wait)
}

// span emits the path of thread th over (lo, hi], with no hand-off in it.
func (w *walker) span(th *Thread, tid uint32, lo, hi uint64, depth int, forTID uint32, wait State) {
	t := hi
	for t > lo {
		var iv Interval
		i := -1
		if th != nil {
			if j := search(th.Intervals, t); j < len(th.Intervals) && th.Intervals[j].From < t {
				i, iv = j, th.Intervals[j]
			}
		}
		if i < 0 {
			w.emit(Segment{TID: tid, From: lo, To: t, State: Unknown, For: forTID, Wait: wait})
			return
		}
		from := max(iv.From, lo)
		if src := w.tl.Threads[iv.Waker]; iv.State.Blocked() && src != nil && src.Source {
			// A wait a source ended (a timer, the I/O a poller waited
			// on): the wait itself, on the source, in the wait's state.
			w.emit(Segment{TID: iv.Waker, From: from, To: t, State: iv.State, For: tid, Wait: iv.State})
		} else if iv.State.Blocked() && iv.Waker != 0 && iv.Waker != tid && depth < maxDepth {
			// The wait ends at the wake-up (iv.To, or iv.Woken when the
			// thread's queueing after it ends the wait): until then the
			// path is the waker's, after it the thread's own.
			woken := t
			if iv.Woken != 0 {
				woken = min(max(iv.Woken, from), t)
			}
			w.emit(Segment{TID: tid, From: woken, To: t, State: iv.State, Waker: iv.Waker, For: forTID, Wait: wait})
			if woken > from {
				w.walk(iv.Waker, from, woken, depth+1, tid, iv.State)
			}
		} else {
			w.emit(Segment{TID: tid, From: from, To: t, State: iv.State, Waker: iv.Waker, For: forTID, Wait: wait})
		}
		t = from
	}
}

// Split adds up the time of a path's segments by the state their own
// thread was in, and by the state of the wait they stand for: OnCPU time
// of a lock holder standing for a Lock wait counts in wait[Lock].
func Split(path []Segment) (own, wait map[State]uint64) {
	own, wait = map[State]uint64{}, map[State]uint64{}
	for _, s := range path {
		own[s.State] += s.Duration()
		if s.Wait != Unknown {
			wait[s.Wait] += s.Duration()
		}
	}
	return own, wait
}
