package unwind

import (
	"debug/elf"
	"errors"
	"fmt"
	"github.com/culprit-dev/culprit/internal/elfx"
	"slices"
)

// ErrNoCFI is returned (wrapped) by LoadTable and TableFromELF when an object
// has neither .eh_frame nor .debug_frame entries.
var ErrNoCFI = errors.New("no call frame information")

// numRegs is the number of DWARF registers tracked: 0-15 are the general
// purpose registers, 16 is the return address column (rip).
const numRegs = elfx.RegRA + 1

const (
	regRBP = elfx.RegRBP
	regRSP = elfx.RegRSP
	regRA  = elfx.RegRA
)

// cie is a parsed Common Information Entry.
type cie struct {
	codeAlign uint64
	dataAlign int64
	raReg     uint64
	fdeEnc    byte   // pointer encoding of FDE addresses (.eh_frame 'R')
	hasAug    bool   // 'z' augmentation: FDEs carry an augmentation length
	signal    bool   // 'S': frames of this CIE are signal trampolines
	addrSize  int    // address size for .debug_frame absolute addresses
	eh        bool   // from .eh_frame (pointer encodings apply)
	goABI     bool   // Go's code (.debug_frame of a Go binary): no callee-saved registers
	sec       []byte // whole section; instruction ranges index into it
	secAddr   uint64 // ELF vaddr of the section (for pc-relative encodings)
	insOff    uint32 // initial instructions
	insEnd    uint32
	initial   row  // row after the initial instructions
	bad       bool // initial instructions unsupported
}

// fde is one Frame Description Entry: the CFA program for [start, end).
type fde struct {
	start, end uint64
	cie        *cie
	insOff     uint32 // instructions, as offsets into cie.sec
	insEnd     uint32
}

// loadSeg is a PT_LOAD segment, kept for Table.Bias.
type loadSeg struct {
	off, vaddr, filesz uint64
}

// Table holds the sorted FDEs of one ELF object (.eh_frame, plus
// .debug_frame entries for code .eh_frame does not cover), in ELF virtual
// addresses. A Table is immutable after loading and safe for concurrent use.
type Table struct {
	fdes  []fde
	loads []loadSeg
	// entry is the start of the FDE of an executable's main (ELF address;
	// 0: none or not an executable). A stack copy that ends in main's
	// frame, however large its frame, holds all of the program's callers.
	entry uint64
	// start, startEnd: the object's ELF entry point (e_entry) and the
	// first FDE start above it, when no FDE covers the entry point (the
	// dynamic loader's _start, written in assembly without CFI): a frame
	// whose PC lies in [start, startEnd) with rbp 0 is the outermost.
	start, startEnd uint64
	rows            rowCache
}

// Len returns the number of FDEs in the table.
func (t *Table) Len() int { return len(t.fdes) }

// Covers reports whether an FDE covers the ELF virtual address addr.
func (t *Table) Covers(addr uint64) bool { return t.find(addr) != nil }

// FuncStart returns the start of the FDE that covers the ELF virtual
// address addr: the first instruction of the function (or of its split-off
// part, such as GCC's .cold blocks) holding addr. It names functions of
// objects that have no symbol for them.
func (t *Table) FuncStart(addr uint64) (start uint64, ok bool) {
	if f := t.find(addr); f != nil {
		return f.start, true
	}
	return 0, false
}

// FuncRange returns the range [start, end) of the FDE that covers the ELF
// virtual address addr: the function (or split-off part) holding it.
func (t *Table) FuncRange(addr uint64) (start, end uint64, ok bool) {
	if f := t.find(addr); f != nil {
		return f.start, f.end, true
	}
	return 0, 0, false
}

// Bias returns the load bias (runtime address - ELF vaddr) of a mapping of
// this file that starts at start with file offset pgoff, using the PT_LOAD
// segment that contains pgoff: start - pgoff + p_offset - p_vaddr, with
// wrapping arithmetic. ok is false when no PT_LOAD segment holds pgoff.
func (t *Table) Bias(start, pgoff uint64) (bias uint64, ok bool) {
	// The dynamic loader and the kernel map each segment from its file
	// offset rounded down to a page, so prefer the segment whose rounded
	// offset is exactly pgoff, then any whose file range holds pgoff.
	for _, s := range t.loads {
		if s.off&^(pageSize-1) == pgoff {
			return start - pgoff + s.off - s.vaddr, true
		}
	}
	for _, s := range t.loads {
		if pgoff >= s.off&^(pageSize-1) && pgoff < s.off+s.filesz {
			return start - pgoff + s.off - s.vaddr, true
		}
	}
	return 0, false
}

const pageSize = 4096

