package symbol

import (
	"debug/elf"
	"sort"
	"strings"

	"github.com/culprit-dev/culprit/internal/elfx"
)

// symEntry is one code symbol covering [addr, end).
type symEntry struct {
	addr, end uint64
	name      string
	sized     bool
	rank      int // higher is better among symbols at one address
}

// symTable is a sorted, deduplicated table of code symbols.
type symTable struct {
	syms []symEntry
	// enc[i] is the index of the sized symbol before i with the greatest
	// end, or -1: it covers addresses past syms[i]'s end when symbols nest.
	enc []int32
	// plt holds the object's PLT stubs (elfx.PLTStubs), sorted: code no
	// symbol names, named after the function each reaches.
	plt []elfx.PLTStub
}

const sttGNUIFunc = 10 // STT_GNU_IFUNC / STT_LOOS

// newSymTable builds a table from the symbols of f (a .symtab or .dynsym
// list). Only defined code symbols are kept: FUNC and IFUNC anywhere,
// NOTYPE labels in executable sections.
func newSymTable(f *elf.File, list []elf.Symbol) *symTable {
	var syms []symEntry
	for _, s := range list {
		if s.Name == "" || s.Section == elf.SHN_UNDEF || s.Section >= elf.SHN_LORESERVE {
			continue
		}
		typ := elf.ST_TYPE(s.Info)
		var rank int
		switch typ {
		case elf.STT_FUNC, sttGNUIFunc:
			rank = 8
		case elf.STT_NOTYPE:
			if strings.HasPrefix(s.Name, "$") || strings.HasPrefix(s.Name, ".L") {
				continue // ARM mapping symbols, assembler locals
			}
		default:
			continue
		}
		var sec *elf.Section
		if int(s.Section) < len(f.Sections) {
			sec = f.Sections[s.Section]
		}
		if sec == nil || sec.Flags&elf.SHF_EXECINSTR == 0 {
			if typ == elf.STT_NOTYPE || sec == nil {
				continue
			}
		}
		e := symEntry{addr: s.Value, name: s.Name}
		if s.Size > 0 {
			e.sized = true
			e.end = s.Value + s.Size
			rank += 4
		} else {
			e.end = ^uint64(0)
			if sec != nil && sec.Addr <= s.Value && sec.Size > 0 {
				e.end = sec.Addr + sec.Size
			}
		}
		switch elf.ST_BIND(s.Info) {
		case elf.STB_GLOBAL:
			rank += 2
		case elf.STB_WEAK:
			rank++
		}
		e.rank = rank
		syms = append(syms, e)
	}
	sort.SliceStable(syms, func(i, j int) bool {
		if syms[i].addr != syms[j].addr {
			return syms[i].addr < syms[j].addr
		}
		return syms[i].rank > syms[j].rank
	})
	// One symbol per address: the best ranked (first after sorting).
	out := syms[:0]
	for i, s := range syms {
		if i > 0 && s.addr == syms[i-1].addr {
			continue
		}
		out = append(out, s)
	}
	syms = out
	// Drop zero-sized labels inside a sized symbol: the sized symbol is the
	// function; the label would otherwise split it.
	out = syms[:0:0]
	var coverEnd uint64
	for _, s := range syms {
		if !s.sized && s.addr < coverEnd {
			continue
		}
		if s.sized && s.end > coverEnd {
			coverEnd = s.end
		}
		out = append(out, s)
	}
	syms = out
	enc := make([]int32, len(syms))
	best := int32(-1)
	for i, s := range syms {
		enc[i] = -1
		if best >= 0 && syms[best].end > s.addr {
			enc[i] = best
		}
		if s.sized && (best < 0 || s.end > syms[best].end) {
			best = int32(i)
		}
	}
	return &symTable{syms: syms, enc: enc}
}

// lookup returns the symbol containing addr.
func (t *symTable) lookup(addr uint64) (string, bool) {
	if t == nil {
		return "", false
	}
	i := sort.Search(len(t.syms), func(i int) bool { return t.syms[i].addr > addr }) - 1
	if i < 0 {
		return "", false
	}
	if addr < t.syms[i].end {
		return t.syms[i].name, true
	}
	if j := t.enc[i]; j >= 0 && addr < t.syms[j].end {
		return t.syms[j].name, true
	}
	return "", false
}

// bounds returns the range [start, end) of the sized symbol containing addr.
func (t *symTable) bounds(addr uint64) (start, end uint64, ok bool) {
	if t == nil {
		return 0, 0, false
	}
	i := sort.Search(len(t.syms), func(i int) bool { return t.syms[i].addr > addr }) - 1
	if i < 0 {
		return 0, 0, false
	}
	for _, j := range []int{i, int(t.enc[i])} {
		if j >= 0 && t.syms[j].sized && addr < t.syms[j].end {
			return t.syms[j].addr, t.syms[j].end, true
		}
	}
	return 0, 0, false
}

// stub returns the name of the function reached by the PLT stub holding
// addr.
func (t *symTable) stub(addr uint64) (string, bool) {
	if t == nil {
		return "", false
	}
	i := sort.Search(len(t.plt), func(i int) bool { return t.plt[i].Addr > addr }) - 1
	if i < 0 || addr >= t.plt[i].End {
		return "", false
	}
	return t.plt[i].Name, true
}

func (t *symTable) len() int {
	if t == nil {
		return 0
	}
	return len(t.syms)
}
