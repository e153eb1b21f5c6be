package e2e

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// A counter GCC turned into a pointer walk is described at -O2 only as
// (rdi - entry_value(rdi)) / 24: its values come from the call site in the
// caller's frame. walk visits 16 items for the same CPU work each, so i is
// sampled at every sample in walk, between 0 and 15, about uniformly, by
// --expr and by --values (whose schema finds i's loop through the register
// it is computed from).
func TestEntryValues(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "entryval", []string{"entryval.c"}, "-O2", "-g", "-fno-omit-frame-pointer")
	for _, mode := range [][]string{{"--expr", filepath.Base(bin) + "@walk@i"}, {"--values"}} {
		out := rec(t)
		args := append(append([]string{"record", "-o", out}, mode...), "--", bin, "16", "300")
		if _, stderr, code := run(t, args...); code != 0 {
			t.Fatalf("record %v: exit %d\n%s", mode, code, stderr)
		}
		var r struct {
			Samples int
			Exprs   []struct {
				Expr, Function string
				Count, Missing int
				Mean, Min, Max float64
			}
		}
		if err := json.Unmarshal([]byte(mustRun(t, "report", "--exprs", "--format", "json", out)), &r); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, e := range r.Exprs {
			if e.Function != "walk" || (e.Expr != "i" && e.Expr != "walk@i") {
				continue
			}
			found = true
			// Every sample is in walk (main does nothing else but start).
			if e.Count < r.Samples*9/10 || e.Missing > e.Count/50 || e.Min < 0 || e.Max > 15 || e.Mean < 6 || e.Mean > 9 {
				t.Errorf("record %v: walk's i in %d of %d samples (%d missing), %g..%g, mean %.2f; want nearly all, 0..15, mean about 7.5",
					mode, e.Count, r.Samples, e.Missing, e.Min, e.Max, e.Mean)
			}
		}
		if !found {
			t.Errorf("record %v: walk's i not sampled:\n%s", mode, mustRun(t, "report", "--exprs", out))
		}
	}
}
