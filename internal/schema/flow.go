package schema

import (
	"github.com/culprit-dev/culprit/internal/elfx"
	"slices"
	"strings"

	"golang.org/x/arch/x86/x86asm"

	"github.com/culprit-dev/culprit/internal/dwarfx"
)

// The tags of one function's variables, from its machine code and the
// DWARF locations of its variables at each instruction.
//
// Variables are numbered: the generator's globals 0..G-1, then the
// function's candidate locals G, G+1, ….
//
// Each basic block is simulated on its own, from an empty state: for every
// register, the variables its value was computed from in this block
// (provenance), and whether it holds a variable plus a constant (for
// steps). A register that DWARF says holds a variable at an instruction
// holds that variable, whatever the block did before (-O2 keeps variables
// in registers across blocks); at -O0 variables live in frame slots and
// reach registers by loads, which the provenance follows.

// locKind says where a variable lives at an instruction.
type locKind uint8

const (
	inReg locKind = iota + 1 // register reg (or a value computed from it alone)
	atCFA                    // memory at CFA + off
	atRBP                    // memory at rbp + off
	atRSP                    // memory at rsp + off
)

type varLoc struct {
	kind locKind
	reg  int
	off  int64
	// reg2, when not noReg, is a second register an inReg value is
	// computed from (computedFrom): the variable is in both.
	reg2 int
}

type liveLoc struct {
	id  int32
	loc varLoc
}

// affine says that a value is variable v plus d.
type affine struct {
	v  int32 // −1: none
	d  int64
	ok bool
}

type regState struct {
	vars   []int32
	aff    affine
	placed bool // written by an instruction of this block (not a call's clobber)
	known  bool // written in this block: vars is its provenance
}

// fnAnalysis is the analysis of one function.
type fnAnalysis struct {
	g      *generator
	fn     *dwarfx.Function
	code   *cfg
	locals []*dwarfx.Variable
	idx    map[*dwarfx.Variable]int32
	live   [][]liveLoc // per instruction
	tags   []Tags      // per local
	nglob  int32

	stepped map[int32][]int32 // variable → blocks where it is stepped by a constant
	tested  map[int32][]int32 // variable → blocks whose conditional jump tests it

	// comparisons of locals with constants (only when g.compares is set)
	cmps map[int32]*Comparisons

	// state of the block being simulated
	regs   regFile
	flags  []int32 // variables the last flag-setting instruction read
	cmp    *flagCmp
	pushes [][]int32
	stores []stackStore

	cfaRules map[uint64]cfaRule
}

type stackStore struct {
	off  int64
	vars []int32
}

type cfaRule struct {
	reg int
	off int64
	ok  bool
}

// Sentinel register values for evaluating memory locations symbolically:
// an address near one of them is relative to that base.
const (
	sentCFA  = 0x7000_0000_0000
	sentRBP  = 0x6000_0000_0000
	sentRSP  = 0x5000_0000_0000
	sentNear = 1 << 32
)

// classify turns a location expression into a register or a frame slot.
func classify(l dwarfx.Location) (varLoc, bool) {
	if l.Const != nil || len(l.Expr) == 0 {
		return varLoc{}, false
	}
	if r, ok := l.Register(); ok {
		if i := dwarfRegIndex(r); i != noReg {
			return varLoc{kind: inReg, reg: i, reg2: noReg}, true
		}
		return varLoc{}, false
	}
	e := l.Expr
	switch op := e[0]; {
	case op >= elfx.OpReg0 && op <= elfx.OpReg31: // then pieces: the register holds the first bytes
		if len(e) > 1 && e[1] == elfx.OpPiece {
			return varLoc{kind: inReg, reg: dwarfRegIndex(uint64(op - elfx.OpReg0)), reg2: noReg}, true
		}
	case op >= elfx.OpBreg0 && op <= elfx.OpBreg31: // k; DW_OP_stack_value: the value is reg + k
		if n := elfx.LEBLen(e[1:]); n > 0 && len(e) == 2+n && e[1+n] == elfx.OpStackValue {
			if i := dwarfRegIndex(uint64(op - elfx.OpBreg0)); i != noReg {
				return varLoc{kind: inReg, reg: i, reg2: noReg}, true
			}
		}
	}
	if rs, ok := computedFrom(e); ok {
		v := varLoc{kind: inReg, reg: dwarfRegIndex(rs[0]), reg2: noReg}
		if len(rs) == 2 {
			v.reg2 = dwarfRegIndex(rs[1])
		}
		if v.reg != noReg && (len(rs) == 1 || v.reg2 != noReg) {
			return v, true
		}
	}
	var f dwarfx.Frame
	f.CFA = sentCFA
	f.SetReg(regRBP, sentRBP)
	f.SetReg(regRSP, sentRSP)
	v, err := l.Eval(&f, 0)
	if err != nil || !v.InMemory {
		return varLoc{}, false
	}
	for _, s := range []struct {
		base uint64
		kind locKind
	}{{sentCFA, atCFA}, {sentRBP, atRBP}, {sentRSP, atRSP}} {
		if v.Addr >= s.base-sentNear && v.Addr < s.base+sentNear {
			return varLoc{kind: s.kind, off: int64(v.Addr - s.base), reg2: noReg}, true
		}
	}
	return varLoc{}, false
}

