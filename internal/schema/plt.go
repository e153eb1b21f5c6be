package schema

import (
	"debug/elf"

	"github.com/culprit-dev/culprit/internal/elfx"
)

// PLT stubs. A function of a shared library that calls another exported
// function of the same library calls it through the PLT (the call may be
// interposed by another object's definition), so its call instruction
// lands on a stub, not on the callee's symbol: `call conn_drain@plt`. The
// stub is a `jmp *slot(%rip)` (after an endbr64 and a bnd prefix where
// the object was built for indirect-branch tracking), and the slot's
// relocation names the function it reaches. Questions about how a
// function decides its calls of a callee (Guard, Decider) take a call of
// the callee's stub for a call of the callee. The stubs and the names
// they reach are elfx.PLTStubs, the table the symbolizer names stub frames
// from.

// pltStubs returns, per stub address, the name of the function the stub
// reaches (elfx.PLTStubs).
func pltStubs(f *elf.File) map[uint64]string {
	list := elfx.PLTStubs(f)
	if len(list) == 0 {
		return nil
	}
	stubs := make(map[uint64]string, len(list))
	for _, s := range list {
		stubs[s.Addr] = s.Name
	}
	return stubs
}

// indexPLT fills c.viaPLT: per stub, the entry of the function of the
// object its slot names (a stub of a function defined elsewhere is left
// out).
func (c *Code) indexPLT(f *elf.File) {
	for stub, name := range pltStubs(f) {
		if j := c.symByName(name); j >= 0 {
			if c.viaPLT == nil {
				c.viaPLT = map[uint64]uint64{}
			}
			c.viaPLT[stub] = c.syms[j].addr
		}
	}
}

// reaches says whether a direct call or jump to tg reaches the function
// entry target: tg is target or its PLT stub.
func (c *Code) reaches(tg, target uint64) bool {
	return tg == target || c.viaPLT != nil && c.viaPLT[tg] == target
}

// stubsOf returns the PLT stubs that reach the function entry target.
func (c *Code) stubsOf(target uint64) []uint64 {
	var out []uint64
	for stub, fn := range c.viaPLT {
		if fn == target {
			out = append(out, stub)
		}
	}
	return out
}
