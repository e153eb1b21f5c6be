// Package symbol turns addresses in native objects into source-level frames.
//
// It owns reading executables, shared libraries and in-memory images (the
// vDSO): ELF program headers (to turn the file offsets callers compute into
// virtual addresses), symbol tables (.symtab, else .dynsym), DWARF line
// tables and inline trees, separate debug files (.gnu_debuglink and
// /usr/lib/debug/.build-id), Go's .gopclntab for stripped Go binaries, and
// caching of all of it per object (by build-id, else path+size+mtime). It
// also resolves kernel addresses from a kallsyms-style table it is given.
//
// It must not touch the kernel or recordings: it never opens perf events,
// reads /proc of another process or decodes recorded data. Callers hand it
// paths, build-ids, file offsets and symbol lists.
//
// Results degrade gracefully: file:line (function) when DWARF or pclntab
// has it, the function name from the symbol table when not, and no frames
// at all (the caller then prints object+0xoffset) when nothing is known; for
// such addresses FunctionEntry still finds the start of their function in
// the unwind tables (through package unwind's .eh_frame reader), so that a
// stripped program's samples add up per function.
//
// Inlined frames come from the tree of functions and inlined calls that
// elfx.FuncWalker builds (dwarfx hangs variables on the same tree):
// debug/dwarf decodes DIEs, ranges and line tables (DWARF 5 included) but
// has no API for "which inlined calls contain this pc", nor for a
// caller-side line (DW_AT_call_file/DW_AT_call_line). The walk is done per
// compilation unit, lazily, on the first lookup landing in the unit, and
// skips what only describes data, so a large library is not parsed for one
// address.
package symbol

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/culprit-dev/culprit/internal/elfx"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Frame is one source-level frame at an address. Inlined functions are
// frames of their own.
type Frame struct {
	// Function is the source function name: GCC clone suffixes removed,
	// C++/Rust demangled in simplified form.
	Function string
	// Symbol is the raw name of the ELF symbol containing the address, e.g.
	// "scale.constprop.0"; "" when no symbol covers it. Inlined frames carry
	// the symbol of the function they were inlined into.
	Symbol  string
	File    string // "" when unknown
	Line    int    // 0 when unknown
	Inlined bool   // this frame was inlined into the next (outer) one
}

// Options configure a Symbolizer.
type Options struct {
	// DebugDirs are searched for separate debug files
	// (<dir>/.build-id/ab/cdef….debug and <dir>/<object dir>/<debuglink>).
	// nil means /usr/lib/debug; an empty non-nil slice means none.
	DebugDirs []string
}

// Symbolizer opens and caches objects. It is safe for concurrent use.
type Symbolizer struct {
	debugDirs []string

	mu     sync.Mutex
	byID   map[string]*objData
	byFile map[fileKey]*objData
}

type fileKey struct {
	path  string
	size  int64
	mtime int64
}

// ArchiveDir is where `culprit archive` keeps copies of recorded objects,
// under .build-id/ab/cdef….debug as a debug directory: $CULPRIT_ARCHIVE,
// else culprit/ in the user's cache directory ($XDG_CACHE_HOME or
// ~/.cache); "" when there is none.
func ArchiveDir() string {
	if d := os.Getenv("CULPRIT_ARCHIVE"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "culprit")
	}
	return ""
}

// ArchivePath is the file in the debug directory dir that holds the object
// with the given build-id ("" for an empty build-id).
func ArchivePath(dir string, buildID []byte) string { return elfx.BuildIDPath(dir, buildID) }

// New returns a Symbolizer.
func New(o Options) *Symbolizer {
	dirs := o.DebugDirs
	if dirs == nil {
		dirs = []string{"/usr/lib/debug"}
		if a := ArchiveDir(); a != "" {
			dirs = append(dirs, a)
		}
	}
	return &Symbolizer{
		debugDirs: append([]string(nil), dirs...),
		byID:      map[string]*objData{},
		byFile:    map[fileKey]*objData{},
	}
}

// Object is an opened object file. Its methods are safe for concurrent use.
type Object struct {
	path string
	d    *objData
}

// Path returns the path the object was asked for (or the name given to
// ObjectFromBytes).
func (o *Object) Path() string { return o.path }

// BuildID returns the object's GNU build-id, nil if it has none.
func (o *Object) BuildID() []byte { return append([]byte(nil), o.d.buildID...) }

// HasSymbols reports whether function names are available: a symbol table
// with code symbols, or Go's pclntab.
func (o *Object) HasSymbols() bool {
	o.d.load()
	return o.d.syms.len() > 0 || o.d.pcln != nil
}

// HasLines reports whether file:line information is available (DWARF, in the
// object or a separate debug file, or Go's pclntab).
func (o *Object) HasLines() bool {
	o.d.load()
	return (o.d.dw != nil && (len(o.d.dw.cus) > 0 || len(o.d.dw.noRng) > 0)) || o.d.pcln != nil
}

