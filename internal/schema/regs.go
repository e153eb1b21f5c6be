package schema

import (
	"github.com/culprit-dev/culprit/internal/elfx"
	"golang.org/x/arch/x86/x86asm"
)

// Registers are tracked by one index: the general registers by their DWARF
// number (0 rax, 1 rdx, 2 rcx, 3 rbx, 4 rsi, 5 rdi, 6 rbp, 7 rsp, 8-15
// r8-r15) and xmm0-xmm15 as 16-31 (DWARF 17-32).
const (
	regRAX = elfx.RegRAX
	regRDX = elfx.RegRDX
	regRCX = elfx.RegRCX
	regRBX = elfx.RegRBX
	regRSI = elfx.RegRSI
	regRDI = elfx.RegRDI
	regRBP = elfx.RegRBP
	regRSP = elfx.RegRSP
	regR8  = elfx.RegR8
	regR9  = elfx.RegR9
	regXMM = 16
	nRegs  = 32
	noReg  = -1
)

// hwToDWARF maps the hardware encoding order of x86asm's register groups
// (rax, rcx, rdx, rbx, rsp, rbp, rsi, rdi, r8..r15) to DWARF numbers.
var hwToDWARF = [16]int{0, 2, 1, 3, 7, 6, 4, 5, 8, 9, 10, 11, 12, 13, 14, 15}

// regIndex returns the tracked index of an x86asm register and whether the
// register is narrower than 32 bits (a write to it keeps the other bits).
func regIndex(r x86asm.Reg) (idx int, partial bool) {
	switch {
	case r >= x86asm.AL && r <= x86asm.BH:
		// AL CL DL BL AH CH DH BH: the low and high bytes of rax..rbx.
		return hwToDWARF[int(r-x86asm.AL)%4], true
	case r >= x86asm.SPB && r <= x86asm.R15B:
		return hwToDWARF[4+int(r-x86asm.SPB)], true
	case r >= x86asm.AX && r <= x86asm.R15W:
		return hwToDWARF[int(r-x86asm.AX)], true
	case r >= x86asm.EAX && r <= x86asm.R15L:
		return hwToDWARF[int(r-x86asm.EAX)], false
	case r >= x86asm.RAX && r <= x86asm.R15:
		return hwToDWARF[int(r-x86asm.RAX)], false
	case r >= x86asm.X0 && r <= x86asm.X15:
		return regXMM + int(r-x86asm.X0), false
	}
	return noReg, false
}

// dwarfRegIndex maps a DWARF register number to the tracked index.
func dwarfRegIndex(n uint64) int {
	switch {
	case n <= elfx.RegR15:
		return int(n)
	case n >= elfx.RegXMM0 && n <= elfx.RegXMM15:
		return regXMM + int(n-elfx.RegXMM0)
	}
	return noReg
}

// Integer and floating-point argument registers of the System V x86-64 ABI,
// in order.
var (
	intArgRegs   = [6]int{regRDI, regRSI, regRDX, regRCX, regR8, regR9}
	floatArgRegs = [8]int{regXMM, regXMM + 1, regXMM + 2, regXMM + 3, regXMM + 4, regXMM + 5, regXMM + 6, regXMM + 7}
)

// callerSaved reports whether a call may change the register.
func callerSaved(r int) bool {
	switch r {
	case regRBX, regRBP, regRSP, 12, 13, 14, 15:
		return false
	}
	return true
}
