package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// A process whose main thread ends first (pthread_exit) lives on in its
// other threads: they are sampled, with their expressions' values, until
// the last of them exits, whether CPU time comes from per-CPU events
// (followed in the kernel) or from the threads' own.
func TestMainThreadExitsFirst(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "leaderexit", []string{"leaderexit.c"}, "-O2", "-g", "-pthread")
	cpuRe := regexp.MustCompile(`worker cpu ([0-9.]+)`)
	for _, mode := range [][]string{{}, {"--per-thread-clock"}} {
		out := rec(t)
		args := append(append([]string{"record", "-o", out, "--expr", filepath.Base(bin) + "@spin@seconds"}, mode...), "--", bin, "0.4")
		stdout, stderr, code := run(t, args...)
		if code != 0 {
			t.Fatalf("record %v: exit %d\n%s", mode, code, stderr)
		}
		m := cpuRe.FindStringSubmatch(stdout)
		if m == nil {
			t.Fatalf("record %v: the worker printed no CPU time:\n%s", mode, stdout)
		}
		cpu, _ := strconv.ParseFloat(m[1], 64)
		// 999 Hz: the worker's CPU time makes about 400 ticks; fewer than
		// half of them means its samples stopped with the main thread.
		want := int(cpu * 999 / 2)
		report, stderr, code := run(t, "report", "--format", "json", out)
		if code != 0 {
			t.Fatalf("report %v: exit %d\n%s", mode, code, stderr)
		}
		var rep struct {
			Entries []struct {
				Name  string
				Total int `json:"total_samples"`
			}
		}
		if err := json.Unmarshal([]byte(report), &rep); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range rep.Entries {
			if e.Name == "spin" {
				n = e.Total
			}
		}
		if n < want {
			t.Errorf("record %v: %d samples in spin for the worker's %.3f s of CPU, want at least %d:\n%s", mode, n, cpu, want, report)
		}
		exprs, stderr, code := run(t, "report", "--exprs", out)
		if code != 0 {
			t.Fatalf("report --exprs %v: exit %d\n%s", mode, code, stderr)
		}
		row := regexp.MustCompile(`(?m)^\s*(\d+)\s+(\d+)\s+([0-9.e+-]+)\s.*spin@seconds`).FindStringSubmatch(exprs)
		if row == nil {
			t.Fatalf("record %v: no row for spin@seconds:\n%s", mode, exprs)
		}
		// A sample can find spin where DWARF gives seconds no location
		// (its first instructions): a few are missing.
		count, _ := strconv.Atoi(row[1])
		missing, _ := strconv.Atoi(row[2])
		if count < want || missing > count/50 || row[3] != fmt.Sprint(0.4) {
			t.Errorf("record %v: spin@seconds sampled %d times (missing %d, mean %s), want at least %d, at most 2%% missing, 0.4:\n%s", mode, count, missing, row[3], want, exprs)
		}
	}
}
