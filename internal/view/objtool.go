package view

import (
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"sync"

	"github.com/google/pprof/driver"
	pprof "github.com/google/pprof/profile"

	"github.com/culprit-dev/culprit/internal/elfx"
	"github.com/culprit-dev/culprit/internal/symbol"
)

// objTool is pprof's object tool (driver.ObjTool) for the source and
// disassembly views, on culprit's own reader of the recorded objects:
// each object is opened once per server (as recorded, by Inputs.Objects)
// and read in the process, its lines from its DWARF and its code decoded
// as x86-64. pprof's own tool starts objdump and a symbolizer (or nm) at
// every request, and objdump twice as each of pprof's UIs starts; LLVM's
// tools load LLVM's shared library each time, most of a source page's
// time. The profile's addresses are file offsets (render.Pprof).
type objTool struct {
	open func(path string) (*symbol.Object, error)

	mu   sync.Mutex
	objs map[string]*objEntry
}

type objEntry struct {
	once sync.Once
	obj  *symbol.Object
	err  error

	symsOnce sync.Once
	syms     []symbol.Sym
}

func newObjTool(open func(path string) (*symbol.Object, error)) *objTool {
	return &objTool{open: open, objs: map[string]*objEntry{}}
}

// object returns the object at path, opened on first use.
func (t *objTool) object(path string) (*symbol.Object, error) {
	t.mu.Lock()
	e := t.objs[path]
	if e == nil {
		e = &objEntry{}
		t.objs[path] = e
	}
	t.mu.Unlock()
	e.once.Do(func() { e.obj, e.err = t.open(path) })
	return e.obj, e.err
}

// openMapped opens the objects the mappings of the profiles name (nil
// ones have none), as pprof's driver does as a UI starts: the driver holds
// pprofMu then, and reading the objects (the recordings listed for them
// first) takes seconds on large recordings, which another time range's UI
// would wait for. Opened here, outside that lock, they are found open.
func (t *objTool) openMapped(profs ...*pprof.Profile) {
	for _, p := range profs {
		if p == nil {
			continue
		}
		for _, m := range p.Mapping {
			if m.File != "" {
				_, _ = t.object(m.File)
			}
		}
	}
}

// Open returns the object file, whose runtime addresses (file offsets)
// map onto its virtual addresses through its program headers.
func (t *objTool) Open(file string, start, _, offset uint64, _ string) (driver.ObjFile, error) {
	obj, err := t.object(file)
	if err != nil {
		return nil, err
	}
	return &objFile{obj: obj, name: file, start: start, offset: offset}, nil
}

// Disasm decodes the code at virtual addresses [start, end) of file, as
// objdump does: each function from its symbol's first byte (a range may
// start inside an instruction, or span functions and the padding between
// them), its instructions within the range kept. Code no symbol covers
// is decoded from start.
func (t *objTool) Disasm(file string, start, end uint64, intelSyntax bool) ([]driver.Inst, error) {
	obj, err := t.object(file)
	if err != nil {
		return nil, err
	}
	var out []driver.Inst
	add := func(code symbol.Code) {
		for _, in := range obj.Disassemble(code, intelSyntax) {
			if in.Addr < start || in.Addr >= end || len(out) > 0 && in.Addr <= out[len(out)-1].Addr {
				continue
			}
			out = append(out, driver.Inst{Addr: in.Addr, Text: in.Text, Function: in.Function, File: in.File, Line: in.Line})
		}
	}
	covered := false
	for _, s := range t.symbols(file, obj) {
		if s.End <= start || s.Start >= end {
			continue
		}
		covered = true
		if code, err := obj.CodeBetween(s.Start, s.End); err == nil {
			add(code)
		}
	}
	if !covered {
		code, err := obj.CodeBetween(start, end)
		if err != nil {
			return nil, err
		}
		add(code)
	}
	return out, nil
}

// symbols returns the sized code symbols of the object at path, in
// address order, read once.
func (t *objTool) symbols(path string, obj *symbol.Object) []symbol.Sym {
	t.mu.Lock()
	e := t.objs[path]
	t.mu.Unlock()
	e.symsOnce.Do(func() { e.syms = obj.Symbols() })
	return e.syms
}

// objFile is an object as mapped in the profile: runtime addresses are
// start-relative from offset in the file.
type objFile struct {
	obj           *symbol.Object
	name          string
	start, offset uint64
}

func (f *objFile) Name() string    { return f.name }
func (f *objFile) BuildID() string { return hex.EncodeToString(f.obj.BuildID()) }
func (f *objFile) Close() error    { return nil } // kept open for the next request

func (f *objFile) fileOffset(addr uint64) (uint64, error) {
	if addr < f.start {
		return 0, fmt.Errorf("address 0x%x is below the mapping of %s at 0x%x", addr, f.name, f.start)
	}
	return addr - f.start + f.offset, nil
}

func (f *objFile) ObjAddr(addr uint64) (uint64, error) {
	off, err := f.fileOffset(addr)
	if err != nil {
		return 0, err
	}
	v, ok := f.obj.Vaddr(off)
	if !ok {
		return 0, fmt.Errorf("offset 0x%x is outside the loaded segments of %s", off, f.name)
	}
	return v, nil
}

// SourceLine returns the frames at a runtime address, innermost first,
// named as culprit names them in the profile.
func (f *objFile) SourceLine(addr uint64) ([]driver.Frame, error) {
	off, err := f.fileOffset(addr)
	if err != nil {
		return nil, err
	}
	frames := f.obj.Lookup(off)
	if len(frames) == 0 {
		return nil, fmt.Errorf("%s+0x%x: no symbol or line", f.name, off)
	}
	out := make([]driver.Frame, len(frames))
	for i, fr := range frames {
		out[i] = driver.Frame{Func: fr.Function, File: fr.File, Line: fr.Line}
	}
	return out, nil
}

// Symbols returns the sized code symbols of the object whose name, or the
// name culprit gives its function (clone suffixes removed, demangled),
// matches r, and that hold addr (a virtual address) unless it is 0. Ends
// are inclusive, as pprof reads them.
func (f *objFile) Symbols(r *regexp.Regexp, addr uint64) ([]*driver.Sym, error) {
	var out []*driver.Sym
	for _, s := range f.obj.Symbols() {
		if addr != 0 && (addr < s.Start || addr >= s.End) {
			continue
		}
		names := []string{s.Name}
		if fn := elfx.CleanName(s.Name); fn != "" && fn != s.Name {
			names = []string{fn, s.Name}
		}
		if r != nil && !slices.ContainsFunc(names, r.MatchString) {
			continue
		}
		out = append(out, &driver.Sym{Name: names, File: f.name, Start: s.Start, End: s.End - 1})
	}
	return out, nil
}
