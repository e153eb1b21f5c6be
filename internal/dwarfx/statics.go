package dwarfx

import (
	"debug/dwarf"
	"encoding/binary"

	"github.com/culprit-dev/culprit/internal/elfx"
)

// StaticType returns the type of the variable with static storage that
// lives at the fixed address addr (an ELF virtual address): a file-scope
// variable or a function's static, whose location is DW_OP_addr or
// DW_OP_addrx alone. The first call indexes every such variable by its
// address, reading the attributes of the variable DIEs only: a fraction
// of what Globals costs, which parses every function with its locals and
// location lists (for a question about a few globals' types, e.g. where
// a struct's members lie).
func (i *Info) StaticType(addr uint64) (*Type, bool) {
	i.staticsOnce.Do(i.indexStatics)
	off, ok := i.staticAt[addr]
	if !ok {
		return nil, false
	}
	return i.typeAt(off), true
}

// indexStatics fills staticAt: the type DIE of each variable with a fixed
// address, by address.
func (i *Info) indexStatics() {
	i.staticAt = map[uint64]dwarf.Offset{}
	defer func() {
		_ = recover() // debug/dwarf on malformed input: what was read stays
	}()
	i.mu.Lock()
	defer i.mu.Unlock()
	r := i.d.Reader()
	ref := i.d.Reader() // for declarations a definition refers to
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			return
		}
		if e.Tag != dwarf.TagVariable {
			continue
		}
		if decl, _ := e.Val(dwarf.AttrDeclaration).(bool); decl {
			continue
		}
		expr, _ := e.Val(dwarf.AttrLocation).([]byte)
		addr, ok := i.fixedAddr(expr, e.Offset)
		if !ok {
			continue
		}
		t, ok := e.Val(dwarf.AttrType).(dwarf.Offset)
		// A definition may take its type from the declaration it
		// completes (C's extern in a header) or from an abstract origin.
		for _, a := range []dwarf.Attr{dwarf.AttrSpecification, dwarf.AttrAbstractOrigin} {
			if ok {
				break
			}
			o, isRef := e.Val(a).(dwarf.Offset)
			if !isRef {
				continue
			}
			ref.Seek(o)
			if d, err := ref.Next(); err == nil && d != nil {
				t, ok = d.Val(dwarf.AttrType).(dwarf.Offset)
			}
		}
		if ok {
			if _, dup := i.staticAt[addr]; !dup {
				i.staticAt[addr] = t
			}
		}
	}
}

// fixedAddr reads a location expression that is one address and nothing
// else: DW_OP_addr, or DW_OP_addrx through the .debug_addr table of the
// unit holding the DIE at off.
func (i *Info) fixedAddr(expr []byte, off dwarf.Offset) (uint64, bool) {
	switch {
	case len(expr) == 9 && expr[0] == elfx.OpAddr:
		return binary.LittleEndian.Uint64(expr[1:]), true
	case len(expr) >= 2 && (expr[0] == elfx.OpAddrx || expr[0] == elfx.OpGNUAddrIndex):
		r := elfx.NewReader(expr)
		r.Off = 1
		idx := r.ULEB()
		u := i.unitOf(off)
		if r.Bad || r.Left() != 0 || u == nil {
			return 0, false
		}
		a, err := u.debugAddr(idx)
		return a, err == nil
	}
	return 0, false
}