// find returns the FDE covering the ELF virtual address addr, or nil.
func (t *Table) find(addr uint64) *fde {
	lo, hi := 0, len(t.fdes)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if t.fdes[m].start <= addr {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return nil
	}
	f := &t.fdes[lo-1]
	if addr >= f.end {
		return nil
	}
	return f
}

// LoadTable reads the CFI of the ELF file at path.
func LoadTable(path string) (*Table, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := TableFromELF(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// TableFromELF reads the CFI of an opened ELF file: all of .eh_frame, and the
// .debug_frame FDEs whose ranges .eh_frame does not already cover. Compressed
// sections are decompressed. It fails with ErrNoCFI if neither section has
// any FDE.
func TableFromELF(f *elf.File) (*Table, error) {
	if f.Machine != elf.EM_X86_64 {
		return nil, fmt.Errorf("unsupported machine %v", f.Machine)
	}
	t := &Table{}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			t.loads = append(t.loads, loadSeg{off: p.Off, vaddr: p.Vaddr, filesz: p.Filesz})
		}
	}
	eh, errEH := sectionFDEs(f, true, 0)
	dbg, errDbg := sectionFDEs(f, false, 0)
	errs := []error{errEH, errDbg}
	if elfx.IsGo(f) {
		// The Go linker writes .debug_frame for Go's functions (C code
		// linked in by cgo keeps its .eh_frame). Under Go's ABI every
		// general-purpose register is caller-saved: a Go function
		// preserves none for its caller, CFI or not.
		for i := range dbg {
			dbg[i].cie.goABI = true
		}
	}
	t.fdes = mergeFDEs(eh, dbg)
	if len(t.fdes) == 0 {
		if err := errors.Join(errs...); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNoCFI, err)
		}
		return nil, ErrNoCFI
	}
	if main, ok := mainSymbol(f); ok {
		if fd := t.find(main); fd != nil && fd.start == main {
			t.entry = main
		}
	}
	t.setStart(f.Entry)
	return t, nil
}

// setStart records the object's entry point when no FDE covers it, with
// the start of the first FDE above it as the end of its code.
func (t *Table) setStart(entry uint64) {
	if entry == 0 || t.find(entry) != nil {
		return
	}
	i, _ := slices.BinarySearchFunc(t.fdes, entry, func(f fde, a uint64) int {
		switch {
		case f.start < a:
			return -1
		case f.start > a:
			return 1
		}
		return 0
	})
	if i == len(t.fdes) {
		return
	}
	t.start, t.startEnd = entry, t.fdes[i].start
}

// atStart reports whether the ELF address addr lies in the object's entry
// code that no FDE covers (setStart).
func (t *Table) atStart(addr uint64) bool {
	return t.start != 0 && addr >= t.start && addr < t.startEnd
}

// mainSymbol returns the address of the function main of an executable
// (a program interpreter or a fixed address says so; shared libraries are
// not searched), from its symbol table.
func mainSymbol(f *elf.File) (uint64, bool) {
	exe := f.Type == elf.ET_EXEC
	for _, p := range f.Progs {
		exe = exe || p.Type == elf.PT_INTERP
	}
	if !exe {
		return 0, false
	}
	syms, err := f.Symbols()
	if err != nil {
		return 0, false
	}
	for _, s := range syms {
		if s.Name == "main" && elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 {
			return s.Value, true
		}
	}
	return 0, false
}

// sectionFDEs parses the FDEs of f's .eh_frame (eh) or .debug_frame: all of
// them, or with sample > 0 about that many spread over the section (one in
// every few, the others skipped unparsed; about 32 bytes an FDE). None, and
// no error, when the section is absent; on a corrupt section, the FDEs read
// before the corruption and the error.
func sectionFDEs(f *elf.File, eh bool, sample int) ([]fde, error) {
	name, addr := ".debug_frame", uint64(0)
	if eh {
		name = ".eh_frame"
	}
	s := f.Section(name)
	if s == nil || s.Type == elf.SHT_NOBITS {
		return nil, nil
	}
	if eh {
		addr = s.Addr
	}
	data, err := s.Data()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	every := 1
	if sample > 0 {
		every = max(1, len(data)/32/sample)
	}
	fdes, err := parseFramesEvery(data, addr, eh, every)
	if err != nil {
		err = fmt.Errorf("%s: %w", name, err)
	}
	return fdes, err
}

