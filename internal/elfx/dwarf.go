package elfx

import (
	"debug/dwarf"
	"debug/elf"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// dwarfSections are the sections debug/dwarf keeps: units and their
// abbreviations, line tables, strings, range lists and (DWARF 5) the tables
// attributes index into.
var dwarfSections = []string{"abbrev", "info", "str", "line", "ranges", "addr", "line_str", "str_offsets", "rnglists"}

// DWARF is what DWARFData read: the parsed DWARF and the raw bytes of the
// sections asked for, by name without ".debug_" (decompressed; absent when
// the file has no such section).
type DWARF struct {
	Data     *dwarf.Data
	Sections map[string][]byte
}

// DWARFData reads f's DWARF as f.DWARF() does, but only the sections
// debug/dwarf keeps and extra (names without ".debug_", such as "loc",
// "loclists" or "info" for callers that decode those bytes themselves),
// each decompressed on its own goroutine. f.DWARF() reads and decompresses
// every .debug_* section (location lists, address ranges, macros) and
// drops what debug/dwarf does not keep: a fifth of the work for a
// distribution's compressed debug file such as libc's. A relocatable
// object and a file with type units go through f.DWARF(), which applies
// relocations and reads .debug_types; the extra sections are then read
// as they are.
func DWARFData(f *elf.File, extra ...string) (DWARF, error) {
	wanted := map[string]bool{}
	for _, n := range dwarfSections {
		wanted[n] = true
	}
	for _, n := range extra {
		wanted[n] = true
	}
	var (
		want  []*elf.Section
		names []string // want's names without .debug_ or .zdebug_
		std   bool     // read through f.DWARF()
	)
	seen := map[string]bool{}
	for i, s := range f.Sections {
		suffix, ok := strings.CutPrefix(s.Name, ".debug_")
		if !ok {
			suffix, ok = strings.CutPrefix(s.Name, ".zdebug_")
		}
		if !ok || s.Type == elf.SHT_NOBITS {
			continue
		}
		if suffix == "types" {
			std = true
		}
		if !wanted[suffix] || seen[suffix] {
			continue
		}
		if f.Type != elf.ET_EXEC {
			for _, r := range f.Sections {
				if (r.Type == elf.SHT_RELA || r.Type == elf.SHT_REL) && int(r.Info) == i {
					std = true
				}
			}
		}
		seen[suffix] = true
		want = append(want, s)
		names = append(names, suffix)
	}
	out := DWARF{Sections: map[string][]byte{}}
	if std {
		// Keep only the extra sections; f.DWARF reads the rest.
		k := 0
		for i, n := range names {
			if slices.Contains(extra, n) {
				want[k], names[k] = want[i], n
				k++
			}
		}
		want, names = want[:k], names[:k]
	}
	data := make([][]byte, len(want))
	errs := make([]error, len(want))
	read := func(i int) {
		defer func() {
			// debug/elf on a malformed compressed section; this runs
			// on its own goroutine, where a panic would end culprit.
			if r := recover(); r != nil {
				errs[i] = fmt.Errorf("reading %s: %v", want[i].Name, r)
			}
		}()
		b, err := want[i].Data()
		if err != nil && uint64(len(b)) < want[i].Size {
			errs[i] = fmt.Errorf("reading %s: %w", want[i].Name, err)
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
	for i, name := range names {
		if errs[i] != nil {
			return DWARF{}, errs[i]
		}
		out.Sections[name] = data[i]
	}
	if std {
		d, err := f.DWARF()
		if err != nil {
			return DWARF{}, err
		}
		out.Data = d
		return out, nil
	}
	dat := out.Sections
	d, err := dwarf.New(dat["abbrev"], nil, nil, dat["info"], dat["line"], nil, dat["ranges"], dat["str"])
	if err != nil {
		return DWARF{}, err
	}
	for _, name := range []string{"addr", "line_str", "str_offsets", "rnglists"} {
		if b, ok := dat[name]; ok {
			if err := d.AddSection(".debug_"+name, b); err != nil {
				return DWARF{}, err
			}
		}
	}
	out.Data = d
	for n := range dat {
		if !slices.Contains(extra, n) {
			delete(dat, n)
		}
	}
	return out, nil
}
