package recorder

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/culprit-dev/culprit/internal/symbol"
	"github.com/culprit-dev/culprit/internal/testutil"
)

// The on-disk kernel symbol cache gives back exactly what /proc/kallsyms
// parses to, and a damaged cache is refused.
func TestKernelSymbolCache(t *testing.T) {
	testutil.NeedRoot(t)
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		t.Fatal(err)
	}
	syms, err := symbol.ParseKallsyms(f)
	f.Close()
	if err != nil || len(syms) < 1000 {
		t.Fatalf("kallsyms: %d symbols, %v", len(syms), err)
	}
	path := filepath.Join(t.TempDir(), "k")
	saveKcache(path, syms)
	back, err := loadKcache(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, syms) {
		for i := range syms {
			if i >= len(back) || back[i] != syms[i] {
				t.Fatalf("symbol %d: %+v, want %+v", i, back[min(i, len(back)-1)], syms[i])
			}
		}
	}
	b, _ := os.ReadFile(path)
	os.WriteFile(path, b[:len(b)/2], 0o644)
	if _, err := loadKcache(path); err == nil {
		t.Error("a cut cache was accepted")
	}
}
