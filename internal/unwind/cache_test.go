package unwind

import (
	"testing"

	"github.com/culprit-dev/culprit/internal/proc"
	"github.com/culprit-dev/culprit/internal/testutil"
)

// Lookup gives a registered pseudo-object's table, a file's table by
// absolute path, and nil for names that are neither.
func TestCachePutLookup(t *testing.T) {
	img, bid, err := proc.VDSOImage()
	if err != nil {
		t.Fatal(err)
	}
	if len(bid) == 0 {
		t.Error("the vDSO image has no build-id")
	}
	vdso, err := TableFromImage(img)
	if err != nil {
		t.Fatal(err)
	}
	var c TableCache
	c.Put("[vdso]", vdso)
	if c.Lookup("[vdso]") != vdso {
		t.Error("Lookup of a Put pseudo-object")
	}
	if c.Lookup("[heap]") != nil || c.Lookup("") != nil {
		t.Error("Lookup of a name that is no file")
	}
	exe := testutil.C(t, "hier", []string{"hier.c"}, "-O2", "-g")
	if c.Lookup(exe) == nil {
		t.Errorf("Lookup(%s): no CFI", exe)
	}
	if c.Lookup("/no/such/file") != nil {
		t.Error("Lookup of a missing file")
	}
}
