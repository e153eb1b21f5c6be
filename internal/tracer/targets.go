package tracer

import (
	"debug/dwarf"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/traceprog"

	"golang.org/x/arch/x86/x86asm"

	"github.com/culprit-dev/culprit/internal/dwarfx"
	"github.com/culprit-dev/culprit/internal/elfx"
	"github.com/culprit-dev/culprit/internal/proc"
)

// Pattern selects functions by a glob on their symbol names; Every > 1
// records only the first and every Every-th call of each.
type Pattern struct {
	Lib   string // "" for the main executable, else a library's path or name
	Glob  string
	Every uint32
	// UserOnly leaves out the compiler's and the C library's helpers
	// (Perun's userspace strategy): see helper.
	UserOnly bool
	// Line (FILE:LINE) or USDT (PROVIDER:NAME) make it a point probe
	// instead of a glob: see points.go.
	Line, USDT string
}

// IsPoint reports whether the pattern is a point probe.
func (p Pattern) IsPoint() bool { return p.Line != "" || p.USDT != "" }

// helper reports the functions a compiler or the C runtime adds to every
// program: names reserved to the implementation (starting with __, or _
// and a capital letter), the init and fini sections' functions and GCC's
// transactional-memory clone registration.
func helper(name string) bool {
	switch name {
	case "_init", "_fini", "frame_dummy", "register_tm_clones", "deregister_tm_clones":
		return true
	}
	return strings.HasPrefix(name, "__") || len(name) > 1 && name[0] == '_' && name[1] >= 'A' && name[1] <= 'Z'
}

// libColon returns the index of the colon that ends LIB in LIB:PATTERN:
// the first that is not one of a C++ scope's "::" (the first of a run of
// one or three), or -1.
func libColon(s string) int {
	for i := 0; i < len(s); {
		if s[i] != ':' {
			i++
			continue
		}
		j := i
		for j < len(s) && s[j] == ':' {
			j++
		}
		if (j-i)%2 == 1 {
			return i
		}
		i = j
	}
	return -1
}

// ParsePattern reads PATTERN[#N] (and, with lib set, a --lib LIB:PATTERN[#N]).
func ParsePattern(s string, lib bool) (Pattern, error) {
	var p Pattern
	if lib {
		i := libColon(s)
		if i <= 0 || i == len(s)-1 {
			return p, fmt.Errorf("--lib %q: want LIB:PATTERN, e.g. libc.so.6:malloc", s)
		}
		p.Lib, s = s[:i], s[i+1:]
	}
	if i := strings.LastIndex(s, "#"); i >= 0 {
		n, err := strconv.ParseUint(s[i+1:], 10, 32)
		if err != nil || n == 0 {
			return p, fmt.Errorf("%q: #N must be a positive whole number (every N-th call)", s)
		}
		p.Every, s = uint32(n), s[:i]
	}
	if s == "" {
		return p, fmt.Errorf("empty function pattern")
	}
	if _, err := path.Match(s, ""); err != nil {
		return p, fmt.Errorf("%q is not a valid glob: %v", s, err)
	}
	p.Glob = s
	return p, nil
}

