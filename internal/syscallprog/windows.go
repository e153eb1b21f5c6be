package syscallprog

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// Window is a time the system call programs were attached
// (Options.WindowOn), in CLOCK_MONOTONIC ns as the records' times: from
// before their attachment to after their detachment; End 0: still open.
type Window struct {
	Start, End uint64
	// Scale is what each call recorded in the window stands for:
	// WindowPeriod/WindowOn, or 1 for a time the programs stayed attached
	// (Options.WindowAbove: the calls came below the rate).
	Scale float64
	// opened (after the attachment) and closing (before the detachment):
	// every call between them is recorded (in the tests: bounds).
	opened, closing uint64
	gen             uint64 // the generation of the calls recorded in it
}

// windows is the state of the cycle that attaches and detaches the system
// call programs.
type windows struct {
	on, period time.Duration
	above      float64       // Options.WindowAbove
	span       time.Duration // Options.WindowRateSpan (WindowPeriod when not given)
	stop, done chan struct{}
	mu         sync.Mutex
	spans      []Window
	scales     []float64 // by generation
	gen        uint64
	err        error
	started    bool // the cycle runs (from the first Add)
}

func monotonicNow() uint64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Nano())
}

// cycle, from the first Add, detaches the system call programs after each
// window's WindowOn and attaches them again at the next window's start,
// until Close. At a window's close the entry program goes first, then the
// exit program (the exits of calls entered before still pair with their
// entries), then the generation moves on, so that a state written in the
// window is of an earlier one. At a window's start the exit program comes
// first: an exit before the entry program runs finds its thread's state
// of an earlier window and is not recorded.
//
// With a rate (Options.WindowAbove), the programs stay attached (a window
// of scale 1) while the traced threads' calls, counted by the entry
// program, come at most at that rate over any rate span
// (Options.WindowRateSpan); above, the
// generation moves on without a detachment and the windows cycle from
// there; a window whose calls came at less than half the rate is followed
// by programs attached for good again. From a span after the programs
// became steady, the count is checked every WindowOn over the span
// before (sliding), not once a span: a load that starts later
// (a server's, after its start-up) is found within about WindowOn, not a
// span or two later; each span more of it with every call recorded
// costs the program what the windows are there to save.
func (t *Tracer) cycle() {
	w := t.win
	defer close(w.done)
	ratio := float64(w.period) / float64(w.on)
	attached := true
	steady := w.above > 0 // attached, calls below the rate
	resume := false       // steady again from the next attachment
	callsAt, at := t.count(slotCalls), monotonicNow()
	// While steady, the count at each check of the last period and
	// more, the oldest first (from the time it became steady).
	type mark struct{ at, calls uint64 }
	marks := []mark{{at, callsAt}}
	// over says whether the calls of the period before now came above
	// the rate. Not before a whole period has passed since the programs
	// became steady: a rate over a period needs one, and a run shorter
	// than a period is recorded call by call, as before the check was
	// sliding (a burst of calls at a short run's start is not a load).
	over := func(now uint64) bool {
		calls := t.count(slotCalls)
		marks = append(marks, mark{now, calls})
		for len(marks) > 1 && now-marks[1].at >= uint64(w.span) {
			marks = marks[1:]
		}
		span := now - marks[0].at
		return span >= uint64(w.span) && float64(calls-marks[0].calls) > w.above*float64(span)/1e9
	}
	rate := func(now uint64) float64 {
		calls := t.count(slotCalls)
		r := float64(calls-callsAt) / (float64(now-at) / 1e9)
		callsAt, at = calls, now
		return r
	}
	// next moves the generation on to one whose calls stand for scale
	// each, the window in progress ending at closing.
	next := func(closing uint64, scale float64) error {
		w.gen++
		w.mu.Lock()
		w.scales = append(w.scales, scale)
		w.mu.Unlock()
		v := w.gen
		if scale > 1 {
			v |= 1 << windowedBit
		}
		err := t.wgen.Update(uint32(0), v, 0)
		w.mu.Lock()
		w.spans[len(w.spans)-1].closing = closing
		w.spans[len(w.spans)-1].End = monotonicNow()
		w.mu.Unlock()
		return err
	}
	for {
		wait := w.period
		switch {
		case steady:
			wait = w.on
		case attached:
			wait = w.on
		default:
			wait = w.period - w.on
		}
		timer := time.NewTimer(wait)
		select {
		case <-w.stop:
			timer.Stop()
			if attached {
				w.mu.Lock()
				w.spans[len(w.spans)-1].closing = monotonicNow()
				w.spans[len(w.spans)-1].End = w.spans[len(w.spans)-1].closing
				w.mu.Unlock()
			}
			return
		case <-timer.C:
		}
		now := monotonicNow()
		if steady {
			if !over(now) {
				continue
			}
			// Above the rate: a window starts now, without a
			// detachment, its calls standing for PERIOD/ON each.
			if err := next(now, ratio); err != nil {
				w.fail(fmt.Errorf("starting system call windows: %w", err))
				return
			}
			w.mu.Lock()
			w.spans = append(w.spans, Window{Start: now, opened: monotonicNow(), Scale: ratio, gen: w.gen})
			w.mu.Unlock()
			steady = false
			callsAt, at = t.count(slotCalls), monotonicNow()
			continue
		}
		if attached {
			for _, i := range []int{0, 1} {
				t.links[i].Close()
				t.links[i] = nil
			}
			if err := t.setOpen(false); err != nil {
				w.fail(fmt.Errorf("closing a system call window: %w", err))
				return
			}
			scale := ratio
			if w.above > 0 && rate(now) < w.above/2 {
				// Calls came at less than half the rate: the programs
				// stay attached from the next window on.
				resume, scale = true, 1
			}
			if err := next(now, scale); err != nil {
				w.fail(fmt.Errorf("closing a system call window: %w", err))
				return
			}
		} else {
			// Listed from before the attachment: a reader of Windows
			// meanwhile sees the window that a call made now may be
			// recorded in, never a gap that later turns out a window;
			// opened (no call surely recorded) is set once attached.
			w.mu.Lock()
			w.spans = append(w.spans, Window{Start: monotonicNow(), opened: math.MaxUint64, Scale: w.scales[w.gen], gen: w.gen})
			w.mu.Unlock()
			if err := t.setOpen(true); err != nil {
				w.fail(fmt.Errorf("opening a system call window: %w", err))
				return
			}
			for _, i := range []int{1, 0} {
				l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: [2]string{"sys_enter", "sys_exit"}[i], Program: t.progs[i]})
				if err != nil {
					w.mu.Lock()
					w.spans = w.spans[:len(w.spans)-1]
					w.mu.Unlock()
					if i == 0 {
						t.links[1].Close()
						t.links[1] = nil
					}
					w.fail(fmt.Errorf("opening a system call window: %w", err))
					return
				}
				t.links[i] = l
			}
			w.mu.Lock()
			w.spans[len(w.spans)-1].opened = monotonicNow()
			w.mu.Unlock()
			callsAt, at = t.count(slotCalls), monotonicNow()
			marks = append(marks[:0], mark{at, callsAt})
			steady, resume = resume, false
		}
		attached = !attached
	}
}

