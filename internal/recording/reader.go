package recording

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
)

// ErrNotRecording is wrapped by the error Open and NewReader return for data
// that is not a culprit recording.
var ErrNotRecording = errors.New("not a culprit recording")

// VersionError is returned (wrapped) by Open and NewReader for a recording
// whose major format version is newer than this package understands.
type VersionError struct {
	Major, Minor int
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("recording format %d.%d is newer than this culprit understands (%d.x): upgrade culprit",
		e.Major, e.Minor, MajorVersion)
}

const readChunk = 64 << 10

// Reader reads a recording record by record, salvaging what it can from a
// damaged or truncated file. It is not safe for concurrent use.
//
// After the header has been read, Next reports damage only through Salvage:
// a damaged region is skipped, and a file that ends in the middle of a record
// ends the stream at the last complete record. Once Next has returned io.EOF
// it may be called again: if the file has grown meanwhile (its recorder is
// still writing) the new records follow.
type Reader struct {
	src   io.Reader
	c     io.Closer // the file opened by Open
	name  string
	major int
	minor int

	// buf[0] is at file offset off; buf holds the file from off on as far
	// as it has been read. Bytes before pos are consumed.
	buf  []byte
	off  int64
	pos  int64 // offset of the next frame (or, while resyncing, of the next candidate)
	eof  bool  // the source reported EOF during this call of Next
	rerr error // a read error other than EOF
	zero int   // consecutive empty reads without error

	resync bool  // in a damaged region that started at dstart
	dstart int64 //

	records int64
	unknown int64
	skipped int64 // damaged bytes in closed regions
	regions int   // closed damaged regions
	tail    bool  // the data read so far ends inside a record
	sawEnd  bool

	slab  []Sample // where decoded samples are allocated from
	reuse bool     // Reuse: every Sample and every Stack is decoded into one
	one   [1]Sample
	stack Stack // the Stack decoded into when reuse is set
	value Value // the Value decoded into when reuse is set
	// reuseCalls: every Call is decoded into call (ReuseCalls).
	reuseCalls bool
	call       Call
	pendTail   int64 // offset of the incomplete tail when tail is set

	// SkipValues: which runs to skip, and the source as it reads at an
	// offset and seeks.
	skip func(*ValueIndex) bool
	ra   io.ReaderAt
	sk   io.Seeker
}

// Open opens the recording at path and reads its header.
func Open(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening recording: %w", err)
	}
	r, err := newReader(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.c = f
	return r, nil
}

// OpenAt reads f from its start, whatever its offset, without moving it
// (reads go through ReadAt), so that a file may be read again while it
// stays open; Close does not close f.
func OpenAt(f *os.File) (*Reader, error) {
	return newReader(io.NewSectionReader(f, 0, math.MaxInt64), f.Name())
}

// NewReader reads a recording from src, starting with its header.
func NewReader(src io.Reader) (*Reader, error) {
	if src == nil {
		return nil, errors.New("recording: NewReader: nil io.Reader")
	}
	return newReader(src, "recording")
}

func newReader(src io.Reader, name string) (*Reader, error) {
	r := &Reader{src: src, name: name, buf: make([]byte, 0, readChunk)}
	r.need(0, HeaderSize)
	if r.rerr != nil {
		return nil, fmt.Errorf("reading %s: %w", name, r.rerr)
	}
	h := r.buf
	if len(h) > HeaderSize {
		h = h[:HeaderSize]
	}
	if err := checkHeader(h); err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	r.major = int(binary.LittleEndian.Uint16(h[8:]))
	r.minor = int(binary.LittleEndian.Uint16(h[10:]))
	// h[12:16] are flags, reserved and ignored by version 1.
	r.pos = HeaderSize
	return r, nil
}

func checkHeader(h []byte) error {
	switch {
	case len(h) == 0:
		return errors.New("empty file: no recording was written to it")
	case bytes.HasPrefix(h, []byte(perfMagic)), bytes.HasPrefix(h, []byte(perfMagicSwapped)):
		return fmt.Errorf("%w: it is a perf.data file (written by perf record)", ErrNotRecording)
	case len(h) < len(Magic) && bytes.HasPrefix([]byte(Magic), h),
		len(h) < HeaderSize && bytes.HasPrefix(h, []byte(Magic)):
		return fmt.Errorf("truncated header: the file has only %d bytes (the recorder may have just started)", len(h))
	case !bytes.HasPrefix(h, []byte(Magic)):
		return fmt.Errorf("%w (it does not start with the culprit magic)", ErrNotRecording)
	}
	major := int(binary.LittleEndian.Uint16(h[8:]))
	minor := int(binary.LittleEndian.Uint16(h[10:]))
	if major > MajorVersion {
		return &VersionError{Major: major, Minor: minor}
	}
	if major < 1 {
		return fmt.Errorf("recording format %d.%d is not supported", major, minor)
	}
	return nil
}

