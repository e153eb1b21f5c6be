package e2e

import (
	"encoding/json"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// trace --args decodes USDT probe arguments from their sys/sdt.h operands:
// at -O2 app:tick's i is in a register and app:costly's sink is a global
// (sink(%rip)); at -O0 i is on the stack (-16(%rbp)); app:pick's operand
// at -O2 indexes an array (base+index·scale). Each hit's values equal the
// program's own: i, sink as the loop has summed it so far, and
// vals[i % 8] = 7·(i % 8) + 3.
func TestTraceUSDTArgs(t *testing.T) {
	testutil.NeedRoot(t)
	needSDT(t)
	const n = 41
	// What the program's loop computes: at odd i, before sink += work(i).
	var sinks []int64
	var sink int64
	for i := int64(0); i < n; i++ {
		if i%2 == 1 {
			sinks = append(sinks, sink)
		}
		s := i
		if i%2 == 0 {
			sink += i
			s++
		}
		sink += s
	}
	for _, opt := range []string{"-O2", "-O0"} {
		bin := testutil.C(t, "usdtprog"+opt, []string{"usdtprog.c"}, opt, "-g")
		if opt == "-O2" {
			notes, err := exec.Command("readelf", "-n", bin).Output()
			if err != nil {
				t.Fatalf("readelf -n: %v", err)
			}
			if !regexp.MustCompile(`Name: pick\s+Location: \S+, Base: \S+, Semaphore: \S+\s+Arguments: -8@-?\w*\(%\w+,%\w+,8\)`).Match(notes) {
				t.Fatalf("app:pick's operand is not indexed in this build, so this test does not check indexed operands:\n%s", notes)
			}
		}
		out, _ := traceRun(t, []string{"--args", "--usdt", "app:tick", "--usdt", "app:costly", "--usdt", "app:pick"}, bin, strconv.Itoa(n))
		var a callsJSON
		if err := json.Unmarshal([]byte(mustRun(t, "report", "--calls", "^app:", "--top", "0", "--format", "json", out)), &a); err != nil {
			t.Fatal(err)
		}
		sort.SliceStable(a.Calls, func(i, j int) bool { return a.Calls[i].Start < a.Calls[j].Start })
		var ticks, costly, picks []string
		for _, c := range a.Calls {
			var vals []string
			for _, x := range c.Args {
				vals = append(vals, x.Name+"="+x.Value)
			}
			if c.Ret != "" {
				t.Errorf("%s: %s hit shows a return value %q", opt, c.Function, c.Ret)
			}
			switch c.Function {
			case "app:tick":
				ticks = append(ticks, strconv.Itoa(len(ticks))+":"+joinArgs(vals))
			case "app:costly":
				costly = append(costly, joinArgs(vals))
			case "app:pick":
				picks = append(picks, joinArgs(vals))
			}
		}
		if len(ticks) != n || len(costly) != len(sinks) {
			t.Fatalf("%s: %d tick and %d costly hits, want %d and %d", opt, len(ticks), len(costly), n, len(sinks))
		}
		if len(picks) != n {
			t.Errorf("%s: %d pick hits, want %d", opt, len(picks), n)
		}
		for i, s := range picks {
			if want := "arg1=" + strconv.Itoa(7*(i%8)+3); s != want {
				t.Errorf("%s: pick hit %d: %s, want %s", opt, i, s, want)
			}
		}
		for i, s := range ticks {
			if want := strconv.Itoa(i) + ":arg1=" + strconv.Itoa(i); s != want {
				t.Errorf("%s: tick hit %s, want %s", opt, s, want)
			}
		}
		for k, s := range costly {
			if want := "arg1=" + strconv.Itoa(2*k+1) + " arg2=" + strconv.FormatInt(sinks[k], 10); s != want {
				t.Errorf("%s: costly hit %d: %s, want %s", opt, k, s, want)
			}
		}
	}
}

func joinArgs(v []string) string {
	out := ""
	for i, s := range v {
		if i > 0 {
			out += " "
		}
		out += s
	}
	return out
}

// needSDT needs sys/sdt.h, for the test programs that declare USDT probes.
func needSDT(t *testing.T) {
	t.Helper()
	testutil.Need(t, fileExists("/usr/include/x86_64-linux-gnu/sys/sdt.h") || fileExists("/usr/include/sys/sdt.h"), "sys/sdt.h (Debian: systemtap-sdt-dev)")
}