// FunctionEntry returns the file offset of the first instruction of the
// function holding fileOffset, from the object's unwind tables (.eh_frame,
// .debug_frame). It groups the addresses of functions no symbol names: all
// functions of a stripped program, the static functions of a shared library
// that has only dynamic symbols. ok is false when no table covers the offset.
func (o *Object) FunctionEntry(fileOffset uint64) (entry uint64, ok bool) {
	d := o.d
	pc, ok := d.vaddr(fileOffset)
	if !ok {
		return 0, false
	}
	d.cfiOnce.Do(func() { d.cfi = d.loadCFI() })
	if d.cfi == nil {
		return 0, false
	}
	start, ok := d.cfi.FuncStart(pc)
	if !ok {
		return 0, false
	}
	return d.fileOffset(start)
}

// DebugFile returns the separate debug file in use, "" if none.
func (o *Object) DebugFile() string {
	o.d.load()
	return o.d.debugPath
}

// MismatchError says the file on disk is not the one that was recorded.
type MismatchError struct {
	Path      string
	Want, Got []byte // recorded, on disk (nil: none)
}

func (e *MismatchError) Error() string {
	got := "no build-id"
	if len(e.Got) > 0 {
		got = "build-id " + shortHex(e.Got)
	}
	return fmt.Sprintf("%s: %s on disk, %s recorded: the binary changed since recording; names would be wrong (culprit archive, run right after recording, keeps a copy)",
		e.Path, got, shortHex(e.Want))
}

func shortHex(b []byte) string {
	h := hex.EncodeToString(b)
	if len(h) > 12 {
		return h[:12] + "…"
	}
	return h
}

// Object opens the object at path. buildID, when non-empty, is the build-id
// recorded for it: a file with a different one yields *MismatchError, and a
// missing file is replaced by <DebugDir>/.build-id/ab/cdef….debug when that
// exists.
func (s *Symbolizer) Object(path string, buildID []byte) (*Object, error) {
	fi, statErr := os.Stat(path)
	if statErr == nil && fi.Mode().IsRegular() {
		key := fileKey{path, fi.Size(), fi.ModTime().UnixNano()}
		s.mu.Lock()
		d := s.byFile[key]
		s.mu.Unlock()
		if d == nil {
			nd, err := openFile(path, s.debugDirs)
			if err != nil {
				return nil, fmt.Errorf("symbol: %w", err)
			}
			s.mu.Lock()
			d = s.intern(nd)
			s.byFile[key] = d
			s.mu.Unlock()
		}
		if len(buildID) > 0 && !bytes.Equal(d.buildID, buildID) {
			// The file changed since recording: an archived copy of the
			// recorded one (culprit archive) or its debug file stands in.
			if o := s.standIn(path, buildID); o != nil {
				return o, nil
			}
			return nil, &MismatchError{Path: path, Want: append([]byte(nil), buildID...), Got: append([]byte(nil), d.buildID...)}
		}
		return &Object{path: path, d: d}, nil
	}
	if statErr == nil {
		statErr = errors.New("not a regular file")
	}
	if len(buildID) == 0 || !errors.Is(statErr, os.ErrNotExist) {
		return nil, fmt.Errorf("symbol: %w", statErr)
	}
	if o := s.standIn(path, buildID); o != nil {
		return o, nil
	}
	return nil, fmt.Errorf("symbol: %w (and no copy of build-id %s under %s)", statErr, shortHex(buildID), strings.Join(s.searchDirs(), " or "))
}

// standIn returns the object with buildID found under the debug
// directories, standing in for path: a debug file, or a whole copy kept by
// culprit archive. nil if there is none.
func (s *Symbolizer) standIn(path string, buildID []byte) *Object {
	id := hex.EncodeToString(buildID)
	s.mu.Lock()
	d := s.byID[id]
	s.mu.Unlock()
	if d != nil {
		return &Object{path: path, d: d}
	}
	for _, p := range buildIDPaths(s.debugDirs, buildID) {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		nd, err := openFile(p, s.debugDirs)
		if err != nil || !bytes.Equal(nd.buildID, buildID) {
			continue
		}
		nd.standIn = true
		nd.reconstructLoads()
		s.mu.Lock()
		d = s.intern(nd)
		s.mu.Unlock()
		return &Object{path: path, d: d}
	}
	return nil
}

// ObjectFromBytes parses an in-memory ELF image, such as the vDSO read from
// a process. name is used for Path and messages.
func (s *Symbolizer) ObjectFromBytes(name string, data []byte) (*Object, error) {
	d, err := openBytes(name, data, s.debugDirs)
	if err != nil {
		return nil, fmt.Errorf("symbol: %w", err)
	}
	s.mu.Lock()
	d = s.intern(d)
	s.mu.Unlock()
	return &Object{path: name, d: d}, nil
}

// intern returns the cached object with d's build-id, or caches d.
// Called with s.mu held.
func (s *Symbolizer) intern(d *objData) *objData {
	if len(d.buildID) == 0 {
		return d
	}
	id := hex.EncodeToString(d.buildID)
	if old := s.byID[id]; old != nil && !(old.standIn && !d.standIn) {
		return old
	}
	s.byID[id] = d
	return d
}

