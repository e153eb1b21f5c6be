package e2e

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// A Go program's locals and globals, sampled: govalues prints the globals
// it set and the n it passed to work; work's parameter n arrives in a
// register (Go's register ABI) and its loop counters i and j live in
// registers that Go's location lists leave out of the loop bodies. Each
// value sampled must be one the program had: n one of the rounds' n,
// 0 <= i < n, 0 <= j < limit, a global its initial or its printed value;
// and i and j, uniform over their ranges in time, have means within 5
// standard errors of the ranges' middles (a chance below 1e-6 of failing
// on a correct recording).
func TestGoValues(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.Go(t, "govalues")
	const n, rounds, limit = 150000, 3, 1000
	args := []string{"--", bin, strconv.Itoa(n), strconv.Itoa(rounds), strconv.Itoa(limit)}
	printed := func(stdout string) {
		t.Helper()
		var l, r, scale, pn int64
		if _, err := fmt.Sscan(stdout, &l, &r, &scale, &pn); err != nil || l != limit || r != rounds || pn != n || scale != 7*limit {
			t.Fatalf("govalues printed %q", stdout)
		}
	}
	find := func(t *testing.T, e exprsJSON, fn, name string) exprSummary {
		t.Helper()
		for _, x := range e.Exprs {
			if x.Function == fn && x.Expr == name {
				return x
			}
		}
		t.Fatalf("no %s@%s among %+v", fn, name, e.Exprs)
		return exprSummary{}
	}
	// locals checks n, i and j of main.work. A sample taken while the Go
	// runtime preempts work (runtime.asyncPreempt) has work as a caller
	// frame, whose registers are unknown: its values are missing, never
	// wrong, and such samples are rare.
	locals := func(t *testing.T, e exprsJSON, fn string) {
		t.Helper()
		nv, iv, jv := find(t, e, fn, "n"), find(t, e, fn, "i"), find(t, e, fn, "j")
		if nv.Count < 100 {
			t.Fatalf("only %d samples of n in main.work", nv.Count)
		}
		if nv.Missing*20 > nv.Count || nv.Min < n || nv.Max > n+rounds-1 {
			t.Errorf("n: %+v, want %d..%d at (nearly) every sample", nv, n, n+rounds-1)
		}
		// A loop variable holds its bound for the loop's last test, after
		// the last increment: i reaches n, and j limit, for an instruction
		// or two.
		if iv.Missing != nv.Missing || iv.Count != nv.Count || iv.Min < 0 || iv.Max > n+rounds-1 {
			t.Errorf("i: %+v, want 0 <= i <= n at each of the %d samples of n", iv, nv.Count)
		}
		// j is out of scope only between two rounds of the inner loop.
		if jv.Missing*20 > nv.Count || jv.Count*20 < nv.Count*19 || jv.Min < 0 || jv.Max > limit {
			t.Errorf("j: %+v, want 0 <= j <= %d at (nearly) each of the %d samples of n", jv, limit, nv.Count)
		}
		for _, c := range []struct {
			name string
			s    exprSummary
			hi   float64
		}{{"i", iv, n}, {"j", jv, limit}} {
			se := c.hi / math.Sqrt(12) / math.Sqrt(float64(c.s.Count))
			if mid := (c.hi - 1) / 2; math.Abs(c.s.Mean-mid) > 5*se {
				t.Errorf("%s: mean %.1f over %d samples, want %.1f ± %.1f (uniform over its range)", c.name, c.s.Mean, c.s.Count, mid, 5*se)
			}
		}
	}

	t.Run("values", func(t *testing.T) {
		out := rec(t)
		printed(mustRun(t, append([]string{"record", "--values", "-o", out}, args...)...))
		e := exprReport(t, out)
		locals(t, e, "main.work")
		// A global is sampled at every sample: before main sets it, it has
		// its initial value.
		for _, g := range []struct {
			name          string
			initial, want float64
		}{{"main.limit", 1, limit}, {"main.cfg.rounds", 0, rounds}, {"main.cfg.scale", 0, 7 * limit}} {
			s := find(t, e, "#global", g.name)
			if s.Count == 0 || s.Max != g.want || s.P50 != g.want || (s.Min != g.want && s.Min != g.initial) {
				t.Errorf("%s: %+v, want %v (%v before main sets it)", g.name, s, g.want, g.initial)
			}
		}
		// Only the program's own variables: none of the Go runtime's and
		// standard library's.
		for _, x := range e.Exprs {
			if !strings.HasPrefix(x.Function, "main.") && !strings.HasPrefix(x.Expr, "main.") {
				t.Errorf("sampled %s@%s: not govalues' own", x.Function, x.Expr)
			}
		}
	})

	for _, collector := range []string{"perf", "ptrace"} {
		t.Run("expr/"+collector, func(t *testing.T) {
			out := rec(t)
			specs := []string{"i", "j", "n", "limit", "cfg.scale", "cfg.rounds * limit"}
			cmd := []string{"record", "--collector", collector, "-o", out}
			for _, s := range specs {
				cmd = append(cmd, "--expr", "govalues*@main.work@"+s)
			}
			stdout, stderr, code := run(t, append(cmd, args...)...)
			if code != 0 {
				t.Fatalf("culprit record: exit %d\n%s", code, stderr)
			}
			printed(stdout)
			e := exprReport(t, out)
			locals(t, e, "main.work")
			// In main.work, main has set the globals: unqualified names
			// are main's, as in Go.
			nv := find(t, e, "main.work", "n")
			for _, g := range []struct {
				name string
				want float64
			}{{"limit", limit}, {"cfg.scale", 7 * limit}, {"(cfg.rounds * limit)", rounds * limit}} {
				s := find(t, e, "main.work", g.name)
				if s.Missing*20 > nv.Count || s.Min != g.want || s.Max != g.want {
					t.Errorf("%s: %+v, want %v at (nearly) each of the %d samples; the recorder said:\n%s", g.name, s, g.want, nv.Count, stderr)
				}
			}
		})
	}
}

// The schema of a Go program lists its own variables, each local with
// the file that declares it; globals have no file in Go's DWARF.
func TestGoSchema(t *testing.T) {
	bin := testutil.Go(t, "govalues")
	out := mustRun(t, "schema", bin)
	want := map[string]string{"main.work/n": "", "main.work/i": "loop", "main.work/j": "loop", "#global/main.limit": "", "#global/main.cfg.scale": ""}
	for _, line := range strings.Split(out, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, ",")
		if len(f) != 6 {
			t.Fatalf("schema row %q", line)
		}
		file, fn, v, tags := f[0], f[1], f[3], f[5]
		if fn != "#global" && !strings.HasPrefix(fn, "main.") || fn == "#global" && !strings.HasPrefix(v, "main.") {
			t.Errorf("schema row %q: not the program's own variable", line)
		}
		if fn != "#global" && !strings.HasSuffix(file, "/govalues/main.go") {
			t.Errorf("schema row %q: want the file declaring it", line)
		}
		if tag, ok := want[fn+"/"+v]; ok {
			if !strings.Contains(tags, tag) {
				t.Errorf("schema row %q: want tag %q", line, tag)
			}
			delete(want, fn+"/"+v)
		}
	}
	if len(want) > 0 {
		t.Errorf("schema lacks %v:\n%s", want, out)
	}
}
