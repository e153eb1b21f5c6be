// Package elfx is the low-level layer under everything that reads ELF
// objects and their DWARF: ELF notes (one reader, Notes, for the GNU
// build-id and the tracer's USDT probes) and the separate debug file the
// build-id names, the DWARF sections read once for debug/dwarf and for the
// callers that decode raw sections (DWARFData), the DWARF expression
// evaluator (Expr: dwarfx's variable locations and the unwinder's CFI
// rules), a bounds-checked byte and LEB128 reader, the DWARF
// expression and call-frame opcode tables, the x86-64 DWARF register
// numbers, the source name of a function's DIE (clone suffixes,
// demangling, abstract origins), and the tree of a unit's functions and
// the calls inlined into them (FuncWalker), from which the symbolizer makes
// frames and dwarfx makes scopes, and the PLT's stubs with the function
// each reaches (PLTStubs), which the symbolizer names frames after and
// schema follows calls through.
//
// debug/elf and debug/dwarf parse the containers; they do not expose a
// build-id, a reader for DWARF expressions and CFI instructions, or the
// opcode numbers, so those are here, once. Every package that decodes these
// bytes (proc, symbol, dwarfx, unwind, schema) uses this one, so that a
// crafted file fails the same way everywhere (a clear "malformed" result,
// never a panic) and the functions, inlined calls and names the symbolizer
// gives frames are those value sampling gives the variables it reads.
//
// It imports nothing of culprit's. culprit reads x86-64 objects: the reader
// is little-endian.
package elfx
