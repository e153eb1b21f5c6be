package elfx

import (
	"debug/dwarf"
	"sort"
)

// FuncNode is a function with code (a DW_TAG_subprogram with addresses) or
// a call inlined into one (DW_TAG_inlined_subroutine), with the calls
// inlined directly into it. FuncWalker builds them; the symbolizer's frames
// and dwarfx's scopes are both made from these nodes, so the two agree on
// which code belongs to which function and call, and on their names.
type FuncNode struct {
	Offset  dwarf.Offset // the DIE
	Inlined bool         // an inlined call; else an out-of-line function
	Name    string       // FuncName of the DIE
	Ranges  [][2]uint64  // sorted, by the one rule of Ranges
	Entry   uint64       // DW_AT_entry_pc, else the low address

	// Where an inlined call sits in the code it was inlined into.
	CallFile   string // from the file table the walk was given
	CallLine   int
	CallColumn int

	// Outlined is set on an inlined call that is no call: the part of its
	// parent's function that GCC's partial inlining outlined (f.part.N)
	// inlined back into a copy of the function's head. Its parent is the
	// same function, and its call site is the function's declaration
	// (file, line and column of DW_AT_decl_*), where no call of it can be
	// written: GCC gives the call it makes to the part no place of its own.
	Outlined bool

	Children []*FuncNode // inlined calls directly within, in DIE order
	kids     *FuncIndex  // index of Children's ranges when there are many
}

// Contains reports whether pc lies in one of n's ranges.
func (n *FuncNode) Contains(pc uint64) bool {
	for _, r := range n.Ranges {
		if r[0] <= pc && pc < r[1] {
			return true
		}
	}
	return false
}

// Child returns the inlined call directly within n that contains pc, or
// nil.
func (n *FuncNode) Child(pc uint64) *FuncNode {
	if n.kids != nil {
		return n.kids.Find(pc)
	}
	for _, c := range n.Children {
		if c.Contains(pc) {
			return c
		}
	}
	return nil
}

// indexKids indexes the children of nodes with many inlined calls (large
// functions with everything inlined into them), recursively.
func (n *FuncNode) indexKids() {
	if len(n.Children) > 8 {
		fi := NewFuncIndex(n.Children)
		n.kids = &fi
	}
	for _, c := range n.Children {
		c.indexKids()
	}
}

type funcRange struct {
	lo, hi uint64
	n      *FuncNode
}

// FuncIndex finds the node among a set whose ranges contain an address.
type FuncIndex struct {
	r     []funcRange // sorted by lo
	maxHi []uint64    // maxHi[i] = max(r[0..i].hi)
}

// NewFuncIndex indexes the ranges of nodes.
func NewFuncIndex(nodes []*FuncNode) FuncIndex {
	var r []funcRange
	for _, n := range nodes {
		for _, rg := range n.Ranges {
			r = append(r, funcRange{rg[0], rg[1], n})
		}
	}
	sort.Slice(r, func(i, j int) bool { return r[i].lo < r[j].lo })
	m := make([]uint64, len(r))
	var hi uint64
	for i, x := range r {
		if x.hi > hi {
			hi = x.hi
		}
		m[i] = hi
	}
	return FuncIndex{r: r, maxHi: m}
}

// Find returns the node with the smallest range containing pc (a GNU C
// nested function lies inside its parent), or nil.
func (f *FuncIndex) Find(pc uint64) *FuncNode {
	i := sort.Search(len(f.r), func(i int) bool { return f.r[i].lo > pc }) - 1
	var best *funcRange
	for ; i >= 0 && f.maxHi[i] > pc; i-- {
		x := &f.r[i]
		if pc < x.hi && (best == nil || x.hi-x.lo < best.hi-best.lo) {
			best = x
		}
	}
	if best == nil {
		return nil
	}
	return best.n
}

// Ranges returns the address ranges of a DIE with code (a function, an
// inlined call, a lexical block), sorted, by one rule for every reader of
// them: empty ranges are dropped, and so, in a linked object, is a range
// starting at address 0. Address 0 of a linked executable or shared library
// holds no code (it is the ELF header or unmapped); a range there is what
// the linker leaves of a function it discarded (--gc-sections, a duplicate
// COMDAT copy of a C++ inline function): its relocations resolve to 0, so
// the function appears to start at 0 and would be found by name and claim
// the lowest addresses. In a relocatable object (relocatable, ET_REL) every
// section starts at 0 and the range is real. An error reading the ranges
// gives none.
func Ranges(d *dwarf.Data, e *dwarf.Entry, relocatable bool) [][2]uint64 {
	rs, err := d.Ranges(e)
	if err != nil {
		return nil
	}
	out := rs[:0]
	for _, r := range rs {
		if r[1] > r[0] && (r[0] != 0 || relocatable) {
			out = append(out, r)
		}
	}
	if len(out) > 1 {
		sort.Slice(out, func(a, b int) bool { return out[a][0] < out[b][0] })
	}
	return out
}

