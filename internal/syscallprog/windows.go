package syscallprog

import (
	"fmt"
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
	// opened (after the attachment) and closing (before the detachment):
	// every call between them is recorded (in the tests: bounds).
	opened, closing uint64
}

// windows is the state of the cycle that attaches and detaches the system
// call programs.
type windows struct {
	on, period time.Duration
	stop, done chan struct{}
	mu         sync.Mutex
	spans      []Window
	gen        uint64
	err        error
	started    bool // the cycle runs (from the first Add)
}

func monotonicNow() uint64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Nano())
}

// cycle, from the first Add, detaches the system call programs after each window's WindowOn
// and attaches them again at the next window's start, until Close. At a
// window's close the entry program goes first, then the exit program (the
// exits of calls entered before still pair with their entries), then the
// generation moves on, so that a state written in the window is of an
// earlier one. At a window's start the exit program comes first: an exit
// before the entry program runs finds its thread's state of an earlier
// window and is not recorded.
func (t *Tracer) cycle() {
	w := t.win
	defer close(w.done)
	attached := true
	for {
		wait := w.on
		if !attached {
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
		if attached {
			closing := monotonicNow()
			for _, i := range []int{0, 1} {
				t.links[i].Close()
				t.links[i] = nil
			}
			w.gen++
			err := t.wgen.Update(uint32(0), w.gen, 0)
			w.mu.Lock()
			w.spans[len(w.spans)-1].closing = closing
			w.spans[len(w.spans)-1].End = monotonicNow()
			w.mu.Unlock()
			if err != nil {
				w.fail(fmt.Errorf("closing a system call window: %w", err))
				return
			}
		} else {
			start := monotonicNow()
			for _, i := range []int{1, 0} {
				l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: [2]string{"sys_enter", "sys_exit"}[i], Program: t.progs[i]})
				if err != nil {
					w.fail(fmt.Errorf("opening a system call window: %w", err))
					return
				}
				t.links[i] = l
			}
			w.mu.Lock()
			w.spans = append(w.spans, Window{Start: start, opened: monotonicNow()})
			w.mu.Unlock()
		}
		attached = !attached
	}
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
	if t.win == nil {
		return nil, nil
	}
	t.win.mu.Lock()
	defer t.win.mu.Unlock()
	return append([]Window(nil), t.win.spans...), t.win.err
}
