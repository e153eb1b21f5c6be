package tracer

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/culprit-dev/culprit/internal/elfx"
	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/traceprog"
	"github.com/culprit-dev/culprit/internal/unwind"
)

// Point probes: a source line (--line FILE:LINE) or a USDT probe
// (--usdt PROVIDER:NAME), each hit recorded as it happens, and USDT
// begin/end pairs (--usdt PROVIDER:BEGIN:END), each timed as a call. A
// LIB@ prefix puts them in a shared library.

// splitLib takes a LIB@ prefix off a --line or --usdt spec.
func splitLib(flag, s string) (lib, rest string, err error) {
	i := strings.Index(s, "@")
	if i < 0 {
		return "", s, nil
	}
	if i == 0 || i == len(s)-1 {
		return "", "", fmt.Errorf("--%s %q: want LIB@SPEC, LIB a library's path or name (libfoo.so.1, libfoo)", flag, s)
	}
	return s[:i], s[i+1:], nil
}

// ParseLine reads [LIB@]FILE:LINE.
func ParseLine(s string) (Pattern, error) {
	lib, spec, err := splitLib("line", s)
	if err != nil {
		return Pattern{}, err
	}
	i := strings.LastIndex(spec, ":")
	if i <= 0 {
		return Pattern{}, fmt.Errorf("--line %q: want [LIB@]FILE:LINE, e.g. parse.c:120", s)
	}
	n, err := strconv.Atoi(spec[i+1:])
	if err != nil || n <= 0 {
		return Pattern{}, fmt.Errorf("--line %q: the line must be a positive number", s)
	}
	return Pattern{Lib: lib, Line: spec}, nil
}

// ParseUSDT reads [LIB@]PROVIDER:NAME, or [LIB@]PROVIDER:BEGIN:END for a
// pair of probes timed as one call from BEGIN to the next END on the
// thread.
func ParseUSDT(s string) (Pattern, error) {
	lib, spec, err := splitLib("usdt", s)
	if err != nil {
		return Pattern{}, err
	}
	parts := strings.Split(spec, ":")
	if len(parts) < 2 || len(parts) > 3 || slices.Contains(parts, "") {
		return Pattern{}, fmt.Errorf("--usdt %q: want [LIB@]PROVIDER:NAME, e.g. myapp:request_start, or PROVIDER:BEGIN:END to time the code between two probes", s)
	}
	if len(parts) == 3 && parts[1] == parts[2] {
		return Pattern{}, fmt.Errorf("--usdt %q: the begin and end probes must differ", s)
	}
	return Pattern{Lib: lib, USDT: spec}, nil
}

