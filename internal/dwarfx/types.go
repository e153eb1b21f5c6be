package dwarfx

import (
	"debug/dwarf"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
)

// Kind is the kind of a Type.
type Kind uint8

// Kinds of types. Const, volatile, restrict and atomic qualifiers are
// transparent (a const int is an Int); typedefs are kept (Kind Typedef,
// Elem the named type) and Underlying strips them.
const (
	Invalid Kind = iota // unsupported or unreadable type
	Void
	Int     // signed integer
	Uint    // unsigned integer (and DW_ATE_address)
	Char    // character types; Signed says whether plain/signed
	Bool    // _Bool, bool
	Float   // float, double, long double (x87)
	Complex // _Complex float/double
	Pointer // pointers and references (Elem)
	Struct
	Union
	Class
	Array   // Elem, Count
	Enum    // Enumerators
	Func    // a function type (only behind pointers)
	Typedef // Name is the typedef's, Elem the named type
)

var kindNames = [...]string{"invalid", "void", "int", "uint", "char", "bool", "float", "complex",
	"pointer", "struct", "union", "class", "array", "enum", "func", "typedef"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Type is a C-level type from DWARF.
type Type struct {
	Kind Kind
	// Name is the C spelling: "int", "struct job", "char *",
	// "short [2][3]", "size_t".
	Name string
	// Size is the size in bytes; 0 for void and functions, -1 when unknown
	// (incomplete structs, arrays of unknown length).
	Size int64
	// Signed is set for signed Int, Char and Enum types.
	Signed bool
	// Elem is the pointed-to type (Pointer; Void for void *), the element
	// type (Array), or the named type (Typedef).
	Elem *Type
	// Count is the number of elements of an Array (-1 unknown). A
	// multi-dimensional array is an array of arrays.
	Count int64
	// Fields are the members of a Struct, Union or Class.
	Fields []Field
	// Enumerators are the values of an Enum.
	Enumerators []Enumerator
}

// Field is a member of a struct, union or class.
type Field struct {
	Name string // empty for anonymous members
	Type *Type
	// Offset is the member's byte offset in its container. For a bitfield
	// it is the byte containing the first bit.
	Offset int64
	// BitSize is the width of a bitfield (0 for ordinary members) and
	// BitOffset its first bit counted from bit 0 of the container (LSB
	// first, as on x86-64).
	BitSize   int64
	BitOffset int64
}

// Enumerator is one named value of an enum.
type Enumerator struct {
	Name  string
	Value int64
}

func (t *Type) String() string { return t.Name }

// Underlying strips typedefs.
func (t *Type) Underlying() *Type {
	for n := 0; t != nil && t.Kind == Typedef && t.Elem != nil && n < 64; n++ {
		t = t.Elem
	}
	return t
}

// IsScalar reports whether values of t are single numbers: integers,
// characters, booleans, floats, enums and pointers.
func (t *Type) IsScalar() bool {
	switch t.Underlying().Kind {
	case Int, Uint, Char, Bool, Float, Enum, Pointer:
		return true
	}
	return false
}

// Field returns the member called name, looking into anonymous struct and
// union members; Offset and BitOffset are relative to t.
func (t *Type) Field(name string) (Field, bool) {
	u := t.Underlying()
	for _, f := range u.Fields {
		if f.Name == name {
			return f, true
		}
	}
	for _, f := range u.Fields {
		if f.Name == "" && f.Type != nil {
			if g, ok := f.Type.Field(name); ok {
				g.Offset += f.Offset
				g.BitOffset += f.Offset * 8
				return g, true
			}
		}
	}
	return Field{}, false
}

var voidType = &Type{Kind: Void, Name: "void"}

// typeAt reads and converts the type DIE at off.
func (i *Info) typeAt(off dwarf.Offset) (t *Type) {
	if off == 0 {
		return voidType
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	defer func() {
		if r := recover(); r != nil { // debug/dwarf on malformed input
			t = &Type{Kind: Invalid, Name: "<unreadable type>", Size: -1}
		}
	}()
	dt, err := i.d.Type(off)
	if err != nil {
		return &Type{Kind: Invalid, Name: "<unreadable type>", Size: -1}
	}
	if u, ok := dt.(*dwarf.UnsupportedType); ok && (u.Tag == dwarf.TagReferenceType || u.Tag == dwarf.TagRvalueReferenceType) {
		return i.reference(dt, off)
	}
	return i.convert(dt, 0)
}

// reference converts the C++ reference type at off, which debug/dwarf
// does not decode (an UnsupportedType), to a Pointer to the type it refers
// to: a reference is passed and held as the address of its object. Only
// a variable's or parameter's own type is read so; a reference nested in
// another type stays Invalid. Callers hold i.mu.
func (i *Info) reference(dt dwarf.Type, off dwarf.Offset) *Type {
	if t, ok := i.types[dt]; ok {
		return t
	}
	t := &Type{Kind: Pointer, Size: 8, Elem: voidType}
	i.types[dt] = t
	r := i.d.Reader()
	r.Seek(off)
	if e, err := r.Next(); err == nil && e != nil {
		if sub, ok := e.Val(dwarf.AttrType).(dwarf.Offset); ok {
			if et, err := i.d.Type(sub); err == nil {
				t.Elem = i.convert(et, 1)
			}
		}
	}
	t.Name = t.Elem.Name + " &"
	if dt.(*dwarf.UnsupportedType).Tag == dwarf.TagRvalueReferenceType {
		t.Name += "&"
	}
	return t
}

// convert maps a debug/dwarf type to a Type, memoized so that recursive
// types (struct node { struct node *next; }) terminate. Callers hold i.mu.
func (i *Info) convert(dt dwarf.Type, depth int) *Type {
	if dt == nil {
		return voidType
	}
	if t, ok := i.types[dt]; ok {
		return t
	}
	if q, ok := dt.(*dwarf.QualType); ok {
		t := i.convert(q.Type, depth+1)
		i.types[dt] = t
		return t
	}
	if depth > 200 {
		return &Type{Kind: Invalid, Name: "<type nested too deeply>", Size: -1}
	}
	t := &Type{Name: cname(dt, 0), Size: dt.Size()}
	i.types[dt] = t
	switch x := dt.(type) {
	case *dwarf.BoolType:
		t.Kind = Bool
	case *dwarf.CharType:
		t.Kind, t.Signed = Char, true
	case *dwarf.UcharType:
		t.Kind = Char
	case *dwarf.IntType:
		t.Kind, t.Signed = Int, true
	case *dwarf.UintType, *dwarf.AddrType:
		t.Kind = Uint
	case *dwarf.FloatType:
		t.Kind = Float
	case *dwarf.ComplexType:
		t.Kind = Complex
	case *dwarf.VoidType, *dwarf.UnspecifiedType:
		t.Kind = Void
		if t.Size < 0 {
			t.Size = 0
		}
	case *dwarf.PtrType:
		t.Kind = Pointer
		t.Elem = i.convert(x.Type, depth+1)
		if t.Size <= 0 {
			t.Size = 8
		}
	case *dwarf.StructType:
		switch x.Kind {
		case "union":
			t.Kind = Union
		case "class":
			t.Kind = Class
		default:
			t.Kind = Struct
		}
		if x.Incomplete {
			t.Size = -1
		}
		for _, f := range x.Field {
			fld := Field{Name: f.Name, Type: i.convert(f.Type, depth+1), Offset: f.ByteOffset}
			if f.BitSize > 0 {
				fld.BitSize = f.BitSize
				if f.DataBitOffset != 0 || f.ByteSize == 0 {
					// DWARF 4+ DW_AT_data_bit_offset: from the start
					// of the container.
					fld.BitOffset = f.DataBitOffset
				} else {
					// DWARF 2-3 DW_AT_bit_offset: from the most
					// significant bit of a ByteSize-byte storage
					// unit at ByteOffset.
					fld.BitOffset = f.ByteOffset*8 + f.ByteSize*8 - f.BitOffset - f.BitSize
				}
				fld.Offset = fld.BitOffset / 8
			} else {
				fld.BitOffset = fld.Offset * 8
			}
			t.Fields = append(t.Fields, fld)
		}
	case *dwarf.ArrayType:
		t.Kind = Array
		t.Elem = i.convert(x.Type, depth+1)
		t.Count = x.Count
		if t.Count >= 0 && t.Elem.Size >= 0 {
			t.Size = t.Count * t.Elem.Size
		} else {
			t.Size = -1
		}
	case *dwarf.EnumType:
		t.Kind = Enum
		for _, v := range x.Val {
			t.Enumerators = append(t.Enumerators, Enumerator{v.Name, v.Val})
			if v.Val < 0 {
				t.Signed = true
			}
		}
	case *dwarf.FuncType:
		t.Kind = Func
		t.Size = 0
	case *dwarf.TypedefType:
		t.Kind = Typedef
		t.Elem = i.convert(x.Type, depth+1)
		t.Size = t.Elem.Size
		t.Signed = t.Elem.Signed
	default:
		t.Kind = Invalid
	}
	return t
}

// cname spells a type as C does.
func cname(dt dwarf.Type, depth int) string {
	if depth > 16 {
		return "..."
	}
	switch x := dt.(type) {
	case nil:
		return "void"
	case *dwarf.QualType:
		return x.Qual + " " + cname(x.Type, depth+1)
	case *dwarf.StructType:
		if x.StructName != "" {
			return x.Kind + " " + x.StructName
		}
		return x.Kind + " {...}"
	case *dwarf.EnumType:
		if x.EnumName != "" {
			return "enum " + x.EnumName
		}
		return "enum {...}"
	case *dwarf.PtrType:
		if f, ok := x.Type.(*dwarf.FuncType); ok {
			return funcName(f, "(*)", depth)
		}
		e := cname(x.Type, depth+1)
		if strings.HasSuffix(e, "*") {
			return e + "*"
		}
		return e + " *"
	case *dwarf.FuncType:
		return funcName(x, "", depth)
	case *dwarf.ArrayType:
		dims := ""
		var e dwarf.Type = x
		for {
			a, ok := e.(*dwarf.ArrayType)
			if !ok {
				break
			}
			if a.Count >= 0 {
				dims += fmt.Sprintf("[%d]", a.Count)
			} else {
				dims += "[]"
			}
			e = a.Type
		}
		return cname(e, depth+1) + " " + dims
	case *dwarf.TypedefType:
		return x.Name
	case *dwarf.VoidType:
		return "void"
	}
	if n := dt.Common().Name; n != "" {
		return n
	}
	return dt.String()
}

func funcName(f *dwarf.FuncType, mid string, depth int) string {
	var ps []string
	for _, p := range f.ParamType {
		if _, ok := p.(*dwarf.DotDotDotType); ok {
			ps = append(ps, "...")
			continue
		}
		ps = append(ps, cname(p, depth+1))
	}
	if len(ps) == 0 {
		ps = []string{"void"}
	}
	s := cname(f.ReturnType, depth+1) + " " + mid + "(" + strings.Join(ps, ", ") + ")"
	return strings.Replace(s, "  ", " ", 1)
}

// Int decodes an integer-like value (Int, Uint, Char, Bool, Enum, Pointer,
// or a bitfield-free typedef of one) from b, sign-extended when the type is
// signed.
func (t *Type) Int(b []byte) (int64, bool) {
	u := t.Underlying()
	switch u.Kind {
	case Int, Uint, Char, Bool, Enum, Pointer:
	default:
		return 0, false
	}
	if u.Size <= 0 || u.Size > 8 || int64(len(b)) < u.Size {
		return 0, false
	}
	return extend(leUint(b[:u.Size]), int(u.Size)*8, u.Signed), true
}

// Float decodes a numeric value as a float64: floats (4, 8 and x87 10-byte
// long double) and everything Int accepts.
func (t *Type) Float(b []byte) (float64, bool) {
	u := t.Underlying()
	if u.Kind != Float {
		v, ok := u.Int(b)
		if !ok {
			return 0, false
		}
		if !u.Signed {
			return float64(uint64(v)), true
		}
		return float64(v), true
	}
	if int64(len(b)) < u.Size {
		return 0, false
	}
	switch u.Size {
	case 4:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b))), true
	case 8:
		return math.Float64frombits(binary.LittleEndian.Uint64(b)), true
	case 10, 12, 16:
		return x87(b), true
	}
	return 0, false
}

