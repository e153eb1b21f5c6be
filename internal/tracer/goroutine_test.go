package tracer

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// The goid offset and the wait reasons come from a real Go executable.
func TestGoRuntimeTables(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "gogoroutines")
	build := exec.Command("go", "build", "-o", bin, "./testdata/targets/gogoroutines")
	build.Dir = testutil.Root()
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	off, err := GoidOffset(bin)
	if err != nil {
		t.Fatal(err)
	}
	// goid follows the g's stack bounds, panic and defer pointers, the
	// scheduling context and more: far from the start, inside the struct.
	if off < 64 || off > 1024 || off%8 != 0 {
		t.Errorf("goid at offset %d of runtime.g", off)
	}
	// The words a goroutine parked on a descriptor waits on: two of
	// pollDesc's, after its link, fd and sequence fields.
	rg, wg, err := GoPollOffsets(bin)
	if err != nil {
		t.Fatal(err)
	}
	if rg == wg || rg < 8 || wg < 8 || rg%8 != 0 || wg%8 != 0 || rg > 256 || wg > 256 {
		t.Errorf("pollDesc.rg at %d, wg at %d", rg, wg)
	}
	// The runtime's functions this release has: an unknown name is left
	// out.
	fs, err := FuncsIn(bin, []string{"runtime.gopark", "runtime.noSuchFunction", "runtime.chansend1"})
	if err != nil || !slices.Equal(fs, []string{"runtime.gopark", "runtime.chansend1"}) {
		t.Errorf("functions in the executable: %q, %v", fs, err)
	}
	rs, err := GoWaitReasons(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"chan receive", "chan send", "select", "sleep", "IO wait", "sync.Mutex.Lock"} {
		if !slices.Contains(rs, want) {
			t.Errorf("no wait reason %q in %q", want, rs)
		}
	}
	if rs[0] != "" {
		t.Errorf("wait reason 0 is %q, want the empty waitReasonZero", rs[0])
	}
	// Stripped of DWARF: no offset, and an error that says so.
	stripped := filepath.Join(t.TempDir(), "nodwarf")
	build = exec.Command("go", "build", "-ldflags=-w", "-o", stripped, "./testdata/targets/gogoroutines")
	build.Dir = testutil.Root()
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	if off, err := GoidOffset(stripped); err == nil {
		t.Errorf("an executable without DWARF gave goid offset %d", off)
	}
	if rg, wg, err := GoPollOffsets(stripped); err == nil {
		t.Errorf("an executable without DWARF gave pollDesc offsets %d, %d", rg, wg)
	}
}
