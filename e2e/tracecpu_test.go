package e2e

import (
	"encoding/json"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// TestTraceCPUTime traces a program whose nap() sleeps 20 ms and whose
// work() spins for 20 ms of CPU time, each printing the CPU time its
// thread used inside it, with a busy loop per CPU running: each call's
// time on the CPU agrees with the program's own within 1 ms (work's wall
// time is stretched by the busy loops, nap's is the sleep), and outer(),
// which only calls them, has almost none of its own. --no-cpu-time
// records none. The time a hypervisor took the virtual CPU away (steal)
// counts as on the CPU for the tracer's clock but not in the thread's CPU
// clock, so the machine's steal time during the trace widens the bound;
// /proc/stat counts it in 10 ms ticks, so a few ms of it can go unseen:
// a 20 ms call once read 22.7 ms with a busy loop per CPU and no steal
// counted. The bound is 1 ms and 15% of the call's own time, plus steal.
func TestTraceCPUTime(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "cputime", []string{"cputime.c"}, "-O1", "-g")
	stop := busyLoops(runtime.NumCPU())
	steal0 := stealNS(t)
	out, stdout := traceRun(t, []string{"-f", "nap", "-f", "work", "-f", "outer"}, bin, "5")
	bound := 1e6 + stealNS(t) - steal0
	stop()
	own := map[string][]float64{}
	for _, l := range strings.Split(stdout, "\n") {
		if f := strings.Fields(l); len(f) == 3 {
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				t.Fatalf("bad line %q", l)
			}
			own[f[0]] = append(own[f[0]], v)
		}
	}
	type call struct {
		Start   float64 `json:"start_s"`
		Incl    uint64  `json:"inclusive_ns"`
		InclCPU *uint64 `json:"inclusive_cpu_ns"`
		ExclCPU *uint64 `json:"exclusive_cpu_ns"`
	}
	calls := func(rec, fn string) []call {
		t.Helper()
		var c struct{ Calls []call }
		if err := json.Unmarshal([]byte(mustRun(t, "report", "--calls", "^"+fn+"$", "--top", "0", "--format", "json", rec)), &c); err != nil {
			t.Fatal(err)
		}
		sort.Slice(c.Calls, func(i, j int) bool { return c.Calls[i].Start < c.Calls[j].Start })
		return c.Calls
	}
	for _, fn := range []string{"nap", "work"} {
		cs := calls(out, fn)
		if len(cs) != 5 || len(own[fn]) != 5 {
			t.Fatalf("%s: %d calls traced, %d timed by the program, want 5", fn, len(cs), len(own[fn]))
		}
		for i, c := range cs {
			if c.InclCPU == nil || c.ExclCPU == nil {
				t.Fatalf("%s call %d: no time on the CPU recorded", fn, i)
			}
			cpu := float64(*c.InclCPU)
			if d := cpu - own[fn][i]; d < -1e6 || d > bound+0.15*own[fn][i] || *c.InclCPU > c.Incl {
				t.Errorf("%s call %d: %.0f ns on the CPU traced, the program measured %.0f ns (wall %d ns; bound +%.0f ns)", fn, i, cpu, own[fn][i], c.Incl, bound+0.15*own[fn][i])
			}
			if fn == "nap" && (c.Incl < 20e6 || cpu > 2e6) {
				t.Errorf("nap call %d: wall %d ns, on the CPU %.0f ns: want the 20 ms sleep off the CPU", i, c.Incl, cpu)
			}
		}
	}
	for i, c := range calls(out, "outer") {
		if c.ExclCPU == nil || *c.ExclCPU > 2e6 {
			t.Errorf("outer call %d: %v ns of its own on the CPU, want under 2 ms (nap and work have the rest)", i, c.ExclCPU)
		}
	}
	plain, _ := traceRun(t, []string{"--no-cpu-time", "-f", "work"}, bin, "1")
	for _, c := range calls(plain, "work") {
		if c.InclCPU != nil {
			t.Errorf("--no-cpu-time: a call with %d ns on the CPU", *c.InclCPU)
		}
	}
}

// stealNS is the machine's steal time so far (/proc/stat, all CPUs), ns.
func stealNS(t *testing.T) float64 {
	t.Helper()
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0])
	if len(f) < 9 || f[0] != "cpu" {
		t.Fatalf("/proc/stat: %q", f)
	}
	v, err := strconv.ParseFloat(f[8], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v * 1e9 / 100 // USER_HZ
}
