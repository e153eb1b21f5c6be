package syscallprog

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// threadStates runs f with the per-thread state in task storage (the
// kernel must have it) and in the hash keyed by thread id that kernels
// without it use.
func threadStates(t *testing.T, f func(t *testing.T, hash bool)) {
	t.Run("task-storage", func(t *testing.T) {
		testutil.Need(t, HaveTaskStorage(), "task storage for raw tracepoint programs (Linux 5.11)")
		f(t, false)
	})
	t.Run("thread-hash", func(t *testing.T) { f(t, true) })
}

// TestUsesTaskStorage: New keeps the per-thread state in task storage
// where the kernel has it, in the hash where it does not, or when asked.
func TestUsesTaskStorage(t *testing.T) {
	testutil.NeedRoot(t)
	for _, force := range []bool{false, true} {
		tr, err := New(Options{Syscalls: true, threadHash: force})
		if err != nil {
			t.Fatal(err)
		}
		want := force || !HaveTaskStorage()
		if tr.threadHash != want {
			t.Errorf("asked for the hash: %v; task storage: %v; the hash used: %v", force, HaveTaskStorage(), tr.threadHash)
		}
		info, err := tr.thr.Info()
		if err != nil {
			t.Fatal(err)
		}
		if want != (info.Type == ebpf.LRUHash) {
			t.Errorf("the hash used: %v, the state's map is a %v", want, info.Type)
		}
		tr.Close()
	}
}

// TestRecordsOwnSystemCalls traces this process, makes a known number of
// getppid calls on one thread and checks each has an entry with its user
// call chain and an exit, paired by thread.
func TestRecordsOwnSystemCalls(t *testing.T) {
	testutil.NeedRoot(t)
	threadStates(t, recordOwnSystemCalls)
}

