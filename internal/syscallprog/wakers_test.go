package syscallprog

import (
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// TestWakerStacks: with Options.WakerStacks a traced thread's wake-up of
// another traced thread (a write to the pipe the other reads) is
// recorded with the waker's user chain, registers and stack copy, and
// its wake-ups of a process not traced (cat, reading its standard
// input) are not recorded at all.
func TestWakerStacks(t *testing.T) {
	testutil.NeedRoot(t)
	cat := exec.Command("cat")
	in, err := cat.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.Start(); err != nil {
		t.Fatal(err)
	}
	defer cat.Wait()
	defer in.Close()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	threadStates(t, func(t *testing.T, hash bool) {
		tr, tid := traceSelf(t, Options{Wakeups: true, WakerStacks: true, StackBytes: 256, RingBytes: 1 << 20, threadHash: hash})
		defer tr.Close()
		// The reader: a thread of this process that blocks in read.
		reader := make(chan int)
		done := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			reader <- unix.Gettid()
			b := make([]byte, 1)
			for {
				if n, err := unix.Read(p[0], b); n != 1 || err != nil || b[0] == 'q' {
					close(done)
					return
				}
			}
		}()
		rtid := <-reader
		const n = 10
		for i := 0; i < n; i++ {
			time.Sleep(2 * time.Millisecond) // the reader blocks again
			unix.Write(p[1], []byte{'x'})
			in.Write([]byte("x\n")) // wakes cat, which is not traced
		}
		unix.Write(p[1], []byte{'q'})
		<-done
		tr.Remove(uint32(os.Getpid()))
		runtime.UnlockOSThread()
		withStack := 0
		err := tr.Drain(func(ev *Event) {
			if !ev.Waking {
				return
			}
			if ev.TID == uint32(cat.Process.Pid) {
				t.Errorf("a wake-up of cat, which is not traced: %+v", ev)
			}
			if ev.TID != uint32(rtid) || uint32(ev.Nr) != tid {
				return
			}
			us := tr.Stack(ev.UserStack)
			if ev.UserStack >= 0 && len(us) > 2 && us[0] == ev.IP && ev.SP != 0 && (len(ev.Stack) == 256 || ev.Reduced) {
				withStack++
			} else {
				t.Logf("a wake-up of the reader: user stack %d (%d frames), IP %#x, SP %#x, %d bytes copied", ev.UserStack, len(us), ev.IP, ev.SP, len(ev.Stack))
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		// A write finds the reader blocked unless, on a busy machine,
		// it has not come back to its read yet after 2 ms: most do.
		if withStack < n/2 {
			t.Errorf("%d of %d writes recorded as the reader's wake-ups with the writer's stack", withStack, n)
		}
	})
}

// TestWakerStacksInterrupt: a timer's interrupt that wakes a traced
// thread while another traced thread runs in user mode on that CPU is
// not that thread's wake-up: both pinned to one CPU, the sleeper's 1 ms
// sleeps end while the spinner spins, and no wake-up of the sleeper is
// recorded as the spinner's with its stack; those the interrupt made on
// it are FromInterrupt.
func TestWakerStacksInterrupt(t *testing.T) {
	testutil.NeedRoot(t)
	threadStates(t, func(t *testing.T, hash bool) {
		tr, tid := traceSelf(t, Options{Wakeups: true, WakerStacks: true, StackBytes: 256, RingBytes: 1 << 20, threadHash: hash})
		defer tr.Close()
		var cpu unix.CPUSet
		cpu.Set(0)
		if err := unix.SchedSetaffinity(0, &cpu); err != nil {
			t.Fatal(err)
		}
		sleeper := make(chan int)
		done := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			unix.SchedSetaffinity(0, &cpu)
			sleeper <- unix.Gettid()
			for i := 0; i < 20; i++ {
				ts := unix.NsecToTimespec(int64(time.Millisecond))
				unix.Nanosleep(&ts, nil)
			}
			close(done)
		}()
		stid := <-sleeper
		// Before it ran, the runtime may have woken the sleeper's thread
		// from the spinner's to start its goroutine: a wake-up of its own.
		var ts unix.Timespec
		unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
		since := uint64(ts.Nano())
		// Spin in user mode until the sleeper is done (a channel poll
		// is a few loads, no system call).
		for spinning := true; spinning; {
			select {
			case <-done:
				spinning = false
			default:
			}
		}
		tr.Remove(uint32(os.Getpid()))
		runtime.UnlockOSThread()
		interrupts := 0
		err := tr.Drain(func(ev *Event) {
			if !ev.Waking || ev.TID != uint32(stid) || uint32(ev.Nr) != tid || ev.Time < since {
				return
			}
			if ev.UserStack == FromInterrupt {
				interrupts++
			} else {
				t.Errorf("the sleeper's wake-up recorded as the spinner's: user stack %d, IP %#x", ev.UserStack, ev.IP)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		// The spinner is not always on the CPU when a timer fires (the
		// sleeper's own switches, other tasks on a busy machine), so no
		// count is asked for; the log says how many there were.
		t.Logf("%d of the sleeper's 20 wake-ups made by an interrupt on the spinner", interrupts)
	})
}
