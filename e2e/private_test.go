package e2e

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// What culprit keeps of a process or of the kernel is private: a recording
// of --values (with either collector), the kernel-symbol cache and the
// archive are 0600 in 0700 directories, and under sudo they belong to the
// user who ran it.
func TestFilesArePrivate(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "values-O0", []string{"values.c"}, "-O0", "-g")
	cache := t.TempDir()
	archive := filepath.Join(t.TempDir(), "archive")
	t.Setenv("XDG_CACHE_HOME", cache) // no kernel-symbol cache yet: culprit makes one
	t.Setenv("CULPRIT_ARCHIVE", archive)
	t.Setenv("SUDO_UID", "4321")
	t.Setenv("SUDO_GID", "4322")
	dir := t.TempDir()
	check := func(path string, want fs.FileMode) {
		t.Helper()
		fi, err := os.Lstat(path)
		if err != nil {
			t.Error(err)
			return
		}
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Mode().Perm() != want || st.Uid != 4321 || st.Gid != 4322 {
			t.Errorf("%s: mode %v owner %d:%d, want %v 4321:4322", path, fi.Mode().Perm(), st.Uid, st.Gid, want)
		}
	}
	perfRec := filepath.Join(dir, "perf.rec")
	mustRun(t, "record", "--values", "-o", perfRec, "--", bin)
	check(perfRec, 0o600)
	ptraceRec := filepath.Join(dir, "ptrace.rec")
	mustRun(t, "record", "--collector", "ptrace", "--values", "-o", ptraceRec, "--", bin)
	check(ptraceRec, 0o600)

	// An old recording replaced by a new one becomes private too.
	if err := os.Chmod(perfRec, 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "record", "-o", perfRec, "--", bin)
	if fi, err := os.Stat(perfRec); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("a replaced recording: %v %v, want 0600", fi.Mode().Perm(), err)
	}

	// A program in system calls has kernel frames, whose names the
	// recording waits for: the cache is written before culprit exits.
	sys := testutil.C(t, "syscalls", []string{"syscalls.c"}, "-O2", "-g")
	mustRun(t, "record", "-o", filepath.Join(dir, "sys.rec"), "--", sys, "100000")
	check(filepath.Join(dir, "sys.rec"), 0o600)
	// checkTree checks every directory and file below root; it returns
	// how many files there are.
	checkTree := func(root string) int {
		n := 0
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				t.Error(err)
			case d.IsDir():
				check(p, 0o700)
			default:
				check(p, 0o600)
				n++
			}
			return nil
		})
		return n
	}
	if checkTree(filepath.Join(cache, "culprit")) == 0 {
		t.Errorf("no kernel-symbol cache under %s", cache)
	}

	mustRun(t, "archive", perfRec)
	if checkTree(archive) == 0 {
		t.Errorf("nothing archived under %s", archive)
	}
}
