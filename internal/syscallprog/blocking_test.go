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

// TestBlockedKernelChainReused: without system call records, with
// Options.BlockingChainsOnly (trace --sched) and without (record --events
// cpu,sched: the switch program with its user chain and copy), a thread
// that blocks in the same call from the same place over and over has its
// kernel chain walked about once, the later switches reusing it; blocking
// in another call from the same place (Go's system call entry), its
// switches get that call's chain, never the other's.
func TestBlockedKernelChainReused(t *testing.T) {
	testutil.NeedRoot(t)
	for _, blocking := range []bool{true, false} {
		name := "events"
		if blocking {
			name = "blocking-only"
		}
		t.Run(name, func(t *testing.T) { blockedKernelChainReused(t, blocking) })
	}
}

func blockedKernelChainReused(t *testing.T, blocking bool) {
	sleep, sel := kernelSymbol(t, "__x64_sys_nanosleep"), kernelSymbol(t, "__x64_sys_pselect6")
	// The Go runtime parks this thread in a futex of its own now and then
	// (a stop for the collector): a third call from another place.
	futex := kernelSymbol(t, "__x64_sys_futex")
	threadStates(t, func(t *testing.T, hash bool) {
		tr, tid := traceSelf(t, Options{Switches: true, BlockingChainsOnly: blocking, StackBytes: 256, RingBytes: 1 << 20, threadHash: hash})
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
		in := func(r symRange, chain []uint64) bool {
			for _, pc := range chain {
				if r.has(pc) {
					return true
				}
			}
			return false
		}
		// others: the switches that may have walked their chain besides
		// this thread's asleep (the blocking program walks only for a
		// thread asleep; the events' walks for every switch outside a
		// recorded call).
		sleeps, selects, parked, others := 0, 0, 0, uint64(0)
		err := tr.Drain(func(ev *Event) {
			if !ev.Switch {
				return
			}
			if ev.TID != tid || ev.Nr>>32 != 0 || SwitchState(ev.Nr) != 1 {
				if !blocking || ev.TID != tid && ev.Nr>>32 == 0 && SwitchState(ev.Nr) == 1 {
					others++
				}
				return
			}
			ks := tr.KernelStack(ev.KernStack)
			s, x := in(sleep, ks), in(sel, ks)
			switch {
			case s && !x:
				sleeps++
			case x && !s:
				selects++
			case !s && !x && in(futex, ks):
				parked++
			default:
				t.Errorf("asleep with kernel chain %d, in nanosleep %v, in pselect6 %v: %x", ev.KernStack, s, x, ks)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		// A sleep a signal cut short, or one the thread was preempted
		// before for longer than its timer, need not leave the CPU asleep.
		if sleeps < rounds*n*3/4 || selects < rounds*n*3/4 {
			t.Errorf("%d switches asleep in nanosleep, %d in pselect6: want about %d each", sleeps, selects, rounds*n)
		}
		// This thread walks each call's chain about once (without reuse,
		// at each of its switches asleep); the count takes in the
		// runtime's other threads, which may walk at each switch.
		if w := tr.kernelWalks(); w > others+rounds*n/2 {
			t.Errorf("%d kernel chains walked for %d switches asleep here and %d in other threads: want this thread's reused",
				w, sleeps+selects, others)
		} else {
			t.Logf("%d kernel chains walked for %d switches asleep here (%d parked by the runtime) and %d in other threads", w, sleeps+selects+parked, parked, others)
		}
	})
}

// TestSwitchIns: with Options.SwitchIns each switch program records the
// traced thread's switches onto a CPU: after each switch away a switch
// in of the same thread, a sleep's no sooner than the sleep's end, on
// the CPU its next switch away leaves (a running thread does not move)
// and before that, and one for each sleep the kernel showed the
// switch onto the CPU of.
func TestSwitchIns(t *testing.T) {
	testutil.NeedRoot(t)
	for _, o := range []Options{
		{Switches: true, SwitchIns: true, BlockingChainsOnly: true, StackBytes: 256, RingBytes: 1 << 20},
		{Switches: true, SwitchIns: true, StackBytes: 256, RingBytes: 1 << 20},
	} {
		name := "all-chains"
		if o.BlockingChainsOnly {
			name = "blocking-chains"
		}
		t.Run(name, func(t *testing.T) {
			threadStates(t, func(t *testing.T, hash bool) {
				o.threadHash = hash
				tr, tid := traceSelf(t, o)
				defer tr.Close()
				// n sleeps that ran their whole 1 ms: a signal (the Go
				// runtime's preemption) ends a sleep early with EINTR,
				// and that sleep does not count.
				const n = 20
				var sleeps [][2]uint64 // the full sleeps' calls, CLOCK_MONOTONIC
				for tries := 0; len(sleeps) < n && tries < 10*n; tries++ {
					ts := unix.NsecToTimespec(int64(time.Millisecond))
					start := monotonic(t)
					if unix.Nanosleep(&ts, nil) == nil {
						sleeps = append(sleeps, [2]uint64{start, monotonic(t)})
					}
				}
				tr.Remove(uint32(os.Getpid()))
				runtime.UnlockOSThread()
				var evs []Event
				err := tr.Drain(func(ev *Event) {
					if ev.TID == tid {
						if ev.PID != uint32(os.Getpid()) {
							t.Errorf("a record of thread %d in process %d, want %d", ev.TID, ev.PID, os.Getpid())
						}
						evs = append(evs, *ev)
					}
				})
				if err != nil {
					t.Fatal(err)
				}
				// A full 1 ms sleep wakes its thread no sooner than 1 ms
				// after the call began: each has a switch-in between
				// then and the call's return. (The switch away is
				// stamped after the timer is armed, some µs later, or
				// much later when the virtual CPU stalls, so the gap
				// from it says less.) The Go runtime's own waits and
				// signals (asynchronous preemption ends a sleep with
				// EINTR) add shorter sleeps. A switch-in stamped for the
				// thread leaving the CPU would come right after every
				// switch away, before its sleep's 1 ms.
				ins, outs, asleep := 0, 0, 0
				woke := make([]bool, len(sleeps))
				for i, ev := range evs {
					if !ev.SwitchIn {
						if ev.Switch {
							outs++
						}
						continue
					}
					ins++
					if ev.Switch || ev.Waking || ev.Exit {
						t.Fatalf("a switch-in of another kind too: %+v", ev)
					}
					if i == 0 {
						// It ran from Add on: its first switch is away.
						t.Errorf("the thread's first record is a switch-in: %+v", ev)
						continue
					}
					prev := evs[i-1]
					if !prev.Switch || prev.Time > ev.Time {
						t.Errorf("switch-in at %d after %+v, want after a switch away", ev.Time, prev)
					}
					if SwitchState(prev.Nr) == 1 {
						asleep++
					}
					for k, sl := range sleeps {
						if ev.Time >= sl[0]+uint64(time.Millisecond) && ev.Time <= sl[1] {
							woke[k] = true
						}
					}
					if i+1 < len(evs) && evs[i+1].Switch {
						if next := evs[i+1]; next.CPU != ev.CPU || next.Time <= ev.Time {
							t.Errorf("switched in on CPU %d at %d, away from CPU %d at %d", ev.CPU, ev.Time, next.CPU, next.Time)
						}
					}
				}
				slept := 0
				for _, w := range woke {
					if w {
						slept++
					}
				}
				// A kernel may run no tracepoint program while some
				// task runs (docs/cli.md, culprit states: a VM's agent):
				// the switch from it onto this thread is then not seen,
				// after a sleep or any other switch away (the runtime's
				// waits, a preemption). Such a task runs rarely: most
				// sleeps have theirs, and every switch-in missing is a
				// switch away right after another, one switch away more
				// than the switch-ins.
				missed, away := 0, false
				for _, ev := range evs {
					switch {
					case ev.Switch:
						if away {
							missed++
						}
						away = true
					case ev.SwitchIn:
						away = false
					}
				}
				if len(sleeps) < n || slept < len(sleeps)*3/4 || missed > outs/4 || outs-ins > 1+missed || ins-outs > 1 {
					t.Errorf("%d switches in (%d after a sleep), %d away, %d away after another; %d of %d full sleeps of 1 ms have a switch-in after their 1 ms",
						ins, asleep, outs, missed, slept, len(sleeps))
				}
				execRuntimes(t, evs)
			})
		})
	}
}

// execRuntimes checks the thread's time on a CPU (se.sum_exec_runtime)
// in its switch records: every record has it (this kernel's BTF has the
// field); a switch in carries what its switch away before it did (the
// thread did not run in between: equal, but for a run whose switch away
// went unseen), a switch away at least what its switch in did, and the
// run between them, by the kernel's account, is no longer than by the
// records' stamps, taken later than the clock the kernel's account
// reads, by a millisecond at most but where the virtual CPU stalled.
func execRuntimes(t *testing.T, evs []Event) {
	t.Helper()
	pairs, same, over := 0, 0, 0
	for i, ev := range evs {
		if (ev.Switch || ev.SwitchIn) && !ev.HasExecRuntime {
			t.Fatalf("a switch record without the thread's sum_exec_runtime: %+v", ev)
		}
		if i == 0 || !(ev.Switch || ev.SwitchIn) {
			continue
		}
		prev := evs[i-1]
		switch {
		case ev.SwitchIn && prev.Switch:
			pairs++
			if ev.ExecRuntime == prev.ExecRuntime {
				same++
			}
			if ev.ExecRuntime < prev.ExecRuntime {
				t.Errorf("switched in with %d ns on the CPU, away before with %d", ev.ExecRuntime, prev.ExecRuntime)
			}
		case ev.Switch && prev.SwitchIn:
			if ev.ExecRuntime < prev.ExecRuntime {
				t.Errorf("switched away with %d ns on the CPU, in before with %d", ev.ExecRuntime, prev.ExecRuntime)
			} else if k, s := ev.ExecRuntime-prev.ExecRuntime, ev.Time-prev.Time; k > s+uint64(time.Millisecond) {
				over++
				t.Logf("a run of %d ns by the kernel's account, %d ns by the stamps", k, s)
			}
		}
	}
	// The account starts where __schedule began, before the pick: a
	// virtual CPU stalled there (1.3 ms once on a busy 2-CPU VM) puts a
	// run's stamp that much later. A field read from the wrong task would
	// be off at most switches.
	if over > 1 {
		t.Errorf("%d runs longer by the kernel's account than by the stamps, by over 1 ms", over)
	}
	if pairs == 0 || same < pairs*3/4 {
		t.Errorf("%d of %d switches in carry the time on the CPU of the switch away before them", same, pairs)
	}
}

// monotonic reads CLOCK_MONOTONIC, the clock of the programs' records.
func monotonic(t *testing.T) uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	return uint64(ts.Nano())
}