// setOpen tells the switch program whether the system call programs are
// attached (or about to be): between windows it records no switch
// (betweenWindows). Set before an attachment and after
// a detachment, so that a switch the programs might see inside a window
// is recorded.
func (t *Tracer) setOpen(open bool) error {
	v := uint64(0)
	if open {
		v = 1
	}
	return t.wgen.Update(winOpenKey, v, 0)
}

func (w *windows) fail(err error) {
	w.mu.Lock()
	w.err = err
	w.mu.Unlock()
}

// Windows returns the windows the system call programs were attached in
// so far (Options.WindowOn; nil without), and the error that ended the
// cycle early, if any: no system call is recorded after it.
func (t *Tracer) Windows() ([]Window, error) {
	return t.WindowsFrom(0)
}

// WindowsFrom is Windows without the first i windows: a reader that has
// handled those copies only the windows since, not the whole list, which
// grows by ten a second for as long as the recording runs.
func (t *Tracer) WindowsFrom(i int) ([]Window, error) {
	if t.win == nil {
		return nil, nil
	}
	t.win.mu.Lock()
	defer t.win.mu.Unlock()
	i = min(max(i, 0), len(t.win.spans))
	return append([]Window(nil), t.win.spans[i:]...), t.win.err
}

// ScaleAt returns what a context switch recorded at time at (the
// records' clock) stands for when switches are recorded in the windows
// only (SwitchesWindowed): the scale of the window at lies in, 1 outside
// the windows (a switch that found its window open stamped as it closed)
// or without windows.
func (t *Tracer) ScaleAt(at uint64) float64 {
	if t.win == nil {
		return 1
	}
	t.win.mu.Lock()
	defer t.win.mu.Unlock()
	ws := t.win.spans
	i, _ := slices.BinarySearchFunc(ws, at, func(w Window, at uint64) int { return cmp.Compare(w.Start, at+1) })
	// ws[i-1] is the last window that started at or before at.
	if i > 0 && (ws[i-1].End == 0 || at <= ws[i-1].End) {
		return max(ws[i-1].Scale, 1)
	}
	return 1
}

// Scale returns what each call recorded in window generation gen (an
// entry's Event.Window) stands for: 1 without windows or while the
// programs stayed attached below the rate (Options.WindowAbove),
// WindowPeriod/WindowOn in the windows.
func (t *Tracer) Scale(gen uint64) float64 {
	if t.win == nil {
		return 1
	}
	t.win.mu.Lock()
	defer t.win.mu.Unlock()
	if gen < uint64(len(t.win.scales)) {
		return t.win.scales[gen]
	}
	return t.win.scales[len(t.win.scales)-1]
}
