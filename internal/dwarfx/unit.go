package dwarfx

import (
	"github.com/culprit-dev/culprit/internal/elfx"
	"sort"

	"debug/dwarf"
	"encoding/binary"
	"sync"
	"sync/atomic"
)

// unit is one compilation unit. The fields above once are set when the
// Info is opened; parse fills the rest on first use.
type unit struct {
	info           *Info
	hdrOff, dieOff dwarf.Offset
	version        int
	addrSize       int
	dwarf64        bool
	name, compDir  string
	lowPC          uint64 // base address of location lists
	addrBase       uint64
	hasAddrBase    bool
	loclistsBase   uint64
	hasLines       bool
	lang           int64 // DW_AT_language

	once    sync.Once
	parsed  atomic.Bool // set when parse is done; err is then final
	err     error
	fns     []*Function
	fnIdx   ivIndex
	globals []*Variable
	files   []string

	// During parse only.
	byOff map[dwarf.Offset]*die
	nodes map[dwarf.Offset]*elfx.FuncNode // functions with code and inlined calls, by DIE
}

// die is a DIE with its children, built while parsing a unit.
type die struct {
	*dwarf.Entry
	kids []*die
}

// readTree reads the DIE at off and its descendants. Callers hold i.mu.
func (i *Info) readTree(off dwarf.Offset, byOff map[dwarf.Offset]*die) (*die, error) {
	r := i.d.Reader()
	r.Seek(off)
	var root *die
	var stack []*die
	for {
		e, err := r.Next()
		if err != nil {
			return root, err
		}
		if e == nil {
			return root, nil
		}
		if e.Tag == 0 { // end of siblings
			if len(stack) == 0 {
				return root, nil
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return root, nil
			}
			continue
		}
		d := &die{Entry: e}
		byOff[e.Offset] = d
		if root == nil {
			root = d
		} else if len(stack) > 0 {
			p := stack[len(stack)-1]
			p.kids = append(p.kids, d)
		}
		if e.Children {
			stack = append(stack, d)
		} else if len(stack) == 0 {
			return root, nil
		}
	}
}

// parse reads the unit's functions, scopes and variables once.
func (u *unit) parse() {
	u.once.Do(func() {
		i := u.info
		i.mu.Lock()
		defer i.mu.Unlock()
		defer func() {
			if r := recover(); r != nil { // debug/dwarf on malformed input
				u.err = bad("unit at %#x: %v", u.hdrOff, r)
				u.fns, u.globals, u.fnIdx = nil, nil, ivIndex{}
			}
			u.byOff, u.nodes = nil, nil
			u.parsed.Store(true)
		}()
		root, err := u.readUnit()
		u.err = err
		if root == nil {
			u.byOff, u.nodes = nil, nil
			return
		}
		u.walkTop(root)
		for k, fn := range u.fns {
			for _, rg := range fn.Ranges {
				u.fnIdx.add(rg[0], rg[1], k)
			}
		}
		u.fnIdx.build()
		u.byOff, u.nodes = nil, nil
	})
}

// readUnit reads the unit's DIEs into byOff, as a tree under the returned
// root, and its functions and inlined calls into nodes, in the one walk the
// symbolizer's inline tree is built by. Callers hold i.mu.
func (u *unit) readUnit() (*die, error) {
	i := u.info
	u.byOff = map[dwarf.Offset]*die{}
	u.nodes = map[dwarf.Offset]*elfx.FuncNode{}
	r := i.d.Reader()
	r.Seek(u.dieOff)
	e, err := r.Next()
	if err != nil || e == nil {
		return nil, err
	}
	root := &die{Entry: e}
	u.byOff[e.Offset] = root
	if u.hasLines {
		if lr, err := i.d.LineReader(e); err == nil && lr != nil {
			for _, f := range lr.Files() {
				name := ""
				if f != nil {
					name = f.Name
				}
				u.files = append(u.files, name)
			}
		}
	}
	_, err = i.walk.Walk(r, e, u.files, func(e, parent *dwarf.Entry, n *elfx.FuncNode) bool {
		d := &die{Entry: e}
		u.byOff[e.Offset] = d
		if p := u.byOff[parent.Offset]; p != nil {
			p.kids = append(p.kids, d)
		}
		if n != nil {
			u.nodes[e.Offset] = n
		}
		return true
	})
	return root, err
}