// Target is one function to trace.
type Target struct {
	Object   string
	BuildID  []byte
	Function string
	// ProfileName is the name CPU profiles give the function when
	// Function is not it: an overload's or template instance's full name
	// ("geo::Accum<long>::add(long)") is "geo::Accum::add" there, one
	// name for all of them. "" when Function is that name.
	ProfileName string
	Offset      uint64   // file offset of the entry
	Rets        []uint64 // file offsets of its RET instructions (and tail jumps), with RetInsn
	// RetInsn: its return probes sit on Rets, not a uretprobe (Go code,
	// and native code in an object that unwinds: nativeRets).
	RetInsn bool
	Tails   []uint64 // file offsets of the jumps of its tail calls (native code, with RetInsn)
	Every   uint32
	Params  []string // "name:code:type" (see paramCode) when arguments are recorded
	Ret     string   // "code:type" of the return value when recorded and known
	// Point: a source line or USDT probe, each hit recorded; RefCtr the
	// file offset of its USDT semaphore (0: none).
	Point  bool
	RefCtr uint64
	// Pair: a USDT begin/end pair (--usdt PROVIDER:BEGIN:END), timed as
	// a call from its begin (Offset, and Begins for more sites of it) to
	// its end (Ends; EndRefCtr its semaphore).
	Pair         bool
	Begins, Ends []uint64
	EndRefCtr    uint64
	BeginCFA     []uint32 // traceprog.PairCFA of each begin site
	// USDTArgs are a USDT probe's argument operands (with --args).
	USDTArgs []traceprog.ArgSpec
	// BeginArgs are a pair's begin's operands at each begin site (with
	// --args), as many at each as Params names.
	BeginArgs [][]traceprog.ArgSpec
	// BeginID and EndID are a pair's first operand at each begin site and
	// at each end site, when every site of both has one culprit reads:
	// an end is matched to the begin with the same value (an id).
	BeginID, EndID []traceprog.ArgSpec
	// Entry is the function's symbol value (its DWARF low PC).
	Entry uint64
	// Code is the file offsets of the function's first byte and of the
	// byte after its last (its symbol's size), for naming a return
	// address as in it; zero for points and pairs.
	Code [2]uint64
	// Reads are memory the probe reads at entry (PlanReads), recorded
	// after the parameters' registers and named by ReadParams
	// ("c->id:i4:int").
	Reads      []traceprog.Read
	ReadParams []string
}

// findLib resolves a --lib name: a path as given, else a file of that name
// (or starting with it, as "libc" for libc.so.6) mapped by pid, else one in
// the system's library directories or beside the executable.
func findLib(name, exe string, pid int) (string, error) {
	if strings.Contains(name, "/") {
		if _, err := os.Stat(name); err != nil {
			return "", fmt.Errorf("--lib %s: %w", name, err)
		}
		return filepath.Abs(name)
	}
	match := func(p string) bool {
		b := filepath.Base(p)
		return b == name || strings.HasPrefix(b, name+".") || strings.HasPrefix(b, name+"-")
	}
	if pid > 0 {
		if maps, err := proc.Maps(pid); err == nil {
			for _, m := range maps {
				if strings.HasPrefix(m.Path, "/") && match(m.Path) {
					return m.Path, nil
				}
			}
		}
	}
	dirs := []string{filepath.Dir(exe), "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib", "/usr/local/lib"}
	if ld := os.Getenv("LD_LIBRARY_PATH"); ld != "" {
		dirs = append(strings.Split(ld, ":"), dirs...)
	}
	for _, d := range dirs {
		ents, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if !e.IsDir() && match(e.Name()) {
				p := filepath.Join(d, e.Name())
				if f, err := elf.Open(p); err == nil {
					f.Close()
					return p, nil
				}
			}
		}
	}
	return "", fmt.Errorf("--lib %s: no such library mapped by the process or in the library directories; give its path", name)
}

// Resolve finds the functions the patterns select in exe and the libraries
// they name, but those named in exclude. With args, each target's
// parameters are read from DWARF.
func Resolve(exe string, pid int, pats []Pattern, args bool, exclude ...map[string]bool) ([]Target, bool, error) {
	return ResolveEvery(exe, pid, pats, args, nil, exclude...)
}

// ResolveEvery is Resolve with a per-function sampling that takes the
// place of the patterns' #N (dynamic sampling).
func ResolveEvery(exe string, pid int, pats []Pattern, args bool, every map[string]uint32, exclude ...map[string]bool) ([]Target, bool, error) {
	var ex map[string]bool
	if len(exclude) > 0 {
		ex = exclude[0]
	}
	byObj := map[string][]Pattern{}
	var order []string
	for _, p := range pats {
		obj := exe
		if p.Lib != "" {
			var err error
			if obj, err = findLib(p.Lib, exe, pid); err != nil {
				return nil, false, err
			}
		}
		if _, ok := byObj[obj]; !ok {
			order = append(order, obj)
		}
		byObj[obj] = append(byObj[obj], p)
	}
	var out []Target
	isGo := false
	for _, obj := range order {
		ts, goObj, err := resolveObject(obj, byObj[obj], args, ex)
		for i := range ts {
			if n, ok := every[ts[i].Function]; ok {
				ts[i].Every = n
			}
		}
		if err != nil {
			return nil, false, err
		}
		if obj == exe {
			isGo = goObj
		}
		out = append(out, ts...)
	}
	return out, isGo, nil
}