// Version returns the format version in the file's header.
func (r *Reader) Version() (major, minor int) { return r.major, r.minor }

// Close closes the file opened by Open. For a Reader made by NewReader it
// does nothing.
func (r *Reader) Close() error {
	if r.c == nil {
		return nil
	}
	err := r.c.Close()
	r.c = nil
	if err != nil {
		return fmt.Errorf("closing %s: %w", r.name, err)
	}
	return nil
}

// fill reads more of the source into buf, keeping the bytes from pos on. It
// returns false when nothing more can be read now. The buffer grows
// geometrically as data arrives, never ahead of it, so a damaged length does
// not make it allocate what the file does not hold.
func (r *Reader) fill() bool {
	if r.eof {
		return false
	}
	// Drop consumed bytes when that makes room.
	if drop := int(r.pos - r.off); drop > 0 && (len(r.buf)+readChunk > cap(r.buf) || drop >= len(r.buf)/2) {
		n := copy(r.buf, r.buf[drop:])
		r.buf = r.buf[:n]
		r.off = r.pos
	}
	if len(r.buf)+readChunk/2 > cap(r.buf) {
		nb := make([]byte, len(r.buf), max(len(r.buf)+readChunk, 2*cap(r.buf)))
		copy(nb, r.buf)
		r.buf = nb
	}
	n, err := r.src.Read(r.buf[len(r.buf):cap(r.buf)])
	if n < 0 || n > cap(r.buf)-len(r.buf) {
		n = 0
		err = errors.New("invalid read count from source")
	}
	r.buf = r.buf[:len(r.buf)+n]
	switch {
	case err == io.EOF:
		r.eof = true
	case err != nil:
		r.eof = true
		r.rerr = err
	case n == 0:
		r.zero++
		if r.zero >= 100 {
			r.eof = true
			r.zero = 0
		}
	default:
		r.zero = 0
	}
	return n > 0
}

// need makes buf hold the n bytes at offset at, reading as needed. It reports
// whether they are there.
func (r *Reader) need(at int64, n int) bool {
	for {
		have := int64(len(r.buf)) - (at - r.off)
		if have >= int64(n) {
			return true
		}
		if !r.fill() && r.eof {
			return false
		}
	}
}

type frameStatus int

const (
	frameOK         frameStatus = iota
	frameBad                    // not a frame: bad kind, impossible length or CRC mismatch
	frameIncomplete             // the data ends before the frame does
)

// frame examines the frame at offset at. In strict mode (resynchronizing) a
// kind this version does not know is not accepted. On frameOK it returns the
// kind, the payload (aliasing buf) and the frame's total size.
func (r *Reader) frame(at int64, strict bool) (st frameStatus, k Kind, payload []byte, size int) {
	i := int(at - r.off)
	if len(r.buf)-i < maxHead {
		r.need(at, maxHead) // at the end of the data, fewer may do
		i = int(at - r.off)
		if len(r.buf)-i < 1 {
			return frameIncomplete, 0, nil, 0
		}
	}
	b := r.buf[i:]
	k = Kind(b[0])
	if k == 0 || strict && !knownKind(k) {
		return frameBad, 0, nil, 0
	}
	n, ln := frameLength(b)
	if ln == 0 { // the length is cut off
		if len(b) >= maxHead {
			return frameBad, 0, nil, 0
		}
		return frameIncomplete, 0, nil, 0
	}
	if ln < 0 || ln > maxHead-1 {
		return frameBad, 0, nil, 0
	}
	if n > MaxPayload {
		return frameBad, 0, nil, 0
	}
	size = 1 + ln + int(n) + crcSize
	if len(b) < size {
		if !r.need(at, size) {
			return frameIncomplete, 0, nil, 0
		}
		i = int(at - r.off)
		b = r.buf[i:]
	}
	body := b[:size-crcSize]
	if crc32.Checksum(body, castagnoli()) != binary.LittleEndian.Uint32(b[size-crcSize:]) {
		return frameBad, 0, nil, 0
	}
	return frameOK, k, body[1+ln:], size
}

