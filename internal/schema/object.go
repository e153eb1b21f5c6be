package schema

import (
	"fmt"
	"slices"
	"strings"

	"golang.org/x/arch/x86/x86asm"

	"github.com/culprit-dev/culprit/internal/dwarfx"
)

// How functions use the objects their pointer arguments point to: which
// members (an argument register's pointer plus a constant offset) a
// function loads, stores, passes on and tests. The differential method
// uses it to find a check that decides to rewrite the state a loop that
// grew is bounded by (docs/vprof.md, "A repair that did not run").

// member is the word at offset off of the object argument arg (0..5: rdi,
// rsi, rdx, rcx, r8, r9 at the function's entry) points to.
type member struct {
	arg int8
	off int64
}

// maxMembers bounds the members tracked per function (a bit each).
const maxMembers = 64

// objCall is a direct call, or a tail jump to another function, and the
// argument whose pointer each argument register holds there (−1: none).
type objCall struct {
	k      int
	target uint64
	args   [6]int8
}

// objFacts is what one function does with its arguments' objects.
type objFacts struct {
	members []member         // id → member
	tested  map[int]mset     // conditional jump (instruction index) → members its flags came from
	writes  map[member]int64 // member stored into → bytes stored
	calls   []objCall
}

// mset is a set of members a value was computed from: d, loaded from the
// member itself (t->cap); v, loaded from memory reached through it
// (t->slot[i].state, through t->slot).
type mset struct{ d, v uint64 }

func (a mset) or(b mset) mset { return mset{a.d | b.d, a.v | b.v} }
func (a mset) all() uint64    { return a.d | a.v }

// objState is, per general-purpose register, the argument whose pointer
// it holds exactly (−1: none) and the members its value was computed
// from, and the members the flags were last set from.
type objState struct {
	ptr   [16]int8
	from  [16]mset
	flags mset
}

func (s *objState) clear(r int) {
	if r >= 0 && r < 16 {
		s.ptr[r], s.from[r] = -1, mset{}
	}
}

// merge joins the state of another path into s: a pointer both agree on,
// the members either came from. It reports whether s changed.
func (s *objState) merge(o *objState) bool {
	changed := false
	for r := 0; r < 16; r++ {
		if s.ptr[r] != o.ptr[r] && s.ptr[r] != -1 {
			s.ptr[r], changed = -1, true
		}
		if f := s.from[r].or(o.from[r]); f != s.from[r] {
			s.from[r], changed = f, true
		}
	}
	if f := s.flags.or(o.flags); f != s.flags {
		s.flags, changed = f, true
	}
	return changed
}

// objFactsOf returns what function symbol i does with its arguments'
// objects; c.mu is held.
func (c *Code) objFactsOf(i int) *objFacts {
	if f, ok := c.objects[i]; ok {
		return f
	}
	g := c.cfgOf(i)
	fa := &objFacts{tested: map[int]mset{}, writes: map[member]int64{}}
	c.objects[i] = fa
	if len(g.blocks) == 0 {
		return fa
	}
	ids := map[member]int{}
	bit := func(m member) uint64 {
		id, ok := ids[m]
		if !ok {
			if len(fa.members) >= maxMembers {
				return 0
			}
			id = len(fa.members)
			ids[m] = id
			fa.members = append(fa.members, m)
		}
		return 1 << uint(id)
	}
	in := make([]*objState, len(g.blocks))
	entry := &objState{}
	for r := range entry.ptr {
		entry.ptr[r] = -1
	}
	for j, r := range intArgRegs {
		entry.ptr[r] = int8(j)
	}
	in[g.entry] = entry
	record := false
	run := func(b int32, st objState) objState {
		bl := &g.blocks[b]
		for k := bl.first; k <= bl.last; k++ {
			c.objInsn(g, k, &st, bit, fa, record)
		}
		return st
	}
	// To a fixed point: a pointer is lost where two paths disagree, and
	// the members a value came from only grow, so this ends.
	for pass := 0; pass < 4*len(g.blocks)+8; pass++ {
		changed := false
		for b := range g.blocks {
			if in[b] == nil {
				continue
			}
			out := run(int32(b), *in[b])
			for _, s := range g.blocks[b].succ {
				if in[s] == nil {
					cp := out
					in[s] = &cp
					changed = true
				} else if in[s].merge(&out) {
					changed = true
				}
			}
		}
		if !changed {
			break
		}
	}
	record = true
	for b := range g.blocks {
		if in[b] != nil {
			run(int32(b), *in[b])
		}
	}
	return fa
}

