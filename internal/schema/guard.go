package schema

import (
	"debug/elf"
	"encoding/binary"
	"slices"

	"golang.org/x/arch/x86/x86asm"
)

// Which function's answer decides a call: `if (should_sync(j))
// journal_sync(j);` compiles to a call of the predicate, a test of its
// return register and a conditional jump around the call (or the tail
// jump) of the work. The differential method uses it to credit the
// predicate with the calls it let through (docs/vprof.md, "A predicate
// decides the calls").

// maxGuardSteps bounds the blocks walked back from a call to the
// conditional jump that guards it.
const maxGuardSteps = 4

// Decider names the function whose answer decides the calls of callee
// made by the function holding addr: every direct call or tail jump to
// callee's entry there is reached only through a conditional jump on the
// return value of one function, called just before in the same block.
// With callee "", the calls are every entry into the function holding
// addr, from any function of the object: every direct call or tail jump
// to it is so guarded by one function's answer, and its address is taken
// nowhere (no instruction loads it, no word of data holds it: a call
// through a pointer could enter it unguarded). ok is false when there is
// no such call, some call is not guarded, or the guards differ.
func (c *Code) Decider(addr uint64, callee string) (pred string, ok bool) {
	i := c.symAt(addr)
	if i < 0 {
		return "", false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var target uint64
	fns := []int{i}
	if callee == "" {
		target = c.syms[i].addr
		for _, w := range c.dataWords {
			if w == target {
				return "", false // a pointer to it in the data
			}
		}
		fns = c.referrers(target)
		for _, stub := range c.stubsOf(target) {
			fns = append(fns, c.referrers(stub)...)
		}
		slices.Sort(fns)
		fns = slices.Compact(fns)
		if c.loadsAddress(fns, target) {
			return "", false
		}
	} else {
		j := c.symByBase(callee)
		if j < 0 {
			return "", false
		}
		target = c.syms[j].addr
	}
	for _, j := range fns {
		g := c.cfgOf(j)
		for k := range g.insns {
			in := &g.insns[k]
			if !in.ok {
				continue
			}
			kind := kindOf(in.inst.Op)
			if kind != opCall && kind != opJmp {
				continue
			}
			if tg, direct := in.target(); !direct || !c.reaches(tg, target) || (kind == opJmp && inRanges(g.ranges, tg)) {
				continue
			}
			p := c.guard(g, k, target)
			if p == "" || (pred != "" && p != pred) {
				return "", false
			}
			pred = p
		}
	}
	return pred, pred != ""
}

// guard returns the function whose return value the conditional jump
// guarding instruction k (a call or jump to target) tests, or "": the
// jump's other edge must not lead to a call of target too (the compiler
// may duplicate a call on both sides of a branch).
func (c *Code) guard(g *cfg, k int, target uint64) string {
	b := g.blockOf[k]
	for step := 0; step < maxGuardSteps; step++ {
		if b == g.entry || len(g.blocks[b].pred) != 1 {
			return ""
		}
		d := g.blocks[b].pred[0]
		last := &g.insns[g.blocks[d].last]
		if last.ok && kindOf(last.inst.Op) == opJcc {
			succ := g.blocks[d].succ
			if len(succ) != 2 || succ[0] == succ[1] {
				return ""
			}
			other := succ[0]
			if other == b {
				other = succ[1]
			}
			if g.reachesCall(other, d, func(tg uint64) bool { return c.reaches(tg, target) }) {
				return ""
			}
			return c.answerTested(g, d)
		}
		b = d
	}
	return ""
}

// reachesCall reports whether a call or tail jump to a target is
// reachable from block from without passing through block stop.
func (g *cfg) reachesCall(from, stop int32, target func(uint64) bool) bool {
	seen := map[int32]bool{stop: true, from: true}
	queue := []int32{from}
	for len(queue) > 0 {
		b := queue[0]
		queue = queue[1:]
		bl := &g.blocks[b]
		for k := bl.first; k <= bl.last; k++ {
			in := &g.insns[k]
			if !in.ok {
				continue
			}
			if kd := kindOf(in.inst.Op); kd == opCall || kd == opJmp {
				if tg, direct := in.target(); direct && target(tg) {
					return true
				}
			}
		}
		for _, s := range bl.succ {
			if !seen[s] {
				seen[s] = true
				queue = append(queue, s)
			}
		}
	}
	return false
}

// answerTested returns the function whose return value (rax) the flags of
// block d's closing conditional jump were set from: a test of the
// register with itself or a compare with a constant, right before the
// jump, of a value a direct call in the same block returned (moves from
// rax to rax between them allowed).
func (c *Code) answerTested(g *cfg, d int32) string {
	bl := &g.blocks[d]
	k := bl.last - 1
	if k < bl.first || !g.insns[k].ok {
		return ""
	}
	t := &g.insns[k].inst
	switch t.Op {
	case x86asm.TEST:
		if !isRAX(t.Args[0]) || t.Args[1] != t.Args[0] {
			return ""
		}
	case x86asm.CMP:
		if _, imm := t.Args[1].(x86asm.Imm); !isRAX(t.Args[0]) || !imm {
			return ""
		}
	default:
		return ""
	}
	for k--; k >= bl.first; k-- {
		in := &g.insns[k]
		if !in.ok {
			return ""
		}
		if writeMask(in)&(1<<regRAX) == 0 {
			continue
		}
		switch in.inst.Op {
		case x86asm.MOV, x86asm.MOVZX, x86asm.MOVSX, x86asm.MOVSXD:
			if isRAX(in.inst.Args[0]) && isRAX(in.inst.Args[1]) {
				continue
			}
			return ""
		}
		if kindOf(in.inst.Op) != opCall {
			return ""
		}
		tg, direct := in.target()
		if !direct {
			return ""
		}
		if fn, ok := c.viaPLT[tg]; ok {
			tg = fn
		}
		if j := c.symAt(tg); j >= 0 && c.syms[j].addr == tg {
			return c.syms[j].name
		}
		return ""
	}
	return ""
}

// isRAX reports whether a is rax or a part of it.
func isRAX(a x86asm.Arg) bool {
	r, ok := a.(x86asm.Reg)
	if !ok {
		return false
	}
	idx, _ := regIndex(r)
	return idx == regRAX
}

// referrers returns the functions whose code may refer to target: where
// some 4 bytes, read as a displacement relative to the end of those bytes
// (a call, a jump, a RIP-relative operand) or as an absolute address (an
// immediate), give target, or a short jump's 1-byte displacement does. A scan of the raw bytes, so that a large binary
// is not decoded whole for one question; the callers decode and check.
func (c *Code) referrers(target uint64) []int {
	var out []int
	last := -1
	for _, sec := range c.text.secs {
		d := sec.data
		for o := 0; o+2 <= len(d); o++ {
			// A short jump (jmp or jcc rel8: a near tail call).
			short := (d[o] == 0xeb || d[o]&0xf0 == 0x70) && sec.addr+uint64(o)+2+uint64(int64(int8(d[o+1]))) == target
			if !short {
				if o+4 > len(d) {
					continue
				}
				w := binary.LittleEndian.Uint32(d[o:])
				end := sec.addr + uint64(o) + 4
				if end+uint64(int64(int32(w))) != target && uint64(w) != target {
					continue
				}
			}
			if j := c.symAt(sec.addr + uint64(o)); j >= 0 && j != last {
				out = append(out, j)
				last = j
			}
		}
	}
	return out
}

// loadsAddress reports whether one of the functions fns loads target's
// address: a RIP-relative lea of it, or an immediate holding it; c.mu is
// held.
func (c *Code) loadsAddress(fns []int, target uint64) bool {
	for _, j := range fns {
		g := c.cfgOf(j)
		for k := range g.insns {
			in := &g.insns[k]
			if !in.ok || kindOf(in.inst.Op) != opOther {
				continue
			}
			for _, a := range in.inst.Args {
				switch a := a.(type) {
				case x86asm.Mem:
					if a.Base == x86asm.RIP && in.inst.Op == x86asm.LEA && in.next()+uint64(a.Disp) == target {
						return true
					}
				case x86asm.Imm:
					if uint64(a) == target {
						return true
					}
				}
			}
		}
	}
	return false
}

// funcWords returns the function entries that the object's data holds:
// aligned 8-byte words of its allocated, non-executable sections, and the
// addends of its relative relocations.
func funcWords(f *elf.File, starts map[uint64]bool) []uint64 {
	var out []uint64
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC == 0 || s.Flags&elf.SHF_EXECINSTR != 0 {
			continue
		}
		var rela bool
		switch s.Type {
		case elf.SHT_PROGBITS, elf.SHT_INIT_ARRAY, elf.SHT_FINI_ARRAY:
		case elf.SHT_RELA:
			rela = true
		default:
			continue
		}
		data, err := s.Data()
		if err != nil {
			continue
		}
		if rela {
			for o := 0; o+24 <= len(data); o += 24 {
				if a := binary.LittleEndian.Uint64(data[o+16:]); starts[a] {
					out = append(out, a)
				}
			}
			continue
		}
		for o := (8 - int(s.Addr%8)) % 8; o+8 <= len(data); o += 8 {
			if w := binary.LittleEndian.Uint64(data[o:]); starts[w] {
				out = append(out, w)
			}
		}
	}
	return out
}

