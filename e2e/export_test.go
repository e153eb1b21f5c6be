package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/culprit-dev/culprit/internal/testutil"
)

func TestExports(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "hier-O2", []string{"hier.c"}, "-O2", "-g")
	out := rec(t)
	mustRun(t, "record", "--call-graph", "dwarf", "-o", out, "--", bin, "2")
	dir := t.TempDir()

	pb := filepath.Join(dir, "cpu.pb.gz")
	mustRun(t, "export", "--format", "pprof", "-o", pb, out)
	f, err := os.Open(pb)
	if err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(f)
	f.Close()
	if err != nil {
		t.Fatalf("profile.Parse: %v", err)
	}
	if err := p.CheckValid(); err != nil {
		t.Fatalf("CheckValid: %v", err)
	}
	if len(p.Sample) == 0 {
		t.Fatal("pprof profile has no samples")
	}
	// pprof takes the first mapping for the main binary ("File:").
	if len(p.Mapping) == 0 || p.Mapping[0].File != bin {
		t.Errorf("first mapping %+v, want the recorded program %s", p.Mapping, bin)
	}
	if top, err := exec.Command("go", "tool", "pprof", "-top", pb).CombinedOutput(); err != nil || !strings.Contains(string(top), "worker") || !strings.Contains(string(top), "File: "+filepath.Base(bin)) {
		t.Errorf("go tool pprof -top: %v\n%s", err, top)
	}

	folded := mustRun(t, "export", "--format", "folded", "-o", "-", out)
	if !strings.Contains(folded, "main;dispatch_2;worker ") {
		t.Errorf("folded stacks lack main;dispatch_2;worker:\n%.2000s", folded)
	}

	for _, format := range []string{"speedscope", "chrome"} {
		path := filepath.Join(dir, format+".json")
		mustRun(t, "export", "--format", format, "-o", path, out)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		if err := json.Unmarshal(data, &v); err != nil {
			t.Fatalf("%s export is not JSON: %v", format, err)
		}
		if !strings.Contains(string(data), "dispatch_2") {
			t.Errorf("%s export does not mention dispatch_2", format)
		}
	}
}

func TestClearErrors(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.rec")
	os.WriteFile(garbage, []byte("this is not a recording at all"), 0o644)
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"record", "--call-graph", "lbr", "--", "true"}, 1, "unknown call-graph mode"},
		{[]string{"record", "--", "/no/such/program"}, 1, "command not found"},
		{[]string{"record", "-p", "999999999", "--duration", "1s"}, 1, "no process with PID"},
		{[]string{"record"}, 2, "no command to record"},
		{[]string{"report", "--by", "module", garbage}, 2, "module"},
		{[]string{"report", "--kernel", "maybe", garbage}, 2, "maybe"},
		{[]string{"report", filepath.Join(dir, "missing.rec")}, 1, "missing.rec"},
		{[]string{"report", garbage}, 1, "not a culprit recording"},
		{[]string{"export", "--format", "gif", "-o", "x", garbage}, 2, "unknown export format"},
		{[]string{"report", "--from", "soon", garbage}, 2, "--from"},
		{[]string{"frobnicate"}, 2, "unknown command"},
	}
	for _, c := range cases {
		stdout, stderr, code := run(t, c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("culprit %s: exit %d, stderr %q; want exit %d and %q", strings.Join(c.args, " "), code, stderr, c.code, c.want)
		}
		if strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "panic") {
			t.Errorf("culprit %s printed a Go stack trace:\n%s", strings.Join(c.args, " "), stderr)
		}
		_ = stdout
	}
}
