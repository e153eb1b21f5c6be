package dwarfx

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// maxElems is how many array elements or string characters Format shows
// before "..." (gdb's default "print elements 200").
const maxElems = 200

// Format renders a value of type t held in b as gdb's print does with
// "set print repeats unlimited" and "set print symbol off": integers in
// decimal, characters as 97 'a', floats with %.9g or %.17g, pointers in hex,
// structs as {a = 1, b = {x = 2}}, arrays as {1, 2, 3}, char arrays as
// strings with octal escapes. Pointed-to strings and symbol names are not
// shown (Format has no access to memory or symbols).
func (t *Type) Format(b []byte) string {
	return t.FormatValue(Value{Bytes: b})
}

// FormatValue is Format for an evaluated value: bytes listed in v.Missing
// print as <optimized out>, as gdb prints partly available values.
func (t *Type) FormatValue(v Value) string {
	var sb strings.Builder
	fm := formatter{sb: &sb, v: v}
	fm.value(t, 0, 0)
	return sb.String()
}

type formatter struct {
	sb *strings.Builder
	v  Value
}

func (fm *formatter) avail(lo, hi int64) (all, any bool) {
	if lo < 0 || hi > int64(len(fm.v.Bytes)) {
		return false, lo < int64(len(fm.v.Bytes))
	}
	all, any = true, false
	for _, m := range fm.v.Missing {
		if int64(m[0]) < hi && lo < int64(m[1]) {
			all = false
			if int64(m[0]) <= lo && hi <= int64(m[1]) {
				return false, false
			}
		}
	}
	if all {
		return true, true
	}
	return false, true
}

func (fm *formatter) value(t *Type, off int64, depth int) {
	w := fm.sb
	u := t.Underlying()
	if u == nil || depth > 32 {
		w.WriteString("<?>")
		return
	}
	size := u.Size
	if size < 0 {
		size = 0
	}
	all, any := fm.avail(off, off+size)
	if !any && size > 0 {
		w.WriteString("<optimized out>")
		return
	}
	switch u.Kind {
	case Struct, Union, Class:
		w.WriteString("{")
		for k, f := range u.Fields {
			if k > 0 {
				w.WriteString(", ")
			}
			if f.Name != "" {
				w.WriteString(f.Name + " = ")
			}
			if f.BitSize > 0 {
				lo := off + f.BitOffset/8
				hi := off + (f.BitOffset+f.BitSize+7)/8
				if a, _ := fm.avail(lo, hi); !a {
					w.WriteString("<optimized out>")
					continue
				}
				fb := f
				fb.BitOffset = f.BitOffset % 8
				v, ok := fb.Bits(fm.v.Bytes[lo:hi])
				if !ok {
					w.WriteString("<?>")
					continue
				}
				fm.scalar(f.Type.Underlying(), v)
				continue
			}
			fm.value(f.Type, off+f.Offset, depth+1)
		}
		w.WriteString("}")
		return
	case Array:
		fm.array(u, off, depth)
		return
	}
	if !all || off+size > int64(len(fm.v.Bytes)) {
		w.WriteString("<optimized out>")
		return
	}
	b := fm.v.Bytes[off : off+size]
	switch u.Kind {
	case Float:
		f, ok := u.Float(b)
		if !ok {
			w.WriteString("<?>")
			return
		}
		w.WriteString(formatFloat(f, u.Size))
	case Complex:
		h := u.Size / 2
		ft := &Type{Kind: Float, Size: h}
		re, ok1 := ft.Float(b[:h])
		im, ok2 := ft.Float(b[h:])
		if !ok1 || !ok2 {
			w.WriteString("<?>")
			return
		}
		w.WriteString(formatFloat(re, h) + " + " + formatFloat(im, h) + "i")
	case Void, Func:
		w.WriteString("{...}")
	case Invalid:
		w.WriteString("<unsupported type>")
	default:
		v, ok := u.Int(b)
		if !ok {
			w.WriteString("<?>")
			return
		}
		fm.scalar(u, v)
	}
}

// scalar writes an integer-like value of type u.
func (fm *formatter) scalar(u *Type, v int64) {
	w := fm.sb
	switch u.Kind {
	case Pointer:
		fmt.Fprintf(w, "%#x", uint64(v))
	case Bool:
		switch v {
		case 0:
			w.WriteString("false")
		case 1:
			w.WriteString("true")
		default:
			fmt.Fprintf(w, "%d", v)
		}
	case Char:
		w.WriteString(strconv.FormatInt(v, 10))
		w.WriteString(" '")
		w.WriteString(charEscape(byte(v), '\''))
		w.WriteString("'")
	case Enum:
		for _, e := range u.Enumerators {
			if e.Value == v {
				w.WriteString(e.Name)
				return
			}
		}
		w.WriteString(strconv.FormatInt(v, 10))
	case Uint:
		w.WriteString(strconv.FormatUint(uint64(v)&sizeMask(u.Size), 10))
	default:
		w.WriteString(strconv.FormatInt(v, 10))
	}
}

func sizeMask(size int64) uint64 {
	if size <= 0 || size >= 8 {
		return ^uint64(0)
	}
	return 1<<(uint(size)*8) - 1
}

func (fm *formatter) array(u *Type, off int64, depth int) {
	w := fm.sb
	n := u.Count
	el := u.Elem.Underlying()
	if n < 0 || el == nil || el.Size <= 0 {
		w.WriteString("{}")
		return
	}
	if el.Kind == Char && el.Size == 1 {
		if all, _ := fm.avail(off, off+n); all && off+n <= int64(len(fm.v.Bytes)) {
			fm.str(fm.v.Bytes[off : off+n])
			return
		}
	}
	w.WriteString("{")
	for k := int64(0); k < n; k++ {
		if k > 0 {
			w.WriteString(", ")
		}
		if k == maxElems {
			w.WriteString("...")
			break
		}
		fm.value(u.Elem, off+k*el.Size, depth+1)
	}
	w.WriteString("}")
}

// str writes a char array as gdb does: one trailing NUL is dropped, other
// NULs and non-printing characters are octal escapes.
func (fm *formatter) str(b []byte) {
	w := fm.sb
	if len(b) > 0 && b[len(b)-1] == 0 {
		b = b[:len(b)-1]
	}
	if len(b) == 0 {
		w.WriteString(`""`)
		return
	}
	more := len(b) > maxElems
	if more {
		b = b[:maxElems]
	}
	w.WriteString(`"`)
	for _, c := range b {
		w.WriteString(charEscape(c, '"'))
	}
	w.WriteString(`"`)
	if more {
		w.WriteString("...")
	}
}

func charEscape(c byte, quote byte) string {
	switch c {
	case '\a':
		return `\a`
	case '\b':
		return `\b`
	case '\f':
		return `\f`
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	case '\v':
		return `\v`
	case 033:
		return `\033`
	case '\\':
		return `\\`
	}
	if c == quote {
		return `\` + string(c)
	}
	if c >= 0x20 && c < 0x7f {
		return string(c)
	}
	return fmt.Sprintf(`\%03o`, c)
}

// formatFloat prints as gdb: %g with 9 significant digits for float and 17
// for double; inf, -inf and nan(0x<mantissa>).
func formatFloat(f float64, size int64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		bits := math.Float64bits(f)
		s := "nan"
		if bits>>63 != 0 {
			s = "-nan"
		}
		return fmt.Sprintf("%s(%#x)", s, bits&(1<<52-1))
	}
	prec := 17
	if size == 4 {
		prec = 9
	} else if size > 8 {
		prec = 18
	}
	return strconv.FormatFloat(f, 'g', prec, 64)
}