// Guard says how the function holding addr decides to call callee: guarded
// when a call (or tail jump) of callee is control dependent on one of its
// conditional jumps — one edge of the jump always leads to the call, the
// other need not — and ordered when such a jump compares an order (above,
// below, greater, less: a threshold) rather than equality or a sign. For a
// call inside a loop only its innermost loop's body counts, a jump back to
// the loop's header or out of the loop ending the path, and its exit tests
// left out: whether an iteration calls it, not whether the loop runs.
// callee is a symbol's name or the name of a function GCC cloned
// (symByBase). ok is false when the function makes no direct call of
// callee.
func (c *Code) Guard(addr uint64, callee string) (guarded, ordered, ok bool) {
	return c.guardJumps(addr, callee, nil)
}

// Calls says whether the function holding addr calls callee directly: a
// call or tail jump to its entry (or a PLT stub that reaches it). known is
// false when the address is in no function or callee is no function of
// this object (a call into another object cannot be told from here); a
// known false is a call made through a pointer, if the samples show one.
func (c *Code) Calls(addr uint64, callee string) (direct, known bool) {
	i := c.symAt(addr)
	j := c.symByBase(callee)
	if i < 0 || j < 0 {
		return false, false
	}
	target := c.syms[j].addr
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.callSites(c.cfgOf(i), target)) > 0, true
}