type funcSym struct {
	name       string // what the trace calls it (nameFuncs); the symbol until named
	sym        string // the symbol
	clean      string // the demangled name without parameters or template arguments; "" for C
	value, end uint64
}

// nameFuncs gives each function of an object the name a trace records for
// it, which patterns match and reports show: a C++ or Rust symbol is
// demangled to the source-level name the CPU profile's frames carry
// (elfx.CleanName: "svc::parse_size", "shapes::svc::parse_size"), so that
// a trace's functions and the samples beside it name the same functions.
// Where two symbols of the object demangle to the same name (overloads,
// template or generic instances, a clone beside its original) each keeps
// its full demangled form ("geo::Accum<double>::add(...)"), or its symbol
// when that is the same too (Rust's generic instances, which differ only
// by hash; C++'s base and complete destructors). Cold parts are not
// counted: they are not traced. Other names are the symbol.
func nameFuncs(funcs []funcSym) {
	clean := make([]string, len(funcs))
	n := map[string]int{}
	for i := range funcs {
		fs := &funcs[i]
		fs.sym = fs.name
		if !elfx.IsMangled(fs.sym) {
			continue
		}
		if c := elfx.CleanName(fs.sym); c != fs.sym {
			clean[i] = c
			if Traceable(fs.sym) {
				n[c]++
			}
		}
	}
	full := map[string]int{}
	for i := range funcs {
		if clean[i] != "" && n[clean[i]] > 1 {
			full[elfx.Demangle(funcs[i].sym)]++
		}
	}
	for i := range funcs {
		fs := &funcs[i]
		fs.clean = clean[i]
		switch c := clean[i]; {
		case c == "":
		case n[c] <= 1:
			fs.name = c
		case full[elfx.Demangle(fs.sym)] == 1:
			fs.name = elfx.Demangle(fs.sym)
		}
	}
}

// profileName is the name CPU profiles give an overload or a template
// instance, which the trace names in full: its clean name; "" for others.
func (fs funcSym) profileName() string {
	if fs.clean != "" && fs.name != fs.clean {
		return fs.clean
	}
	return ""
}

// matches reports whether glob names the function: its symbol, the name
// the trace gives it or, for C++ and Rust, its name without parameters or
// template arguments, which all overloads and instances share; a glob
// names a member of any enclosing scope (elfx.MatchName).
func (fs funcSym) matches(glob string) bool {
	if elfx.MatchName(glob, fs.name) || fs.clean != "" && elfx.MatchName(glob, fs.clean) {
		return true
	}
	ok, _ := path.Match(strings.TrimPrefix(glob, "::"), fs.sym)
	return ok
}

// sizedFuncs gives the function symbols of no size (the C runtime's
// assembly: _init, _fini, and crtstuff's frame_dummy, register_tm_clones
// and the like, which run before main and after exit) the code up to the
// next function symbol or the end of their section, as a disassembler
// does, so that they are traced as others are. A symbol at the address
// of a sized one (seen) is an alias of it.
func sizedFuncs(f *elf.File, unsized []elf.Symbol, funcs []funcSym, seen map[uint64]bool) []funcSym {
	if len(unsized) == 0 {
		return nil
	}
	var starts []uint64
	for _, fs := range funcs {
		starts = append(starts, fs.value)
	}
	for _, s := range unsized {
		starts = append(starts, s.Value)
	}
	slices.Sort(starts)
	var out []funcSym
	for _, s := range unsized {
		if seen[s.Value] || int(s.Section) >= len(f.Sections) {
			continue
		}
		sec := f.Sections[s.Section]
		end := sec.Addr + sec.Size
		if s.Value < sec.Addr || s.Value >= end {
			continue
		}
		if i, _ := slices.BinarySearch(starts, s.Value+1); i < len(starts) && starts[i] < end {
			end = starts[i]
		}
		seen[s.Value] = true
		out = append(out, funcSym{name: s.Name, value: s.Value, end: end})
	}
	return out
}