// walkTop visits the children of the unit (and of namespaces).
func (u *unit) walkTop(d *die) {
	for _, k := range d.kids {
		switch k.Tag {
		case dwarf.TagSubprogram:
			u.addFunction(k)
		case dwarf.TagVariable:
			if v := u.newGlobal(k); v != nil {
				u.globals = append(u.globals, v)
			}
		case dwarf.TagNamespace, dwarf.TagModule:
			u.walkTop(k)
		}
	}
}

func (u *unit) function(pc uint64) *Function {
	u.parse()
	if k := u.fnIdx.find(pc); k >= 0 {
		return u.fns[k]
	}
	return nil
}

// ref follows a reference attribute to its DIE, in this unit or another.
func (u *unit) ref(d *die, attr dwarf.Attr) *die {
	off, ok := d.Val(attr).(dwarf.Offset)
	if !ok {
		return nil
	}
	return u.dieAt(off)
}

// dieAt returns the DIE at off, in this unit or another.
func (u *unit) dieAt(off dwarf.Offset) *die {
	if t := u.byOff[off]; t != nil {
		return t
	}
	i := u.info
	if t := i.foreign[off]; t != nil {
		return t
	}
	t, _ := i.readTree(off, i.foreign)
	if t == nil || t.Offset != off {
		return nil
	}
	return t
}

// origin returns the DIE that d completes: its abstract origin or the
// declaration it specifies.
func (u *unit) origin(d *die) *die {
	if t := u.ref(d, dwarf.AttrAbstractOrigin); t != nil {
		return t
	}
	return u.ref(d, dwarf.AttrSpecification)
}

// attr returns attribute a of d or of the DIEs d completes.
func (u *unit) attr(d *die, a dwarf.Attr) any {
	for n := 0; d != nil && n < 8; n++ {
		if v := d.Val(a); v != nil {
			return v
		}
		d = u.origin(d)
	}
	return nil
}

func (u *unit) str(d *die, a dwarf.Attr) string {
	s, _ := u.attr(d, a).(string)
	return s
}

func (u *unit) decl(d *die) (string, int) {
	var file string
	if n, ok := u.attr(d, dwarf.AttrDeclFile).(int64); ok && n >= 0 && n < int64(len(u.files)) {
		file = u.files[n]
	}
	line, _ := u.attr(d, dwarf.AttrDeclLine).(int64)
	return file, int(line)
}

func hasPC(d *die) bool {
	return d.Val(dwarf.AttrLowpc) != nil || d.Val(dwarf.AttrRanges) != nil
}

// ranges returns the address ranges of a lexical block by the rule of
// functions and inlined calls (elfx.Ranges).
func (u *unit) ranges(d *die) [][2]uint64 {
	return elfx.Ranges(u.info.d, d.Entry, u.info.relocatable)
}

// addFunction records d if it is a concrete function with code.
func (u *unit) addFunction(d *die) {
	n := u.nodes[d.Offset]
	if n == nil {
		return
	}
	rs := n.Ranges
	fn := &Function{
		Name:    n.Name,
		Linkage: u.str(d, dwarf.AttrLinkageName),
		Ranges:  rs,
		Entry:   n.Entry,
		Unit:    u.name,
		u:       u,
	}
	if fn.Linkage == "" {
		fn.Linkage = u.str(d, elfx.AttrMIPSLinkageName)
	}
	if n := u.str(d, dwarf.AttrName); n != fn.Name {
		fn.dwName = n
	}
	fn.DeclFile, fn.DeclLine = u.decl(d)
	fn.frameBase = u.locAttr(d, dwarf.AttrFrameBase)
	fn.resultOff, _ = u.attr(d, dwarf.AttrType).(dwarf.Offset)
	fn.ctx = exprCtx{u: u, fn: fn}
	fn.root = &scope{ranges: rs}
	fn.ids[0] = d.Offset
	fn.ids[1], _ = d.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset)
	fn.ids[2], _ = d.Val(dwarf.AttrSpecification).(dwarf.Offset)
	if a := u.dieAt(fn.ids[1]); a != nil && fn.ids[2] == 0 {
		fn.ids[2], _ = a.Val(dwarf.AttrSpecification).(dwarf.Offset)
	}
	u.fns = append(u.fns, fn)
	u.fill(fn, fn.root, d, nil)
	sort.Slice(fn.calls, func(i, j int) bool { return fn.calls[i].Return < fn.calls[j].Return })
	fn.root.index()
	for _, v := range fn.root.vars {
		if v.IsParam {
			fn.params = append(fn.params, v)
		}
	}
}

