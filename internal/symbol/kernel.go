package symbol

import (
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
type KernelTable struct {
	syms []KernelSymbol // sorted by Addr, no zero addresses
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
	return &KernelTable{syms: out}
}

// Len returns the number of symbols in the table.
func (k *KernelTable) Len() int { return len(k.syms) }

// Lookup returns the symbol containing addr: the greatest symbol start ≤
// addr, provided addr is within its size when the size is known.
func (k *KernelTable) Lookup(addr uint64) (name, module string, ok bool) {
	if k == nil {
		return "", "", false
	}
	i := sort.Search(len(k.syms), func(i int) bool { return k.syms[i].Addr > addr }) - 1
	if i < 0 {
		return "", "", false
	}
	s := k.syms[i]
	if s.Size != 0 && addr-s.Addr >= s.Size {
		return "", "", false
	}
	return s.Name, s.Module, true
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