func resolveObject(obj string, pats []Pattern, args bool, exclude map[string]bool) ([]Target, bool, error) {
	f, err := elf.Open(obj)
	if err != nil {
		return nil, false, fmt.Errorf("reading %s: %w", obj, err)
	}
	defer f.Close()
	isGo := elfx.IsGo(f)
	syms, _ := f.Symbols()
	dyn, _ := f.DynamicSymbols()
	seen := map[uint64]bool{}
	var funcs []funcSym
	var unsized []elf.Symbol
	for _, s := range append(syms, dyn...) {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Section == elf.SHN_UNDEF || s.Value == 0 || seen[s.Value] {
			continue
		}
		if s.Size == 0 {
			unsized = append(unsized, s)
			continue
		}
		seen[s.Value] = true
		funcs = append(funcs, funcSym{name: s.Name, value: s.Value, end: s.Value + s.Size})
	}
	funcs = append(funcs, sizedFuncs(f, unsized, funcs, seen)...)
	if len(funcs) == 0 {
		return nil, false, fmt.Errorf("%s has no function symbols (stripped?): nothing can be traced by name", obj)
	}
	nameFuncs(funcs)
	sort.Slice(funcs, func(i, j int) bool { return funcs[i].name < funcs[j].name })
	cold := map[string][]funcSym{} // foo → foo.cold, foo.cold.3: parts GCC split off
	for _, fs := range funcs {
		if i := strings.Index(fs.sym, ".cold"); i > 0 {
			cold[fs.sym[:i]] = append(cold[fs.sym[:i]], fs)
		}
	}
	bid := elfx.BuildID(f)
	// Native code that C++ exceptions or Rust panics unwind through gets
	// its return probes on RET instructions: a uretprobe's trampoline in
	// the stack would end the program at the first exception.
	unwinding := !isGo && unwindsFile(f)
	var info *dwarfx.Info
	if args {
		info, _ = dwarfx.Open(obj) // no DWARF: arguments shown by register
	}
	var out []Target
	taken := map[uint64]bool{}
	for _, p := range pats {
		if p.IsPoint() {
			ts, err := pointTargets(f, obj, bid, p, args)
			if err != nil {
				return nil, false, err
			}
			out = append(out, ts...)
			continue
		}
		n := 0
		for _, fs := range funcs {
			if !fs.matches(p.Glob) || p.UserOnly && helper(fs.name) {
				continue
			}
			if taken[fs.value] {
				n++ // matched, and traced for an earlier pattern
				continue
			}
			if exclude[fs.name] || exclude[fs.sym] {
				n++ // matched, and left out on purpose
				continue
			}
			if untraceable(f, fs) {
				if p.Glob == fs.sym {
					return nil, false, fmt.Errorf("%s in %s is not called but jumped to (the entry point, a signal return, the cold part of a function): it has no return to time", fs.name, obj)
				}
				continue
			}
			off, ok := fileOffset(f, fs.value)
			if !ok {
				continue
			}
			t := Target{Object: obj, BuildID: bid, Function: fs.name, ProfileName: fs.profileName(), Offset: off, Every: p.Every, Entry: fs.value,
				Code: [2]uint64{off, off + fs.end - fs.value}}
			if !isGo {
				var parts [][]byte
				var starts []uint64
				for _, c := range cold[fs.sym] {
					parts, starts = append(parts, funcCode(f, c)), append(starts, c.value)
				}
				t.Offset += entrySite(funcCode(f, fs), fs.value, parts, starts)
				if unwinding {
					// A leaf (no call, no tail call) keeps its
					// uretprobe: no exception can pass through
					// its frame, and a uretprobe costs a fraction
					// of a probe on RET (docs/trace.md).
					if rets, tails, leaf := nativeRets(f, fs, cold[fs.sym]); !leaf {
						t.Rets, t.Tails, t.RetInsn = rets, tails, true
					}
				}
			}
			if isGo {
				body, rets, err := goProbes(f, fs)
				if err != nil || len(rets) == 0 {
					continue // no RET found: its returns could not be seen
				}
				t.Offset += body
				t.Rets, t.RetInsn = rets, true
			}
			if args {
				t.Params, t.Ret = params(info, fs.value, isGo)
			}
			taken[fs.value] = true
			out = append(out, t)
			n++
		}
		if n == 0 && !strings.ContainsAny(p.Glob, "*?[") {
			if callers := inlinedInto(f, p.Glob); len(callers) > 0 {
				more := ""
				if len(callers) > 8 {
					more = fmt.Sprintf(" and %d more", len(callers)-8)
					callers = callers[:8]
				}
				return nil, false, fmt.Errorf("%s has no function %s to probe: the compiler inlined it everywhere it is called, into %s%s (an inlined call has no entry or return of its own): trace those, or its lines with --line FILE:LINE", obj, p.Glob, strings.Join(callers, ", "), more)
			}
			return nil, false, fmt.Errorf("%s has no function %s", obj, p.Glob)
		}
	}
	return out, isGo, nil
}

