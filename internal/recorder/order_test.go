package recorder

import (
	"bytes"
	"testing"
	"time"

	"github.com/culprit-dev/culprit/internal/perf"
	"github.com/culprit-dev/culprit/internal/syscallprog"
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

// A drain's records are read into sysBuffer one after the other: each
// record's stack copy stays where it was read while the next ones are,
// a record without a copy gives its room back, a chunk too full for the
// largest record gives way to the next, and the next drain reuses the
// chunks.
func TestSysBufferKeepsCopies(t *testing.T) {
	var b sysBuffer
	const hdr = 8
	read := func(n int, fill byte) []byte {
		r := b.free()
		if len(r) != 0 || cap(r) < syscallprog.MaxRecord {
			t.Fatalf("free() gave len %d cap %d, want 0 and at least %d", len(r), cap(r), syscallprog.MaxRecord)
		}
		r = r[:hdr+n]
		for i := range r {
			r[i] = fill
		}
		st := r[hdr : hdr+n]
		if n == 0 {
			st = nil
		}
		b.keep(st)
		return st
	}
	var kept [][]byte
	for i := 0; i < 200; i++ {
		n := (i % 7) * 4000
		kept = append(kept, read(n, byte(i)))
	}
	if len(b.chunks) < 2 {
		t.Fatalf("%d chunks for 200 records of up to 24 KB, want more than one", len(b.chunks))
	}
	for i, st := range kept {
		for _, c := range st {
			if c != byte(i) {
				t.Fatalf("record %d's copy was overwritten by a later record", i)
			}
		}
	}
	chunks := len(b.chunks)
	b.reset()
	for i := 0; i < 200; i++ {
		read((i%7)*4000, 0)
	}
	if len(b.chunks) != chunks {
		t.Errorf("the second drain of the same records took %d chunks, the first %d", len(b.chunks), chunks)
	}
	// A copy outside the chunks (a record larger than free()'s room) keeps
	// the chunk's room free.
	used := b.used
	b.free()
	b.keep(make([]byte, 100, 200))
	if b.used != used {
		t.Errorf("a copy of its own moved the chunk's use from %d to %d", used, b.used)
	}
}
