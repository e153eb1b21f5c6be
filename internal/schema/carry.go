package schema

import (
	"sort"

	"github.com/culprit-dev/culprit/internal/dwarfx"
)

// Go's compiler writes a variable's location list only where its debug
// pass tracked the value: a loop variable held in one register the whole
// loop typically has a location at the loop's header and exit, and none in
// the body, where a profiler's samples land (golang/go#67130). GCC and
// Clang describe a variable's whole live range, so a gap in their lists
// means the value is gone; in Go's, it often means nothing moved.
//
// Carried fills such gaps from the machine code: at an instruction in the
// variable's scope where its list has no entry, the variable is in
// register r when every path reaching the instruction comes from a point
// whose list entry is "in r" and no instruction on the way may write r
// (a call may write every register under Go's ABI). Code reached through
// an indirect jump has unknown predecessors: functions with one are left
// alone.

// carriedLoc is the inferred register of a variable over [lo, hi).
type carriedLoc struct {
	lo, hi uint64
	reg    int
}

type carriedKey struct{ v *dwarfx.Variable }

// Carried returns the register holding local variable v at pc (an ELF
// address, the start of an instruction) where v's location list has no
// entry for pc, for functions compiled by Go; ok is false when nothing is
// known.
func (c *Code) Carried(v *dwarfx.Variable, pc uint64) (reg uint64, ok bool) {
	if v == nil || v.Func == nil || v.IsGlobal || !v.HasLocationList() || !v.Func.IsGo() {
		return 0, false
	}
	c.mu.Lock()
	ls, done := c.carried[carriedKey{v}]
	if !done {
		ls = c.carry(v)
		c.carried[carriedKey{v}] = ls
	}
	c.mu.Unlock()
	return carriedAt(ls, pc)
}

// carriedAt looks pc up in a sorted list.
func carriedAt(ls []carriedLoc, pc uint64) (reg uint64, ok bool) {
	k := sort.Search(len(ls), func(k int) bool { return ls[k].hi > pc })
	if k < len(ls) && ls[k].lo <= pc {
		return uint64(ls[k].reg), true
	}
	return 0, false
}

// carry computes where v is carried in a register beyond its list; c.mu
// is held.
func (c *Code) carry(v *dwarfx.Variable) []carriedLoc {
	i := c.symAt(v.Func.Entry)
	if i < 0 {
		return nil
	}
	return carriedIn(c.cfgOf(i), v)
}

// carriedIn computes where v is carried in a register beyond its list in
// the code of its function, g.
func carriedIn(g *cfg, v *dwarfx.Variable) []carriedLoc {
	n := len(g.insns)
	if n == 0 || g.entry < 0 {
		return nil
	}
	for k := range g.insns {
		in := &g.insns[k]
		if !in.ok {
			return nil
		}
		if kindOf(in.inst.Op) == opJmp {
			if _, direct := in.target(); !direct {
				return nil // a jump table: predecessors unknown
			}
		}
	}
	// Per instruction, the register holding v on entry: unknown (top,
	// still to be computed), none, or a register. Instructions with a
	// list entry, or out of v's scope, are fixed.
	const top, none = -2, -1
	state := make([]int, n)
	fixed := make([]bool, n)
	scope := v.Scope()
	gaps := 0
	for k := range g.insns {
		pc := g.insns[k].pc
		l, ok := v.Location(pc)
		switch {
		case ok:
			fixed[k], state[k] = true, none
			if r, isReg := l.Register(); isReg && r < 16 {
				state[k] = int(r)
			}
		case !inRanges(scope, pc):
			fixed[k], state[k] = true, none
		default:
			state[k] = top
			gaps++
		}
	}
	if gaps == 0 {
		return nil
	}
	// out is the register holding v after instruction k.
	out := func(k int) int {
		r := state[k]
		if r < 0 {
			return r
		}
		in := &g.insns[k]
		if kindOf(in.inst.Op) == opCall || writeMask(in)&(1<<uint(r)) != 0 {
			return none
		}
		return r
	}
	meet := func(a, b int) int {
		switch {
		case a == top:
			return b
		case b == top || a == b:
			return a
		}
		return none
	}
	in := func(k int) int {
		b := g.blockOf[k]
		if k != g.blocks[b].first {
			return out(k - 1)
		}
		bl := &g.blocks[b]
		if b == g.entry || len(bl.pred) == 0 {
			return none // entered from outside, or reached indirectly
		}
		m := top
		for _, p := range bl.pred {
			m = meet(m, out(g.blocks[p].last))
		}
		return m
	}
	for changed := true; changed; {
		changed = false
		for k := range g.insns {
			if fixed[k] {
				continue
			}
			if s := in(k); s != state[k] {
				state[k], changed = s, true
			}
		}
	}
	var ls []carriedLoc
	for k := range g.insns {
		r := state[k]
		if fixed[k] || r < 0 {
			continue
		}
		lo, hi := g.insns[k].pc, g.insns[k].next()
		if m := len(ls) - 1; m >= 0 && ls[m].hi == lo && ls[m].reg == r {
			ls[m].hi = hi
			continue
		}
		ls = append(ls, carriedLoc{lo: lo, hi: hi, reg: r})
	}
	return ls
}