// untraceable reports functions that are entered without a call, so that
// a return probe would overwrite what is not a return address: the ELF
// entry point (_start, where the top of the stack is argc), the signal
// return trampolines and the cold parts GCC splits off functions.
func untraceable(f *elf.File, fs funcSym) bool {
	if f.Type == elf.ET_EXEC || f.Type == elf.ET_DYN {
		if f.Entry != 0 && fs.value == f.Entry {
			return true
		}
	}
	return !Traceable(fs.sym)
}

// Traceable reports whether a function of this name can be traced at all,
// as far as its name tells: not the ELF entry point or a signal return
// trampoline, and not the cold part GCC splits off a function (foo.cold,
// foo.cold.12), which is jumped to from foo's body, in foo's frame.
func Traceable(name string) bool {
	switch name {
	case "_start", "__restore_rt", "__sigreturn", "_dl_start", "_dl_start_user":
		return false
	}
	return !strings.Contains(name, ".cold")
}

// entrySite is where in the function fs the entry probe goes, as an
// offset from its first instruction. x86-64 uprobes emulate a few
// instructions in the trap (push of a register, nops, direct jumps, calls
// and conditional jumps) and single-step every other one out of line: a
// second trap, which costs the program about 9 µs more per call on the
// machine of docs/performance.md (bench/probecost.sh). When the function
// begins with instructions that change neither the stack pointer, nor an
// argument register, nor memory (endbr64, test, cmp, a load into a scratch
// register, ...) followed by one that is emulated, the probe goes on that
// one: every call still passes it exactly once (nothing before it
// branches, and no branch of the function's body or its cold parts comes
// back to it or before it), with the same stack and arguments, so entry,
// return probe and arguments are those of the first instruction. 0 when
// there is no such instruction within the first few.
func entrySite(code []byte, start uint64, parts [][]byte, partStarts []uint64) uint64 {
	site := -1
	for pc, n := 0, 0; pc < len(code) && n < 4; n++ {
		if isEndbr(code[pc:]) {
			pc += 4
			continue
		}
		in, err := x86asm.Decode(code[pc:], 64)
		if err != nil {
			return 0
		}
		if emulated(in) {
			site = pc
			break
		}
		if !harmless(in) {
			return 0
		}
		pc += in.Len
	}
	if site <= 0 {
		return 0
	}
	// No branch may land on the site or before it: calls would pass it
	// twice, or not at all.
	for i, c := range append([][]byte{code}, parts...) {
		base := start
		if i > 0 {
			base = partStarts[i-1]
		}
		for pc := 0; pc < len(c); {
			if isEndbr(c[pc:]) {
				pc += 4
				continue
			}
			in, err := x86asm.Decode(c[pc:], 64)
			if err != nil {
				return 0 // not all of it decodes: keep the probe at the start
			}
			pc += in.Len
			if rel, ok := in.Args[0].(x86asm.Rel); ok {
				to := int64(base) + int64(pc) + int64(rel)
				if to > int64(start) && to <= int64(start)+int64(site) {
					return 0
				}
			}
		}
	}
	return uint64(site)
}

// isEndbr reports whether code begins with endbr64, which x86asm does not
// decode.
func isEndbr(code []byte) bool {
	return len(code) >= 4 && [4]byte(code[:4]) == [4]byte{0xf3, 0x0f, 0x1e, 0xfa}
}

// emulated reports the instructions x86-64 uprobes execute in the trap
// itself (arch/x86/kernel/uprobes.c: branches, push of a register, nops).
func emulated(in x86asm.Inst) bool {
	switch in.Op {
	case x86asm.JMP, x86asm.CALL, x86asm.JA, x86asm.JAE, x86asm.JB, x86asm.JBE, x86asm.JE, x86asm.JNE, x86asm.JG, x86asm.JGE,
		x86asm.JL, x86asm.JLE, x86asm.JO, x86asm.JNO, x86asm.JP, x86asm.JNP, x86asm.JS, x86asm.JNS:
		_, ok := in.Args[0].(x86asm.Rel)
		return ok
	case x86asm.PUSH:
		r, ok := in.Args[0].(x86asm.Reg)
		return ok && r >= x86asm.RAX && r <= x86asm.R15
	case x86asm.NOP:
		return true
	}
	return false
}

