// Package state reads the program state of a sampled or stopped thread: it
// evaluates culprit's expressions (package expr) in the thread's frames,
// through DWARF types and locations (package dwarfx), and turns them into
// ValueSource and Value records. Collectors call it at each sample; it does
// not open perf events, stop threads or write files.
package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sync"

	"github.com/culprit-dev/culprit/internal/dwarfx"
	"github.com/culprit-dev/culprit/internal/expr"
	"github.com/culprit-dev/culprit/internal/schema"
)

// object is a typed program value: an expr.Object over DWARF.
type object struct {
	t       *dwarfx.Type
	bytes   []byte // the value, when known (nil when only the address is)
	missing [][2]int
	addr    uint64 // where it lives, when inMem
	inMem   bool
	bitSize int64 // for bitfields: width and first bit within bytes
	bitOff  int64
	mem     func(addr uint64, buf []byte) error
	name    string // for messages
}

func missing(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, expr.ErrMissing)...)
}

func typeErr(format string, args ...any) error {
	return &expr.TypeError{Msg: fmt.Sprintf(format, args...)}
}

// read returns n bytes of the object from offset off.
func (o *object) read(off, n int64) ([]byte, error) {
	if n <= 0 {
		return nil, typeErr("%s has a type of unknown size", o.name)
	}
	if o.bytes != nil && off+n <= int64(len(o.bytes)) {
		for _, m := range o.missing {
			if int64(m[0]) < off+n && off < int64(m[1]) {
				return nil, missing("%s is optimized out in part", o.name)
			}
		}
		return o.bytes[off : off+n], nil
	}
	if !o.inMem {
		return nil, missing("%s is not in memory", o.name)
	}
	return o.load(o.addr+uint64(off), n)
}

func (o *object) load(addr uint64, n int64) ([]byte, error) {
	if o.mem == nil {
		return nil, missing("memory is not readable here")
	}
	if addr == 0 {
		return nil, missing("null pointer")
	}
	buf := make([]byte, n)
	if err := o.mem(addr, buf); err != nil {
		return nil, missing("reading %d bytes at %#x: %v", n, addr, err)
	}
	return buf, nil
}

// at makes the object of type t at offset off of o.
func (o *object) at(t *dwarfx.Type, off int64, name string) (*object, error) {
	size := t.Size
	if size <= 0 {
		return nil, typeErr("%s has a type of unknown size", name)
	}
	sub := &object{t: t, mem: o.mem, name: name}
	if o.inMem {
		sub.addr, sub.inMem = o.addr+uint64(off), true
	}
	if o.bytes != nil && off+size <= int64(len(o.bytes)) {
		b, err := o.read(off, size)
		if err != nil {
			return nil, err
		}
		sub.bytes = b
	} else if !o.inMem {
		return nil, missing("%s is not available", name)
	}
	return sub, nil
}

// pointee follows a pointer object to the object it points to.
func (o *object) pointee(name string) (*object, error) {
	u := o.t.Underlying()
	if u.Kind != dwarfx.Pointer {
		return nil, typeErr("%s has type %s, not a pointer", o.name, o.t.Name)
	}
	b, err := o.read(0, 8)
	if err != nil {
		return nil, err
	}
	addr := le64(b)
	if addr == 0 {
		return nil, missing("%s is a null pointer", o.name)
	}
	elem := u.Elem
	if elem == nil || elem.Underlying().Kind == dwarfx.Void {
		return nil, typeErr("%s points to void: cast it to the type it points to, e.g. ((struct T *)%s)", o.name, o.name)
	}
	return &object{t: elem, addr: addr, inMem: true, mem: o.mem, name: name}, nil
}

