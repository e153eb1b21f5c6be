package schema

import (
	"debug/elf"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"golang.org/x/arch/x86/x86asm"

	"github.com/culprit-dev/culprit/internal/dwarfx"
)

// Machine code: the executable sections of an ELF file, decoded one
// function at a time into instructions, basic blocks, dominators and
// natural loops.

type textSec struct {
	addr uint64
	data []byte
}

// text holds the executable sections of an ELF file.
type text struct {
	secs []textSec // sorted by address
}

func loadText(f *elf.File) (*text, error) {
	t := &text{}
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_EXECINSTR == 0 || s.Type == elf.SHT_NOBITS || s.Size == 0 {
			continue
		}
		b, err := s.Data()
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", s.Name, err)
		}
		t.secs = append(t.secs, textSec{addr: s.Addr, data: b})
	}
	if len(t.secs) == 0 {
		return nil, fmt.Errorf("no executable code")
	}
	sort.Slice(t.secs, func(i, j int) bool { return t.secs[i].addr < t.secs[j].addr })
	return t, nil
}

// bytes returns the code in [lo, hi), or nil when it is not inside one
// executable section.
func (t *text) bytes(lo, hi uint64) []byte {
	for _, s := range t.secs {
		if lo >= s.addr && hi <= s.addr+uint64(len(s.data)) && lo <= hi {
			return s.data[lo-s.addr : hi-s.addr]
		}
	}
	return nil
}

// insn is one decoded instruction; ok is false for bytes that do not
// decode (one byte is skipped).
type insn struct {
	pc   uint64
	size int
	inst x86asm.Inst
	ok   bool
}

func (in *insn) next() uint64 { return in.pc + uint64(in.size) }

// bblock is a basic block: instructions [first, last] of the function,
// addresses [start, end).
type bblock struct {
	first, last int
	start, end  uint64
	succ, pred  []int32
}

// cfg is the control-flow graph of one function.
type cfg struct {
	ranges  [][2]uint64
	insns   []insn
	blocks  []bblock
	blockOf []int32 // per instruction
	entry   int32   // block holding the function's entry

	idom       []int32 // immediate dominators; root = len(blocks) (a virtual root)
	loops      []loop
	loopsFound bool // findLoops ran: loops holds them all, none when nil
}

// loop is a natural loop: a header, the blocks of its body (header
// included) and the latches, whose edges back to the header close it.
type loop struct {
	header  int32
	body    map[int32]bool
	latches []int32
}

// opKind classifies instructions for control flow.
type opKind uint8

const (
	opOther opKind = iota
	opJcc          // conditional jump (loop, jrcxz included)
	opJmp
	opCall
	opRet // ret, ud2, hlt: no successor
)

var (
	opKindsMu sync.Mutex
	opKinds   = map[x86asm.Op]opKind{}
)

func kindOf(op x86asm.Op) opKind {
	opKindsMu.Lock()
	defer opKindsMu.Unlock()
	if k, ok := opKinds[op]; ok {
		return k
	}
	name := op.String()
	k := opOther
	switch {
	case op == x86asm.JMP || op == x86asm.LJMP:
		k = opJmp
	case op == x86asm.CALL || op == x86asm.LCALL:
		k = opCall
	case op == x86asm.RET || op == x86asm.LRET || op == x86asm.IRET || op == x86asm.IRETD || op == x86asm.IRETQ ||
		op == x86asm.UD2 || op == x86asm.HLT || op == x86asm.UD1 || op == x86asm.UD0:
		k = opRet
	case strings.HasPrefix(name, "J") || strings.HasPrefix(name, "LOOP"):
		k = opJcc
	}
	opKinds[op] = k
	return k
}

// target returns the destination of a direct jump or call.
func (in *insn) target() (uint64, bool) {
	if !in.ok {
		return 0, false
	}
	if r, ok := in.inst.Args[0].(x86asm.Rel); ok {
		return in.next() + uint64(int64(r)), true
	}
	return 0, false
}

func inRanges(rs [][2]uint64, pc uint64) bool {
	for _, r := range rs {
		if pc >= r[0] && pc < r[1] {
			return true
		}
	}
	return false
}

// decode disassembles the ranges of a function.
func decode(t *text, ranges [][2]uint64) []insn {
	var out []insn
	for _, r := range ranges {
		b := t.bytes(r[0], r[1])
		if b == nil {
			continue
		}
		for off := 0; off < len(b); {
			in, err := x86asm.Decode(b[off:], 64)
			pc := r[0] + uint64(off)
			if err != nil || in.Len <= 0 {
				out = append(out, insn{pc: pc, size: 1})
				off++
				continue
			}
			out = append(out, insn{pc: pc, size: in.Len, inst: in, ok: true})
			off += in.Len
		}
	}
	return out
}

