package perf

import (
	"bytes"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Records Peek returns stay as they are, in the ring's memory, until
// Release: the kernel drops what it has no room for rather than writing
// over them (a Lost record says so once there is room); those ReleaseFirst
// leaves come again at the next Peek. After Release the
// ring fills again and records that wrap around its end come whole, from a
// copy.
func TestRingPeekRelease(t *testing.T) {
	h, r := holderOnCPU0(t)
	ev, err := Open(Config{Frequency: 4999, StackBytes: 512, MaxStack: 16, UserRegs: RegsUnwind}, unix.Gettid(), 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	if err := ev.SetOutput(h); err != nil {
		t.Fatal(err)
	}
	spin := func(d time.Duration) {
		var ts unix.Timespec
		cpu := func() time.Duration {
			if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
				t.Fatal(err)
			}
			return time.Duration(ts.Nano())
		}
		for end := cpu() + d; cpu() < end; {
		}
	}
	decode := func(recs [][]byte) (samples, lost int) {
		for _, b := range recs {
			rec, err := Decode(b, h.Layout)
			if err != nil {
				t.Fatal(err)
			}
			switch rec.(type) {
			case *Sample:
				samples++
			case *Lost:
				lost++
			}
		}
		return
	}
	// 50 ms of CPU time at 4999 Hz: some 250 samples of about 700
	// bytes, more than the 64 KiB ring holds.
	spin(50 * time.Millisecond)
	_, first := r.Peek(nil, nil)
	if n, _ := decode(first); n < 20 {
		t.Fatalf("%d samples peeked after 50 ms of CPU time at 4999 Hz", n)
	}
	kept := make([][]byte, len(first))
	for i, b := range first {
		kept[i] = bytes.Clone(b)
	}
	spin(50 * time.Millisecond)
	_, more := r.Peek(nil, nil)
	for i, b := range first {
		if !bytes.Equal(b, kept[i]) {
			t.Fatalf("peeked record %d of %d changed before Release", i, len(first))
		}
	}
	// The first 50 ms wrote more than the ring holds: it was full.
	if len(more) > 0 {
		t.Errorf("%d more records in a full ring whose records were not released", len(more))
	}
	// Released but for the first two: the others come again.
	r.ReleaseFirst(2)
	_, again := r.Peek(nil, nil)
	if len(again) < len(first)-2 || !bytes.Equal(again[0], kept[2]) || !bytes.Equal(again[len(first)-3], kept[len(first)-1]) {
		t.Fatalf("after releasing 2 of %d records, %d come again, not the other %d", len(first), len(again), len(first)-2)
	}
	r.Release()
	var all [][]byte
	var buf []byte
	lost, wrapped := 0, 0
	for range 4 {
		spin(50 * time.Millisecond)
		buf, all = r.Peek(buf[:0], all[:0])
		_, l := decode(all)
		lost += l
		if len(buf) > 0 {
			wrapped++
		}
		r.Release()
	}
	if lost == 0 {
		t.Errorf("no Lost record after a full ring was released")
	}
	// 700-byte records in a 64 KiB ring filled four times over: one
	// lies across the end at nearly every turn.
	if wrapped == 0 {
		t.Errorf("no record wrapped around the ring's end in four fillings")
	}
	ev.Disable()
	buf, all = r.Peek(buf[:0], all[:0])
	decode(all)
	r.Release()
	if r.meta.Data_tail != r.meta.Data_head {
		t.Errorf("after Release the tail is %d, the head %d", r.meta.Data_tail, r.meta.Data_head)
	}
}
