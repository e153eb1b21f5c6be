package symbol

import (
	"encoding/binary"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// KernelSymbol is one kernel text symbol. Size 0 means "up to the next
// symbol". Module is "" for the core kernel image.
type KernelSymbol struct {
	Addr, Size uint64
	Name       string
	Module     string
}

// KernelTable resolves kernel addresses to symbol names. It is immutable
// after construction and safe for concurrent use.
//
// Its memory is its serialized form (see AppendBinary): sorted addresses, and
// names in one text, so that a table of the whole kernel (~120k symbols) can
// be written to a file and used again straight from a mapping of that file,
// with no decoding.
type KernelTable struct {
	n     int
	addrs []byte // n little-endian uint64, ascending, none zero
	sizes []byte // n little-endian uint64, or nil when every size is 0
	offs  []byte // n+1 little-endian uint32: symbol i is text[offs[i]:offs[i+1]]
	text  string // "name" or "name\x00module" per symbol
}

// NewKernelTable builds a table from syms (which it does not retain).
// Symbols at address 0 (what /proc/kallsyms shows without privilege) are
// dropped: they would make every address resolve to an arbitrary name.
func NewKernelTable(syms []KernelSymbol) *KernelTable {
	s := make([]KernelSymbol, 0, len(syms))
	for _, k := range syms {
		if k.Addr != 0 {
			s = append(s, k)
		}
	}
	sort.SliceStable(s, func(i, j int) bool { return s[i].Addr < s[j].Addr })
	// Several names at one address: keep the first sized one, else the
	// first one listed.
	out := s[:0]
	for i := 0; i < len(s); {
		j := i
		best := i
		for j < len(s) && s[j].Addr == s[i].Addr {
			if s[best].Size == 0 && s[j].Size != 0 {
				best = j
			}
			j++
		}
		out = append(out, s[best])
		i = j
	}
	k := &KernelTable{n: len(out)}
	k.addrs = make([]byte, 0, 8*len(out))
	k.offs = make([]byte, 0, 4*(len(out)+1))
	var text strings.Builder
	sized := false
	for _, sym := range out {
		k.addrs = binary.LittleEndian.AppendUint64(k.addrs, sym.Addr)
		k.offs = binary.LittleEndian.AppendUint32(k.offs, uint32(text.Len()))
		text.WriteString(sym.Name)
		if sym.Module != "" {
			text.WriteByte(0)
			text.WriteString(sym.Module)
		}
		sized = sized || sym.Size != 0
	}
	k.offs = binary.LittleEndian.AppendUint32(k.offs, uint32(text.Len()))
	k.text = text.String()
	if sized {
		k.sizes = make([]byte, 0, 8*len(out))
		for _, sym := range out {
			k.sizes = binary.LittleEndian.AppendUint64(k.sizes, sym.Size)
		}
	}
	return k
}

// Len returns the number of symbols in the table.
func (k *KernelTable) Len() int {
	if k == nil {
		return 0
	}
	return k.n
}

// find returns the index of the greatest symbol start ≤ addr, or -1.
func (k *KernelTable) find(addr uint64) int {
	return sort.Search(k.n, func(i int) bool { return binary.LittleEndian.Uint64(k.addrs[8*i:]) > addr }) - 1
}

// at returns symbol i's start, size (0: up to the next symbol), name and
// module; ok is false when the table's text is damaged there.
func (k *KernelTable) at(i int) (addr, size uint64, name, module string, ok bool) {
	addr = binary.LittleEndian.Uint64(k.addrs[8*i:])
	if k.sizes != nil {
		size = binary.LittleEndian.Uint64(k.sizes[8*i:])
	}
	lo, hi := binary.LittleEndian.Uint32(k.offs[4*i:]), binary.LittleEndian.Uint32(k.offs[4*i+4:])
	if lo > hi || int(hi) > len(k.text) {
		return 0, 0, "", "", false
	}
	name, module, _ = strings.Cut(k.text[lo:hi], "\x00")
	return addr, size, name, module, true
}

// Lookup returns the symbol containing addr: the greatest symbol start ≤
// addr, provided addr is within its size when the size is known.
func (k *KernelTable) Lookup(addr uint64) (name, module string, ok bool) {
	if k == nil {
		return "", "", false
	}
	i := k.find(addr)
	if i < 0 {
		return "", "", false
	}
	start, size, name, module, ok := k.at(i)
	if !ok || size != 0 && addr-start >= size {
		return "", "", false
	}
	return name, module, true
}

// ParseKallsyms reads /proc/kallsyms text ("ffffffff81000000 T _text" or
// "ffffffffc0a01000 t foo\t[module]"), keeping text symbols (t, T, w, W).
// Sizes are 0: the table extends each symbol to the next one.
func ParseKallsyms(r io.Reader) ([]KernelSymbol, error) {
	// The recorder parses ~120k lines while the profiled program starts, so
	// this reads the text once and slices names out of it: one allocation
	// for the text and one for the table, none per symbol.
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading kallsyms: %w", err)
	}
	all := string(b)
	syms := make([]KernelSymbol, 0, strings.Count(all, "\n")/2+1)
	lineNo := 0
	for len(all) > 0 {
		lineNo++
		line := all
		if i := strings.IndexByte(all, '\n'); i >= 0 {
			line, all = all[:i], all[i+1:]
		} else {
			all = ""
		}
		var f [4]string
		n := 0
		for rest := line; n < len(f); {
			rest = strings.TrimLeft(rest, " \t\r")
			if rest == "" {
				break
			}
			end := strings.IndexAny(rest, " \t\r")
			if end < 0 {
				end = len(rest)
			}
			f[n], rest = rest[:end], rest[end:]
			n++
		}
		if n == 0 {
			continue
		}
		if n < 3 {
			return nil, fmt.Errorf("kallsyms line %d: %q: want \"address type name [module]\"", lineNo, line)
		}
		if len(f[1]) != 1 {
			return nil, fmt.Errorf("kallsyms line %d: %q: bad symbol type %q", lineNo, line, f[1])
		}
		switch f[1][0] {
		case 't', 'T', 'w', 'W':
		default:
			continue
		}
		addr, err := strconv.ParseUint(f[0], 16, 64)
		if err != nil {
			return nil, fmt.Errorf("kallsyms line %d: bad address: %w", lineNo, err)
		}
		ks := KernelSymbol{Addr: addr, Name: f[2]}
		if m := f[3]; n == 4 && strings.HasPrefix(m, "[") && strings.HasSuffix(m, "]") {
			ks.Module = m[1 : len(m)-1]
		}
		syms = append(syms, ks)
	}
	return syms, nil
}