// buildCFG splits a function's code into basic blocks: a block starts at
// the entry, at each range start, at every jump target inside the function
// and after every jump, return or undecodable byte.
func buildCFG(t *text, ranges [][2]uint64, entry uint64) *cfg {
	rs := append([][2]uint64(nil), ranges...)
	sort.Slice(rs, func(i, j int) bool { return rs[i][0] < rs[j][0] })
	g := &cfg{ranges: rs, insns: decode(t, rs), entry: -1}
	if len(g.insns) == 0 {
		return g
	}
	leader := map[uint64]bool{entry: true}
	for _, r := range rs {
		leader[r[0]] = true
	}
	for i := range g.insns {
		in := &g.insns[i]
		if !in.ok {
			leader[in.next()] = true
			continue
		}
		switch kindOf(in.inst.Op) {
		case opJcc, opJmp:
			if tg, ok := in.target(); ok && inRanges(rs, tg) {
				leader[tg] = true
			}
			leader[in.next()] = true
		case opRet:
			leader[in.next()] = true
		}
	}
	g.blockOf = make([]int32, len(g.insns))
	at := map[uint64]int32{}
	for i := range g.insns {
		in := &g.insns[i]
		if i == 0 || leader[in.pc] || g.insns[i-1].next() != in.pc {
			g.blocks = append(g.blocks, bblock{first: i, start: in.pc})
			at[in.pc] = int32(len(g.blocks) - 1)
		}
		b := &g.blocks[len(g.blocks)-1]
		b.last, b.end = i, in.next()
		g.blockOf[i] = int32(len(g.blocks) - 1)
	}
	if e, ok := at[entry]; ok {
		g.entry = e
	} else {
		g.entry = 0
	}
	edge := func(from, to int32) {
		g.blocks[from].succ = append(g.blocks[from].succ, to)
		g.blocks[to].pred = append(g.blocks[to].pred, from)
	}
	for bi := range g.blocks {
		b := &g.blocks[bi]
		in := &g.insns[b.last]
		fall := true
		if in.ok {
			switch kindOf(in.inst.Op) {
			case opJcc:
				if tg, ok := in.target(); ok {
					if to, ok := at[tg]; ok {
						edge(int32(bi), to)
					}
				}
			case opJmp:
				fall = false
				if tg, ok := in.target(); ok {
					if to, ok := at[tg]; ok {
						edge(int32(bi), to)
					}
				}
			case opRet:
				fall = false
			}
		}
		if fall && bi+1 < len(g.blocks) && g.blocks[bi+1].start == b.end {
			edge(int32(bi), int32(bi+1))
		}
	}
	// Alignment padding after a jump or return (nops, int3) is never
	// executed: its fall-through edge would make the next block look
	// reachable from outside the function's flow.
	for bi := range g.blocks {
		b := &g.blocks[bi]
		if int32(bi) == g.entry || len(b.pred) > 0 || !g.padding(b) {
			continue
		}
		for _, s := range b.succ {
			t := &g.blocks[s]
			t.pred = slices.DeleteFunc(t.pred, func(p int32) bool { return p == int32(bi) })
		}
		b.succ = nil
	}
	return g
}

// padding reports whether a block holds only nops and int3s.
func (g *cfg) padding(b *bblock) bool {
	for i := b.first; i <= b.last; i++ {
		in := &g.insns[i]
		if !in.ok || (in.inst.Op != x86asm.NOP && in.inst.Op != x86asm.INT) {
			return false
		}
	}
	return true
}

