package recording

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"

	"github.com/culprit-dev/culprit/internal/userfile"
)

// DefaultStackTableSize is how many distinct stacks a Writer remembers for
// deduplication before it forgets them all and starts over.
const DefaultStackTableSize = 1 << 18

// Writer writes a recording. It buffers; Flush makes what was written visible
// to readers of the file. A Writer is not safe for concurrent use.
//
// The first error a Writer meets is sticky: every later call returns it.
type Writer struct {
	bw   *bufio.Writer
	f    *os.File // set by Create; closed by Close
	name string   // for error messages
	// created is set by Create when the file did not exist before: only
	// then may Discard remove it.
	created bool
	err     error
	bytes   int64
	nsamp   uint64

	scratch []byte

	// Stack deduplication: hash of (kernel, user) → stack ID.
	stacks    map[uint64]uint64
	stackCap  int
	lastStack uint64 // the last stack ID handed out
}

// Create creates (or truncates) the file at path and writes the header. The
// header reaches the file at once, so a concurrent Open sees a recording.
func Create(path string) (*Writer, error) {
	w, err := CreateLate(path)
	if err != nil {
		return nil, err
	}
	if err := w.Flush(); err != nil {
		w.f.Close()
		return nil, err
	}
	return w, nil
}

// CreateLate opens the file at path for writing, creating it if need be,
// but leaves an existing file as it is until the first Flush (or a write
// that fills the buffer), which truncates it and writes the header. A
// recorder uses it to fail early on a path it cannot write, without paying
// before its command starts for truncating an old recording (0.4–0.8 ms on
// ext4 for a recent one) and without destroying it if the start fails.
func CreateLate(path string) (*Writer, error) {
	_, statErr := os.Lstat(path)
	// A recording holds command lines, sampled memory and addresses: 0600,
	// and under sudo the user's (userfile).
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, userfile.FileMode)
	if err != nil {
		return nil, fmt.Errorf("creating recording: %w", err)
	}
	if os.IsNotExist(statErr) {
		if err := userfile.Own(f); err != nil {
			f.Close()
			os.Remove(path)
			return nil, fmt.Errorf("creating recording: %w", err)
		}
	}
	out := io.Writer(f)
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > 0 {
		out = &truncFirst{f: f} // also through a symbolic link
	}
	w := newWriter(out, path)
	w.f = f
	w.created = os.IsNotExist(statErr)
	return w, nil
}

// truncFirst truncates its file before the first write.
type truncFirst struct {
	f    *os.File
	done bool
}

func (t *truncFirst) Write(p []byte) (int, error) {
	if !t.done {
		t.done = true
		if err := t.f.Truncate(0); err != nil {
			return 0, err
		}
		// The old recording's mode may predate the 0600 rule; a file of
		// another user's that culprit may write but not chmod keeps its own.
		t.f.Chmod(userfile.FileMode)
	}
	return t.f.Write(p)
}

// Discard closes a recording that failed to start and removes its file,
// only if Create or CreateLate made it and it is a regular file: never a device such as
// /dev/null given as output, never a file the user had.
//
// Nothing buffered is written: a file CreateLate opened is left as it was.
func (w *Writer) Discard() {
	created := w.f != nil && w.created
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
	if w.err == nil {
		w.err = errors.New("recording: writer is discarded")
	}
	if !created {
		return
	}
	if st, err := os.Lstat(w.name); err == nil && st.Mode().IsRegular() {
		os.Remove(w.name)
	}
}

// NewWriter writes a recording to out, starting with the header. Close
// flushes but does not close out.
func NewWriter(out io.Writer) (*Writer, error) {
	if out == nil {
		return nil, errors.New("recording: NewWriter: nil io.Writer")
	}
	w := newWriter(out, "recording")
	return w, w.err
}

func newWriter(out io.Writer, name string) *Writer {
	w := &Writer{
		bw:       bufio.NewWriterSize(out, 64<<10),
		name:     name,
		scratch:  make([]byte, 0, 256),
		stackCap: DefaultStackTableSize,
	}
	var h [HeaderSize]byte
	copy(h[:], Magic)
	binary.LittleEndian.PutUint16(h[8:], MajorVersion)
	binary.LittleEndian.PutUint16(h[10:], MinorVersion)
	binary.LittleEndian.PutUint32(h[12:], 0) // flags
	w.write(h[:])
	return w
}

func (w *Writer) write(p []byte) {
	if w.err != nil {
		return
	}
	n, err := w.bw.Write(p)
	w.bytes += int64(n)
	if err != nil {
		w.err = fmt.Errorf("writing %s: %w", w.name, err)
	}
}