// objInsn applies instruction k to st; with record, it notes in fa the
// members stored into, the calls and the tests.
func (c *Code) objInsn(g *cfg, k int, st *objState, bit func(member) uint64, fa *objFacts, record bool) {
	in := &g.insns[k]
	if !in.ok {
		*st = objState{ptr: [16]int8{-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1}}
		return
	}
	inst := &in.inst
	// value of a memory operand's address: the member it names, and the
	// members the address was computed from.
	memOf := func(m x86asm.Mem) (mset, member, bool) {
		b, _ := regIndex(m.Base)
		x, _ := regIndex(m.Index)
		var from mset
		if b >= 0 && b < 16 {
			from = from.or(st.from[b])
		}
		if x >= 0 && x < 16 {
			from = from.or(st.from[x])
		}
		if b >= 0 && b < 16 && st.ptr[b] >= 0 && m.Index == 0 && m.Segment == 0 {
			return from, member{st.ptr[b], m.Disp}, true
		}
		return from, member{}, false
	}
	// value of an operand read: the members it came from (a load
	// through an address computed from members is reached through them).
	valOf := func(a x86asm.Arg) mset {
		switch a := a.(type) {
		case x86asm.Reg:
			if r, _ := regIndex(a); r >= 0 && r < 16 {
				return st.from[r]
			}
		case x86asm.Mem:
			from, m, ok := memOf(a)
			v := mset{v: from.all()}
			if ok {
				v.d |= bit(m)
			}
			return v
		}
		return mset{}
	}
	switch kindOf(inst.Op) {
	case opCall, opJmp:
		tg, direct := in.target()
		if kindOf(inst.Op) == opJmp && (!direct || inRanges(g.ranges, tg)) {
			return
		}
		if record && direct {
			cl := objCall{k: k, target: tg}
			for j, r := range intArgRegs {
				cl.args[j] = st.ptr[r]
			}
			fa.calls = append(fa.calls, cl)
		}
		for r := 0; r < 16; r++ {
			if callerSaved(r) {
				st.clear(r)
			}
		}
		st.flags = mset{}
		return
	case opJcc:
		if record {
			fa.tested[k] = st.flags
		}
		return
	case opRet:
		return
	}
	name := inst.Op.String()
	n := nargs(inst)
	// Stores into a member of an argument's object.
	if n > 0 && storesTo(inst) {
		if m, ok := inst.Args[0].(x86asm.Mem); ok {
			if _, mb, ok := memOf(m); ok && record {
				size := int64(max(inst.MemBytes, 1))
				if size > fa.writes[mb] {
					fa.writes[mb] = size
				}
			}
		}
	}
	switch {
	case name == "CMP" || name == "TEST" || name == "BT":
		var f mset
		for _, a := range inst.Args[:n] {
			f = f.or(valOf(a))
		}
		st.flags = f
		return
	case name == "LEA":
		d, _ := inst.Args[0].(x86asm.Reg)
		r, _ := regIndex(d)
		m, _ := inst.Args[1].(x86asm.Mem)
		from, mb, ok := memOf(m)
		if r < 0 || r >= 16 {
			return
		}
		switch {
		case ok && mb.off == 0:
			st.ptr[r], st.from[r] = mb.arg, mset{}
		case ok:
			st.ptr[r], st.from[r] = -1, mset{d: bit(mb)}
		default:
			st.ptr[r], st.from[r] = -1, from
		}
		return
	case name == "XOR" && n == 2 && sameReg(inst.Args[0], inst.Args[1]):
		if r, _ := regIndex(inst.Args[0].(x86asm.Reg)); r >= 0 {
			st.clear(r)
		}
		st.flags = mset{}
		return
	case isMove(name) || strings.HasPrefix(name, "CMOV"):
		d, ok := inst.Args[0].(x86asm.Reg)
		if !ok || n < 2 {
			return
		}
		r, partial := regIndex(d)
		if r < 0 || r >= 16 {
			return
		}
		v := valOf(inst.Args[1])
		p := int8(-1)
		if s, ok := inst.Args[1].(x86asm.Reg); ok && name == "MOV" && s >= x86asm.RAX && s <= x86asm.R15 && d >= x86asm.RAX && d <= x86asm.R15 {
			if sr, _ := regIndex(s); sr >= 0 && sr < 16 {
				p = st.ptr[sr]
			}
		}
		if partial || strings.HasPrefix(name, "CMOV") {
			v = v.or(st.from[r])
			p = -1
		}
		st.ptr[r], st.from[r] = p, v
		return
	}
	// Anything else: a register written holds what its operands came
	// from, and sets the flags from it.
	var v mset
	for _, a := range inst.Args[:n] {
		v = v.or(valOf(a))
	}
	mask := writeMask(in)
	for r := 0; r < 16; r++ {
		if mask&(1<<uint(r)) != 0 {
			st.ptr[r], st.from[r] = -1, v
		}
	}
	st.flags = v
}

