package perf

import (
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// A ring holder owns a ring that a sampling event of another task writes to
// (here another thread of this process, as a recorder's target is another
// process), writes nothing itself, and decodes as the event it receives.
func TestRingHolder(t *testing.T) {
	h, r := holderOnCPU0(t)
	tid := unix.Gettid()
	ev, err := Open(Config{Frequency: 4999, StackBytes: 512, MaxStack: 16, UserRegs: RegsUnwind}, tid, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	if err := ev.SetOutput(h); err != nil {
		t.Fatal(err)
	}
	// 50 ms of this thread's CPU time, however long a busy machine takes
	// to give it: about 250 samples at 4999 Hz, of which the 64 KiB ring
	// holds some 90; 20 is the bound.
	cpu := func() time.Duration {
		var ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ts.Nano())
	}
	for end := cpu() + 50*time.Millisecond; cpu() < end; {
	}
	ev.Disable()
	_, recs := r.Peek(nil, nil)
	defer r.Release()
	samples := 0
	for _, raw := range recs {
		rec, err := Decode(raw, h.Layout)
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := rec.(*Sample); ok {
			if s.TID != uint32(tid) || len(s.Stack) == 0 {
				t.Fatalf("sample of tid %d with %d stack bytes, want tid %d", s.TID, len(s.Stack), tid)
			}
			// Decoded with the layout of the event writing to the ring
			// (SetOutput gave it to the holder): three registers.
			if s.StackSP == 0 || s.Regs[RegIP] == 0 || s.UserMode && s.Regs[RegIP] != s.IP || s.Regs[RegAX] != 0 {
				t.Fatalf("registers %x, sp %x, ip %x", s.Regs, s.StackSP, s.IP)
			}
			samples++
		}
	}
	if samples < 20 {
		t.Fatalf("%d samples in the holder's ring over 50 ms of CPU time at 4999 Hz (%d records)", samples, len(recs))
	}
}

// holderOnCPU0 pins the test's thread to CPU 0 (until the test ends) and
// opens a ring holder of CPU 0 with a ring of 16 pages, closed at the end.
func holderOnCPU0(t *testing.T) (*Event, *Ring) {
	t.Helper()
	testutil.NeedRoot(t)
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	t.Cleanup(testutil.PinThread(t, 0))
	h, err := OpenRingHolder(0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	r, err := MapRing(h, 16)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return h, r
}