// dominators computes immediate dominators (Cooper, Harvey and Kennedy's
// iterative algorithm) from a virtual root whose successors are the entry
// block and every block without predecessors (reached only through
// indirect jumps), so that every block has one.
func (g *cfg) dominators() {
	n := len(g.blocks)
	root := int32(n)
	succ := func(b int32) []int32 {
		if b == root {
			out := []int32{g.entry}
			for i := range g.blocks {
				if len(g.blocks[i].pred) == 0 && int32(i) != g.entry {
					out = append(out, int32(i))
				}
			}
			return out
		}
		return g.blocks[b].succ
	}
	// Reverse postorder from the root.
	order := make([]int32, 0, n+1)
	seen := make([]bool, n+1)
	type frame struct {
		b    int32
		next int
		s    []int32
	}
	stack := []frame{{b: root, s: succ(root)}}
	seen[root] = true
	for len(stack) > 0 {
		f := &stack[len(stack)-1]
		if f.next < len(f.s) {
			c := f.s[f.next]
			f.next++
			if !seen[c] {
				seen[c] = true
				stack = append(stack, frame{b: c, s: succ(c)})
			}
			continue
		}
		order = append(order, f.b)
		stack = stack[:len(stack)-1]
	}
	rpo := make([]int32, n+1) // block → position in reverse postorder
	for i := range rpo {
		rpo[i] = -1
	}
	for i, b := range order {
		rpo[b] = int32(len(order) - 1 - i)
	}
	idom := make([]int32, n+1)
	for i := range idom {
		idom[i] = -1
	}
	idom[root] = root
	preds := func(b int32) []int32 {
		p := g.blocks[b].pred
		if b == g.entry || len(p) == 0 {
			p = append(append([]int32(nil), p...), root)
		}
		return p
	}
	intersect := func(a, b int32) int32 {
		for a != b {
			for rpo[a] > rpo[b] {
				a = idom[a]
			}
			for rpo[b] > rpo[a] {
				b = idom[b]
			}
		}
		return a
	}
	for changed := true; changed; {
		changed = false
		for i := len(order) - 1; i >= 0; i-- {
			b := order[i]
			if b == root {
				continue
			}
			nd := int32(-1)
			for _, p := range preds(b) {
				if idom[p] < 0 || rpo[p] < 0 {
					continue
				}
				if nd < 0 {
					nd = p
				} else {
					nd = intersect(p, nd)
				}
			}
			if nd >= 0 && idom[b] != nd {
				idom[b] = nd
				changed = true
			}
		}
	}
	for i := range idom {
		if idom[i] < 0 {
			idom[i] = root
		}
	}
	g.idom = idom
}

// dominates reports whether block a dominates block b.
func (g *cfg) dominates(a, b int32) bool {
	root := int32(len(g.blocks))
	for {
		if b == a {
			return true
		}
		if b == root {
			return false
		}
		b = g.idom[b]
	}
}

// findLoops finds the natural loops: an edge u → h whose target dominates
// its source closes a loop with header h, whose body is h and every block
// that reaches u without passing through h. Loops with one header are
// merged. It finds them once; later calls return at once.
func (g *cfg) findLoops() {
	if g.loopsFound || len(g.blocks) == 0 {
		return
	}
	g.loopsFound = true
	if g.idom == nil {
		g.dominators()
	}
	byHeader := map[int32]int{}
	for u := range g.blocks {
		for _, h := range g.blocks[u].succ {
			if !g.dominates(h, int32(u)) {
				continue
			}
			li, ok := byHeader[h]
			if !ok {
				li = len(g.loops)
				byHeader[h] = li
				g.loops = append(g.loops, loop{header: h, body: map[int32]bool{h: true}})
			}
			l := &g.loops[li]
			l.latches = append(l.latches, int32(u))
			work := []int32{int32(u)}
			for len(work) > 0 {
				b := work[len(work)-1]
				work = work[:len(work)-1]
				if l.body[b] {
					continue
				}
				l.body[b] = true
				work = append(work, g.blocks[b].pred...)
			}
		}
	}
}

// Block is a basic block of machine code, for localisation.
type Block struct {
	Function string // the symbol containing it
	Start    uint64 // ELF virtual addresses [Start, End)
	End      uint64
}

func (b Block) String() string { return fmt.Sprintf("%#x..%#x", b.Start, b.End) }

// Code finds the basic blocks of an ELF executable's functions, from its
// symbol table and its machine code. It is safe for concurrent use.
type Code struct {
	f     *elf.File
	text  *text
	syms  []codeSym // sorted by address
	loads []elf.ProgHeader

	objs    map[string][2]uint64   // data symbols: name → [start, end)
	statics map[string][][2]uint64 // a function's static variable "v.N" → under "v"

	path        string
	membersOnce sync.Once
	dwarf       *dwarfx.Info // nil: no DWARF; read for member placement only
	membersMu   sync.Mutex
	members     map[string]memberPlace // "cfg.limit" → its bytes, from DWARF

	mu        sync.Mutex
	cache     map[int]*cfg
	clobber   map[int]uint32
	objects   map[int]*objFacts   // what each function does with its arguments' objects
	objParams map[int][2][]string // objectParams' answers (types, names), under membersMu
	repairs   map[int][]Repair    // RepairsOf's answers
	busy      map[int]bool
	reads     map[readKey]bool
	carried   map[carriedKey][]carriedLoc

	dataWords []uint64          // function entries held by the data (guard.go)
	taken     map[uint64]bool   // addresses code or data takes; nil until indexCalls
	callers   map[uint64][]int  // function entry → functions calling or jumping to it
	viaPLT    map[uint64]uint64 // PLT stub → the entry of the function of this object it reaches (plt.go)
}