// searchDirs are the directories searched by build-id, for messages.
func (s *Symbolizer) searchDirs() []string {
	if len(s.debugDirs) > 0 {
		return s.debugDirs
	}
	return []string{"/usr/lib/debug"}
}

func buildIDPaths(dirs []string, id []byte) []string {
	if len(id) < 2 {
		return nil
	}
	var out []string
	for _, d := range dirs {
		out = append(out, ArchivePath(d, id))
	}
	return out
}

// Lookup returns the frames at fileOffset (an offset into the object file,
// as computed from a mapping: addr - start + pgoff), innermost first, or nil
// when nothing is known about the address.
func (o *Object) Lookup(fileOffset uint64) []Frame {
	d := o.d
	pc, ok := d.vaddr(fileOffset)
	if !ok {
		return nil
	}
	return d.lookupPC(pc)
}

// LookupAddr is Lookup for an ELF virtual address (as in the symbol table).
func (o *Object) LookupAddr(vaddr uint64) []Frame { return o.d.lookupPC(vaddr) }

func (d *objData) lookupPC(pc uint64) (frames []Frame) {
	defer func() {
		if recover() != nil {
			frames = nil // malformed input the lazy parsers did not catch
		}
	}()
	d.load()
	sym, hasSym := d.syms.lookup(pc)
	if !hasSym {
		// A PLT stub is a frame of its own, f@plt, as perf and objdump
		// name it: the caller called it and it jumps (no call) to f, so
		// a sample in it is time spent in neither the caller's code nor
		// f's, and f may be in another object or not yet bound.
		if name, ok := d.syms.stub(pc); ok {
			return []Frame{{Function: d.clean(name) + "@plt", Symbol: name + "@plt"}}
		}
	}
	if d.dw != nil {
		chain, file, line := d.dw.lookup(pc)
		if n := len(chain); n > 0 {
			frames := make([]Frame, n)
			for k := n - 1; k >= 0; k-- {
				f := Frame{Function: chain[k].Name, Symbol: sym, Inlined: k > 0}
				if k == n-1 {
					f.File, f.Line = file, line
				} else {
					f.File, f.Line = chain[k+1].CallFile, chain[k+1].CallLine
				}
				frames[n-1-k] = f
			}
			// An outlined part inlined back into its function's head
			// is the function itself: its frame and the head's are
			// one, at the part's line.
			for k, del := n-1, 0; k > 0; k-- {
				if chain[k].Outlined {
					p := n - 1 - k - del // the part's frame; the head's is next
					frames[p+1].File, frames[p+1].Line = frames[p].File, frames[p].Line
					frames = slices.Delete(frames, p, p+1)
					del++
				}
			}
			if frames[len(frames)-1].Function == "" && hasSym {
				frames[len(frames)-1].Function = d.clean(sym)
			}
			if frames[0].File == "" && d.pcln != nil {
				// The pclntab's position is the innermost inlined one too.
				if _, f, l, ok := d.pclnLookup(pc); ok && l > 0 {
					frames[0].File, frames[0].Line = f, l
				}
			}
			return frames
		}
		if file != "" && hasSym {
			// Code without a DW_TAG_subprogram (assembly): the symbol
			// names it. A line without either is inter-function padding
			// the line table happens to cover; report nothing for it.
			return []Frame{{Function: d.clean(sym), Symbol: sym, File: file, Line: line}}
		}
	}
	if d.pcln != nil {
		if name, file, line, ok := d.pclnLookup(pc); ok {
			f := Frame{Function: name, Symbol: name}
			if hasSym {
				f.Symbol = sym
			}
			if line > 0 {
				f.File, f.Line = file, line
			}
			return []Frame{f}
		}
	}
	if hasSym {
		return []Frame{{Function: d.clean(sym), Symbol: sym}}
	}
	return nil
}

// pclnLookup resolves pc through Go's pclntab. debug/gosym's LineTable
// keeps string caches in maps without a lock (documented as not safe for
// concurrent use), so calls are serialised.
func (d *objData) pclnLookup(pc uint64) (name, file string, line int, ok bool) {
	d.pclnMu.Lock()
	defer d.pclnMu.Unlock()
	fn := d.pcln.PCToFunc(pc)
	if fn == nil {
		return "", "", 0, false
	}
	file, line, _ = d.pcln.PCToLine(pc)
	return fn.Name, file, line, true
}

// clean is CleanName, cached, and skipped for Go symbols (whose names are
// already source names and may legitimately end in ".cold" and the like).
func (d *objData) clean(sym string) string {
	if d.isGo {
		return sym
	}
	if v, ok := d.cleanCache.Load(sym); ok {
		return v.(string)
	}
	c := CleanName(sym)
	d.cleanCache.Store(sym, c)
	return c
}

// CleanName turns a raw symbol name into the source function name (see
// elfx.CleanName, where the rule lives).
func CleanName(symbol string) string { return elfx.CleanName(symbol) }

// IsPartClone reports whether symbol names the outlined part of a function
// that partial inlining split off (see elfx.IsPartClone).
func IsPartClone(symbol string) bool { return elfx.IsPartClone(symbol) }
