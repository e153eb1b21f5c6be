package syscallprog

import (
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// TestBlockingChainsOnly: with Options.BlockingChainsOnly a thread's
// switches carry no user chain, registers or stack copy; each sleep
// leaves the CPU asleep with its kernel chain, and a preemption (or a
// switch that leaves the thread runnable) has no chain at all.
func TestBlockingChainsOnly(t *testing.T) {
	testutil.NeedRoot(t)
	threadStates(t, func(t *testing.T, hash bool) {
		tr, tid := traceSelf(t, Options{Switches: true, BlockingChainsOnly: true, StackBytes: 256, RingBytes: 1 << 20, threadHash: hash})
		defer tr.Close()
		const n = 20
		interrupted := 0
		for i := 0; i < n; i++ {
			ts := unix.NsecToTimespec(int64(time.Millisecond))
			if unix.Nanosleep(&ts, nil) != nil {
				interrupted++
			}
		}
		tr.Remove(uint32(os.Getpid()))
		runtime.UnlockOSThread()
		asleep, runnable := 0, 0
		err := tr.Drain(func(ev *Event) {
			if ev.TID != tid {
				return
			}
			if !ev.Switch {
				t.Errorf("a record other than a switch: %+v", ev)
				return
			}
			if ev.UserStack != NoStack || ev.IP != 0 || ev.SP != 0 || len(ev.Stack) != 0 || ev.Reduced {
				t.Errorf("a switch with user state: user stack %d, IP %#x, SP %#x, %d bytes copied, reduced %v", ev.UserStack, ev.IP, ev.SP, len(ev.Stack), ev.Reduced)
			}
			ks := tr.Stack(ev.KernStack)
			switch st := SwitchState(ev.Nr); st {
			case 0, 0x100:
				runnable++
				if ev.KernStack >= 0 {
					t.Errorf("state %#x (runnable): kernel chain %d (%d frames), want none", st, ev.KernStack, len(ks))
				}
			case 1:
				if len(ks) > 3 {
					asleep++
				} else {
					t.Errorf("asleep with %d kernel frames (id %d)", len(ks), ev.KernStack)
				}
			default:
				t.Logf("state %#x: %d kernel frames", st, len(ks))
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		// As in TestRecordsOwnSwitches: a sleep a signal cut short, or
		// one the thread was preempted before for longer than its timer,
		// need not leave the CPU asleep.
		if asleep < n-interrupted-runnable {
			t.Errorf("%d switches asleep with their kernel chain, %d runnable, %d sleeps interrupted; want at least %d asleep",
				asleep, runnable, interrupted, n-interrupted-runnable)
		}
	})
}
