package symbol

import (
	"bytes"
	"debug/elf"
	"debug/gosym"
	"fmt"
	"github.com/culprit-dev/culprit/internal/elfx"
	"io"
	"sort"
	"sync"

	"github.com/culprit-dev/culprit/internal/unwind"
)

// objData is what is known about one object file (shared by every Object
// with the same build-id). Headers are read when it is opened; symbols,
// the debug file and DWARF on first use.
type objData struct {
	path      string // file to reopen; "" for in-memory images
	data      []byte // in-memory image
	debugDirs []string
	buildID   []byte
	loads     []segment
	isGo      bool
	standIn   bool // path is a separate debug file standing in for a missing object

	once      sync.Once
	syms      *symTable
	dw        *dwIndex
	pcln      *gosym.Table
	pclnMu    sync.Mutex
	debugPath string
	loadErr   error

	cfiOnce sync.Once
	cfi     *unwind.Table // unwind tables, loaded on first FunctionEntry; nil if none

	cleanCache sync.Map // raw symbol → CleanName

	tailMu sync.Mutex
	tails  map[uint64][]tailJump  // function entry → its jumps to other functions (TailCalls)
	calls  map[uint64]uint64      // return address → the target of the direct call before it, 0 if none
	chains map[[2]uint64][]uint64 // (call target, inner function) → TailCalls' answer
	named  map[string]uint64      // a sized function symbol's name → its entry (entryOf)
}

// segment is a PT_LOAD program header: file [off, off+filesz) is mapped at
// vaddr.
type segment struct {
	off, vaddr, filesz, memsz, align uint64
}

func openFile(path string, debugDirs []string) (d *objData, err error) {
	defer func() {
		if r := recover(); r != nil {
			d, err = nil, fmt.Errorf("%s: malformed ELF: %v", path, r)
		}
	}()
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	d = &objData{path: path, debugDirs: debugDirs}
	if err := d.readHeaders(f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return d, nil
}

func openBytes(name string, data []byte, debugDirs []string) (d *objData, err error) {
	defer func() {
		if r := recover(); r != nil {
			d, err = nil, fmt.Errorf("%s: malformed ELF: %v", name, r)
		}
	}()
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", name, err)
	}
	d = &objData{data: data, debugDirs: debugDirs}
	if err := d.readHeaders(f); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return d, nil
}

// reopen opens the object's ELF again for the lazy parts.
func (d *objData) reopen() (*elf.File, io.Closer, error) {
	if d.data != nil {
		f, err := elf.NewFile(bytes.NewReader(d.data))
		return f, io.NopCloser(nil), err
	}
	f, err := elf.Open(d.path)
	if err != nil {
		return nil, nil, err
	}
	return f, f, nil
}

func (d *objData) readHeaders(f *elf.File) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed ELF: %v", r)
		}
	}()
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			d.loads = append(d.loads, segment{p.Off, p.Vaddr, p.Filesz, p.Memsz, p.Align})
		}
	}
	sort.Slice(d.loads, func(i, j int) bool { return d.loads[i].vaddr < d.loads[j].vaddr })
	d.buildID = elfx.BuildID(f)
	d.isGo = elfx.IsGo(f)
	return nil
}

// vaddr translates a file offset to a virtual address through the PT_LOAD
// headers. Objects without program headers (relocatable) use the offset.
func (d *objData) vaddr(off uint64) (uint64, bool) {
	if len(d.loads) == 0 {
		return off, true
	}
	for _, s := range d.loads {
		if off >= s.off && off-s.off < s.filesz {
			return s.vaddr + (off - s.off), true
		}
	}
	// Past the file contents of a segment but within its memory image
	// (callers computing offsets for the bss or a stand-in without sizes).
	for _, s := range d.loads {
		if off >= s.off && off-s.off < s.memsz {
			return s.vaddr + (off - s.off), true
		}
	}
	return 0, false
}

// fileOffset translates a virtual address to a file offset through the
// PT_LOAD headers (the inverse of vaddr).
func (d *objData) fileOffset(vaddr uint64) (uint64, bool) {
	if len(d.loads) == 0 {
		return vaddr, true
	}
	for _, s := range d.loads {
		if vaddr >= s.vaddr && vaddr-s.vaddr < s.filesz {
			return s.off + (vaddr - s.vaddr), true
		}
	}
	return 0, false
}

// loadCFI reads the object's unwind tables; nil when it has none or they
// cannot be read.
func (d *objData) loadCFI() (t *unwind.Table) {
	defer func() {
		if recover() != nil {
			t = nil // malformed input the parser did not catch
		}
	}()
	f, c, err := d.reopen()
	if err != nil {
		return nil
	}
	defer c.Close()
	t, err = unwind.TableFromELF(f)
	if err != nil || t.Len() == 0 {
		return nil
	}
	return t
}

