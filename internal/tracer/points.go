package tracer

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Point probes: a source line (--line FILE:LINE) or a USDT probe
// (--usdt PROVIDER:NAME), each hit recorded as it happens.

// ParseLine reads FILE:LINE.
func ParseLine(s string) (Pattern, error) {
	i := strings.LastIndex(s, ":")
	if i <= 0 {
		return Pattern{}, fmt.Errorf("--line %q: want FILE:LINE, e.g. parse.c:120", s)
	}
	n, err := strconv.Atoi(s[i+1:])
	if err != nil || n <= 0 {
		return Pattern{}, fmt.Errorf("--line %q: the line must be a positive number", s)
	}
	return Pattern{Line: s}, nil
}

// ParseUSDT reads PROVIDER:NAME.
func ParseUSDT(s string) (Pattern, error) {
	prov, name, ok := strings.Cut(s, ":")
	if !ok || prov == "" || name == "" || strings.Contains(name, ":") {
		return Pattern{}, fmt.Errorf("--usdt %q: want PROVIDER:NAME, e.g. myapp:request_start", s)
	}
	return Pattern{USDT: s}, nil
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
// ELF virtual addresses.
type usdtSite struct {
	pc, sem uint64
	args    string // the note's argument specs, e.g. "8@%rdi -4@%esi"
}

// usdtParams names a USDT probe's arguments that its note places in the C
// argument registers the point probe copies (rdi, rsi, rdx, rcx, r8, r9),
// as Params at those registers' positions: "argN:code:" (N from 1, code
// from the spec's size and sign). Registers no argument uses are "_:u8:";
// arguments elsewhere (memory, constants, other registers) are not named.
func usdtParams(args string) []string {
	pos := map[string]int{"rdi": 0, "edi": 0, "rsi": 1, "esi": 1, "rdx": 2, "edx": 2, "rcx": 3, "ecx": 3, "r8": 4, "r8d": 4, "r9": 5, "r9d": 5}
	out := make([]string, 6)
	last := -1
	for i, a := range strings.Fields(args) {
		size, loc, ok := strings.Cut(a, "@")
		if !ok || !strings.HasPrefix(loc, "%") {
			continue
		}
		p, ok := pos[loc[1:]]
		if !ok {
			continue
		}
		n, err := strconv.Atoi(size)
		if err != nil || n == 0 || n < -8 || n > 8 {
			continue
		}
		code := "u"
		if n < 0 {
			code, n = "i", -n
		}
		out[p] = fmt.Sprintf("arg%d:%s%d:", i+1, code, n)
		last = max(last, p)
	}
	if last < 0 {
		return nil
	}
	out = out[:last+1]
	for i := range out {
		if out[i] == "" {
			out[i] = "_:u8:"
		}
	}
	return out
}

// usdtSites reads the .note.stapsdt notes of f (SystemTap's sys/sdt.h
// format, also DTrace's on Linux) for provider:name. Each note holds the
// probe's address, the link-time address of .stapsdt.base (to correct the
// first for prelinking) and the semaphore's address.
func usdtSites(f *elf.File, obj, spec string) ([]usdtSite, error) {
	prov, name, _ := strings.Cut(spec, ":")
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
	var out []usdtSite
	var names []string
	le := binary.LittleEndian
	align := func(n uint32) uint32 { return (n + 3) &^ 3 }
	for len(data) >= 12 {
		nsz, dsz, typ := le.Uint32(data), le.Uint32(data[4:]), le.Uint32(data[8:])
		if uint64(12)+uint64(align(nsz))+uint64(align(dsz)) > uint64(len(data)) {
			break
		}
		nm := data[12 : 12+nsz]
		desc := data[12+align(nsz) : 12+align(nsz)+dsz]
		data = data[12+align(nsz)+align(dsz):]
		if typ != 3 || string(bytes.TrimRight(nm, "\x00")) != "stapsdt" || len(desc) < 24 {
			continue
		}
		pc, lbase, sem := le.Uint64(desc), le.Uint64(desc[8:]), le.Uint64(desc[16:])
		strs := bytes.SplitN(desc[24:], []byte{0}, 4)
		if len(strs) < 2 {
			continue
		}
		p, n := string(strs[0]), string(strs[1])
		var args string
		if len(strs) > 2 {
			args = string(strs[2])
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
	if len(out) == 0 {
		sort.Strings(names)
		names = dedup(names)
		if len(names) > 12 {
			names = append(names[:12], "…")
		}
		return nil, fmt.Errorf("--usdt %s: %s has no such probe (it has %s)", spec, obj, strings.Join(names, ", "))
	}
	return out, nil
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

// pointTargets resolves a --line or --usdt pattern in f.
func pointTargets(f *elf.File, obj string, bid []byte, p Pattern) ([]Target, error) {
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
	sites, err := usdtSites(f, obj, p.USDT)
	if err != nil {
		return nil, err
	}
	for _, s := range sites {
		off, ok := fileOffset(f, s.pc)
		if !ok {
			continue
		}
		t := Target{Object: obj, BuildID: bid, Function: p.USDT, Offset: off, Point: true, Params: usdtParams(s.args)}
		if s.sem != 0 {
			if t.RefCtr, ok = dataOffset(f, s.sem); !ok {
				return nil, fmt.Errorf("--usdt %s: its semaphore at %#x is outside %s's segments", p.USDT, s.sem, obj)
			}
		}
		out = append(out, t)
	}
	return out, nil
}