// Repair is a check that decides to rewrite the state a loop is bounded
// by: the checking function calls Callee, passing it an object of the
// type the loop's function walks, on a test of that object's members
// themselves (a count, a size: not memory reached through a member, such
// as the character under a cursor) made outside its loops, and Callee
// (or what it calls with the object) stores into members the loop's exit
// tests depend on (the members themselves, or memory reached through
// them).
type Repair struct {
	Check    string // the checking function
	Callee   string
	Ordered  bool     // the deciding test compares an order (a threshold)
	Bounds   []string // the loop's members that Callee rewrites, e.g. "t->cap"
	Tests    []string // the members the predicate's deciding test reads
	LoopFunc string
}

// Repair says whether the function holding pred decides, on a test of an
// object's members made outside its loops, to call a function that
// rewrites members the exit
// tests of a loop of the function holding loopAt depend on, the two
// functions taking the object as a pointer parameter of the same type
// (from the object's DWARF). ok is false when it does not, or the code or
// the debugging information cannot tell.
func (c *Code) Repair(loopAt, pred uint64) (Repair, bool) {
	iL, iP := c.symAt(loopAt), c.symAt(pred)
	if iL < 0 || iP < 0 || iL == iP {
		return Repair{}, false
	}
	typesL, namesL := c.objectParams(iL)
	typesP, namesP := c.objectParams(iP)
	common := false
	for _, t := range typesL {
		common = common || t != "" && slices.Contains(typesP, t)
	}
	if !common {
		return Repair{}, false
	}
	c.mu.Lock()
	fl, fp := c.objFactsOf(iL), c.objFactsOf(iP)
	gl := c.cfgOf(iL)
	gl.findLoops()
	// The members the loop's exit tests depend on.
	var bounds uint64
	for _, l := range gl.loops {
		for b := range l.body {
			bl := &gl.blocks[b]
			last := bl.last
			if !gl.insns[last].ok || kindOf(gl.insns[last].inst.Op) != opJcc {
				continue
			}
			for _, s := range bl.succ {
				if !l.body[s] {
					bounds |= fl.tested[last].all()
					break
				}
			}
		}
	}
	type cand struct {
		call   objCall
		callee int
		argP   int8
		hits   []member
	}
	var cands []cand
	for _, cl := range fp.calls {
		j := c.symAt(cl.target)
		if j < 0 || j == iP || j == iL || c.syms[j].addr != cl.target {
			continue
		}
		for jj, k := range cl.args {
			if k < 0 || int(k) >= len(typesP) || typesP[k] == "" {
				continue
			}
			w := c.objWrites(j, int8(jj), 0, map[[2]int]bool{})
			var hits []member
			for id, m := range fl.members {
				if bounds&(1<<uint(id)) == 0 || int(m.arg) >= len(typesL) || typesL[m.arg] != typesP[k] {
					continue
				}
				for wm, size := range w {
					if m.off >= wm.off && m.off < wm.off+size {
						hits = append(hits, m)
						break
					}
				}
			}
			if len(hits) > 0 {
				cands = append(cands, cand{cl, j, k, hits})
			}
		}
	}
	c.mu.Unlock()
	for _, cd := range cands {
		var tests uint64
		decided, ordered := false, false
		_, _, known := c.guardJumps(pred, c.syms[cd.callee].name, func(g *cfg, d int32, ord bool) {
			g.findLoops()
			for _, l := range g.loops {
				if l.body[d] {
					return // a loop's test: not a decision made once per call
				}
			}
			t := fp.tested[g.blocks[d].last].d // the members themselves: a count, a size
			own := uint64(0)
			for id, m := range fp.members {
				if t&(1<<uint(id)) != 0 && m.arg == cd.argP {
					own |= 1 << uint(id)
				}
			}
			if own == 0 {
				return
			}
			decided = true
			ordered = ordered || ord
			tests |= own
		})
		if !known || !decided {
			continue
		}
		r := Repair{Check: c.syms[iP].name, Callee: c.syms[cd.callee].name, Ordered: ordered, LoopFunc: c.syms[iL].name}
		for _, m := range cd.hits {
			r.Bounds = append(r.Bounds, c.memberName(iL, namesL, m))
		}
		for id, m := range fp.members {
			if tests&(1<<uint(id)) != 0 {
				r.Tests = append(r.Tests, c.memberName(iP, namesP, m))
			}
		}
		slices.Sort(r.Bounds)
		r.Bounds = slices.Compact(r.Bounds)
		slices.Sort(r.Tests)
		r.Tests = slices.Compact(r.Tests)
		return r, true
	}
	return Repair{}, false
}