// lineAddrs returns the addresses where the code of source line spec
// (FILE:LINE; FILE matches a path's last elements) begins: every row of
// the line table that starts a run of rows for that line, statement rows
// only. A line the compiler spread over several places (an unrolled or
// duplicated body) has several.
func lineAddrs(f *elf.File, obj, spec string) ([]uint64, error) {
	i := strings.LastIndex(spec, ":")
	file, line := spec[:i], spec[i+1:]
	want, _ := strconv.Atoi(line)
	d, err := f.DWARF()
	if err != nil {
		return nil, fmt.Errorf("--line %s: %s has no DWARF line table (build it with -g): %v", spec, obj, err)
	}
	matches := func(path string) bool {
		return path == file || strings.HasSuffix(path, "/"+strings.TrimPrefix(file, "./")) || filepath.Base(path) == file && !strings.Contains(file, "/")
	}
	seen := map[uint64]bool{}
	var out []uint64
	files := map[string]bool{}
	r := d.Reader()
	for {
		cu, err := r.Next()
		if err != nil || cu == nil {
			break
		}
		if cu.Tag != dwarf.TagCompileUnit {
			r.SkipChildren()
			continue
		}
		lr, err := d.LineReader(cu)
		r.SkipChildren()
		if err != nil || lr == nil {
			continue
		}
		var e dwarf.LineEntry
		prevLine, prevFile := -1, ""
		for lr.Next(&e) == nil {
			name := ""
			if e.File != nil {
				name = e.File.Name
			}
			if matches(name) {
				files[name] = true
				if e.Line == want && e.IsStmt && !e.EndSequence && (e.Line != prevLine || name != prevFile) && !seen[e.Address] {
					seen[e.Address] = true
					out = append(out, e.Address)
				}
			}
			prevLine, prevFile = e.Line, name
			if e.EndSequence {
				prevLine, prevFile = -1, ""
			}
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("--line %s: no source file %s in %s's line table", spec, file, obj)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--line %s: no code for line %d of %s (a comment, a blank line, or optimized away): try a line nearby", spec, want, file)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

// usdtSite is one USDT probe site: its address and semaphore (0: none),
// ELF virtual addresses, and its argument operands as the note gives them.
type usdtSite struct {
	pc, sem uint64
	args    string
}

// ParseUSDTArgs reads a USDT probe's argument operands, as sys/sdt.h
// writes them into the note on x86-64: space-separated SIZE@OPERAND, SIZE
// the bytes, negative for a signed value (-4@%edi, 8@-8(%rbp), 4@$5,
// 8@(%rax)); without SIZE@, 8 bytes unsigned. It returns the specs and the
// "argN:code:type" parameters, up to the first operand it cannot read
// (a symbol relative to %rip), and says why it stopped there ("" when it
// read them all). Memory operands may index: off(%base,%index,scale),
// off(,%index,scale).
func ParseUSDTArgs(s string) ([]traceprog.ArgSpec, []string, string) {
	return parseUSDTArgs(s, nil)
}

// parseUSDTArgs is ParseUSDTArgs with global(%rip) operands too: global
// resolves a symbol to the run-time offset from the probe's instruction
// pointer to it.
func parseUSDTArgs(s string, global func(sym string) (int64, bool)) ([]traceprog.ArgSpec, []string, string) {
	var specs []traceprog.ArgSpec
	var params []string
	for i, op := range strings.Fields(s) {
		if i >= traceprog.MaxArgs {
			return specs, params, fmt.Sprintf("only the first %d arguments are recorded", traceprog.MaxArgs)
		}
		size := 8
		if at := strings.Index(op, "@"); at > 0 {
			n, err := strconv.Atoi(op[:at])
			if err != nil {
				return specs, params, fmt.Sprintf("argument %d %q: unknown size", i+1, op)
			}
			size, op = n, op[at+1:]
		}
		abs := size
		if abs < 0 {
			abs = -abs
		}
		if abs != 1 && abs != 2 && abs != 4 && abs != 8 {
			return specs, params, fmt.Sprintf("argument %d: size %d", i+1, size)
		}
		a := traceprog.ArgSpec{Size: abs}
		switch {
		case strings.HasPrefix(op, "$"):
			v, err := strconv.ParseInt(op[1:], 0, 64)
			if err != nil {
				return specs, params, fmt.Sprintf("argument %d %q: not a number", i+1, op)
			}
			a.Kind, a.Off = traceprog.ArgConst, v
		case strings.HasPrefix(op, "%"):
			r, ok := traceprog.RegOffset(op[1:])
			if !ok {
				return specs, params, fmt.Sprintf("argument %d: register %s", i+1, op)
			}
			a.Kind, a.Reg = traceprog.ArgReg, r
		case strings.HasSuffix(op, ")") && (strings.Contains(op, "(%") || strings.Contains(op, "(,%")):
			open := strings.Index(op, "(")
			parts := strings.Split(op[open+1:len(op)-1], ",")
			reg := strings.TrimPrefix(parts[0], "%")
			r, ok := traceprog.RegOffset(reg)
			if reg == "" && len(parts) == 3 {
				r, ok = -1, true // no base: off(,%index,scale)
			}
			if !ok || len(parts) == 2 || len(parts) > 3 || reg != "" && !strings.HasPrefix(parts[0], "%") {
				return specs, params, fmt.Sprintf("argument %d %q: only off(%%reg) and off(%%base,%%index,scale) are read", i+1, op)
			}
			if len(parts) == 3 {
				x, okx := traceprog.RegOffset(strings.TrimPrefix(parts[1], "%"))
				sc, err := strconv.Atoi(parts[2])
				if !okx || !strings.HasPrefix(parts[1], "%") || err != nil || sc != 1 && sc != 2 && sc != 4 && sc != 8 {
					return specs, params, fmt.Sprintf("argument %d %q: only off(%%reg) and off(%%base,%%index,scale) are read", i+1, op)
				}
				a.Index, a.Scale = x, sc
			}
			var off int64
			if open > 0 {
				v, err := strconv.ParseInt(op[:open], 0, 64)
				switch {
				case err == nil:
					off = v
				case reg == "rip" && global != nil:
					// A global variable: sym(%rip) is the assembler's
					// spelling of its address.
					d, ok := global(op[:open])
					if !ok {
						return specs, params, fmt.Sprintf("argument %d %q: no symbol %s", i+1, op, op[:open])
					}
					off = d
				default:
					return specs, params, fmt.Sprintf("argument %d %q: an offset by symbol is not read", i+1, op)
				}
			}
			a.Kind, a.Reg, a.Off = traceprog.ArgMem, r, off
		default:
			return specs, params, fmt.Sprintf("argument %d %q: unknown operand", i+1, op)
		}
		code, typ := "u", "uint"
		if size < 0 {
			code, typ = "i", "int"
		}
		specs = append(specs, a)
		params = append(params, fmt.Sprintf("arg%d:%s%d:%s%d", i+1, code, abs, typ, abs*8))
	}
	return specs, params, ""
}

// usdtSites reads the .note.stapsdt notes of f (SystemTap's sys/sdt.h
// format, also DTrace's on Linux) for provider:name. Each note holds the
// probe's address, the link-time address of .stapsdt.base (to correct the
// first for prelinking) and the semaphore's address.
func usdtSites(f *elf.File, obj, spec, prov, name string) ([]usdtSite, error) {
	sec := f.Section(".note.stapsdt")
	if sec == nil {
		return nil, fmt.Errorf("--usdt %s: %s has no USDT probes (no .note.stapsdt section)", spec, obj)
	}
	data, err := sec.Data()
	if err != nil {
		return nil, fmt.Errorf("--usdt %s: reading %s: %w", spec, obj, err)
	}
	var base uint64
	if b := f.Section(".stapsdt.base"); b != nil {
		base = b.Addr
	}
	out, names := stapsdtSites(data, sec.Addralign, base, prov, name)
	if len(out) == 0 {
		sort.Strings(names)
		names = dedup(names)
		if len(names) > 12 {
			names = append(names[:12], "…")
		}
		return nil, fmt.Errorf("--usdt %s: %s has no probe %s:%s (it has %s)", spec, obj, prov, name, strings.Join(names, ", "))
	}
	return out, nil
}

// stapsdtSites reads the sites of probe prov:name from the contents of a
// .note.stapsdt section aligned to align, whose .stapsdt.base is at base;
// names are all the probes the notes hold.
func stapsdtSites(data []byte, align, base uint64, prov, name string) (out []usdtSite, names []string) {
	le := binary.LittleEndian
	for note := range elfx.Notes(data, le, align) {
		desc := note.Desc
		if note.Type != 3 || note.Name != "stapsdt" || len(desc) < 24 {
			continue
		}
		pc, lbase, sem := le.Uint64(desc), le.Uint64(desc[8:]), le.Uint64(desc[16:])
		strs := bytes.SplitN(desc[24:], []byte{0}, 4)
		if len(strs) < 2 {
			continue
		}
		p, n := string(strs[0]), string(strs[1])
		args := ""
		if len(strs) > 2 {
			args, _, _ = strings.Cut(string(strs[2]), "\x00")
		}
		names = append(names, p+":"+n)
		if p != prov || n != name {
			continue
		}
		if base != 0 && lbase != 0 {
			pc += base - lbase
			if sem != 0 {
				sem += base - lbase
			}
		}
		out = append(out, usdtSite{pc, sem, args})
	}
	return out, names
}

// symbolValue is the address of a data or function symbol of f.
func symbolValue(f *elf.File, name string) (uint64, bool) {
	for _, get := range []func() ([]elf.Symbol, error){f.Symbols, f.DynamicSymbols} {
		syms, _ := get()
		for _, s := range syms {
			if s.Name == name && s.Section != elf.SHN_UNDEF {
				return s.Value, true
			}
		}
	}
	return 0, false
}

func dedup(s []string) []string {
	var out []string
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// dataOffset converts the virtual address of a variable (a USDT
// semaphore) to its file offset.
func dataOffset(f *elf.File, vaddr uint64) (uint64, bool) {
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && vaddr >= p.Vaddr && vaddr < p.Vaddr+p.Filesz {
			return vaddr - p.Vaddr + p.Off, true
		}
	}
	return 0, false
}

// pointTargets resolves a --line or --usdt pattern in f; with args, a
// USDT probe's arguments are read at each hit.
func pointTargets(f *elf.File, obj string, bid []byte, p Pattern, args bool) ([]Target, error) {
	var out []Target
	if p.Line != "" {
		addrs, err := lineAddrs(f, obj, p.Line)
		if err != nil {
			return nil, err
		}
		for _, a := range addrs {
			if off, ok := fileOffset(f, a); ok {
				out = append(out, Target{Object: obj, BuildID: bid, Function: p.Line, Offset: off, Point: true})
			}
		}
		return out, nil
	}
	parts := strings.Split(p.USDT, ":")
	if len(parts) == 3 {
		t, err := pairTarget(f, obj, bid, p.USDT, parts[0], parts[1], parts[2], args)
		if err != nil {
			return nil, err
		}
		t.Every = p.Every
		return []Target{t}, nil
	}
	sites, err := usdtSites(f, obj, p.USDT, parts[0], parts[1])
	if err != nil {
		return nil, err
	}
	for _, s := range sites {
		off, ok := fileOffset(f, s.pc)
		if !ok {
			continue
		}
		t := Target{Object: obj, BuildID: bid, Function: p.USDT, Offset: off, Point: true}
		if args {
			// Up to the first operand that cannot be read; the record's
			// parameters say how many.
			pc := s.pc
			t.USDTArgs, t.Params, _ = parseUSDTArgs(s.args, func(sym string) (int64, bool) {
				v, ok := symbolValue(f, sym)
				// The uprobe's handler runs with the instruction pointer
				// at the probed instruction: the site's address.
				return int64(v) - int64(pc), ok
			})
		}
		if s.sem != 0 {
			if t.RefCtr, ok = dataOffset(f, s.sem); !ok {
				return nil, fmt.Errorf("--usdt %s: its semaphore at %#x is outside %s's segments", p.USDT, s.sem, obj)
			}
		}
		out = append(out, t)
	}
	return out, nil
}

// pairTarget resolves a USDT begin/end pair: one target, entered at every
// site of the begin probe and returned from at every site of the end.
//
// With args, each begin site's operands are read as a USDT probe's, up
// to the first one culprit does not read at any site, and recorded as
// the call's arguments.
func pairTarget(f *elf.File, obj string, bid []byte, spec, prov, begin, end string, args bool) (Target, error) {
	t := Target{Object: obj, BuildID: bid, Function: spec}
	cfi, _ := unwind.TableFromELF(f) // none: each begin's frame is its stack pointer
	ids := [2][]traceprog.ArgSpec{}
	hasID := true
	for k, name := range []string{begin, end} {
		sites, err := usdtSites(f, obj, spec, prov, name)
		if err != nil {
			return Target{}, err
		}
		for _, s := range sites {
			off, ok := fileOffset(f, s.pc)
			if !ok {
				continue
			}
			pc := s.pc
			if first, _, _ := parseUSDTArgs(s.args, func(sym string) (int64, bool) {
				v, ok := symbolValue(f, sym)
				return int64(v) - int64(pc), ok
			}); len(first) > 0 {
				ids[k] = append(ids[k], first[0])
			} else {
				hasID = false
			}
			var ref uint64
			if s.sem != 0 {
				if ref, ok = dataOffset(f, s.sem); !ok {
					return Target{}, fmt.Errorf("--usdt %s: the semaphore of %s:%s at %#x is outside %s's segments", spec, prov, name, s.sem, obj)
				}
			}
			if k == 0 {
				var rule uint32
				if cfi != nil {
					if reg, off, ok := cfi.CFARule(s.pc); ok && (reg == 6 || reg == 7) {
						rule = traceprog.PairCFA(reg == 6, off)
					}
				}
				t.BeginCFA = append(t.BeginCFA, rule)
				if args {
					specs, names, _ := parseUSDTArgs(s.args, func(sym string) (int64, bool) {
						v, ok := symbolValue(f, sym)
						return int64(v) - int64(pc), ok
					})
					if len(t.BeginArgs) == 0 || len(names) < len(t.Params) {
						t.Params = names
					}
					t.BeginArgs = append(t.BeginArgs, specs)
				}
				if !t.Pair {
					t.Offset, t.RefCtr, t.Pair = off, ref, true
				} else {
					t.Begins = append(t.Begins, off)
				}
			} else {
				t.Ends, t.EndRefCtr = append(t.Ends, off), ref
			}
		}
	}
	if !t.Pair || len(t.Ends) == 0 {
		return Target{}, fmt.Errorf("--usdt %s: a probe of the pair is outside %s's code", spec, obj)
	}
	if hasID {
		// Compared in the width of the narrowest site's operand: an
		// int at one site and a long at another hold the same id.
		w := 8
		for _, a := range append(slices.Clone(ids[0]), ids[1]...) {
			w = min(w, a.Size)
		}
		for k := range ids {
			for i := range ids[k] {
				ids[k][i].Size = w
			}
		}
		t.BeginID, t.EndID = ids[0], ids[1]
	}
	for i := range t.BeginArgs {
		t.BeginArgs[i] = t.BeginArgs[i][:len(t.Params)]
	}
	if len(t.Params) == 0 {
		t.BeginArgs = nil
	}
	if args {
		t.Ret = recording.RetVoid // an end returns no value
	}
	return t, nil
}
