package syscallprog

import (
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/follow"
	"github.com/culprit-dev/culprit/internal/testutil"
)

// TestUserChainWalkedAsTheHelper: the entry program's own walk of the user
// call chain (userStackID) gives, call by call, the chain the kernel's
// helper (bpf_get_stack) gives, both tracers recording the same calls: a
// C program built with frame pointers (whose chain goes on through libc's
// start, built without) and without (the frame pointer register holds
// whatever the code keeps in it: a counter, a pointer, which the walk
// follows until a read faults), and a Go thread making calls 0, 50 and
// 200 frames deep (beyond MaxStack: the chain cut at the same depth).
func TestUserChainWalkedAsTheHelper(t *testing.T) {
	testutil.NeedRoot(t)
	set, own, helper := twoWalks(t, Options{Syscalls: true, RingBytes: 8 << 20})
	// chains drains tr: the user chains of tid's entries of call nr, in order.
	chains := func(tr *Tracer, tid uint32, nr uint64) [][]uint64 {
		var out [][]uint64
		if err := tr.Drain(func(ev *Event) {
			if ev.TID == tid && !ev.Exit && !ev.Switch && ev.Nr == nr {
				out = append(out, slices.Clone(tr.Stack(ev.UserStack)))
			}
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	compare := func(t *testing.T, tid uint32, nr uint64, want int) (depths []int) {
		a, b := chains(own, tid, nr), chains(helper, tid, nr)
		if len(a) != want || len(b) != want {
			t.Fatalf("%d and %d entries recorded, want %d each", len(a), len(b), want)
		}
		for i := range a {
			if !slices.Equal(a[i], b[i]) {
				t.Fatalf("entry %d: the program walked %x, the helper %x", i, a[i], b[i])
			}
			if !slices.Contains(depths, len(a[i])) {
				depths = append(depths, len(a[i]))
			}
		}
		return depths
	}
	for _, c := range []struct {
		name  string
		flags []string
	}{{"fp", []string{"-O2", "-fno-omit-frame-pointer"}}, {"nofp", []string{"-O2", "-fomit-frame-pointer"}}} {
		t.Run(c.name, func(t *testing.T) {
			bin := testutil.C(t, "getppids-"+c.name, []string{"getppids.c"}, c.flags...)
			const n = 5000 // past 4096: the no-fp loop's counter in the frame pointer register
			pid, _ := traceReleased(t, own, bin, "5000")
			depths := compare(t, pid, unix.SYS_GETPPID, n)
			t.Logf("chains of %v addresses", depths)
			// The IP in libc's syscall(3), whose frame is not
			// one, then main's return address into libc's start.
			if c.name == "fp" && slices.Max(depths) < 2 {
				t.Errorf("chains of %v addresses: main's caller not reached", depths)
			}
		})
	}
	t.Run("go", func(t *testing.T) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tid := uint32(unix.Gettid())
		if err := set.Add(uint32(os.Getpid())); err != nil {
			t.Fatal(err)
		}
		for _, d := range []int{0, 50, 200} {
			callsBelow(d, func() {
				for range 10 {
					unix.Getppid()
				}
			})
		}
		set.Remove(uint32(os.Getpid()))
		depths := compare(t, tid, unix.SYS_GETPPID, 30)
		if slices.Max(depths) != userDepth() {
			t.Errorf("chains of %v addresses, want the deepest cut at %d", depths, userDepth())
		}
	})
}

// callsBelow calls f n frames below its caller.
//
//go:noinline
func callsBelow(n int, f func()) {
	if n == 0 {
		f()
		return
	}
	callsBelow(n-1, f)
}

// twoWalks makes a follow set and two tracers of it with options o: one
// walking user chains with its own program, one with the kernel's helper.
// They close when the test ends.
func twoWalks(t *testing.T, o Options) (*follow.Set, *Tracer, *Tracer) {
	t.Helper()
	set, err := follow.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { set.Close() })
	o.Follow = set
	own, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { own.Close() })
	o.helperWalk = true
	helper, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { helper.Close() })
	return set, own, helper
}