// RepairsOf returns every check of the object that decides to rewrite
// the state a loop of the function holding loopAt is bounded by (Repair
// of each function symbol), by address; none when the code or the
// debugging information cannot tell. The answer is kept per function.
func (c *Code) RepairsOf(loopAt uint64) []Repair {
	iL := c.symAt(loopAt)
	if iL < 0 {
		return nil
	}
	c.mu.Lock()
	rs, ok := c.repairs[iL]
	c.mu.Unlock()
	if ok {
		return rs
	}
	if types, _ := c.objectParams(iL); slices.ContainsFunc(types, func(t string) bool { return t != "" }) {
		for i := range c.syms {
			if i == iL || i > 0 && c.syms[i].addr == c.syms[i-1].addr {
				continue
			}
			if r, ok := c.Repair(loopAt, c.syms[i].addr); ok {
				rs = append(rs, r)
			}
		}
	}
	c.mu.Lock()
	c.repairs[iL] = rs
	c.mu.Unlock()
	return rs
}

// maxWriteDepth bounds the calls objWrites follows.
const maxWriteDepth = 4

// objWrites returns the members of the object function i's argument arg
// points to that it stores into, itself or through the functions it
// calls or tail-jumps to with that pointer, to maxWriteDepth calls; c.mu
// is held.
func (c *Code) objWrites(i int, arg int8, depth int, seen map[[2]int]bool) map[member]int64 {
	out := map[member]int64{}
	key := [2]int{i, int(arg)}
	if seen[key] || depth > maxWriteDepth {
		return out
	}
	seen[key] = true
	f := c.objFactsOf(i)
	for m, size := range f.writes {
		if m.arg == arg {
			out[member{0, m.off}] = max(out[member{0, m.off}], size)
		}
	}
	for _, cl := range f.calls {
		j := c.symAt(cl.target)
		if j < 0 || c.syms[j].addr != cl.target {
			continue
		}
		for jj, k := range cl.args {
			if k != arg {
				continue
			}
			for m, size := range c.objWrites(j, int8(jj), depth+1, seen) {
				out[m] = max(out[m], size)
			}
		}
	}
	return out
}

