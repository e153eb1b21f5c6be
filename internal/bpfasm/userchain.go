package bpfasm

import "github.com/cilium/ebpf/asm"

// x86-64 struct pt_regs offsets of the registers a user walk reads.
const (
	PtRegsBP = 32
	PtRegsIP = 128
	PtRegsCS = 136
)

// UserCS64 is x86-64's __USER_CS: the code segment of 64-bit user code.
const UserCS64 = 0x33

// UserChain describes a program's walk of the current thread's user call
// chain along its frame pointers (WalkUser).
type UserChain struct {
	// Buf is the stack slot holding the address of the buffer the chain
	// is written to, 8 bytes an address, Depth addresses long.
	Buf int16
	// FP and Frame are stack slots the walk uses: 8 and 16 bytes.
	FP, Frame int16
	// Counted has the walk keep how many addresses it wrote in the 8
	// bytes below the buffer (memory, whose value the verifier does not
	// follow: a count on the stack would have it check what follows the
	// walk once for each count).
	Counted bool
	// Zero has each address not walked below Depth set to 0 (the chain
	// then ends at its first 0).
	Zero bool
	// Depth is the most addresses walked, the user IP included.
	Depth int
	// MMOff places task_struct's mm.
	MMOff int16
	// Helper is the label jumped to where the program cannot walk the
	// chain: a thread in 32-bit mode (another code segment) or without an
	// address space (exiting).
	Helper string
}

// WalkUser emits the walk of the current thread's user call chain that
// the kernel's walk makes (perf_callchain_user, bpf_get_stack's): the user
// IP, then each frame's return address, from the user registers' BP up
// the chain of saved frame pointers, to the first frame that cannot be
// read (bpf_probe_read_user has the kernel walk's access_ok and fault
// rules) or Depth addresses. Where the kernel reads a frame in the first
// page (a frame pointer of 0 at the chain's root, or a small integer in
// code without frame pointers) and page-faults, microseconds of the
// thread's time each, the walk stops before the read: that page cannot
// be mapped (vm.mmap_min_addr), so the chain is the same. The kernel then
// replaces the addresses of a return probe's trampoline (FixReturns). It
// falls through when the chain is written, the registers R0–R5 used.
func (b *Builder) WalkUser(c UserChain) {
	walked := b.NewLabel("uwalked")
	b.Emit(
		asm.FnGetCurrentTaskBtf.Call(),
		asm.Mov.Reg(asm.R1, asm.R0),
		// A thread without its address space (exiting).
		asm.LoadMem(asm.R2, asm.R0, c.MMOff, asm.DWord),
		asm.JEq.Imm(asm.R2, 0, c.Helper),
		asm.FnTaskPtRegs.Call(),
		asm.LoadMem(asm.R1, asm.R0, PtRegsCS, asm.DWord),
		asm.JNE.Imm(asm.R1, UserCS64, c.Helper),
		asm.LoadMem(asm.R1, asm.R0, PtRegsIP, asm.DWord),
		asm.LoadMem(asm.R2, asm.RFP, c.Buf, asm.DWord),
		asm.StoreMem(asm.R2, 0, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.R0, PtRegsBP, asm.DWord),
		asm.StoreMem(asm.RFP, c.FP, asm.R1, asm.DWord),
	)
	if c.Counted {
		b.Emit(StoreImm64(asm.R2, -8, 1))
	}
	for i := int16(1); i < int16(c.Depth); i++ {
		b.Emit(asm.LoadMem(asm.R2, asm.RFP, c.Buf, asm.DWord))
		if c.Zero {
			// The chain ends here unless this frame is read.
			b.Emit(StoreImm64(asm.R2, i*8, 0))
		}
		b.Emit(
			// A frame pointer in the first page is a read that
			// faults: the walk ends without it.
			asm.LoadMem(asm.R3, asm.RFP, c.FP, asm.DWord),
			asm.JLT.Imm(asm.R3, 4096, walked),
			asm.Mov.Reg(asm.R1, asm.RFP),
			asm.Add.Imm(asm.R1, int32(c.Frame)),
			asm.Mov.Imm(asm.R2, 16),
			asm.FnProbeReadUser.Call(),
			asm.JNE.Imm(asm.R0, 0, walked),
			asm.LoadMem(asm.R1, asm.RFP, c.Frame+8, asm.DWord),
			asm.LoadMem(asm.R2, asm.RFP, c.Buf, asm.DWord),
			asm.StoreMem(asm.R2, i*8, asm.R1, asm.DWord),
			asm.LoadMem(asm.R1, asm.RFP, c.Frame, asm.DWord),
			asm.StoreMem(asm.RFP, c.FP, asm.R1, asm.DWord),
		)
		if c.Counted {
			b.Emit(StoreImm64(asm.R2, -8, int32(i)+1))
		}
	}
	b.Mark(walked)
}

