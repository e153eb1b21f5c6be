package cli

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/analysis/trace"
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
	if hz := defaultCPURate(exe); hz != defaultCPUHz {
		t.Errorf("no pool: %d Hz, want %d", hz, defaultCPUHz)
	}
	// Four traces of one function each (no line: their traps alike),
	// 600 samples each as taken: 2,400 in all.
	tr := trace.PooledTrace{Samples: 600, Hz: 999, Traps: 200000}
	write(cpuStats{Runs: 3, Samples: 1800, Traces: []trace.PooledTrace{tr, tr, tr}})
	if hz := defaultCPURate(exe); hz != defaultCPUHz {
		t.Errorf("1,800 samples: %d Hz, want %d", hz, defaultCPUHz)
	}
	write(cpuStats{Runs: 4, Samples: 2400, Traces: []trace.PooledTrace{tr, tr, tr, tr}})
	if hz := defaultCPURate(exe); hz != fullPoolHz {
		t.Errorf("2,400 samples: %d Hz, want %d", hz, fullPoolHz)
	}
	// Traces of many and of few traps: the line's intercept decides.
	// Each of everything took 2,000 samples at 999 Hz with 1,000,000
	// traps, each of one function 100 with 10,000: the line gives about
	// 80 samples a trace untraced, 320 for four, far short of full.
	many := trace.PooledTrace{Samples: 2000, Hz: 999, Traps: 1000000}
	few := trace.PooledTrace{Samples: 100, Hz: 999, Traps: 10000}
	write(cpuStats{Runs: 4, Samples: 4200, Traces: []trace.PooledTrace{many, many, few, few}})
	if hz := defaultCPURate(exe); hz != defaultCPUHz {
		t.Errorf("4,200 samples, an untraced total far under %d: %d Hz, want %d", poolFull, hz, defaultCPUHz)
	}
}