// mergeFDEs sorts the FDEs of both sections into one non-overlapping list,
// preferring .eh_frame where both describe the same code.
func mergeFDEs(eh, dbg []fde) []fde {
	byStart := func(a, b fde) int {
		switch {
		case a.start < b.start:
			return -1
		case a.start > b.start:
			return 1
		}
		return 0
	}
	slices.SortStableFunc(eh, byStart)
	all := eh
	if len(dbg) > 0 {
		probe := &Table{fdes: eh}
		n := len(eh)
		for _, d := range dbg {
			if probe.find(d.start) != nil || probe.find(d.end-1) != nil {
				continue
			}
			// An .eh_frame FDE lying strictly inside d also conflicts.
			i, _ := slices.BinarySearchFunc(eh[:n], d.start, func(f fde, s uint64) int {
				if f.start < s {
					return -1
				}
				if f.start > s {
					return 1
				}
				return 0
			})
			if i < n && eh[i].start < d.end {
				continue
			}
			all = append(all, d)
		}
		slices.SortStableFunc(all, byStart)
	}
	// Drop entries overlapping an earlier one; find needs disjoint ranges.
	out := all[:0]
	for _, f := range all {
		if len(out) > 0 && f.start < out[len(out)-1].end {
			continue
		}
		out = append(out, f)
	}
	return slices.Clip(out)
}

// DW_EH_PE pointer encodings.
const (
	peAbsptr  = 0x00
	peUleb128 = 0x01
	peUdata2  = 0x02
	peUdata4  = 0x03
	peUdata8  = 0x04
	peSleb128 = 0x09
	peSdata2  = 0x0a
	peSdata4  = 0x0b
	peSdata8  = 0x0c
	pePcrel   = 0x10
	peOmit    = 0xff
)

// readPtr reads a pointer with encoding enc. secAddr is the section's vaddr, for
// pc-relative encodings. ok is false for encodings that need information this
// package does not have (textrel, datarel, funcrel, aligned).
func readPtr(r *elfx.Reader, enc byte, secAddr uint64, applyRel bool) (v uint64, ok bool) {
	if enc == peOmit {
		return 0, true
	}
	pos := secAddr + uint64(r.Off)
	switch enc & 0x0f {
	case peAbsptr, peUdata8, peSdata8:
		v = r.U64()
	case peUleb128:
		v = r.ULEB()
	case peUdata2:
		v = uint64(r.U16())
	case peUdata4:
		v = uint64(r.U32())
	case peSleb128:
		v = uint64(r.SLEB())
	case peSdata2:
		v = uint64(int64(int16(r.U16())))
	case peSdata4:
		v = uint64(int64(int32(r.U32())))
	default:
		r.Bad = true
		return 0, false
	}
	if !applyRel {
		return v, !r.Bad
	}
	switch enc & 0x70 {
	case 0:
	case pePcrel:
		v += pos
	default:
		return v, false
	}
	return v, !r.Bad
}

// parseFrames parses a whole .eh_frame (eh) or .debug_frame section. Entries
// with unsupported CIEs are skipped; an error is returned only when the
// section structure itself is corrupt, along with the FDEs read so far.
func parseFrames(data []byte, secAddr uint64, eh bool) ([]fde, error) {
	return parseFramesEvery(data, secAddr, eh, 1)
}

// parseFramesEvery is parseFrames keeping one FDE in every (the others are
// skipped unparsed).
func parseFramesEvery(data []byte, secAddr uint64, eh bool, every int) ([]fde, error) {
	cies := map[int]*cie{}
	var out []fde
	off, nfde := 0, 0
	for off+4 <= len(data) {
		r := elfx.Reader{B: data, Off: off, End: len(data)}
		length := uint64(r.U32())
		dwarf64 := false
		if length == 0xffffffff {
			length = r.U64()
			dwarf64 = true
		}
		if length == 0 {
			if eh {
				break // .eh_frame terminator
			}
			off = r.Off
			continue
		}
		if r.Bad || length > uint64(len(data)-r.Off) {
			return out, fmt.Errorf("entry at %#x overruns section", off)
		}
		end := r.Off + int(length)
		r.End = end
		idPos := r.Off
		var id uint64
		if dwarf64 {
			id = r.U64()
		} else {
			id = uint64(r.U32())
		}
		isCIE := false
		switch {
		case eh:
			isCIE = id == 0
		case dwarf64:
			isCIE = id == 0xffffffffffffffff
		default:
			isCIE = id == 0xffffffff
		}
		next := end
		if isCIE {
			if _, ok := cies[off]; !ok {
				cies[off] = parseCIE(&r, data, secAddr, eh)
			}
			off = next
			continue
		}
		if nfde++; (nfde-1)%every != 0 {
			off = next
			continue
		}
		var ciePos int
		if eh {
			if id > uint64(idPos) {
				off = next
				continue
			}
			ciePos = idPos - int(id)
		} else {
			if id >= uint64(len(data)) {
				off = next
				continue
			}
			ciePos = int(id)
		}
		c, ok := cies[ciePos]
		if !ok {
			c = parseCIEAt(data, ciePos, secAddr, eh)
			cies[ciePos] = c
		}
		if c == nil || c.bad {
			off = next
			continue
		}
		if f, ok := parseFDE(&r, c); ok {
			out = append(out, f)
		}
		off = next
	}
	return out, nil
}