// entryPC returns a node's entry address: DW_AT_entry_pc (an address, or
// since DWARF 5 an offset from the low address), else the low address.
func entryPC(e *dwarf.Entry, rs [][2]uint64) uint64 {
	lo, hasLo := e.Val(dwarf.AttrLowpc).(uint64)
	switch v := e.Val(dwarf.AttrEntrypc).(type) {
	case uint64:
		return v
	case int64:
		if hasLo {
			return lo + uint64(v)
		}
		if len(rs) > 0 {
			return rs[0][0] + uint64(v)
		}
	}
	if hasLo {
		return lo
	}
	if len(rs) > 0 {
		return rs[0][0]
	}
	return 0
}

// FuncWalker builds the function trees of the units of one object: it
// streams each unit's DIEs once, making a FuncNode of every function with
// code and of every call inlined into one, named by FuncName. The names of
// the subprograms it meets are kept for the whole object, so naming a node
// rarely needs to read a DIE again. It is not safe for concurrent use.
type FuncWalker struct {
	d           *dwarf.Data
	isGo        bool
	relocatable bool
	names       map[dwarf.Offset]DIENames
}

// NewFuncWalker returns a walker of d. isGo is the object's IsGo;
// relocatable tells an ET_REL object (see Ranges).
func NewFuncWalker(d *dwarf.Data, isGo, relocatable bool) *FuncWalker {
	return &FuncWalker{d: d, isGo: isGo, relocatable: relocatable, names: map[dwarf.Offset]DIENames{}}
}

// Visit is called by Walk for every DIE below the unit's root, in order,
// with the DIE its parent and, when the walk made one of it, its node.
// Returning false skips the DIE's children, unless it is a node (a node's
// inlined calls are always walked).
type Visit func(e, parent *dwarf.Entry, n *FuncNode) bool

// Walk reads the DIEs below root from r, which has just returned root, and
// returns the unit's functions with code in DIE order (a nested function
// after the one it is nested in), each with its tree of inlined calls.
// files is the unit's line-table file names, indexed by DW_AT_call_file.
//
// Functions are found at any depth (namespaces, lexical blocks, nested in
// other functions) except inside types and inside DIEs without code (an
// abstract instance, an inlined call without addresses); an inlined call
// outside any function is ignored. Without visit the children of types,
// variables, parameters, call sites and DIEs without code are skipped
// unread. The error is the reader's, if the walk ended on one (the nodes
// read until then are returned). debug/dwarf may panic on malformed input;
// callers recover.
func (w *FuncWalker) Walk(r *dwarf.Reader, root *dwarf.Entry, files []string, visit Visit) ([]*FuncNode, error) {
	if !root.Children {
		return nil, nil
	}
	type frame struct {
		e     *dwarf.Entry
		n     *FuncNode // innermost node enclosing the children
		dead  bool      // no nodes below: a type or a DIE without code
		scope string    // C++: the namespaces enclosing the children ("a::b::")
		typ   bool      // inside a type: its members are named as read alone
	}
	var (
		funcs []*FuncNode
		named []*FuncNode
		stack = []frame{{e: root}}
		rerr  error
		cxx   = !w.isGo && isCXX(root)
	)
	for len(stack) > 0 {
		e, err := r.Next()
		if err != nil {
			rerr = err
			break
		}
		if e == nil {
			break
		}
		if e.Tag == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		p := &stack[len(stack)-1]
		var n *FuncNode
		switch e.Tag {
		case dwarf.TagSubprogram:
			w.note(e, cxx && !p.typ, p.scope)
			if p.dead {
				break
			}
			if rs := Ranges(w.d, e, w.relocatable); len(rs) > 0 {
				n = &FuncNode{Offset: e.Offset, Ranges: rs, Entry: entryPC(e, rs)}
				funcs = append(funcs, n)
			}
		case dwarf.TagInlinedSubroutine:
			if p.dead || p.n == nil {
				break
			}
			if rs := Ranges(w.d, e, w.relocatable); len(rs) > 0 {
				n = &FuncNode{Offset: e.Offset, Inlined: true, Ranges: rs, Entry: entryPC(e, rs)}
				if v, ok := e.Val(dwarf.AttrCallFile).(int64); ok && v >= 0 && v < int64(len(files)) {
					n.CallFile = files[v]
				}
				if v, ok := e.Val(dwarf.AttrCallLine).(int64); ok {
					n.CallLine = int(v)
				}
				if v, ok := e.Val(dwarf.AttrCallColumn).(int64); ok {
					n.CallColumn = int(v)
				}
				p.n.Children = append(p.n.Children, n)
			}
		}
		if n != nil {
			named = append(named, n)
		}
		descend := e.Children
		if visit != nil {
			if !visit(e, p.e, n) && n == nil {
				descend = false
			}
		} else if n == nil && (noCode(e.Tag) || isType(e.Tag) || p.dead) {
			descend = false
		}
		if !e.Children {
			continue
		}
		if !descend {
			r.SkipChildren()
			continue
		}
		f := frame{e: e, n: p.n, dead: p.dead, scope: p.scope, typ: p.typ || isType(e.Tag)}
		if cxx && e.Tag == dwarf.TagNamespace {
			if name, _ := e.Val(dwarf.AttrName).(string); name != "" {
				f.scope += name + "::"
			} else {
				f.scope += "(anonymous namespace)::" // as the demangler names it
			}
		}
		switch {
		case n != nil:
			f.n = n
		case noCode(e.Tag) || isType(e.Tag):
			f.dead = true
		}
		stack = append(stack, f)
	}
	for _, n := range named {
		n.Name = FuncName(n.Offset, w.isGo, w.dieNames)
	}
	if !w.isGo {
		for _, n := range funcs {
			w.markOutlined(n, files)
		}
	}
	for _, n := range funcs {
		n.indexKids()
	}
	return funcs, rerr
}

