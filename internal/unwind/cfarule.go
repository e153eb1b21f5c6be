package unwind

// CFARule returns how the CFA is computed at the ELF address pc: CFA =
// register reg (DWARF number: 7 rsp, 6 rbp) + off. ok is false when no FDE
// covers pc or the rule is an expression. Static analyses use it to turn
// rsp- and rbp-relative memory operands into CFA offsets (DW_OP_fbreg with a
// DW_OP_call_frame_cfa frame base).
func (t *Table) CFARule(pc uint64) (reg int, off int64, ok bool) {
	f := t.find(pc)
	if f == nil {
		return 0, 0, false
	}
	var rw row
	var stack rememberStack
	if !rowAt(f, pc, &rw, &stack) || rw.cfa.kind != cfaRegOff {
		return 0, 0, false
	}
	return int(rw.cfa.reg), rw.cfa.off, true
}
