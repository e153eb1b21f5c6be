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
// Addr is an ELF address of the object the ranges were planned for (add
// its load bias in the process) — or, when From is not negative, an offset
// added to the pointer found PtrOff bytes into the copy of range From of
// the same list.
// Names are the expressions (and schema variables) that read the range.
type MemoryRange struct {
	Addr   uint64
	Len    int
	From   int
	PtrOff int
	Names  []string
}

// maxPiece is the longest range returned; longer objects are cut.
const maxPiece = 4096

// GlobalMemory lists the memory of the globals of obj, an object mapped in
// a process whose executable is exe (obj "" or exe: the executable itself;
// else a shared library), that the specs, the rules and value sampling read
// there, exactly: for an expression, the
// bytes its member and constant-index accesses reach from a global
// (cfg.limits[2]: 4 bytes; cfg: all of cfg), and when they reach a
// pointer, up to 256 bytes it points to; with value sampling of globals,
// the schema's global variables and struct members (package schema).
// In a library, the expressions are those of specs whose program pattern
// names it (specMatchesObject), and value sampling reads its globals when
// its variables are sampled (a library with its own DWARF, or the one a
// given schema describes). Ranges are merged when they nearly touch, then
// cut into pieces of at most 4 KiB.
func (s *Sampler) GlobalMemory(exe, obj string) []MemoryRange {
	s.mu.Lock()
	defer s.mu.Unlock()
	isExe := obj == "" || filepath.Clean(obj) == filepath.Clean(exe)
	if obj == "" {
		obj = exe
	}
	var exprs []fnExpr
	for _, fe := range s.expressions(exe) {
		if isExe && (fe.sp == nil || fe.sp.MatchProg(exe)) || !isExe && fe.sp != nil && specMatchesObject(fe.sp, obj) {
			exprs = append(exprs, fe)
		}
	}
	withValues := s.values != nil && s.values.globals != nil && (isExe || s.values.sampled(obj, exe))
	if !isExe && len(exprs) == 0 && !withValues {
		return nil // nothing reads this library's globals: not even its DWARF is needed
	}
	in := s.info(obj)
	if in == nil {
		return nil
	}
	type want struct {
		addr, size uint64
		pointee    uint64 // size of what a pointer points to (0: none)
		name       string
	}
	var wants []want
	seen := map[[3]uint64]bool{}
	add := func(name string, addr uint64, t *dwarfx.Type, size int64, deref bool) {
		if size <= 0 {
			return
		}
		w := want{addr: addr, size: uint64(size), name: name}
		if t != nil {
			if u := t.Underlying(); deref && u.Kind == dwarfx.Pointer && u.Elem != nil && u.Elem.Size > 0 {
				w.pointee = uint64(min(u.Elem.Size, 256))
			}
		}
		if k := [3]uint64{addr, w.size, w.pointee}; !seen[k] {
			seen[k] = true
			wants = append(wants, w)
		}
	}
	for _, fe := range exprs {
		n := fe.n
		name := n.String()
		walkReach(n, func(id string) (uint64, *dwarfx.Type, bool) {
			g, ok := in.GlobalFrom(fe.fn, id)
			if !ok {
				return 0, nil, false
			}
			a, ok := globalAddress(g)
			return a, g.Type(), ok
		}, in.TypeNamed, func(addr uint64, t *dwarfx.Type, size int64) {
			add(name, addr, t, size, true)
		})
	}
	if withValues {
		// The globals of the object's schema (none when it has none).
		if es := s.exeSchema(filepath.Clean(obj)); es != nil {
			for _, vv := range es.schemaGlobals(in) {
				a, ok := globalAddress(vv.v)
				if !ok {
					continue
				}
				if vv.member != "" && vv.member != derefMember {
					size := vv.field.Type.Size
					if vv.field.BitSize > 0 {
						size = (vv.field.BitOffset%8 + vv.field.BitSize + 7) / 8
					}
					add(vv.v.Name+"."+vv.member, a+uint64(vv.field.Offset), vv.field.Type, size, false)
					continue
				}
				add(vv.v.Name, a, vv.v.Type(), vv.v.Type().Size, pointee(vv.v.Type()) != nil) // *p of a pointer to a scalar
			}
		}
	}

	// Merge what overlaps or nearly touches, then cut.
	sort.Slice(wants, func(i, j int) bool { return wants[i].addr < wants[j].addr })
	type span struct {
		lo, hi uint64
		names  []string
	}
	var spans []span
	for _, w := range wants {
		if n := len(spans); n > 0 && w.addr <= spans[n-1].hi+8 {
			spans[n-1].hi = max(spans[n-1].hi, w.addr+w.size)
			spans[n-1].names = appendName(spans[n-1].names, w.name)
			continue
		}
		spans = append(spans, span{w.addr, w.addr + w.size, []string{w.name}})
	}
	var out []MemoryRange
	for _, sp := range spans {
		for a := sp.lo; a < sp.hi; a += maxPiece {
			out = append(out, MemoryRange{Addr: a, Len: int(min(maxPiece, sp.hi-a)), From: -1, Names: sp.names})
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
					out = append(out, MemoryRange{Addr: off, Len: int(min(maxPiece, w.pointee-off)), From: i, PtrOff: int(w.addr - r.Addr), Names: []string{w.name}})
				}
				break
			}
		}
	}
	return out
}

func appendName(names []string, n string) []string {
	for _, m := range names {
		if m == n {
			return names
		}
	}
	return append(names, n)
}

