package proc

import "sort"

// Space is the executable address space of one process: its executable
// mappings sorted by start address. Collectors keep one per traced process,
// fed by kernel mmap records or by Maps.
type Space struct {
	maps []Mapping
}

// Add adds a mapping; it replaces whatever it overlaps, as mmap(2) does.
func (sp *Space) Add(m Mapping) {
	out := sp.maps[:0:0]
	for _, o := range sp.maps {
		if o.End <= m.Start || o.Start >= m.End {
			out = append(out, o)
		}
	}
	i := sort.Search(len(out), func(i int) bool { return out[i].Start >= m.Start })
	out = append(out, Mapping{})
	copy(out[i+1:], out[i:])
	out[i] = m
	sp.maps = out
}

// Find returns the mapping holding pc.
func (sp *Space) Find(pc uint64) (Mapping, bool) {
	i := sort.Search(len(sp.maps), func(i int) bool { return sp.maps[i].End > pc })
	if i < len(sp.maps) && sp.maps[i].Start <= pc {
		return sp.maps[i], true
	}
	return Mapping{}, false
}

// Clone copies the space (for a forked child).
func (sp *Space) Clone() *Space {
	return &Space{maps: append([]Mapping(nil), sp.maps...)}
}

// Cmdline returns the command line of pid, nil when unreadable.
func Cmdline(pid int) []string {
	b, err := readFile(pid, "cmdline")
	if err != nil {
		return nil
	}
	var out []string
	start := 0
	for i, c := range b {
		if c == 0 {
			out = append(out, string(b[start:i]))
			start = i + 1
		}
	}
	return out
}