// fill adds the variables and nested scopes of DIE d to sc.
func (u *unit) fill(fn *Function, sc *scope, d *die, inl *Inline) {
	var refd map[dwarf.Offset]bool
	for _, k := range d.kids {
		if ao, ok := k.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset); ok {
			if refd == nil {
				refd = map[dwarf.Offset]bool{}
			}
			refd[ao] = true
		}
		switch k.Tag {
		case dwarf.TagFormalParameter, dwarf.TagVariable:
			if v := u.newLocal(fn, inl, k); v != nil {
				v.scope = sc
				sc.vars = append(sc.vars, v)
			}
		case dwarf.TagLexDwarfBlock:
			if !hasPC(k) {
				// As gdb: a block without addresses does not scope
				// its children.
				u.fill(fn, sc, k, inl)
				continue
			}
			rs := u.ranges(k)
			if len(rs) == 0 {
				continue
			}
			c := &scope{ranges: rs, parent: sc}
			u.fill(fn, c, k, inl)
			sc.kids = append(sc.kids, c)
		case dwarf.TagInlinedSubroutine:
			n := u.nodes[k.Offset]
			if n == nil {
				continue
			}
			rs := n.Ranges
			in := &Inline{
				Name:       n.Name,
				CallFile:   n.CallFile,
				CallLine:   n.CallLine,
				CallColumn: n.CallColumn,
				Entry:      n.Entry,
				Ranges:     rs,
				Parent:     inl,
				Func:       fn,
			}
			c := &scope{ranges: rs, parent: sc, inline: in}
			u.fill(fn, c, k, in)
			sc.kids = append(sc.kids, c)
		case dwarf.TagSubprogram:
			u.addFunction(k) // a nested function (GNU C)
		case dwarf.TagCallSite, tagGNUCallSite:
			if c, ok := u.callSite(fn, k); ok {
				fn.calls = append(fn.calls, c)
			}
		}
	}
	// Variables of the abstract instance that this concrete one does not
	// mention exist here too, without a location (as gdb's
	// inherit_abstract_dies).
	if a := u.ref(d, dwarf.AttrAbstractOrigin); a != nil {
		u.inherit(fn, sc, a, refd, inl, 0)
	}
}

func (u *unit) inherit(fn *Function, sc *scope, a *die, refd map[dwarf.Offset]bool, inl *Inline, depth int) {
	if depth > 16 {
		return
	}
	for _, k := range a.kids {
		if refd[k.Offset] {
			continue
		}
		switch k.Tag {
		case dwarf.TagFormalParameter, dwarf.TagVariable:
			if v := u.newLocal(fn, inl, k); v != nil {
				v.scope = sc
				sc.vars = append(sc.vars, v)
			}
		case dwarf.TagLexDwarfBlock:
			u.inherit(fn, sc, k, nil, inl, depth+1)
		}
	}
}

// newLocal makes a parameter or local variable of fn.
func (u *unit) newLocal(fn *Function, inl *Inline, d *die) *Variable {
	if b, _ := d.Val(dwarf.AttrDeclaration).(bool); b {
		return nil // an extern declaration inside a block
	}
	v := u.newVar(d)
	if v == nil {
		return nil
	}
	v.IsParam = d.Tag == dwarf.TagFormalParameter
	v.Func, v.Inline = fn, inl
	if v.DeclFile == "" && inl == nil {
		// Go gives a local its line only: it is declared in its
		// function's file.
		v.DeclFile = fn.DeclFile
	}
	v.ctx = &fn.ctx
	if v.loc.kind == locExpr && len(v.loc.expr) > 0 && (v.loc.expr[0] == elfx.OpAddr || v.loc.expr[0] == elfx.OpAddrx) {
		v.IsGlobal = true // a static local
		u.globals = append(u.globals, v)
	}
	return v
}

