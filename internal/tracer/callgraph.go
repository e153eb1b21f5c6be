package tracer

import (
	"debug/elf"
	"fmt"
	"sort"

	"golang.org/x/arch/x86/x86asm"
)

// CallGraph reads the static call graph of an executable from its x86-64
// disassembly: for each function symbol, the functions whose first
// instruction a CALL or JMP in it targets directly (calls through the PLT
// or a register are not seen). Names are symbol names; each callee once.
func CallGraph(path string) (map[string][]string, error) {
	g, _, _, err := callGraph(path)
	return g, err
}

// JumpsOut returns the functions of the executable at path that hand
// their frame to a shared library's function by a tail call: an
// unconditional JMP into the PLT (lua5.4's l_alloc ends with `jmp
// realloc@plt`). While such a call runs the library function, an
// untraced stack holds no frame of the function that jumped: the
// library's frames return straight to its caller.
func JumpsOut(path string) (map[string]bool, error) {
	_, _, out, err := callGraph(path)
	return out, err
}

// StackRoots returns root and the functions root hands its frame to by a
// tail call (an unconditional JMP to a function's first instruction, as
// CPython's main does to Py_BytesMain), and theirs in turn, read from the
// disassembly of the executable at path. A sampled stack taken during
// such a callee holds it where root would be, not root: these are the
// names that mark a sample as taken under root. Nil (and no error) when
// the executable has no function root.
func StackRoots(path, root string) ([]string, error) {
	_, tail, _, err := callGraph(path)
	if err != nil {
		return nil, err
	}
	if _, ok := tail[root]; !ok {
		return nil, nil
	}
	out := []string{root}
	seen := map[string]bool{root: true}
	for i := 0; i < len(out); i++ {
		for _, c := range tail[out[i]] {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	return out, nil
}

// callGraph is CallGraph, and apart from it the tail calls: for each
// function, those an unconditional JMP in it targets (every function has
// an entry, nil if it makes none); and out, the functions with an
// unconditional JMP into the PLT (JumpsOut).
func callGraph(path string) (g, tail map[string][]string, out map[string]bool, err error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("reading %s: %w", path, err)
	}
	var plts [][2]uint64
	for _, s := range f.Sections {
		if s.Name == ".plt" || s.Name == ".plt.sec" || s.Name == ".plt.got" {
			plts = append(plts, [2]uint64{s.Addr, s.Addr + s.Size})
		}
	}
	out = map[string]bool{}
	defer f.Close()
	syms, _ := f.Symbols()
	var funcs []funcSym
	seen := map[uint64]bool{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Section == elf.SHN_UNDEF || s.Value == 0 || s.Size == 0 || seen[s.Value] {
			continue
		}
		seen[s.Value] = true
		funcs = append(funcs, funcSym{name: s.Name, value: s.Value, end: s.Value + s.Size})
	}
	nameFuncs(funcs)
	if len(funcs) == 0 {
		return nil, nil, nil, fmt.Errorf("%s has no function symbols: no call graph", path)
	}
	sort.Slice(funcs, func(i, j int) bool { return funcs[i].value < funcs[j].value })
	byStart := map[uint64]string{}
	for _, fs := range funcs {
		byStart[fs.value] = fs.name
	}
	g, tail = map[string][]string{}, map[string][]string{}
	for _, fs := range funcs {
		var sec *elf.Section
		for _, s := range f.Sections {
			if s.Flags&elf.SHF_EXECINSTR != 0 && fs.value >= s.Addr && fs.end <= s.Addr+s.Size {
				sec = s
				break
			}
		}
		if sec == nil {
			continue
		}
		code := make([]byte, fs.end-fs.value)
		if _, err := sec.ReadAt(code, int64(fs.value-sec.Addr)); err != nil {
			continue
		}
		callees, jumps := map[string]bool{}, map[string]bool{}
		for pc := 0; pc < len(code); {
			in, err := x86asm.Decode(code[pc:], 64)
			if err != nil {
				pc++
				continue
			}
			if in.Op == x86asm.CALL || in.Op == x86asm.JMP {
				if rel, ok := in.Args[0].(x86asm.Rel); ok {
					target := fs.value + uint64(pc+in.Len) + uint64(int64(rel))
					if name, ok := byStart[target]; ok && name != fs.name && !callees[name] {
						callees[name] = true
						g[fs.name] = append(g[fs.name], name)
					}
					if name, ok := byStart[target]; ok && name != fs.name && in.Op == x86asm.JMP && !jumps[name] {
						jumps[name] = true
						tail[fs.name] = append(tail[fs.name], name)
					}
					if in.Op == x86asm.JMP {
						for _, r := range plts {
							if target >= r[0] && target < r[1] {
								out[fs.name] = true
							}
						}
					}
				}
			}
			pc += in.Len
		}
		if _, ok := g[fs.name]; !ok {
			g[fs.name] = nil
		}
		if _, ok := tail[fs.name]; !ok {
			tail[fs.name] = nil
		}
	}
	return g, tail, out, nil
}
