package schema

import (
	"fmt"
	"strings"

	"golang.org/x/arch/x86/x86asm"
)

// What a function's machine code says of its form, for the tracer's
// static baseline and diff tracing: how deeply its loops nest, what it
// calls from where, and its control-flow graph.

// Call is a call (or a jump out of the function: a tail call) in a
// function's code.
type Call struct {
	// Callee is the symbol called (a call of the object's own function
	// through its PLT stub names that function); "" when the target is
	// not a function symbol's start (another object's function through
	// the PLT) or not known (a call or jump through a register: a
	// pointer, or a switch the code computes).
	Callee    string
	LoopDepth int // how many natural loops of the caller hold the call
}

// Shape is a function's loop nesting and its calls.
type Shape struct {
	Loops int    // the deepest nesting of natural loops
	Calls []Call // in address order
	// Unknown is set when some of the code does not decode.
	Unknown bool
}

// FlowBlock is a basic block as diff tracing compares it.
type FlowBlock struct {
	Ops  []string // mnemonics
	Text []string // instructions with operands, branch targets left out, call targets and RIP-relative data named by symbol where there is one
	Succ []int    // successor blocks
}

// Flow is a function's control-flow graph, blocks in address order, entry
// first where it starts the function.
type Flow []FlowBlock

// symByName returns the index of the function symbol name, or −1.
func (c *Code) symByName(name string) int {
	for i := range c.syms {
		if c.syms[i].name == name {
			return i
		}
	}
	return -1
}

// loopDepths is, per block, how many natural loops hold it.
func (g *cfg) loopDepths() []int {
	g.findLoops()
	d := make([]int, len(g.blocks))
	for _, l := range g.loops {
		for b := range l.body {
			d[b]++
		}
	}
	return d
}

// symByBase returns the index of the function symbol name or, when there
// is none, of a clone GCC made of it (name.constprop.0, name.isra.0,
// name.part.0: the name, a dot and a suffix; not the .cold part of a
// function split in two, which is not entered by calls), or −1. The
// analyses name a function as its frames do, with the clone suffixes
// removed.
func (c *Code) symByBase(name string) int {
	if i := c.symByName(name); i >= 0 {
		return i
	}
	for i := range c.syms {
		n := c.syms[i].name
		if strings.HasPrefix(n, name+".") && !strings.Contains(n[len(name):], ".cold") {
			return i
		}
	}
	return -1
}

// Shape returns the loops and calls of the function symbol name; ok is
// false when there is none.
func (c *Code) Shape(name string) (s Shape, ok bool) {
	i := c.symByName(name)
	if i < 0 {
		return Shape{}, false
	}
	return c.shape(i), true
}

// ShapeAt is Shape of the function symbol holding addr.
func (c *Code) ShapeAt(addr uint64) (s Shape, ok bool) {
	i := c.symAt(addr)
	if i < 0 {
		return Shape{}, false
	}
	return c.shape(i), true
}

func (c *Code) shape(i int) (s Shape) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.cfgOf(i)
	depth := g.loopDepths()
	for _, d := range depth {
		s.Loops = max(s.Loops, d)
	}
	for k := range g.insns {
		in := &g.insns[k]
		if !in.ok {
			s.Unknown = true
			continue
		}
		kind := kindOf(in.inst.Op)
		if kind != opCall && (kind != opJmp || inRanges(g.ranges, jumpTarget(in))) {
			continue
		}
		if kind == opJmp && jumpTarget(in) == 0 && isTableJump(in) {
			continue // a switch through a jump table stays in the function
		}
		call := Call{LoopDepth: depth[g.blockOf[k]]}
		if tg, direct := in.target(); direct {
			if to, ok := c.viaPLT[tg]; ok {
				tg = to // a call of the object's own function through its stub (plt.go)
			}
			if j := c.symAt(tg); j >= 0 && c.syms[j].addr == tg {
				call.Callee = c.syms[j].name
			}
		}
		s.Calls = append(s.Calls, call)
	}
	return s
}

// isTableJump reports whether an indirect jump reads its target from
// memory indexed by a register (a switch's jump table).
func isTableJump(in *insn) bool {
	m, ok := in.inst.Args[0].(x86asm.Mem)
	return ok && m.Index != 0
}

// Flow returns the control-flow graph of the function symbol name; ok is
// false when there is none.
func (c *Code) Flow(name string) (Flow, bool) {
	i := c.symByName(name)
	if i < 0 {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.cfgOf(i)
	out := make(Flow, len(g.blocks))
	for bi, b := range g.blocks {
		fb := &out[bi]
		for k := b.first; k <= b.last; k++ {
			in := &g.insns[k]
			if !in.ok {
				fb.Ops = append(fb.Ops, "(bad)")
				fb.Text = append(fb.Text, "(bad)")
				continue
			}
			fb.Ops = append(fb.Ops, in.inst.Op.String())
			fb.Text = append(fb.Text, c.insnText(in))
		}
		for _, s := range b.succ {
			fb.Succ = append(fb.Succ, int(s))
		}
	}
	return out, true
}

// insnText writes an instruction with what moves between builds of one
// program left out or named: branch targets (the graph's edges say where
// they go), call targets (by symbol), RIP-relative addresses (by the data
// or function symbol they fall in, else "rip").
func (c *Code) insnText(in *insn) string {
	var args []string
	for _, a := range in.inst.Args {
		if a == nil {
			break
		}
		switch a := a.(type) {
		case x86asm.Rel:
			tg, _ := in.target()
			if kindOf(in.inst.Op) == opCall {
				if j := c.symAt(tg); j >= 0 && c.syms[j].addr == tg {
					args = append(args, c.syms[j].name)
					continue
				}
				args = append(args, "?")
				continue
			}
			args = append(args, "→")
		case x86asm.Mem:
			if a.Base == x86asm.RIP {
				at := in.next() + uint64(a.Disp)
				args = append(args, fmt.Sprintf("[%s]", c.nameAt(at)))
				continue
			}
			args = append(args, a.String())
		default:
			args = append(args, a.String())
		}
	}
	return in.inst.Op.String() + " " + strings.Join(args, ",")
}

// nameAt names the symbol holding addr, with the offset into it.
func (c *Code) nameAt(addr uint64) string {
	if j := c.symAt(addr); j >= 0 {
		return fmt.Sprintf("%s+%d", c.syms[j].name, addr-c.syms[j].addr)
	}
	for name, r := range c.objs {
		if addr >= r[0] && addr < r[1] {
			return fmt.Sprintf("%s+%d", name, addr-r[0])
		}
	}
	return "rip"
}
