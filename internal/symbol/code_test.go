package symbol

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

func TestFunctionCode(t *testing.T) {
	bin := testutil.C(t, "hier-O2", []string{"hier.c"}, "-O2", "-g")
	stripped := filepath.Join(t.TempDir(), "hier-stripped")
	if out, err := exec.Command("strip", "-o", stripped, bin).CombinedOutput(); err != nil {
		t.Fatalf("strip: %v\n%s", err, out)
	}
	file, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	addr, size := elfSym(t, bin, "worker")
	off := fileOffset(t, bin, addr)
	for _, path := range []string{bin, stripped} {
		o, err := New(Options{}).Object(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		// From an address inside worker: by its symbol, or in the stripped
		// copy by its FDE, which covers the same bytes at -O2.
		c, err := o.FunctionCode(off + 5)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if c.Offset != off || c.Addr != addr || uint64(len(c.Bytes)) != size {
			t.Errorf("%s: code at offset 0x%x addr 0x%x, %d bytes; want 0x%x 0x%x %d", filepath.Base(path), c.Offset, c.Addr, len(c.Bytes), off, addr, size)
		}
		if !bytes.Equal(c.Bytes, file[off:off+size]) {
			t.Errorf("%s: bytes differ from the file's", filepath.Base(path))
		}
		if _, err := o.FunctionCode(0); err == nil {
			t.Errorf("%s: code for the ELF header", filepath.Base(path))
		}
	}
}
