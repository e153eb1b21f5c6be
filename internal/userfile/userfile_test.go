package userfile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

func owned(t *testing.T, path string) (uid, gid int, mode os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return int(st.Uid), int(st.Gid), fi.Mode().Perm()
}

// Under sudo (root with SUDO_UID and SUDO_GID), what is created belongs to
// the user who ran sudo; directories are 0700 and files 0600.
func TestSudoOwner(t *testing.T) {
	testutil.NeedRoot(t)
	t.Setenv("SUDO_UID", "4321")
	t.Setenv("SUDO_GID", "4322")
	base := t.TempDir()
	dir := filepath.Join(base, "a", "b")
	if err := MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Join(base, "a"), dir} {
		if u, g, m := owned(t, d); u != 4321 || g != 4322 || m != DirMode {
			t.Errorf("%s: %d:%d %v, want 4321:4322 %v", d, u, g, m, DirMode)
		}
	}
	if u, _, _ := owned(t, base); u != 0 {
		t.Errorf("the existing parent was given away: uid %d", u)
	}
	f, err := CreateTemp(dir, "x*")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if u, g, m := owned(t, f.Name()); u != 4321 || g != 4322 || m != FileMode {
		t.Errorf("temp file: %d:%d %v", u, g, m)
	}
}

// Without sudo, files stay culprit's own.
func TestNoSudo(t *testing.T) {
	t.Setenv("SUDO_UID", "")
	t.Setenv("SUDO_GID", "")
	dir := t.TempDir()
	f, err := CreateTemp(dir, "x*")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if u, _, m := owned(t, f.Name()); u != os.Geteuid() || m != FileMode {
		t.Errorf("temp file: uid %d mode %v", u, m)
	}
}

// Replace puts the whole new file in place, keeps the old one when writing
// fails, and leaves nothing else in the directory either way.
func TestReplace(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Replace(p, func(f *os.File) error {
		_, err := f.Write([]byte("new"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "new" {
		t.Errorf("after Replace: %q", b)
	}
	if _, _, m := owned(t, p); m != FileMode {
		t.Errorf("mode %v", m)
	}
	failed := errors.New("write failed")
	if err := Replace(p, func(f *os.File) error {
		f.Write([]byte("half"))
		return failed
	}); !errors.Is(err, failed) {
		t.Errorf("error %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "new" {
		t.Errorf("a failed Replace changed the file: %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left in the directory: %v", ents)
	}
}