// computedFrom reports the registers whose values a location computed by
// arithmetic (DW_OP_stack_value) reads, at most two, leaving out
// constants, values at the function's entry and registers it only reads
// memory through: GCC's descriptions of a counter it turned into a
// pointer walk, i = (rdi − entry_value(rdi)) / 24, i = rsi − r8 (the
// walking pointer minus the array's start, in another register) and
// i = rdx − *(rdi + 16) (minus the start read through the object's
// pointer). The variable changes when one of those registers does, and
// its registers are where the analysis follows it (stepped in a loop,
// tested in a branch).
func computedFrom(e []byte) ([]uint64, bool) {
	if len(e) < 2 || e[len(e)-1] != elfx.OpStackValue {
		return nil, false
	}
	r := elfx.Reader{B: e[:len(e)-1], End: len(e) - 1}
	var regs []uint64
	for !r.Done() {
		op := r.U8()
		switch {
		case op >= elfx.OpBreg0 && op <= elfx.OpBreg31:
			r.SLEB()
			if r.Done() || (r.B[r.Off] != elfx.OpDeref && r.B[r.Off] != elfx.OpDerefSize) {
				if reg := uint64(op - elfx.OpBreg0); !slices.Contains(regs, reg) {
					regs = append(regs, reg)
				}
			}
		case op >= elfx.OpLit0 && op <= elfx.OpLit0+31,
			op >= elfx.OpConst1u && op <= elfx.OpConsts,
			op >= elfx.OpAnd && op <= elfx.OpXor, // arithmetic
			op == elfx.OpPlusUconst, op == elfx.OpDeref, op == elfx.OpDerefSize,
			op == elfx.OpEntryValue, op == elfx.OpGNUEntryValue,
			op == elfx.OpConvert, op == elfx.OpGNUConvert:
			if !elfx.SkipOperands(op, &r) {
				return nil, false
			}
		default:
			return nil, false
		}
		if r.Bad {
			return nil, false
		}
	}
	return regs, len(regs) >= 1 && len(regs) <= 2
}

func (g *generator) analyse(fn *dwarfx.Function) []Entry {
	fa := &fnAnalysis{g: g, fn: fn, nglob: int32(len(g.globals)), idx: map[*dwarfx.Variable]int32{},
		stepped: map[int32][]int32{}, tested: map[int32][]int32{}, cfaRules: map[uint64]cfaRule{}}
	for _, v := range fn.AllVariables() {
		if v.IsGlobal || v.Artificial || v.Type() == nil || !v.Type().IsScalar() {
			continue
		}
		if _, dup := fa.idx[v]; dup {
			continue
		}
		fa.idx[v] = int32(len(fa.locals))
		fa.locals = append(fa.locals, v)
	}
	fa.tags = make([]Tags, len(fa.locals))
	fa.code = buildCFG(g.text, fn.Ranges, fn.Entry)
	if len(fa.code.insns) == 0 {
		return nil
	}
	if g.compares != nil {
		fa.cmps = map[int32]*Comparisons{}
	}
	fa.liveness()
	fa.flow()
	fa.loops()
	for id, c := range fa.cmps {
		v := fa.locals[id-fa.nglob]
		k := Key{Function: fn.Name, Variable: v.Name, File: v.DeclFile, Line: v.DeclLine}
		if prev, ok := g.compares[k]; ok {
			prev.merge(c) // clones of one function: one variable
		} else {
			g.compares[k] = c
		}
	}
	var out []Entry
	for i, v := range fa.locals {
		if fa.tags[i] == 0 {
			continue
		}
		out = append(out, Entry{File: v.DeclFile, Function: fn.Name, Line: v.DeclLine, Variable: v.Name,
			Type: v.Type().Name, Tags: fa.tags[i]})
	}
	return out
}

