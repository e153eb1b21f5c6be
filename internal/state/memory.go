package state

import (
	"path/filepath"
	"sort"
	"strings"

	"github.com/culprit-dev/culprit/internal/dwarfx"
	"github.com/culprit-dev/culprit/internal/expr"
	"github.com/culprit-dev/culprit/internal/schema"
)

// MemoryRange is memory a collector that cannot stop the thread should copy
// at each sample, so that globals are read as they were at the sample.
// Addr is an ELF address of the executable (add the load bias) — or, when
// From is not negative, an offset added to the pointer found PtrOff bytes
// into the copy of range From.
type MemoryRange struct {
	Addr   uint64
	Len    int
	From   int
	PtrOff int
}

// maxPiece is the longest range returned; longer objects are cut.
const maxPiece = 64

// GlobalMemory lists the memory of the executable's globals that the specs,
// the rules and value sampling read there: each global named in an
// expression (and what a global pointer named there points to, up to 256
// bytes), and, with value sampling of globals, the globals of the
// executable's schema (package schema). Ranges are merged, then cut into
// pieces of at most 64 bytes.
func (s *Sampler) GlobalMemory(exe string) []MemoryRange {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.info(exe)
	if in == nil {
		return nil
	}
	type want struct {
		addr, size uint64
		pointee    uint64 // size of what a pointer global points to (0: none)
	}
	var wants []want
	seen := map[*dwarfx.Variable]bool{}
	var addAs func(v *dwarfx.Variable, deref bool, as *dwarfx.Type)
	add := func(v *dwarfx.Variable, deref bool) { addAs(v, deref, nil) }
	addAs = func(v *dwarfx.Variable, deref bool, as *dwarfx.Type) {
		if v == nil || seen[v] || v.Type() == nil || v.Type().Size <= 0 {
			return
		}
		l, ok := v.Location(0)
		if !ok || l.Expr == nil {
			return
		}
		val, err := l.Eval(&dwarfx.Frame{}, 0)
		if err != nil || !val.InMemory {
			return
		}
		seen[v] = true
		w := want{addr: val.Addr, size: uint64(v.Type().Size)}
		t := v.Type().Underlying()
		if as != nil && t.Kind == dwarfx.Pointer && as.Underlying().Kind == dwarfx.Pointer {
			t = as.Underlying() // (struct T *)p: what p points to is a T
		}
		if deref && t.Kind == dwarfx.Pointer && t.Elem != nil && t.Elem.Size > 0 {
			w.pointee = uint64(min(t.Elem.Size, 256))
		}
		wants = append(wants, w)
	}
	for _, n := range s.expressions(exe) {
		// Globals cast to another pointer type first, so that what they
		// point to is copied at the size of the type they are cast to.
		for _, c := range casts(n) {
			if g, ok := in.Global(c.X.(*expr.Ident).Name); ok {
				if t, ok := in.TypeNamed(c.Type); ok {
					addAs(g, true, t)
				}
			}
		}
		for _, id := range expr.Idents(n) {
			if g, ok := in.Global(id); ok {
				add(g, true)
			}
		}
	}
	if s.values != nil && s.values.globals != nil {
		// The globals of the executable's schema (none when it has none).
		if es := s.exeSchema(filepath.Clean(exe)); es != nil {
			for _, vv := range es.schemaGlobals(in) {
				add(vv.v, vv.member == "" && pointee(vv.v.Type()) != nil) // *p of a pointer to a scalar
			}
		}
	}

	// Merge what overlaps or nearly touches, then cut.
	sort.Slice(wants, func(i, j int) bool { return wants[i].addr < wants[j].addr })
	type span struct{ lo, hi uint64 }
	var spans []span
	for _, w := range wants {
		if n := len(spans); n > 0 && w.addr <= spans[n-1].hi+8 {
			spans[n-1].hi = max(spans[n-1].hi, w.addr+w.size)
			continue
		}
		spans = append(spans, span{w.addr, w.addr + w.size})
	}
	var out []MemoryRange
	for _, sp := range spans {
		for a := sp.lo; a < sp.hi; a += maxPiece {
			out = append(out, MemoryRange{Addr: a, Len: int(min(maxPiece, sp.hi-a)), From: -1})
		}
	}
	// What pointer globals point to, after the fixed ranges.
	fixed := len(out)
	for _, w := range wants {
		if w.pointee == 0 {
			continue
		}
		for i := 0; i < fixed; i++ {
			r := out[i]
			if w.addr >= r.Addr && w.addr+8 <= r.Addr+uint64(r.Len) && (w.addr-r.Addr)%8 == 0 {
				for off := uint64(0); off < w.pointee; off += maxPiece {
					out = append(out, MemoryRange{Addr: off, Len: int(min(maxPiece, w.pointee-off)), From: i, PtrOff: int(w.addr - r.Addr)})
				}
				break
			}
		}
	}
	return out
}