// harmless reports an instruction that writes no memory, neither the stack
// pointer nor an argument register, and does not branch: flags and
// scratch registers only.
func harmless(in x86asm.Inst) bool {
	switch in.Op {
	case x86asm.TEST, x86asm.CMP:
		return true
	case x86asm.MOV, x86asm.MOVZX, x86asm.MOVSX, x86asm.MOVSXD, x86asm.LEA, x86asm.XOR, x86asm.AND, x86asm.OR, x86asm.ADD, x86asm.SUB:
		r, ok := in.Args[0].(x86asm.Reg)
		if !ok {
			return false // a store
		}
		switch full(r) {
		case x86asm.RSP, x86asm.RDI, x86asm.RSI, x86asm.RDX, x86asm.RCX, x86asm.R8, x86asm.R9:
			return false
		}
		return full(r) >= x86asm.RAX && full(r) <= x86asm.R15
	}
	return false
}

// full is the 64-bit register r is part of (AL, AX, EAX: RAX).
func full(r x86asm.Reg) x86asm.Reg {
	switch {
	case r >= x86asm.AL && r <= x86asm.R15B:
		if r >= x86asm.SPB && r <= x86asm.DIB {
			return r - x86asm.SPB + x86asm.RSP
		}
		if r >= x86asm.AH && r <= x86asm.BH {
			return r - x86asm.AH + x86asm.RAX
		}
		if r <= x86asm.BL {
			return r - x86asm.AL + x86asm.RAX
		}
		return r - x86asm.R8B + x86asm.R8
	case r >= x86asm.AX && r <= x86asm.R15W:
		return r - x86asm.AX + x86asm.RAX
	case r >= x86asm.EAX && r <= x86asm.R15L:
		return r - x86asm.EAX + x86asm.RAX
	}
	return r
}

// funcCode reads the bytes of fs.
func funcCode(f *elf.File, fs funcSym) []byte {
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 && fs.value >= p.Vaddr && fs.end <= p.Vaddr+p.Filesz && fs.end > fs.value {
			code := make([]byte, fs.end-fs.value)
			if _, err := p.ReadAt(code, int64(fs.value-p.Vaddr)); err != nil {
				return nil
			}
			return code
		}
	}
	return nil
}

func fileOffset(f *elf.File, vaddr uint64) (uint64, bool) {
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 && vaddr >= p.Vaddr && vaddr < p.Vaddr+p.Filesz {
			return vaddr - p.Vaddr + p.Off, true
		}
	}
	return 0, false
}

// goProbes disassembles a Go function and returns where its entry probe
// goes, as an offset from its start, and the file offsets of its RET
// instructions, where its return probes go (a uretprobe rewrites the
// return address on the goroutine's stack, which the runtime may move).
//
// The entry probe goes after the stack-bound check of the prologue
// (CMP SP, 16(R14); JBE, or for large frames R12 = SP - size; JB; CMP R12,
// 16(R14); JBE): when the stack must grow, the runtime
// runs the function again from its first instruction, and a probe there
// would see one call twice. Nothing before the jump has changed SP or the
// argument registers.
func goProbes(f *elf.File, fs funcSym) (uint64, []uint64, error) {
	var sec *elf.Section
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_EXECINSTR != 0 && fs.value >= s.Addr && fs.end <= s.Addr+s.Size {
			sec = s
			break
		}
	}
	if sec == nil {
		return 0, nil, errors.New("not in an executable section")
	}
	code := make([]byte, fs.end-fs.value)
	if _, err := sec.ReadAt(code, int64(fs.value-sec.Addr)); err != nil {
		return 0, nil, err
	}
	body := uint64(0)
	for pc, n := 0, 0; pc < len(code) && n < 6; n++ {
		in, err := x86asm.Decode(code[pc:], 64)
		if err != nil {
			break
		}
		pc += in.Len
		if in.Op == x86asm.JBE {
			if n > 0 {
				body = uint64(pc)
			}
			break
		}
		ok := false
		switch in.Op {
		case x86asm.CMP:
			m, isMem := in.Args[1].(x86asm.Mem)
			ok = isMem && m.Base == x86asm.R14
		case x86asm.MOV, x86asm.SUB, x86asm.LEA:
			ok = in.Args[0] == x86asm.R12 // large frames: R12 = SP - frame size
		case x86asm.JB:
			ok = true // the subtraction wrapped: straight to the growth path
		}
		if !ok {
			break
		}
	}
	var rets []uint64
	for pc := 0; pc < len(code); {
		in, err := x86asm.Decode(code[pc:], 64)
		if err != nil {
			pc++
			continue
		}
		if in.Op == x86asm.RET {
			if off, ok := fileOffset(f, fs.value+uint64(pc)); ok {
				rets = append(rets, off)
			}
		}
		pc += in.Len
	}
	return body, rets, nil
}

