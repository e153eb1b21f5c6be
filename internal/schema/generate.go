package schema

import (
	"debug/elf"
	"encoding/hex"
	"fmt"
	"github.com/culprit-dev/culprit/internal/elfx"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/culprit-dev/culprit/internal/dwarfx"
	"github.com/culprit-dev/culprit/internal/unwind"
)

// Options of Generate.
type Options struct {
	// Component keeps the variables whose declaring file is under this
	// path prefix: an absolute directory, or a relative one matched as
	// whole path components anywhere in the file's path
	// ("storage/innobase/buf"). "" keeps every variable.
	Component string
}

// NoDWARFError is returned for a binary without DWARF debugging
// information.
type NoDWARFError struct {
	Path string
}

func (e *NoDWARFError) Error() string {
	return fmt.Sprintf("%s has no DWARF debugging information, so its variables cannot be found: "+
		"culprit schema, record --values and diagnose need it (rebuild with -g, or install its debug symbols). "+
		"CPU profiles still work: culprit record, report, export, latency and contexts", e.Path)
}

// Generate makes the schema of the ELF executable or shared object at
// path: every global of scalar type (pointers included) and every scalar
// member of a global struct, and the scalar locals and parameters that
// the machine code uses as loop induction variables, in branch conditions
// or as call arguments, each with those tags.
func Generate(path string, o Options) (*Schema, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if f.Machine != elf.EM_X86_64 {
		return nil, fmt.Errorf("%s: %v binaries are not supported (x86-64 only)", path, f.Machine)
	}
	info, err := dwarfx.Open(path)
	if err != nil {
		if s := f.Section(".debug_info"); s == nil || s.Type == elf.SHT_NOBITS || s.Size == 0 {
			return nil, &NoDWARFError{Path: path}
		}
		return nil, err
	}
	t, err := loadText(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	g := &generator{info: info, text: t}
	g.cfi, _ = unwind.TableFromELF(f) // without CFI, frame slots are matched through rbp frames only
	g.collectGlobals()
	locals := map[Key]*Entry{}
	for _, fn := range info.Functions() {
		if len(fn.Ranges) == 0 {
			continue
		}
		for _, e := range g.analyse(fn) {
			if prev, ok := locals[e.Key()]; ok {
				prev.Tags |= e.Tags // clones of one function: one variable
				continue
			}
			e := e
			locals[e.Key()] = &e
		}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	s := &Schema{Binary: abs, Component: o.Component}
	if id := elfx.BuildID(f); len(id) > 0 {
		s.BuildID = hex.EncodeToString(id)
	}
	seen := map[Key]int{}
	add := func(e Entry) {
		if o.Component != "" && !UnderComponent(e.File, o.Component) {
			return
		}
		if i, ok := seen[e.Key()]; ok {
			s.Entries[i].Tags |= e.Tags
			return
		}
		seen[e.Key()] = len(s.Entries)
		s.Entries = append(s.Entries, e)
	}
	for i, gv := range g.globals {
		e := gv.entry
		e.Tags = g.globalTags[i]
		add(e)
	}
	for _, e := range locals {
		if e.Tags != 0 {
			add(*e)
		}
	}
	sortEntries(s.Entries)
	return s, nil
}

// UnderComponent reports whether file is under the component prefix (see
// Options.Component).
func UnderComponent(file, prefix string) bool {
	p := filepath.Clean(prefix)
	f := filepath.Clean(file)
	if f == p {
		return true
	}
	if filepath.IsAbs(p) {
		return strings.HasPrefix(f, strings.TrimSuffix(p, "/")+"/")
	}
	p = strings.TrimPrefix(p, "./")
	return strings.HasPrefix(f, p+"/") || strings.Contains(f, "/"+p+"/") || strings.HasSuffix(f, "/"+p)
}

// generator holds what the analysis of every function shares.
type generator struct {
	info *dwarfx.Info
	text *text
	cfi  *unwind.Table

	globals    []globalVar // sorted by address
	globalTags []Tags
}

// globalVar is a watched global: a scalar, or a scalar member of a struct.
type globalVar struct {
	entry      Entry
	addr, size uint64
}

func (g *generator) collectGlobals() {
	for _, v := range g.info.Globals() {
		if v.Artificial || v.Type() == nil {
			continue
		}
		l, ok := v.Location(0)
		if !ok || l.Const != nil {
			continue // a constant: nothing to sample
		}
		val, err := l.Eval(&dwarfx.Frame{}, 0)
		if err != nil || !val.InMemory {
			continue // thread-local or computed
		}
		t := v.Type()
		u := t.Underlying()
		base := Entry{File: v.DeclFile, Function: Global, Line: v.DeclLine, Variable: v.Name, Type: t.Name}
		switch {
		case u.IsScalar():
			g.globals = append(g.globals, globalVar{entry: base, addr: val.Addr, size: uint64(max(u.Size, 1))})
		case u.Kind == dwarfx.Struct:
			for _, fl := range u.Fields {
				if fl.Name == "" || fl.Type == nil || !fl.Type.IsScalar() || fl.BitSize != 0 {
					continue
				}
				e := base
				e.Variable = v.Name + "." + fl.Name
				e.Type = fl.Type.Name
				g.globals = append(g.globals, globalVar{entry: e, addr: val.Addr + uint64(fl.Offset),
					size: uint64(max(fl.Type.Underlying().Size, 1))})
			}
		}
	}
	sort.SliceStable(g.globals, func(i, j int) bool { return g.globals[i].addr < g.globals[j].addr })
	g.globalTags = make([]Tags, len(g.globals))
}

// globalsAt returns the indexes of the globals that the access [addr,
// addr+size) touches.
func (g *generator) globalsAt(addr uint64, size int) []int32 {
	if size <= 0 {
		size = 1
	}
	end := addr + uint64(size)
	i := sort.Search(len(g.globals), func(i int) bool { return g.globals[i].addr+g.globals[i].size > addr })
	var out []int32
	for ; i < len(g.globals) && g.globals[i].addr < end; i++ {
		out = append(out, int32(i))
	}
	return out
}

// Cache of generated schemas, by path and build-id, so that a schema made
// before a recording starts is not made again by the sampler.
var (
	cacheMu sync.Mutex
	cache   = map[string]cached{}
)

type cached struct {
	s   *Schema
	err error
}

// ForExecutable returns the schema of the executable at path, generated
// once per build of it (Options zero: every variable).
func ForExecutable(path string) (*Schema, error) {
	key := path + "\x00" + hex.EncodeToString(elfx.FileBuildID(path))
	cacheMu.Lock()
	c, ok := cache[key]
	cacheMu.Unlock()
	if ok {
		return c.s, c.err
	}
	s, err := Generate(path, Options{})
	cacheMu.Lock()
	cache[key] = cached{s, err}
	cacheMu.Unlock()
	return s, err
}
