package elfx

import (
	"debug/dwarf"
	"debug/elf"
	"fmt"
	"slices"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// DWARFData reads the same units, ranges and line tables as f.DWARF() from
// compressed and uncompressed DWARF 4 and 5 (ranges and rnglists, str and
// line_str), and from a relocatable object, whose relocations only
// f.DWARF() applies; the raw sections asked for are returned on both paths,
// the others not.
func TestDWARFDataMatchesDebugElf(t *testing.T) {
	for _, flags := range [][]string{
		{"-O2", "-g", "-gdwarf-4"},
		{"-O2", "-g", "-gdwarf-5"},
		{"-O2", "-g", "-gdwarf-4", "-gz=zlib"},
		{"-O2", "-g", "-gdwarf-5", "-gz=zlib"},
		{"-O2", "-g", "-c"},
	} {
		bin := testutil.C(t, "inline", []string{"inline.c"}, flags...)
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		std, err := f.DWARF()
		if err != nil {
			t.Fatal(err)
		}
		ours, err := DWARFData(f, "info")
		if err != nil {
			t.Fatalf("%v: %v", flags, err)
		}
		a, b := dwarfSummary(t, std), dwarfSummary(t, ours.Data)
		if len(a) < 3 || !slices.Equal(a, b) {
			t.Errorf("%v: debug/elf read %v, DWARFData %v", flags, a, b)
		}
		if info := f.Section(".debug_info"); info == nil || len(ours.Sections["info"]) == 0 {
			t.Errorf("%v: .debug_info asked for and not returned", flags)
		}
		if _, ok := ours.Sections["abbrev"]; ok {
			t.Errorf("%v: .debug_abbrev returned without being asked for", flags)
		}
		f.Close()
	}
}

// dwarfSummary lists each unit's and subprogram's name and ranges and each
// unit's line rows.
func dwarfSummary(t *testing.T, d *dwarf.Data) []string {
	var out []string
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if e == nil {
			return out
		}
		switch e.Tag {
		case dwarf.TagCompileUnit, dwarf.TagSubprogram, dwarf.TagInlinedSubroutine:
			rng, err := d.Ranges(e)
			if err != nil {
				t.Fatal(err)
			}
			name, _ := e.Val(dwarf.AttrName).(string)
			out = append(out, fmt.Sprint(e.Tag, name, rng))
			if e.Tag == dwarf.TagCompileUnit {
				lr, err := d.LineReader(e)
				if err != nil {
					t.Fatal(err)
				}
				var le dwarf.LineEntry
				for lr != nil && lr.Next(&le) == nil {
					out = append(out, fmt.Sprintf("%s:%d@%#x", le.File.Name, le.Line, le.Address))
				}
			}
		}
	}
}
