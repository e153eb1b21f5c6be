// Package dwarfx reads the variables of native (C, C++, Go) x86-64 ELF
// programs from their DWARF: which variables are in scope at a PC, where
// each lives there, their types, and the evaluation of their locations
// against the registers and memory of one stack frame.
//
// What it owns:
//
//   - An index of one ELF object (Info): compilation units by address, and
//     per unit — parsed on the first lookup that lands in it — the concrete
//     out-of-line functions (clones such as f.constprop.0 included, named
//     after their DW_AT_abstract_origin), their lexical blocks and inlined
//     calls (the tree elfx.FuncWalker builds, from which the symbolizer
//     makes frames too), and their parameters and locals.
//     Info.Function(pc) and Function.Variables(pc) are binary searches
//     over sorted interval tables; FunctionsNamed, Functions, Global and
//     Globals parse every unit on their first call.
//   - Locations: single expressions, DWARF 4 .debug_loc and DWARF 5
//     .debug_loclists lists (every DW_LLE_* kind, base addresses, indexes
//     into .debug_addr through DW_AT_addr_base and DW_FORM_loclistx through
//     DW_AT_loclists_base; GCC's location views are skipped), and
//     DW_AT_const_value. Variable.Location(pc) picks the expression valid at
//     a PC, or reports none (optimized out there).
//   - Evaluation (Location.Eval) of DWARF expressions in a Frame: registers,
//     CFA, load bias and a memory reader supplied by the caller. The stack
//     machine is elfx.Expr, which the unwinder's CFI rules use too; this
//     package gives it the unit and function (frame base, .debug_addr, base
//     types) and assembles pieces and values. Registers,
//     breg/bregx, fbreg through the function's DW_AT_frame_base,
//     call_frame_cfa, addr/addrx/constx (biased), constants, stack and
//     arithmetic operations, branches, deref/deref_size, stack_value,
//     implicit_value, piece and bit_piece (pieces assembled, absent pieces
//     reported as missing bytes), and the DWARF 5 typed operations
//     (const_type, regval_type, deref_type, convert, reinterpret, with
//     float arithmetic) that GCC emits at -O2. DW_OP_entry_value of a
//     register asks Frame.EntryValue, which the caller answers from the
//     caller frame's call site (Function.CallSite, CallSite.Calls,
//     CallSite.Value: DW_TAG_call_site and its parameters, or GCC's GNU
//     forms); without it, ErrEntryValue. Unsupported:
//     TLS (form_tls_address), DWARF procedures (call2/call4/call_ref),
//     implicit pointers (ErrImplicitPointer), xderef, push_object_address,
//     typed values wider than 8 bytes.
//   - Types (Type): base types, pointers, structs, unions and classes with
//     member offsets and bitfields, arrays (multi-dimensional as arrays of
//     arrays), enums, typedefs (kept; Underlying strips them), function
//     types; const and volatile are transparent. Type.Format renders values
//     as gdb's print does; Int and Float decode numbers.
//
// What it must not do: stop, trace or read processes (no ptrace, no /proc),
// open perf events, unwind stacks, or know about recordings. Callers give
// it a Frame: the registers valid in that frame (all of them for the
// innermost frame; for caller frames those restored by CFI, see package
// unwind), its CFA, the object's load bias and a memory reader that
// returns the memory as it was at the sample. Addresses taken and returned
// by lookups are ELF virtual addresses of the object; Frame.Bias converts
// addresses in the program's memory.
//
// Use, for one sampled frame:
//
//	info, err := dwarfx.Open(path)         // once per object
//	pc := runtimePC - bias                 // caller frames: return address - 1 - bias
//	fn, ok := info.Function(pc)
//	for _, v := range fn.Variables(pc) {   // v.Inline != nil: of an inlined call
//		val, err := v.Read(pc, &frame)     // errors.Is(err, dwarfx.ErrUnavailable): missing
//		fmt.Println(v.Name, v.Type().FormatValue(val))
//	}
//
// Variable.Type is a method, not a field, so that finding the variables
// live at a PC never converts types; the type is read on first use.
//
// Why not delve's pkg/dwarf/op and pkg/dwarf/loclist (v1.27): op knows the
// DWARF 4 operations only — no DW_OP_addrx/constx, entry_value,
// implicit_pointer or the typed operations (convert, regval_type,
// const_type, deref_type) that GCC 12 emits at -O2 for values computed
// from floating-point registers — rejects bit_piece, and returns an
// optimized-out piece as a zero immediate, indistinguishable from a real 0,
// where this package must report the bytes as missing. loclist would have
// saved about 150 lines, not worth a dependency on all of delve in go.mod.
// The decoders here are fuzzed (FuzzEval, FuzzLoclists) and never panic on
// malformed DWARF.
//
// x86-64 only: registers are numbered as in the System V psABI (0 rax,
// 1 rdx, 2 rcx, 3 rbx, 4 rsi, 5 rdi, 6 rbp, 7 rsp, 8-15 r8-r15, 16 rip,
// 17-32 xmm0-xmm15).
package dwarfx