// liveness finds, at each instruction, where each candidate local lives.
func (fa *fnAnalysis) liveness() {
	if len(fa.locals) == 0 {
		fa.live = make([][]liveLoc, len(fa.code.insns))
		return
	}
	type ckey struct {
		v  *dwarfx.Variable
		lo uint64
	}
	memo := map[ckey]struct {
		loc varLoc
		ok  bool
	}{}
	fa.live = make([][]liveLoc, len(fa.code.insns))
	var carried map[*dwarfx.Variable][]carriedLoc // Go: registers carrying a local beyond its list
	if fa.fn.IsGo() {
		carried = map[*dwarfx.Variable][]carriedLoc{}
	}
	for i := range fa.code.insns {
		pc := fa.code.insns[i].pc
		for _, v := range fa.fn.Variables(pc) {
			id, ok := fa.idx[v]
			if !ok {
				continue
			}
			l, ok := v.Location(pc)
			if !ok && carried != nil && v.HasLocationList() {
				ls, done := carried[v]
				if !done {
					ls = carriedIn(fa.code, v)
					carried[v] = ls
				}
				if r, in := carriedAt(ls, pc); in {
					l, ok = v.InRegister(pc, r), true
				}
			}
			if !ok {
				continue
			}
			k := ckey{v, l.Lo}
			c, seen := memo[k]
			if !seen {
				c.loc, c.ok = classify(l)
				memo[k] = c
			}
			if c.ok {
				fa.live[i] = append(fa.live[i], liveLoc{id: fa.nglob + id, loc: c.loc})
			}
		}
	}
}

func (fa *fnAnalysis) tag(ids []int32, t Tags) {
	for _, id := range ids {
		if id < fa.nglob {
			fa.g.globalTags[id] |= t
		} else {
			fa.tags[id-fa.nglob] |= t
		}
	}
}

// inReg returns the variables DWARF places in register r at instruction i.
func (fa *fnAnalysis) inReg(i, r int) []int32 {
	if i >= len(fa.live) {
		return nil
	}
	var out []int32
	for _, l := range fa.live[i] {
		if l.loc.kind == inReg && (l.loc.reg == r || l.loc.reg2 == r) {
			out = append(out, l.id)
		}
	}
	return set(out)
}

// readReg returns the variables register r holds at instruction i, and
// whether it is one of them plus a constant.
func (fa *fnAnalysis) readReg(i, r int) ([]int32, affine) {
	if r == noReg {
		return nil, affine{}
	}
	if d := fa.inReg(i, r); len(d) > 0 {
		return d, affine{v: d[0], ok: true}
	}
	// DWARF often starts a variable's location an instruction or two after
	// the value is in the register (GCC's location views): the value is
	// the variable's if a later instruction of the block, before the
	// register is written again, has the variable there.
	last := fa.code.blocks[fa.code.blockOf[i]].last
	for j := i; j <= last && j < i+16; j++ {
		if j > i {
			if d := fa.inReg(j, r); len(d) > 0 {
				return d, affine{v: d[0], ok: true}
			}
		}
		if writesReg(&fa.code.insns[j], r) {
			break
		}
	}
	st := &fa.regs[r]
	if st.known {
		return st.vars, st.aff
	}
	return nil, affine{}
}

func (fa *fnAnalysis) rule(pc uint64) cfaRule {
	if r, ok := fa.cfaRules[pc]; ok {
		return r
	}
	var r cfaRule
	if fa.g.cfi != nil {
		r.reg, r.off, r.ok = fa.g.cfi.CFARule(pc)
	}
	fa.cfaRules[pc] = r
	return r
}

