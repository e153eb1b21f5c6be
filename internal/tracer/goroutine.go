package tracer

import (
	"debug/elf"
	"encoding/binary"
	"fmt"

	"github.com/culprit-dev/culprit/internal/dwarfx"
)

// GoidOffset is the byte offset of goid, the goroutine's id, in the Go
// runtime's g struct of the executable, as its DWARF describes runtime.g
// (the layout changes between Go releases, so it is read from the binary
// it is for, not kept in a table). An executable without DWARF (built
// with -ldflags=-w), or whose runtime.g has no 8-byte goid, gives an
// error.
func GoidOffset(exe string) (int, error) {
	info, err := dwarfx.Open(exe)
	if err != nil {
		return 0, err
	}
	return fieldOffset(info, "runtime.g", "goid", 8)
}

// fieldOffset is the offset of member field, of size bytes, in the Go
// struct type typ.
func fieldOffset(info *dwarfx.Info, typ, field string, size int64) (int, error) {
	t, ok := info.TypeNamed(typ)
	if !ok {
		return 0, fmt.Errorf("the DWARF has no type %s", typ)
	}
	for _, f := range t.Fields {
		if f.Name == field {
			if f.Type == nil || f.Type.Size != size || f.BitSize != 0 {
				return 0, fmt.Errorf("%s.%s is not an %d-byte integer", typ, field, size)
			}
			return int(f.Offset), nil
		}
	}
	return 0, fmt.Errorf("%s has no member %s", typ, field)
}

// goids names the goroutines of a Go program's calls by their ids: the
// records carry the g (the shadow stacks' key) and the id read from it;
// calls still open at the end come from the shadow stacks, which know
// only the g, and take the id last seen with it.
type goids map[uint64]uint64

// of is the goroutine a call record names: its id when known (and
// remembered for its g), else the id last seen with g; the g itself when
// no id is known (no offset, or a read that faulted).
func (m goids) of(g, goid uint64) uint64 {
	if g == 0 {
		return 0
	}
	if goid != 0 {
		m[g] = goid
		return goid
	}
	if id, ok := m[g]; ok {
		return id
	}
	return g
}

// GoWaitReasons are the names the Go runtime of the executable gives its
// waitReasons (the reason gopark is called with), indexed by the reason:
// the table runtime.waitReasonStrings, read from the executable's data,
// whose numbering changes between Go releases.
func GoWaitReasons(exe string) ([]string, error) {
	f, err := elf.Open(exe)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		return nil, err
	}
	var tab elf.Symbol
	for _, s := range syms {
		if s.Name == "runtime.waitReasonStrings" {
			tab = s
			break
		}
	}
	if tab.Value == 0 || tab.Size == 0 || tab.Size%16 != 0 || tab.Size > 1<<16 {
		return nil, fmt.Errorf("%s has no table of the runtime's wait reasons", exe)
	}
	read := func(addr, n uint64) ([]byte, bool) {
		for _, sec := range f.Sections {
			if sec.Type == elf.SHT_NOBITS || addr < sec.Addr || addr+n > sec.Addr+sec.Size {
				continue
			}
			b := make([]byte, n)
			if _, err := sec.ReadAt(b, int64(addr-sec.Addr)); err != nil {
				return nil, false
			}
			return b, true
		}
		return nil, false
	}
	b, ok := read(tab.Value, tab.Size)
	if !ok {
		return nil, fmt.Errorf("%s: runtime.waitReasonStrings is not in its file", exe)
	}
	out := make([]string, tab.Size/16)
	for i := range out {
		p, n := binary.LittleEndian.Uint64(b[16*i:]), binary.LittleEndian.Uint64(b[16*i+8:])
		if n == 0 || n > 256 {
			continue
		}
		if s, ok := read(p, n); ok {
			out[i] = string(s)
		}
	}
	return out, nil
}

// GoPollOffsets are the byte offsets of rg and wg in the Go runtime's
// pollDesc of the executable, from its DWARF: the words a goroutine
// parked on a descriptor's readiness waits on (gopark's lock argument is
// their address), which the network poller's runtime.netpollready clears.
func GoPollOffsets(exe string) (rg, wg int, err error) {
	info, err := dwarfx.Open(exe)
	if err != nil {
		return 0, 0, err
	}
	if rg, err = fieldOffset(info, "runtime.pollDesc", "rg", 8); err != nil {
		return 0, 0, err
	}
	if wg, err = fieldOffset(info, "runtime.pollDesc", "wg", 8); err != nil {
		return 0, 0, err
	}
	return rg, wg, nil
}

// FuncsIn are those of names that are functions of the executable's
// symbol table, in their order: the runtime's functions a Go release
// has (some are renamed or inlined between releases).
func FuncsIn(exe string, names []string) ([]string, error) {
	f, err := elf.Open(exe)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Section != elf.SHN_UNDEF && s.Value != 0 {
			have[s.Name] = true
		}
	}
	var out []string
	for _, n := range names {
		if have[n] {
			out = append(out, n)
		}
	}
	return out, nil
}