type readKey struct {
	fn     int
	global string
	write  bool // Writes rather than Reads
}

// storesTo says whether an instruction writes its first operand when that
// is memory: not a comparison or test, a multiplication or division by it
// (its one operand is the source), a push, a jump or call through memory,
// a prefetch or cache flush, an x87 load or arithmetic (only FST, FIST
// and FNST store).
func storesTo(inst *x86asm.Inst) bool {
	if kindOf(inst.Op) != opOther {
		return false
	}
	name := inst.Op.String()
	switch {
	case testOps[name], name == "PUSH", name == "NOP", name == "MUL", name == "DIV", name == "IDIV",
		name == "IMUL" && nargs(inst) == 1,
		strings.HasPrefix(name, "PREFETCH"), strings.HasPrefix(name, "CLFLUSH"):
		return false
	case strings.HasPrefix(name, "F"):
		return strings.HasPrefix(name, "FST") || strings.HasPrefix(name, "FIST") || strings.HasPrefix(name, "FNST")
	}
	return true
}

type codeSym struct {
	name       string
	addr, size uint64
}

// OpenCode reads the code and function symbols of the ELF file at path.
func OpenCode(path string) (*Code, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if f.Machine != elf.EM_X86_64 {
		return nil, fmt.Errorf("%s: %v code is not supported (x86-64 only)", path, f.Machine)
	}
	t, err := loadText(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c := &Code{path: path, text: t, cache: map[int]*cfg{}, clobber: map[int]uint32{}, objects: map[int]*objFacts{}, objParams: map[int][2][]string{}, repairs: map[int][]Repair{}, busy: map[int]bool{},
		objs: map[string][2]uint64{}, statics: map[string][][2]uint64{}, reads: map[readKey]bool{}, carried: map[carriedKey][]carriedLoc{}}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			c.loads = append(c.loads, p.ProgHeader)
		}
	}
	syms, _ := f.Symbols()
	if len(syms) == 0 {
		syms, _ = f.DynamicSymbols()
	}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Size > 0 && s.Value != 0 {
			c.syms = append(c.syms, codeSym{name: s.Name, addr: s.Value, size: s.Size})
		}
		if elf.ST_TYPE(s.Info) == elf.STT_OBJECT && s.Size > 0 && s.Value != 0 {
			if _, dup := c.objs[s.Name]; !dup {
				c.objs[s.Name] = [2]uint64{s.Value, s.Value + s.Size}
			}
			if base, ok := staticBase(s.Name); ok {
				c.statics[base] = append(c.statics[base], [2]uint64{s.Value, s.Value + s.Size})
			}
		}
	}
	sort.Slice(c.syms, func(i, j int) bool { return c.syms[i].addr < c.syms[j].addr })
	starts := make(map[uint64]bool, len(c.syms))
	for _, s := range c.syms {
		starts[s.addr] = true
	}
	c.dataWords = funcWords(f, starts)
	c.indexPLT(f)
	return c, nil
}

// AddrOf converts a file offset of the ELF file to its virtual address.
func (c *Code) AddrOf(off uint64) (uint64, bool) {
	for _, p := range c.loads {
		if p.Flags&elf.PF_X != 0 && off >= p.Off && off < p.Off+p.Filesz {
			return off - p.Off + p.Vaddr, true
		}
	}
	return 0, false
}

// symAt returns the index of the function symbol holding addr, or −1.
func (c *Code) symAt(addr uint64) int {
	i := sort.Search(len(c.syms), func(i int) bool { return c.syms[i].addr > addr }) - 1
	if i < 0 || addr >= c.syms[i].addr+c.syms[i].size {
		return -1
	}
	return i
}

// cfgOf returns the control-flow graph of function symbol i; c.mu is held.
func (c *Code) cfgOf(i int) *cfg {
	g, ok := c.cache[i]
	if !ok {
		s := c.syms[i]
		g = buildCFG(c.text, [][2]uint64{{s.addr, s.addr + s.size}}, s.addr)
		c.cache[i] = g
	}
	return g
}

