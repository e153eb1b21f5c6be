package recording

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
)

// Offset is the file offset of the frame Next examines next: after Next
// has returned a record, where that record ends (after a run of values it
// stepped over, where the run ends). A reader that notes it before and
// after Next knows the bytes a record came from, to read them again
// (EachValueAt).
func (r *Reader) Offset() int64 { return r.pos }

// EachValueAt calls yield with each Value record in the size bytes of ra at
// offset off, in file order, until it returns false: the bytes of a run of
// values (the Size bytes after its ValueIndex) or of values read one by one
// (the bytes Next read them from, Offset before and after). Records of
// other kinds among them are stepped over, and damaged bytes are skipped
// as Next skips them. The *Value is yield's only until it returns. buf is
// where the bytes are read (grown as needed) and is returned, for the next
// call; it reports whether yield asked to stop. A file that no longer
// holds the bytes (cut since) is an error.
//
// Unlike a Reader, it reads the bytes at once (up to maxInPlace; more, a
// chunk at a time through a Reader) and decodes the frames in place, one
// after the other, without a copy or an allocation per record: reading a
// run this way costs its CRCs and its varints, little more.
func EachValueAt(ra io.ReaderAt, off, size int64, buf []byte, yield func(*Value) bool) ([]byte, bool, error) {
	if size < 0 || size > 1<<40 {
		return buf, false, fmt.Errorf("reading values at %d: impossible size %d", off, size)
	}
	if size > maxInPlace {
		// Not a Writer's run (a damaged or made-up index): read as a
		// Reader reads, a chunk at a time.
		return buf, salvageValues(io.NewSectionReader(ra, off, size), yield), nil
	}
	if int64(cap(buf)) < size {
		buf = make([]byte, size)
	}
	buf = buf[:size]
	if n, err := ra.ReadAt(buf, off); int64(n) < size {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return buf, false, fmt.Errorf("reading values at %d (%d bytes): %w", off, size, err)
	}
	var v Value
	tab := castagnoli()
	b := buf
	for len(b) > 0 {
		k := Kind(b[0])
		n, ln := frameLength(b)
		if k == 0 || ln <= 0 || ln > maxHead-1 || n > MaxPayload || uint64(len(b)) < 1+uint64(ln)+n+crcSize {
			return buf, salvageValues(bytes.NewReader(b), yield), nil
		}
		end := 1 + ln + int(n)
		if crc32.Checksum(b[:end], tab) != binary.LittleEndian.Uint32(b[end:]) {
			return buf, salvageValues(bytes.NewReader(b), yield), nil
		}
		if k == KindValue {
			// A payload that does not decode is damage, skipped as Next
			// skips it.
			if _, ok := decodePayload(k, b[1+ln:end], nil, nil, &v, nil); ok && !yield(&v) {
				return buf, true, nil
			}
		}
		b = b[end+crcSize:]
	}
	return buf, false, nil
}

// maxInPlace is the most bytes EachValueAt reads at once: a Writer's runs
// of values are at most about maxRun.
const maxInPlace = 16 << 20

// salvageValues reads the Value records of src (one that starts with a
// frame that is not whole or not valid, say) as Next reads a damaged
// file: it reports whether yield asked to stop.
func salvageValues(src io.Reader, yield func(*Value) bool) bool {
	r := &Reader{src: src, name: "values", buf: make([]byte, 0, readChunk), reuse: true}
	for {
		rec, err := r.Next()
		if err != nil {
			return false // io.EOF: a bytes.Reader has no other error
		}
		if v, ok := rec.(*Value); ok && !yield(v) {
			return true
		}
	}
}
