package e2e

import (
	"encoding/json"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// A traced call whose caller is in a library the program loaded with
// dlopen just before it exited: the tracer reads the call after the
// process and its /proc maps are gone, and names the caller from the
// mmaps the CPU samples' session followed. traceexit calls the library's
// outer, which calls inner, three times and exits.
func TestTraceCallerInLibraryBeforeExit(t *testing.T) {
	testutil.NeedRoot(t)
	t.Setenv("CULPRIT_TRACE_STATS", t.TempDir())
	lib := testutil.C(t, "libtraceexit.so", []string{"traceexitlib.c"}, "-shared", "-fPIC", "-O2", "-g")
	bin := testutil.C(t, "traceexit", []string{"traceexit.c"}, "-O2", "-g")
	out, _ := traceRun(t, []string{"--lib", lib + ":inner"}, bin, lib, "3")
	var byCaller traceJSON
	if err := json.Unmarshal([]byte(mustRun(t, "report", "--by", "caller", "--format", "json", out)), &byCaller); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, f := range byCaller.Functions {
		if f.Function != "inner" {
			continue
		}
		for _, c := range f.Callers {
			got[c.Name] = c.Calls
		}
	}
	if len(got) != 1 || got["outer"] != 3 {
		t.Errorf("inner by caller: %v, want outer 3", got)
	}
}
