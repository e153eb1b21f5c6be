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