func recordOwnSystemCalls(t *testing.T, hash bool) {
	for _, kernel := range []bool{false, true} {
		// A ring that the runtime's other threads' records do not fill
		// to half (where entries go without their copy) under load.
		tr, tid := traceSelf(t, Options{Syscalls: true, KernelStacks: kernel, StackBytes: 256, RingBytes: 4 << 20, threadHash: hash})
		const n = 1000
		for i := 0; i < n; i++ {
			unix.Getppid()
		}
		tr.Remove(uint32(os.Getpid()))
		runtime.UnlockOSThread()
		enters, exits, withStack, withKernel, copied := 0, 0, 0, 0, 0
		err := tr.Drain(func(ev *Event) {
			if ev.TID != tid || ev.Nr != unix.SYS_GETPPID || ev.PID != uint32(os.Getpid()) {
				return
			}
			if len(tr.Stack(ev.KernStack)) > 0 {
				withKernel++
			}
			// An entry's header has no room for a switch's run time.
			if n, want := len(tr.rec.RawSample), map[bool]int{true: exitSize, false: hdrSize + 256}[ev.Exit]; n != want {
				t.Fatalf("kernel=%v: a record of %d bytes (exit %v), want %d", kernel, n, ev.Exit, want)
			}
			if ev.Exit {
				exits++
				return
			}
			enters++
			if s := tr.Stack(ev.UserStack); len(s) > 2 && s[0] == ev.IP {
				withStack++
			}
			if len(ev.Stack) == 256 && ev.SP != 0 {
				copied++
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if enters != n || exits != n || withStack != n || copied != n {
			t.Errorf("kernel=%v: %d entries, %d exits, %d with a user chain from the IP, %d with the stack copied; want %d of each",
				kernel, enters, exits, withStack, copied, n)
		}
		if kernel && withKernel != 2*n || !kernel && withKernel != 0 {
			t.Errorf("kernel=%v: %d entries and exits with a kernel chain", kernel, withKernel)
		}
		if l := tr.Lost(); l != 0 {
			t.Errorf("%d records lost", l)
		}
		tr.Close()
	}
}

// TestCopiesLessBeforeDropping: with a ring of 256 KiB that is never read
// while 2000 calls are made (about 2.3 MiB of records with their 1 KiB
// copies, 300 KiB without), the records stop carrying the stack copy once
// the ring is half full, and are dropped only when even those do not fit;
// both are counted.
func TestCopiesLessBeforeDropping(t *testing.T) {
	testutil.NeedRoot(t)
	tr, tid := traceSelf(t, Options{Syscalls: true, StackBytes: 1024, RingBytes: 256 << 10})
	defer tr.Close()
	for i := 0; i < 2000; i++ {
		unix.Getppid()
	}
	tr.Remove(uint32(os.Getpid()))
	runtime.UnlockOSThread()
	full, reduced, fullAfter := 0, 0, 0
	err := tr.Drain(func(ev *Event) {
		if ev.TID != tid || ev.Exit || ev.Nr != unix.SYS_GETPPID {
			return
		}
		switch {
		case ev.Reduced:
			reduced++
		case reduced > 0:
			fullAfter++
		default:
			full++
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if full == 0 || reduced == 0 || fullAfter != 0 {
		t.Errorf("%d entries with the copy, then %d without (%d with it after those): want some of each, in that order", full, reduced, fullAfter)
	}
	if n := tr.Reduced(); n < uint64(reduced) {
		t.Errorf("Reduced() = %d, want at least the %d entries of this thread without the copy", n, reduced)
	}
	if tr.Lost() == 0 {
		t.Errorf("nothing lost from a 256 KiB ring never read")
	}
}

// belowFrames runs f below n+1 frames of at least 512 bytes each, all
// written: the memory above f's stack pointer is then the goroutine's
// stack, present for a copy to read. Near the top of a goroutine's stack
// the memory beyond may be a page never touched, which a BPF program
// cannot read (its copy then fails).
//
//go:noinline
func belowFrames(n int, f func()) byte {
	var pad [512]byte
	for i := range pad {
		pad[i] = byte(n + i)
	}
	if n > 0 {
		return belowFrames(n-1, f) + pad[n]
	}
	f()
	return pad[0]
}

// TestCopiesUpToTheTop: with StackTops, a thread whose top is set copies
// its stack at each entry from the stack pointer up to the top (in a
// record of the smallest class that holds it; up to the page boundary
// below it where the memory beyond is not present: this goroutine's stack
// has the heap above it), the StackBytes copy when
// the top lies more than MaxCopy above, or below, the stack pointer, and
// again once the top is forgotten; the records are whole and none lost.
func TestCopiesUpToTheTop(t *testing.T) {
	testutil.NeedRoot(t)
	tr, tid := traceSelf(t, Options{Syscalls: true, StackBytes: 1024, StackTops: true, RingBytes: 4 << 20})
	defer tr.Close()
	defer runtime.UnlockOSThread()
	// calls makes 10 calls and returns each entry's stack pointer and
	// the end of its copy.
	type entry struct{ sp, end uint64 }
	calls := func() (es []entry) {
		belowFrames(4, func() {
			for i := 0; i < 10; i++ {
				unix.Getppid()
			}
		})
		err := tr.Drain(func(ev *Event) {
			if ev.TID == tid && !ev.Exit && ev.Nr == unix.SYS_GETPPID {
				es = append(es, entry{ev.SP, ev.SP + uint64(len(ev.Stack))})
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		return es
	}
	es := calls()
	if len(es) != 10 || slices.ContainsFunc(es, func(e entry) bool { return e.end != e.sp+1024 }) {
		t.Fatalf("without a top: copies %v, want 1024 bytes each", es)
	}
	sp := es[0].sp
	for _, above := range []uint64{3000, 9000, MaxCopy, MaxCopy + 4096, 512, 0} {
		top := uint64(0)
		if above > 0 {
			top = (sp + above) &^ 7
		}
		if err := tr.SetTop(tid, top); err != nil {
			t.Fatal(err)
		}
		es := calls()
		for _, e := range es {
			want := e.sp + 1024
			if top > e.sp+1024 && top-e.sp <= MaxCopy {
				want = top
			}
			if e.end != want && (want == e.sp+1024 || e.end%4096 != 0 || e.end > want || e.end <= e.sp+1024) {
				t.Errorf("top %d bytes above the first stack pointer: a copy from %#x ends at %#x, want %#x", above, e.sp, e.end, want)
			}
		}
		if len(es) != 10 {
			t.Errorf("top %d bytes above: %d entries, want 10", above, len(es))
		}
	}
	if l, r := tr.Lost(), tr.Reduced(); l != 0 || r != 0 {
		t.Errorf("%d records lost, %d without their copy", l, r)
	}
}

// TestRecordsOwnSwitches traces this process's switches away: each of a
// known number of sleeps on one thread leaves the CPU asleep
// (interruptible), with both call chains and the user registers; with
// system calls traced too, the switch inside each nanosleep refers to its
// call (InCall, the call's number, its entry's registers) instead of
// walking the user chain again.
func TestRecordsOwnSwitches(t *testing.T) {
	testutil.NeedRoot(t)
	threadStates(t, func(t *testing.T, hash bool) {
		for _, syscalls := range []bool{false, true} {
			recordOwnSwitches(t, syscalls, hash)
		}
	})
}

func recordOwnSwitches(t *testing.T, syscalls, hash bool) {
	tr, tid := traceSelf(t, Options{Switches: true, Syscalls: syscalls, StackBytes: 256, RingBytes: 1 << 20, threadHash: hash})
	defer tr.Close()
	const n = 20
	interrupted := 0 // sleeps cut short by a signal, which may not have slept
	for i := 0; i < n; i++ {
		ts := unix.NsecToTimespec(int64(time.Millisecond))
		if unix.Nanosleep(&ts, nil) != nil {
			interrupted++
		}
	}
	tr.Remove(uint32(os.Getpid()))
	runtime.UnlockOSThread()
	asleep, other, preempted, framedCopies := 0, 0, 0, 0
	var entry *Event // the thread's system call entry pending, with syscalls
	err := tr.Drain(func(ev *Event) {
		if ev.TID != tid {
			return
		}
		switch {
		case syscalls && !ev.Switch && !ev.Exit:
			e := *ev
			entry = &e
			return
		case syscalls && ev.Exit:
			entry = nil
			return
		case !ev.Switch:
			t.Errorf("a record other than a switch: %+v", ev)
			return
		}
		if SwitchState(ev.Nr) == 0x100 {
			preempted++
		}
		// A switch's header holds its run time after an entry's, its
		// copy (none inside a call) after that.
		if n, want := len(tr.rec.RawSample), switchHdrSize+len(ev.Stack); n != want || len(ev.Stack) != 0 && len(ev.Stack) != 256 {
			t.Errorf("syscalls=%v: a switch record of %d bytes with a copy of %d, want %d", syscalls, n, len(ev.Stack), want)
		}
		if framed(ev) {
			framedCopies++
		}
		ks := tr.Stack(ev.KernStack)
		if syscalls {
			if SwitchState(ev.Nr) == 1 && ev.UserStack == InCall && ev.CallNr == unix.SYS_NANOSLEEP && entry != nil &&
				entry.Nr == ev.CallNr && entry.IP == ev.IP && entry.SP == ev.SP && len(ks) > 3 && len(ev.Stack) == 0 {
				asleep++
			} else {
				other++
				t.Logf("state %#x: user stack %d, call %d (entry %+v), IP %#x, %d kernel frames, %d bytes copied",
					ev.Nr, ev.UserStack, ev.CallNr, entry, ev.IP, len(ks), len(ev.Stack))
			}
			return
		}
		us := append([]uint64(nil), tr.Stack(ev.UserStack)...)
		if SwitchState(ev.Nr) == 1 && len(us) > 2 && us[0] == ev.IP && len(ks) > 3 && len(ev.Stack) == 256 {
			asleep++
		} else {
			other++
			t.Logf("state %#x: %d user frames (IP %#x), %d kernel, %d bytes copied", ev.Nr, len(us), ev.IP, len(ks), len(ev.Stack))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	// Each sleep leaves the CPU asleep; the runtime may park the thread
	// too (the race detector's does), and preemptions add others. A sleep
	// does not leave it asleep when a signal came first, or when the
	// thread was preempted between arming its timer and sleeping for
	// longer than the timer's 1 ms (on a busy machine): each of those
	// leaves one sleep without its switch asleep.
	if asleep < n-interrupted-preempted {
		t.Errorf("syscalls=%v: %d switches asleep as expected, %d others (%d preemptions), %d sleeps interrupted; want at least %d asleep",
			syscalls, asleep, other, preempted, interrupted, n-interrupted-preempted)
	}
	if !syscalls && framedCopies < asleep {
		t.Errorf("%d switches' copies hold their frame pointer's frame where BP says, want at least the %d asleep", framedCopies, asleep)
	}
}

// framed reports whether a switch's stack copy, read from SP, holds
// where BP points the frame of a Go function (the sleep's wrapper's
// caller): the caller's frame pointer, above BP on the same stack, and
// after it a return address, not one. A copy read from the wrong place of
// its record fails it.
func framed(ev *Event) bool {
	off := ev.BP - ev.SP
	if ev.BP < ev.SP || off+16 > uint64(len(ev.Stack)) {
		return false
	}
	le := binary.LittleEndian
	saved, ret := le.Uint64(ev.Stack[off:]), le.Uint64(ev.Stack[off+8:])
	onStack := func(v uint64) bool { return v > ev.BP && v-ev.BP < 1<<20 }
	return onStack(saved) && !onStack(ret) && ret != 0
}

// TestKernelChainReused: a thread that blocks in the same call from the
// same place over and over has its kernel chain walked about once, the
// later switches reusing its id; blocking in another call, its switches
// get that call's own chain, never the other's.
func TestKernelChainReused(t *testing.T) {
	testutil.NeedRoot(t)
	threadStates(t, kernelChainReused)
}

func kernelChainReused(t *testing.T, hash bool) {
	tr, tid := traceSelf(t, Options{Switches: true, Syscalls: true, KernelStacks: true, RingBytes: 1 << 20, threadHash: hash})
	defer tr.Close()
	const rounds, n = 2, 20
	for r := 0; r < rounds; r++ {
		for i := 0; i < n; i++ {
			ts := unix.NsecToTimespec(int64(time.Millisecond))
			_ = unix.Nanosleep(&ts, nil)
		}
		for i := 0; i < n; i++ {
			tv := unix.NsecToTimeval(int64(time.Millisecond))
			_, _ = unix.Select(0, nil, nil, nil, &tv)
		}
	}
	tr.Remove(uint32(os.Getpid()))
	runtime.UnlockOSThread()
	chains := map[uint64]map[int64]int{} // call: kernel chain id: switches
	others := uint64(0)                  // the other switches, which may walk their chain
	err := tr.Drain(func(ev *Event) {
		if !ev.Switch {
			return
		}
		if ev.TID != tid || ev.UserStack != InCall || ev.Nr>>32 != 0 || SwitchState(ev.Nr) != 1 {
			others++
			return
		}
		if chains[ev.CallNr] == nil {
			chains[ev.CallNr] = map[int64]int{}
		}
		chains[ev.CallNr][ev.KernStack]++
	})
	if err != nil {
		t.Fatal(err)
	}
	sleeps, selects := chains[unix.SYS_NANOSLEEP], chains[unix.SYS_PSELECT6]
	count := func(m map[int64]int) (n int) {
		for id, k := range m {
			if id < 0 || len(tr.KernelStack(id)) < 3 {
				t.Errorf("%d switches asleep with kernel chain %d: %x", k, id, tr.KernelStack(id))
			}
			n += k
		}
		return n
	}
	if count(sleeps) < rounds*n || count(selects) < rounds*n {
		t.Errorf("switches asleep in nanosleep %v, in select %v (chain id: switches): want %d in each", sleeps, selects, rounds*n)
	}
	for id := range sleeps {
		if selects[id] > 0 {
			t.Errorf("nanosleep and select share kernel chain %d: %x", id, tr.KernelStack(id))
		}
	}
	// This thread walks each call's chain about once (a few more times
	// if its slots are taken by other calls in between); the counts take
	// in the runtime's other threads, which may walk at each switch.
	if w := tr.kernelWalks(); w > others+rounds*n/2 {
		t.Errorf("%d kernel chains walked for %d switches asleep in calls here and %d in other threads: want this thread's reused",
			w, 2*rounds*n, others)
	} else {
		t.Logf("%d kernel chains walked for %d switches asleep in calls here and %d in other threads", w, 2*rounds*n, others)
	}
}

func TestSwitchState(t *testing.T) {
	for _, c := range []struct{ nr, want uint64 }{
		{0, 0}, {1, 1}, {2, 2}, {1 << 32, 0x100}, {1<<32 | 1, 0x100},
		{0x402, 0x80}, {0x80 | 0x20, 0x20}, {0x1000, 2}, {0x100, 0}, {4, 4},
	} {
		if got := SwitchState(c.nr); got != c.want {
			t.Errorf("SwitchState(%#x) = %#x, want %#x", c.nr, got, c.want)
		}
	}
}

// The tracing code's ranges read back from their cache file as read from
// /proc/kallsyms.
func TestTracingCodeCache(t *testing.T) {
	testutil.NeedRoot(t)
	c := readKallsyms()
	if c.text[1] == 0 || len(c.ranges) == 0 || c.entry[1] == 0 || c.tick == 0 {
		t.Fatalf("no kernel text, tracing functions, entry text or tick function in /proc/kallsyms: %+v", c)
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	path, ok := tracingCachePath()
	if !ok {
		t.Fatal("no cache path")
	}
	if got := readTracingCode(); !reflect.DeepEqual(got, c) {
		t.Fatalf("first read %+v, want %+v", got, c)
	}
	got, err := loadTracingCode(path)
	if err != nil || !reflect.DeepEqual(got, c) {
		t.Fatalf("from the cache: %+v, %v; want %+v", got, err, c)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("cache file %v, %v: want mode 0600", fi, err)
	}
}

// TestLimitCountsWhatItLeavesOut: with Options.Limit, a thread records at
// most Limit calls a second beyond its burst, by the records' own clock;
// each recorded entry has its exit, no call left out has one, and the
// entries' Skipped counts with the calls after the last recorded one
// (Unrecorded) add up to every call the thread made. The thread is a C
// program's only one, whose calls once traced are known to the call: a
// Go test's own runtime threads make calls of their own, as many as the
// machine's load makes them.
func TestLimitCountsWhatItLeavesOut(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "getppids", []string{"getppids.c"}, "-O2")
	threadStates(t, func(t *testing.T, hash bool) { limitCountsWhatItLeavesOut(t, bin, hash) })
}

func limitCountsWhatItLeavesOut(t *testing.T, bin string, hash bool) {
	const limit, burst, n = 100, 10, 2000
	tr, err := New(Options{Syscalls: true, StackBytes: 256, RingBytes: 1 << 20, Limit: limit, LimitBurst: burst, threadHash: hash})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	// The program waits in read(2) for a byte, traced from then on: the
	// read's exit (its entry untraced), n getppid calls, exit_group.
	tid, _ := traceReleased(t, tr, bin, strconv.Itoa(n))
	var enters, exits, getppid, standFor, lastNr uint64
	var first, last uint64
	pending := false
	err = tr.Drain(func(ev *Event) {
		if ev.TID != tid {
			return
		}
		if ev.Exit {
			if enters == 0 {
				return // of the call that added the process, entered untraced
			}
			if !pending {
				t.Errorf("an exit (call %d) without its entry", ev.Nr)
			}
			pending = false
			exits++
			return
		}
		if pending {
			t.Errorf("an entry (call %d) while the previous one's exit is missing", ev.Nr)
		}
		pending = true
		enters++
		standFor += 1 + ev.Skipped
		lastNr = ev.Nr
		if ev.Nr == unix.SYS_GETPPID {
			getppid++
		}
		if first == 0 {
			first = ev.Time
		}
		last = ev.Time
	})
	if err != nil {
		t.Fatal(err)
	}
	// The calls after the thread's last recorded one, the exit_group
	// among them unless it was recorded.
	tail := tr.Unrecorded()
	total := standFor + tail
	if total != n+1 {
		t.Errorf("entries stand for %d calls, %d after the last recorded ones: want the loop's %d and exit_group",
			standFor, tail, n)
	}
	most := burst + (last-first)*limit/1e9 + 1
	if lastNr == unix.SYS_EXIT_GROUP {
		exits++ // the one call that does not return
	}
	if enters > most || exits != enters || getppid == 0 || enters >= n {
		t.Errorf("%d entries (%d of getppid) and %d exits recorded over %d ns: want at most %d, an exit for each and fewer than the %d calls",
			enters, getppid, exits, last-first, most, n)
	}
	t.Logf("%d of %d calls recorded, %d after the last", enters, total, tail)
}

// TestSwitchInUnrecordedCall: a switch inside a system call that the limit
// left out has no entry to refer to: it is recorded without stacks (and
// counted), never walking its own.
func TestSwitchInUnrecordedCall(t *testing.T) {
	testutil.NeedRoot(t)
	const burst = 6
	tr, tid := traceSelf(t, Options{Switches: true, Syscalls: true, StackBytes: 256, RingBytes: 1 << 20, Limit: 1, LimitBurst: burst})
	defer tr.Close()
	const n = 20
	for i := 0; i < n; i++ {
		ts := unix.NsecToTimespec(int64(time.Millisecond))
		_ = unix.Nanosleep(&ts, nil)
	}
	tr.Remove(uint32(os.Getpid()))
	runtime.UnlockOSThread()
	inCall, walked, bare, entries, sleeps := 0, 0, 0, 0, 0
	// The runtime may block this thread in a call of its own (a futex
	// while the world stops, under load): those switches refer to their
	// call like the sleeps' and are counted apart.
	byNr, otherInCall := map[uint64]int{}, map[uint64]int{}
	var first, last uint64
	err := tr.Drain(func(ev *Event) {
		if ev.TID != tid {
			return
		}
		if first == 0 {
			first = ev.Time
		}
		last = ev.Time
		if !ev.Switch {
			if !ev.Exit {
				entries++
				byNr[ev.Nr]++
				if ev.Nr == unix.SYS_NANOSLEEP {
					sleeps++
				}
			}
			return
		}
		if SwitchState(ev.Nr) != 1 {
			return
		}
		us := tr.Stack(ev.UserStack)
		switch {
		case ev.UserStack == InCall && ev.CallNr != unix.SYS_NANOSLEEP:
			otherInCall[ev.CallNr]++
		case ev.UserStack == InCall:
			inCall++
		case ev.UserStack == NoStack && ev.KernStack < 0 && len(ev.Stack) == 0 && ev.SP != 0:
			if ev.CallNr == unix.SYS_NANOSLEEP {
				bare++
			}
		case len(us) > 2 && us[0] == ev.IP && len(ev.Stack) == 256:
			walked++
		default:
			t.Errorf("a switch asleep with %d user frames (IP %#x), %d bytes copied", len(us), ev.IP, len(ev.Stack))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for nr, k := range otherInCall {
		if byNr[nr] == 0 {
			t.Errorf("%d switches asleep refer to call %d, which has no entry recorded", k, nr)
		}
	}
	// One call a second beyond a burst of 6, by the records' own clock:
	// the first sleeps are recorded and their switches refer to them, the
	// others' switches go without stacks, none walks its own.
	most := burst + int((last-first)/1e9) + 1
	if sleeps == 0 || entries > most || walked != 0 || inCall > sleeps || inCall+bare < n || bare < n-most || uint64(bare) > tr.SwitchesBare() {
		t.Errorf("%d entries recorded (%d sleeps); of the switches asleep, %d refer to their call, %d walked their own chain, %d without stacks (%d counted): "+
			"want %d sleeps in all, at most %d entries, no switch walked", entries, sleeps, inCall, walked, bare, tr.SwitchesBare(), n, most)
	}
}

// TestSwitchesBetweenWindows: between windows no context switch of a
// traced thread is recorded (counted: SwitchesBetween), whether it
// blocked or was preempted, unless switches onto a CPU are recorded too;
// in a window both are. The test's thread, pinned to one CPU beside a
// spinning shell, sleeps (a switch that blocks) and yields the CPU in
// sched_yield (a switch that leaves it runnable). The windows are an
// hour long, so the test sets the program's flag itself (setOpen).
func TestSwitchesBetweenWindows(t *testing.T) {
	testutil.NeedRoot(t)
	for _, ins := range []bool{false, true} {
		t.Run(fmt.Sprintf("switch-ins=%v", ins), func(t *testing.T) {
			tr, tid := traceSelf(t, Options{Switches: true, SwitchIns: ins, Syscalls: true, RingBytes: 4 << 20,
				Limit: 1000, LimitBurst: 1000, WindowOn: time.Hour, WindowPeriod: 2 * time.Hour})
			defer tr.Close()
			if tr.SwitchesWindowed() == ins {
				t.Errorf("switch-ins %v: SwitchesWindowed %v", ins, tr.SwitchesWindowed())
			}
			unpin := testutil.PinThread(t, 0)
			spin := exec.Command("sh", "-c", "while :; do :; done") // forked by this thread: on CPU 0 too
			if err := spin.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() {
				spin.Process.Kill()
				spin.Wait()
				unpin()
				runtime.UnlockOSThread()
			}()
			// switches returns the switches away of this thread recorded
			// asleep and runnable over n sleeps and n yields with the
			// flag set to open.
			switches := func(open bool, n int) (asleep, runnable int) {
				if err := tr.setOpen(open); err != nil {
					t.Fatal(err)
				}
				// The switches before (the shell's start) are not counted.
				if err := tr.Drain(func(*Event) {}); err != nil {
					t.Fatal(err)
				}
				ts := unix.Timespec{Nsec: 100_000}
				for i := 0; i < n; i++ {
					unix.Nanosleep(&ts, nil)
					unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
				}
				if err := tr.Drain(func(ev *Event) {
					if ev.TID != tid || !ev.Switch {
						return
					}
					switch SwitchState(ev.Nr) {
					case 0:
						runnable++
					case 1:
						asleep++
					}
				}); err != nil {
					t.Fatal(err)
				}
				return asleep, runnable
			}
			const n = 40
			asleep, runnable := switches(false, n)
			if err := tr.setOpen(true); err != nil {
				t.Fatal(err)
			}
			dropped := tr.SwitchesBetween() // none counted from here on
			inAsleep, inRunnable := switches(true, n)
			tr.Remove(uint32(os.Getpid()))
			if inAsleep < n || inRunnable == 0 {
				t.Fatalf("in a window, %d sleeps and %d yields beside a spinner on one CPU: %d switches asleep and %d runnable recorded; want %d and some",
					n, n, inAsleep, inRunnable, n)
			}
			if ins {
				if asleep < n || runnable == 0 || tr.SwitchesBetween() != 0 {
					t.Errorf("with switch-ins, between windows: %d switches asleep and %d runnable recorded, %d not; want every one recorded", asleep, runnable, tr.SwitchesBetween())
				}
				return
			}
			if asleep != 0 || runnable != 0 || dropped < n || tr.SwitchesBetween() != dropped {
				t.Errorf("between windows: %d switches asleep and %d runnable recorded (want none), %d counted as not recorded (want %d or more), %d after a window (want the same)",
					asleep, runnable, dropped, n, tr.SwitchesBetween())
			}
		})
	}
}

// TestStacksFull: with room for one call chain, the first one walked is
// kept and every later different one has no id (a negative one), never
// the kept one's: entries of two call sites each have their own chain or
// none.
func TestStacksFull(t *testing.T) {
	testutil.NeedRoot(t)
	tr, tid := traceSelf(t, Options{Syscalls: true, StackBytes: 0, RingBytes: 1 << 20, stackEntries: 1})
	defer tr.Close()
	const n = 200
	for i := 0; i < n; i++ {
		siteA()
		siteB()
	}
	tr.Remove(uint32(os.Getpid()))
	runtime.UnlockOSThread()
	ids := map[int64]int{}
	sites := map[string]int{}
	err := tr.Drain(func(ev *Event) {
		if ev.Exit {
			return
		}
		ids[ev.UserStack]++
		if ev.TID != tid || ev.Nr != unix.SYS_GETPPID && ev.Nr != unix.SYS_GETPGID {
			return
		}
		want := map[bool]string{true: "A", false: "B"}[ev.Nr == unix.SYS_GETPPID]
		s := tr.Stack(ev.UserStack)
		switch {
		case ev.UserStack < 0:
			sites["none"]++
		case len(s) < 2 || s[0] != ev.IP || !strings.HasSuffix(funcs(s[1:2]), ".site"+want+" "):
			t.Errorf("a call through site%s has chain %d: %s", want, ev.UserStack, funcs(s))
		default:
			sites[want]++
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	kept := 0
	for id := range ids {
		if id >= 0 {
			kept++
		}
	}
	if kept != 1 || sites["A"]+sites["B"]+sites["none"] != 2*n || sites["A"] > 0 && sites["B"] > 0 || sites["none"] < n {
		t.Errorf("chains kept %d (ids: entries %v), want 1; this thread's entries by site %v, want %d in all, one site at most with chains", kept, ids, sites, 2*n)
	}
}

//go:noinline
func getppidA() { unix.Getppid() }

//go:noinline
func getppidB() { unix.Getppid() }

// traceSelf starts a tracer with o on this test's own process, the
// calling goroutine locked to its thread, and returns the tracer and
// that thread's id; the caller closes the tracer and unlocks the thread.
// Nothing after Add makes a system call: the tests count every one.
func traceSelf(t *testing.T, o Options) (*Tracer, uint32) {
	t.Helper()
	tr, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	runtime.LockOSThread()
	tid := uint32(unix.Gettid()) // before Add: its system call is not traced
	if err := tr.Add(uint32(os.Getpid())); err != nil {
		runtime.UnlockOSThread()
		tr.Close()
		t.Fatal(err)
	}
	return tr, tid
}

// BenchmarkThreadState measures what a system call costs with the
// programs attached, per-thread state in task storage or in the hash
// keyed by thread id (kernels without task storage), for a thread of a
// traced process under the default limit (most of its calls left out,
// counted) and for a thread of a process not traced (the programs run for
// every thread of the machine). cpu-ns/op is the call with its hooks and
// programs in the thread's own CPU time (ns/op is wall time, which other
// work on a busy machine inflates); enter-ns and exit-ns are the
// programs' mean run times by the kernel's own count (bpf_stats, every
// thread of the machine). Run it a few times in a row to interleave the
// modes:
//
//	go test -run - -bench ThreadState -benchtime 300000x ./internal/syscallprog
func BenchmarkThreadState(b *testing.B) {
	testutil.NeedRoot(b)
	stats, err := ebpf.EnableStats(unix.BPF_STATS_RUN_TIME)
	if err != nil {
		b.Fatal(err)
	}
	defer stats.Close()
	b.Run("none", func(b *testing.B) { // no programs attached
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		getppidCPU(b)
	})
	for _, traced := range []bool{true, false} {
		for _, hash := range []bool{false, true} {
			name := map[bool]string{false: "task-storage", true: "thread-hash"}[hash]
			name += map[bool]string{true: "/traced", false: "/untraced"}[traced]
			b.Run(name, func(b *testing.B) {
				if !hash && !HaveTaskStorage() {
					b.Skip("no task storage for raw tracepoint programs")
				}
				o := Options{Syscalls: true, Switches: true, StackBytes: 256, Limit: 5000, LimitBurst: 256, threadHash: hash}
				tr, err := New(o)
				if err != nil {
					b.Fatal(err)
				}
				defer tr.Close()
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				if traced {
					if err := tr.Add(uint32(os.Getpid())); err != nil {
						b.Fatal(err)
					}
				}
				programNs(b, tr, func() { getppidCPU(b) })
				tr.Remove(uint32(os.Getpid()))
				_ = tr.Drain(func(*Event) {})
			})
		}
	}
}

// getppidCPU makes b.N getppid calls and reports their mean cost in the
// CPU time of the calling thread (locked to it).
func getppidCPU(b *testing.B) {
	var t0, t1 unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &t0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		unix.Getppid()
	}
	b.StopTimer()
	_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &t1)
	b.ReportMetric(float64(t1.Nano()-t0.Nano())/float64(b.N), "cpu-ns/op")
}

// TestWindows: with the system call programs attached in windows, every
// call the thread made inside a window is recorded and none outside
// (bounds from the thread's own clock reads around each call and the
// windows' attachment times), and no exit pairs with an entry of an
// earlier window: sleeps longer than a window cross its close, and their
// exits in the next one are not recorded.
func TestWindows(t *testing.T) {
	testutil.NeedRoot(t)
	threadStates(t, windowsRecordInside)
}

func windowsRecordInside(t *testing.T, hash bool) {
	const n = 600
	tr, tid := traceSelf(t, Options{Syscalls: true, Switches: true, StackBytes: 256, RingBytes: 4 << 20,
		WindowOn: 2 * time.Millisecond, WindowPeriod: 6 * time.Millisecond, threadHash: hash})
	defer tr.Close()
	var around [n][2]uint64
	sleep := unix.NsecToTimespec(int64(2500 * time.Microsecond))
	for i := 0; i < n; i++ {
		around[i][0] = monotonicNow()
		if i%2 == 0 {
			unix.Getppid()
		} else {
			_ = unix.Nanosleep(&sleep, nil)
		}
		around[i][1] = monotonicNow()
	}
	tr.Remove(uint32(os.Getpid()))
	runtime.UnlockOSThread()
	wins, err := tr.Windows()
	if err != nil {
		t.Fatal(err)
	}
	// A reader that handled the first windows gets the others alone (the
	// cycle runs on: windows may have been added since).
	for _, i := range []int{0, 1, len(wins) / 2, len(wins), len(wins) + 1} {
		from, err := tr.WindowsFrom(i)
		want := wins[min(i, len(wins)):]
		if err != nil || len(from) < len(want) {
			t.Fatalf("WindowsFrom(%d) = %d windows (%v), want the last %d of Windows' at least", i, len(from), err, len(want))
		}
		for j := range want {
			if from[j].Start != want[j].Start {
				t.Fatalf("WindowsFrom(%d)[%d] starts at %d, Windows()[%d] at %d", i, j, from[j].Start, i+j, want[j].Start)
			}
		}
	}
	type entry struct {
		nr, time uint64
		exited   bool
	}
	var pending *entry
	getppid, exits, crossed := 0, 0, 0
	inCall, bare, walked := 0, 0, 0 // switches asleep in a nanosleep
	err = tr.Drain(func(ev *Event) {
		if ev.TID != tid {
			return
		}
		if ev.Switch {
			if SwitchState(ev.Nr) != 1 {
				return
			}
			switch {
			case ev.UserStack == InCall && ev.CallNr == unix.SYS_NANOSLEEP:
				inCall++
			case ev.UserStack == NoStack && ev.CallNr == unix.SYS_NANOSLEEP:
				bare++
			case ev.UserStack >= 0 && afterSyscall(ev.IP):
				walked++
			}
			return
		}
		if ev.Exit {
			if pending == nil || pending.exited || pending.nr != ev.Nr {
				return // the recorder's rule: an exit without its entry is not written
			}
			for _, w := range wins {
				if w.Start > pending.time && w.Start < ev.Time {
					crossed++
					t.Errorf("an exit of call %d at %d pairs with an entry at %d, before the window opened at %d", ev.Nr, ev.Time, pending.time, w.Start)
				}
			}
			pending.exited = true
			exits++
			return
		}
		pending = &entry{nr: ev.Nr, time: ev.Time}
		if ev.Nr == unix.SYS_GETPPID {
			getppid++
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	sure, possible := 0, 0
	for i := 0; i < n; i += 2 {
		for _, w := range wins {
			if around[i][0] >= w.opened && around[i][1] <= w.closing {
				sure++
			}
			if around[i][1] >= w.Start && (w.End == 0 || around[i][0] <= w.End) {
				possible++
				break
			}
		}
	}
	// Sleeps entered inside a window have their switch refer to them;
	// those entered outside (two in three) were left out, and so their
	// switches go without stacks: none walks its chains.
	if walked != 0 || bare == 0 || inCall == 0 {
		t.Errorf("switches asleep in nanosleep: %d refer to their call, %d without stacks, %d walked their own chains: want some of the first two and none walked",
			inCall, bare, walked)
	}
	// A call in flight at a window's close may still run the entry
	// program (the detachment does not wait for it): one per window.
	if possible == 0 || getppid < sure || getppid > possible+len(wins) {
		t.Errorf("%d getppid entries recorded over %d windows: want at least the %d calls made inside a window and at most the %d that overlapped one (and one per window)",
			getppid, len(wins), sure, possible)
	}
	t.Logf("%d windows; getppid: %d recorded, %d surely inside, %d overlapping; %d exits; switches asleep: %d in their call, %d bare",
		len(wins), getppid, sure, possible, exits, inCall, bare)
}

// afterSyscall reports whether the instruction before pc, an address of
// this process's code, is syscall (0f 05): a thread that left the CPU
// there was inside a system call.
func afterSyscall(pc uint64) bool {
	f, err := os.Open("/proc/self/mem")
	if err != nil || pc < 2 {
		return false
	}
	defer f.Close()
	var b [2]byte
	if _, err := f.ReadAt(b[:], int64(pc-2)); err != nil {
		return false
	}
	return b[0] == 0x0f && b[1] == 0x05
}

// TestWindowsRateSpan: the rate is read over Options.WindowRateSpan, not
// over a period: a loop of calls above the rate starts the windows once a
// span of it has passed, long before the first period would have ended.
func TestWindowsRateSpan(t *testing.T) {
	testutil.NeedRoot(t)
	threadStates(t, func(t *testing.T, hash bool) {
		const period = 5 * time.Second
		start := time.Now()
		tr, _ := traceSelf(t, Options{Syscalls: true, RingBytes: 16 << 20, WindowOn: time.Millisecond,
			WindowPeriod: period, WindowAbove: 20000, WindowRateSpan: 5 * time.Millisecond, threadHash: hash})
		defer tr.Close()
		for i := 0; ; i++ {
			unix.Getppid()
			if i%256 != 0 {
				continue
			}
			wins, err := tr.Windows()
			if err != nil {
				t.Fatal(err)
			}
			if slices.ContainsFunc(wins, func(w Window) bool { return w.Scale > 1 }) {
				break
			}
			if time.Since(start) >= period {
				t.Fatalf("no window after %v of calls above the rate: the rate was not read over the %v span", period, 5*time.Millisecond)
			}
			if i%65536 == 0 {
				// Keep the ring from filling: its records are not looked at.
				if err := tr.Drain(func(*Event) {}); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}

// TestWindowsAboveRate: with a rate (Options.WindowAbove), the programs
// stay attached while the traced process makes few calls, every call
// recorded as standing for itself; a loop of calls above the rate starts
// the windows, whose calls stand for PERIOD/ON each and outside which
// none is recorded; few calls again, and the programs stay attached for
// good from the next window on. Bounds come from the thread's own clock
// reads around each call and the windows' times, as in TestWindows.
func TestWindowsAboveRate(t *testing.T) {
	testutil.NeedRoot(t)
	threadStates(t, windowsAboveRate)
}

func windowsAboveRate(t *testing.T, hash bool) {
	const on, period = 2 * time.Millisecond, 6 * time.Millisecond
	tr, tid := traceSelf(t, Options{Syscalls: true, RingBytes: 16 << 20,
		WindowOn: on, WindowPeriod: period, WindowAbove: 20000, threadHash: hash})
	defer tr.Close()
	type call struct{ from, to uint64 }
	var calls []call
	getppid := func() {
		c := call{from: monotonicNow()}
		unix.Getppid()
		c.to = monotonicNow()
		calls = append(calls, c)
	}
	sleep := unix.NsecToTimespec(int64(2 * time.Millisecond))
	slow := func() {
		getppid()
		_ = unix.Nanosleep(&sleep, nil)
	}
	// phase: 0 before any window of scale PERIOD/ON, 1 in them, 2 attached
	// for good again after them; closed: the windows of scale PERIOD/ON
	// closed.
	phase := func() (p, closed int) {
		wins, err := tr.Windows()
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range wins {
			switch {
			case w.Scale > 1:
				p = 1
				if w.End != 0 {
					closed++
				}
			case p == 1 && w.End == 0 && w.opened != math.MaxUint64:
				// Attached for good (a window is listed from before
				// its attachment, opened once attached).
				p = 2
			}
		}
		return p, closed
	}
	type entry struct {
		time  uint64
		scale float64
	}
	var entries []entry
	drain := func() {
		if err := tr.Drain(func(ev *Event) {
			if ev.TID == tid && !ev.Switch && !ev.Exit && ev.Nr == unix.SYS_GETPPID {
				entries = append(entries, entry{ev.Time, tr.Scale(ev.Window)})
			}
		}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 30; i++ {
		slow()
	}
	// outside: whether the call surely fell outside every span (its
	// thread could have been off the CPU for a whole gap between windows
	// on a busy machine, making no call there).
	outside := func(c call, wins []Window) bool {
		for _, w := range wins {
			if c.to >= w.Start && (w.End == 0 || c.from <= w.End) {
				return false
			}
		}
		return true
	}
	// inScaled: whether the call surely fell inside a closed window of
	// scale PERIOD/ON (a busy machine can keep the thread off the CPU
	// for a whole window, or several).
	inScaled := func(c call, wins []Window) bool {
		for _, w := range wins {
			if w.Scale > 1 && w.End != 0 && c.from >= w.opened && c.to <= w.closing {
				return true
			}
		}
		return false
	}
	// A loop of calls until three windows have closed, a call fell
	// surely outside every window and one surely inside a window (the
	// bound only keeps a broken cycle from looping for ever).
	for i := 0; ; i++ {
		if _, closed := phase(); closed >= 3 && i%256 == 0 {
			wins, err := tr.Windows()
			if err != nil {
				t.Fatal(err)
			}
			if slices.ContainsFunc(calls, func(c call) bool { return outside(c, wins) }) &&
				slices.ContainsFunc(calls, func(c call) bool { return inScaled(c, wins) }) {
				break
			}
		}
		if i == 1e8 {
			t.Fatal("no window opened after 100,000,000 calls")
		}
		getppid()
		if i%4096 == 0 {
			drain()
		}
	}
	for i := 0; ; i++ {
		if p, _ := phase(); p == 2 {
			break
		}
		if i == 2000 {
			wins, _ := tr.Windows()
			for _, w := range wins[max(0, len(wins)-5):] {
				t.Logf("span %d..%d scale %g", w.Start, w.End, w.Scale)
			}
			t.Fatalf("the programs were not attached for good again after 2,000 slow calls (%d spans)", len(wins))
		}
		slow()
	}
	for i := 0; i < 30; i++ {
		slow()
	}
	wins, err := tr.Windows()
	if err != nil {
		t.Fatal(err)
	}
	tr.Remove(uint32(os.Getpid()))
	runtime.UnlockOSThread()
	drain()
	ratio := float64(period) / float64(on)
	// Each call by where it surely was: inside a span (from after its
	// attachment to before its detachment; an open one to the end) of
	// scale 1 or PERIOD/ON, or outside every span.
	var sureSteady, sureScaled, sureOutside int
	for _, c := range calls {
		for _, w := range wins {
			closing := w.closing
			if w.End == 0 {
				closing = math.MaxUint64
			}
			if c.from >= w.opened && c.to <= closing {
				if w.Scale == 1 {
					sureSteady++
				} else {
					sureScaled++
				}
			}
		}
		if outside(c, wins) {
			sureOutside++
		}
	}
	var steady, scaled int
	for _, e := range entries {
		switch e.scale {
		case 1:
			steady++
		case ratio:
			scaled++
		default:
			t.Errorf("a call at %d stands for %g calls, want 1 or %g", e.time, e.scale, ratio)
		}
	}
	// A call in flight at a span's end may run the entry program after
	// it (the detachment, or the generation's change, does not wait for
	// it): one per span.
	if steady < sureSteady || scaled < sureScaled || steady+scaled > len(calls)-sureOutside+len(wins) ||
		sureOutside == 0 || sureScaled == 0 || sureSteady < 60 {
		t.Errorf("of %d getppid calls, recorded: %d standing for 1, %d for %g; surely made: %d attached below the rate, %d in windows, %d outside every window (%d spans)",
			len(calls), steady, scaled, ratio, sureSteady, sureScaled, sureOutside, len(wins))
	}
	t.Logf("%d calls: %d recorded standing for 1 (%d surely below the rate), %d for %g (%d surely in windows), %d surely outside; %d spans",
		len(calls), steady, sureSteady, scaled, ratio, sureScaled, sureOutside, len(wins))
}

// TestWindowsNothingBetween: between two windows no system call program
// runs: the traced thread's calls made there (after the window's End,
// before the next one's Start) are neither recorded nor counted toward the
// rate, and the kernel's run counts of both programs (bpf_stats) do not
// move while this thread makes them; calls made in the windows are
// recorded.
// bench/windowtoggle says why the programs are detached rather than kept
// attached behind a flag.
func TestWindowsNothingBetween(t *testing.T) {
	testutil.NeedRoot(t)
	stats, err := ebpf.EnableStats(unix.BPF_STATS_RUN_TIME)
	if err != nil {
		t.Fatal(err)
	}
	defer stats.Close()
	threadStates(t, func(t *testing.T, hash bool) {
		const on, period, n = 2 * time.Millisecond, 100 * time.Millisecond, 500
		tr, tid := traceSelf(t, Options{Syscalls: true, Switches: true, RingBytes: 4 << 20,
			WindowOn: on, WindowPeriod: period, threadHash: hash})
		defer tr.Close()
		defer runtime.UnlockOSThread()
		runs := func() (n uint64) {
			for _, p := range tr.progs[:2] {
				st, err := p.Stats()
				if err != nil {
					t.Fatal(err)
				}
				n += st.RunCount
			}
			return n
		}
		ran := 0                // the programs' runs during the loops between windows
		var between [][2]uint64 // loops made between windows: from, to
		counted := 0            // their calls the entry program counted
		gap := uint64(0)        // the start of the window before the last loop
		for try := 0; len(between) < 3; try++ {
			if try == 1e6 {
				t.Fatalf("only %d loops of %d calls fitted between windows of %v every %v in 1,000,000 tries", len(between), n, on, period)
			}
			wins, err := tr.Windows()
			if err != nil {
				t.Fatal(err)
			}
			last := wins[len(wins)-1]
			if last.End == 0 {
				// A window: the same calls, recorded.
				for i := 0; i < 50; i++ {
					unix.Getppid()
				}
				continue
			}
			if last.Start == gap {
				time.Sleep(on)
				continue // one loop between each two windows
			}
			c0, r0, from := tr.count(slotCalls), runs(), monotonicNow()
			for i := 0; i < n; i++ {
				unix.Getppid()
			}
			to, r1, c1 := monotonicNow(), runs(), tr.count(slotCalls)
			wins, err = tr.Windows()
			if err != nil {
				t.Fatal(err)
			}
			if wins[len(wins)-1].Start != last.Start {
				continue // a window opened meanwhile: again
			}
			between, gap = append(between, [2]uint64{from, to}), last.Start
			counted += int(c1 - c0)
			ran += int(r1 - r0)
		}
		tr.Remove(uint32(os.Getpid()))
		wins, err := tr.Windows()
		if err != nil {
			t.Fatal(err)
		}
		outside, inside := 0, 0
		if err := tr.Drain(func(ev *Event) {
			if ev.TID != tid || ev.Switch || ev.Nr != unix.SYS_GETPPID {
				return
			}
			for _, b := range between {
				if ev.Time >= b[0] && ev.Time <= b[1] {
					outside++
					return
				}
			}
			if !ev.Exit {
				inside++
			}
		}); err != nil {
			t.Fatal(err)
		}
		// Only a program that was already running when its link closed
		// (another thread's call, the detachment does not wait for it)
		// may count or run between windows: a few, never this thread's
		// calls, made after the close was seen.
		if outside != 0 || counted >= n || ran >= n {
			t.Errorf("between windows: %d getppid records of this thread in %d loops of %d calls (want 0), %d calls counted toward the rate and %d program runs (want fewer than %d each)",
				outside, len(between), n, counted, ran, n)
		}
		if inside == 0 || runs() < uint64(inside) {
			t.Errorf("%d getppid entries of this thread recorded in %d windows, %d program runs counted: the test shows nothing", inside, len(wins), runs())
		}
		t.Logf("%d windows, %d loops between them: %d calls counted and %d program runs there, %d getppid entries recorded in windows", len(wins), len(between), counted, ran, inside)
	})
}

// TestWindowsLeftOutStayInTheirWindow: with a limit and windows above a
// rate, the calls the limit leaves out while the programs stay attached
// (standing for themselves) are not carried into an entry recorded in a
// window (whose count stands for PERIOD/ON times as many): an entry of a
// window counts only calls its thread made after the window started.
func TestWindowsLeftOutStayInTheirWindow(t *testing.T) {
	testutil.NeedRoot(t)
	threadStates(t, func(t *testing.T, hash bool) {
		tr, tid := traceSelf(t, Options{Syscalls: true, RingBytes: 4 << 20, Limit: 200, LimitBurst: 1,
			WindowOn: 2 * time.Millisecond, WindowPeriod: 6 * time.Millisecond, WindowAbove: 20000, threadHash: hash})
		defer tr.Close()
		var ends []uint64 // the clock after each getppid
		type entry struct{ gen, time, skipped uint64 }
		var entries []entry // getppid's, recorded in windows
		drain := func() {
			if err := tr.Drain(func(ev *Event) {
				if ev.TID == tid && !ev.Switch && !ev.Exit && ev.Nr == unix.SYS_GETPPID && tr.Scale(ev.Window) > 1 {
					entries = append(entries, entry{ev.Window, ev.Time, ev.Skipped})
				}
			}); err != nil {
				t.Fatal(err)
			}
		}
		// Calls above the rate, most left out by the limit (one in 5 ms
		// recorded), until three are recorded in windows; the bound only
		// keeps a broken cycle from looping for ever.
		for i := 0; len(entries) < 3; i++ {
			if i == 1e8 {
				t.Fatalf("%d calls recorded in windows after 100,000,000 calls", len(entries))
			}
			unix.Getppid()
			ends = append(ends, monotonicNow())
			if i%1024 == 0 {
				drain()
			}
		}
		wins, err := tr.Windows()
		if err != nil {
			t.Fatal(err)
		}
		tr.Remove(uint32(os.Getpid()))
		runtime.UnlockOSThread()
		start := map[uint64]uint64{} // a window's start by its generation
		for _, w := range wins {
			start[w.gen] = w.Start
		}
		// The thread's other calls (a signal's return, the runtime's) are
		// few: a margin for them.
		const others = 64
		for _, e := range entries {
			s, ok := start[e.gen]
			if !ok {
				t.Errorf("an entry of generation %d, which no window has", e.gen)
				continue
			}
			// Calls ending after the window's start, up to this entry:
			// two a getppid, since monotonicNow is a system call too
			// (x/sys's ClockGettime does not use the vDSO).
			i, _ := slices.BinarySearch(ends, s)
			j, _ := slices.BinarySearch(ends, e.time)
			if made := j - i + 1; e.skipped+1 > uint64(2*made+others) {
				t.Errorf("an entry of a window stands for %d calls left out before it, but its thread made %d calls in the window up to it", e.skipped, 2*made)
			}
		}
		t.Logf("%d calls, %d entries in %d windows", len(ends), len(entries), len(wins))
	})
}

// BenchmarkRecordedCall measures what a recorded system call costs with
// both chains (the user one walked at each call, the kernel one walked once
// and reused): cpu-ns/op in the calling thread's CPU time, and the entry
// and exit programs' mean run times by the kernel's count (bpf_stats); the
// user chain walked by the program (userStackID) or by the kernel's helper
// (helperWalk), from a call 0 or 60 frames deep. The helper's walk ends
// with a read that faults at the chain's root, which costs the thread
// more than the program's run time shows.
//
//	go test -run - -bench RecordedCall -benchtime 200000x ./internal/syscallprog
func BenchmarkRecordedCall(b *testing.B) {
	testutil.NeedRoot(b)
	stats, err := ebpf.EnableStats(unix.BPF_STATS_RUN_TIME)
	if err != nil {
		b.Fatal(err)
	}
	defer stats.Close()
	for _, helper := range []bool{false, true} {
		for _, depth := range []int{0, 60} {
			name := map[bool]string{false: "program", true: "helper"}[helper] + fmt.Sprintf("/depth%d", depth)
			b.Run(name, func(b *testing.B) {
				tr, err := New(Options{Syscalls: true, KernelStacks: true, StackBytes: 256, helperWalk: helper})
				if err != nil {
					b.Fatal(err)
				}
				defer tr.Close()
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				if err := tr.Add(uint32(os.Getpid())); err != nil {
					b.Fatal(err)
				}
				done := make(chan struct{})
				go func() { // the recorder's part: the ring drained
					for {
						select {
						case <-done:
							return
						case <-time.After(10 * time.Millisecond):
							_ = tr.Drain(func(*Event) {})
						}
					}
				}()
				programNs(b, tr, func() {
					callsBelow(depth, func() { getppidCPU(b) })
					close(done)
				})
				tr.Remove(uint32(os.Getpid()))
			})
		}
	}
}

// programNs runs f and reports the entry and exit programs' mean run
// time over the runs f made (bpf_stats: enter-ns, exit-ns).
func programNs(b *testing.B, tr *Tracer, f func()) {
	b.Helper()
	before := make([]*ebpf.ProgramStats, 2)
	for i := range before {
		var err error
		if before[i], err = tr.progs[i].Stats(); err != nil {
			b.Fatal(err)
		}
	}
	f()
	for i, unit := range []string{"enter-ns", "exit-ns"} {
		after, err := tr.progs[i].Stats()
		if err != nil {
			b.Fatal(err)
		}
		if runs := after.RunCount - before[i].RunCount; runs > 0 {
			b.ReportMetric(float64(after.Runtime-before[i].Runtime)/float64(runs), unit)
		}
	}
}

// traceReleased starts bin with args, adds it to tr once it waits in
// read(2) on its standard input (polled in /proc/PID/syscall: the
// loader's calls before are not traced), then gives it a byte, waits for
// its exit and removes it. It returns the process's id and what it wrote.
func traceReleased(t *testing.T, tr *Tracer, bin string, args ...string) (uint32, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out strings.Builder
	cmd.Stdout = &out
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := uint32(cmd.Process.Pid)
	stop := func() {
		cmd.Process.Kill()
		cmd.Wait()
	}
	sc := fmt.Sprintf("/proc/%d/syscall", pid)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		if b, _ := os.ReadFile(sc); strings.HasPrefix(string(b), "0 0x0 ") {
			break
		}
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("%s never waited in read(0, ...)", bin)
		}
	}
	if err := tr.Add(pid); err != nil {
		stop()
		t.Fatal(err)
	}
	if _, err := in.Write([]byte{1}); err != nil {
		stop()
		t.Fatal(err)
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	tr.Remove(pid)
	return pid, out.String()
}

// TestCopyUpToAFault: an entry's stack copy that would cross into a page
// never touched (which a BPF program cannot read) holds the stack up to
// the page boundary, not nothing.
func TestCopyUpToAFault(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "pagecopy", []string{"pagecopy.c"}, "-O2")
	tr, err := New(Options{Syscalls: true, StackBytes: 1024, RingBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	pid, stdout := traceReleased(t, tr, bin)
	var sp uint64
	if _, err := fmt.Sscanf(stdout, "sp %v\n", &sp); err != nil {
		t.Fatalf("reading the program's stack pointer in %q: %v", stdout, err)
	}
	var got []int
	err = tr.Drain(func(ev *Event) {
		if ev.TID == pid && !ev.Exit && !ev.Switch && ev.Nr == unix.SYS_GETPPID && ev.SP == sp {
			got = append(got, len(ev.Stack))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != 200 {
		t.Errorf("getppid's entries at SP %#x copied %v bytes, want one of 200 (up to the page boundary)", sp, got)
	}
}