// objectParams returns, for function symbol i, the type of each integer
// argument register's parameter when it is a pointer to a struct, union
// or class ("" otherwise) and the parameters' names, from the object's
// DWARF; nil when the function has no DWARF, is a clone GCC made (whose
// parameters may sit in other registers), is Go's (another ABI), or
// passes a parameter in a way that makes the registers uncertain (an
// aggregate by value).
func (c *Code) objectParams(i int) (types, names []string) {
	if strings.Contains(c.syms[i].name, ".") {
		return nil, nil
	}
	if c.openDWARF() == nil {
		return nil, nil
	}
	c.membersMu.Lock()
	defer c.membersMu.Unlock()
	if p, ok := c.objParams[i]; ok {
		return p[0], p[1]
	}
	defer func() { c.objParams[i] = [2][]string{types, names} }()
	fn, ok := c.dwarf.Function(c.syms[i].addr)
	if !ok || fn.IsGo() {
		// Go passes arguments in other registers (its internal ABI).
		return nil, nil
	}
	for _, p := range fn.Params() {
		t := p.Type()
		if t == nil {
			return nil, nil
		}
		u := t.Underlying()
		switch u.Kind {
		case dwarfx.Float, dwarfx.Complex:
			continue // an SSE register
		case dwarfx.Struct, dwarfx.Union, dwarfx.Class, dwarfx.Array, dwarfx.Invalid:
			return nil, nil
		}
		if len(types) == len(intArgRegs) {
			break
		}
		ty := ""
		if u.Kind == dwarfx.Pointer && u.Elem != nil {
			switch u.Elem.Underlying().Kind {
			case dwarfx.Struct, dwarfx.Union, dwarfx.Class:
				ty = t.Name
			}
		}
		types = append(types, ty)
		names = append(names, p.Name)
	}
	if types == nil {
		types = []string{}
	}
	return types, names
}

// memberName names member m of function symbol i's argument as the
// source would ("t->cap"), from the pointed-to type's fields; "t+0x8"
// when no field starts there.
func (c *Code) memberName(i int, names []string, m member) string {
	base := fmt.Sprintf("arg%d", m.arg)
	if int(m.arg) < len(names) && names[m.arg] != "" {
		base = names[m.arg]
	}
	c.membersMu.Lock()
	defer c.membersMu.Unlock()
	if c.dwarf != nil {
		if fn, ok := c.dwarf.Function(c.syms[i].addr); ok {
			k := 0
			for _, p := range fn.Params() {
				t := p.Type()
				if t == nil {
					break
				}
				if u := t.Underlying(); u.Kind == dwarfx.Float || u.Kind == dwarfx.Complex {
					continue
				}
				if k == int(m.arg) {
					if u := t.Underlying(); u.Kind == dwarfx.Pointer && u.Elem != nil {
						for _, fl := range u.Elem.Underlying().Fields {
							if fl.Offset == m.off && fl.Name != "" {
								return base + "->" + fl.Name
							}
						}
					}
					break
				}
				k++
			}
		}
	}
	return fmt.Sprintf("%s+%#x", base, m.off)
}