// mem returns the variables a memory operand accesses as a whole (a frame
// slot or a global) and those its address is computed from.
func (fa *fnAnalysis) mem(i int, m x86asm.Mem, size int) (whole, via []int32) {
	in := &fa.code.insns[i]
	base, _ := regIndex(m.Base)
	index, _ := regIndex(m.Index)
	switch {
	case m.Base == x86asm.RIP:
		return fa.g.globalsAt(in.next()+uint64(m.Disp), size), nil
	case m.Base == 0 && m.Index == 0:
		return fa.g.globalsAt(uint64(m.Disp), size), nil
	case (base == regRBP || base == regRSP) && m.Index == 0:
		if size <= 0 {
			size = 1
		}
		r := fa.rule(in.pc)
		lo, hi := m.Disp, m.Disp+int64(size)
		for _, l := range fa.live[i] {
			var off int64
			switch {
			case l.loc.kind == atRBP && base == regRBP, l.loc.kind == atRSP && base == regRSP:
				off = l.loc.off
			case l.loc.kind == atCFA && r.ok && r.reg == base:
				off = l.loc.off + r.off // CFA = base + r.off
			default:
				continue
			}
			vsize := int64(max(fa.locals[l.id-fa.nglob].Type().Underlying().Size, 1))
			if off < hi && lo < off+vsize {
				whole = append(whole, l.id)
			}
		}
		if len(whole) > 0 {
			return set(whole), nil
		}
		if base == regRBP {
			// rbp as a general register (no frame pointer)
			v, _ := fa.readReg(i, base)
			return nil, v
		}
		return nil, nil
	}
	v1, _ := fa.readReg(i, base)
	v2, _ := fa.readReg(i, index)
	return nil, union(v1, v2)
}

// read returns the variables an operand's value comes from.
func (fa *fnAnalysis) read(i int, a x86asm.Arg) ([]int32, affine) {
	switch a := a.(type) {
	case x86asm.Reg:
		r, _ := regIndex(a)
		return fa.readReg(i, r)
	case x86asm.Mem:
		whole, via := fa.mem(i, a, fa.code.insns[i].inst.MemBytes)
		if len(whole) == 1 {
			return union(whole, via), affine{v: whole[0], ok: true}
		}
		return union(whole, via), affine{}
	}
	return nil, affine{}
}

// write records that instruction i stores vars (with affinity aff) into
// operand a; a variable that receives itself plus a non-zero constant is
// stepped.
func (fa *fnAnalysis) write(i int, a x86asm.Arg, vars []int32, aff affine, b int32) {
	switch a := a.(type) {
	case x86asm.Reg:
		r, partial := regIndex(a)
		if r == noReg || r == regRSP {
			return
		}
		st := &fa.regs[r]
		if partial && st.known {
			vars = union(st.vars, vars)
			aff = affine{}
		}
		st.vars, st.aff, st.placed, st.known = vars, aff, true, true
		if aff.ok && aff.d != 0 && slices.Contains(fa.inReg(i+1, r), aff.v) {
			fa.step(aff.v, b)
		}
	case x86asm.Mem:
		whole, _ := fa.mem(i, a, fa.code.insns[i].inst.MemBytes)
		if aff.ok && aff.d != 0 && slices.Contains(whole, aff.v) {
			fa.step(aff.v, b)
		}
		if base, _ := regIndex(a.Base); base == regRSP && a.Index == 0 && a.Disp >= 0 {
			fa.stores = append(fa.stores, stackStore{off: a.Disp, vars: vars})
		}
	}
}

func (fa *fnAnalysis) step(v int32, b int32) {
	if !slices.Contains(fa.stepped[v], b) {
		fa.stepped[v] = append(fa.stepped[v], b)
	}
}

// union returns the sorted union of two sorted sets (a or b itself when
// the other adds nothing).
func union(a, b []int32) []int32 {
	if len(b) == 0 {
		return a
	}
	if len(a) == 0 {
		return b
	}
	out := make([]int32, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && a[i] < b[j]):
			out = append(out, a[i])
			i++
		case i == len(a) || b[j] < a[i]:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	if len(out) == len(a) {
		return a
	}
	if len(out) == len(b) {
		return b
	}
	return out
}

// set makes a sorted set of ids.
func set(ids []int32) []int32 {
	if len(ids) < 2 {
		return ids
	}
	out := append([]int32(nil), ids...)
	slices.Sort(out)
	return slices.Compact(out)
}

