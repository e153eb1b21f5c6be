package bpfasm

import (
	"os"
	"testing"
)

// The offsets read from the kernel's BTF and from the cache agree; a field
// task_struct lacks is an error either way.
func TestTaskOffsetsCached(t *testing.T) {
	if path, ok := structCache("task_struct"); ok {
		os.Remove(path)
	}
	a, err := TaskOffsets("for a test", "tgid", "pid")
	if err != nil {
		t.Fatal(err)
	}
	b, err := TaskOffsets("for a test", "tgid", "pid")
	if err != nil || len(b) != 2 || a[0] != b[0] || a[1] != b[1] || a[0] <= 0 || a[1] == a[0] {
		t.Errorf("tgid and pid at %v from BTF, then %v (%v)", a, b, err)
	}
	if _, err := TaskOffsets("for a test", "tgid", "no_such_field"); err == nil {
		t.Errorf("a field task_struct lacks was found")
	}
}
