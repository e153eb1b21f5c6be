package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// vProf end-to-end tests: three C programs built as real programs are
// (-O2 -g, helpers, a background thread), each with one bug pattern, run once
// normally and once in the buggy configuration. A CPU profile ranks the root
// cause low by self time; culprit diagnose, comparing the variables sampled
// with culprit record --values, ranks it first or second with its pattern.

var vprofFlags = []string{"-O2", "-g", "-pthread"}

type vprofCase struct {
	name    string // testdata/targets/vprof_<name>.c
	root    string // the root cause function
	pattern string
	normal  []string // arguments of the normal run
	buggy   []string
}

var vprofCases = []vprofCase{
	// MDEV-21826: available memory computed as 0 makes every recovery round
	// rescan the log; recv_scan_log's time is in crc32c and read_block.
	{name: "wrong", root: "recv_scan_log", pattern: "wrong-constraint", normal: []string{"normal"}, buggy: []string{"buggy"}},
	// HTTPD-54852: pod_killpg wakes exited children too, each for a whole
	// connection timeout spent in poll_ack.
	{name: "missing", root: "pod_killpg", pattern: "missing-constraint", normal: []string{"normal"}, buggy: []string{"buggy"}},
	// MDEV-23399: the LRU scan walks the whole list on every miss; its time
	// is in the block mutex and the list iterator.
	{name: "scal", root: "buf_lru_scan_and_free", pattern: "scalability", normal: []string{"normal"}, buggy: []string{"buggy"}},
}

func (c vprofCase) bin(t *testing.T) string {
	return testutil.C(t, "vprof_"+c.name, []string{"vprof_" + c.name + ".c"}, vprofFlags...)
}

// selfRank is the 1-based rank of function name in the flat report of rec,
// ordered by self time, or 0 when it has no sample of its own.
func selfRank(t *testing.T, rec, name string) (int, flatJSON) {
	t.Helper()
	f := flat(t, rec)
	return flatRank(f, func(n, _ string) bool { return n == name }), f
}

func topNames(f flatJSON, n int) string {
	var out []string
	for i, e := range f.Entries {
		if i == n {
			break
		}
		out = append(out, fmt.Sprintf("%s %.1f%%", e.Name, 100*e.Self))
	}
	return strings.Join(out, ", ")
}

// TestVprofProgramsSelfRank checks the programs' design without value
// sampling: in the buggy run, plain culprit report (CPU self time) ranks the
// root cause below 3rd.
func TestVprofProgramsSelfRank(t *testing.T) {
	testutil.NeedRoot(t)
	for _, c := range vprofCases {
		t.Run(c.name, func(t *testing.T) {
			rec := filepath.Join(t.TempDir(), "buggy.rec")
			mustRun(t, append([]string{"record", "-o", rec, "--", c.bin(t)}, c.buggy...)...)
			r, f := selfRank(t, rec, c.root)
			if r != 0 && r <= 3 {
				t.Errorf("%s ranks %d by self time; want below 3rd. Top: %s", c.root, r, topNames(f, 6))
			}
			t.Logf("%s: self rank %d (0: no own sample); top: %s", c.root, r, topNames(f, 4))
		})
	}
}

type diagnoseJSON struct {
	Functions []struct {
		Rank       int     `json:"rank"`
		Name       string  `json:"name"`
		Calibrated float64 `json:"calibrated"`
		Raw        float64 `json:"raw"`
		Discount   float64 `json:"discount"`
		Dimension  string  `json:"dimension"`
		Variable   string  `json:"variable"`
		Pattern    string  `json:"pattern"`
		Var        *struct {
			Name    string `json:"name"`
			Tags    string `json:"tags"`
			Anomaly *struct {
				Outside int `json:"outside"`
				Over    int `json:"over"`
			} `json:"anomaly"`
		} `json:"variable_info"`
		Lines []struct {
			File     string `json:"file"`
			Line     int    `json:"line"`
			Function string `json:"function"`
			Samples  int    `json:"samples"`
		} `json:"lines"`
		Blocks []struct {
			Object   string `json:"object"`
			Function string `json:"function"`
			Start    string `json:"start"`
			End      string `json:"end"`
			Samples  int    `json:"samples"`
		} `json:"blocks"`
	} `json:"functions"`
	Buggy []struct {
		Variables int `json:"variables"`
	} `json:"buggy"`
}

