package syscallprog

import (
	"encoding/binary"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/bpfasm"
	"github.com/culprit-dev/culprit/internal/proc"
	"github.com/culprit-dev/culprit/internal/testutil"
	"github.com/culprit-dev/culprit/internal/unwind"
)

// steadyStack keeps this goroutine's stack where it is for the rest of
// the test: a memo is keyed by the thread's SP, and Go moves a goroutine's
// stack when it grows (a deeper call, a growth of what a test calls between
// two runs of the same code) or shrinks (at a collection). It grows the
// stack now, past what the test will use, and turns the collector off
// until the test ends.
func steadyStack(t *testing.T) {
	t.Helper()
	growStack(64)
	old := debug.SetGCPercent(-1)
	t.Cleanup(func() { debug.SetGCPercent(old) })
}

// growStack uses n frames of 4 KiB each.
//
//go:noinline
func growStack(n int) byte {
	var pad [4096]byte
	pad[n%4096] = byte(n)
	if n > 0 {
		return growStack(n-1) + pad[n%4096]
	}
	return pad[0]
}

func newMemos(t *testing.T) *bpfasm.Memos {
	t.Helper()
	ms, err := bpfasm.NewMemos()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ms.Close)
	return ms
}

// memoRecord is what the memo tests keep of a record.
type memoRecord struct {
	ip, sp, bp uint64
	memo       uint32
	memoized   bool
	stack      []byte
}

// countMemo counts the records with memo id's chain and those with a
// copy of n bytes; any other is an error.
func countMemo(t *testing.T, rs []memoRecord, id uint32, n int) (memo, whole int) {
	t.Helper()
	for _, r := range rs {
		switch {
		case r.memoized && r.memo == id && len(r.stack) == 0:
			memo++
		case !r.memoized && len(r.stack) == n:
			whole++
		default:
			t.Errorf("record %+v: neither memo %d's nor with its copy of %d bytes", r, id, n)
		}
	}
	return memo, whole
}