// TestSwitchUserChainWalkedAsTheHelper: the switch program's own walk of
// a preempted thread's user chain gives the helper's, switch by switch:
// two threads spinning on one CPU, 0 and 200 frames deep, preempt each
// other, recorded by two tracers at once.
func TestSwitchUserChainWalkedAsTheHelper(t *testing.T) {
	testutil.NeedRoot(t)
	set, own, helper := twoWalks(t, Options{Switches: true, RingBytes: 8 << 20})
	tids := make(chan uint32, 2)
	start, done := make(chan struct{}), make(chan struct{}, 2)
	for _, d := range []int{0, 200} {
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var one unix.CPUSet
			one.Set(0)
			if err := unix.SchedSetaffinity(0, &one); err != nil {
				t.Error(err)
			}
			tids <- uint32(unix.Gettid())
			<-start
			callsBelow(d, func() {
				for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
				}
			})
			done <- struct{}{}
		}()
	}
	a, b := <-tids, <-tids
	if err := set.Add(uint32(os.Getpid())); err != nil {
		t.Fatal(err)
	}
	close(start)
	<-done
	<-done
	set.Remove(uint32(os.Getpid()))
	chains := func(tr *Tracer) map[uint32][][]uint64 {
		out := map[uint32][][]uint64{}
		if err := tr.Drain(func(ev *Event) {
			if (ev.TID == a || ev.TID == b) && ev.Switch {
				out[ev.TID] = append(out[ev.TID], slices.Clone(tr.Stack(ev.UserStack)))
			}
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	x, y := chains(own), chains(helper)
	for _, tid := range []uint32{a, b} {
		if len(x[tid]) < 5 || len(x[tid]) != len(y[tid]) {
			t.Fatalf("thread %d: %d and %d switches recorded, want the same, at least 5", tid, len(x[tid]), len(y[tid]))
		}
		deepest := 0
		for i := range x[tid] {
			if !slices.Equal(x[tid][i], y[tid][i]) {
				t.Fatalf("thread %d, switch %d: the program walked %x, the helper %x", tid, i, x[tid][i], y[tid][i])
			}
			deepest = max(deepest, len(x[tid][i]))
		}
		t.Logf("thread %d: %d switches, chains up to %d addresses", tid, len(x[tid]), deepest)
	}
}

// TestWakerUserChainWalkedAsTheHelper: the waker program's own walk of a
// traced waker's user chain gives the helper's, wake-up by wake-up: a
// thread writing to a pipe wakes another blocked reading it, 20 frames
// deep, recorded by two tracers at once.
func TestWakerUserChainWalkedAsTheHelper(t *testing.T) {
	testutil.NeedRoot(t)
	set, own, helper := twoWalks(t, Options{Wakeups: true, WakerStacks: true, RingBytes: 4 << 20})
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	tid, done := pipeReader(p[0])
	rtid := uint32(tid)
	if err := set.Add(uint32(os.Getpid())); err != nil {
		t.Fatal(err)
	}
	callsBelow(20, func() {
		for range 20 {
			time.Sleep(2 * time.Millisecond) // the reader blocks again
			unix.Write(p[1], []byte{'x'})
		}
		unix.Write(p[1], []byte{'q'})
	})
	<-done
	set.Remove(uint32(os.Getpid()))
	chains := func(tr *Tracer) [][]uint64 {
		var out [][]uint64
		if err := tr.Drain(func(ev *Event) {
			if ev.Waking && ev.TID == rtid && ev.UserStack >= 0 {
				out = append(out, slices.Clone(tr.Stack(ev.UserStack)))
			}
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	x, y := chains(own), chains(helper)
	if len(x) < 10 || len(x) != len(y) {
		t.Fatalf("%d and %d wake-ups of the reader with the waker's chain, want the same, at least 10", len(x), len(y))
	}
	for i := range x {
		if !slices.Equal(x[i], y[i]) {
			t.Fatalf("wake-up %d: the program walked %x, the helper %x", i, x[i], y[i])
		}
	}
	t.Logf("%d wake-ups, chains of %d addresses", len(x), len(x[0]))
}
