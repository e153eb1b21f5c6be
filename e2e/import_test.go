package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// perf script text of three cpu-clock samples, as perf 6.x prints it.
const importText = `hier  8110  2291.537887:     250000 cpu-clock: 
	ffffffff815fcdc4 finish_fault+0x394 ([kernel.kallsyms])
	            117e worker+0x45 (/tmp/hier)
	            11a6 dispatch_2+0xe (/tmp/hier)
	            120a main+0x40 (/tmp/hier)
	           2724a __libc_start_call_main+0x7a (/usr/lib/x86_64-linux-gnu/libc.so.6)

hier  8110  2291.538137:     250000 cpu-clock: 
	            117a worker+0x41 (/tmp/hier)
	            11a6 dispatch_2+0xe (/tmp/hier)
	            120a main+0x40 (/tmp/hier)
	           2724a __libc_start_call_main+0x7a (/usr/lib/x86_64-linux-gnu/libc.so.6)

this line is not perf script
hier  8110  2291.538387:     250000 cpu-clock: 
	            1192 dispatch_1+0xe (/tmp/hier)
	            120a main+0x40 (/tmp/hier)
	           2724a __libc_start_call_main+0x7a (/usr/lib/x86_64-linux-gnu/libc.so.6)

`

// culprit import reads perf script text from a file or standard input into a
// recording that report reads with perf's names.
func TestImportPerfScript(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "hier.perf")
	if err := os.WriteFile(in, []byte(importText), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "hier.rec")
	_, errs, code := run(t, "import", "--from", "perf-script", in, "-o", out)
	if code != 0 || !strings.Contains(errs, "culprit: imported 3 samples (1 lines skipped) into "+out) {
		t.Fatalf("exit %d, stderr:\n%s", code, errs)
	}
	f := flat(t, out)
	if f.Samples != 3 || f.total("main") != 1 || f.total("dispatch_2") < 0.6 || f.total("worker") < 0.6 || f.total("finish_fault") < 0.3 {
		t.Errorf("report %+v", f)
	}

	// Standard input, into the default culprit.rec.
	cmd := exec.Command(culprit, "import", "--from", "perf-script", "-")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(importText)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil || !strings.Contains(stderr.String(), "imported 3 samples (1 lines skipped) into culprit.rec") {
		t.Fatalf("from standard input: %v\n%s", err, stderr.String())
	}
	if f := flat(t, filepath.Join(dir, "culprit.rec")); f.Samples != 3 || f.total("worker") < 0.6 {
		t.Errorf("report %+v", f)
	}
}

// A bad --from is a usage error that lists the formats; input that is not
// perf script fails with the line it stopped at and leaves the output as it
// was.
func TestImportErrors(t *testing.T) {
	dir := t.TempDir()
	_, errs, code := run(t, "import", "--from", "pprof", "x.pb.gz")
	if code != 2 || !strings.Contains(errs, `unknown input format "pprof": use --from perf-script`) {
		t.Errorf("exit %d, stderr:\n%s", code, errs)
	}
	bad := filepath.Join(dir, "bad.txt")
	if err := os.WriteFile(bad, []byte("no perf here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "keep.rec")
	if err := os.WriteFile(out, []byte("previous"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errs, code = run(t, "import", "--from", "perf-script", "-o", out, bad)
	if code != 1 || !strings.Contains(errs, `line 1: expected a perf script sample header`) {
		t.Errorf("exit %d, stderr:\n%s", code, errs)
	}
	if b, _ := os.ReadFile(out); string(b) != "previous" {
		t.Errorf("a failed import changed %s", out)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "keep.rec.*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
