package unwind

import (
	"slices"
	"testing"
)

// The kernel's chain of a sample whose stack holds two return probes'
// trampolines: the entries its walk replaced give the real return
// addresses, and the unwinder continues past the trampolines with them.
func TestKernelReturns(t *testing.T) {
	const sp, tramp, ip = 0x7ff0_0000_0000, 0x7fff_ffff_e000, 0x5000
	stack := StackCopy{SP: sp, Data: putWords(
		0, 0, sp+0x30, tramp, // frame 0's: saved rbp, return address
		0, 0, sp+0x50, tramp,
		0, 0, 0, 0x4321, // the outermost: rbp 0
	)}
	var regs Regs
	regs[regRSP], regs[regRBP], regs[regRA] = sp, sp+0x10, ip
	kernel := []uint64{ip, 0x1111, 0x2222, 0x4321}
	rt := KernelReturns(regs, stack, kernel)
	if rt == nil || rt.Tramp != tramp || !slices.Equal(rt.Addrs, []uint64{0x1111, 0x2222}) {
		t.Fatalf("KernelReturns = %+v, want the trampoline %#x and [0x1111 0x2222]", rt, uint64(tramp))
	}
	stack.Returns = rt
	if pcs, _ := Unwind(regs, stack, nil, 16); !slices.Equal(pcs, kernel) {
		t.Errorf("unwound %x, want %x", pcs, kernel)
	}
	// Only the first return address known: the second trampoline stays.
	stack.Returns = &Returns{Tramp: tramp, Addrs: []uint64{0x1111}}
	if pcs, _ := Unwind(regs, stack, nil, 16); !slices.Equal(pcs, []uint64{ip, 0x1111, tramp, 0x4321}) {
		t.Errorf("one address: unwound %x", pcs)
	}
	stack.Returns = nil
	// The same chain: nothing was replaced.
	if rt := KernelReturns(regs, stack, []uint64{ip, tramp, tramp, 0x4321}); rt != nil {
		t.Errorf("no replacement: %+v", rt)
	}
	// Entries that differ at an address that is not the same page start
	// each time: not the same walk.
	bad := putWords(0, 0, sp+0x30, tramp, 0, 0, sp+0x50, 0x7777, 0, 0, 0, 0x4321)
	if rt := KernelReturns(regs, StackCopy{SP: sp, Data: bad}, kernel); rt != nil {
		t.Errorf("another walk: %+v", rt)
	}
	// A kernel chain longer than the copy holds: what lies beyond is not
	// known, the replacements found so far are.
	short := StackCopy{SP: sp, Data: stack.Data[:48]}
	if rt := KernelReturns(regs, short, kernel); rt == nil || !slices.Equal(rt.Addrs, []uint64{0x1111}) {
		t.Errorf("short copy: %+v", rt)
	}
}

// Inside a uprobe's handling at a function's entry the kernel's chain
// has the word at the stack pointer after the IP: the walk that begins
// so is the one that agrees.
func TestKernelReturnsAtEntry(t *testing.T) {
	const sp, tramp, ip = 0x7ff0_0000_0000, 0x7fff_ffff_e000, 0x5000
	stack := StackCopy{SP: sp, Data: putWords(
		0x3333, 0, sp+0x30, tramp, // the entry's return address at SP, not yet a trampoline
		0, 0, sp+0x50, tramp,
		0, 0, 0, 0x4321,
	)}
	var regs Regs
	regs[regRSP], regs[regRBP], regs[regRA] = sp, sp+0x10, ip
	kernel := []uint64{ip, 0x3333, 0x1111, 0x2222, 0x4321}
	rt := KernelReturns(regs, stack, kernel)
	if rt == nil || rt.Tramp != tramp || !slices.Equal(rt.Addrs, []uint64{0x1111, 0x2222}) {
		t.Fatalf("KernelReturns = %+v, want the trampoline %#x and [0x1111 0x2222]", rt, uint64(tramp))
	}
}
