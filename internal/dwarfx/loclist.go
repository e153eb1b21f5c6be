package dwarfx

import (
	"github.com/culprit-dev/culprit/internal/elfx"
	"sync"
)

// Location attribute kinds.
const (
	locNone  = iota // no location: optimized out everywhere
	locExpr         // one expression
	locList         // a location list at offset off
	locConst        // DW_AT_const_value bytes in expr
	locBad          // an attribute form this package does not understand
)

// attrLoc is a location-valued attribute (DW_AT_location, DW_AT_frame_base).
type attrLoc struct {
	kind uint8
	expr []byte
	off  uint64

	lazy *lazyList // for lists: decoded on first use
}

type lazyList struct {
	once sync.Once
	list *decodedList
}

type locEntry struct {
	lo, hi uint64
	expr   []byte
}

type decodedList struct {
	entries []locEntry
	idx     ivIndex
	def     []byte // DW_LLE_default_location
	hasDef  bool
	err     error
}

// DWARF 5 location list entry kinds.
const (
	lleEndOfList       = 0x00
	lleBaseAddressx    = 0x01
	lleStartxEndx      = 0x02
	lleStartxLength    = 0x03
	lleOffsetPair      = 0x04
	lleDefaultLocation = 0x05
	lleBaseAddress     = 0x06
	lleStartEnd        = 0x07
	lleStartLength     = 0x08
	lleGNUViewPair     = 0x09
)

// maxListEntries bounds a decoded list so that garbage cannot allocate
// without limit.
const maxListEntries = 1 << 16

// decoded returns the decoded list, decoding it on first use.
func (a *attrLoc) decoded(u *unit) *decodedList {
	if a.lazy == nil {
		return &decodedList{}
	}
	a.lazy.once.Do(func() {
		l := &decodedList{}
		if u.version >= 5 {
			l.entries, l.def, l.hasDef, l.err = decodeLoclists(u.info.sec.loclists, a.off, u)
		} else {
			l.entries, l.err = decodeLoc(u.info.sec.loc, a.off, u.lowPC)
		}
		for k, e := range l.entries {
			l.idx.add(e.lo, e.hi, k)
		}
		l.idx.build()
		a.lazy.list = l
	})
	return a.lazy.list
}

// entry returns the list entry valid at pc.
func (a *attrLoc) entry(u *unit, pc uint64) (locEntry, bool) {
	l := a.decoded(u)
	if k := l.idx.find(pc); k >= 0 {
		return l.entries[k], true
	}
	if l.hasDef {
		return locEntry{lo: 0, hi: ^uint64(0), expr: l.def}, true
	}
	return locEntry{}, false
}

// at returns the expression valid at pc for a single expression or list.
func (a *attrLoc) at(u *unit, pc uint64) ([]byte, bool) {
	switch a.kind {
	case locExpr:
		return a.expr, true
	case locList:
		e, ok := a.entry(u, pc)
		return e.expr, ok
	}
	return nil, false
}

// decodeLoclists decodes the DWARF 5 list at off in .debug_loclists.
// Location views (DW_AT_GNU_locviews and DW_LLE_GNU_view_pair) are
// skipped: at a PC where several views apply the first entry wins, as in
// gdb.
func decodeLoclists(sec []byte, off uint64, u *unit) (out []locEntry, def []byte, hasDef bool, err error) {
	if off >= uint64(len(sec)) {
		return nil, nil, false, bad("location list offset %#x beyond .debug_loclists", off)
	}
	r := &elfx.Reader{B: sec, Off: int(off), End: len(sec)}
	base := u.lowPC
	asz := u.addrSize
	if asz != 4 && asz != 8 {
		return nil, nil, false, bad("address size %d", asz)
	}
	addrx := func(idx uint64) (uint64, bool) {
		a, err := u.debugAddr(idx)
		if err != nil {
			return 0, false
		}
		return a, true
	}
	for n := 0; n < maxListEntries; n++ {
		kind := r.U8()
		if r.Bad {
			return out, def, hasDef, bad("unterminated location list at %#x", off)
		}
		var lo, hi uint64
		var ok = true
		switch kind {
		case lleEndOfList:
			return out, def, hasDef, nil
		case lleBaseAddressx:
			base, ok = addrx(r.ULEB())
			if !ok {
				return out, def, hasDef, bad("bad DW_LLE_base_addressx in list at %#x", off)
			}
			continue
		case lleBaseAddress:
			base = r.UN(asz)
			continue
		case lleGNUViewPair:
			r.ULEB()
			r.ULEB()
			continue
		case lleStartxEndx:
			var ok2 bool
			lo, ok = addrx(r.ULEB())
			hi, ok2 = addrx(r.ULEB())
			ok = ok && ok2
		case lleStartxLength:
			lo, ok = addrx(r.ULEB())
			hi = lo + r.ULEB()
		case lleOffsetPair:
			lo = base + r.ULEB()
			hi = base + r.ULEB()
		case lleDefaultLocation:
		case lleStartEnd:
			lo = r.UN(asz)
			hi = r.UN(asz)
		case lleStartLength:
			lo = r.UN(asz)
			hi = lo + r.ULEB()
		default:
			return out, def, hasDef, bad("unknown location list entry kind %#x at %#x", kind, r.Off-1)
		}
		expr := r.Bytes(r.ULEB())
		if r.Bad {
			return out, def, hasDef, bad("truncated location list at %#x", off)
		}
		if !ok {
			return out, def, hasDef, bad("bad address index in list at %#x", off)
		}
		if kind == lleDefaultLocation {
			def, hasDef = expr, true
			continue
		}
		if hi > lo {
			out = append(out, locEntry{lo, hi, expr})
		}
	}
	return out, def, hasDef, bad("location list at %#x too long", off)
}

// decodeLoc decodes the DWARF 2-4 list at off in .debug_loc (64-bit
// addresses).
func decodeLoc(sec []byte, off uint64, base uint64) ([]locEntry, error) {
	if off >= uint64(len(sec)) {
		return nil, bad("location list offset %#x beyond .debug_loc", off)
	}
	r := &elfx.Reader{B: sec, Off: int(off), End: len(sec)}
	var out []locEntry
	for n := 0; n < maxListEntries; n++ {
		lo := r.UN(8)
		hi := r.UN(8)
		if r.Bad {
			return out, bad("unterminated location list at %#x", off)
		}
		if lo == 0 && hi == 0 {
			return out, nil
		}
		if lo == ^uint64(0) {
			base = hi
			continue
		}
		n := r.UN(2)
		expr := r.Bytes(n)
		if r.Bad {
			return out, bad("truncated location list at %#x", off)
		}
		if hi > lo {
			out = append(out, locEntry{base + lo, base + hi, expr})
		}
	}
	return out, bad("location list at %#x too long", off)
}
