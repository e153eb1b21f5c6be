package recording

import (
	"encoding/binary"
	"hash/crc32"
	"math"
	"sync"
)

// Wire-format constants; docs/format.md is the normative description.
const (
	// HeaderSize is the size of the file header: magic, major, minor, flags.
	HeaderSize = 16
	// MaxPayload is the largest payload a frame may carry. A frame that
	// claims more is damage.
	MaxPayload = 64 << 20
	// maxHead is the largest frame head: a kind byte and a 4-byte uvarint
	// (MaxPayload needs 27 bits).
	maxHead = 1 + 4
	// crcSize is the size of the CRC-32C that ends every frame.
	crcSize = 4
)

// perfMagic starts a perf.data file (PERFILE2 as little-endian uint64, and the
// byte-swapped form written by big-endian machines).
const (
	perfMagic        = "PERFILE2"
	perfMagicSwapped = "2ELIFREP"
)

// castagnoli is made on first use: with SSE 4.2, MakeTable computes the
// hardware path's shift tables (about 0.2 ms), which every culprit command
// would otherwise pay at start, record included, before its command runs.
var castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

// knownKind reports whether k is a record kind of this version.
func knownKind(k Kind) bool { return k >= KindMeta && k <= KindValueIndex }

// String returns the kind's name, e.g. "sample".
func (k Kind) String() string {
	switch k {
	case KindMeta:
		return "meta"
	case KindMmap:
		return "mmap"
	case KindComm:
		return "comm"
	case KindFork:
		return "fork"
	case KindExit:
		return "exit"
	case KindStack:
		return "stack"
	case KindSample:
		return "sample"
	case KindLost:
		return "lost"
	case KindKernelSymbol:
		return "kernel-symbol"
	case KindObject:
		return "object"
	case KindEnd:
		return "end"
	case KindSymbol:
		return "symbol"
	case KindValueSource:
		return "value-source"
	case KindValue:
		return "value"
	case KindProbe:
		return "probe"
	case KindCall:
		return "call"
	case KindProbesOff:
		return "probes-off"
	case KindSyscallWindow:
		return "syscall-window"
	case KindValueIndex:
		return "value-index"
	}
	return "kind(" + itoa(uint64(k)) + ")"
}

func itoa(v uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(b[i:])
		}
	}
}

func zigzag(v int64) uint64   { return uint64(v<<1) ^ uint64(v>>63) }
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// enc builds a payload. Fields are appended in declared order; mark is the end
// of the last non-zero field, so that trailing zero fields can be left out
// (readers read a missing field as zero).
type enc struct {
	b    []byte
	mark int
}

func (e *enc) u(v uint64) {
	e.b = binary.AppendUvarint(e.b, v)
	if v != 0 {
		e.mark = len(e.b)
	}
}

func (e *enc) i(v int64) { e.u(zigzag(v)) }

func (e *enc) bytes(p []byte) {
	e.u(uint64(len(p)))
	e.b = append(e.b, p...)
	if len(p) > 0 {
		e.mark = len(e.b)
	}
}

func (e *enc) str(s string) {
	e.u(uint64(len(s)))
	e.b = append(e.b, s...)
	if len(s) > 0 {
		e.mark = len(e.b)
	}
}

// addrs appends an address list: the count, then each address as the zigzag
// varint of its difference from the previous address of the list (the first
// from 0).
func (e *enc) addrs(a []uint64) {
	e.u(uint64(len(a)))
	var prev uint64
	for _, x := range a {
		e.b = binary.AppendUvarint(e.b, zigzag(int64(x-prev)))
		prev = x
	}
	if len(a) > 0 {
		e.mark = len(e.b)
	}
}

// dec reads a payload. Reading past the end yields zeros (a payload written by
// an older minor version, or with trailing zero fields left out); a malformed
// value sets bad.
type dec struct {
	b   []byte
	i   int // next byte of b
	bad bool
}

func (d *dec) u() uint64 {
	if d.i < len(d.b) {
		if c := d.b[d.i]; c < 0x80 {
			d.i++
			return uint64(c)
		}
	}
	return d.uslow()
}

func (d *dec) uslow() uint64 {
	if d.i >= len(d.b) {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.i:])
	if n <= 0 {
		d.fail()
		return 0
	}
	d.i += n
	return v
}

// uvarints reads len(v) uvarint fields at once, the fast path for records
// made of integers.
func (d *dec) uvarints(v []uint64) {
	b, i := d.b, d.i
	for f := range v {
		var x uint64
		var s uint
		for {
			if i >= len(b) {
				if s != 0 { // cut inside a varint
					d.fail()
					return
				}
				clear(v[f:]) // missing fields are zero
				d.i = i
				return
			}
			c := b[i]
			i++
			if c < 0x80 {
				if s == 63 && c > 1 {
					d.fail()
					return
				}
				x |= uint64(c) << s
				break
			}
			x |= uint64(c&0x7f) << s
			s += 7
			if s > 63 {
				d.fail()
				return
			}
		}
		v[f] = x
	}
	d.i = i
}

func (d *dec) fail() {
	d.bad = true
	d.i = len(d.b)
}

func (d *dec) u32() uint32 {
	v := d.u()
	if v > math.MaxUint32 {
		d.fail()
		return 0
	}
	return uint32(v)
}

func (d *dec) i64() int64 { return unzigzag(d.u()) }

func (d *dec) i32() int32 {
	v := d.i64()
	if v < math.MinInt32 || v > math.MaxInt32 {
		d.fail()
		return 0
	}
	return int32(v)
}

// raw returns the next length-prefixed byte string, aliasing the payload.
func (d *dec) raw() []byte {
	n := d.u()
	if n > uint64(len(d.b)-d.i) {
		d.fail()
		return nil
	}
	p := d.b[d.i : d.i+int(n) : d.i+int(n)]
	d.i += int(n)
	return p
}

func (d *dec) bytes() []byte {
	p := d.raw()
	if len(p) == 0 {
		return nil
	}
	return append([]byte(nil), p...)
}

func (d *dec) str() string {
	p := d.raw()
	if len(p) == 0 {
		return ""
	}
	return string(p)
}

// addrs decodes a list of addresses into dst (nil: a new slice; none
// decoded: dst itself).
func (d *dec) addrs(dst []uint64) []uint64 {
	n := d.u()
	if n == 0 {
		return dst
	}
	b := d.b[d.i:]
	if n > uint64(len(b)) { // every address takes at least one byte
		d.fail()
		return nil
	}
	a := dst
	if uint64(cap(a)) < n {
		a = make([]uint64, n)
	}
	a = a[:n]
	var prev uint64
	j := 0
	for i := range a {
		var z uint64
		if j < len(b) && b[j] < 0x80 {
			z = uint64(b[j])
			j++
		} else {
			v, k := binary.Uvarint(b[j:])
			if k <= 0 {
				d.fail()
				return nil
			}
			z = v
			j += k
		}
		prev += uint64(unzigzag(z))
		a[i] = prev
	}
	d.i += j
	return a
}