// parseCIEAt parses the CIE whose header starts at pos (for FDEs that refer
// to a CIE appearing later in the section).
func parseCIEAt(data []byte, pos int, secAddr uint64, eh bool) *cie {
	if pos < 0 || pos+4 > len(data) {
		return nil
	}
	r := elfx.Reader{B: data, Off: pos, End: len(data)}
	length := uint64(r.U32())
	dwarf64 := length == 0xffffffff
	if dwarf64 {
		length = r.U64()
	}
	if r.Bad || length == 0 || length > uint64(len(data)-r.Off) {
		return nil
	}
	r.End = r.Off + int(length)
	var id uint64
	if dwarf64 {
		id = r.U64()
	} else {
		id = uint64(r.U32())
	}
	switch {
	case eh && id != 0, !eh && !dwarf64 && id != 0xffffffff, !eh && dwarf64 && id != 0xffffffffffffffff:
		return nil
	}
	return parseCIE(&r, data, secAddr, eh)
}

// parseCIE parses a CIE body; r is positioned after the CIE id, with r.End at
// the end of the entry. It returns nil for CIEs this package cannot use.
func parseCIE(r *elfx.Reader, data []byte, secAddr uint64, eh bool) *cie {
	c := &cie{eh: eh, sec: data, secAddr: secAddr, addrSize: 8, fdeEnc: peAbsptr}
	version := r.U8()
	if version != 1 && version != 3 && version != 4 {
		return nil
	}
	aug := r.CStr()
	if version == 4 {
		c.addrSize = int(r.U8())
		if seg := r.U8(); seg != 0 {
			return nil
		}
		if c.addrSize != 4 && c.addrSize != 8 {
			return nil
		}
	}
	c.codeAlign = r.ULEB()
	c.dataAlign = r.SLEB()
	if version == 1 {
		c.raReg = uint64(r.U8())
	} else {
		c.raReg = r.ULEB()
	}
	if len(aug) > 0 {
		if aug[0] != 'z' {
			return nil // e.g. the pre-'z' "eh" augmentation
		}
		c.hasAug = true
		augLen := r.ULEB()
		if r.Bad || augLen > uint64(r.End-r.Off) {
			return nil
		}
		augEnd := r.Off + int(augLen)
		ar := elfx.Reader{B: r.B, Off: r.Off, End: augEnd}
		for i := 1; i < len(aug); i++ {
			switch aug[i] {
			case 'R':
				c.fdeEnc = ar.U8()
			case 'P':
				enc := ar.U8()
				readPtr(&ar, enc&0x7f, secAddr, false) // value unused
			case 'L':
				ar.U8()
			case 'S':
				c.signal = true
			case 'B', 'G':
			default:
				// Unknown letter: the rest of the augmentation data cannot
				// be interpreted, but 'z' lets us skip it if 'R' is known.
				i = len(aug)
			}
		}
		if ar.Bad {
			return nil
		}
		r.Off = augEnd
	}
	if r.Bad || c.raReg >= numRegs {
		return nil
	}
	c.insOff, c.insEnd = uint32(r.Off), uint32(r.End)
	c.initial = initialRow()
	if !execCFA(c, c.insOff, c.insEnd, &c.initial, nil, ^uint64(0), 0) {
		c.bad = true
	}
	return c
}

// parseFDE parses an FDE body; r is positioned after the CIE pointer.
func parseFDE(r *elfx.Reader, c *cie) (fde, bool) {
	var start, size uint64
	if c.eh {
		var ok bool
		start, ok = readPtr(r, c.fdeEnc, c.secAddr, true)
		if !ok {
			return fde{}, false
		}
		size, _ = readPtr(r, c.fdeEnc&0x0f, c.secAddr, false)
	} else if c.addrSize == 4 {
		start, size = uint64(r.U32()), uint64(r.U32())
	} else {
		start, size = r.U64(), r.U64()
	}
	if c.hasAug {
		n := r.ULEB()
		if n > uint64(r.End-r.Off) {
			return fde{}, false
		}
		r.Off += int(n)
	}
	if r.Bad || size == 0 || start == 0 || start+size < start {
		return fde{}, false
	}
	return fde{start: start, end: start + size, cie: c, insOff: uint32(r.Off), insEnd: uint32(r.End)}, true
}