// x87 converts an 80-bit extended-precision value to float64.
func x87(b []byte) float64 {
	mant := binary.LittleEndian.Uint64(b)
	se := binary.LittleEndian.Uint16(b[8:])
	sign := 1.0
	if se&0x8000 != 0 {
		sign = -1
	}
	exp := int(se & 0x7fff)
	switch {
	case exp == 0 && mant == 0:
		return math.Copysign(0, sign)
	case exp == 0x7fff:
		if mant<<1 == 0 {
			return math.Inf(int(sign))
		}
		return math.NaN()
	}
	return sign * math.Ldexp(float64(mant), exp-16383-63)
}

func leUint(b []byte) uint64 {
	var v uint64
	for k := len(b) - 1; k >= 0; k-- {
		v = v<<8 | uint64(b[k])
	}
	return v
}

func extend(v uint64, bits int, signed bool) int64 {
	if bits >= 64 {
		return int64(v)
	}
	v &= 1<<uint(bits) - 1
	if signed && v&(1<<uint(bits-1)) != 0 {
		return int64(v | ^uint64(0)<<uint(bits))
	}
	return int64(v)
}

// Bits extracts bitfield f from the bytes b of its container.
func (f Field) Bits(b []byte) (int64, bool) {
	if f.BitSize <= 0 || f.BitSize > 64 {
		return 0, false
	}
	lo := f.BitOffset / 8
	hi := (f.BitOffset + f.BitSize + 7) / 8
	if lo < 0 || hi > int64(len(b)) || hi-lo > 9 {
		return 0, false
	}
	var v uint64
	shift := uint(f.BitOffset % 8)
	for k := lo; k < hi; k++ {
		byteShift := uint(k-lo) * 8
		if byteShift >= shift {
			v |= uint64(b[k]) << (byteShift - shift)
		} else {
			v |= uint64(b[k]) >> (shift - byteShift)
		}
	}
	signed := f.Type != nil && f.Type.Underlying().Signed
	return extend(v, int(f.BitSize), signed), true
}
