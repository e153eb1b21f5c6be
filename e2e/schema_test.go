package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// culprit schema and culprit record --values=SCHEMA: a schema is made,
// edited by hand and passed back; its variables, and only those, are
// sampled, with the tags the file gives.

func schemaLines(t *testing.T, text string) (header []string, lines [][]string) {
	t.Helper()
	for _, l := range strings.Split(text, "\n") {
		switch {
		case l == "":
		case strings.HasPrefix(l, "#"):
			header = append(header, l)
		default:
			f := strings.Split(l, ",")
			if len(f) != 6 {
				t.Fatalf("schema line %q: %d fields", l, len(f))
			}
			lines = append(lines, f)
		}
	}
	return
}

func TestSchemaCommand(t *testing.T) {
	bin := vprofCases[0].bin(t) // vprof_wrong
	out := mustRun(t, "schema", bin)
	header, lines := schemaLines(t, out)
	if !strings.Contains(strings.Join(header, "\n"), "# build-id: ") || !strings.Contains(strings.Join(header, "\n"), "# binary: "+bin) {
		t.Errorf("header:\n%s", strings.Join(header, "\n"))
	}
	found := false
	for _, f := range lines {
		if f[1] == "recv_scan_log" && f[3] == "available" {
			found = true
			if f[4] != "long int" || !strings.HasSuffix(f[0], "vprof_wrong.c") || f[5] != "cond" {
				t.Errorf("available: %v", f)
			}
		}
		if f[5] == "" {
			t.Errorf("no tags: %v", f)
		}
	}
	if !found {
		t.Errorf("recv_scan_log:available not listed:\n%s", out)
	}

	// --component and -o.
	dir := t.TempDir()
	file := filepath.Join(dir, "comp.schema")
	_, errs, code := run(t, "schema", bin, "--component", testutil.Targets(), "-o", file)
	if code != 0 || !strings.Contains(errs, "written to "+file) {
		t.Fatalf("schema -o: exit %d\n%s", code, errs)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, comp := schemaLines(t, string(b))
	if len(comp) == 0 || len(comp) > len(lines) {
		t.Errorf("--component kept %d of %d variables", len(comp), len(lines))
	}
	for _, f := range comp {
		if !strings.HasPrefix(f[0], testutil.Targets()) {
			t.Errorf("--component kept %v", f)
		}
	}

	// Errors: no binary, a stripped binary.
	if _, errs, code := run(t, "schema"); code != 2 {
		t.Errorf("no argument: exit %d\n%s", code, errs)
	}
	stripped := testutil.C(t, "vprof_wrong-stripped", []string{"vprof_wrong.c"}, "-O2", "-pthread", "-s")
	_, errs, code = run(t, "schema", stripped)
	if code != 1 || !strings.Contains(errs, "no DWARF") || !strings.Contains(errs, "culprit record, report") {
		t.Errorf("stripped: exit %d\n%s", code, errs)
	}
}

// TestSchemaRoundTrip: culprit schema -o FILE, edit FILE (keep the root
// cause's variables, change a tag), culprit record --values=FILE with both
// collectors, culprit diagnose.
func TestSchemaRoundTrip(t *testing.T) {
	testutil.NeedRoot(t)
	c := vprofCases[0] // wrong constraint: recv_scan_log's available
	bin := c.bin(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "wrong.schema")
	mustRun(t, "schema", bin, "-o", file)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	// Keep the header, recv_scan_log's variables and the globals; tag
	// available cond|args by hand.
	var kept []string
	n, ptrs := 0, 0
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Split(l, ",")
		switch {
		case strings.HasPrefix(l, "#") || l == "":
			kept = append(kept, l)
		case len(f) == 6 && f[1] == "recv_scan_log":
			if f[3] == "available" {
				f[5] = "cond|args"
			}
			kept = append(kept, strings.Join(f, ","))
			n++
			if strings.HasSuffix(f[4], "*") {
				ptrs++ // a pointer to a scalar is sampled with its target (*p)
			}
		}
	}
	if n < 3 {
		t.Fatalf("recv_scan_log has %d variables in the schema:\n%s", n, b)
	}
	if err := os.WriteFile(file, []byte(strings.Join(kept, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	normal, buggy := filepath.Join(dir, "normal.rec"), filepath.Join(dir, "buggy.rec")
	mustRun(t, append([]string{"record", "--values=" + file, "-o", normal, "--", bin}, c.normal...)...)
	mustRun(t, append([]string{"record", "--values=" + file, "-o", buggy, "--", bin}, c.buggy...)...)
	out := mustRun(t, "diagnose", "--normal", normal, "--buggy", buggy, "--format", "json")
	var d diagnoseJSON
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("diagnose JSON: %v\n%s", err, out)
	}
	if len(d.Buggy) != 1 || d.Buggy[0].Variables == 0 || d.Buggy[0].Variables > n+ptrs {
		t.Errorf("the buggy run sampled %+v variables; the schema lists %d (%d pointers)", d.Buggy, n, ptrs)
	}
	for _, fn := range d.Functions {
		if fn.Var != nil && fn.Name != c.root && !strings.Contains(fn.Var.Name, ".") {
			t.Errorf("%s has a sampled variable %s: not in the edited schema", fn.Name, fn.Var.Name)
		}
		if fn.Name == c.root {
			if fn.Rank > 2 || fn.Pattern != c.pattern || fn.Var == nil || fn.Var.Name != "available" || fn.Var.Tags != "cond,args" {
				t.Errorf("%s: rank %d pattern %s variable %+v; want 1st or 2nd, %s, available with the edited tags cond,args\n%s",
					c.root, fn.Rank, fn.Pattern, fn.Var, c.pattern, d.summary(4))
			}
		}
	}

	// The ptrace collector takes the same schema.
	pt := filepath.Join(dir, "ptrace.rec")
	mustRun(t, append([]string{"record", "--collector", "ptrace", "--values=" + file, "-o", pt, "--", bin}, c.normal...)...)
	if _, errs, code := run(t, "diagnose", "--normal", pt, "--buggy", buggy); code != 0 {
		t.Errorf("diagnose of the ptrace run: exit %d\n%s", code, errs)
	}

	// A schema of another build is refused, before the command runs.
	other := vprofCases[1].bin(t)
	_, errs, code := run(t, "record", "--values="+file, "-o", filepath.Join(dir, "x.rec"), "--", other, "normal")
	if code != 1 || !strings.Contains(errs, "does not match") || !strings.Contains(errs, "build-id") || !strings.Contains(errs, "culprit schema "+other) {
		t.Errorf("other build: exit %d\n%s", code, errs)
	}
	// Without the build-id line, variables are matched by name: one that
	// the binary does not declare is refused.
	var noID []string
	for _, l := range kept {
		if !strings.HasPrefix(l, "# build-id:") {
			noID = append(noID, l)
		}
	}
	for _, l := range kept {
		if f := strings.Split(l, ","); len(f) == 6 && !strings.HasPrefix(l, "#") {
			f[3] = "no_such_var"
			noID = append(noID, strings.Join(f, ","))
			break
		}
	}
	bad := filepath.Join(dir, "bad.schema")
	if err := os.WriteFile(bad, []byte(strings.Join(noID, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errs, code = run(t, "record", "--values="+bad, "-o", filepath.Join(dir, "y.rec"), "--", bin, "normal")
	if code != 1 || !strings.Contains(errs, "no_such_var") || !strings.Contains(errs, "not in the binary's DWARF") {
		t.Errorf("unknown variable: exit %d\n%s", code, errs)
	}
	// A file that is not a schema.
	_, errs, code = run(t, "record", "--values="+normal, "-o", filepath.Join(dir, "z.rec"), "--", bin, "normal")
	if code != 1 || !strings.Contains(errs, normal) {
		t.Errorf("not a schema: exit %d\n%s", code, errs)
	}
}

// TestValuesNoDWARF: --values on a binary without DWARF says so once, names
// what still works, and records the CPU profile.
func TestValuesNoDWARF(t *testing.T) {
	testutil.NeedRoot(t)
	stripped := testutil.C(t, "hier-stripped", []string{"hier.c"}, "-O2", "-s")
	rec := filepath.Join(t.TempDir(), "s.rec")
	_, errs, code := run(t, "record", "--values", "-o", rec, "--", stripped, "1")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	if strings.Count(errs, "no DWARF") != 1 || !strings.Contains(errs, "culprit report") || !strings.Contains(errs, "contexts") {
		t.Errorf("stderr:\n%s", errs)
	}
	if f := flat(t, rec); f.Samples == 0 {
		t.Errorf("no CPU samples recorded")
	}
}
