package elfx

import "fmt"

// x86-64 DWARF register numbers (System V psABI, figure 3.36): the general
// registers in DWARF's order, the return address column (rip), then the
// SSE registers.
const (
	RegRAX   = 0
	RegRDX   = 1
	RegRCX   = 2
	RegRBX   = 3
	RegRSI   = 4
	RegRDI   = 5
	RegRBP   = 6
	RegRSP   = 7
	RegR8    = 8
	RegR9    = 9
	RegR15   = 15
	RegRA    = 16 // the return address column, rip
	RegXMM0  = 17
	RegXMM15 = 32
)

// regNames are the x86-64 DWARF register names.
var regNames = [...]string{
	"rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rip",
	"xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
	"xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15",
}

// RegName returns the x86-64 name of DWARF register n ("rdi", "xmm0"), or
// "r<n>" for registers outside the general and SSE sets.
func RegName(n uint64) string {
	if n < uint64(len(regNames)) {
		return regNames[n]
	}
	return fmt.Sprintf("r%d", n)
}