// callSites returns the instructions of g that call or tail-jump to
// target directly (or to a PLT stub that reaches it); c.mu is held.
func (c *Code) callSites(g *cfg, target uint64) []int {
	var out []int
	for k := range g.insns {
		in := &g.insns[k]
		if !in.ok {
			continue
		}
		if kd := kindOf(in.inst.Op); kd != opCall && kd != opJmp {
			continue
		}
		if tg, direct := in.target(); direct && c.reaches(tg, target) {
			out = append(out, k)
		}
	}
	return out
}

// GuardReads says whether an ordered jump that decides the call of callee
// (Guard's threshold) is in a basic block that reads the global variable
// or member named global (an instruction of the block whose memory
// operand lands in it, as Reads places it): the threshold compares, most
// likely, a value with that global, loaded just before the test. known is
// false when the function makes no direct call of callee or the symbol
// table has no such variable.
func (c *Code) GuardReads(addr uint64, callee, global string) (reads, known bool) {
	touches, _, ok := c.toucher(global, false)
	if !ok {
		return false, false
	}
	_, _, known = c.guardJumps(addr, callee, func(g *cfg, b int32, ordered bool) {
		if !ordered {
			return
		}
		bl := &g.blocks[b]
		for k := bl.first; k <= bl.last; k++ {
			if touches(&g.insns[k]) {
				reads = true
			}
		}
	})
	return reads, known
}

// guardJumps is Guard, calling at (nil: none) with each block whose last
// instruction is a conditional jump that decides the call, and whether
// that jump is ordered; c.mu is held while at runs.
func (c *Code) guardJumps(addr uint64, callee string, at func(g *cfg, b int32, ordered bool)) (guarded, ordered, ok bool) {
	i := c.symAt(addr)
	j := c.symByBase(callee)
	if i < 0 || j < 0 {
		return false, false, false
	}
	target := c.syms[j].addr
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.cfgOf(i)
	g.findLoops()
	for _, k := range c.callSites(g, target) {
		ok = true
		site := g.blockOf[k]
		var body map[int32]bool
		header := int32(-1)
		for _, l := range g.loops {
			if l.body[site] && (body == nil || len(l.body) < len(body)) {
				body, header = l.body, l.header
			}
		}
		within := func(b int32) bool { return body == nil || body[b] }
		// avoid: the blocks from which the path can end (return, leave
		// the loop, go back to its header) without reaching the call.
		avoid := map[int32]bool{}
		var work []int32
		for b := range g.blocks {
			b := int32(b)
			if b == site || !within(b) {
				continue
			}
			end := len(g.blocks[b].succ) == 0
			for _, s := range g.blocks[b].succ {
				if !within(s) || s == header {
					end = true
				}
			}
			if end {
				avoid[b] = true
				work = append(work, b)
			}
		}
		for len(work) > 0 {
			b := work[len(work)-1]
			work = work[:len(work)-1]
			if b == header {
				continue
			}
			for _, p := range g.blocks[b].pred {
				if p != site && within(p) && !avoid[p] {
					avoid[p] = true
					work = append(work, p)
				}
			}
		}
		for d := range avoid {
			bl := &g.blocks[d]
			last := &g.insns[bl.last]
			if !last.ok || kindOf(last.inst.Op) != opJcc || len(bl.succ) != 2 {
				continue
			}
			decides := false
			for _, s := range bl.succ {
				if !within(s) {
					decides = false // the loop's own exit test
					break
				}
				if s != header && !avoid[s] {
					decides = true // every path from s reaches the call
				}
			}
			if !decides {
				continue
			}
			guarded = true
			ord := false
			switch last.inst.Op {
			case x86asm.JA, x86asm.JAE, x86asm.JB, x86asm.JBE, x86asm.JG, x86asm.JGE, x86asm.JL, x86asm.JLE:
				ord, ordered = true, true
			}
			if at != nil {
				at(g, d, ord)
			}
		}
	}
	return guarded, ordered, ok
}
