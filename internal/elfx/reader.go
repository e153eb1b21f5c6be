package elfx

import "encoding/binary"

// Reader decodes little-endian numbers, LEB128 numbers, strings and blocks
// from B[Off:End]. Reading past End (or past B, whichever comes first)
// sets Bad, moves Off to End and yields zeros, so a caller checks Bad once
// per item rather than at every read.
type Reader struct {
	B   []byte
	Off int
	End int
	Bad bool
}

// NewReader returns a Reader over all of b.
func NewReader(b []byte) Reader { return Reader{B: b, End: len(b)} }

// Done reports whether nothing is left to read.
func (r *Reader) Done() bool { return r.Left() == 0 }

// Left returns the number of bytes left.
func (r *Reader) Left() int {
	end := min(r.End, len(r.B))
	if r.Off < 0 || r.Off >= end {
		return 0
	}
	return end - r.Off
}

func (r *Reader) fail() {
	r.Bad = true
	r.Off = r.End
}

// U8 reads a byte.
func (r *Reader) U8() byte {
	if r.Left() < 1 {
		r.fail()
		return 0
	}
	v := r.B[r.Off]
	r.Off++
	return v
}

// take returns the next n bytes, or nil after an overrun.
func (r *Reader) take(n int) []byte {
	if r.Left() < n {
		r.fail()
		return nil
	}
	if n <= 0 {
		return nil // Off may lie past B after an overrun
	}
	b := r.B[r.Off : r.Off+n]
	r.Off += n
	return b
}

// U16 reads a 2-byte number.
func (r *Reader) U16() uint16 {
	if b := r.take(2); b != nil {
		return binary.LittleEndian.Uint16(b)
	}
	return 0
}

// U32 reads a 4-byte number.
func (r *Reader) U32() uint32 {
	if b := r.take(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

// U64 reads an 8-byte number.
func (r *Reader) U64() uint64 {
	if b := r.take(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

// UN reads an n-byte unsigned number, 0 <= n <= 8.
func (r *Reader) UN(n int) uint64 {
	if n < 0 || n > 8 || r.Left() < n {
		r.fail()
		return 0
	}
	var v uint64
	for i := n - 1; i >= 0; i-- {
		v = v<<8 | uint64(r.B[r.Off+i])
	}
	r.Off += n
	return v
}

// SN reads an n-byte signed number, 0 <= n <= 8, sign-extended.
func (r *Reader) SN(n int) int64 {
	v := r.UN(n)
	if n > 0 && n < 8 {
		shift := uint(64 - 8*n)
		return int64(v<<shift) >> shift
	}
	return int64(v)
}

// Bytes reads n bytes; the result aliases B.
func (r *Reader) Bytes(n uint64) []byte {
	if n > uint64(r.Left()) {
		r.fail()
		return nil
	}
	return r.take(int(n))
}

// ULEB reads an unsigned LEB128 number; bits beyond 64 are dropped.
func (r *Reader) ULEB() uint64 {
	v, _, _ := r.leb()
	return v
}

// SLEB reads a signed LEB128 number; bits beyond 64 are dropped.
func (r *Reader) SLEB() int64 {
	v, shift, last := r.leb()
	if shift < 64 && last&0x40 != 0 {
		v |= ^uint64(0) << shift
	}
	return int64(v)
}

// leb reads the bits of a LEB128 number, how many it holds and its last
// byte; 0 bits after an overrun.
func (r *Reader) leb() (v uint64, shift uint, last byte) {
	for {
		if r.Left() < 1 {
			r.fail()
			return 0, 0, 0
		}
		c := r.B[r.Off]
		r.Off++
		if shift < 64 {
			v |= uint64(c&0x7f) << shift
		}
		shift += 7
		if c&0x80 == 0 {
			return v, shift, c
		}
	}
}

// CStr reads a NUL-terminated string (without its NUL).
func (r *Reader) CStr() string {
	for i, end := r.Off, r.Off+r.Left(); i < end; i++ {
		if r.B[i] == 0 {
			s := string(r.B[r.Off:i])
			r.Off = i + 1
			return s
		}
	}
	r.fail()
	return ""
}

// LEBLen returns the length in bytes of the LEB128 number at the start of
// b, 0 when b ends inside it.
func LEBLen(b []byte) int {
	for i, c := range b {
		if c&0x80 == 0 {
			return i + 1
		}
	}
	return 0
}
