package syscallprog

import (
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// threadCPU is the calling thread's CPU time.
func threadCPU() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return time.Duration(ts.Nano())
}

func monotonicTime() uint64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Nano())
}

var spinSink uint64

//go:noinline
func spinTicks(d time.Duration) {
	end := threadCPU() + d
	for threadCPU() < end {
		x := spinSink
		for i := 0; i < 1<<20; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
		spinSink = x
	}
}

//go:noinline
func readTicks(d time.Duration, fd int) {
	buf := make([]byte, 1<<16)
	end := threadCPU() + d
	for threadCPU() < end {
		for i := 0; i < 64; i++ {
			unix.Read(fd, buf)
		}
	}
}

// funcAt names the Go function holding pc.
func funcAt(pc uint64) string {
	if f := runtime.FuncForPC(uintptr(pc)); f != nil {
		return f.Name()
	}
	return ""
}

// TestTicks: with Ticks, a thread that spins in user code, then reads
// /dev/zero in a loop, has a record at about each tick of its CPU time:
// the spin's with the spinning function at the top of the user chain and
// no kernel frames once the interrupt's are trimmed, the reads' with the
// kernel's read path below the interrupt and the reading function in the
// user chain.
func TestTicks(t *testing.T) {
	testutil.NeedRoot(t)
	period, err := TickPeriod()
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open("/dev/zero", unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	tr, tid := traceSelf(t, Options{Ticks: true, StackBytes: 256, RingBytes: 4 << 20})
	defer tr.Close()
	const phase = 400 * time.Millisecond
	t0 := monotonicTime()
	c0 := threadCPU()
	spinTicks(phase)
	t1, c1 := monotonicTime(), threadCPU()
	readTicks(phase, fd)
	t2, c2 := monotonicTime(), threadCPU()
	tr.Remove(uint32(os.Getpid()))
	runtime.UnlockOSThread()

	type phaseTicks struct {
		n, top, userMode, kernel, inText, caller int
	}
	var spin, read phaseTicks
	if err := tr.Drain(func(ev *Event) {
		if !ev.Tick || ev.TID != tid || ev.Time < t0 || ev.Time > t2 {
			return
		}
		k := tr.TrimInterrupt(ev.KernelChain)
		if ev.Time < t1 {
			spin.n++
			if len(ev.UserChain) > 0 && strings.HasSuffix(funcAt(ev.UserChain[0]), ".spinTicks") {
				spin.top++
			}
			if len(k) == 0 {
				spin.userMode++
			}
			return
		}
		read.n++
		if len(k) > 0 && len(k) < len(ev.KernelChain) {
			read.kernel++
		}
		inText := len(k) > 0
		for _, pc := range k {
			inText = inText && pc >= 0xffff800000000000
		}
		if inText {
			read.inText++
		}
		for _, pc := range ev.UserChain {
			if strings.HasSuffix(funcAt(pc-1), ".readTicks") || strings.HasSuffix(funcAt(pc), ".readTicks") {
				read.caller++
				break
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		name string
		n    int
		cpu  time.Duration
	}{{"spinning", spin.n, c1 - c0}, {"reading", read.n, c2 - c1}} {
		want := float64(p.cpu) / float64(period)
		if float64(p.n) < want/2 || float64(p.n) > want*1.5 {
			t.Errorf("%s for %v of CPU time at a tick every %v: %d ticks recorded, want about %.0f", p.name, p.cpu, time.Duration(period), p.n, want)
		}
	}
	t.Logf("spinning: %d ticks, %d in spinTicks, %d in user mode; reading: %d ticks, %d in the kernel, %d in kernel text, %d with readTicks in the user chain (%v/%v of CPU time)",
		spin.n, spin.top, spin.userMode, read.n, read.kernel, read.inText, read.caller, c1-c0, c2-c1)
	if spin.n == 0 || spin.top < spin.n*8/10 || spin.userMode < spin.n*8/10 {
		t.Errorf("spinning: %d ticks, %d with spinTicks at the top of the user chain, %d without kernel frames below the interrupt's; want 80%% or more each", spin.n, spin.top, spin.userMode)
	}
	if read.n == 0 || read.kernel < read.n/2 || read.inText != read.kernel || read.caller < read.n*8/10 {
		t.Errorf("reading: %d ticks, %d with kernel frames below the interrupt's (want half or more), %d of those all in kernel text (want all), %d with readTicks in the user chain (want 80%% or more)",
			read.n, read.kernel, read.inText, read.caller)
	}
}
