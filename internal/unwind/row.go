package unwind

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

// block reads a DWARF block operand (ULEB length + bytes) and returns it as
// an expression reference.
func (b *buf) block() (eoff uint32, elen uint16, ok bool) {
	n := b.uleb()
	if b.bad || n > uint64(b.end-b.off) || n > 0xffff {
		b.bad = true
		return 0, 0, false
	}
	eoff, elen = uint32(b.off), uint16(n)
	b.off += int(n)
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
	b := buf{b: c.sec, off: int(off), end: int(end)}
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
	for b.off < b.end {
		op := b.u8()
		switch op >> 6 {
		case 1: // DW_CFA_advance_loc
			loc += uint64(op&0x3f) * c.codeAlign
			if loc > pc {
				return true
			}
			continue
		case 2: // DW_CFA_offset
			o := int64(b.uleb()) * c.dataAlign
			rw.setReg(uint64(op&0x3f), rule{kind: ruleOffset, off: o})
			continue
		case 3: // DW_CFA_restore
			restore(uint64(op & 0x3f))
			continue
		}
		switch op {
		case 0x00: // nop
		case 0x01: // set_loc
			var v uint64
			if c.eh {
				var ok bool
				if v, ok = b.ptr(c.fdeEnc, c.secAddr, true); !ok {
					return false
				}
			} else if c.addrSize == 4 {
				v = uint64(b.u32())
			} else {
				v = b.u64()
			}
			if v > pc {
				return !b.bad
			}
			loc = v
		case 0x02: // advance_loc1
			loc += uint64(b.u8()) * c.codeAlign
			if loc > pc {
				return !b.bad
			}
		case 0x03: // advance_loc2
			loc += uint64(b.u16()) * c.codeAlign
			if loc > pc {
				return !b.bad
			}
		case 0x04: // advance_loc4
			loc += uint64(b.u32()) * c.codeAlign
			if loc > pc {
				return !b.bad
			}
		case 0x05: // offset_extended
			reg := b.uleb()
			rw.setReg(reg, rule{kind: ruleOffset, off: int64(b.uleb()) * c.dataAlign})
		case 0x06: // restore_extended
			restore(b.uleb())
		case 0x07: // undefined
			rw.setReg(b.uleb(), rule{kind: ruleUndefined})
		case 0x08: // same_value
			rw.setReg(b.uleb(), rule{kind: ruleSame})
		case 0x09: // register
			reg, src := b.uleb(), b.uleb()
			if src >= numRegs {
				rw.setReg(reg, rule{kind: ruleUndefined})
			} else {
				rw.setReg(reg, rule{kind: ruleRegister, reg: uint8(src)})
			}
		case 0x0a: // remember_state
			if depth == maxRemember {
				return false
			}
			stack[depth] = *rw
			depth++
		case 0x0b: // restore_state
			if depth == 0 {
				return false
			}
			depth--
			*rw = stack[depth] // includes the CFA rule, as libgcc does
		case 0x0c: // def_cfa
			reg, o := b.uleb(), b.uleb()
			rw.cfa = defCFA(reg, int64(o))
		case 0x0d: // def_cfa_register
			reg := b.uleb()
			o := int64(0)
			if rw.cfa.kind == cfaRegOff {
				o = rw.cfa.off
			}
			rw.cfa = defCFA(reg, o)
		case 0x0e: // def_cfa_offset
			o := b.uleb()
			if rw.cfa.kind == cfaRegOff {
				rw.cfa.off = int64(o)
			}
		case 0x0f: // def_cfa_expression
			eoff, elen, ok := b.block()
			if !ok {
				return false
			}
			rw.cfa = rule{kind: cfaExpr, eoff: eoff, elen: elen}
		case 0x10, 0x16: // expression, val_expression
			reg := b.uleb()
			eoff, elen, ok := b.block()
			if !ok {
				return false
			}
			k := ruleExpr
			if op == 0x16 {
				k = ruleValExpr
			}
			rw.setReg(reg, rule{kind: k, eoff: eoff, elen: elen})
		case 0x11: // offset_extended_sf
			reg := b.uleb()
			rw.setReg(reg, rule{kind: ruleOffset, off: b.sleb() * c.dataAlign})
		case 0x12: // def_cfa_sf
			reg := b.uleb()
			rw.cfa = defCFA(reg, b.sleb()*c.dataAlign)
		case 0x13: // def_cfa_offset_sf
			o := b.sleb() * c.dataAlign
			if rw.cfa.kind == cfaRegOff {
				rw.cfa.off = o
			}
		case 0x14: // val_offset
			reg := b.uleb()
			rw.setReg(reg, rule{kind: ruleValOffset, off: int64(b.uleb()) * c.dataAlign})
		case 0x15: // val_offset_sf
			reg := b.uleb()
			rw.setReg(reg, rule{kind: ruleValOffset, off: b.sleb() * c.dataAlign})
		case 0x2e: // GNU_args_size
			b.uleb()
		case 0x2f: // GNU_negative_offset_extended
			reg := b.uleb()
			rw.setReg(reg, rule{kind: ruleOffset, off: -int64(b.uleb()) * c.dataAlign})
		default:
			return false
		}
		if b.bad {
			return false
		}
	}
	return !b.bad
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