// Instruction groups by mnemonic.
var (
	testOps = map[string]bool{"CMP": true, "TEST": true, "BT": true, "UCOMISS": true, "UCOMISD": true,
		"COMISS": true, "COMISD": true, "PTEST": true}
	flagOps = map[string]bool{"ADD": true, "ADC": true, "SUB": true, "SBB": true, "AND": true, "OR": true,
		"XOR": true, "INC": true, "DEC": true, "NEG": true, "SHL": true, "SHR": true, "SAR": true, "SAL": true,
		"IMUL": true, "MUL": true, "BSF": true, "BSR": true, "TZCNT": true, "LZCNT": true, "POPCNT": true,
		"BTS": true, "BTR": true, "BTC": true, "XADD": true, "CMPXCHG": true}
	zeroOps = map[string]bool{"XOR": true, "SUB": true, "PXOR": true, "XORPS": true, "XORPD": true}
)

func isMove(name string) bool {
	switch name {
	case "MOVSB", "MOVSW", "MOVSD", "MOVSQ", "MOVMSKPS", "MOVMSKPD", "MOVNTI":
		return false
	}
	return strings.HasPrefix(name, "MOV") || strings.HasPrefix(name, "CVT") || name == "LDDQU"
}

func nargs(in *x86asm.Inst) int {
	n := 0
	for n < len(in.Args) && in.Args[n] != nil {
		n++
	}
	return n
}

// regFile is the state of every register.
type regFile [nRegs]regState

// flow runs the simulation of the blocks to a fixed point: a block starts
// from the union of its predecessors' states at their ends (a register
// holds what it held on any path), so that a value loaded before a loop is
// known inside it. Provenance only grows, so tags found on the way are
// kept; a block's successors are simulated again when its end state
// changes.
func (fa *fnAnalysis) flow() {
	n := len(fa.code.blocks)
	out := make([]*regFile, n)
	queued := make([]bool, n)
	work := make([]int32, 0, n)
	for b := n - 1; b >= 0; b-- {
		work = append(work, int32(b))
		queued[b] = true
	}
	for steps := 0; len(work) > 0 && steps < 20*n+100; steps++ {
		b := work[len(work)-1]
		work = work[:len(work)-1]
		queued[b] = false
		var in regFile
		first := true
		for _, p := range fa.code.blocks[b].pred {
			if out[p] == nil {
				continue
			}
			if first {
				in = *out[p]
				first = false
				continue
			}
			for r := range in {
				d, s := &in[r], &out[p][r]
				d.vars = union(d.vars, s.vars)
				if d.aff != s.aff {
					d.aff = affine{}
				}
				d.placed = d.placed || s.placed
				d.known = d.known || s.known
			}
		}
		end := fa.block(b, in)
		if out[b] != nil && sameRegs(out[b], &end) {
			continue
		}
		out[b] = &end
		for _, sc := range fa.code.blocks[b].succ {
			if !queued[sc] {
				queued[sc] = true
				work = append(work, sc)
			}
		}
	}
}

func sameRegs(a, b *regFile) bool {
	for r := range a {
		x, y := &a[r], &b[r]
		if x.aff != y.aff || x.placed != y.placed || x.known != y.known || !slices.Equal(x.vars, y.vars) {
			return false
		}
	}
	return true
}

// block simulates one basic block from the state in and returns the state
// at its end.
func (fa *fnAnalysis) block(b int32, in regFile) regFile {
	fa.regs = in
	fa.flags, fa.cmp, fa.pushes, fa.stores = nil, nil, nil, nil
	bl := &fa.code.blocks[b]
	for i := bl.first; i <= bl.last; i++ {
		in := &fa.code.insns[i]
		if !in.ok {
			fa.regs = regFile{}
			fa.flags, fa.cmp = nil, nil
			continue
		}
		fa.insn(i, b)
	}
	return fa.regs
}

