package collector

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A started command waits at its exec, seized and stopped, before its first
// instruction; released, it runs and its exit code is its own.
func TestStartStoppedAtExec(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c, err := Start([]string{"sh", "-c", "exit 7"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.ReadFile("/proc/" + strconv.Itoa(c.Pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(st), "State:\tt (tracing stop)") {
		t.Errorf("the command is not in a tracing stop:\n%s", st)
	}
	exe, _ := os.Readlink("/proc/" + strconv.Itoa(c.Pid) + "/exe")
	if exe != c.Path && !strings.HasSuffix(exe, "sh") && !strings.HasSuffix(exe, "dash") && !strings.HasSuffix(exe, "bash") {
		t.Errorf("stopped in %s, not after exec of %s", exe, c.Path)
	}
	if err := c.Release(); err != nil {
		t.Fatal(err)
	}
	code, err := c.Wait()
	if err != nil || code != 7 {
		t.Errorf("exit code %d (%v), want 7", code, err)
	}
}

func TestStartErrors(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if _, err := Start([]string{"/no/such/culprit-command"}, 0); err == nil {
		t.Error("a missing command started")
	}
	dir := t.TempDir()
	f := dir + "/notexec"
	if err := os.WriteFile(f, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Not executable: LookPath refuses it.
	if _, err := Start([]string{f}, 0); err == nil {
		t.Error("a file without x bits started")
	}
	// Executable but no format the kernel knows: exec fails in the child.
	if err := os.Chmod(f, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Start([]string{f}, 0)
	if err == nil || !strings.Contains(err.Error(), unix.ENOEXEC.Error()) {
		t.Errorf("exec of a data file: %v, want %v", err, unix.ENOEXEC)
	}
}
