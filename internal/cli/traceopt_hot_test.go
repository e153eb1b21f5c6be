package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/culprit-dev/culprit/internal/analysis/trace"
	"github.com/culprit-dev/culprit/internal/testutil"
)

// A pool too small to see a function at the line says so; one large
// enough says nothing.
func TestFewSamples(t *testing.T) {
	if got := fewSamples(89, 1); !strings.Contains(got, "0.9 samples") || !strings.Contains(got, "none 41% of the time") {
		t.Errorf("89 samples: %q", got)
	}
	if got := fewSamples(300, 1); got != "" {
		t.Errorf("300 samples: %q, want nothing", got)
	}
}

// A trace samples at the default rate while the build's pool is short
// of what an untraced run would have taken, and at the lower rate once
// it holds poolFull of them, by the same total --keep-hot divides by:
// the traces' line when they give one, else their samples as taken.
func TestDefaultCPURate(t *testing.T) {
	exe := "/bin/true"
	t.Setenv("CULPRIT_TRACE_STATS", t.TempDir())
	path, err := statsFile(exe)
	if err != nil {
		t.Skipf("%s: %v", exe, err) // no build-id: no pool can be kept for it
	}
	// This machine's cost of a sample, as measured and kept: 50 µs, a
	// budget's 200 Hz.
	keepCost(t, filepath.Dir(path), 50*time.Microsecond, time.Now())
	base := budgetCPUHz(50 * time.Microsecond)
	write := func(c cpuStats) {
		t.Helper()
		data, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cpuStatsFile(path), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A build's first trace: the rate of a full pool.
	if hz := defaultCPURate(exe); hz != fullPoolHz {
		t.Errorf("no pool: %d Hz, want %d", hz, fullPoolHz)
	}
	if hz := defaultCPURate(""); hz != fullPoolHz {
		t.Errorf("no executable: %d Hz, want %d", hz, fullPoolHz)
	}
	// After it, a pool of one trace gives no line and is short: the
	// budget's rate.
	write(cpuStats{Runs: 1, Samples: 3, Traces: []trace.PooledTrace{{Samples: 3, Hz: fullPoolHz, Traps: 200000}}})
	if hz := defaultCPURate(exe); hz != base {
		t.Errorf("one trace of 3 samples: %d Hz, want %d", hz, base)
	}
	// Four traces of one function each (no line: their traps alike),
	// 600 samples each as taken: 2,400 in all.
	tr := trace.PooledTrace{Samples: 600, Hz: 999, Traps: 200000}
	write(cpuStats{Runs: 3, Samples: 1800, Traces: []trace.PooledTrace{tr, tr, tr}})
	if hz := defaultCPURate(exe); hz != base {
		t.Errorf("1,800 samples: %d Hz, want %d", hz, base)
	}
	write(cpuStats{Runs: 4, Samples: 2400, Traces: []trace.PooledTrace{tr, tr, tr, tr}})
	if hz := defaultCPURate(exe); hz != fullPoolHz {
		t.Errorf("2,400 samples: %d Hz, want %d", hz, fullPoolHz)
	}
	// Traces of many and of few traps: the line's intercept decides.
	// Each of everything took 2,000 samples at 999 Hz with 1,000,000
	// traps, each of one function 100 with 10,000: the line gives about
	// 80 samples a trace untraced, 320 for four, under poolNeed: the
	// rate is raised (TestCPURate).
	many := trace.PooledTrace{Samples: 2000, Hz: 999, Traps: 1000000}
	few := trace.PooledTrace{Samples: 100, Hz: 999, Traps: 10000}
	write(cpuStats{Runs: 4, Samples: 4200, Traces: []trace.PooledTrace{many, many, few, few}})
	if hz := defaultCPURate(exe); hz <= base || hz > maxDefaultCPUHz {
		t.Errorf("4,200 samples, an untraced total far under %d: %d Hz, want a raised rate", poolNeed, hz)
	}
}

// Under poolNeed, with traces that give a line, the rate is the one at
// which a trace like the last brings the pool to poolNeed, bounded by
// maxTraceSamples over the last trace's length, maxDefaultCPUHz and the
// kernel's maximum, never under the budget's rate; a pool without a line,
// or at poolNeed or over it, takes the budget's rate, and a first trace
// or a full pool fullPoolHz without measuring what a sample costs.
func TestCPURate(t *testing.T) {
	budget := func(hz int) func() int { return func() int { return hz } }
	unasked := func() int {
		t.Errorf("the cost of a sample measured where no rate needs it")
		return 0
	}
	pool := func(ts ...trace.PooledTrace) cpuStats {
		c := cpuStats{Runs: len(ts), Traces: ts}
		for _, x := range ts {
			c.Samples += x.Samples
		}
		return c
	}
	many := trace.PooledTrace{Samples: 2000, Hz: 999, Traps: 1000000}
	few := trace.PooledTrace{Samples: 100, Hz: 999, Traps: 10000}
	c := pool(many, many, few, few)
	total, perTrap, ok := trace.UntracedTotal(c.Traces)
	if !ok || total >= poolNeed {
		t.Fatalf("the pool's line: %v, total %.0f", ok, total)
	}
	// The last trace (few) ran 0.1 s of samples, 0.08 s of them an
	// untraced run's: about 2,200 Hz brings the 180 missing.
	hz := cpuRate(c, 100000, budget(defaultCPUHz))
	own := float64(few.Samples)/float64(few.Hz) - perTrap*float64(few.Traps)
	if got := total + float64(hz)*own; hz <= defaultCPUHz || math.Abs(got-poolNeed) > 2 {
		t.Errorf("%d Hz brings the pool to %.1f, want %d", hz, got, poolNeed)
	}
	if hz := cpuRate(c, 1500, budget(defaultCPUHz)); hz != 1500 {
		t.Errorf("the kernel's maximum 1500: %d Hz", hz)
	}
	if hz := cpuRate(c, 500, budget(defaultCPUHz)); hz != defaultCPUHz {
		t.Errorf("the kernel's maximum 500: %d Hz, want %d", hz, defaultCPUHz)
	}
	if hz := cpuRate(c, 500, budget(200)); hz != 500 {
		t.Errorf("the kernel's maximum 500, a budget of 200 Hz: %d Hz, want 500", hz)
	}
	if hz := cpuRate(c, 100, budget(200)); hz != 200 {
		t.Errorf("the kernel's maximum 100, a budget of 200 Hz: %d Hz, want 200", hz)
	}
	if hz := cpuRate(c, 0, budget(defaultCPUHz)); hz != cpuRate(c, 100000, budget(defaultCPUHz)) {
		t.Errorf("the kernel's maximum not known: %d Hz, want %d", hz, cpuRate(c, 100000, budget(defaultCPUHz)))
	}
	// Each of two traces 0.01 s of an untraced run's time (10 samples at
	// 1000 Hz), one of them slowed to 0.5 s by its traps: the pool holds
	// 20, and 480 more take 48,000 Hz over 0.01 s. After the slowed one,
	// 2,000 samples over its 0.5 s bound the rate to 4,000 Hz; after the
	// other, 9,999 does.
	slow := trace.PooledTrace{Samples: 500, Hz: 1000, Traps: 100000}
	quick := trace.PooledTrace{Samples: 59, Hz: 1000, Traps: 10000}
	if hz := cpuRate(pool(quick, slow), 100000, budget(defaultCPUHz)); hz != maxTraceSamples*2 {
		t.Errorf("after a trace of 0.5 s: %d Hz, want %d", hz, maxTraceSamples*2)
	}
	if hz := cpuRate(pool(slow, quick), 100000, budget(defaultCPUHz)); hz != maxDefaultCPUHz {
		t.Errorf("after a trace of 0.059 s: %d Hz, want %d", hz, maxDefaultCPUHz)
	}
	// No line (traces alike), 200 samples as taken: the budget's rate.
	if hz := cpuRate(pool(few, few), 100000, budget(200)); hz != 200 {
		t.Errorf("no line: %d Hz, want 200", hz)
	}
	// No pool: the first rate.
	if hz := cpuRate(cpuStats{}, 100000, unasked); hz != fullPoolHz {
		t.Errorf("no pool: %d Hz, want %d", hz, fullPoolHz)
	}
	// Lines whose untraced totals are 1,000 (at poolNeed or over) and
	// 2,000 (poolFull).
	mid := pool(trace.PooledTrace{Samples: 2500, Hz: 1000, Traps: 100000}, trace.PooledTrace{Samples: 700, Hz: 1000, Traps: 10000})
	if hz := cpuRate(mid, 100000, budget(200)); hz != 200 {
		t.Errorf("an untraced total of 1,000: %d Hz, want 200", hz)
	}
	full := pool(trace.PooledTrace{Samples: 5000, Hz: 1000, Traps: 100000}, trace.PooledTrace{Samples: 1400, Hz: 1000, Traps: 10000})
	if hz := cpuRate(full, 100000, unasked); hz != fullPoolHz {
		t.Errorf("an untraced total of 2,000: %d Hz, want %d", hz, fullPoolHz)
	}
}

// The budget's rate: samples that cost perSample each take 1% of the
// traced program's time, within a first trace's rate and 999 Hz.
func TestBudgetCPUHz(t *testing.T) {
	for _, c := range []struct {
		cost time.Duration
		hz   int
	}{
		{5 * time.Microsecond, defaultCPUHz},
		{10 * time.Microsecond, defaultCPUHz},
		{20 * time.Microsecond, 500},
		{50 * time.Microsecond, 200},
		{100 * time.Microsecond, 100},
		{120 * time.Microsecond, fullPoolHz},
		{0, defaultCPUHz},
		{-3 * time.Microsecond, defaultCPUHz},
	} {
		if hz := budgetCPUHz(c.cost); hz != c.hz {
			t.Errorf("%v a sample: %d Hz, want %d", c.cost, hz, c.hz)
		}
	}
}

// keepCost writes a measured cost of a sample into dir as sampleCost
// keeps it, measured at when, on this boot.
func keepCost(t *testing.T, dir string, d time.Duration, when time.Time) {
	t.Helper()
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(sampleCostFile{Boot: strings.TrimSpace(string(boot)), Measured: when, PerSample: int64(d), Samples: 200})
	if err := os.WriteFile(filepath.Join(dir, "sample-cost.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A cost of a sample measured on this boot less than sampleCostAge ago is
// used as kept; an older one, or one from after now (the clock set back),
// is measured again and kept.
func TestSampleCostKept(t *testing.T) {
	dir := t.TempDir()
	keepCost(t, dir, 1234*time.Microsecond, time.Now().Add(-time.Minute))
	if d, ok := sampleCost(dir); !ok || d != 1234*time.Microsecond {
		t.Errorf("kept a minute ago: %v %v, want the kept 1.234ms", d, ok)
	}
	testutil.NeedRoot(t)
	for _, when := range []time.Time{time.Now().Add(-sampleCostAge - time.Minute), time.Now().Add(time.Hour)} {
		keepCost(t, dir, 1234*time.Microsecond, when)
		d, ok := sampleCost(dir)
		if !ok || d == 1234*time.Microsecond {
			t.Errorf("kept at %v: %v %v, want it measured again", when, d, ok)
		}
		var k sampleCostFile
		data, err := os.ReadFile(filepath.Join(dir, "sample-cost.json"))
		if err != nil || json.Unmarshal(data, &k) != nil || time.Duration(k.PerSample) != d || k.Samples == 0 || time.Since(k.Measured) > time.Minute {
			t.Errorf("kept after measuring: %+v (%v), want %v", k, err, d)
		}
	}
}

// The kernel's maximum rate is read, never written.
func TestKernelMaxSampleRate(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/kernel/perf_event_max_sample_rate")
	if err != nil {
		t.Skip(err)
	}
	want, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if got := kernelMaxSampleRate(); got != want {
		t.Errorf("%d, want %d", got, want)
	}
}

// A pool of one short first trace (no line) judges what is hot by its
// samples as taken and says they are too few to see every function over
// the line: the two it holds say nothing of the functions they missed.
func TestHotFunctionsFewSamplesNoLine(t *testing.T) {
	exe := "/bin/true"
	t.Setenv("CULPRIT_TRACE_STATS", t.TempDir())
	path, err := statsFile(exe)
	testutil.Need(t, err == nil, fmt.Sprintf("a build-id in %s to keep a pool for: %v", exe, err))
	c := cpuStats{Runs: 1, Samples: 2, Counts: map[string]int{"leaf": 2},
		Traces: []trace.PooledTrace{{Samples: 2, Hz: fullPoolHz, Traps: 20, Counts: map[string]int{"leaf": 2}}}}
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cpuStatsFile(path), data, 0o644); err != nil {
		t.Fatal(err)
	}
	hot, _, from, err := hotFunctions(&program{exe: exe}, optimizations{KeepHot: 1})
	if err != nil || !hot["leaf"] || len(hot) != 1 {
		t.Fatalf("hot %v, err %v: want leaf alone", hot, err)
	}
	if !strings.Contains(from, "by 2 CPU samples; too few to see every function over 1%") {
		t.Errorf("from %q: want the samples called too few", from)
	}
}
