package perf

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// The tests stand a file in for /sys/kernel/rcu_expedited: the kernel's
// knob is the machine's, and other programs may change it at any time.

func standIn(t *testing.T, v string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "rcu_expedited")
	if err := os.WriteFile(f, []byte(v+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func read(t *testing.T, f string) string {
	t.Helper()
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// The knob is 1 inside the window and put back after; a knob already 1
// (someone else's choice) is left alone.
func TestExpediteWindow(t *testing.T) {
	f := standIn(t, "0")
	restore := expediteRCU(f)
	if v := read(t, f); v != "1" {
		t.Errorf("inside the window the knob is %q, want 1", v)
	}
	restore()
	if v := read(t, f); v != "0" {
		t.Errorf("after the window the knob is %q, want 0", v)
	}
	one := standIn(t, "1")
	restore = expediteRCU(one)
	restore()
	if v := read(t, one); v != "1" {
		t.Errorf("a knob found at 1 is %q after the window", v)
	}
	if FastStartError() != nil {
		t.Errorf("restore error: %v", FastStartError())
	}
}

// A process killed with SIGKILL inside the window leaves the knob put back
// by its guardian.
func TestExpediteGuardian(t *testing.T) {
	if f := os.Getenv("CULPRIT_TEST_EXPEDITE_AND_DIE"); f != "" {
		expediteRCU(f)
		os.Stdout.WriteString("in\n")
		time.Sleep(time.Minute) // killed meanwhile
		return
	}
	f := standIn(t, "0")
	cmd := exec.Command(os.Args[0], "-test.run=^TestExpediteGuardian$")
	cmd.Env = append(os.Environ(), "CULPRIT_TEST_EXPEDITE_AND_DIE="+f)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var b [3]byte
	if _, err := out.Read(b[:]); err != nil || string(b[:]) != "in\n" {
		t.Fatalf("the helper did not open the window: %q %v", b, err)
	}
	if v := read(t, f); v != "1" {
		t.Errorf("inside the helper's window the knob is %q", v)
	}
	cmd.Process.Kill()
	cmd.Wait()
	v := ""
	for i := 0; i < 200; i++ {
		if v = read(t, f); v == "0" {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if v != "0" {
		t.Errorf("after the helper was killed the knob is %q, want 0", v)
	}
}

// Machines that isolate CPUs are named; others are not.
func TestIsolatedCPUs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, v string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := isolatedCPUs(dir); got != "" {
		t.Errorf("no files: %q", got)
	}
	write("nohz_full", "(null)\n")
	write("isolated", "\n")
	if got := isolatedCPUs(dir); got != "" {
		t.Errorf("none isolated: %q", got)
	}
	write("nohz_full", "2-3\n")
	if got := isolatedCPUs(dir); got != "nohz_full CPUs 2-3" {
		t.Errorf("nohz_full: %q", got)
	}
	write("isolated", "3\n")
	if got := isolatedCPUs(dir); got != "nohz_full CPUs 2-3 and isolated CPUs 3" {
		t.Errorf("both: %q", got)
	}
}

// Without FastStart, OpenTask never expedites; with it, only the first
// task-bound open does, and the knob is put back.
func TestOpenTaskExpeditesOnce(t *testing.T) {
	testutil.NeedRoot(t)
	a := &unix.PerfEventAttr{
		Type:   unix.PERF_TYPE_SOFTWARE,
		Config: unix.PERF_COUNT_SW_DUMMY,
		Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Bits:   unix.PerfBitDisabled,
	}
	opens := 0
	open := func() {
		fd, err := OpenTask(a, unix.Getpid(), -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		unix.Close(fd)
		opens++
	}
	// What the window does to the knob is TestExpediteWindow's; here, when
	// it is opened and closed.
	var seen []string
	defer func() { expediteHook = nil }()
	expediteHook = func(knob string) func() {
		seen = append(seen, "expedite")
		return func() { seen = append(seen, "restore") }
	}
	expediteOnce = sync.Once{}
	fastStart.Store(false)
	open()
	if len(seen) != 0 {
		t.Errorf("without FastStart: %v", seen)
	}
	fastStart.Store(true)
	defer fastStart.Store(false)
	open()
	open()
	if strings.Join(seen, ",") != "expedite,restore" {
		t.Errorf("with FastStart, %d opens: %v, want one expedited window", opens, seen)
	}
}