// NeedsHeap reports whether what the sampler reads in the executable may
// lie outside the stack and the globals GlobalMemory plans: an expression
// or rule that follows a pointer (->, *, an index), or a schema local that
// is a pointer to a scalar (sampled with its target). Collectors that
// copy memory speculatively skip that work when it is false.
func (s *Sampler) NeedsHeap(exe string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.expressions(exe) {
		if derefs(n) {
			return true
		}
	}
	if s.values != nil {
		if es := s.exeSchema(filepath.Clean(exe)); es != nil && hasPointerLocal(es.s) {
			return true
		}
	}
	return false
}

// MayNeedHeap is NeedsHeap before any executable is known: whether any
// expression or rule, for whatever program, follows a pointer, or the
// schema of the main executable (given, or made for mainExe) has a pointer
// local. Collectors use it to leave pointer chasing out altogether.
func (s *Sampler) MayNeedHeap(mainExe string) bool {
	for _, n := range s.expressions("") {
		if derefs(n) {
			return true
		}
	}
	if s.values == nil {
		return false
	}
	if s.values.schema != nil {
		return hasPointerLocal(s.values.schema)
	}
	if mainExe == "" {
		return true
	}
	return s.NeedsHeap(mainExe)
}

func hasPointerLocal(sc *schema.Schema) bool {
	for _, e := range sc.Entries {
		if e.Function != schema.Global && strings.HasSuffix(strings.TrimSpace(e.Type), "*") {
			return true
		}
	}
	return false
}

// expressions lists the expressions the specs and the rules evaluate in the
// executable ("": in any): spec expressions, rule conditions and captures.
func (s *Sampler) expressions(exe string) []expr.Node {
	var out []expr.Node
	for _, sp := range s.specs {
		if exe == "" || sp.MatchProg(exe) {
			out = append(out, sp.Expr)
		}
	}
	if s.file == nil {
		return out
	}
	base := filepath.Base(exe)
	for _, p := range s.file.Programs {
		if ok, _ := filepath.Match(p.Glob, base); exe != "" && !ok {
			continue
		}
		for _, r := range p.Rules {
			if r.Cond != nil {
				out = append(out, r.Cond)
			}
			for _, a := range r.Actions {
				if a.Expr != nil {
					out = append(out, a.Expr)
				}
			}
		}
	}
	return out
}

// derefs reports whether an expression follows a pointer or indexes.
func derefs(n expr.Node) bool {
	switch n := n.(type) {
	case *expr.Member:
		return n.Arrow || derefs(n.X)
	case *expr.Index:
		return true
	case *expr.Unary:
		return n.Op == "*" || derefs(n.X)
	case *expr.Binary:
		return derefs(n.X) || derefs(n.Y)
	case *expr.Cast:
		return derefs(n.X)
	}
	return false
}

// casts lists the casts of a lone name in n: (struct T *)p.
func casts(n expr.Node) []*expr.Cast {
	var out []*expr.Cast
	var walk func(expr.Node)
	walk = func(n expr.Node) {
		switch n := n.(type) {
		case *expr.Cast:
			if _, ok := n.X.(*expr.Ident); ok {
				out = append(out, n)
			}
			walk(n.X)
		case *expr.Member:
			walk(n.X)
		case *expr.Index:
			walk(n.X)
			walk(n.I)
		case *expr.Unary:
			walk(n.X)
		case *expr.Binary:
			walk(n.X)
			walk(n.Y)
		}
	}
	walk(n)
	return out
}