// codeWords returns, from copies of one place's stack (all at the same
// SP), up to n words that hold the same address of this program's code in
// each: return addresses, which stay while the thread calls from there.
func codeWords(t *testing.T, rs []memoRecord, n int) []unwind.Word {
	t.Helper()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	maps, err := proc.Maps(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	var lo, hi uint64
	for _, m := range maps {
		if m.Path == exe && m.Exec() {
			lo, hi = m.Start, m.End
		}
	}
	if hi == 0 {
		t.Fatal("this test's code mapping not found")
	}
	var ws []unwind.Word
	for off := 0; off+8 <= len(rs[0].stack) && len(ws) < n; off += 8 {
		v := binary.LittleEndian.Uint64(rs[0].stack[off:])
		if v < lo || v >= hi {
			continue
		}
		same := true
		for _, r := range rs[1:] {
			same = same && off+8 <= len(r.stack) && binary.LittleEndian.Uint64(r.stack[off:]) == v
		}
		if same {
			ws = append(ws, unwind.Word{Addr: rs[0].sp + uint64(off), Val: v})
		}
	}
	if len(ws) == 0 {
		t.Fatal("no return address of this program's code in the copies")
	}
	return ws
}

// TestMemoizedEntries: with a memo of this thread at its entries' IP and
// SP (bpfasm.Memos.Set) whose words its stack holds, those entries are written
// without a copy or a walk (UserStack Memoized, the memo's id), but for
// one use in bpfasm.MemoEvery, which goes the whole way; a memo with a word that
// does not hold, or with another BP, leaves them as they were; a memo
// forgotten too.
func TestMemoizedEntries(t *testing.T) {
	testutil.NeedRoot(t)
	steadyStack(t)
	ms := newMemos(t)
	tr, tid := traceSelf(t, Options{Syscalls: true, StackBytes: 1024, StackTops: true, Memos: ms, RingBytes: 4 << 20})
	defer tr.Close()
	defer runtime.UnlockOSThread()
	calls := func(n int) (rs []memoRecord) {
		belowFrames(4, func() {
			for i := 0; i < n; i++ {
				unix.Getppid()
			}
		})
		err := tr.Drain(func(ev *Event) {
			if ev.TID == tid && !ev.Exit && ev.Nr == unix.SYS_GETPPID {
				rs = append(rs, memoRecord{ev.IP, ev.SP, ev.BP, ev.Memo, ev.UserStack == Memoized, slices.Clone(ev.Stack)})
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	first := calls(10)
	if len(first) != 10 {
		t.Fatalf("%d entries, want 10", len(first))
	}
	for _, r := range first {
		if r.ip != first[0].ip || r.sp != first[0].sp || r.memoized || len(r.stack) != 1024 {
			t.Fatalf("entries before a memo: %+v and %+v, want the same IP and SP, each with its copy", first[0], r)
		}
	}
	ip, sp, bp := first[0].ip, first[0].sp, first[0].bp
	deps := unwind.Deps{Words: codeWords(t, first, 6)}
	id, err := ms.Set(tid, ip, sp, bp, &deps)
	if err != nil || id == 0 {
		t.Fatalf("Memos.Set: id %d, %v", id, err)
	}
	count := func(rs []memoRecord, id uint32) (memo, whole int) { return countMemo(t, rs, id, 1024) }
	const n = 200
	if memo, whole := count(calls(n), id); memo+whole != n || whole != n/bpfasm.MemoEvery {
		t.Errorf("with a memo of %d words: %d entries memoized, %d with their copy; want %d of %d with it (one use in %d)", len(deps.Words), memo, whole, n/bpfasm.MemoEvery, n, bpfasm.MemoEvery)
	}
	// Past its first MemoSteady uses, one in MemoSteady goes the whole way.
	const more = 2 * bpfasm.MemoSteady
	want := 0
	for u := n + 1; u <= n+more; u++ {
		if u%bpfasm.MemoEvery == 0 && (u < bpfasm.MemoSteady || u%bpfasm.MemoSteady == 0) {
			want++
		}
	}
	if memo, whole := count(calls(more), id); memo+whole != more || whole != want {
		t.Errorf("uses %d to %d of a memo: %d entries memoized, %d with their copy; want %d with it", n+1, n+more, memo, whole, want)
	}
	// A word that does not hold: no use.
	bad := unwind.Deps{Words: slices.Clone(deps.Words)}
	bad.Words[len(bad.Words)-1].Val ^= 8
	if id, err = ms.Set(tid, ip, sp, bp, &bad); err != nil || id == 0 {
		t.Fatalf("Memos.Set: id %d, %v", id, err)
	}
	if memo, _ := count(calls(50), id); memo != 0 {
		t.Errorf("a memo with a word that does not hold: %d entries memoized, want 0", memo)
	}
	// BP compared when the unwind used it.
	withBP := unwind.Deps{Words: deps.Words, UsedBP: true}
	if id, err = ms.Set(tid, ip, sp, bp+8, &withBP); err != nil || id == 0 {
		t.Fatalf("Memos.Set: id %d, %v", id, err)
	}
	if memo, _ := count(calls(50), id); memo != 0 {
		t.Errorf("a memo with another BP: %d entries memoized, want 0", memo)
	}
	if id, err = ms.Set(tid, ip, sp, bp, &withBP); err != nil || id == 0 {
		t.Fatalf("Memos.Set: id %d, %v", id, err)
	}
	if memo, _ := count(calls(50), id); memo < 45 {
		t.Errorf("a memo with the same BP: %d of 50 entries memoized", memo)
	}
	ms.Forget(tid, ip, sp)
	if memo, _ := count(calls(50), id); memo != 0 {
		t.Errorf("a memo forgotten: %d entries memoized, want 0", memo)
	}
	if l, r := tr.Lost(), tr.Reduced(); l != 0 || r != 0 {
		t.Errorf("%d records lost, %d without their copy", l, r)
	}
}

// TestMemoizedSwitches: a switch away outside a system call recorded (here
// the program records switches alone) at the IP and SP of a memo whose
// words hold is written without a copy or walk too.
func TestMemoizedSwitches(t *testing.T) {
	testutil.NeedRoot(t)
	steadyStack(t)
	ms := newMemos(t)
	tr, tid := traceSelf(t, Options{Switches: true, StackBytes: 1024, StackTops: true, Memos: ms, RingBytes: 4 << 20})
	defer tr.Close()
	defer runtime.UnlockOSThread()
	// sleeps sleeps n times and returns the switches asleep at the IP
	// and SP at (all of them when at is zero). The thread may also sleep
	// in the Go runtime (waiting for a P after a long call), elsewhere.
	var at [2]uint64
	sleeps := func(n int) (rs []memoRecord) {
		belowFrames(4, func() {
			for i := 0; i < n; i++ {
				ts := unix.NsecToTimespec(int64(200 * time.Microsecond))
				_ = unix.Nanosleep(&ts, nil)
			}
		})
		err := tr.Drain(func(ev *Event) {
			if ev.TID != tid || !ev.Switch || SwitchState(ev.Nr) != 1 {
				return
			}
			if at[0] == 0 || ev.IP == at[0] && ev.SP == at[1] {
				rs = append(rs, memoRecord{ev.IP, ev.SP, ev.BP, ev.Memo, ev.UserStack == Memoized, slices.Clone(ev.Stack)})
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	// The sleep's place is where the thread slept most.
	all := sleeps(10)
	times := map[[2]uint64]int{}
	for _, r := range all {
		k := [2]uint64{r.ip, r.sp}
		if times[k]++; times[k] > times[at] {
			at = k
		}
	}
	var first []memoRecord
	for _, r := range all {
		if r.ip == at[0] && r.sp == at[1] {
			first = append(first, r)
		}
	}
	if len(first) < 5 {
		t.Fatalf("%d switches asleep at one IP and SP, want 5 or more of 10", len(first))
	}
	deps := unwind.Deps{Words: codeWords(t, first, 6)}
	id, err := ms.Set(tid, at[0], at[1], first[0].bp, &deps)
	if err != nil || id == 0 {
		t.Fatalf("Memos.Set: id %d, %v", id, err)
	}
	rs := sleeps(100)
	memo, whole := countMemo(t, rs, id, 1024)
	if len(rs) < 50 || whole > 2+len(rs)/bpfasm.MemoEvery {
		t.Errorf("of %d switches asleep there, %d memoized and %d with their copy; want at most %d with it", len(rs), memo, whole, 2+len(rs)/bpfasm.MemoEvery)
	}
}
