package e2e

import (
	"encoding/json"
	"sort"
	"strconv"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// trace --args decodes USDT probe arguments from their sys/sdt.h operands:
// at -O2 app:tick's i is in a register and app:costly's sink is a global
// (sink(%rip)); at -O0 i is on the stack (-16(%rbp)). Each hit's values
// equal the program's own: i, and sink as the loop has summed it so far.
func TestTraceUSDTArgs(t *testing.T) {
	testutil.NeedRoot(t)
	testutil.Need(t, fileExists("/usr/include/x86_64-linux-gnu/sys/sdt.h") || fileExists("/usr/include/sys/sdt.h"), "sys/sdt.h (Debian: systemtap-sdt-dev)")
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
		out, _ := traceRun(t, []string{"--args", "--usdt", "app:tick", "--usdt", "app:costly"}, bin, strconv.Itoa(n))
		var a callsJSON
		if err := json.Unmarshal([]byte(mustRun(t, "report", "--calls", "^app:", "--top", "0", "--format", "json", out)), &a); err != nil {
			t.Fatal(err)
		}
		sort.SliceStable(a.Calls, func(i, j int) bool { return a.Calls[i].Start < a.Calls[j].Start })
		var ticks, costly []string
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
			}
		}
		if len(ticks) != n || len(costly) != len(sinks) {
			t.Fatalf("%s: %d tick and %d costly hits, want %d and %d", opt, len(ticks), len(costly), n, len(sinks))
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