// globalAddress is a global's ELF address, when it lives at a fixed one.
func globalAddress(v *dwarfx.Variable) (uint64, bool) {
	if v == nil || v.Type() == nil || v.Type().Size <= 0 {
		return 0, false
	}
	l, ok := v.Location(0)
	if !ok || l.Expr == nil {
		return 0, false
	}
	val, err := l.Eval(&dwarfx.Frame{}, 0)
	if err != nil || !val.InMemory {
		return 0, false
	}
	return val.Addr, true
}

// walkReach calls fn with the memory each outermost access of an
// expression reaches within a global without following a pointer: a global,
// then its members (.) and elements at constant indexes. What lies beyond
// (->, *, a variable index) starts from the bytes reached.
//
// A pointer cast to another pointer type, (struct T *)p, reaches p's bytes
// with the type cast to, so that what it points to is copied at the size of
// a T.
func walkReach(n expr.Node, global func(string) (uint64, *dwarfx.Type, bool), typeNamed func(string) (*dwarfx.Type, bool),
	fn func(addr uint64, t *dwarfx.Type, size int64)) {
	var reach func(n expr.Node) (uint64, *dwarfx.Type, bool)
	reach = func(n expr.Node) (uint64, *dwarfx.Type, bool) {
		switch n := n.(type) {
		case *expr.Ident:
			return global(n.Name)
		case *expr.Member:
			if n.Arrow {
				return 0, nil, false
			}
			a, t, ok := reach(n.X)
			if !ok || t == nil {
				return 0, nil, false
			}
			if u := t.Underlying(); u.Kind == dwarfx.Struct || u.Kind == dwarfx.Union {
				for _, f := range u.Fields {
					if f.Name == n.Name && f.Type != nil && f.BitSize == 0 && f.Type.Size > 0 {
						return a + uint64(f.Offset), f.Type, true
					}
				}
			}
		case *expr.Index:
			a, t, ok := reach(n.X)
			k, isNum := n.I.(*expr.Number)
			if !ok || t == nil || !isNum || k.IsFloat || k.Int < 0 {
				return 0, nil, false
			}
			if u := t.Underlying(); u.Kind == dwarfx.Array && u.Elem != nil && u.Elem.Size > 0 && (u.Count < 0 || k.Int < u.Count) {
				return a + uint64(k.Int*u.Elem.Size), u.Elem, true
			}
		}
		return 0, nil, false
	}
	var walk func(n expr.Node)
	walk = func(n expr.Node) {
		if a, t, ok := reach(n); ok {
			fn(a, t, t.Size)
			return
		}
		switch n := n.(type) {
		case *expr.Member:
			if !n.Arrow {
				// A member reach could not resolve (a bitfield, an
				// anonymous member): the whole of what it is in.
				if a, t, ok := reach(n.X); ok {
					fn(a, t, t.Size)
					return
				}
			}
			walk(n.X)
		case *expr.Index:
			walk(n.X)
			walk(n.I)
		case *expr.Cast:
			if a, t, ok := reach(n.X); ok && t.Underlying().Kind == dwarfx.Pointer {
				if as, ok := typeNamed(n.Type); ok && as.Underlying().Kind == dwarfx.Pointer {
					fn(a, as, t.Size)
					return
				}
			}
			walk(n.X)
		case *expr.Unary:
			walk(n.X)
		case *expr.Binary:
			walk(n.X)
			walk(n.Y)
		}
	}
	walk(n)
}

// NeedsHeap reports whether what the sampler reads in the executable may
// lie outside the stack and the globals GlobalMemory plans: an expression
// or rule that follows a pointer (->, *, an index), or a schema local that
// is a pointer to a scalar (sampled with its target). Collectors that
// copy memory speculatively skip that work when it is false.
func (s *Sampler) NeedsHeap(exe string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, fe := range s.expressions(exe) {
		if derefs(fe.n) {
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
	for _, fe := range s.expressions("") {
		if derefs(fe.n) {
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

// expressions lists the expressions the specs and the rules evaluate in
// processes of the executable ("": in any): spec expressions (those for the
// executable and those for a shared object it may map), rule conditions and
// captures.
func (s *Sampler) expressions(exe string) []fnExpr {
	var out []fnExpr
	for _, sp := range s.specs {
		if exe == "" || sp.MatchProg(exe) || namesObject(sp) {
			out = append(out, fnExpr{sp.Func, sp.Expr, sp})
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
				out = append(out, fnExpr{r.Func, r.Cond, nil})
			}
			for _, a := range r.Actions {
				if a.Expr != nil {
					out = append(out, fnExpr{r.Func, a.Expr, nil})
				}
			}
		}
	}
	return out
}

// fnExpr is an expression evaluated in the functions a pattern matches.
type fnExpr struct {
	fn string
	n  expr.Node
	sp *expr.Spec // the spec it comes from; nil: a rule's (the executable's)
}

// namesObject reports whether a spec's program pattern names a shared
// object ("libfoo.so", "libfoo.so.*", "*.so"): the spec is evaluated in the
// functions of the objects it matches, in any process that maps one, from
// the moment it is mapped (dlopen included).
func namesObject(sp *expr.Spec) bool { return strings.Contains(sp.Prog, ".so") }

// specMatchesObject reports whether a spec naming a shared object matches
// the object at path: its base name, or the base name without the version
// after ".so" (libfoo.so for libfoo.so.1.2).
func specMatchesObject(sp *expr.Spec, path string) bool {
	if !namesObject(sp) {
		return false
	}
	base := filepath.Base(path)
	if ok, _ := filepath.Match(sp.Prog, base); ok {
		return true
	}
	if i := strings.Index(base, ".so."); i >= 0 {
		ok, _ := filepath.Match(sp.Prog, base[:i+3])
		return ok
	}
	return false
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
	}
	return false
}
