package symbol

import (
	"encoding/binary"
	"errors"
	"unsafe"
)

// kernelTableMagic starts the serialized form of a KernelTable.
const kernelTableMagic = "culprit-ktab-1\n\x00"

const kernelTableHeader = len(kernelTableMagic) + 3*8

// AppendBinary appends the table's serialized form to b and returns it. The
// form is the table's memory, all integers little-endian:
//
//	magic      16 bytes "culprit-ktab-1\n\x00"
//	n          uint64, number of symbols
//	flags      uint64, bit 0: sizes present
//	textLen    uint64
//	addrs      n × uint64, ascending
//	sizes      n × uint64, only with flag bit 0
//	offs       (n+1) × uint32: symbol i is text[offs[i]:offs[i+1]]
//	text       textLen bytes: per symbol "name" or "name\x00module"
//
// KernelTableFromBinary uses such bytes in place, without decoding them.
func (k *KernelTable) AppendBinary(b []byte) []byte {
	b = append(b, kernelTableMagic...)
	var flags uint64
	if k.sizes != nil {
		flags |= 1
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(k.n))
	b = binary.LittleEndian.AppendUint64(b, flags)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(k.text)))
	b = append(b, k.addrs...)
	b = append(b, k.sizes...)
	b = append(b, k.offs...)
	return append(b, k.text...)
}

// ErrKernelTable is returned for bytes that are not a whole serialized table.
var ErrKernelTable = errors.New("not a serialized kernel symbol table, or a damaged one")

// KernelTableFromBinary returns the table serialized in b by AppendBinary.
// It reads only the header: the table and the names it returns refer to b's
// memory (typically a read-only mapping of a cache file), which must stay
// unchanged for as long as either is used. A table whose symbols' text is
// damaged resolves the damaged symbols to nothing; addresses out of order
// give wrong names, so b must come from AppendBinary.
func KernelTableFromBinary(b []byte) (*KernelTable, error) {
	if len(b) < kernelTableHeader || string(b[:len(kernelTableMagic)]) != kernelTableMagic {
		return nil, ErrKernelTable
	}
	h := b[len(kernelTableMagic):]
	n, flags, textLen := binary.LittleEndian.Uint64(h), binary.LittleEndian.Uint64(h[8:]), binary.LittleEndian.Uint64(h[16:])
	rest := uint64(len(b) - kernelTableHeader)
	per := uint64(8 + 4)
	if flags&1 != 0 {
		per += 8
	}
	if flags > 1 || n > rest/per || rest-per*n < 4 || textLen != rest-per*n-4 {
		return nil, ErrKernelTable
	}
	k := &KernelTable{n: int(n)}
	b = b[kernelTableHeader:]
	k.addrs, b = b[:8*n], b[8*n:]
	if flags&1 != 0 {
		k.sizes, b = b[:8*n], b[8*n:]
	}
	k.offs, b = b[:4*(n+1)], b[4*(n+1):]
	if binary.LittleEndian.Uint32(k.offs) != 0 || uint64(binary.LittleEndian.Uint32(k.offs[4*n:])) != textLen {
		return nil, ErrKernelTable
	}
	if len(b) > 0 {
		k.text = unsafe.String(&b[0], len(b))
	}
	return k, nil
}
