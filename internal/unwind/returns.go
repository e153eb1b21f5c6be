package unwind

// KernelReturns finds the real return addresses of return probes'
// trampolines from the kernel's frame-pointer chain of the same sample
// (fp, innermost first, fp[0] the sampled IP), for Unwind to continue past
// the trampolines it meets on the stack copy (StackCopy.Returns). Nil when
// the kernel replaced none.
//
// Where a return probe (uretprobe) is armed on a call in flight, the stack
// holds the kernel's trampoline (the first byte of the [uprobes] page) in
// place of the call's return address, and the kernel keeps the real one in
// the thread's list of return instances, the innermost call first. The
// kernel's own chain (Linux 6.11 and later) walks frame pointers (entry 0
// the IP, then [rbp+8] and rbp = [rbp], while rbp is a user address) and
// then replaces the n-th trampoline address in the walk with the n-th
// return instance's address, in order. That walk does not meet every
// trampoline on the stack (it skips a frameless function's return address,
// and in code without frame pointers it leaves the stack), so the kernel's
// chain can put an address in the wrong frame, but the addresses it put
// in, in walk order, are the first return instances in list order: the
// real return addresses of the innermost trampolines on the stack, in
// order, whichever frames the walk met them in.
//
// KernelReturns repeats the kernel's walk on the stack copy from regs, as
// far as the copy holds it: an entry that differs from the kernel's is a
// trampoline the kernel replaced (every one holds the same address, which
// is the trampoline's), the kernel's entry its return address. An entry
// that differs while holding another address than the first such means the
// walks are not the same (nil) — unless the kernel's walk began with the
// word at the stack pointer, as it does for a sample inside a uprobe's
// handling at a function's entry, and that walk agrees. Past the copy's end the kernel's
// replacements cannot be told from the stack's own addresses: the list
// ends there, and trampolines an unwind meets beyond it stay.
func KernelReturns(regs Regs, stack StackCopy, fp []uint64) *Returns {
	rt, ok := kernelWalk(regs, stack, fp, false)
	if !ok {
		// Sampled inside a uprobe's handling at a function's entry
		// (push %rbp or endbr64 not yet run), the kernel puts the word
		// at the stack pointer, the entry's return address, after the
		// IP.
		rt, _ = kernelWalk(regs, stack, fp, true)
	}
	return rt
}

// kernelWalk repeats the kernel's walk for KernelReturns, with the word
// at the stack pointer as the second entry when atEntry; ok false when
// the walks differ elsewhere than at trampolines.
func kernelWalk(regs Regs, stack StackCopy, fp []uint64, atEntry bool) (*Returns, bool) {
	if len(fp) == 0 {
		return nil, true
	}
	var rt Returns
	same := func(raw, k uint64) bool {
		if raw == k {
			return true
		}
		if rt.Tramp == 0 {
			rt.Tramp = raw
		}
		if raw != rt.Tramp || raw&0xfff != 0 {
			return false
		}
		rt.Addrs = append(rt.Addrs, k)
		return true
	}
	if !same(regs[regRA], fp[0]) {
		return nil, false
	}
	i := 1
	if atEntry && i < len(fp) {
		ra, ok := stack.read8(regs[regRSP])
		if !ok || !same(ra, fp[i]) {
			return nil, false
		}
		i++
	}
	bp := regs[regRBP]
	for ; i < len(fp); i++ {
		next, ok1 := stack.read8(bp)
		ra, ok2 := stack.read8(bp + 8)
		if bp+8 < bp || !ok1 || !ok2 {
			break
		}
		if !same(ra, fp[i]) {
			return nil, false
		}
		bp = next
	}
	if len(rt.Addrs) == 0 {
		return nil, true
	}
	return &rt, true
}