// reconstructLoads guesses the file layout of the object a separate debug
// file stands in for (a whole copy of the object keeps its own). objcopy --only-keep-debug zeroes p_offset/p_filesz of
// segments whose contents it dropped; linkers place each segment at the
// lowest offset past the previous one that is congruent to its address
// modulo its alignment, which this reproduces (exact for GNU ld and lld
// layouts in practice).
func (d *objData) reconstructLoads() {
	if len(d.loads) == 0 {
		return
	}
	whole := true
	for _, s := range d.loads {
		whole = whole && s.filesz > 0
	}
	if whole {
		return // a copy of the object itself (culprit archive), laid out as it is
	}
	var end uint64
	for i := range d.loads {
		s := &d.loads[i]
		align := s.align
		if align == 0 {
			align = 1
		}
		off := end
		if i == 0 {
			off = 0
		}
		if r := (s.vaddr - off) % align; r != 0 {
			off += r
		}
		s.off = off
		s.filesz = s.memsz
		end = off + s.memsz
	}
}

// load reads symbols, finds separate debug info and prepares the DWARF index
// or pclntab, once. Failures leave the parts that failed empty.
func (d *objData) load() {
	d.once.Do(func() {
		defer func() {
			if r := recover(); r != nil {
				d.loadErr = fmt.Errorf("malformed object: %v", r)
			}
		}()
		d.loadErr = d.loadOnce()
	})
}

func (d *objData) loadOnce() error {
	f, c, err := d.reopen()
	if err != nil {
		return err
	}
	defer c.Close()
	if d.data == nil && len(d.buildID) > 0 {
		if id := elfx.BuildID(f); !bytes.Equal(id, d.buildID) {
			return fmt.Errorf("%s changed while open", d.path)
		}
	}

	hasDWARF := elfx.HasDWARF(f)
	var dbg *elf.File
	if !hasDWARF && !d.standIn {
		if p, df := elfx.DebugFile(f, d.path, d.debugDirs, debugUsable); df != nil {
			defer df.Close()
			dbg, d.debugPath = df, p
		}
	}

	// Symbols: .symtab of the object, else of the debug file, else .dynsym.
	if syms, err := f.Symbols(); err == nil && len(syms) > 0 {
		d.syms = newSymTable(f, syms)
	}
	if d.syms.len() == 0 && dbg != nil {
		if syms, err := dbg.Symbols(); err == nil && len(syms) > 0 {
			d.syms = newSymTable(dbg, syms)
		}
	}
	if d.syms.len() == 0 {
		if syms, err := f.DynamicSymbols(); err == nil && len(syms) > 0 {
			d.syms = newSymTable(f, syms)
		}
	}

	// PLT stubs: named after the function each reaches (lookupPC).
	if plt := elfx.PLTStubs(f); len(plt) > 0 {
		if d.syms == nil {
			d.syms = &symTable{}
		}
		d.syms.plt = plt
	}

	// Line information: DWARF of the object or debug file, else pclntab.
	src := f
	if !hasDWARF {
		src = dbg
	}
	if src != nil {
		if dw, err := elfx.DWARFData(src); err == nil {
			if x, err := newDWIndex(dw.Data, src.Section(".debug_info"), src.ByteOrder, d.isGo, src.Type == elf.ET_REL); err == nil {
				d.dw = x
			}
		}
	}
	if d.isGo {
		// Without DWARF the pclntab is the only source of names and lines;
		// with it, the pclntab fills the lines Go's DWARF leaves out
		// (function prologues of generated code and assembly).
		d.pcln = goTable(f)
	}
	return nil
}

// debugUsable accepts a debug file with DWARF or a symbol table.
func debugUsable(df *elf.File) bool {
	return elfx.HasDWARF(df) || df.Section(".symtab") != nil
}

// goTable reads Go's pclntab, which survives -ldflags=-s -w.
func goTable(f *elf.File) (t *gosym.Table) {
	defer func() {
		if recover() != nil {
			t = nil
		}
	}()
	s := f.Section(".gopclntab")
	if s == nil {
		return nil
	}
	data, err := s.Data()
	if err != nil {
		return nil
	}
	var text uint64
	if syms, err := f.Symbols(); err == nil {
		for _, sym := range syms {
			if sym.Name == "runtime.text" {
				text = sym.Value
				break
			}
		}
	}
	if text == 0 {
		if ts := f.Section(".text"); ts != nil {
			text = ts.Addr
		}
	}
	tab, err := gosym.NewTable(nil, gosym.NewLineTable(data, text))
	if err != nil || len(tab.Funcs) == 0 {
		return nil
	}
	return tab
}
