package recorder

import (
	"bytes"
	"testing"
	"time"

	"github.com/culprit-dev/culprit/internal/perf"
)

// Two drains, as on two CPUs: the first CPU's ring is read before the
// kernel writes an mmap record into it (stamped 5), the system call
// program's ring buffer after the same thread, moved to the other CPU,
// made a call in the new mapping (stamped 6). The first drain began at 4
// and must not handle the call: the second drain reads the mmap and
// handles it first, then the call, whose stack copy survives the reuse of
// the first drain's buffers. (A perf ring's records a drain does not
// handle stay in the ring: perf.Ring.ReleaseFirst.)
func TestDrainsKeepTimeOrder(t *testing.T) {
	buf := []byte{1, 2, 3, 4}
	s := &session{}
	call := &sysEvent{stack: buf}
	call.ev.Time, call.ev.CPU = 6, 1
	s.items = append(s.items[:0], item{time: 3, rec: &perf.Comm{Header: perf.Header{Time: 3}}}, item{time: 6, rec: call})
	var got []uint64
	for _, it := range s.ordered(4) {
		got = append(got, it.time)
	}
	if len(got) != 1 || got[0] != 3 {
		t.Fatalf("first drain (begun at 4) handled records stamped %v, want [3]", got)
	}
	// The next drain reuses the buffers the sample was decoded into.
	copy(buf, []byte{9, 9, 9, 9})
	s.items = append(s.items[:0], item{time: 5, rec: &perf.Mmap{Header: perf.Header{Time: 5}, Path: "[uprobes]"}})
	var order []string
	for _, it := range s.ordered(10) {
		switch r := it.rec.(type) {
		case *perf.Mmap:
			order = append(order, "mmap")
		case *sysEvent:
			order = append(order, "call")
			if !bytes.Equal(r.stack, []byte{1, 2, 3, 4}) {
				t.Errorf("the kept call's stack copy %v changed with the drain's buffers", r.stack)
			}
		}
	}
	if len(order) != 2 || order[0] != "mmap" || order[1] != "call" {
		t.Errorf("second drain handled %v, want [mmap call]", order)
	}
	if len(s.later) != 0 {
		t.Errorf("%d records kept after a drain that handles all", len(s.later))
	}
}

// A drain handles what was stamped up to orderMargin before it began.
func TestOrderedUntil(t *testing.T) {
	now := uint64(10 * time.Second)
	if got := orderedUntil(now); got != now-uint64(orderMargin) {
		t.Errorf("orderedUntil(%d) = %d", now, got)
	}
	if got := orderedUntil(1); got != 0 {
		t.Errorf("orderedUntil(1) = %d, want 0", got)
	}
}

// BenchmarkOrdered: one drain's time order, as under a server's load with
// system call events (about 500 records a drain: two CPUs' rings and the
// system call program's, each in time order, interleaved in time).
func BenchmarkOrdered(b *testing.B) {
	const perSource = 170
	var items []item
	for src := uint64(0); src < 3; src++ {
		for i := uint64(0); i < perSource; i++ {
			items = append(items, item{time: 1000 + i*30 + src*7 + (i*src)%11, rec: &perf.Comm{}})
		}
	}
	s := &session{}
	b.ReportAllocs()
	for b.Loop() {
		s.items = append(s.items[:0], items...)
		s.ordered(1000 + perSource*30 - 500)
		s.later = s.later[:0]
	}
}