// newGlobal makes a file-scope variable if d defines one with a location
// or a constant value.
func (u *unit) newGlobal(d *die) *Variable {
	if b, _ := d.Val(dwarf.AttrDeclaration).(bool); b {
		return nil
	}
	v := u.newVar(d)
	if v == nil || v.loc.kind == locNone {
		return nil
	}
	v.IsGlobal = true
	v.IsExternal, _ = u.attr(d, dwarf.AttrExternal).(bool)
	v.ctx = &exprCtx{u: u}
	return v
}

func (u *unit) newVar(d *die) *Variable {
	name := u.str(d, dwarf.AttrName)
	if name == "" {
		return nil
	}
	v := &Variable{Name: name, u: u}
	v.typeOff, _ = u.attr(d, dwarf.AttrType).(dwarf.Offset)
	v.DeclFile, v.DeclLine = u.decl(d)
	v.Artificial, _ = d.Val(dwarf.AttrArtificial).(bool)
	v.loc = u.locAttr(d, dwarf.AttrLocation)
	if v.loc.kind == locNone {
		// A constant may sit on the DIE or on its abstract origin.
		for o, n := d, 0; o != nil && n < 8; o, n = u.origin(o), n+1 {
			if f := o.AttrField(dwarf.AttrConstValue); f != nil {
				v.loc = attrLoc{kind: locConst, expr: constBytes(f.Val)}
				break
			}
		}
	}
	return v
}

func constBytes(val any) []byte {
	switch c := val.(type) {
	case int64:
		b := make([]byte, 8)
		binary.LittleEndian.PutUint64(b, uint64(c))
		return b
	case uint64:
		b := make([]byte, 8)
		binary.LittleEndian.PutUint64(b, c)
		return b
	case []byte:
		return c
	case string:
		return append([]byte(c), 0)
	}
	return []byte{}
}

// locAttr reads a location-valued attribute.
func (u *unit) locAttr(d *die, a dwarf.Attr) attrLoc {
	f := d.AttrField(a)
	if f == nil {
		return attrLoc{}
	}
	switch v := f.Val.(type) {
	case []byte:
		if len(v) == 0 {
			return attrLoc{} // an empty location: optimized out
		}
		return attrLoc{kind: locExpr, expr: v}
	case int64:
		if f.Class == dwarf.ClassLocListPtr || f.Class == dwarf.ClassLocList {
			return attrLoc{kind: locList, off: uint64(v), lazy: &lazyList{}}
		}
	case uint64:
		if f.Class == dwarf.ClassLocList { // DW_FORM_loclistx
			off, ok := u.loclistx(v)
			if !ok {
				return attrLoc{kind: locBad}
			}
			return attrLoc{kind: locList, off: off, lazy: &lazyList{}}
		}
	}
	return attrLoc{kind: locBad}
}

// loclistx resolves a DW_FORM_loclistx index through DW_AT_loclists_base.
func (u *unit) loclistx(idx uint64) (uint64, bool) {
	sz := uint64(4)
	if u.dwarf64 {
		sz = 8
	}
	b := u.info.sec.loclists
	p := u.loclistsBase + idx*sz
	if idx > uint64(len(b)) || p+sz > uint64(len(b)) || p < u.loclistsBase {
		return 0, false
	}
	var off uint64
	if sz == 4 {
		off = uint64(binary.LittleEndian.Uint32(b[p:]))
	} else {
		off = binary.LittleEndian.Uint64(b[p:])
	}
	return u.loclistsBase + off, true
}

// debugAddr reads entry idx of the unit's .debug_addr table.
func (u *unit) debugAddr(idx uint64) (uint64, error) {
	b := u.info.sec.addr
	if !u.hasAddrBase {
		return 0, bad("DW_OP_addrx without DW_AT_addr_base")
	}
	sz := uint64(u.addrSize)
	if sz != 4 && sz != 8 {
		return 0, bad("address size %d", sz)
	}
	p := u.addrBase + idx*sz
	if idx > uint64(len(b)) || p < u.addrBase || p+sz > uint64(len(b)) {
		return 0, bad(".debug_addr index %d out of range", idx)
	}
	if sz == 4 {
		return uint64(binary.LittleEndian.Uint32(b[p:])), nil
	}
	return binary.LittleEndian.Uint64(b[p:]), nil
}

