package recorder

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/culprit-dev/culprit/internal/symbol"
	"github.com/culprit-dev/culprit/internal/testutil"
)

// The on-disk kernel symbol cache resolves every kernel symbol as the table
// parsed from /proc/kallsyms does, loads in well under a millisecond, and a
// damaged cache is refused.
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
	want := symbol.NewKernelTable(syms)
	path := filepath.Join(t.TempDir(), "k")
	saveKcache(path, want)
	t0 := time.Now()
	back, err := loadKcache(path)
	took := time.Since(t0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d symbols, cache loaded in %v", back.Len(), took)
	if back.Len() != want.Len() {
		t.Fatalf("%d symbols back, want %d", back.Len(), want.Len())
	}
	for _, s := range syms {
		if s.Addr == 0 {
			continue
		}
		for _, a := range []uint64{s.Addr, s.Addr + 1} {
			a1, s1, n1, m1, ok1 := back.Symbol(a)
			a2, s2, n2, m2, ok2 := want.Symbol(a)
			if a1 != a2 || s1 != s2 || n1 != n2 || m1 != m2 || ok1 != ok2 {
				t.Fatalf("%#x: %#x %d %q %q %v, want %#x %d %q %q %v", a, a1, s1, n1, m1, ok1, a2, s2, n2, m2, ok2)
			}
		}
	}
	b, _ := os.ReadFile(path)
	os.WriteFile(path, b[:len(b)/2], 0o644)
	if _, err := loadKcache(path); err == nil {
		t.Error("a cut cache was accepted")
	}
	os.WriteFile(path, nil, 0o644)
	if _, err := loadKcache(path); err == nil {
		t.Error("an empty cache was accepted")
	}
}
