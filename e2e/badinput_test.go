package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// Bad input is refused before anything runs, with the cause and what to do,
// and exit status 2.
func TestBadInputUsage(t *testing.T) {
	testutil.NeedRoot(t)
	text := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(text, []byte("CDrR is not a program\n"), 0o644)
	short := rec(t)
	mustRun(t, "record", "-o", short, "--", testutil.C(t, "hier-O2", []string{"hier.c"}, "-O2", "-g"), "1")
	kthread := kernelThread(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"record", "-F", "0", "-o", rec(t), "--", "true"}, "-F 0: the sampling frequency is in samples per second of CPU time, at least 1"},
		{[]string{"record", "-F", "-5", "-o", rec(t), "--", "true"}, "-F -5"},
		{[]string{"record", "--duration", "-1s", "-o", rec(t), "--", "true"}, "--duration -1s: a duration is positive"},
		{[]string{"record", "--events", "cpu,syscalls", "--syscall-limit", "-1", "-o", rec(t), "--", "true"}, "--syscall-limit -1: system calls a second per thread"},
		{[]string{"record", "-p", fmt.Sprint(kthread), "-o", rec(t), "--duration", "1s"}, "is a kernel thread, which runs no user code to profile"},
		{[]string{"report", "--from", "50s", short}, "no samples in the window --from 50s: the recording's samples run from 0s to"},
		{[]string{"schema", text}, "is not a compiled program (an ELF file): give the path of an executable or shared library built with -g"},
		{[]string{"schema", short}, "is a recording, not a program"},
	} {
		stdout, stderr, code := run(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) || strings.Contains(stderr, "magic number") {
			t.Errorf("culprit %s: exit %d, stderr %q, stdout %q; want exit 2 saying %q", strings.Join(c.args, " "), code, stderr, stdout, c.want)
		}
	}
}

// kernelThread returns the ID of a kernel thread (PF_KTHREAD in the flags
// of /proc/PID/stat).
func kernelThread(t *testing.T) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		var flags uint64
		if len(f) > 6 {
			fmt.Sscan(f[6], &flags)
		}
		if flags&0x00200000 != 0 {
			return pid
		}
	}
	t.Fatal("no kernel thread is visible in /proc (a PID namespace?): the kernel-thread refusal cannot be tested")
	return 0
}

// Unprivileged: each refusal names the real cause -- another user's
// process, tracefs mounted but closed to the user, BPF without the
// capability -- with no library advice that does not apply.
func TestBadInputUnprivileged(t *testing.T) {
	testutil.NeedRoot(t) // to switch to an unprivileged user
	dir, err := os.MkdirTemp("", "culprit-user-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o777)
	exe, _ := os.ReadFile(culprit)
	me := filepath.Join(dir, "culprit")
	os.WriteFile(me, exe, 0o755)
	data, err := os.ReadFile(testutil.C(t, "hier-O0", []string{"hier.c"}, "-O0", "-g"))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "hier")
	os.WriteFile(bin, data, 0o755)
	asNobody := func(args ...string) (string, int) {
		cmd := exec.Command(me, args...)
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("running culprit as nobody: %v", err)
		}
		return stderr.String(), code
	}

	// Process 1 runs as root.
	stderr, code := asNobody("record", "-p", "1", "--duration", "1s", "-o", filepath.Join(dir, "a.rec"))
	if code == 0 || !strings.Contains(stderr, "-p 1: ") || !strings.Contains(stderr, "is not your process (it runs as user 0, you are 65534)") || strings.Contains(stderr, "perf_event_paranoid") {
		t.Errorf("-p 1 as nobody: exit %d, %q; want a refusal saying it is not the user's process", code, stderr)
	}

	// tracefs as most distributions mount it: mode 0700, root's.
	var closed bool
	for _, d := range []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"} {
		if fi, err := os.Stat(filepath.Join(d, "events")); err == nil {
			closed = closed || fi.Mode().Perm()&0o005 == 0
			if pfi, err := os.Stat(d); err == nil && pfi.Mode().Perm()&0o005 == 0 {
				closed = true
			}
			break
		}
	}
	testutil.Need(t, closed, "tracefs is open to every user here: the refusal of a closed tracefs cannot be tested")
	stderr, code = asNobody("record", "--events", "cpu,syscalls", "-o", filepath.Join(dir, "b.rec"), "--", bin, "1")
	if code == 0 || !strings.Contains(stderr, "tracefs, which is mounted at") || !strings.Contains(stderr, "not readable by you") || strings.Contains(stderr, "not mounted") {
		t.Errorf("--events syscalls as nobody: exit %d, %q; want a refusal saying tracefs is mounted but closed", code, stderr)
	}

	// BPF: the cause is the missing capability, not RLIMIT_MEMLOCK (culprit
	// raises that itself).
	stderr, code = asNobody("trace", "-f", "worker", "-o", filepath.Join(dir, "c.rec"), "--", bin, "1")
	if code == 0 || !strings.Contains(stderr, "needs root") || strings.Contains(stderr, "MEMLOCK") || strings.Contains(stderr, "RemoveMemlock") {
		t.Errorf("trace as nobody: exit %d, %q; want a refusal naming the privilege, without the MEMLOCK hint", code, stderr)
	}
	stderr, _ = asNobody("record", "--expr", "hier*@worker@n", "-o", filepath.Join(dir, "d.rec"), "--", bin, "1")
	if strings.Contains(stderr, "RemoveMemlock") {
		t.Errorf("record --expr as nobody: %q; the MEMLOCK hint leaks", stderr)
	}
}