// nativeRets returns the file offsets where the return probes of a
// native function go when they cannot be uretprobes (an object that
// unwinds): its RET instructions, in its body and in the cold parts GCC
// split off it, and the jumps that leave it, its tail calls (tails). A
// tail call hands the function's frame to the callee, which returns to
// the function's caller, so the function's call ends at the jump (its
// record, flagged TailJumped, does not include the callee's time). A jump leaves the function when
// its target lies outside the function and its cold parts, or when it is
// indirect and not a jump table's: a jump through memory with an index
// register, or through a register with the notrack prefix that GCC's
// control-flow protection gives switch tables, stays in the function.
// An indirect jump of a switch table without that prefix is taken for a
// tail call; its probe matches no frame unless the function keeps no
// stack frame at that point. Linear disassembly, as for Go: GCC and
// clang put no data in x86-64 code. None for a function that never
// returns (it only throws or exits): its calls end at the unwinder's
// landing pads or when gone past. leaf says the function and its cold
// parts have no CALL instruction and no tail call: an exception or panic
// can only pass through a frame below which something was called, so a
// leaf's return address is never read by the unwinder (bar a signal
// handler that throws, with -fnon-call-exceptions), and a uretprobe's
// rewritten one does no harm there.
func nativeRets(f *elf.File, fs funcSym, cold []funcSym) (rets, tails []uint64, leaf bool) {
	calls := false
	parts := append([]funcSym{fs}, cold...)
	inside := func(a uint64) bool {
		for _, p := range parts {
			if a >= p.value && a < p.end {
				return true
			}
		}
		return false
	}
	for _, p := range parts {
		code := funcCode(f, p)
		for pc := 0; pc < len(code); {
			if isEndbr(code[pc:]) {
				pc += 4
				continue
			}
			in, err := x86asm.Decode(code[pc:], 64)
			if err != nil {
				calls = true // not sure it is a leaf
				pc++
				continue
			}
			ret, tail := in.Op == x86asm.RET, false
			if in.Op == x86asm.CALL {
				calls = true
			}
			if in.Op == x86asm.JMP {
				switch a := in.Args[0].(type) {
				case x86asm.Rel:
					tail = !inside(p.value + uint64(pc+in.Len) + uint64(int64(a)))
				case x86asm.Mem:
					tail = a.Index == 0
				case x86asm.Reg:
					tail = !notrack(code[pc : pc+in.Len])
				}
			}
			if off, ok := fileOffset(f, p.value+uint64(pc)); ok && ret {
				rets = append(rets, off)
			} else if ok && tail {
				tails = append(tails, off)
			}
			pc += in.Len
		}
	}
	return rets, tails, !calls && len(tails) == 0
}

// notrack reports whether an instruction's prefixes include notrack
// (0x3e, on an indirect branch).
func notrack(ins []byte) bool {
	for _, b := range ins {
		switch b {
		case 0x3e:
			return true
		case 0x26, 0x2e, 0x36, 0x64, 0x65, 0x66, 0x67, 0xf0, 0xf2, 0xf3:
			continue
		}
		if b&0xf0 == 0x40 { // REX
			continue
		}
		return false
	}
	return false
}

