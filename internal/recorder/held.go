package recorder

import (
	"slices"
	"strings"
	"sync"

	"github.com/culprit-dev/culprit/internal/perf"
)

// Launch must not release the command before its cpu-clock events write to
// mapped rings. The rings are made in the background instead, on ring
// holders (perf.OpenRingHolder), while the recorder creates its output and
// starts the command; the command's own events are then redirected into
// them. Mapping a ring (about 0.8 ms for 4 MiB) and the kernel's one-time
// wait when the first task-bound perf event is opened after a quiet second
// (an RCU grace period, 8–30 ms on the project's VMs) thus overlap that work
// instead of following it while the command waits at its exec.

// heldRings are cpu-clock rings being prepared for a launch.
type heldRings struct {
	done   chan struct{}
	events []*perf.Event // the holders
	rings  []*perf.Ring
}

// holdRings starts preparing one ring per CPU for the cpu-clock events; nil
// when cpu-clock is not the first event kind (the others get their own).
// Failures are silent: openKind then maps the missing rings itself.
func holdRings(o Options) *heldRings {
	if len(o.Events) > 0 && strings.TrimSpace(o.Events[0]) != EventsCPU {
		return nil
	}
	cpus, err := onlineCPUs()
	if err != nil {
		return nil
	}
	h := &heldRings{done: make(chan struct{})}
	// One goroutine per CPU: the kernel allocates and clears a ring's
	// pages when it is mapped (3–6 ms for 4 MiB on a busy VM), and the
	// command waits for every ring.
	events := make([]*perf.Event, len(cpus))
	rings := make([]*perf.Ring, len(cpus))
	var wg sync.WaitGroup
	for i, cpu := range cpus {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { recover() }() // openKind maps what is missing
			ev, err := perf.OpenRingHolder(cpu)
			if err != nil {
				return
			}
			r, err := perf.MapRingAtMost(ev, o.RingPages, minRingPages)
			if err != nil {
				ev.Close()
				return
			}
			events[i], rings[i] = ev, r
		}()
	}
	go func() {
		defer close(h.done)
		defer func() { recover() }() // what is not kept is opened again by openKind
		wg.Wait()
		for i, r := range rings {
			if r != nil {
				h.events = append(h.events, events[i])
				h.rings = append(h.rings, r)
			}
		}
	}()
	return h
}

// adopt waits for the held rings and makes them the rings of the session's
// cpu-clock events (kinds[0]), to which openKind then redirects them.
func (s *session) adopt(h *heldRings) {
	if h == nil {
		return
	}
	<-h.done
	for i, r := range h.rings {
		if s.kinds[0].tp != nil || !slices.Contains(s.cpus, r.Event.CPU) || s.ring(r.Event.CPU, &s.kinds[0]) != nil {
			r.Close()
			h.events[i].Close()
			continue
		}
		s.smallRing(r, s.o.RingPages)
		s.events = append(s.events, h.events[i])
		s.rings = append(s.rings, ring{Ring: r, kind: &s.kinds[0], last: monotonic()})
	}
	h.events, h.rings = nil, nil
}

// release frees what was not adopted.
func (h *heldRings) release() {
	if h == nil {
		return
	}
	<-h.done
	for i, r := range h.rings {
		r.Close()
		h.events[i].Close()
	}
	h.events, h.rings = nil, nil
}