func (fa *fnAnalysis) insn(i int, b int32) {
	in := &fa.code.insns[i]
	inst := &in.inst
	name := inst.Op.String()
	n := nargs(inst)
	switch kindOf(inst.Op) {
	case opCall:
		tg, direct := in.target()
		fa.call(i, tg, direct, true)
		return
	case opJcc:
		if len(fa.flags) > 0 {
			fa.compared(name[1:])
			fa.tag(fa.flags, Cond)
			for _, v := range fa.flags {
				if !slices.Contains(fa.tested[v], b) {
					fa.tested[v] = append(fa.tested[v], b)
				}
			}
		}
		return
	case opJmp:
		if tg, ok := in.target(); ok && !inRanges(fa.code.ranges, tg) {
			if callee, ok := fa.g.info.Function(tg); ok && callee.Entry == tg {
				fa.call(i, tg, true, false) // a tail call
			}
		}
		return
	case opRet:
		return
	}
	switch {
	case testOps[name]:
		var vs []int32
		for k := 0; k < n; k++ {
			v, _ := fa.read(i, inst.Args[k])
			vs = union(vs, v)
		}
		fa.flags, fa.cmp = vs, nil
		if fa.cmps != nil {
			fa.cmp = fa.constCmp(i)
		}
	case strings.HasPrefix(name, "CMOV"):
		fa.compared(name[len("CMOV"):])
		fa.tag(fa.flags, Cond)
		d, _ := fa.read(i, inst.Args[0])
		s, _ := fa.read(i, inst.Args[1])
		fa.write(i, inst.Args[0], union(d, s), affine{}, b)
	case strings.HasPrefix(name, "SET") && n == 1:
		fa.compared(name[len("SET"):])
		fa.tag(fa.flags, Cond)
		fa.write(i, inst.Args[0], fa.flags, affine{}, b)
	case name == "LEA" && n == 2:
		m, ok := inst.Args[1].(x86asm.Mem)
		if !ok {
			break
		}
		whole, via := fa.mem(i, m, 1)
		base, _ := regIndex(m.Base)
		var aff affine
		if m.Index == 0 && m.Base != 0 && m.Base != x86asm.RIP && len(whole) == 0 {
			if _, a := fa.readReg(i, base); a.ok {
				aff = affine{v: a.v, d: a.d + m.Disp, ok: true}
			}
		}
		fa.write(i, inst.Args[0], union(whole, via), aff, b) // &local, &global or pointer arithmetic
	case (name == "ADD" || name == "SUB") && n == 2:
		if imm, ok := inst.Args[1].(x86asm.Imm); ok {
			d := int64(imm)
			if name == "SUB" {
				d = -d
			}
			fa.stepBy(i, inst.Args[0], d, b)
			break
		}
		if zeroOps[name] && sameReg(inst.Args[0], inst.Args[1]) {
			fa.write(i, inst.Args[0], nil, affine{}, b)
			fa.flags, fa.cmp = nil, nil
			break
		}
		fa.arith(i, inst, n, b, true)
	case (name == "INC" || name == "DEC") && n == 1:
		d := int64(1)
		if name == "DEC" {
			d = -1
		}
		fa.stepBy(i, inst.Args[0], d, b)
	case zeroOps[name] && n == 2 && sameReg(inst.Args[0], inst.Args[1]):
		fa.write(i, inst.Args[0], nil, affine{}, b)
		if flagOps[name] {
			fa.flags, fa.cmp = nil, nil
		}
	case isMove(name) && n == 2:
		s, aff := fa.read(i, inst.Args[1])
		fa.write(i, inst.Args[0], s, aff, b)
	case name == "PUSH" && n == 1:
		s, _ := fa.read(i, inst.Args[0])
		fa.pushes = append(fa.pushes, s)
	case name == "POP" && n == 1:
		fa.write(i, inst.Args[0], nil, affine{}, b)
	case name == "XCHG" && n == 2:
		a, aa := fa.read(i, inst.Args[0])
		c, ca := fa.read(i, inst.Args[1])
		fa.write(i, inst.Args[0], c, ca, b)
		fa.write(i, inst.Args[1], a, aa, b)
	case name == "CDQE" || name == "CWDE" || name == "CBW":
		s, _ := fa.readReg(i, regRAX)
		fa.write(i, x86asm.RAX, s, affine{}, b)
	case name == "CQO" || name == "CDQ" || name == "CWD":
		s, _ := fa.readReg(i, regRAX)
		fa.write(i, x86asm.RDX, s, affine{}, b)
	case name == "IMUL" && n == 3:
		s, _ := fa.read(i, inst.Args[1])
		fa.write(i, inst.Args[0], s, affine{}, b)
		fa.flags, fa.cmp = s, nil
	case n >= 1:
		fa.arith(i, inst, n, b, flagOps[name])
	}
}

