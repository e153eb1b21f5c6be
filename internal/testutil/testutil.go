// Package testutil builds the real programs under testdata/targets for tests
// and decides what a test does when the machine lacks a kernel feature: skip
// on a developer machine, fail when CI is set.
package testutil

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// Root returns the repository root.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Targets returns testdata/targets.
func Targets() string { return filepath.Join(Root(), "testdata", "targets") }

var (
	mu       sync.Mutex
	buildDir string
	inMain   bool // Main or Run is running the tests, and removes buildDir
)

// Main runs a package's tests and exits with their status, removing the
// programs C and Go built for them. A package whose tests build targets
// calls it from its TestMain:
//
//	func TestMain(m *testing.M) { testutil.Main(m) }
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run is Main for a TestMain with more to do: it runs the tests, removes
// the programs built for them and returns the exit status.
func Run(m *testing.M) int {
	mu.Lock()
	inMain = true
	mu.Unlock()
	code := m.Run()
	if err := StopPostgres(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = max(code, 1)
	}
	mu.Lock()
	defer mu.Unlock()
	if buildDir != "" {
		os.RemoveAll(buildDir)
		buildDir = ""
	}
	return code
}

func cacheDir(t testing.TB) string {
	mu.Lock()
	defer mu.Unlock()
	if !inMain {
		// Without Main nothing removes the directory: every package
		// whose tests build targets has a TestMain calling it.
		t.Log("testutil: the package's TestMain does not call testutil.Main; the programs built for its tests stay in " + os.TempDir())
	}
	if buildDir == "" {
		removeOrphans()
		d, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", targetsPrefix, os.Getpid()))
		if err != nil {
			t.Fatalf("creating build dir: %v", err)
		}
		buildDir = d
	}
	return buildDir
}

// targetsPrefix starts the name of a test binary's build directory, followed
// by the binary's process id.
const targetsPrefix = "culprit-targets-"

// removeOrphans removes the build directories of test binaries that are
// gone without removing theirs (killed, or ended by -timeout, which skips
// Run's cleanup).
func removeOrphans() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), targetsPrefix+"*-*"))
	for _, d := range dirs {
		pid, _, ok := strings.Cut(strings.TrimPrefix(filepath.Base(d), targetsPrefix), "-")
		n, err := strconv.Atoi(pid)
		if !ok || err != nil || n <= 0 {
			continue
		}
		if err := syscall.Kill(n, 0); err == syscall.ESRCH {
			os.RemoveAll(d)
		}
	}
}

func key(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:6])
}

// C compiles testdata/targets/<srcs...> with gcc and the given flags into an
// executable and returns its path. Results are cached for the test binary's
// lifetime. Flags such as "-shared -fPIC" build a shared object instead.
func C(t testing.TB, out string, srcs []string, flags ...string) string {
	t.Helper()
	return compile(t, "gcc", out, srcs, flags)
}

// CXX is C with g++, which links the C++ library (libstdc++) and its
// unwinder.
func CXX(t testing.TB, out string, srcs []string, flags ...string) string {
	t.Helper()
	return compile(t, "g++", out, srcs, flags)
}

func compile(t testing.TB, compiler, out string, srcs, flags []string) string {
	t.Helper()
	dir := cacheDir(t)
	bin := filepath.Join(dir, out+"-"+key(append(append([]string{compiler}, srcs...), flags...)...))
	mu.Lock()
	defer mu.Unlock()
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	args := append([]string{}, flags...)
	for _, s := range srcs {
		args = append(args, filepath.Join(Targets(), s))
	}
	args = append(args, "-o", bin)
	cmd := exec.Command(compiler, args...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", compiler, strings.Join(args, " "), err, b)
	}
	return bin
}

// Go builds testdata/targets/<pkg> with the go tool and extra flags (e.g.
// "-ldflags=-s -w") and returns the executable's path.
func Go(t testing.TB, pkg string, flags ...string) string {
	t.Helper()
	dir := cacheDir(t)
	bin := filepath.Join(dir, pkg+"-"+key(append([]string{pkg}, flags...)...))
	mu.Lock()
	defer mu.Unlock()
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	args := append([]string{"build"}, flags...)
	args = append(args, "-o", bin, ".")
	cmd := exec.Command("go", args...)
	cmd.Dir = filepath.Join(Targets(), pkg)
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GO111MODULE=off", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return bin
}

// InCI reports whether the CI environment variable is set.
func InCI() bool { return os.Getenv("CI") != "" }

// Need skips the test when ok is false, or fails it when running in CI, where
// every kernel-dependent test must run.
func Need(t testing.TB, ok bool, why string) {
	t.Helper()
	if ok {
		return
	}
	if InCI() {
		t.Fatalf("required in CI: %s", why)
	}
	t.Skipf("skipped: %s", why)
}

// NeedRoot is Need(os.Geteuid() == 0, ...).
func NeedRoot(t testing.TB) {
	t.Helper()
	Need(t, os.Geteuid() == 0, "needs root for perf events with kernel call chains")
}

// NeedTool is Need for a program the test runs, found on PATH, and returns
// its path. .ci/run installs every tool a test names here.
func NeedTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	Need(t, err == nil, name+" not installed")
	return p
}

// PinThread pins the calling thread, which the caller has locked
// (runtime.LockOSThread), to cpu, and returns what puts its affinity
// back: call it before unlocking the thread, which otherwise goes back to
// the runtime pinned.
func PinThread(t testing.TB, cpu int) (restore func()) {
	t.Helper()
	var old, one unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		t.Fatal(err)
	}
	one.Set(cpu)
	if err := unix.SchedSetaffinity(0, &one); err != nil {
		t.Fatal(err)
	}
	return func() { unix.SchedSetaffinity(0, &old) }
}
