package collector

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// gcc compiles a C source in dir, failing the test if it cannot.
func gcc(t *testing.T, dir, out, src string, args ...string) string {
	t.Helper()
	c := filepath.Join(dir, out+".c")
	if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, out)
	if b, err := exec.Command("gcc", append(append([]string{"-o", bin, c}, args...), "-Wl,-rpath,"+dir)...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", out, err, b)
	}
	return bin
}

// word reads the 8 bytes at addr of the stopped pid.
func word(t *testing.T, pid int, addr uint64) []byte {
	t.Helper()
	b := make([]byte, 8)
	if _, err := unix.PtracePeekText(pid, uintptr(addr), b); err != nil {
		t.Fatalf("reading %#x of %d: %v", addr, pid, err)
	}
	return b
}

// A dynamically linked command run to its entry stops there with its
// libraries mapped, the entry's bytes as they were; released, it runs to
// its own exit.
func TestRunToEntry(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c, err := Start([]string{"sh", "-c", "exit 7"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Kill()
	entry, base, err := auxvEntry(c.Pid)
	if err != nil || base == 0 {
		t.Fatalf("sh's auxiliary vector: entry %#x, loader at %#x, %v; want a dynamically linked sh", entry, base, err)
	}
	before := word(t, c.Pid, entry)
	if maps, _ := os.ReadFile("/proc/" + strconv.Itoa(c.Pid) + "/maps"); strings.Contains(string(maps), "libc.so") {
		t.Fatalf("the C library is mapped at the exec stop already:\n%s", maps)
	}
	reached, err := c.RunToEntry(time.Minute)
	if err != nil || !reached {
		t.Fatalf("RunToEntry: reached %v, %v", reached, err)
	}
	var regs unix.PtraceRegs
	if err := unix.PtraceGetRegs(c.Pid, &regs); err != nil {
		t.Fatal(err)
	}
	if regs.Rip != entry {
		t.Errorf("stopped at %#x, want the entry %#x", regs.Rip, entry)
	}
	if after := word(t, c.Pid, entry); !bytes.Equal(after, before) {
		t.Errorf("the entry's bytes are % x, were % x", after, before)
	}
	if maps, _ := os.ReadFile("/proc/" + strconv.Itoa(c.Pid) + "/maps"); !strings.Contains(string(maps), "libc.so") {
		t.Errorf("the C library is not mapped at the entry:\n%s", maps)
	}
	if err := c.Release(); err != nil {
		t.Fatal(err)
	}
	if code, err := c.Wait(); err != nil || code != 7 {
		t.Errorf("exit code %d (%v), want 7", code, err)
	}
}

// A command that dies before its entry (a library its executable needs
// is missing: the dynamic loader exits 127) has ended, its exit code kept;
// one whose libraries' initializers run longer than the limit is stopped
// where it is, the breakpoint removed, and runs on to its own exit once
// released.
func TestRunToEntryNotReached(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dir := t.TempDir()
	gcc(t, dir, "libgone.so", "int gone(void) { return 3; }\n", "-shared", "-fPIC")
	gcc(t, dir, "libslow.so", "#include <unistd.h>\n__attribute__((constructor)) static void init(void) { usleep(300000); }\nint slow(void) { return 0; }\n", "-shared", "-fPIC")
	needsGone := gcc(t, dir, "needsgone", "int gone(void);\nint main(void) { return gone(); }\n", "-L"+dir, "-lgone")
	needsSlow := gcc(t, dir, "needsslow", "int slow(void);\nint main(void) { return slow(); }\n", "-L"+dir, "-lslow")
	if err := os.Remove(filepath.Join(dir, "libgone.so")); err != nil {
		t.Fatal(err)
	}

	c, err := Start([]string{needsGone}, 0)
	if err != nil {
		t.Fatal(err)
	}
	reached, err := c.RunToEntry(time.Minute)
	if err != nil || reached || !c.Ended() {
		t.Fatalf("without its library: reached %v, ended %v, %v; want ended", reached, c.Ended(), err)
	}
	if err := c.Release(); err != nil {
		t.Errorf("releasing a command that ended: %v", err)
	}
	if code, err := c.Wait(); err != nil || code != 127 {
		t.Errorf("without its library: exit code %d (%v), want the loader's 127", code, err)
	}

	c, err = Start([]string{needsSlow}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Kill()
	entry, _, err := auxvEntry(c.Pid)
	if err != nil {
		t.Fatal(err)
	}
	before := word(t, c.Pid, entry)
	reached, err = c.RunToEntry(10 * time.Millisecond)
	if err != nil || reached || c.Ended() {
		t.Fatalf("a slow initializer: reached %v, ended %v, %v; want stopped short", reached, c.Ended(), err)
	}
	if after := word(t, c.Pid, entry); !bytes.Equal(after, before) {
		t.Errorf("the entry's bytes are % x, were % x: the breakpoint is left", after, before)
	}
	if err := c.Release(); err != nil {
		t.Fatal(err)
	}
	if code, err := c.Wait(); err != nil || code != 0 {
		t.Errorf("a slow initializer: exit code %d (%v), want 0", code, err)
	}
}