// Write appends one record. r is a pointer to one of the record types of
// this package (*Meta, *Mmap, *Comm, *Task, *Stack, *Sample, *Lost,
// *KernelSymbol, *Object, *End). Samples written with Write keep their
// StackID as it is; a Writer that also serves WriteSample owns the stack IDs,
// so do not mix Stack records written by hand with WriteSample.
func (w *Writer) Write(r Record) error {
	if w.err != nil {
		return w.err
	}
	e := w.begin()
	k, err := encodePayload(&e, r)
	if err != nil {
		return err // not sticky: nothing was written
	}
	return w.finish(&e, k)
}

// begin starts a payload in the scratch buffer, after room for the head.
func (w *Writer) begin() enc { return enc{b: w.scratch[:maxHead], mark: maxHead} }

// finish frames the payload in e and writes it.
func (w *Writer) finish(e *enc, k Kind) error {
	n := e.mark - maxHead
	if n > MaxPayload {
		return fmt.Errorf("writing %s record: payload of %d bytes exceeds the limit of %d", k, n, MaxPayload)
	}
	// The head goes right before the payload: kind, then uvarint length.
	var lb [binary.MaxVarintLen64]byte
	ln := binary.PutUvarint(lb[:], uint64(n))
	start := maxHead - 1 - ln
	b := e.b[:e.mark]
	b[start] = byte(k)
	copy(b[start+1:], lb[:ln])
	frame := b[start:]
	frame = binary.LittleEndian.AppendUint32(frame, crc32.Checksum(frame, castagnoli()))
	w.write(frame)
	if cap(e.b) <= 1<<20 {
		w.scratch = e.b[:0] // keep a grown buffer, unless a huge record grew it
	}
	if k == KindSample {
		w.nsamp++
	}
	return w.err
}

// WriteSample writes s with its call stack, deduplicating stacks: the first
// time a (kernel, user) pair is seen it writes a Stack record with a new ID,
// and every sample with that pair refers to the ID. s.StackID is ignored; it
// is 0 (and no Stack is written) when both slices are empty. The Writer
// remembers a bounded number of stacks (DefaultStackTableSize); when the table
// is full it forgets them all, so a stack may be written again later under a
// new ID. IDs increase from 1 and are never reused within a file.
func (w *Writer) WriteSample(s Sample, kernel, user []uint64) error {
	if w.err != nil {
		return w.err
	}
	s.StackID = 0
	if len(kernel) > 0 || len(user) > 0 {
		h := hashStack(kernel, user)
		id, ok := w.stacks[h]
		if !ok {
			if w.stacks == nil {
				w.stacks = make(map[uint64]uint64)
			}
			if len(w.stacks) >= w.stackCap {
				clear(w.stacks)
			}
			w.lastStack++
			id = w.lastStack
			if err := w.Write(&Stack{ID: id, Kernel: kernel, User: user}); err != nil {
				w.lastStack-- // the stack was not written; the ID is still unused
				return err
			}
			w.stacks[h] = id
		}
		s.StackID = id
	}
	e := w.begin()
	encodeSample(&e, &s)
	return w.finish(&e, KindSample)
}

// hashStack hashes a (kernel, user) pair. Collisions would merge two stacks;
// with a 64-bit hash and at most DefaultStackTableSize entries their
// probability is about 2^-29 per full table.
func hashStack(kernel, user []uint64) uint64 {
	h := mix64(uint64(len(kernel))<<32 ^ uint64(len(user)) ^ 0x9e3779b97f4a7c15)
	for _, a := range kernel {
		h = mix64(h ^ a)
	}
	for _, a := range user {
		h = mix64(h ^ a)
	}
	return h
}

// mix64 is the bijective finalizer of MurmurHash3.
func mix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// Flush writes buffered records to the underlying writer, making them visible
// to a concurrent reader of the file. It does not fsync.
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	if err := w.bw.Flush(); err != nil {
		w.err = fmt.Errorf("writing %s: %w", w.name, err)
	}
	return w.err
}

// Close flushes and, for a Writer made by Create, closes the file. It does not
// write an End record; write one before closing a recording that ended well.
func (w *Writer) Close() error {
	err := w.Flush()
	if w.f != nil {
		if cerr := w.f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("closing %s: %w", w.name, cerr)
		}
		w.f = nil
	}
	if w.err == nil {
		w.err = errors.New("recording: writer is closed")
	}
	return err
}

// Samples returns the number of Sample records written.
func (w *Writer) Samples() uint64 { return w.nsamp }

// Bytes returns the number of bytes written so far, header included (some may
// still be buffered).
func (w *Writer) Bytes() int64 { return w.bytes }