// scan looks for the next valid frame at or after offset from, by trying
// every byte offset. found reports whether one was found at q. If not, q is
// the first offset whose candidate frame could not be checked because the
// data ends first, or the end of the data. While scanning, pos follows the
// scan so that the buffer stays bounded, unless keep is set.
func (r *Reader) scan(from int64, keep bool) (q int64, found bool) {
	first := int64(-1)
	for q = from; ; q++ {
		if q >= r.off+int64(len(r.buf)) && !r.need(q, 1) {
			break
		}
		st, _, _, _ := r.frame(q, true)
		switch st {
		case frameOK:
			return q, true
		case frameIncomplete:
			if first < 0 {
				first = q
			}
		}
		if !keep && first < 0 {
			r.pos = q + 1
		}
	}
	if first >= 0 {
		return first, false
	}
	return q, false
}

// Reuse makes Next decode every Sample into the same record, every Value
// into the same record, and every Stack into the same record and address
// slices, so that reading a recording does not allocate per sample, value
// or stack: the *Sample, *Value or *Stack Next returns is then valid only
// until the following call. Other records are still freshly allocated.
func (r *Reader) Reuse() { r.reuse = true }

// ReuseCalls makes Next decode every Call into the same record (its Args
// and Strs still its own), so that a pass over a trace's calls does not
// allocate per call: the *Call Next returns is then valid only until the
// following call. Apart from Reuse: a reader that hands records to
// another goroutine (the loader's) keeps its calls.
func (r *Reader) ReuseCalls() { r.reuseCalls = true }

// SkipValues makes Next step over a run of Value records that a
// ValueIndex precedes (a Writer indexes runs of values) when accept, given
// the index, returns true and the whole run is in the file: Next returns
// the *ValueIndex in place of the run, whose values count as records read
// (Salvage), unread: neither their bytes nor their CRCs are read. accept
// is called on Next's goroutine; the index is the caller's to keep. A run
// that is not skipped, or that no index precedes (a file written before
// format 1.12, or cut before its run was indexed), is read value by value
// as always. SkipValues reports false, and does nothing, when the source
// cannot both seek and read at an offset (a pipe): Open's and OpenAt's
// files can.
//
// Without SkipValues, Next reads every Value and never returns a
// ValueIndex.
func (r *Reader) SkipValues(accept func(*ValueIndex) bool) bool {
	ra, ok1 := r.src.(io.ReaderAt)
	sk, ok2 := r.src.(io.Seeker)
	if !ok1 || !ok2 || accept == nil {
		return false
	}
	r.skip, r.ra, r.sk = accept, ra, sk
	return true
}

// skipRun is Next's answer to the ValueIndex in payload, whose frame of
// size bytes is at pos: the index, with pos after its run, when the run is
// to be skipped; nil, with pos after the index, otherwise.
func (r *Reader) skipRun(payload []byte, size int) *ValueIndex {
	at := r.pos
	r.pos += int64(size)
	if r.skip == nil {
		return nil
	}
	d := dec{b: payload}
	x, ok := decodeValueIndex(&d)
	if !ok || x.Size > math.MaxInt64/2 {
		return nil
	}
	end := r.pos + int64(x.Size)
	if end <= at || !r.holds(end) || !r.skip(x) {
		return nil
	}
	if end <= r.off+int64(len(r.buf)) {
		r.pos = end
	} else {
		if _, err := r.sk.Seek(end, io.SeekStart); err != nil {
			// The source is where it was: read the run.
			r.sk.Seek(r.off+int64(len(r.buf)), io.SeekStart)
			return nil
		}
		r.buf, r.off, r.pos = r.buf[:0], end, end
	}
	r.records += int64(x.Count)
	return x
}

// holds reports whether the file holds the bytes before offset end.
func (r *Reader) holds(end int64) bool {
	if end <= r.off+int64(len(r.buf)) {
		return true
	}
	var b [1]byte
	n, _ := r.ra.ReadAt(b[:], end-1)
	return n == 1
}

