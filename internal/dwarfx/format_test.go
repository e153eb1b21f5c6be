package dwarfx

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"
)

func TestFormat(t *testing.T) {
	i32 := &Type{Kind: Int, Name: "int", Size: 4, Signed: true}
	u16 := &Type{Kind: Uint, Name: "unsigned short", Size: 2}
	ch := &Type{Kind: Char, Name: "char", Size: 1, Signed: true}
	uch := &Type{Kind: Char, Name: "unsigned char", Size: 1}
	f32 := &Type{Kind: Float, Name: "float", Size: 4}
	f64 := &Type{Kind: Float, Name: "double", Size: 8}
	bl := &Type{Kind: Bool, Name: "_Bool", Size: 1}
	ptr := &Type{Kind: Pointer, Name: "int *", Size: 8, Elem: i32}
	en := &Type{Kind: Enum, Name: "enum color", Size: 4, Enumerators: []Enumerator{{"RED", 0}, {"GREEN", 5}}}
	td := &Type{Kind: Typedef, Name: "myint", Size: 4, Elem: i32, Signed: true}
	cplx := &Type{Kind: Complex, Name: "complex double", Size: 16}
	arr := &Type{Kind: Array, Name: "char [6]", Size: 6, Elem: ch, Count: 6}
	inner := &Type{Kind: Struct, Name: "struct {...}", Size: 4, Fields: []Field{{Name: "z", Type: i32}}}
	st := &Type{Kind: Struct, Name: "struct s", Size: 12, Fields: []Field{
		{Name: "a", Type: i32, Offset: 0, BitOffset: 0},
		{Name: "b", Type: i32, Offset: 4, BitSize: 3, BitOffset: 32},
		{Name: "c", Type: i32, Offset: 4, BitSize: 4, BitOffset: 35},
		{Type: inner, Offset: 8, BitOffset: 64},
	}}
	f32b := binary.LittleEndian.AppendUint32(nil, math.Float32bits(1.1))
	f64b := binary.LittleEndian.AppendUint64(nil, math.Float64bits(1.0/3))
	cb := append(binary.LittleEndian.AppendUint64(nil, math.Float64bits(1)), binary.LittleEndian.AppendUint64(nil, math.Float64bits(-2.5))...)
	cases := []struct {
		t    *Type
		b    []byte
		want string
	}{
		{i32, []byte{0xfe, 0xff, 0xff, 0xff}, "-2"},
		{u16, []byte{0xff, 0xff}, "65535"},
		{ch, []byte{'a'}, "97 'a'"},
		{ch, []byte{0xc8}, `-56 '\310'`},
		{ch, []byte{'\''}, `39 '\''`},
		{uch, []byte{'\n'}, `10 '\n'`},
		{uch, []byte{0}, `0 '\000'`},
		{f32, f32b, "1.10000002"},
		{f64, f64b, "0.33333333333333331"},
		{f64, binary.LittleEndian.AppendUint64(nil, math.Float64bits(1e20)), "1e+20"},
		{f64, binary.LittleEndian.AppendUint64(nil, math.Float64bits(math.Inf(-1))), "-inf"},
		{bl, []byte{1}, "true"},
		{bl, []byte{0}, "false"},
		{bl, []byte{2}, "2"},
		{ptr, []byte{0x10, 0x20, 0, 0, 0, 0, 0, 0}, "0x2010"},
		{ptr, make([]byte, 8), "0x0"},
		{en, []byte{5, 0, 0, 0}, "GREEN"},
		{en, []byte{7, 0, 0, 0}, "7"},
		{td, []byte{3, 0, 0, 0}, "3"},
		{cplx, cb, "1 + -2.5i"},
		{arr, []byte("ab\"\\\x01\x00"), `"ab\"\\\001"`},
		{arr, []byte{0, 0, 0, 0, 0, 0}, `"\000\000\000\000\000"`},
		{st, []byte{1, 0, 0, 0, 0x3d, 0, 0, 0, 9, 0, 0, 0}, "{a = 1, b = -3, c = 7, {z = 9}}"},
	}
	for _, c := range cases {
		if got := c.t.Format(c.b); got != c.want {
			t.Errorf("%s % x: %s, want %s", c.t.Name, c.b, got, c.want)
		}
	}
	// Partly available values.
	v := Value{Bytes: make([]byte, 12), Missing: [][2]int{{4, 8}}}
	if got := st.FormatValue(v); got != "{a = 0, b = <optimized out>, c = <optimized out>, {z = 0}}" {
		t.Errorf("partial struct: %s", got)
	}
	v = Value{Bytes: make([]byte, 12), Missing: [][2]int{{0, 12}}}
	if got := st.FormatValue(v); got != "<optimized out>" {
		t.Errorf("missing struct: %s", got)
	}
	v = Value{Bytes: []byte("abcdef"), Missing: [][2]int{{1, 2}}}
	if got := arr.FormatValue(v); got != "{97 'a', <optimized out>, 99 'c', 100 'd', 101 'e', 102 'f'}" {
		t.Errorf("partial char array: %s", got)
	}
	big := &Type{Kind: Array, Size: 4 * 300, Elem: i32, Count: 300}
	if got := big.Format(make([]byte, 1200)); !strings.HasSuffix(got, ", 0, ...}") || strings.Count(got, "0") != 200 {
		t.Errorf("long array: %s", got)
	}
}

func TestDecode(t *testing.T) {
	i8 := &Type{Kind: Int, Size: 1, Signed: true}
	if v, ok := i8.Int([]byte{0xff}); !ok || v != -1 {
		t.Errorf("int8 0xff = %d", v)
	}
	u8 := &Type{Kind: Uint, Size: 1}
	if v, ok := u8.Float([]byte{0xff}); !ok || v != 255 {
		t.Errorf("uint8 0xff as float = %v", v)
	}
	ld := &Type{Kind: Float, Size: 16}
	// 1.5 as x87 extended: mantissa 0xc000000000000000, exponent 0x3fff.
	b := binary.LittleEndian.AppendUint64(nil, 0xc000000000000000)
	b = binary.LittleEndian.AppendUint16(b, 0x3fff)
	b = append(b, make([]byte, 6)...)
	if v, ok := ld.Float(b); !ok || v != 1.5 {
		t.Errorf("long double = %v", v)
	}
	st := &Type{Kind: Struct, Fields: []Field{{Name: "u", Type: &Type{Kind: Union, Fields: []Field{{Name: "deep", Offset: 0}}}, Offset: 8}}}
	st.Fields[0].Name = ""
	if f, ok := st.Field("deep"); !ok || f.Offset != 8 {
		t.Errorf("anonymous member lookup: %+v %v", f, ok)
	}
	if (&Type{Kind: Struct}).IsScalar() || !(&Type{Kind: Typedef, Elem: &Type{Kind: Pointer}}).IsScalar() {
		t.Error("IsScalar")
	}
}
