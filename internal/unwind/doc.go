// Package unwind turns one sample's user registers and copy of the user stack
// into a call chain, for x86-64 Linux processes.
//
// What it owns:
//
//   - Reading call frame information: the .eh_frame and .debug_frame sections
//     of an ELF object (CIEs and FDEs, pointer encodings, compressed sections)
//     into a Table of FDEs sorted by address, and evaluating CFA programs;
//     the DWARF expressions CFI uses (the PLT CFA expression, the signal
//     trampoline's register expressions) are evaluated by elfx.Expr, the one
//     DWARF expression evaluator, over the frame's registers and the stack
//     copy. The parser is this package's own: it evaluates rows without
//     allocating, which keeps per-sample cost low enough for the recorder to
//     call it online.
//   - Unwinding a copy of the stack (Unwind): CFI where an object maps the PC,
//     a single frame-pointer step where it does not, stopping whenever a read
//     falls outside the copy, a rule is unsupported, or the CFA fails to grow.
//   - Merging the CFI chain with the kernel's frame-pointer chain of the same
//     sample (Merge), so that frames skipped by frame pointers (leaf functions
//     and code built without them, such as Debian's libc) are restored while
//     the frame-pointer chain still supplies callers beyond the stack copy.
//   - Giving back the return addresses that return probes' trampolines
//     took on the stack, from the kernel's frame-pointer chain of the same
//     sample (KernelReturns, StackCopy.Returns).
//   - Caching loaded tables per file (TableCache).
//
// What it must not do: open perf events, read process memory or /proc, record
// anything, or know symbol names. Callers hand it registers, a stack copy and a
// Resolver from PC to (Table, load bias); it returns bare addresses.
//
// Addresses: a Table is in ELF virtual addresses of its file. A Module pairs a
// Table with Bias = runtime address - ELF vaddr for one mapping; Table.Bias
// computes it from a mapping's start and file offset.
package unwind