func (d diagnoseJSON) summary(n int) string {
	var b strings.Builder
	for i, f := range d.Functions {
		if i == n {
			break
		}
		fmt.Fprintf(&b, "  #%d %s calibrated %.3gs raw %.3gs discount %.2f %s %s (%s)\n", f.Rank, f.Name, f.Calibrated, f.Raw,
			f.Discount, f.Dimension, f.Pattern, f.Variable)
	}
	return b.String()
}

// TestVprofDiagnose records each program normally and buggy with
// culprit record --values (the schema made on the fly: variables and
// loop/cond/args tags from DWARF and the disassembly) and checks that
// culprit report ranks the root cause below 3rd by self time while
// culprit diagnose ranks it 1st or 2nd with the right pattern, and
// localises the anomalous values in its lines and basic blocks.
func TestVprofDiagnose(t *testing.T) {
	testutil.NeedRoot(t)
	for _, c := range vprofCases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			bin := c.bin(t)
			normal, buggy := filepath.Join(dir, "normal.rec"), filepath.Join(dir, "buggy.rec")
			mustRun(t, append([]string{"record", "--values", "-o", normal, "--", bin}, c.normal...)...)
			mustRun(t, append([]string{"record", "--values", "-o", buggy, "--", bin}, c.buggy...)...)

			r, f := selfRank(t, buggy, c.root)
			if r != 0 && r <= 3 {
				t.Errorf("culprit report ranks %s %d by self time; want below 3rd. Top: %s", c.root, r, topNames(f, 6))
			}

			for _, method := range []string{"differential", "vprof"} {
				checkDiagnose(t, c, bin, normal, buggy, method, r)
			}
		})
	}
}

// checkDiagnose runs diagnose with a method on a case's recordings and
// checks the root cause's rank, pattern and localisation.
func checkDiagnose(t *testing.T, c vprofCase, bin, normal, buggy, method string, r int) {
	t.Helper()
	out := mustRun(t, "diagnose", "--normal", normal, "--buggy", buggy, "--format", "json", "--method", method)
	var d diagnoseJSON
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("diagnose JSON: %v\n%s", err, out)
	}
	rank, pattern, tags := 0, "", ""
	for _, fn := range d.Functions {
		if fn.Name == c.root {
			rank, pattern = fn.Rank, fn.Pattern
			if fn.Var != nil {
				tags = fn.Var.Tags
			}
			// Lines and blocks are where the buggy values outside the
			// normal range were read or, for a variable anomalous only by
			// another mix of its usual values (seen once in several runs
			// under load, ranked right), where the values the buggy runs
			// over-represent were; a mix that changed in no one bin
			// significantly has none to show.
			if fn.Var != nil && fn.Var.Anomaly != nil && fn.Var.Anomaly.Outside == 0 && fn.Var.Anomaly.Over == 0 {
				t.Logf("%s (%s): %s's buggy values lie in its normal range, none over-represented: nothing to localise", c.root, method, fn.Var.Name)
				break
			}
			inRoot := false
			for _, l := range fn.Lines {
				inRoot = inRoot || l.Function == c.root && strings.HasSuffix(l.File, "vprof_"+c.name+".c")
			}
			if !inRoot {
				t.Errorf("%s: anomalous values not localised in it: %+v", c.root, fn.Lines)
			}
			blocks := 0
			for _, b := range fn.Blocks {
				lo, err1 := strconv.ParseUint(b.Start, 0, 64)
				hi, err2 := strconv.ParseUint(b.End, 0, 64)
				if b.Function == c.root && b.Object == bin && err1 == nil && err2 == nil && lo < hi {
					blocks += b.Samples
				}
			}
			if blocks == 0 {
				t.Errorf("%s: anomalous values not localised in its basic blocks: %+v", c.root, fn.Blocks)
			}
		}
	}
	if rank < 1 || rank > 2 {
		t.Errorf("diagnose --method %s ranks %s %d; want 1st or 2nd\n%s", method, c.root, rank, d.summary(6))
	}
	t.Logf("%s: self rank %d, diagnose rank %d\n%s", method, r, rank, d.summary(4))

	text := mustRun(t, "diagnose", "--normal", normal, "--buggy", buggy, "--top", "3", "--method", method)
	want := "normal median"
	if method == "differential" {
		want = "of buggy time vs"
	}
	if !strings.Contains(text, c.root) || !strings.Contains(text, want) {
		t.Errorf("text report:\n%s", text)
	}

	// The bug pattern follows from the anomalous variable's schema
	// tags (loop, cond, args) and the dimension that set its discount.
	if pattern != c.pattern {
		t.Errorf("%s: %s: pattern %s (variable tags %q), want %s\n%s", method, c.root, pattern, tags, c.pattern, d.summary(4))
	}
}