// markOutlined sets Outlined on the inlined calls in n's tree that are the
// outlined part of their parent's function (see FuncNode.Outlined).
func (w *FuncWalker) markOutlined(n *FuncNode, files []string) {
	for _, c := range n.Children {
		if c.Name == n.Name && c.Name != "" && c.CallLine > 0 {
			if d, ok := w.declOf(c.Offset); ok && d.DeclFile >= 0 && d.DeclFile < int64(len(files)) &&
				files[d.DeclFile] == c.CallFile && d.DeclLine == int64(c.CallLine) && d.DeclColumn == int64(c.CallColumn) {
				c.Outlined = true
			}
		}
		w.markOutlined(c, files)
	}
}

// declOf returns the naming attributes of the first DIE with a declaration
// line among the one at off and those it completes (at most 8 deep).
func (w *FuncWalker) declOf(off dwarf.Offset) (DIENames, bool) {
	for range 8 {
		d, ok := w.dieNames(off)
		if !ok {
			return DIENames{}, false
		}
		if d.DeclLine > 0 {
			return d, true
		}
		if d.Ref == 0 {
			return DIENames{}, false
		}
		off = d.Ref
	}
	return DIENames{}, false
}

// noCode tells the tags that, without a node made of them, hold no code of
// their own below: an abstract instance or declaration of a function, an
// inlined call without addresses, and what only describes data.
func noCode(t dwarf.Tag) bool {
	switch t {
	case dwarf.TagSubprogram, dwarf.TagInlinedSubroutine,
		dwarf.TagFormalParameter, dwarf.TagVariable, dwarf.TagCallSite, tagGNUCallSite:
		return true
	}
	return false
}

// tagGNUCallSite is DW_TAG_GNU_call_site, GCC's DW_TAG_call_site before
// DWARF 5.
const tagGNUCallSite dwarf.Tag = 0x4109

func isType(t dwarf.Tag) bool {
	switch t {
	case dwarf.TagBaseType, dwarf.TagStructType, dwarf.TagClassType, dwarf.TagUnionType,
		dwarf.TagEnumerationType, dwarf.TagArrayType, dwarf.TagSubroutineType,
		dwarf.TagTypedef, dwarf.TagPointerType, dwarf.TagConstType:
		return true
	}
	return false
}

// note keeps the naming attributes of a subprogram DIE, and whether it is
// C++ and the namespaces it is declared in (DIENames.CXX, Scope).
func (w *FuncWalker) note(e *dwarf.Entry, cxx bool, scope string) {
	if _, ok := w.names[e.Offset]; !ok {
		n := NamesOf(e)
		n.CXX, n.Scope = cxx, scope
		w.names[e.Offset] = n
	}
}

// isCXX reports whether the unit at root is C++ (DW_AT_language).
func isCXX(root *dwarf.Entry) bool {
	switch lang, _ := root.Val(dwarf.AttrLanguage).(int64); lang {
	case 0x04, 0x19, 0x1a, 0x21, 0x2a, 0x2b: // C++, C++03, C++11, C++14, C++17, C++20
		return true
	}
	return false
}

// dieNames returns the naming attributes of the DIE at off, from those kept
// or read now.
func (w *FuncWalker) dieNames(off dwarf.Offset) (DIENames, bool) {
	if n, ok := w.names[off]; ok {
		return n, n != DIENames{}
	}
	r := w.d.Reader()
	r.Seek(off)
	e, err := r.Next()
	if err != nil || e == nil || e.Offset != off {
		w.names[off] = DIENames{}
		return DIENames{}, false
	}
	n := NamesOf(e)
	w.names[off] = n
	return n, true
}
