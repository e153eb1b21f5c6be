package recorder

import (
	"fmt"
	"runtime"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/perf"
)

// SampleCost is what one cpu-clock sample costs the thread it interrupts
// on this machine, measured by MeasureSampleCost.
type SampleCost struct {
	PerSample time.Duration // the thread's CPU time a sample takes from its own work
	Samples   int           // samples the measurement took
}

// sampleCostPeriod is the measurement's sampling period, 5,000 samples a
// second of CPU time: at 6 µs a sample (a timer interrupt on the machines
// measured without a hypervisor's slow path) they take 3% of the spinning
// thread's time, at 50 µs (a guest whose every interrupt exits to the
// host) a quarter.
const sampleCostPeriod = 200 * time.Microsecond

// sampleCostPhase is the CPU time of each phase of the measurement; four
// pairs of phases, with and without the event, take 80 ms of one CPU.
const (
	sampleCostPhase  = 10 * time.Millisecond
	sampleCostRounds = 4
)

// spinSink keeps the spin loop's work from being optimized away.
var spinSink uint64

// MeasureSampleCost measures what a cpu-clock sample costs a thread here:
// a thread of culprit's spins on arithmetic in phases of equal CPU time,
// alternately without and with a cpu-clock event sampling it (a sample
// such as culprit's samples take: the kernel's call chain, the user
// registers and 1 KiB of its stack), and the work it lost a second of
// CPU with the event, over the samples a second, is the cost of one. The
// VM's own interruptions fall on both phases alike; each pair of phases
// gives a figure and the median is kept. The timer interrupt is most of a
// sample's cost (docs/performance.md, "Per sample"), and it is what a
// hypervisor can make slow.
func MeasureSampleCost() (SampleCost, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return SampleCost{}, fmt.Errorf("reading the thread's CPU time: %w", err)
	}
	ev, err := perf.Open(perf.Config{ClockPeriod: uint64(sampleCostPeriod), Disabled: true, NoSideband: true,
		NoUserChain: true, StackBytes: 1024, UserRegs: perf.RegsUnwind}, unix.Gettid(), -1, -1)
	if err != nil {
		return SampleCost{}, err
	}
	defer ev.Close()
	ring, err := perf.MapRing(ev, 64)
	if err != nil {
		return SampleCost{}, err
	}
	defer ring.Close()
	// rate is the work done a nanosecond of the thread's CPU time in a
	// phase of sampleCostPhase.
	rate := func() float64 {
		start := threadCPU()
		var n, x uint64 = 0, spinSink | 1
		for {
			for range 4096 {
				x ^= x << 13
				x ^= x >> 7
				x ^= x << 17
			}
			n += 4096
			if d := threadCPU() - start; d >= sampleCostPhase {
				spinSink = x
				return float64(n) / float64(d)
			}
		}
	}
	var costs []float64
	samples := 0
	var buf []byte
	var recs [][]byte
	for range sampleCostRounds {
		bare := rate()
		if err := ev.Enable(); err != nil {
			return SampleCost{}, err
		}
		sampled := rate()
		if err := ev.Disable(); err != nil {
			return SampleCost{}, err
		}
		buf, recs = ring.Peek(buf[:0], recs[:0])
		for _, r := range recs {
			if len(r) >= 8 && uint32(r[0])|uint32(r[1])<<8|uint32(r[2])<<16|uint32(r[3])<<24 == unix.PERF_RECORD_SAMPLE {
				samples++
			}
		}
		ring.Release()
		// The share of the thread's time the samples took, over the
		// samples a second of its CPU time.
		costs = append(costs, (1-sampled/bare)*float64(sampleCostPeriod))
	}
	if samples == 0 {
		return SampleCost{}, fmt.Errorf("a cpu-clock event on culprit's own thread took no sample in %s of its CPU time", sampleCostRounds*sampleCostPhase)
	}
	slices.Sort(costs)
	med := (costs[len(costs)/2-1] + costs[len(costs)/2]) / 2
	return SampleCost{PerSample: time.Duration(med), Samples: samples}, nil
}

// threadCPU is the calling thread's CPU time.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