// arith handles dst op= src...: the result comes from every operand.
func (fa *fnAnalysis) arith(i int, inst *x86asm.Inst, n int, b int32, setsFlags bool) {
	var vs []int32
	for k := 0; k < n; k++ {
		v, _ := fa.read(i, inst.Args[k])
		vs = union(vs, v)
	}
	switch inst.Args[0].(type) {
	case x86asm.Reg, x86asm.Mem:
		fa.write(i, inst.Args[0], vs, affine{}, b)
	}
	if setsFlags {
		fa.flags, fa.cmp = vs, nil
	}
}

// stepBy handles add/sub of a constant and inc/dec: a variable stepped in
// place, or a register that becomes a variable plus a constant.
func (fa *fnAnalysis) stepBy(i int, dst x86asm.Arg, d int64, b int32) {
	vs, aff := fa.read(i, dst)
	switch a := dst.(type) {
	case x86asm.Reg:
		r, _ := regIndex(a)
		for _, v := range fa.inReg(i, r) {
			fa.step(v, b) // the variable's own register
		}
		na := affine{}
		if aff.ok {
			na = affine{v: aff.v, d: aff.d + d, ok: true}
		}
		if r != noReg && r != regRSP {
			st := &fa.regs[r]
			st.vars, st.aff, st.placed, st.known = vs, na, true, true
			if na.ok && na.d != 0 && slices.Contains(fa.inReg(i+1, r), na.v) {
				fa.step(na.v, b)
			}
		}
	case x86asm.Mem:
		whole, _ := fa.mem(i, a, fa.code.insns[i].inst.MemBytes)
		for _, v := range whole {
			fa.step(v, b)
		}
	}
	fa.flags, fa.cmp = vs, nil
}

func sameReg(a, b x86asm.Arg) bool {
	ra, ok1 := a.(x86asm.Reg)
	rb, ok2 := b.(x86asm.Reg)
	return ok1 && ok2 && ra == rb
}

// call tags the variables in the argument registers (and stack slots) of a
// call at instruction i. A direct call to a function DWARF knows passes as
// many integer and floating-point registers as it has parameters; any other
// call, those written in this block before it.
func (fa *fnAnalysis) call(i int, target uint64, direct, clobber bool) {
	nInt, nFloat := -1, -1
	if direct {
		if callee, ok := fa.g.info.Function(target); ok && callee.Entry == target {
			nInt, nFloat = paramRegs(callee)
		}
	}
	for k, r := range intArgRegs {
		if (nInt < 0 && fa.regs[r].placed) || k < nInt {
			v, _ := fa.readReg(i, r)
			fa.tag(v, Args)
		}
	}
	for k, r := range floatArgRegs {
		if (nFloat < 0 && fa.regs[r].placed) || k < nFloat {
			v, _ := fa.readReg(i, r)
			fa.tag(v, Args)
		}
	}
	if nInt > len(intArgRegs) {
		stack := int64(8 * (nInt - len(intArgRegs)))
		for k := len(fa.pushes) - 1; k >= 0 && k >= len(fa.pushes)-(nInt-len(intArgRegs)); k-- {
			fa.tag(fa.pushes[k], Args)
		}
		for _, s := range fa.stores {
			if s.off < stack {
				fa.tag(s.vars, Args)
			}
		}
	}
	if !clobber {
		return
	}
	for r := range fa.regs {
		if callerSaved(r) {
			fa.regs[r] = regState{known: true}
		}
	}
	fa.flags, fa.cmp, fa.pushes, fa.stores = nil, nil, nil, nil
}

// paramRegs counts the integer and floating-point registers a function's
// parameters take (System V: floats and doubles in xmm registers, structs
// of up to 16 bytes in one or two integer registers, larger ones in
// memory).
func paramRegs(fn *dwarfx.Function) (nInt, nFloat int) {
	for _, p := range fn.Params() {
		t := p.Type()
		if t == nil {
			nInt++
			continue
		}
		u := t.Underlying()
		switch {
		case u.Kind == dwarfx.Float && u.Size <= 8:
			nFloat++
		case u.Kind == dwarfx.Float:
			// long double: in memory
		case u.Kind == dwarfx.Struct || u.Kind == dwarfx.Union || u.Kind == dwarfx.Class:
			if u.Size > 0 && u.Size <= 16 {
				nInt += int((u.Size + 7) / 8)
			}
		default:
			nInt++
		}
	}
	return
}

