package unwind

import (
	"sync"

	"github.com/culprit-dev/culprit/internal/elfx"
)

// ruleKind says how to recover a register of the caller.
type ruleKind uint8

const (
	ruleUnspec    ruleKind = iota // no rule: same value for callee-saved registers
	ruleSame                      // DW_CFA_same_value
	ruleUndefined                 // DW_CFA_undefined
	ruleOffset                    // saved at CFA+off
	ruleValOffset                 // value is CFA+off
	ruleRegister                  // value is in register reg
	ruleExpr                      // saved at the address the expression computes
	ruleValExpr                   // value is what the expression computes
)

// CFA rule kinds, stored in row.cfa.kind.
const (
	cfaNone   ruleKind = iota // no or unsupported CFA rule
	cfaRegOff                 // CFA = reg + off
	cfaExpr                   // CFA = expression
)

// rule is one column of a CFI row. Expressions are referenced as
// [eoff, eoff+elen) in the CIE's section data.
type rule struct {
	kind ruleKind
	reg  uint8
	elen uint16
	eoff uint32
	off  int64
}

// row is the unwind row for one address.
type row struct {
	cfa  rule
	regs [numRegs]rule
}

// maxRemember bounds DW_CFA_remember_state nesting.
const maxRemember = 8

// rememberStack is scratch space for DW_CFA_remember_state; callers provide
// it so that evaluating a row neither allocates nor zeroes it every time.
type rememberStack [maxRemember]row

func initialRow() row { return row{} }

// setReg sets the rule of a DWARF register; registers beyond the tracked
// ones (vector registers) are ignored.
func (r *row) setReg(reg uint64, ru rule) {
	if reg < numRegs {
		r.regs[reg] = ru
	}
}

// readBlock reads a DWARF block operand (ULEB length + bytes) and returns it as
// an expression reference.
func readBlock(b *elfx.Reader) (eoff uint32, elen uint16, ok bool) {
	n := b.ULEB()
	if b.Bad || n > uint64(b.End-b.Off) || n > 0xffff {
		b.Bad = true
		return 0, 0, false
	}
	eoff, elen = uint32(b.Off), uint16(n)
	b.Off += int(n)
	return eoff, elen, true
}

// execCFA runs the CFA instructions [off, end) of c's section on rw, starting
// at location loc, until the location would pass pc. initial is the CIE's
// initial row for DW_CFA_restore (nil while running the CIE itself). It
// returns false on malformed or unsupported instructions.
func execCFA(c *cie, off, end uint32, rw *row, initial *row, pc, loc uint64) bool {
	var local rememberStack
	return execCFAStack(c, off, end, rw, initial, pc, loc, &local)
}

