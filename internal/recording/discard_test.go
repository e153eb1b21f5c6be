package recording

import (
	"os"
	"path/filepath"
	"testing"
)

// Discard removes only a regular file that Create made.
func TestDiscard(t *testing.T) {
	dir := t.TempDir()
	fresh := filepath.Join(dir, "fresh.rec")
	w, err := Create(fresh)
	if err != nil {
		t.Fatal(err)
	}
	w.Discard()
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Errorf("a file Create made was kept: %v", err)
	}
	old := filepath.Join(dir, "old.rec")
	os.WriteFile(old, []byte("x"), 0o644)
	if w, err = Create(old); err != nil {
		t.Fatal(err)
	}
	w.Discard()
	if _, err := os.Stat(old); err != nil {
		t.Errorf("a file that existed before was removed: %v", err)
	}
	if w, err = Create(os.DevNull); err != nil {
		t.Fatal(err)
	}
	w.Discard()
	if st, err := os.Stat(os.DevNull); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("%s is no longer a device: %v", os.DevNull, err)
	}
}

// CreateLate leaves an existing file as it was until the first flush, then
// replaces its content whole (also through a symbolic link), and Discard
// before that leaves it untouched.
func TestCreateLate(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "old.rec")
	long := make([]byte, 100000)
	for i := range long {
		long[i] = 'x'
	}
	os.WriteFile(old, long, 0o644)
	link := filepath.Join(dir, "link.rec")
	if err := os.Symlink(old, link); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{old, link} {
		w, err := CreateLate(path)
		if err != nil {
			t.Fatal(err)
		}
		w.Discard()
		if b, _ := os.ReadFile(old); len(b) != len(long) {
			t.Fatalf("%s: Discard before any flush changed the file to %d bytes", path, len(b))
		}

		w, err = CreateLate(path)
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(old); len(b) != len(long) {
			t.Fatalf("%s: CreateLate changed the file before the first flush (%d bytes)", path, len(b))
		}
		if err := w.Write(&Comm{PID: 1, TID: 1, Name: "x"}); err != nil {
			t.Fatal(err)
		}
		if err := w.Write(&End{}); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(old)
		if len(b) >= 1000 || string(b[:len(Magic)]) != Magic {
			t.Fatalf("%s: after closing, %d bytes starting %q, want a short recording", path, len(b), b[:min(len(b), 8)])
		}
		r, err := Open(old)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for {
			rec, err := r.Next()
			if err != nil || rec == nil {
				break
			}
			n++
		}
		r.Close()
		if n != 2 {
			t.Errorf("%s: read %d records back, want 2", path, n)
		}
		os.WriteFile(old, long, 0o644)
	}
	if _, err := os.Lstat(link); err != nil {
		t.Errorf("the symbolic link was replaced: %v", err)
	}
}
