package syscallprog

import (
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// TestRecordsOwnSystemCalls traces this process, makes a known number of
// getppid calls on one thread and checks each has an entry with its user
// call chain and an exit, paired by thread.
func TestRecordsOwnSystemCalls(t *testing.T) {
	testutil.NeedRoot(t)
	for _, kernel := range []bool{false, true} {
		tr, err := New(Options{KernelStacks: kernel, StackBytes: 256, RingBytes: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		runtime.LockOSThread()
		tid := uint32(unix.Gettid())
		if err := tr.Add(uint32(os.Getpid())); err != nil {
			t.Fatal(err)
		}
		const n = 1000
		for i := 0; i < n; i++ {
			unix.Getppid()
		}
		tr.Remove(uint32(os.Getpid()))
		runtime.UnlockOSThread()
		enters, exits, withStack, withKernel, copied := 0, 0, 0, 0, 0
		err = tr.Drain(func(ev *Event) {
			if ev.TID != tid || ev.Nr != unix.SYS_GETPPID || ev.PID != uint32(os.Getpid()) {
				return
			}
			if len(tr.Stack(ev.KernStack)) > 0 {
				withKernel++
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