func execCFAStack(c *cie, off, end uint32, rw *row, initial *row, pc, loc uint64, stack *rememberStack) bool {
	depth := 0
	b := elfx.Reader{B: c.sec, Off: int(off), End: int(end)}
	restore := func(reg uint64) {
		if reg >= numRegs {
			return
		}
		if initial != nil {
			rw.regs[reg] = initial.regs[reg]
		} else {
			rw.regs[reg] = rule{}
		}
	}
	for b.Off < b.End {
		op := b.U8()
		switch op & elfx.CFAHighMask {
		case elfx.CFAAdvanceLoc:
			loc += uint64(op&^elfx.CFAHighMask) * c.codeAlign
			if loc > pc {
				return true
			}
			continue
		case elfx.CFAOffset:
			o := int64(b.ULEB()) * c.dataAlign
			rw.setReg(uint64(op&^elfx.CFAHighMask), rule{kind: ruleOffset, off: o})
			continue
		case elfx.CFARestore:
			restore(uint64(op &^ elfx.CFAHighMask))
			continue
		}
		switch op {
		case elfx.CFANop:
		case elfx.CFASetLoc:
			var v uint64
			if c.eh {
				var ok bool
				if v, ok = readPtr(&b, c.fdeEnc, c.secAddr, true); !ok {
					return false
				}
			} else if c.addrSize == 4 {
				v = uint64(b.U32())
			} else {
				v = b.U64()
			}
			if v > pc {
				return !b.Bad
			}
			loc = v
		case elfx.CFAAdvanceLoc1:
			loc += uint64(b.U8()) * c.codeAlign
			if loc > pc {
				return !b.Bad
			}
		case elfx.CFAAdvanceLoc2:
			loc += uint64(b.U16()) * c.codeAlign
			if loc > pc {
				return !b.Bad
			}
		case elfx.CFAAdvanceLoc4:
			loc += uint64(b.U32()) * c.codeAlign
			if loc > pc {
				return !b.Bad
			}
		case elfx.CFAOffsetExtended:
			reg := b.ULEB()
			rw.setReg(reg, rule{kind: ruleOffset, off: int64(b.ULEB()) * c.dataAlign})
		case elfx.CFARestoreExtended:
			restore(b.ULEB())
		case elfx.CFAUndefined:
			rw.setReg(b.ULEB(), rule{kind: ruleUndefined})
		case elfx.CFASameValue:
			rw.setReg(b.ULEB(), rule{kind: ruleSame})
		case elfx.CFARegister:
			reg, src := b.ULEB(), b.ULEB()
			if src >= numRegs {
				rw.setReg(reg, rule{kind: ruleUndefined})
			} else {
				rw.setReg(reg, rule{kind: ruleRegister, reg: uint8(src)})
			}
		case elfx.CFARememberState:
			if depth == maxRemember {
				return false
			}
			stack[depth] = *rw
			depth++
		case elfx.CFARestoreState:
			if depth == 0 {
				return false
			}
			depth--
			*rw = stack[depth] // includes the CFA rule, as libgcc does
		case elfx.CFADefCFA:
			reg, o := b.ULEB(), b.ULEB()
			rw.cfa = defCFA(reg, int64(o))
		case elfx.CFADefCFARegister:
			reg := b.ULEB()
			o := int64(0)
			if rw.cfa.kind == cfaRegOff {
				o = rw.cfa.off
			}
			rw.cfa = defCFA(reg, o)
		case elfx.CFADefCFAOffset:
			o := b.ULEB()
			if rw.cfa.kind == cfaRegOff {
				rw.cfa.off = int64(o)
			}
		case elfx.CFADefCFAExpression:
			eoff, elen, ok := readBlock(&b)
			if !ok {
				return false
			}
			rw.cfa = rule{kind: cfaExpr, eoff: eoff, elen: elen}
		case elfx.CFAExpression, elfx.CFAValExpression:
			reg := b.ULEB()
			eoff, elen, ok := readBlock(&b)
			if !ok {
				return false
			}
			k := ruleExpr
			if op == elfx.CFAValExpression {
				k = ruleValExpr
			}
			rw.setReg(reg, rule{kind: k, eoff: eoff, elen: elen})
		case elfx.CFAOffsetExtendedSf:
			reg := b.ULEB()
			rw.setReg(reg, rule{kind: ruleOffset, off: b.SLEB() * c.dataAlign})
		case elfx.CFADefCFASf:
			reg := b.ULEB()
			rw.cfa = defCFA(reg, b.SLEB()*c.dataAlign)
		case elfx.CFADefCFAOffsetSf:
			o := b.SLEB() * c.dataAlign
			if rw.cfa.kind == cfaRegOff {
				rw.cfa.off = o
			}
		case elfx.CFAValOffset:
			reg := b.ULEB()
			rw.setReg(reg, rule{kind: ruleValOffset, off: int64(b.ULEB()) * c.dataAlign})
		case elfx.CFAValOffsetSf:
			reg := b.ULEB()
			rw.setReg(reg, rule{kind: ruleValOffset, off: b.SLEB() * c.dataAlign})
		case elfx.CFAGNUArgsSize:
			b.ULEB()
		case elfx.CFAGNUNegativeOffsetExtended:
			reg := b.ULEB()
			rw.setReg(reg, rule{kind: ruleOffset, off: -int64(b.ULEB()) * c.dataAlign})
		default:
			return false
		}
		if b.Bad {
			return false
		}
	}
	return !b.Bad
}

func defCFA(reg uint64, off int64) rule {
	if reg >= numRegs {
		return rule{kind: cfaNone}
	}
	return rule{kind: cfaRegOff, reg: uint8(reg), off: off}
}

// rowAt computes the row of f for the ELF address pc into rw.
func rowAt(f *fde, pc uint64, rw *row, stack *rememberStack) bool {
	c := f.cie
	*rw = c.initial
	return execCFAStack(c, f.insOff, f.insEnd, rw, &c.initial, pc, f.start, stack)
}

// rowCacheSlots is how many rows a table keeps (rowCache): a power of two.
const rowCacheSlots = 128

// rowCache keeps the rows a table computed last, by address. The samples
// and events of a program come back to the same few return addresses (a
// server's system call wrappers and their callers), and a row is a
// function of its FDE and address alone, which running the FDE's
// instructions from its start computes again each time. Direct-mapped,
// allocated at the first row; shared by the goroutines that unwind with
// the table.
type rowCache struct {
	mu    sync.Mutex
	slots *[rowCacheSlots]rowSlot
}

type rowSlot struct {
	f  *fde
	pc uint64
	rw row
}

// rowAt is rowAt through t's cache (t nil: none).
func (t *Table) rowAt(f *fde, pc uint64, rw *row, stack *rememberStack) bool {
	if t == nil {
		return rowAt(f, pc, rw, stack)
	}
	i := (pc * 0x9e3779b97f4a7c15) >> (64 - 7) // rowCacheSlots = 1<<7
	c := &t.rows
	c.mu.Lock()
	if c.slots != nil && c.slots[i].f == f && c.slots[i].pc == pc {
		*rw = c.slots[i].rw
		c.mu.Unlock()
		return true
	}
	c.mu.Unlock()
	if !rowAt(f, pc, rw, stack) {
		return false
	}
	c.mu.Lock()
	if c.slots == nil {
		c.slots = new([rowCacheSlots]rowSlot)
	}
	c.slots[i] = rowSlot{f: f, pc: pc, rw: *rw}
	c.mu.Unlock()
	return true
}