// TestDiagnoseErrors: what diagnose says about recordings it cannot use.
func TestDiagnoseErrors(t *testing.T) {
	testutil.NeedRoot(t)
	dir := t.TempDir()
	o2 := testutil.C(t, "hier-O2", []string{"hier.c"}, "-O2", "-g")
	o0 := testutil.C(t, "hier-O0", []string{"hier.c"}, "-O0", "-g")
	a, b := filepath.Join(dir, "a.rec"), filepath.Join(dir, "b.rec")
	mustRun(t, "record", "-o", a, "--", o2, "1")
	mustRun(t, "record", "-o", b, "--", o0, "1")

	// A run without value samples.
	_, errs, code := run(t, "diagnose", "--normal", a, "--buggy", a)
	if code != 1 || !strings.Contains(errs, "no value samples") || !strings.Contains(errs, "culprit record --values") {
		t.Errorf("no values: exit %d\n%s", code, errs)
	}
	// Runs of two builds.
	_, errs, code = run(t, "diagnose", "--normal", a, "--buggy", b)
	if code != 1 || !strings.Contains(errs, "different binaries") || !strings.Contains(errs, "--allow-different-binaries") {
		t.Errorf("different binaries: exit %d\n%s", code, errs)
	}
	// Usage.
	for _, args := range [][]string{
		{"diagnose", "--normal", a},
		{"diagnose", a, "--buggy", a},
		{"diagnose", "--normal", a, "--buggy", a, "--format", "xml"},
		{"diagnose", "--normal", a, "--buggy", a, "--alpha", "2"},
		{"diagnose", "--normal", a, "--buggy", a, "--default-discount", "-1"},
	} {
		if _, errs, code := run(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2\n%s", args, code, errs)
		}
	}
	// A file that is not there.
	if _, errs, code := run(t, "diagnose", "--normal", filepath.Join(dir, "none.rec"), "--buggy", a); code != 1 || !strings.Contains(errs, "none.rec") {
		t.Errorf("missing file: exit %d\n%s", code, errs)
	}
	if _, err := os.Stat(a); err != nil {
		t.Fatal(err)
	}
}

