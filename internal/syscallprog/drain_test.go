package syscallprog

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// TestDrainUntilLeavesLaterRecords: a drain ends at the first record
// stamped after its stop, given last, and the records after it are read
// by the next drain, in the ring's order; DrainInto reads each record into
// the room it is given, where its stack copy stays.
func TestDrainUntilLeavesLaterRecords(t *testing.T) {
	testutil.NeedRoot(t)
	tr, err := New(Options{Syscalls: true, StackBytes: 256, RingBytes: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if err := tr.Add(uint32(os.Getpid())); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		unix.Getppid()
	}
	type rec struct {
		time  uint64
		stack []byte
	}
	var mine []rec
	room := 0
	into := func() []byte {
		room++
		return make([]byte, 0, MaxRecord)
	}
	keep := func(ev *Event) {
		if ev.PID == uint32(os.Getpid()) && !ev.Exit {
			mine = append(mine, rec{ev.Time, ev.Stack})
		}
	}
	// The first drain stops at the first record of this process.
	var first []uint64
	if err := tr.DrainInto(0, into, func(ev *Event) { first = append(first, ev.Time) }); err != nil {
		t.Fatal(err)
	}
	if len(first) != 1 {
		t.Fatalf("a drain stopping after time 0 read %d records, want 1", len(first))
	}
	if room != 1 {
		t.Errorf("DrainInto asked for room %d times for one record", room)
	}
	// The reader's own calls (its allocations) go on filling the ring
	// while it reads: the drain ends at those made after it began.
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	if err := tr.DrainInto(uint64(ts.Nano()), into, keep); err != nil {
		t.Fatal(err)
	}
	if len(mine) < 150 {
		t.Fatalf("the next drain read %d entries of this process, want most of the 200 calls made", len(mine))
	}
	for i, r := range mine {
		if r.time < first[0] {
			t.Fatalf("record %d of the next drain stamped %d, before the first drain's last (%d)", i, r.time, first[0])
		}
		if len(r.stack) == 0 || cap(r.stack) < len(r.stack) || cap(r.stack) > MaxRecord {
			t.Fatalf("record %d's stack copy (len %d cap %d) does not lie in its own room", i, len(r.stack), cap(r.stack))
		}
	}
	// Each record had its own room: the copies were not overwritten.
	for i := 1; i < len(mine); i++ {
		if &mine[i].stack[0] == &mine[i-1].stack[0] {
			t.Fatalf("records %d and %d share their stack copy", i-1, i)
		}
	}
}
