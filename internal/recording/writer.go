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

	vals valueRun
	// Processes a Sample was written of; last is the last of them.
	sampled map[uint32]bool
	lastPID uint32
	anyPID  bool
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
//
// Value records are held back and written in runs, each after a
// ValueIndex that summarizes it (see valueRun): a run ends before any
// record other than a Stack or a Sample of a process a Sample was written
// of before, when it reaches maxRun bytes, and at Flush and Close.
func (w *Writer) Write(r Record) error {
	if w.err != nil {
		return w.err
	}
	switch v := r.(type) {
	case *Value:
		if v != nil {
			return w.holdValue(v)
		}
	case *Stack:
	case *Sample:
		if v != nil {
			w.sample(v.PID)
		}
	default:
		w.writeValues()
	}
	e := w.begin()
	k, err := encodePayload(&e, r)
	if err != nil {
		return err // not sticky: nothing was written
	}
	return w.finish(&e, k)
}

// sample notes that a Sample of process pid is about to be written,
// writing the values held first if it is the process's first: a reader
// gives a process an address space at its first sample, which a value of
// it before may have had to make (and the reader then symbolizes that
// value in it).
func (w *Writer) sample(pid uint32) {
	if w.anyPID && pid == w.lastPID {
		return
	}
	w.lastPID, w.anyPID = pid, true
	if w.sampled[pid] {
		return
	}
	if w.sampled == nil {
		w.sampled = map[uint32]bool{}
	}
	w.sampled[pid] = true
	w.writeValues()
}

// begin starts a payload in the scratch buffer, after room for the head.
func (w *Writer) begin() enc { return enc{b: w.scratch[:maxHead], mark: maxHead} }

// finish frames the payload in e and writes it.
func (w *Writer) finish(e *enc, k Kind) error {
	frame, err := w.frame(e, k)
	if err != nil {
		return err
	}
	w.write(frame)
	if cap(e.b) <= 1<<20 {
		w.scratch = e.b[:0] // keep a grown buffer, unless a huge record grew it
	}
	if k == KindSample {
		w.nsamp++
	}
	return w.err
}

// frame frames the payload in e, in e's buffer.
func (w *Writer) frame(e *enc, k Kind) ([]byte, error) {
	n := e.mark - maxHead
	if n > MaxPayload {
		return nil, fmt.Errorf("writing %s record: payload of %d bytes exceeds the limit of %d", k, n, MaxPayload)
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
	return frame, nil
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
	w.sample(s.PID)
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
	w.writeValues()
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
func (w *Writer) Bytes() int64 { return w.bytes + int64(len(w.vals.frames)) }

// Runs of values (format 1.12).
//
// A Writer holds Value records back and writes them as a run, right after
// a ValueIndex that says what a reader's first pass over the values needs:
// their counts by source, their times' range and lateness, and each PC
// they were read at once. A reader that needs no more (Reader.SkipValues)
// steps over the run unread. Holding values back moves them after the
// Samples and Stacks written meanwhile, never across another record: a
// reader meets each value with the same address spaces, the same sources
// and the same values before it. A run with fewer than minIndexed values
// is written without an index, as is every value of a Writer killed
// before it wrote its run (nothing of that run reaches the file, as
// nothing of its buffer would).

// maxRun is the size at which a run of values is written, and minIndexed
// the fewest values a run has to have to be indexed.
const (
	maxRun     = 1 << 20
	minIndexed = 16
)

// valueRun is the run of values a Writer holds: their frames and their
// index so far.
type valueRun struct {
	frames []byte
	index  ValueIndex
	// slot[id] is 1 + the index in index.Sources of source ID id, for IDs
	// below len(slot); slots of other IDs are in slotMap.
	slot    []int32
	slotMap map[uint32]int32
	seen    map[[2]uint64]bool // PCs noted: PID<<1 | caller, PC
	last    [2]uint64          // the PC noted last
}

// holdValue adds v to the run of values held.
func (w *Writer) holdValue(v *Value) error {
	e := w.begin()
	k, err := encodePayload(&e, v)
	if err != nil {
		return err
	}
	frame, err := w.frame(&e, k)
	if err != nil {
		return err
	}
	r := &w.vals
	r.frames = append(r.frames, frame...)
	x := &r.index
	switch {
	case x.Count == 0:
		x.MinTime, x.MaxTime = v.Time, v.Time
	case v.Time < x.MaxTime:
		x.Late = max(x.Late, x.MaxTime-v.Time)
		x.MinTime = min(x.MinTime, v.Time)
	default:
		x.MaxTime = v.Time
	}
	x.Count++
	x.Size += uint64(len(frame))
	c := r.source(v.Source)
	c.All++
	if v.Type != ValueMissing {
		c.Present++
	}
	if v.PC != 0 {
		k := [2]uint64{uint64(v.PID) << 1, v.PC}
		if v.Depth > 0 {
			k[0] |= 1
		}
		if k != r.last || len(x.PCs) == 0 {
			r.last = k
			if !r.seen[k] {
				if r.seen == nil {
					r.seen = map[[2]uint64]bool{}
				}
				r.seen[k] = true
				x.PCs = append(x.PCs, IndexedPC{PID: v.PID, Caller: v.Depth > 0, PC: v.PC, First: x.Count - 1})
			}
		}
	}
	if len(r.frames) >= maxRun {
		w.writeValues()
	}
	return w.err
}

// source returns the count of source ID id's values in the run, adding
// it.
func (r *valueRun) source(id uint32) *IndexedSource {
	x := &r.index
	var i int32
	if id < 1<<16 {
		for uint32(len(r.slot)) <= id {
			r.slot = append(r.slot, 0)
		}
		i = r.slot[id]
	} else {
		i = r.slotMap[id]
	}
	if i == 0 {
		x.Sources = append(x.Sources, IndexedSource{ID: id})
		i = int32(len(x.Sources))
		if id < 1<<16 {
			r.slot[id] = i
		} else {
			if r.slotMap == nil {
				r.slotMap = map[uint32]int32{}
			}
			r.slotMap[id] = i
		}
	}
	return &x.Sources[i-1]
}

// writeValues writes the run of values held, after its index.
func (w *Writer) writeValues() {
	r := &w.vals
	x := &r.index
	if x.Count == 0 {
		return
	}
	if x.Count >= minIndexed {
		e := w.begin()
		encodeValueIndex(&e, x)
		if frame, err := w.frame(&e, KindValueIndex); err == nil {
			w.write(frame)
		} // else too large to index (not reached with maxRun): the values stand alone
	}
	w.write(r.frames)
	for _, s := range x.Sources {
		if s.ID < 1<<16 {
			r.slot[s.ID] = 0
		}
	}
	clear(r.slotMap)
	clear(r.seen)
	r.frames = r.frames[:0]
	*x = ValueIndex{Sources: x.Sources[:0], PCs: x.PCs[:0]}
}