func le64(b []byte) uint64 {
	var v uint64
	for i := len(b) - 1; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

func (o *object) Member(name string, arrow bool) (expr.Object, error) {
	base := o
	if arrow {
		p, err := o.pointee("*" + o.name)
		if err != nil {
			return nil, err
		}
		base = p
	}
	u := base.t.Underlying()
	if u.Kind != dwarfx.Struct && u.Kind != dwarfx.Union && u.Kind != dwarfx.Class {
		op := "."
		if arrow {
			op = "->"
		}
		return nil, typeErr("%s%s%s: %s is not a struct", o.name, op, name, base.t.Name)
	}
	f, ok := base.t.Field(name)
	if !ok {
		return nil, typeErr("%s has no field %s", base.t.Name, name)
	}
	full := o.name + "." + name
	if arrow {
		full = o.name + "->" + name
	}
	if f.BitSize > 0 {
		size := (f.BitOffset%8 + f.BitSize + 7) / 8
		b, err := base.read(f.BitOffset/8, size)
		if err != nil {
			return nil, err
		}
		return &object{t: f.Type, bytes: b, bitSize: f.BitSize, bitOff: f.BitOffset % 8, name: full}, nil
	}
	return base.at(f.Type, f.Offset, full)
}

func (o *object) Index(i int64) (expr.Object, error) {
	u := o.t.Underlying()
	name := fmt.Sprintf("%s[%d]", o.name, i)
	switch u.Kind {
	case dwarfx.Array:
		if u.Count >= 0 && (i < 0 || i >= u.Count) {
			return nil, missing("%s is out of bounds (%d elements)", name, u.Count)
		}
		return o.at(u.Elem, i*u.Elem.Size, name)
	case dwarfx.Pointer:
		p, err := o.pointee(name)
		if err != nil {
			return nil, err
		}
		p.addr += uint64(i * p.t.Size)
		return p, nil
	}
	return nil, typeErr("%s is a %s: neither an array nor a pointer", o.name, o.t.Name)
}

func (o *object) Deref() (expr.Object, error) { return o.pointee("*" + o.name) }

// Addr is &o: a pointer to o, which must be in memory.
func (o *object) Addr() (expr.Object, error) {
	if o.bitSize > 0 {
		return nil, typeErr("cannot take the address of the bitfield %s", o.name)
	}
	if !o.inMem {
		return nil, missing("%s is not in memory here (it lives in a register)", o.name)
	}
	b := make([]byte, 8)
	binary.LittleEndian.PutUint64(b, o.addr)
	return &object{t: dwarfx.PointerTo(o.t), bytes: b, mem: o.mem, name: "&" + o.name}, nil
}

// Size is the size of o's type in bytes.
func (o *object) Size() int64 { return o.t.Size }

// ctype is a type of the program named in a cast or in sizeof.
type ctype struct {
	t   *dwarfx.Type
	mem func(addr uint64, buf []byte) error
}

func (c ctype) Size() int64 { return c.t.Size }

// Convert makes a value of type c from a scalar, as C's cast does.
func (c ctype) Convert(s expr.Scalar) (expr.Object, error) {
	u := c.t.Underlying()
	if !u.IsScalar() || u.Size <= 0 || u.Size > 8 {
		return nil, typeErr("cannot cast a number to %s: cast to a pointer (%s *) and follow it", c.t.Name, c.t.Name)
	}
	b := make([]byte, 8)
	switch {
	case u.Kind == dwarfx.Float && u.Size == 4:
		binary.LittleEndian.PutUint32(b, math.Float32bits(float32(s.Float64())))
	case u.Kind == dwarfx.Float:
		binary.LittleEndian.PutUint64(b, math.Float64bits(s.Float64()))
	case s.Kind == expr.Float:
		if u.Signed {
			binary.LittleEndian.PutUint64(b, uint64(int64(s.F)))
		} else {
			binary.LittleEndian.PutUint64(b, uint64(s.F))
		}
	case s.Kind == expr.Int:
		binary.LittleEndian.PutUint64(b, uint64(s.I))
	default:
		binary.LittleEndian.PutUint64(b, s.U)
	}
	if u.Kind == dwarfx.Bool {
		b = make([]byte, 8)
		if s.Float64() != 0 || s.Kind == expr.Uint && s.U != 0 {
			b[0] = 1
		}
	}
	return &object{t: c.t, bytes: b[:u.Size], mem: c.mem, name: "(" + c.t.Name + ")"}, nil
}

func (o *object) Scalar() (expr.Scalar, error) {
	u := o.t.Underlying()
	if !u.IsScalar() {
		return expr.Scalar{}, typeErr("%s is a %s, not a number: select a field or element", o.name, o.t.Name)
	}
	size := u.Size
	if o.bitSize > 0 {
		size = int64(len(o.bytes))
	}
	b, err := o.read(0, size)
	if err != nil {
		return expr.Scalar{}, err
	}
	if o.bitSize > 0 {
		v := le64(b) >> uint(o.bitOff) & (1<<uint(o.bitSize) - 1)
		if u.Signed && v&(1<<uint(o.bitSize-1)) != 0 {
			return expr.IntValue(int64(v) - 1<<uint(o.bitSize)), nil
		}
		if u.Signed {
			return expr.IntValue(int64(v)), nil
		}
		return expr.UintValue(v), nil
	}
	switch u.Kind {
	case dwarfx.Float:
		f, ok := u.Float(b)
		if !ok {
			return expr.Scalar{}, typeErr("cannot read %s as a float", o.t.Name)
		}
		return expr.FloatValue(f), nil
	case dwarfx.Pointer:
		return expr.UintValue(le64(b)), nil
	}
	var v expr.Scalar
	if u.Signed {
		i, ok := u.Int(b)
		if !ok {
			return expr.Scalar{}, typeErr("cannot read %s as an integer", o.t.Name)
		}
		v = expr.IntValue(i)
	} else {
		v = expr.UintValue(le64(b))
	}
	if u.Kind == dwarfx.Enum {
		v.Enum = enumOf(u)
	}
	return v, nil
}

var enums sync.Map // *dwarfx.Type → *expr.Enum

// enumOf returns the enumerators of an enum type.
func enumOf(t *dwarfx.Type) *expr.Enum {
	if e, ok := enums.Load(t); ok {
		return e.(*expr.Enum)
	}
	e := &expr.Enum{}
	for _, x := range t.Enumerators {
		e.Names = append(e.Names, x.Name)
		e.Values = append(e.Values, x.Value)
	}
	enums.Store(t, e)
	return e
}

// frameEnv resolves names in one frame: the function's variables in scope
// at the PC, then globals.
type frameEnv struct {
	info  *dwarfx.Info
	fn    *dwarfx.Function
	pc    uint64 // ELF address to look variables up at
	frame *dwarfx.Frame
	code  *schema.Code // the function's machine code when its compiler's location lists leave gaps (Go); else nil
}

// location returns where local v is at the frame's PC: its DWARF location,
// else the register the machine code carries it in (schema.Code.Carried).
func (e *frameEnv) location(v *dwarfx.Variable) (dwarfx.Location, bool) {
	if l, ok := v.Location(e.pc); ok {
		return l, true
	}
	if e.code != nil && !v.IsGlobal {
		if r, ok := e.code.Carried(v, e.pc); ok {
			return v.InRegister(e.pc, r), true
		}
	}
	return dwarfx.Location{}, false
}

// read evaluates variable v in the frame.
func (e *frameEnv) read(v *dwarfx.Variable) (dwarfx.Value, error) {
	l, ok := e.location(v)
	if !ok {
		return dwarfx.Value{}, dwarfx.ErrOptimizedOut
	}
	size := v.Type().Size
	if size <= 0 {
		return v.Read(e.pc, e.frame) // (its error)
	}
	return l.Eval(e.frame, int(size))
}

// Type resolves a type name against the DWARF of the frame's object.
func (e *frameEnv) Type(name string) (expr.Type, error) {
	t, ok := e.info.TypeNamed(name)
	if !ok {
		return nil, typeErr("no type %s in %s", name, filepath.Base(e.info.Path()))
	}
	return ctype{t: t, mem: e.frame.Mem}, nil
}

func (e *frameEnv) Var(name string) (expr.Object, error) {
	var v *dwarfx.Variable
	for _, c := range e.fn.Variables(e.pc) {
		if c.Name == name {
			v = c
			break
		}
	}
	if v == nil {
		g, ok := e.info.GlobalFrom(e.fn.Name, name)
		if !ok {
			return nil, missing("no variable %s in scope in %s here", name, e.fn.Name)
		}
		// A global is read lazily, only the bytes its members and
		// elements need: a collector copies exactly those at a sample.
		if l, ok := g.Location(e.pc); ok && l.Expr != nil && g.Type() != nil && g.Type().Size > 0 {
			if val, err := l.Eval(e.frame, 0); err == nil && val.InMemory {
				return &object{t: g.Type(), addr: val.Addr, inMem: true, mem: e.frame.Mem, name: name}, nil
			}
		}
		v = g
	}
	val, err := e.read(v)
	if err != nil {
		if errors.Is(err, dwarfx.ErrUnavailable) || errors.Is(err, dwarfx.ErrOptimizedOut) {
			return nil, missing("%s: %v", name, err)
		}
		return nil, fmt.Errorf("%s: %v: %w", name, err, expr.ErrMissing)
	}
	return &object{t: v.Type(), bytes: val.Bytes, missing: val.Missing, addr: val.Addr, inMem: val.InMemory,
		mem: e.frame.Mem, name: name}, nil
}