// Returns places what FixReturns reads in the running kernel's structs
// (ReturnOffsets).
type Returns struct {
	Utask        int16 // task_struct.utask
	MM           int16 // task_struct.mm
	XolArea      int16 // mm_struct.uprobes_state.xol_area
	XolVaddr     int16 // xol_area.vaddr
	Instances    int16 // uprobe_task.return_instances
	OrigRetVaddr int16 // return_instance.orig_ret_vaddr
	Next         int16 // return_instance.next
}

// ReturnOffsets reads Returns from the kernel's BTF (why: for the error).
func ReturnOffsets(why string) (Returns, error) {
	var r Returns
	task, err := TaskOffsets(why, "utask", "mm")
	if err != nil {
		return r, err
	}
	mm, err := StructOffsets(why, "mm_struct", "uprobes_state")
	if err != nil {
		return r, err
	}
	xol, err := StructOffsets(why, "uprobes_state", "xol_area")
	if err != nil {
		return r, err
	}
	vaddr, err := StructOffsets(why, "xol_area", "vaddr")
	if err != nil {
		return r, err
	}
	ut, err := StructOffsets(why, "uprobe_task", "return_instances")
	if err != nil {
		return r, err
	}
	ri, err := StructOffsets(why, "return_instance", "orig_ret_vaddr", "next")
	if err != nil {
		return r, err
	}
	all := []int32{task[0], task[1], mm[0] + xol[0], vaddr[0], ut[0], ri[0], ri[1]}
	for _, o := range all {
		if o < 0 || o > 1<<15-8 {
			return r, errTooFar
		}
	}
	return Returns{Utask: int16(all[0]), MM: int16(all[1]), XolArea: int16(all[2]), XolVaddr: int16(all[3]),
		Instances: int16(all[4]), OrigRetVaddr: int16(all[5]), Next: int16(all[6])}, nil
}

type tooFar struct{}

func (tooFar) Error() string { return "a kernel struct's field lies too far for a BPF load" }

var errTooFar error = tooFar{}

// FixReturns emits what the kernel does to a user chain it walked
// (fixup_uretprobe_trampoline_entries, Linux 6.11 and later): a return
// probe armed on a call in flight put the address of its trampoline in
// place of the call's return address, and the thread's list of return
// instances (innermost first) keeps the real ones; the n-th trampoline
// address in the chain, in walk order, becomes the n-th instance's
// return address, until the list ends. c.Counted must be set; ri is a
// stack slot (8 bytes) it uses. Threads that never met a uprobe, or
// with no return instance, pay two loads.
func (b *Builder) FixReturns(c UserChain, r Returns, ri int16) {
	done := b.NewLabel("rdone")
	b.Emit(
		asm.FnGetCurrentTaskBtf.Call(),
		asm.LoadMem(asm.R1, asm.R0, r.Utask, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, done),
		asm.LoadMem(asm.R1, asm.R1, r.Instances, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, done),
		asm.StoreMem(asm.RFP, ri, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.R0, r.MM, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, done),
		asm.LoadMem(asm.R1, asm.R1, r.XolArea, asm.DWord),
		asm.JEq.Imm(asm.R1, 0, done),
		// R5: the trampoline's address, kept across the loop.
		asm.LoadMem(asm.R5, asm.R1, r.XolVaddr, asm.DWord),
	)
	for i := int16(0); i < int16(c.Depth); i++ {
		next := b.NewLabel("rnext")
		b.Emit(
			asm.LoadMem(asm.R2, asm.RFP, c.Buf, asm.DWord),
			asm.LoadMem(asm.R1, asm.R2, -8, asm.DWord),
			asm.JLE.Imm(asm.R1, int32(i), done),
			asm.LoadMem(asm.R3, asm.R2, i*8, asm.DWord),
			asm.JNE.Reg(asm.R3, asm.R5, next),
			asm.LoadMem(asm.R4, asm.RFP, ri, asm.DWord),
			asm.JEq.Imm(asm.R4, 0, done),
			asm.LoadMem(asm.R3, asm.R4, r.OrigRetVaddr, asm.DWord),
			asm.StoreMem(asm.R2, i*8, asm.R3, asm.DWord),
			asm.LoadMem(asm.R4, asm.R4, r.Next, asm.DWord),
			asm.StoreMem(asm.RFP, ri, asm.R4, asm.DWord),
		)
		b.Mark(next)
	}
	b.Mark(done)
}

// StoreImm64 is `*(u64 *)(dst + off) = v` (v sign-extended from 32 bits),
// which asm.StoreImm does not emit.
func StoreImm64(dst asm.Register, off int16, v int32) asm.Instruction {
	return asm.Instruction{OpCode: asm.StoreImmOp(asm.DWord), Dst: dst, Offset: off, Constant: int64(v)}
}
