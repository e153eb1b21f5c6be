package dwarfx

import (
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/culprit-dev/culprit/internal/elfx"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// Info indexes the functions, variables and types of one ELF object. It is
// safe for concurrent use. Opening reads only unit headers and the root DIE
// of each compilation unit; a unit's functions, scopes and variables are
// parsed on the first lookup that lands in it, and location lists and types
// on first use of a variable.
type Info struct {
	path        string
	d           *dwarf.Data
	isGo        bool // built by Go: names as they are (elfx.FuncName)
	relocatable bool // an ET_REL object: ranges may start at 0 (elfx.Ranges)

	// mu serialises the use of d (debug/dwarf's type cache is not safe for
	// concurrent use) and guards the lazily filled maps below.
	mu        sync.Mutex
	walk      *elfx.FuncWalker // builds units' function trees (elfx, as the symbolizer)
	baseTypes map[dwarf.Offset]elfx.BaseType
	types     map[dwarf.Type]*Type
	foreign   map[dwarf.Offset]*die // DIEs of other units reached by references

	sec sections

	units   []*unit
	unitAt  map[dwarf.Offset]*unit // by root DIE offset
	byPC    ivIndex                // unit ranges -> index in units
	noRange []*unit                // units without address ranges

	noRangeOnce sync.Once
	noRangeIdx  ivIndex
	noRangeFns  []*Function

	allOnce  sync.Once
	funcs    []*Function
	byName   map[string][]*Function
	globals  []*Variable
	globName map[string][]*Variable

	names   typeNames
	fnNames nameSet

	staticsOnce sync.Once
	staticAt    map[uint64]dwarf.Offset // fixed address → type DIE (statics.go)
}

type sections struct {
	info, loc, loclists, addr []byte
}

// Open reads the DWARF of the ELF file at path. When the file has no
// .debug_info, separate debug information is looked up as the symbolizer
// does (elfx.DebugFile: by build-id under /usr/lib/debug/.build-id, then by
// .gnu_debuglink with its CRC checked); its addresses are those of the
// original file.
func Open(path string) (*Info, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	used := path
	if !elfx.HasDWARF(f) {
		if dp, df := elfx.DebugFile(f, path, []string{"/usr/lib/debug"}, elfx.HasDWARF); df != nil {
			defer df.Close()
			f, used = df, dp
		}
	}
	i, err := FromELF(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", used, err)
	}
	i.path = used
	return i, nil
}

// Path returns the file the DWARF was read from (a separate debug file when
// Open found one), or "" for FromELF.
func (i *Info) Path() string { return i.path }

// FromELF reads the DWARF of an open ELF file; f may be closed afterwards.
// Relocatable objects (.o) are read through debug/elf, which applies
// relocations to the DIEs but not to location lists.
func FromELF(f *elf.File) (*Info, error) {
	if f.Machine != elf.EM_X86_64 {
		return nil, fmt.Errorf("dwarfx: %v objects are not supported (x86-64 only)", f.Machine)
	}
	if !elfx.HasDWARF(f) {
		return nil, errors.New("no DWARF debug information (.debug_info)")
	}
	dw, err := elfx.DWARFData(f, "info", "loc", "loclists", "addr")
	if err != nil {
		return nil, err
	}
	d, secs := dw.Data, dw.Sections
	i := &Info{
		d:           d,
		isGo:        elfx.IsGo(f),
		relocatable: f.Type == elf.ET_REL,
		walk:        elfx.NewFuncWalker(d, elfx.IsGo(f), f.Type == elf.ET_REL),
		baseTypes:   map[dwarf.Offset]elfx.BaseType{},
		types:       map[dwarf.Type]*Type{},
		foreign:     map[dwarf.Offset]*die{},
		unitAt:      map[dwarf.Offset]*unit{},
		sec: sections{
			info:     secs["info"],
			loc:      secs["loc"],
			loclists: secs["loclists"],
			addr:     secs["addr"],
		},
	}
	if err := i.readUnits(); err != nil {
		return nil, err
	}
	return i, nil
}

// Err returns the first error met while parsing the units parsed so far
// (malformed DWARF); lookups skip what they cannot read.
func (i *Info) Err() error {
	for _, u := range i.units {
		if u.parsedErr() != nil {
			return u.parsedErr()
		}
	}
	return nil
}

// Unit types (DW_UT_*).
const (
	utCompile      = 1
	utType         = 2
	utPartial      = 3
	utSkeleton     = 4
	utSplitCompile = 5
	utSplitType    = 6
)

// readUnits parses unit headers from .debug_info and the root DIE of each
// compilation unit.
func (i *Info) readUnits() (err error) {
	defer func() {
		if r := recover(); r != nil { // debug/dwarf on malformed input
			err = bad("reading units: %v", r)
		}
	}()
	b := i.sec.info
	le := binary.LittleEndian
	r := i.d.Reader()
	for off := 0; off+11 <= len(b); {
		u := &unit{info: i, hdrOff: dwarf.Offset(off)}
		length := uint64(le.Uint32(b[off:]))
		hdr := 4
		if length == 0xffffffff {
			if off+12 > len(b) {
				break
			}
			length = le.Uint64(b[off+4:])
			hdr = 12
			u.dwarf64 = true
		} else if length >= 0xfffffff0 {
			return fmt.Errorf("%w: unit length %#x at %#x", ErrMalformed, length, off)
		}
		end := uint64(off) + uint64(hdr) + length
		if end > uint64(len(b)) {
			return fmt.Errorf("%w: unit at %#x extends past .debug_info", ErrMalformed, off)
		}
		p := off + hdr
		offSize := 4
		if u.dwarf64 {
			offSize = 8
		}
		if p+2 > int(end) {
			return fmt.Errorf("%w: short unit header at %#x", ErrMalformed, off)
		}
		u.version = int(le.Uint16(b[p:]))
		p += 2
		utype := utCompile
		if u.version >= 5 {
			if p+2+offSize > int(end) {
				return fmt.Errorf("%w: short unit header at %#x", ErrMalformed, off)
			}
			utype = int(b[p])
			u.addrSize = int(b[p+1])
			p += 2 + offSize
			switch utype {
			case utType, utSplitType:
				p += 8 + offSize
			case utSkeleton, utSplitCompile:
				p += 8
			}
		} else {
			p += offSize
			if p+1 > int(end) {
				return fmt.Errorf("%w: short unit header at %#x", ErrMalformed, off)
			}
			u.addrSize = int(b[p])
			p++
		}
		u.dieOff = dwarf.Offset(p)
		off = int(end)
		if utype != utCompile || u.version < 2 || u.version > 5 {
			continue // type, partial and split units hold no code of their own
		}
		r.Seek(u.dieOff)
		e, err := r.Next()
		if err != nil {
			return fmt.Errorf("unit at %#x: %w", u.hdrOff, err)
		}
		if e == nil || e.Tag != dwarf.TagCompileUnit {
			continue
		}
		u.name, _ = e.Val(dwarf.AttrName).(string)
		u.compDir, _ = e.Val(dwarf.AttrCompDir).(string)
		u.lowPC, _ = e.Val(dwarf.AttrLowpc).(uint64)
		if v, ok := e.Val(dwarf.AttrAddrBase).(int64); ok {
			u.addrBase, u.hasAddrBase = uint64(v), true
		}
		if v, ok := e.Val(dwarf.AttrLoclistsBase).(int64); ok {
			u.loclistsBase = uint64(v)
		}
		u.hasLines = e.Val(dwarf.AttrStmtList) != nil
		u.lang, _ = e.Val(dwarf.AttrLanguage).(int64)
		rs, err := i.d.Ranges(e)
		if err != nil {
			rs = nil
		}
		idx := len(i.units)
		i.units = append(i.units, u)
		i.unitAt[u.dieOff] = u
		if len(rs) == 0 {
			i.noRange = append(i.noRange, u)
		}
		for _, rg := range rs {
			i.byPC.add(rg[0], rg[1], idx)
		}
	}
	i.byPC.build()
	return nil
}

// unitOf returns the unit containing the DIE at off.
func (i *Info) unitOf(off dwarf.Offset) *unit {
	k := sort.Search(len(i.units), func(k int) bool { return i.units[k].dieOff > off }) - 1
	if k < 0 {
		return nil
	}
	return i.units[k]
}

// Function returns the out-of-line function containing pc (an ELF virtual
// address): the concrete instance whose address ranges contain it. A GCC
// clone such as f.constprop.0 or f.isra.0 is its own Function named "f"
// (the name comes from its DW_AT_abstract_origin). Code inlined into a
// function belongs to that function; Inlines and Variables describe it.
// Cost: a binary search over unit ranges, then over the unit's functions;
// the unit is parsed on the first lookup in it.
func (i *Info) Function(pc uint64) (*Function, bool) {
	if k := i.byPC.find(pc); k >= 0 {
		if fn := i.units[k].function(pc); fn != nil {
			return fn, true
		}
		// Units' ranges may overlap (assembly units in libc): try the
		// others containing pc.
		var fn *Function
		i.byPC.each(pc, func(k int) bool {
			fn = i.units[k].function(pc)
			return fn == nil
		})
		if fn != nil {
			return fn, true
		}
	}
	if len(i.noRange) == 0 {
		return nil, false
	}
	i.noRangeOnce.Do(func() {
		for _, u := range i.noRange {
			u.parse()
			for _, fn := range u.fns {
				for _, rg := range fn.Ranges {
					i.noRangeIdx.add(rg[0], rg[1], len(i.noRangeFns))
				}
				i.noRangeFns = append(i.noRangeFns, fn)
			}
		}
		i.noRangeIdx.build()
	})
	if k := i.noRangeIdx.find(pc); k >= 0 {
		return i.noRangeFns[k], true
	}
	return nil, false
}

// indexAll parses every unit and builds the name indexes.
func (i *Info) indexAll() {
	i.allOnce.Do(func() {
		i.byName = map[string][]*Function{}
		i.globName = map[string][]*Variable{}
		for _, u := range i.units {
			u.parse()
			for _, fn := range u.fns {
				i.funcs = append(i.funcs, fn)
				i.byName[fn.Name] = append(i.byName[fn.Name], fn)
				if fn.Linkage != "" && fn.Linkage != fn.Name {
					i.byName[fn.Linkage] = append(i.byName[fn.Linkage], fn)
				}
				if fn.dwName != "" && fn.dwName != fn.Linkage {
					i.byName[fn.dwName] = append(i.byName[fn.dwName], fn)
				}
			}
			for _, v := range u.globals {
				i.globals = append(i.globals, v)
				i.globName[v.Name] = append(i.globName[v.Name], v)
			}
		}
	})
}

// Functions returns every concrete (out-of-line) function of the object,
// in unit order. The first call parses all units.
func (i *Info) Functions() []*Function {
	i.indexAll()
	return i.funcs
}

// FunctionsNamed returns every concrete out-of-line instance of the source
// function name (its Name, DW_AT_name or linkage name): the function
// itself if it was emitted and each of its clones (f.constprop.0, f.isra.0,
// f.part.0 all report Name "f"). Copies inlined into other functions are not
// functions; see Function.Inlines. The first call parses all units.
func (i *Info) FunctionsNamed(name string) []*Function {
	i.indexAll()
	return i.byName[name]
}

// Global returns a variable with static storage by name:
//
//   - "name": the file-scope variable; an external definition is preferred
//     to a file-static one when several units define the name;
//   - "file.c:name": the file-scope variable declared in file.c (matched
//     against the declaring file's path, its base name or a path suffix),
//     for statics that several files define;
//   - "func::name": the static local variable of function func (gdb's
//     syntax).
//
// The first call parses all units.
func (i *Info) Global(name string) (*Variable, bool) {
	i.indexAll()
	if fn, vn, ok := strings.Cut(name, "::"); ok {
		for _, v := range i.globName[vn] {
			if v.Func != nil && v.Func.Name == fn {
				return v, true
			}
		}
		return nil, false
	}
	if file, vn, ok := strings.Cut(name, ":"); ok {
		for _, v := range i.globName[vn] {
			if v.Func == nil && fileMatches(v.DeclFile, file) {
				return v, true
			}
		}
		return nil, false
	}
	var best *Variable
	for _, v := range i.globName[name] {
		if v.Func != nil {
			continue
		}
		if v.IsExternal {
			return v, true
		}
		if best == nil {
			best = v
		}
	}
	return best, best != nil
}

// GlobalFrom looks up a global named in code of function fn (a name or a
// pattern): Global(name), else, in a program built by Go, the global of
// fn's package, as Go's scoping resolves an unqualified name (limit in
// main.work is main.limit).
func (i *Info) GlobalFrom(fn, name string) (*Variable, bool) {
	if v, ok := i.Global(name); ok || !i.isGo {
		return v, ok
	}
	if pkg := GoPackage(fn); pkg != "" {
		return i.Global(pkg + "." + name)
	}
	return nil, false
}

// GoPackage returns the package path of a Go function name ("main" of
// "main.work", "example.com/a/b" of "example.com/a/b.(*T).M"), or "" when
// the name has no package or the package part holds a pattern's
// metacharacters.
func GoPackage(fn string) string {
	slash := strings.LastIndexByte(fn, '/')
	dot := strings.IndexByte(fn[slash+1:], '.')
	if dot <= 0 {
		return ""
	}
	pkg := fn[:slash+1+dot]
	if strings.ContainsAny(pkg, "*?[\\") {
		return ""
	}
	return pkg
}

func fileMatches(path, want string) bool {
	if path == want || filepath.Base(path) == want {
		return true
	}
	return strings.HasSuffix(path, "/"+strings.TrimPrefix(want, "/"))
}

// Globals returns every variable with static storage that has a location or
// a constant value: file-scope variables (IsGlobal, Func nil) and static
// locals of functions (IsGlobal, Func set), in unit order. The first call
// parses all units.
func (i *Info) Globals() []*Variable {
	i.indexAll()
	return i.globals
}

// bad is a helper for malformed-data errors.
func bad(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}