// params describes the arguments passed in the integer registers, in
// order, as "name:code:type": code is i (signed) or u (unsigned) and the
// size in bytes, p8 for pointers, b1 for bools, c1 for chars; an argument
// that is not passed in an integer register (floats, large structs) ends
// the list, since the registers after it no longer line up.
func params(info *dwarfx.Info, entry uint64, isGo bool) (out []string, ret string) {
	if info == nil {
		return nil, ""
	}
	fn, ok := info.Function(entry)
	if !ok {
		return nil, ""
	}
	// The return value is RAX: an integer, pointer or enum of up to 8
	// bytes (Go's results are parameters named ~r0..., not read here).
	// A function DWARF types as void is marked so, that its RAX is not
	// shown as a value.
	if t := fn.Result(); !isGo {
		if t == nil {
			ret = recording.RetVoid
		} else if code := paramCode(t); code != "" {
			ret = code + ":" + t.Name
		} else if isFloat(t) {
			ret = recording.RetUnread + ":" + t.Name // in XMM0: not readable
		}
	}
	for _, v := range fn.Params() {
		if len(out) == 6 {
			break
		}
		if isGo && strings.HasPrefix(v.Name, "~") {
			break // Go's results follow its arguments
		}
		t := v.Type()
		if t == nil {
			break
		}
		code := paramCode(t)
		if code == "" {
			break
		}
		out = append(out, v.Name+":"+code+":"+t.Name)
	}
	return out, ret
}

// isFloat reports whether t (through typedefs) is a floating-point type.
func isFloat(t *dwarfx.Type) bool {
	for t.Kind == dwarfx.Typedef && t.Elem != nil {
		t = t.Elem
	}
	return t.Kind == dwarfx.Float
}

func paramCode(t *dwarfx.Type) string {
	for t.Kind == dwarfx.Typedef && t.Elem != nil {
		t = t.Elem
	}
	switch t.Kind {
	case dwarfx.Int, dwarfx.Enum:
		if t.Size >= 1 && t.Size <= 8 {
			return "i" + strconv.Itoa(int(t.Size))
		}
	case dwarfx.Uint:
		if t.Size >= 1 && t.Size <= 8 {
			return "u" + strconv.Itoa(int(t.Size))
		}
	case dwarfx.Char:
		if t.Signed {
			return "i1"
		}
		return "u1"
	case dwarfx.Bool:
		return "b1"
	case dwarfx.Pointer:
		e := t.Elem
		for e != nil && e.Kind == dwarfx.Typedef && e.Elem != nil {
			e = e.Elem
		}
		if e != nil && e.Kind == dwarfx.Char && e.Size == 1 {
			return "s8" // a C string: its bytes are copied too
		}
		return "p8"
	}
	return ""
}

// StrArgs gives the (index+1) of the first traceprog.MaxStrs parameters
// with code s8 (char *), whose strings the tracer copies.
func StrArgs(params []string) [traceprog.MaxStrs]uint8 {
	var out [traceprog.MaxStrs]uint8
	k := 0
	for i, p := range params {
		if parts := strings.SplitN(p, ":", 3); len(parts) == 3 && parts[1] == "s8" && k < traceprog.MaxStrs {
			out[k] = uint8(i + 1)
			k++
		}
	}
	return out
}

// inlinedInto names the functions with code that the DWARF of f says a
// function called name was inlined into (at any depth: the outermost
// function is named), sorted; nil when there are none or f has no DWARF.
func inlinedInto(f *elf.File, name string) (out []string) {
	d, err := f.DWARF()
	if err != nil {
		return nil
	}
	defer func() {
		if recover() != nil { // debug/dwarf panics on some malformed input
			out = nil
		}
	}()
	w := elfx.NewFuncWalker(d, elfx.IsGo(f), f.Type == elf.ET_REL)
	r := d.Reader()
	seen := map[string]bool{}
	var has func(n *elfx.FuncNode) bool
	has = func(n *elfx.FuncNode) bool {
		for _, c := range n.Children {
			if c.Name == name || has(c) {
				return true
			}
		}
		return false
	}
	for {
		root, err := r.Next()
		if err != nil || root == nil {
			break
		}
		if root.Tag != dwarf.TagCompileUnit && root.Tag != dwarf.TagPartialUnit {
			r.SkipChildren()
			continue
		}
		funcs, _ := w.Walk(r, root, nil, nil)
		for _, fn := range funcs {
			if !seen[fn.Name] && has(fn) {
				seen[fn.Name] = true
				out = append(out, fn.Name)
			}
		}
	}
	sort.Strings(out)
	return out
}
