package symbol

import (
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"github.com/culprit-dev/culprit/internal/elfx"
	"io"
	"path"
	"sort"
	"strings"
	"sync"
)

// dwIndex is the lazily built DWARF index of one object. Building it reads
// only the root DIE of each compilation unit (for its address ranges); a
// unit's line table and function/inline tree are parsed on the first lookup
// that lands in it and kept.
type dwIndex struct {
	d    *dwarf.Data
	isGo bool

	mu   sync.Mutex       // serialises parsing (debug/dwarf readers share caches)
	walk *elfx.FuncWalker // builds each unit's function trees; under mu

	cus    []cuRange // units with address ranges, sorted by lo
	maxHi  []uint64  // maxHi[i] = max(cus[0..i].hi)
	noRng  []*cuInfo // units without address ranges, parsed only when nothing else matches
	noOnce sync.Once
	noFns  elfx.FuncIndex
}

type cuRange struct {
	lo, hi uint64
	cu     *cuInfo
}

// cuInfo is one compilation unit; parse fills the rest once.
type cuInfo struct {
	off    dwarf.Offset
	once   sync.Once
	parsed bool // set inside once (tests count parsed units)

	lines []lineRow
	funcs []*elfx.FuncNode // functions with code, with their inlined calls
	fns   elfx.FuncIndex
}

type lineRow struct {
	addr uint64
	file string
	line int32
	end  bool // end_sequence: no line from addr on
}

// newDWIndex builds the unit index of d. info is the .debug_info section,
// used only to count units so the walk can stop without decoding the last
// unit's DIEs; it may be nil.
func newDWIndex(d *dwarf.Data, info *elf.Section, order binary.ByteOrder, isGo, relocatable bool) (x *dwIndex, err error) {
	defer func() {
		if r := recover(); r != nil {
			x, err = nil, fmt.Errorf("malformed DWARF: %v", r)
		}
	}()
	x = &dwIndex{d: d, isGo: isGo, walk: elfx.NewFuncWalker(d, isGo, relocatable)}
	nUnits := -1
	if info != nil && info.Flags&elf.SHF_COMPRESSED == 0 && !strings.HasPrefix(info.Name, ".zdebug") {
		// Counting reads 4 bytes per unit header; for a compressed
		// section it would decompress it all again, so let the walk
		// decode the last unit instead.
		nUnits = countUnits(info.Open(), order)
	}
	r := d.Reader()
	for i := 0; nUnits < 0 || i < nUnits; i++ {
		e, err := r.Next()
		if err != nil {
			if len(x.cus) == 0 && len(x.noRng) == 0 {
				return nil, fmt.Errorf("reading DWARF units: %w", err)
			}
			break
		}
		if e == nil {
			break
		}
		switch e.Tag {
		case dwarf.TagCompileUnit, dwarf.TagPartialUnit:
			cu := &cuInfo{off: e.Offset}
			rng, err := d.Ranges(e)
			if err != nil || len(rng) == 0 {
				x.noRng = append(x.noRng, cu)
			}
			for _, rg := range rng {
				if rg[1] > rg[0] {
					x.cus = append(x.cus, cuRange{rg[0], rg[1], cu})
				}
			}
		}
		if nUnits < 0 || i+1 < nUnits {
			r.SkipChildren()
		}
	}
	sort.Slice(x.cus, func(i, j int) bool { return x.cus[i].lo < x.cus[j].lo })
	x.maxHi = make([]uint64, len(x.cus))
	var hi uint64
	for i, c := range x.cus {
		if c.hi > hi {
			hi = c.hi
		}
		x.maxHi[i] = hi
	}
	return x, nil
}

// countUnits counts the unit headers in .debug_info, or returns -1.
func countUnits(r io.ReadSeeker, order binary.ByteOrder) int {
	n := 0
	var b [12]byte
	var off int64
	for {
		if _, err := r.Seek(off, io.SeekStart); err != nil {
			return -1
		}
		if _, err := io.ReadFull(r, b[:4]); err != nil {
			if err == io.EOF {
				return n
			}
			return -1
		}
		l := uint64(order.Uint32(b[:4]))
		hdr := int64(4)
		if l == 0xffffffff {
			if _, err := io.ReadFull(r, b[4:12]); err != nil {
				return -1
			}
			l = order.Uint64(b[4:12])
			hdr = 12
		} else if l >= 0xfffffff0 {
			return -1
		}
		if l == 0 || l > 1<<40 {
			return -1
		}
		off += hdr + int64(l)
		n++
	}
}

