package e2e

import (
	"math"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/recorder"
	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/testutil"
)

// TestTickClock: record -F tick samples a program that splits its time
// between the kernel (pages zeroed in mmap) and user code (a spin) at the
// scheduler's tick, HZ a second, each sample the tick's period of CPU time,
// with the kernel frames of the interrupted code and none of the timer
// interrupt's, stacks complete to main; its profile is the one cpu-clock
// events at 999 Hz give the same program.
func TestTickClock(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "kernelspan", []string{"kernelspan.c"}, "-O2", "-g", "-fno-omit-frame-pointer")
	hz := recorder.TickRate()
	if hz <= 0 {
		t.Fatal("the kernel's tick rate is unknown (clock_getres of CLOCK_MONOTONIC_COARSE)")
	}
	tick := rec(t)
	mustRun(t, "record", "-F", "tick", "-o", tick, "--", bin, "kernel", "60")
	clock := rec(t)
	mustRun(t, "record", "-o", clock, "--", bin, "kernel", "60")

	period := uint64(math.Round(1e9 / float64(hz)))
	samples, odd := 0, 0
	var meta *recording.Meta
	eachRecord(t, tick, func(r recording.Record) {
		switch r := r.(type) {
		case *recording.Meta:
			meta = r
		case *recording.Sample:
			if r.Event != recording.EventCPU {
				return
			}
			samples++
			// clock_getres gives the period in whole ns.
			if r.Period < period-1 || r.Period > period+1 {
				odd++
			}
		}
	})
	if meta == nil || meta.Frequency != hz || meta.Extra["cpu_clock"] != "tick" {
		t.Errorf("meta %+v: want frequency %d and cpu_clock tick", meta, hz)
	}
	if samples < 20 || odd > 0 {
		t.Errorf("%d CPU samples, %d of them with a period other than the tick's %d ns", samples, odd, period)
	}

	ft, fc := flat(t, tick), flat(t, clock)
	// The timer interrupt's own frames, up to the tick program's
	// tracepoint. Not BPF frames at large: a program another recorder
	// keeps on raw_syscalls (a test running beside this one) runs inside
	// this program's system calls, and its frames are this program's
	// kernel time, sampled as any other.
	for _, e := range ft.Entries {
		for _, irq := range []string{"sysvec", "hrtimer", "tick_nohz", "tick_sched"} {
			if strings.Contains(e.Name, irq) {
				t.Errorf("%s in the tick's profile (%.1f%% total): the timer interrupt's frames are the sampler's, not the program's", e.Name, 100*e.Total)
			}
		}
	}
	// Totals are shares (0 to 1).
	if m := ft.total("main"); m < 0.95 {
		t.Errorf("main has %.1f%% of the tick's samples, want 95%% or more: stacks complete to main", 100*m)
	}
	for _, fn := range []string{"populate", "spin", "do_syscall_64"} {
		a, b := ft.total(fn), fc.total(fn)
		t.Logf("%s: %.1f%% at the tick, %.1f%% at 999 Hz", fn, 100*a, 100*b)
		if b < 0.05 || math.Abs(a-b) > 0.12 {
			t.Errorf("%s has %.1f%% of the tick's samples and %.1f%% at 999 Hz: want within 12 points, each 5%% or more", fn, 100*a, 100*b)
		}
	}

	for _, bad := range [][]string{
		{"--jitter", "10"},
		{"--call-graph", "dwarf"},
		{"--collector", "ptrace"},
		{"--expr", "kernelspan@spin@ms"},
	} {
		args := append([]string{"record", "-F", "tick"}, bad...)
		args = append(args, "-o", rec(t), "--", bin, "kernel", "1")
		_, errs, code := run(t, args...)
		if code != 2 || !strings.Contains(errs, "tick") {
			t.Errorf("culprit %s: exit %d (want 2, a usage error saying why), stderr:\n%s", strings.Join(args, " "), code, errs)
		}
	}
}
