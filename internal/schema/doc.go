// Package schema makes and reads vProf schemas: the list of variables of a
// program worth sampling, each with the tags that say how the program uses
// it (vProf §3.1, docs/vprof.md). culprit record --values samples the
// variables of a schema and carries their tags into the recording, where
// culprit diagnose reads them to infer bug patterns.
//
// It owns:
//
//   - the schema file format: header comments (format version, binary,
//     build-id, component) and one CSV line per variable,
//     file,function,line,variable,type,tags, with tags from {loop, cond,
//     args} joined by "|", or "none" (Parse, Write, Schema.Lookup);
//   - schema generation from a binary alone (Generate): every global of
//     scalar type (pointers included: C's scalar types) and every scalar
//     member of a global struct ("cfg.limit"), and the scalar locals and
//     parameters the machine code uses as loop induction variables, in
//     branch conditions or as call arguments. Variables and their locations
//     at each instruction come from DWARF (package dwarfx, location lists
//     included; frame slots are placed with the CFA rules of package
//     unwind); their uses come from the x86-64 disassembly
//     (golang.org/x/arch/x86/x86asm) of each function, split into basic
//     blocks, with dominators and natural loops;
//   - basic blocks of any function of an executable by its symbol table
//     (Code.Block), which culprit diagnose reports where anomalous values
//     were read.
//
// Why hand-written here: vProf's schema generator is an LLVM pass over the
// source, which needs the program's build. culprit works on unmodified
// binaries, so it reads what the compiler left: a variable whose register
// or frame slot feeds a cmp/test (or an arithmetic instruction) that a
// conditional jump, cmov or set consumes is cond; one stepped by a constant
// inside a natural loop, in a block that runs on every iteration or whose
// loop branches test it, is loop (LLVM's induction variables are such
// recurrences, compared or not); one in an argument register (rdi, rsi,
// rdx, rcx, r8, r9, xmm0-7) or stack argument slot at a call is args. No
// library does this: debuggers and disassemblers give locations and
// instructions, not how a variable is used, and x86asm is the decoder
// the Go toolchain itself uses (a dependency of a few thousand lines,
// against LLVM's MC layer through cgo).
//
// The analysis is deliberately local: each basic block is simulated from an
// empty state, following the variables values came from through moves,
// loads and arithmetic; registers that DWARF places a variable in carry it
// across blocks. Calls through function pointers, variables kept only in
// memory reached through pointers, and uses in other functions are not
// seen, as in vProf (whose call graph misses function pointers too).
// x86-64 only; arguments follow the System V ABI (Go's register ABI is not
// modelled).
//
// It does not read processes or recordings.
package schema