// baseType reads the DW_TAG_base_type at unit-relative offset off.
func (u *unit) baseType(off uint64) (t elfx.BaseType, err error) {
	i := u.info
	abs := u.hdrOff + dwarf.Offset(off)
	if off >= uint64(len(i.sec.info)) || abs < u.hdrOff {
		return elfx.BaseType{}, bad("base type offset %#x", off)
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	defer func() {
		if r := recover(); r != nil {
			t, err = elfx.BaseType{}, bad("base type at %#x: %v", abs, r)
		}
	}()
	if t, ok := i.baseTypes[abs]; ok {
		return t, nil
	}
	r := i.d.Reader()
	r.Seek(abs)
	e, err := r.Next()
	if err != nil || e == nil || e.Offset != abs || e.Tag != dwarf.TagBaseType {
		return elfx.BaseType{}, bad("no base type at %#x", abs)
	}
	enc, _ := e.Val(dwarf.AttrEncoding).(int64)
	size, _ := e.Val(dwarf.AttrByteSize).(int64)
	if size <= 0 || size > 255 || enc <= 0 || enc > 255 {
		return elfx.BaseType{}, bad("base type at %#x: size %d encoding %d", abs, size, enc)
	}
	t = elfx.BaseType{Enc: uint8(enc), Size: uint8(size)}
	i.baseTypes[abs] = t
	return t, nil
}

// parsedErr returns the unit's parse error if it has been parsed.
func (u *unit) parsedErr() error {
	if !u.parsed.Load() {
		return nil
	}
	return u.err
}

// GCC's call sites before DWARF 5 (DW_TAG_GNU_call_site, ...).
const (
	tagGNUCallSite          dwarf.Tag  = 0x4109
	tagGNUCallSiteParameter dwarf.Tag  = 0x410a
	attrGNUCallSiteValue    dwarf.Attr = 0x2111
)

// callSite reads a call site DIE: its return address (DW_AT_call_return_pc;
// DW_AT_low_pc of a GNU call site), the callee it names (DW_AT_call_origin;
// DW_AT_abstract_origin of a GNU one) and the values of the register
// parameters.
func (u *unit) callSite(fn *Function, d *die) (CallSite, bool) {
	c := CallSite{fn: fn}
	ret, ok := d.Val(dwarf.AttrCallReturnPC).(uint64)
	if !ok {
		if ret, ok = d.Val(dwarf.AttrLowpc).(uint64); !ok {
			return c, false
		}
	}
	c.Return = ret
	c.origin, _ = d.Val(dwarf.AttrCallOrigin).(dwarf.Offset)
	if c.origin == 0 {
		c.origin, _ = d.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset)
	}
	// A declaration in this unit of a function defined in another is
	// matched by name.
	for o, depth := u.dieAt(c.origin), 0; o != nil && depth < 4; depth++ {
		if n := u.str(o, dwarf.AttrLinkageName); n != "" {
			c.originName = n
			break
		}
		if n := u.str(o, dwarf.AttrName); n != "" {
			c.originName = n
			break
		}
		next := u.ref(o, dwarf.AttrAbstractOrigin)
		if next == nil {
			next = u.ref(o, dwarf.AttrSpecification)
		}
		o = next
	}
	for _, k := range d.kids {
		if k.Tag != dwarf.TagCallSiteParameter && k.Tag != tagGNUCallSiteParameter {
			continue
		}
		loc, _ := k.Val(dwarf.AttrLocation).([]byte)
		val, _ := k.Val(dwarf.AttrCallValue).([]byte)
		if val == nil {
			val, _ = k.Val(attrGNUCallSiteValue).([]byte)
		}
		reg, ok := elfx.EntryReg(loc)
		if !ok || len(val) == 0 {
			continue
		}
		c.params = append(c.params, callParam{reg: reg, value: val})
	}
	return c, true
}
