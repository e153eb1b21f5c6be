package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/testutil"
)

// A binary that changed since recording is named as such, not symbolized
// with wrong names.
func TestChangedBinaryIsReported(t *testing.T) {
	testutil.NeedRoot(t)
	bin, out := recordHier(t, "prog", "-O2", "-g")
	rebuildHier(t, bin)
	stdout, stderr, code := run(t, "report", out)
	if code != 0 {
		t.Fatalf("report: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "build-id") || !strings.Contains(stderr, "changed since recording") {
		t.Errorf("stderr does not say the binary changed:\n%s", stderr)
	}
	if strings.Contains(stdout, "dispatch_2") {
		t.Errorf("frames of a changed binary were named:\n%s", stdout)
	}
	if !strings.Contains(stdout, "prog+0x") {
		t.Errorf("frames of the changed binary should read prog+0xoffset:\n%s", stdout)
	}
}

// After culprit archive, a recording of a binary that was since rebuilt,
// then deleted, still reports with the recorded binary's names.
func TestArchiveKeepsNames(t *testing.T) {
	testutil.NeedRoot(t)
	t.Setenv("CULPRIT_ARCHIVE", filepath.Join(t.TempDir(), "archive"))
	bin, out := recordHier(t, "prog", "-O2", "-g")
	if got := mustRun(t, "archive", out); !strings.Contains(got, "archived") {
		t.Errorf("archive printed %q", got)
	}
	if got := mustRun(t, "archive", out); !strings.Contains(got, "already there") {
		t.Errorf("archive a second time printed %q", got)
	}
	rebuildHier(t, bin)
	for _, state := range []string{"rebuilt", "deleted"} {
		if state == "deleted" {
			os.Remove(bin)
		}
		_, stderr, code := run(t, "report", out)
		if code != 0 || strings.Contains(stderr, "changed since recording") || strings.Contains(stderr, "cannot symbolize") {
			t.Errorf("%s: report exit %d, stderr:\n%s", state, code, stderr)
		}
		c := callers(t, 3, out)
		if s := c.share("worker", "dispatch_2", "main"); s < 0.5 {
			t.Errorf("%s: worker <- dispatch_2 <- main %.3f, want the recorded binary's names\n%+v", state, s, c.Callers)
		}
	}
}

// A stripped binary is reported as object+offset, and said once; the
// addresses of one function add up under the offset of its first
// instruction, which the unwind tables give, while --by line keeps each
// address.
func TestStrippedBinary(t *testing.T) {
	testutil.NeedRoot(t)
	dir := t.TempDir()
	full := filepath.Join(dir, "full")
	bin := filepath.Join(dir, "stripped")
	gcc(t, "-O2", "-o", full, filepath.Join(testutil.Targets(), "hier.c"))
	if out, err := exec.Command("strip", "-o", bin, full).CombinedOutput(); err != nil {
		t.Fatalf("strip: %v\n%s", err, out)
	}
	out := rec(t)
	mustRun(t, "record", "-o", out, "--", bin, "8")
	stdout, stderr, code := run(t, "report", out)
	if code != 0 {
		t.Fatalf("report: exit %d: %s", code, stderr)
	}
	if n := strings.Count(stderr, "has no symbols"); n != 1 {
		t.Errorf("want the missing symbols said once, said %d times:\n%s", n, stderr)
	}
	if !strings.Contains(stdout, "stripped+0x") {
		t.Errorf("want stripped+0xoffset frames:\n%s", stdout)
	}

	// worker's loop spans several instructions; its samples make one row.
	worker := fmt.Sprintf("stripped+0x%x", testutil.FileOffset(t, full, testutil.Symbol(t, full, "worker").Value))
	f := flat(t, out)
	var self float64
	for _, e := range f.Entries {
		if e.Name == worker {
			self = e.Self
		}
	}
	if self < 0.9 {
		t.Errorf("%s: self %.3f, want ≥ 0.9 (worker spins all the time)\n%+v", worker, self, f.Entries)
	}
	lines := flat(t, "--by", "line", out)
	var inWorker float64
	rows := 0
	for _, e := range lines.Entries {
		if strings.HasPrefix(e.Name, "stripped+0x") && strings.HasSuffix(e.Name, " ("+worker+")") {
			inWorker += e.Self
			rows++
		}
	}
	if rows < 2 || inWorker < 0.9 {
		t.Errorf("--by line: %d rows of %s holding %.3f, want its addresses apart\n%+v", rows, worker, inWorker, lines.Entries)
	}
}

// A binary deleted since recording is said once, and its frames are still
// reported by address.
func TestDeletedBinary(t *testing.T) {
	testutil.NeedRoot(t)
	bin, out := recordHier(t, "gone", "-O2")
	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := run(t, "report", out)
	if code != 0 {
		t.Fatalf("report: exit %d: %s", code, stderr)
	}
	if n := strings.Count(stderr, "warning:"); n != 1 || !strings.Contains(stderr, bin) || !strings.Contains(stderr, "gone+0xoffset") {
		t.Errorf("want the deleted binary said once, with how its frames are shown; said %d times:\n%s", n, stderr)
	}
	if !strings.Contains(stdout, "gone+0x") {
		t.Errorf("want gone+0xoffset frames:\n%s", stdout)
	}
}

// Without privileges culprit still samples the user's own process in user
// mode, and says how to get kernel frames.
func TestUnprivilegedUser(t *testing.T) {
	testutil.NeedRoot(t)                          // to switch to an unprivileged user
	dir, err := os.MkdirTemp("", "culprit-user-") // t.TempDir's parent is private
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o777)
	bin := filepath.Join(dir, "hier")
	data, err := os.ReadFile(testutil.C(t, "hier-O0", []string{"hier.c"}, "-O0", "-g"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(bin, data, 0o755)
	exe, _ := os.ReadFile(culprit)
	me := filepath.Join(dir, "culprit")
	os.WriteFile(me, exe, 0o755)
	out := filepath.Join(dir, "user.rec")
	cmd := exec.Command(me, "record", "-o", out, "--", bin, "2")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	paranoid, _ := os.ReadFile("/proc/sys/kernel/perf_event_paranoid")
	if strings.TrimSpace(string(paranoid)) > "2" {
		// Then even user-mode sampling is refused: the error must say why.
		if err == nil || !strings.Contains(stderr.String(), "perf_event_paranoid") {
			t.Errorf("want a clear refusal naming perf_event_paranoid, got %v: %s", err, stderr.String())
		}
		return
	}
	if err != nil {
		t.Fatalf("unprivileged record failed: %v\n%s", err, stderr.String())
	}
	for _, want := range []string{"kernel frames not recorded", "CAP_PERFMON", "perf_event_paranoid"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	f := flat(t, out)
	if f.total("worker") < 0.9 {
		t.Errorf("user-mode samples: worker %.2f", f.total("worker"))
	}
}

// A recording cut at any byte still reports and says what was salvaged:
// cuts at fixed fractions and at random offsets (the seed is logged).
func TestCutRecordingsReport(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "hier-O0", []string{"hier.c"}, "-O0", "-g")
	out := rec(t)
	mustRun(t, "record", "-o", out, "--", bin, "2")
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	full := flat(t, out).Samples
	seed := rand.Int63()
	r := rand.New(rand.NewSource(seed))
	cuts := []int{len(data) * 13 / 100, len(data) / 2, len(data) * 77 / 100, len(data) * 999 / 1000}
	for i := 0; i < 6; i++ {
		cuts = append(cuts, recording.HeaderSize+r.Intn(len(data)-recording.HeaderSize))
	}
	for _, cut := range cuts {
		p := filepath.Join(t.TempDir(), "cut.rec")
		os.WriteFile(p, data[:cut], 0o644)
		stdout, stderr, code := run(t, "report", "--format", "json", p)
		if code != 0 {
			t.Errorf("seed %d: report of a file cut at %d/%d bytes failed: %s", seed, cut, len(data), stderr)
			continue
		}
		if !strings.Contains(stderr, "salvaged") {
			t.Errorf("seed %d: cut at %d: stderr does not say what was salvaged: %q", seed, cut, stderr)
		}
		var f flatJSON
		if err := json.Unmarshal([]byte(stdout), &f); err != nil || f.Samples > full {
			t.Errorf("seed %d: cut at %d: %v, %d samples of %d", seed, cut, err, f.Samples, full)
		}
	}
	// Cut inside the header: a clear error, no stack trace.
	p := filepath.Join(t.TempDir(), "header.rec")
	os.WriteFile(p, data[:recording.HeaderSize/2], 0o644)
	if _, stderr, code := run(t, "report", p); code == 0 || !strings.Contains(stderr, "truncated header") || strings.Contains(stderr, "goroutine") {
		t.Errorf("file cut inside its header: exit %d, %q", code, stderr)
	}
}

// A recording that fails to start removes only a file it created itself:
// never a device such as /dev/null, never a file the user had.
func TestFailedStartKeepsOutputs(t *testing.T) {
	testutil.NeedRoot(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "notelf")
	os.WriteFile(bad, []byte("not a program\x00\x01"), 0o755)
	mine := filepath.Join(dir, "mine.rec")
	os.WriteFile(mine, []byte("precious"), 0o644)
	fresh := filepath.Join(dir, "fresh.rec")
	for _, collector := range []string{"perf", "ptrace"} {
		for _, out := range []string{"/dev/null", mine, fresh} {
			_, stderr, code := run(t, "record", "--collector", collector, "-o", out, "--", bad)
			if code == 0 {
				t.Errorf("%s -o %s: exit %d, %q", collector, out, code, stderr)
			}
		}
		if collector == "perf" {
			// The perf collector truncates an existing output only once the
			// command runs, so a failed start leaves it as it was.
			if b, err := os.ReadFile(mine); err != nil || string(b) != "precious" {
				t.Errorf("after a failed start the user's file holds %q (%v), want it unchanged", b, err)
			}
		}
	}
	if st, err := os.Stat("/dev/null"); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("/dev/null is no longer a device: %v %v", st.Mode(), err)
	}
	if _, err := os.Stat(mine); err != nil {
		t.Errorf("the user's existing file was removed: %v", err)
	}
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Errorf("the file culprit created for a failed run was left behind: %v", err)
	}
}

// recordHier builds testdata/targets/hier.c with flags as name in a
// temporary directory and records it running 4 rounds.
func recordHier(t *testing.T, name string, flags ...string) (bin, out string) {
	t.Helper()
	bin = filepath.Join(t.TempDir(), name)
	gcc(t, append(flags, "-o", bin, filepath.Join(testutil.Targets(), "hier.c"))...)
	out = rec(t)
	mustRun(t, "record", "-o", out, "--", bin, "4")
	return bin, out
}

// rebuildHier replaces bin with other code (and another build-id) at the
// same path.
func rebuildHier(t *testing.T, bin string) {
	t.Helper()
	gcc(t, "-O0", "-g", "-DEXTRA=1", "-o", bin, filepath.Join(testutil.Targets(), "hier.c"), "-Wl,--build-id=sha1")
}

// gcc runs gcc with args; the test fails if it does.
func gcc(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %v: %v\n%s", args, err, out)
	}
}
