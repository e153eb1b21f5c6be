package schema

import "golang.org/x/arch/x86/x86asm"

// Bounded work: a function each of whose loops runs at most a constant
// number of times per entry, and whose callees do the same work per call
// or are bounded too, does at most a fixed amount of work per call,
// whatever it is handed. A wait that polls until an answer or a timeout
// (`for (n = 0; n < 600; n++) if (poll(w)) return 1;`) is such a
// function: handed an item that never answers, it runs to its bound.

// BoundedAt says of the function symbol holding addr whether it has a
// loop and each call of it does at most a fixed amount of work: every
// natural loop of its code is left by a test of a counter set from a
// constant before the loop and stepped by a constant in it, the test on
// every iteration; every function it calls (directly, in this object,
// or through the PLT stub of a function of this object) is bounded or
// straight-line code (no loop, no call); nothing it calls is reached
// through a pointer or lies in another object, nor calls it back. ok is
// false when no symbol holds addr.
func (c *Code) BoundedAt(addr uint64) (bounded, ok bool) {
	i := c.symAt(addr)
	if i < 0 {
		return false, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.cfgOf(i)
	g.findLoops()
	return len(g.loops) > 0 && c.bounded(i, map[int]bool{}), true
}

// bounded is BoundedAt's test for symbol i, with or without a loop;
// onStack holds the functions whose test is under way (a cycle of calls
// is not bounded). c.mu is held.
func (c *Code) bounded(i int, onStack map[int]bool) bool {
	if onStack[i] {
		return false
	}
	onStack[i] = true
	defer delete(onStack, i)
	g := c.cfgOf(i)
	if len(g.insns) == 0 {
		return false
	}
	g.findLoops()
	for k := range g.insns {
		in := &g.insns[k]
		if !in.ok {
			return false
		}
		kind := kindOf(in.inst.Op)
		if kind != opCall && (kind != opJmp || inRanges(g.ranges, jumpTarget(in))) {
			continue
		}
		if kind == opJmp && jumpTarget(in) == 0 && isTableJump(in) {
			continue // a switch through a jump table stays in the function
		}
		tg, direct := in.target()
		if !direct {
			return false
		}
		if to, ok := c.viaPLT[tg]; ok {
			tg = to // a call of the object's own function through its stub
		}
		j := c.symAt(tg)
		if j < 0 || c.syms[j].addr != tg || !c.bounded(j, onStack) {
			return false
		}
	}
	for li := range g.loops {
		if !c.constantTrips(g, &g.loops[li]) {
			return false
		}
	}
	return true
}

// constantTrips says whether loop l runs at most a constant number of
// times per entry: a conditional jump leaving it, in a block that
// dominates each latch (so tested on every iteration), tests flags set
// by the instruction just before it on a counter register that every
// instruction of the loop writing it steps by a constant (add, sub, inc,
// dec with an immediate), and that holds a constant (mov of an
// immediate, or xor with itself) on each edge entering the loop. c.mu is
// held.
func (c *Code) constantTrips(g *cfg, l *loop) bool {
	for b := range l.body {
		bb := &g.blocks[b]
		j := &g.insns[bb.last]
		if kindOf(j.inst.Op) != opJcc || bb.last == bb.first {
			continue
		}
		exits := false
		for _, s := range bb.succ {
			exits = exits || !l.body[s]
		}
		if !exits {
			continue
		}
		tested := true
		for _, u := range l.latches {
			tested = tested && g.dominates(b, u)
		}
		if !tested {
			continue
		}
		r, ok := counterOf(&g.insns[bb.last-1].inst)
		if ok && c.steppedByConstant(g, l, r) && constantOnEntry(g, l, r) {
			return true
		}
	}
	return false
}

// counterOf returns the register whose comparison with a constant, or
// whose step by one, sets the flags a conditional jump after inst tests.
func counterOf(inst *x86asm.Inst) (int, bool) {
	reg := func(a x86asm.Arg) (int, bool) {
		r, ok := a.(x86asm.Reg)
		if !ok {
			return noReg, false
		}
		i, partial := regIndex(r)
		return i, i != noReg && i < regXMM && !partial
	}
	switch inst.Op {
	case x86asm.CMP:
		if _, imm := inst.Args[1].(x86asm.Imm); imm {
			return reg(inst.Args[0])
		}
	case x86asm.SUB, x86asm.ADD:
		if _, imm := inst.Args[1].(x86asm.Imm); imm {
			return reg(inst.Args[0])
		}
	case x86asm.DEC, x86asm.INC:
		return reg(inst.Args[0])
	}
	return noReg, false
}

// steppedByConstant says whether every instruction of loop l that may
// write register r adds or subtracts a constant to it, and one does; a
// call writes r unless its callee's code leaves it alone. c.mu is held.
func (c *Code) steppedByConstant(g *cfg, l *loop, r int) bool {
	steps := 0
	for b := range l.body {
		bb := &g.blocks[b]
		for k := bb.first; k <= bb.last; k++ {
			in := &g.insns[k]
			if kindOf(in.inst.Op) == opCall {
				tg, direct := in.target()
				if _, stub := c.viaPLT[tg]; stub {
					// Another object's definition may be called: what
					// the ABI lets a callee change.
					if callerSaved(r) {
						return false
					}
					continue
				}
				j := -1
				if direct {
					j = c.symAt(tg)
				}
				if j < 0 || c.syms[j].addr != tg || c.clobbers(j)&(1<<uint(r)) != 0 {
					return false
				}
				continue
			}
			if !writesReg(in, r) {
				continue
			}
			if d, ok := counterOf(&in.inst); !ok || d != r || in.inst.Op == x86asm.CMP {
				return false
			}
			steps++
		}
	}
	return steps > 0
}

// constantOnEntry says whether register r holds a constant on every edge
// into loop l from outside it: the last write to r before the edge, in
// its block or up a chain of blocks each with one predecessor, moves an
// immediate into it or clears it with xor.
func constantOnEntry(g *cfg, l *loop, r int) bool {
	entries := 0
	for _, p := range g.blocks[l.header].pred {
		if l.body[p] {
			continue
		}
		entries++
		if !constantAtEnd(g, p, r) {
			return false
		}
	}
	return entries > 0
}

func constantAtEnd(g *cfg, b int32, r int) bool {
	seen := map[int32]bool{}
	for !seen[b] {
		seen[b] = true
		bb := &g.blocks[b]
		for k := bb.last; k >= bb.first; k-- {
			in := &g.insns[k]
			if !writesReg(in, r) {
				continue
			}
			inst := &in.inst
			dst, ok := inst.Args[0].(x86asm.Reg)
			if !ok {
				return false
			}
			if i, partial := regIndex(dst); i != r || partial {
				return false
			}
			switch inst.Op {
			case x86asm.MOV:
				_, imm := inst.Args[1].(x86asm.Imm)
				return imm
			case x86asm.XOR:
				return sameReg(inst.Args[0], inst.Args[1])
			}
			return false
		}
		if len(bb.pred) != 1 {
			return false
		}
		b = bb.pred[0]
	}
	return false
}