// TestDiagnoseSchemaIdentity: two runs of one program that execute
// different code. Recorded with the same (automatic) schema, the variables
// of the code only the buggy run executed are a note, not a warning about
// schemas; recorded with two schemas, diagnose says to record both with the
// same --values=SCHEMA.
func TestDiagnoseSchemaIdentity(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "vprof_cold", []string{"vprof_cold.c"}, vprofFlags...)
	dir := t.TempDir()
	normal, buggy := filepath.Join(dir, "normal.rec"), filepath.Join(dir, "buggy.rec")
	mustRun(t, "record", "--values", "-o", normal, "--", bin, "normal")
	mustRun(t, "record", "--values", "-o", buggy, "--", bin, "buggy")

	type doc struct {
		Normal []struct {
			Schemas []string `json:"schemas"`
		} `json:"normal"`
		Buggy []struct {
			Schemas []string `json:"schemas"`
		} `json:"buggy"`
		Warnings []string `json:"warnings"`
		Notes    []string `json:"notes"`
		Schema   struct {
			OnlyBuggy []string `json:"only_buggy"`
		} `json:"schema"`
	}
	diagnose := func(normal, buggy string) (d doc, text string) {
		t.Helper()
		out := mustRun(t, "diagnose", "--normal", normal, "--buggy", buggy, "--format", "json")
		if err := json.Unmarshal([]byte(out), &d); err != nil {
			t.Fatalf("diagnose JSON: %v\n%s", err, out)
		}
		return d, mustRun(t, "diagnose", "--normal", normal, "--buggy", buggy, "--top", "3")
	}
	// rebuild's loop counters (a caller's variable live across the call
	// to rebuild may be with them).
	onlyRebuild := func(d doc) bool {
		return slices.Contains(d.Schema.OnlyBuggy, "rebuild:k") && slices.Contains(d.Schema.OnlyBuggy, "rebuild:b")
	}

	d, text := diagnose(normal, buggy)
	if len(d.Normal) != 1 || len(d.Buggy) != 1 || len(d.Normal[0].Schemas) != 1 || !slices.Equal(d.Normal[0].Schemas, d.Buggy[0].Schemas) {
		t.Errorf("the same automatic schema: schemas normal %+v buggy %+v; want one identity, the same", d.Normal, d.Buggy)
	}
	if !onlyRebuild(d) {
		t.Errorf("variables sampled in the buggy run only: %q; want rebuild's among them", d.Schema.OnlyBuggy)
	}
	for _, w := range d.Warnings {
		if strings.Contains(w, "schema") {
			t.Errorf("the same schema, code not run in the normal run: warning %q", w)
		}
	}
	// One note names rebuild's variables as code the normal run did not
	// run; the only other note allowed is the mirror one, for a variable
	// that only the normal run happened to sample (a caller's, on a busy
	// machine that took few samples there).
	rebuildNotes, otherNotes := 0, 0
	for _, n := range d.Notes {
		switch {
		case strings.Contains(n, "rebuild:") && strings.Contains(n, "did not run in the normal runs"):
			rebuildNotes++
		case strings.Contains(n, "sampled in the normal runs only"):
		default:
			otherNotes++
		}
	}
	if rebuildNotes != 1 || otherNotes != 0 {
		t.Errorf("notes %q: want one naming rebuild's variables as code the normal run did not run", d.Notes)
	}
	if strings.Contains(text, "warning:") || !strings.Contains(text, "note: ") {
		t.Errorf("text report: want a note and no warning:\n%s", text)
	}

	// The normal run recorded with a schema without rebuild's variables:
	// two schemas.
	file := filepath.Join(dir, "cold.schema")
	mustRun(t, "schema", bin, "-o", file)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Split(l, ","); len(f) == 6 && f[1] == "rebuild" {
			continue
		}
		kept = append(kept, l)
	}
	if err := os.WriteFile(file, []byte(strings.Join(kept, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	edited := filepath.Join(dir, "edited.rec")
	mustRun(t, "record", "--values="+file, "-o", edited, "--", bin, "normal")
	d, text = diagnose(edited, buggy)
	if len(d.Normal[0].Schemas) != 1 || slices.Equal(d.Normal[0].Schemas, d.Buggy[0].Schemas) {
		t.Errorf("two schemas: normal %+v buggy %+v; want one identity each, different", d.Normal, d.Buggy)
	}
	if !onlyRebuild(d) || len(d.Notes) != 0 {
		t.Errorf("two schemas: only buggy %q, notes %q", d.Schema.OnlyBuggy, d.Notes)
	}
	said := false
	for _, w := range d.Warnings {
		said = said || strings.Contains(w, "rebuild:") && strings.Contains(w, "another schema") &&
			strings.Contains(w, "record both with the same --values=SCHEMA")
	}
	if !said || !strings.Contains(text, "warning: ") {
		t.Errorf("two schemas: warnings %q; want one naming rebuild's variables and saying to record both with the same --values=SCHEMA\n%s", d.Warnings, text)
	}
}
