package recorder

import (
	"bytes"
	"testing"
	"time"

	"github.com/culprit-dev/culprit/internal/perf"
)

// Two drains of two rings, as on two CPUs: the first ring is read before
// the kernel writes an mmap record into it (stamped 5), the second after
// the same thread, moved to the other CPU, was sampled in the new mapping
// (stamped 6). The first drain began at 4 and must not handle the sample:
// the second drain reads the mmap, and handles it first, then the sample,
// whose stack copy and chains survive the reuse of the first drain's
// buffers.
func TestDrainsKeepTimeOrder(t *testing.T) {
	buf := []byte{1, 2, 3, 4}
	chain := []uint64{0x7fffffffe00d, 0x401234}
	s := &session{}
	smp := &perf.Sample{Header: perf.Header{Time: 6, CPU: 1}, User: chain, Stack: buf}
	s.items = append(s.items[:0], item{time: 3, rec: &perf.Comm{Header: perf.Header{Time: 3}}}, item{time: 6, rec: smp})
	var got []uint64
	for _, it := range s.ordered(4) {
		got = append(got, it.time)
	}
	if len(got) != 1 || got[0] != 3 {
		t.Fatalf("first drain (begun at 4) handled records stamped %v, want [3]", got)
	}
	// The next drain reuses the buffers the sample was decoded into.
	copy(buf, []byte{9, 9, 9, 9})
	chain[0] = 0
	s.items = append(s.items[:0], item{time: 5, rec: &perf.Mmap{Header: perf.Header{Time: 5}, Path: "[uprobes]"}})
	var order []string
	for _, it := range s.ordered(10) {
		switch r := it.rec.(type) {
		case *perf.Mmap:
			order = append(order, "mmap")
		case *perf.Sample:
			order = append(order, "sample")
			if !bytes.Equal(r.Stack, []byte{1, 2, 3, 4}) || r.User[0] != 0x7fffffffe00d {
				t.Errorf("the kept sample's stack copy %v and chain %#x changed with the drain's buffers", r.Stack, r.User)
			}
		}
	}
	if len(order) != 2 || order[0] != "mmap" || order[1] != "sample" {
		t.Errorf("second drain handled %v, want [mmap sample]", order)
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