// lookup returns the function and inlined calls containing pc, outermost
// first, and the line table's position for pc (that of the innermost one).
func (x *dwIndex) lookup(pc uint64) (chain []*elfx.FuncNode, file string, line int) {
	chain = make([]*elfx.FuncNode, 0, 4)
	for _, cu := range x.unitsAt(pc) {
		x.parse(cu)
		n := cu.fns.Find(pc)
		f, l := cu.lineAt(pc)
		if n == nil && f == "" {
			continue
		}
		for ; n != nil; n = n.Child(pc) {
			chain = append(chain, n)
		}
		return chain, f, l
	}
	if len(x.noRng) > 0 {
		x.noOnce.Do(func() {
			var all []*elfx.FuncNode
			for _, cu := range x.noRng {
				x.parse(cu)
				all = append(all, cu.funcs...)
			}
			x.noFns = elfx.NewFuncIndex(all)
		})
		if n := x.noFns.Find(pc); n != nil {
			for _, cu := range x.noRng {
				if cu.fns.Find(pc) == n {
					f, l := cu.lineAt(pc)
					for ; n != nil; n = n.Child(pc) {
						chain = append(chain, n)
					}
					return chain, f, l
				}
			}
		}
	}
	return nil, "", 0
}

// unitsAt returns the units whose ranges contain pc, smallest range first.
func (x *dwIndex) unitsAt(pc uint64) []*cuInfo {
	i := sort.Search(len(x.cus), func(i int) bool { return x.cus[i].lo > pc }) - 1
	var out []*cuInfo
	var sizes []uint64
	for ; i >= 0 && x.maxHi[i] > pc; i-- {
		c := x.cus[i]
		if pc >= c.hi {
			continue
		}
		sz := c.hi - c.lo
		j := len(out)
		for j > 0 && sizes[j-1] > sz {
			j--
		}
		out = append(out, nil)
		sizes = append(sizes, 0)
		copy(out[j+1:], out[j:])
		copy(sizes[j+1:], sizes[j:])
		out[j], sizes[j] = c.cu, sz
	}
	return out
}

func (cu *cuInfo) lineAt(pc uint64) (string, int) {
	rows := cu.lines
	i := sort.Search(len(rows), func(i int) bool { return rows[i].addr > pc }) - 1
	if i < 0 || rows[i].end || rows[i].line <= 0 {
		return "", 0
	}
	return rows[i].file, int(rows[i].line)
}

// parse reads cu's line table and function tree once. Malformed DWARF
// leaves the unit (partly) empty instead of panicking.
func (x *dwIndex) parse(cu *cuInfo) {
	if cu == nil {
		return
	}
	cu.once.Do(func() {
		x.mu.Lock()
		defer x.mu.Unlock()
		defer func() {
			if r := recover(); r != nil {
				cu.lines, cu.funcs, cu.fns = nil, nil, elfx.FuncIndex{}
			}
		}()
		cu.parsed = true
		x.parseLocked(cu)
	})
}

func (x *dwIndex) parseLocked(cu *cuInfo) {
	r := x.d.Reader()
	r.Seek(cu.off)
	root, err := r.Next()
	if err != nil || root == nil {
		return
	}
	compDir, _ := root.Val(dwarf.AttrCompDir).(string)
	fix := fileNamer(compDir)
	var files []string
	if lr, err := x.d.LineReader(root); err == nil && lr != nil {
		var le dwarf.LineEntry
		for {
			if err := lr.Next(&le); err != nil {
				break
			}
			row := lineRow{addr: le.Address, line: int32(le.Line), end: le.EndSequence}
			if le.File != nil {
				row.file = fix(le.File.Name)
			}
			cu.lines = append(cu.lines, row)
		}
		for _, f := range lr.Files() {
			name := ""
			if f != nil {
				name = fix(f.Name)
			}
			files = append(files, name)
		}
		sort.SliceStable(cu.lines, func(i, j int) bool {
			a, b := &cu.lines[i], &cu.lines[j]
			if a.addr != b.addr {
				return a.addr < b.addr
			}
			return a.end && !b.end // a sequence's end before the next one's start
		})
	}
	cu.funcs, _ = x.walk.Walk(r, root, files, nil)
	cu.fns = elfx.NewFuncIndex(cu.funcs)
}

// fileNamer returns a function completing the line table's file names with
// the unit's compilation directory. debug/dwarf joins relative directories
// with DW_AT_comp_dir for DWARF 4 but not for DWARF 5, where directory 0 is
// the compilation directory and others are relative to it. A relative name
// is joined with compDir unless it already starts with it (it came from
// directory 0). The results are interned.
func fileNamer(compDir string) func(string) string {
	seen := map[string]string{}
	cd := path.Clean(compDir)
	return func(name string) string {
		if v, ok := seen[name]; ok {
			return v
		}
		out := name
		if compDir != "" && cd != "." && !path.IsAbs(name) && !strings.HasPrefix(name, "<") {
			if path.IsAbs(cd) || (name != cd && !strings.HasPrefix(name, cd+"/")) {
				out = path.Join(cd, name)
			}
		}
		seen[name] = out
		return out
	}
}