// Next returns the next record, or io.EOF at the end of the data. Records
// are freshly allocated and may be kept (but see Reuse). Stack records are returned as
// *Stack; resolving a Sample's StackID is up to the caller. Records of kinds
// this version does not know are skipped. The only errors besides io.EOF are
// read errors of the underlying file.
func (r *Reader) Next() (Record, error) {
	r.eof = false
	for {
		if r.resync {
			q, found := r.scan(r.pos, false)
			r.pos = q
			if !found {
				r.tail = q < r.off+int64(len(r.buf))
				r.pendTail = q
				return nil, r.endErr()
			}
			r.skipped += q - r.dstart
			r.regions++
			r.resync = false
		}
		st, k, payload, size := r.frame(r.pos, false)
		switch st {
		case frameOK:
			r.tail = false
			if k == KindValueIndex {
				if x := r.skipRun(payload, size); x != nil {
					return x, nil
				}
				continue
			}
			if !knownKind(k) {
				r.unknown++
				r.pos += int64(size)
				continue
			}
			var stack *Stack
			var value *Value
			var call *Call
			if r.reuse {
				r.slab = r.one[:]
				stack, value = &r.stack, &r.value
			}
			if r.reuseCalls {
				call = &r.call
			}
			rec, ok := decodePayload(k, payload, &r.slab, stack, value, call)
			if !ok {
				// A well-framed record whose payload does not decode:
				// skip the frame as damage.
				r.skipped += int64(size)
				r.regions++
				r.pos += int64(size)
				continue
			}
			r.pos += int64(size)
			r.records++
			if k == KindEnd {
				r.sawEnd = true
			}
			return rec, nil
		case frameBad:
			r.resync = true
			r.dstart = r.pos
			r.pos++
		case frameIncomplete:
			// Either the file ends mid-record (cut short, or still being
			// written) or the frame's length is damaged. Damage shows as a
			// valid frame further on.
			q, found := r.scan(r.pos+1, true)
			if !found {
				r.tail = r.pos < r.off+int64(len(r.buf))
				r.pendTail = r.pos
				return nil, r.endErr()
			}
			r.resync = true
			r.dstart = r.pos
			r.pos = q
		}
	}
}

func (r *Reader) endErr() error {
	if r.rerr != nil {
		err := r.rerr
		r.rerr = nil
		return fmt.Errorf("reading %s: %w", r.name, err)
	}
	return io.EOF
}

// TailEnd returns the End record that ends the recording in ra, of size
// bytes, when its last bytes are one: a clean recording's totals (the
// samples recorded, say) known before reading it, so that a reader can size
// what it holds. A file that does not end with a whole End record (cut
// short, still being written, damaged) gives false; the End's CRC tells a
// record from bytes that look like one. What it says is a hint: nothing
// checks it against the records before it.
func TailEnd(ra io.ReaderAt, size int64) (*End, bool) {
	// An End's payload is at most 5 uvarints of 10 bytes and a varint of 5.
	const most = 1 + 1 + 55 + crcSize
	n := min(size-HeaderSize, most)
	if n < 1+1+crcSize {
		return nil, false
	}
	b := make([]byte, n)
	if _, err := ra.ReadAt(b, size-n); err != nil {
		return nil, false
	}
	for i := range b {
		if Kind(b[i]) != KindEnd {
			continue
		}
		l, ln := binary.Uvarint(b[i+1:])
		rest := len(b) - i - 1 - ln - crcSize // the payload's length if the frame ends the file
		if ln <= 0 || rest < 0 || uint64(rest) != l {
			continue
		}
		body := b[i : len(b)-crcSize]
		if crc32.Checksum(body, castagnoli()) != binary.LittleEndian.Uint32(b[len(b)-crcSize:]) {
			continue
		}
		if r, ok := decodePayload(KindEnd, body[1+ln:], nil, nil, nil, nil); ok {
			return r.(*End), true
		}
	}
	return nil, false
}

// frameLength reads the payload length after a frame's kind byte, b[0]:
// the length and how many bytes it took, 0 when b ends inside it and
// negative when it overflows (binary.Uvarint's answers). One byte is the
// common case, read without the varint loop.
func frameLength(b []byte) (uint64, int) {
	if len(b) > 1 && b[1] < 0x80 {
		return uint64(b[1]), 1
	}
	return binary.Uvarint(b[1:])
}
