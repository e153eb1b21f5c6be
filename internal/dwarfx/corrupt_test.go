package dwarfx

import (
	"debug/elf"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
)

// TestCorruptDWARF flips random bytes in the DWARF sections of a real
// binary and runs every kind of lookup on the result: errors are fine,
// panics and hangs are not.
func TestCorruptDWARF(t *testing.T) {
	bin, _ := build(t, "-O2")
	orig, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	var spans [][2]int
	for _, name := range []string{".debug_info", ".debug_abbrev", ".debug_loclists", ".debug_rnglists", ".debug_addr", ".debug_line", ".debug_str"} {
		if s := f.Section(name); s != nil && s.Size > 0 {
			spans = append(spans, [2]int{int(s.Offset), int(s.Offset + s.Size)})
		}
	}
	f.Close()
	iters := 300
	if testing.Short() {
		iters = 50
	}
	r := rand.New(rand.NewSource(7))
	path := filepath.Join(t.TempDir(), "corrupt")
	opened := 0
	for k := 0; k < iters; k++ {
		b := append([]byte(nil), orig...)
		sp := spans[r.Intn(len(spans))]
		for n := 1 + r.Intn(8); n > 0; n-- {
			b[sp[0]+r.Intn(sp[1]-sp[0])] = byte(r.Intn(256))
		}
		if err := os.WriteFile(path, b, 0o755); err != nil {
			t.Fatal(err)
		}
		info, err := Open(path)
		if err != nil {
			continue
		}
		opened++
		fr := testFrame()
		for _, fn := range info.Functions() {
			for _, rg := range fn.Ranges {
				for pc := rg[0]; pc < rg[1] && pc < rg[0]+0x200; pc += 7 {
					fn.Inlines(pc)
					for _, v := range fn.Variables(pc) {
						if val, err := v.Read(pc, fr); err == nil {
							v.Type().FormatValue(val)
						}
						l, _ := v.Location(pc)
						_ = l.String()
					}
				}
			}
		}
		for _, g := range info.Globals() {
			if val, err := g.Read(0, fr); err == nil {
				g.Type().FormatValue(val)
			}
		}
		info.Describe(0x1000)
		info.Err()
	}
	t.Logf("%d corrupted binaries, %d opened", iters, opened)
}
