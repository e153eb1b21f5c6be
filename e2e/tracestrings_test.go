package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

const stringsProg = `#include <stdio.h>
#include <string.h>

__attribute__((noinline)) int greet(const char *name, int n, char *out) {
	if (!name) {
		out[0] = 0;
		return -1;
	}
	snprintf(out, 96, "hi %s %d", name, n);
	return (int)strlen(name) + n;
}

int main(void) {
	char out[96];
	char longname[101];
	memset(longname, 'x', 100);
	longname[100] = 0;
	const char *names[] = {"alice", "bob \"b\"\n\t", longname, "", NULL};
	for (int i = 0; i < 5; i++)
		printf("%d\n", greet(names[i], i, out));
	return 0;
}
`

// trace --args copies char * arguments: each shown quoted and escaped as
// it was when the call ended (out holds what greet wrote), cut at 63
// bytes with …, NULL as NULL; the other arguments as before.
func TestTraceStringArgs(t *testing.T) {
	testutil.NeedRoot(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "strs.c")
	if err := os.WriteFile(src, []byte(stringsProg), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "strs")
	if out, err := exec.Command("gcc", "-O1", "-g", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	out, _ := traceRun(t, []string{"--args", "-f", "greet"}, bin)
	var a callsJSON
	if err := json.Unmarshal([]byte(mustRun(t, "report", "--calls", "^greet$", "--top", "0", "--format", "json", out)), &a); err != nil {
		t.Fatal(err)
	}
	sort.Slice(a.Calls, func(i, j int) bool { return a.Calls[i].Start < a.Calls[j].Start })
	long := strings.Repeat("x", 63)
	want := []string{
		`name="alice" n=0 out="hi alice 0" = 5`,
		`name="bob \"b\"\n\t" n=1 out="hi bob \"b\"\n\t 1" = 10`,
		`name="` + long + `"… n=2 out="hi ` + long[:60] + `"… = 102`,
		`name="" n=3 out="hi  3" = 3`,
		`name=NULL n=4 out="" = -1`,
	}
	if len(a.Calls) != len(want) {
		t.Fatalf("%d calls, want %d", len(a.Calls), len(want))
	}
	for i, c := range a.Calls {
		var got []string
		for _, x := range c.Args {
			got = append(got, x.Name+"="+x.Value)
		}
		if s := strings.Join(got, " ") + " = " + c.Ret; s != want[i] {
			t.Errorf("call %d: %s\nwant      %s", i, s, want[i])
		}
	}
}
