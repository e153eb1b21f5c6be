package e2e

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// A shared library's global, read at each sample from the copy the BPF
// program made at the library's load bias in the process: gstate.round in
// libglob, which glob_work sets to BASE + r before round r. It is read
// through an --expr naming the library and through --values (the library
// carries its own DWARF), with the library linked at build time and
// loaded with dlopen, and with the ptrace collector, which reads it from
// the stopped thread at the same bias. Every value read is one the program set, and most
// samples read one. A linked library is planned before the program runs
// (the recorder runs a launched command to its entry, when the dynamic
// loader has mapped it); a dlopen'ed one from the recorder's drain of its
// mmap record on: samples before that are missing, never wrong.
func TestLibraryGlobals(t *testing.T) {
	testutil.NeedRoot(t)
	lib := testutil.C(t, "libglob.so", []string{"libglob.c"}, "-O2", "-g", "-shared", "-fPIC")
	linked := testutil.C(t, "libglobmain", []string{"libglobmain.c"}, "-O2", "-g", "-DLINKED", "-Wl,--no-as-needed", lib,
		"-Wl,-rpath,"+filepath.Dir(lib), "-ldl")
	dl := testutil.C(t, "libglobdl", []string{"libglobmain.c"}, "-O2", "-g", "-ldl")
	const base, rounds = 7000, 6
	for _, c := range []struct {
		name string
		cmd  []string
	}{
		{"linked", []string{linked, strconv.Itoa(base), strconv.Itoa(rounds)}},
		{"dlopen", []string{dl, strconv.Itoa(base), strconv.Itoa(rounds), lib}},
	} {
		for _, m := range []struct {
			name  string
			flags []string
		}{
			{"expr", []string{"--expr=libglob.so*@glob_spin@gstate.round"}},
			{"values", []string{"--values"}},
			{"ptrace-expr", []string{"--collector=ptrace", "--expr=libglob.so*@glob_spin@gstate.round"}},
			{"ptrace-values", []string{"--collector=ptrace", "--values"}},
		} {
			t.Run(c.name+"-"+m.name, func(t *testing.T) {
				out := rec(t)
				args := append(append([]string{"record"}, m.flags...), "-o", out, "--")
				stdout := mustRun(t, append(args, c.cmd...)...)
				if want := fmt.Sprintf("%d %d\n", base, rounds); stdout != want {
					t.Fatalf("libglobmain printed %q, want %q", stdout, want)
				}
				e := exprReport(t, out)
				var x *exprSummary
				for i := range e.Exprs {
					if strings.HasSuffix(e.Exprs[i].Expr, "gstate.round") {
						x = &e.Exprs[i]
					}
				}
				if x == nil {
					t.Fatalf("gstate.round not sampled: %+v", e.Exprs)
				}
				in := x.Count + x.Missing
				if in < 100 {
					t.Fatalf("gstate.round: only %d samples", in)
				}
				if x.Count*2 < in || x.Min < base+1 || x.Max != base+rounds {
					t.Errorf("gstate.round: %+v; want values in %d…%d (the last one included) at most samples", *x, base+1, base+rounds)
				}
			})
		}
	}
}