// loops tags loop induction variables: a variable stepped by a constant
// inside a natural loop, in a block that runs on every iteration (it
// dominates a latch) or that the loop's own branches test.
func (fa *fnAnalysis) loops() {
	if len(fa.stepped) == 0 {
		return
	}
	fa.code.findLoops()
	for v, blocks := range fa.stepped {
	loops:
		for _, l := range fa.code.loops {
			for _, s := range blocks {
				if !l.body[s] {
					continue
				}
				every := false
				for _, lt := range l.latches {
					every = every || fa.code.dominates(s, lt)
				}
				tested := false
				for _, tb := range fa.tested[v] {
					tested = tested || l.body[tb]
				}
				if every || tested {
					fa.tag([]int32{v}, Loop)
					break loops
				}
			}
		}
	}
}

// writesReg reports whether an instruction may change register r.
func writesReg(in *insn, r int) bool { return writeMask(in)&(1<<uint(r)) != 0 }

// Register masks: bit i is the tracked register i (DWARF 0-15, xmm 16-31).
const (
	allRegs = ^uint32(0)
	// callerSavedMask: rax, rdx, rcx, rsi, rdi, r8-r11 and every xmm.
	callerSavedMask = 1<<regRAX | 1<<regRDX | 1<<regRCX | 1<<regRSI | 1<<regRDI | 1<<8 | 1<<9 | 1<<10 | 1<<11 | 0xffff<<regXMM
	raxRDX          = 1<<regRAX | 1<<regRDX
)

// writeMask returns the registers an instruction may write, explicitly or
// implicitly; a call writes the caller-saved ones (its callee may).
func writeMask(in *insn) uint32 {
	if !in.ok {
		return allRegs
	}
	inst := &in.inst
	switch kindOf(inst.Op) {
	case opCall:
		return callerSavedMask
	case opJcc:
		if strings.HasPrefix(inst.Op.String(), "LOOP") {
			return 1 << regRCX
		}
		return 0
	case opJmp, opRet:
		return 0
	}
	name := inst.Op.String()
	if testOps[name] || name == "PUSH" {
		return 0
	}
	var m uint32
	switch name {
	case "MUL", "DIV", "IDIV", "CQO", "CDQ", "CWD", "RDTSC", "XGETBV", "RDMSR", "CMPXCHG8B", "CMPXCHG16B":
		m |= raxRDX
	case "IMUL":
		if nargs(inst) == 1 {
			m |= raxRDX
		}
	case "CDQE", "CWDE", "CBW", "CMPXCHG", "LAHF":
		m |= 1 << regRAX
	case "RDTSCP":
		m |= raxRDX | 1<<regRCX
	case "CPUID":
		m |= raxRDX | 1<<regRCX | 1<<regRBX
	case "SYSCALL":
		m |= 1<<regRAX | 1<<regRCX | 1<<11
	case "LEAVE":
		m |= 1<<regRBP | 1<<regRSP
	case "MOVSB", "MOVSW", "MOVSD", "MOVSQ", "STOSB", "STOSW", "STOSD", "STOSQ", "LODSB", "LODSW", "LODSD", "LODSQ",
		"SCASB", "SCASW", "SCASD", "SCASQ", "CMPSB", "CMPSW", "CMPSD", "CMPSQ":
		if _, xmm := inst.Args[0].(x86asm.Reg); !xmm { // (CMPSD and MOVSD with registers are SSE)
			m |= 1<<regRSI | 1<<regRDI | 1<<regRCX | 1<<regRAX
		}
	case "XCHG", "XADD":
		if a, ok := inst.Args[1].(x86asm.Reg); ok {
			if i, _ := regIndex(a); i != noReg {
				m |= 1 << uint(i)
			}
		}
	}
	if a, ok := inst.Args[0].(x86asm.Reg); ok {
		if i, _ := regIndex(a); i != noReg {
			m |= 1 << uint(i)
		} else if a >= x86asm.X16 && a <= x86asm.X31 || a >= x86asm.Y0 {
			m |= 0xffff << regXMM // (AVX registers alias xmm)
		}
	}
	return m
}
