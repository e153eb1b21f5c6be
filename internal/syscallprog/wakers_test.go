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
		rtid, done := pipeReader(p[0])
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
// process while a traced thread runs in user mode on that CPU is not that
// thread's wake-up: the test's thread, pinned to one CPU, starts a shell
// there (its child, traced, on the same CPU) that sleeps 1 ms twenty
// times, and spins in user mode until it is done; no wake-up of the
// shell's processes is recorded as the spinner's with its stack, and
// those an interrupt made on it are FromInterrupt. (The sleeper is not a
// thread of the test: the Go runtime's threads wake each other.)
func TestWakerStacksInterrupt(t *testing.T) {
	testutil.NeedRoot(t)
	threadStates(t, func(t *testing.T, hash bool) {
		tr, tid := traceSelf(t, Options{Wakeups: true, WakerStacks: true, StackBytes: 256, RingBytes: 1 << 20, threadHash: hash})
		defer tr.Close()
		unpin := testutil.PinThread(t, 0)
		sh := exec.Command("sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do sleep 0.001; done")
		if err := sh.Start(); err != nil { // forked by this thread: on CPU 0 too
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { sh.Wait(); close(done) }()
		// Spin in user mode until the shell is done (a channel poll is a
		// few loads, no system call).
		for spinning := true; spinning; {
			select {
			case <-done:
				spinning = false
			default:
			}
		}
		tr.Remove(uint32(os.Getpid()))
		unpin()
		runtime.UnlockOSThread()
		interrupts := 0
		err := tr.Drain(func(ev *Event) {
			if !ev.Waking || ev.PID == uint32(os.Getpid()) || uint32(ev.Nr) != tid {
				return
			}
			switch {
			case ev.UserStack == FromInterrupt:
				interrupts++
			case ev.IP != 0:
				t.Errorf("a wake-up of the shell's process %d recorded as the spinner's: user stack %d, IP %#x", ev.PID, ev.UserStack, ev.IP)
			}
			// Else the shell's first wake-up, by the thread that forked
			// it (sched_wakeup_new's record, without stack).
		})
		if err != nil {
			t.Fatal(err)
		}
		// The spinner is not always on the CPU when a timer fires (other
		// tasks of a busy machine), so no count is asked for.
		t.Logf("%d of the shell's wake-ups made by an interrupt on the spinner", interrupts)
	})
}

// pipeReader starts a thread of this process that blocks in read on fd
// until it reads a 'q' (or fails): its thread id, and a channel closed
// when it ends.
func pipeReader(fd int) (int, <-chan struct{}) {
	reader, done := make(chan int), make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		reader <- unix.Gettid()
		b := make([]byte, 1)
		for {
			if n, err := unix.Read(fd, b); n != 1 || err != nil || b[0] == 'q' {
				close(done)
				return
			}
		}
	}()
	return <-reader, done
}
