package syscallprog

import (
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// TestDrainIntoLeavesLaterRecords: a drain ends at the first record
// stamped after its stop, given last, and the records after it are read
// by the next drain, in the ring's order; DrainInto reads each record into
// the room it is given, where its stack copy stays.
func TestDrainIntoLeavesLaterRecords(t *testing.T) {
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
		tid   uint32
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
			mine = append(mine, rec{ev.Time, ev.TID, ev.Stack})
		}
	}
	// The first drain stops at the first record of this process.
	var first []rec
	if err := tr.DrainInto(0, into, func(ev *Event) { first = append(first, rec{time: ev.Time, tid: ev.TID}) }); err != nil {
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
	// A thread's records come in its order; those of threads on other
	// CPUs may come stamped a little earlier than one already read (each
	// program reads the clock before it reserves its record).
	for i, r := range mine {
		if r.tid == first[0].tid && r.time < first[0].time {
			t.Fatalf("record %d of the next drain stamped %d, before its thread's record the first drain read (%d)", i, r.time, first[0].time)
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

// TestRingWakesItsReaderPastAQuarter: records do not wake the ring's
// reader while the ring is at most a quarter full, and do once it is
// more (the recorder then drains at once instead of at its poll interval,
// before the ring is half full and records go without their copy).
func TestRingWakesItsReaderPastAQuarter(t *testing.T) {
	testutil.NeedRoot(t)
	const ring = 1 << 20
	tr, err := New(Options{Syscalls: true, StackBytes: 1024, RingBytes: ring})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(ep)
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, tr.RingFD(), &unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLET}); err != nil {
		t.Fatal(err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := tr.Add(uint32(os.Getpid())); err != nil {
		t.Fatal(err)
	}
	ev := make([]unix.EpollEvent, 1)
	woken := func() bool {
		n, err := unix.EpollWait(ep, ev, 0)
		if err != nil && err != unix.EINTR {
			t.Fatal(err)
		}
		return n > 0
	}
	// A record is about 1.1 KiB: 100 calls fill a tenth of the ring, 500
	// half of it. Each turn makes two calls, the check's epoll_wait too.
	calls := 0
	for calls < 500 {
		unix.Getppid()
		calls += 2
		if woken() {
			break
		}
	}
	if calls >= 500 {
		t.Fatalf("not woken after %d calls, the ring about half full", calls)
	}
	// The process's other threads (the runtime's) add records of their
	// own calls: what the ring holds, not this thread's calls, says how
	// full it was (no more than now, as nothing was read).
	if n := tr.rd.AvailableBytes(); n <= ring/4 {
		t.Errorf("woken after %d calls with %d bytes in the ring, not past a quarter of its %d", calls, n, ring)
	}
}
