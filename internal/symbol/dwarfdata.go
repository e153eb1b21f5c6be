package symbol

import (
	"debug/dwarf"
	"debug/elf"
	"strings"
	"sync"
)

// dwarfSections are the DWARF sections symbolization reads: units and their
// abbreviations, line tables, strings and (DWARF 5) the tables attributes
// index into. debug/dwarf keeps no other section: f.DWARF() reads (and
// decompresses) location lists, address range tables, macros and the rest
// all the same, and drops them, which is a fifth of the work for a
// distribution's compressed debug file such as libc's.
var dwarfSections = map[string]bool{
	"abbrev": true, "info": true, "str": true, "line": true, "ranges": true,
	"addr": true, "line_str": true, "str_offsets": true, "rnglists": true,
}

// dwarfData is f.DWARF() reading only dwarfSections, each decompressed on
// its own goroutine (units, the largest, alongside the rest). A file with
// relocations against its debug sections (a relocatable object) or with
// type units goes through f.DWARF(), which applies and reads them.
func dwarfData(f *elf.File) (*dwarf.Data, error) {
	var (
		want  []*elf.Section
		names []string // want's names without .debug_ or .zdebug_
	)
	for i, s := range f.Sections {
		suffix, ok := strings.CutPrefix(s.Name, ".debug_")
		if !ok {
			suffix, ok = strings.CutPrefix(s.Name, ".zdebug_")
		}
		if !ok {
			continue
		}
		if suffix == "types" {
			return f.DWARF()
		}
		if !dwarfSections[suffix] {
			continue
		}
		if f.Type != elf.ET_EXEC {
			for _, r := range f.Sections {
				if (r.Type == elf.SHT_RELA || r.Type == elf.SHT_REL) && int(r.Info) == i {
					return f.DWARF()
				}
			}
		}
		want = append(want, s)
		names = append(names, suffix)
	}
	data := make([][]byte, len(want))
	errs := make([]error, len(want))
	read := func(i int) {
		b, err := want[i].Data()
		if err != nil && uint64(len(b)) < want[i].Size {
			errs[i] = err
		}
		data[i] = b
	}
	var wg sync.WaitGroup
	for i, name := range names {
		if name == "info" && len(want) > 1 {
			wg.Go(func() { read(i) })
		}
	}
	for i, name := range names {
		if name != "info" || len(want) == 1 {
			read(i)
		}
	}
	wg.Wait()
	dat := map[string][]byte{}
	for i, name := range names {
		if errs[i] != nil {
			return nil, errs[i]
		}
		dat[name] = data[i]
	}
	d, err := dwarf.New(dat["abbrev"], nil, nil, dat["info"], dat["line"], nil, dat["ranges"], dat["str"])
	if err != nil {
		return nil, err
	}
	for _, name := range []string{"addr", "line_str", "str_offsets", "rnglists"} {
		if b, ok := dat[name]; ok {
			if err := d.AddSection(".debug_"+name, b); err != nil {
				return nil, err
			}
		}
	}
	return d, nil
}