// Clobbers returns the registers (bit i: DWARF register i, 0-15) that the
// function holding addr may change, itself or through the functions it
// calls or jumps to, transitively; ok is false when no function symbol
// holds addr. A call through a pointer, or to code without a symbol (the
// PLT, another object), may change every caller-saved register; a cycle of
// calls is taken to change them too.
//
// A compiler that sees a callee's code may keep values in caller-saved
// registers across calls to it (GCC's -fipa-ra, on at -O2): a register the
// functions called since do not change still holds, in a caller frame,
// what it held at the call, where CFI says nothing about it.
func (c *Code) Clobbers(addr uint64) (uint32, bool) {
	i := c.symAt(addr)
	if i < 0 {
		return 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.clobbers(i) & 0xffff, true
}

func (c *Code) clobbers(i int) uint32 {
	if m, ok := c.clobber[i]; ok {
		return m
	}
	if c.busy[i] {
		return callerSavedMask
	}
	c.busy[i] = true
	g := c.cfgOf(i)
	var m uint32
	for k := range g.insns {
		in := &g.insns[k]
		switch {
		case !in.ok:
			m |= allRegs
		case kindOf(in.inst.Op) == opCall || (kindOf(in.inst.Op) == opJmp && !inRanges(g.ranges, jumpTarget(in))):
			tg, direct := in.target()
			j := -1
			if direct {
				j = c.symAt(tg)
			}
			if j < 0 || c.syms[j].addr != tg {
				m |= callerSavedMask
			} else {
				m |= c.clobbers(j)
			}
		default:
			m |= writeMask(in)
		}
	}
	delete(c.busy, i)
	c.clobber[i] = m
	return m
}

// jumpTarget is a jump's direct target, or 0 for an indirect jump (which
// may leave the function: a tail call through a pointer).
func jumpTarget(in *insn) uint64 {
	tg, _ := in.target()
	return tg
}

// Block returns the basic block holding the ELF virtual address addr.
func (c *Code) Block(addr uint64) (Block, bool) {
	i := c.symAt(addr)
	if i < 0 {
		return Block{}, false
	}
	s := c.syms[i]
	c.mu.Lock()
	g := c.cfgOf(i)
	c.mu.Unlock()
	for _, b := range g.blocks {
		if addr >= b.start && addr < b.end {
			return Block{Function: s.name, Start: b.start, End: b.end}, true
		}
	}
	return Block{}, false
}

// staticBase is the variable name of a static variable declared inside a
// function, whose symbol GCC names "v.N" (N a number, since several
// functions may each have a "v"); ok false for any other name.
func staticBase(sym string) (string, bool) {
	i := strings.LastIndexByte(sym, '.')
	if i <= 0 || i == len(sym)-1 {
		return "", false
	}
	for _, r := range sym[i+1:] {
		if r < '0' || r > '9' {
			return "", false
		}
	}
	return sym[:i], true
}

// openDWARF opens the object's DWARF once, for member placement and
// parameters; nil when it has none.
func (c *Code) openDWARF() *dwarfx.Info {
	c.membersOnce.Do(func() {
		c.members = map[string]memberPlace{}
		c.dwarf, _ = dwarfx.Open(c.path)
	})
	return c.dwarf
}

// memberRange is the bytes of the member f of the global struct at base
// (its symbol's address), "v.f" named global, from the type DWARF gives
// the variable at that address (a scalar member, not a bit field, as
// culprit schema lists them); ok false when the object has no DWARF, the
// variable is no struct or it has no such member. The DWARF is opened
// once per object, and only the variables' types are read
// (dwarfx.Info.StaticType), not every function.
func (c *Code) memberRange(global string, base uint64) ([2]uint64, bool) {
	if c.openDWARF() == nil {
		return [2]uint64{}, false
	}
	c.membersMu.Lock()
	defer c.membersMu.Unlock()
	if p, ok := c.members[global]; ok {
		return p.r, p.ok
	}
	var p memberPlace
	_, field, _ := strings.Cut(global, ".")
	if t, ok := c.dwarf.StaticType(base); ok && t.Underlying().Kind == dwarfx.Struct {
		for _, fl := range t.Underlying().Fields {
			if fl.Name != field || fl.Type == nil || !fl.Type.IsScalar() || fl.BitSize != 0 {
				continue
			}
			lo := base + uint64(fl.Offset)
			p = memberPlace{r: [2]uint64{lo, lo + uint64(max(fl.Type.Underlying().Size, 1))}, ok: true}
			break
		}
	}
	c.members[global] = p
	return p.r, p.ok
}

// memberPlace is where memberRange placed a member, or that it could not.
type memberPlace struct {
	r  [2]uint64
	ok bool
}

// Reads says whether the machine code of the function holding addr
// accesses the global variable named global: an instruction whose memory
// operand is RIP-relative or absolute and lands in the variable's symbol.
// A member "cfg.limit" is accessed where an operand overlaps the member's
// bytes, or where an lea takes an address inside cfg (a pointer into the
// struct reaches every member); without DWARF to place the member, where
// cfg is accessed at all. A name without a symbol of its own is looked up
// as a function's static variable (symbols "v.1", "v.2", ...: the code
// reads it when it reads any of them). known is false when no function
// symbol holds addr or the symbol table has no such variable (a stripped
// binary, a global of another object). Code inlined into the function
// counts as its own; accesses through a pointer to the variable are not
// seen.
func (c *Code) Reads(addr uint64, global string) (reads, known bool) {
	return c.access(addr, global, false)
}

// Writes says whether the machine code of the function holding addr
// stores into the global variable named global (or the member
// "cfg.limit"): an instruction whose destination is a memory operand,
// RIP-relative or absolute, that lands in it as Reads places it (an lea
// does not write). known is as for Reads. A value the function stores
// itself (a high-water mark it keeps, a default it fills in) is its
// output, not an input it was given.
func (c *Code) Writes(addr uint64, global string) (writes, known bool) {
	return c.access(addr, global, true)
}

// access is Reads, or with write Writes.
func (c *Code) access(addr uint64, global string, write bool) (bool, bool) {
	i := c.symAt(addr)
	if i < 0 {
		return false, false
	}
	touches, key, ok := c.toucher(global, write)
	if !ok {
		return false, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := readKey{fn: i, global: key, write: write}
	if v, ok := c.reads[k]; ok {
		return v, true
	}
	g := c.cfgOf(i)
	found := false
	for j := range g.insns {
		if touches(&g.insns[j]) {
			found = true
			break
		}
	}
	c.reads[k] = found
	return found, true
}

// toucher returns whether an instruction accesses (with write: stores
// into) the global variable or member named global, as Reads places it,
// and the key its answers are cached under; ok is false when the symbol
// table has no such variable.
func (c *Code) toucher(global string, write bool) (touches func(in *insn) bool, key string, ok bool) {
	name, _, isMember := strings.Cut(global, ".")
	var ranges [][2]uint64
	if r, ok := c.objs[name]; ok {
		ranges = [][2]uint64{r}
	} else {
		ranges = c.statics[name]
	}
	if len(ranges) == 0 {
		return nil, "", false
	}
	var part [2]uint64
	precise := false
	if isMember && len(ranges) == 1 {
		part, precise = c.memberRange(global, ranges[0][0])
	}
	key = name
	if precise {
		key = global
	}
	return func(in *insn) bool {
		if !in.ok {
			return false
		}
		for ai, a := range in.inst.Args {
			if write && (ai > 0 || !storesTo(&in.inst)) {
				break
			}
			m, ok := a.(x86asm.Mem)
			if !ok {
				continue
			}
			var at uint64
			switch {
			case m.Base == x86asm.RIP:
				at = in.next() + uint64(m.Disp)
			case m.Base == 0 && m.Index == 0:
				at = uint64(m.Disp)
			default:
				continue
			}
			for _, r := range ranges {
				if at < r[0] || at >= r[1] {
					continue
				}
				if !precise || in.inst.Op == x86asm.LEA {
					return true
				}
				end := at + uint64(max(in.inst.MemBytes, 1))
				if at < part[1] && end > part[0] {
					return true
				}
			}
		}
		return false
	}, key, true
}

// Param says whether name is a formal parameter of the function holding
// address addr, from the object's DWARF (a clone such as f.isra.0 has its
// origin's parameters). known is false when the object has no DWARF or no
// function there.
func (c *Code) Param(addr uint64, name string) (param, known bool) {
	if c.openDWARF() == nil {
		return false, false
	}
	c.membersMu.Lock()
	defer c.membersMu.Unlock()
	fn, ok := c.dwarf.Function(addr)
	if !ok {
		return false, false
	}
	for _, p := range fn.Params() {
		if p.Name == name {
			return true, true
		}
	}
	return false, true
}
