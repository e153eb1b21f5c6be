package introperf

import (
	"bufio"
	"container/heap"
	"encoding/binary"
	"fmt"
	"io"
	"os"
)

// runInstances is how many instances a timeline holds before it sorts
// them and writes them out as a run (8 MiB of instances).
var runInstances = 1 << 17

// timeline keeps the inferred instances of a run for a view that lists
// them all in timeline order (Options.Timeline), in memory bounded as the
// recording grows: an external merge sort. Instances gather in a buffer of
// runInstances; a full buffer is sorted and written to a temporary file as
// a run (delta-encoded varints, about a quarter of the instance's 64 bytes),
// and the runs are merged when the instances are read (Result.EachInstance).
// The file is removed as soon as it is made. Where no file can be made or
// written, the runs stay in memory.
type timeline struct {
	buf  []Instance
	mem  [][]Instance // runs kept in memory, sorted
	runs []fileRun    // runs in the file, in the order written
	f    *os.File
	end  int64 // the file's size
	off  bool  // no file: runs stay in memory
	enc  []byte
}

// fileRun is where a sorted run lies in the timeline's file.
type fileRun struct {
	off, size int64
	n         int
}

func (t *timeline) add(in Instance) {
	if t.buf == nil {
		t.buf = make([]Instance, 0, min(runInstances, 1024))
	}
	t.buf = append(t.buf, in)
	if len(t.buf) >= runInstances {
		t.flush()
	}
}

// flush sorts the buffer and writes it out as a run (or keeps it in memory
// when the file cannot be used).
func (t *timeline) flush() {
	if len(t.buf) == 0 {
		return
	}
	SortInstances(t.buf)
	if !t.off && t.f == nil {
		f, err := os.CreateTemp("", "culprit-instances-*") // 0600
		if err != nil {
			t.off = true
		} else {
			os.Remove(f.Name())
			t.f = f
		}
	}
	if !t.off {
		t.enc = t.enc[:0]
		var prev Instance
		for _, in := range t.buf {
			t.enc = appendInstance(t.enc, &prev, in)
			prev = in
		}
		if _, err := t.f.WriteAt(t.enc, t.end); err == nil {
			t.runs = append(t.runs, fileRun{t.end, int64(len(t.enc)), len(t.buf)})
			t.end += int64(len(t.enc))
			t.buf = t.buf[:0]
			return
		}
		t.off = true // the runs written so far stay in the file
	}
	t.mem = append(t.mem, t.buf)
	t.buf = nil
}

// zig is a signed difference as an unsigned varint (zigzag).
func zig(a, b uint64) uint64 {
	d := int64(a - b)
	return uint64(d<<1) ^ uint64(d>>63)
}

func unzig(base, u uint64) uint64 {
	return base + uint64(int64(u>>1)^-int64(u&1))
}

// appendInstance encodes in after prev: each field as the difference from
// prev's (Seen and End from in's Start), the latencies whole.
func appendInstance(b []byte, prev *Instance, in Instance) []byte {
	b = binary.AppendUvarint(b, zig(uint64(in.PID), uint64(prev.PID)))
	b = binary.AppendUvarint(b, zig(uint64(in.TID), uint64(prev.TID)))
	b = binary.AppendUvarint(b, zig(in.Start, prev.Start))
	b = binary.AppendUvarint(b, zig(uint64(int64(in.Func)), uint64(int64(prev.Func))))
	b = binary.AppendUvarint(b, zig(uint64(int64(in.Node)), uint64(int64(prev.Node))))
	b = binary.AppendUvarint(b, zig(uint64(int64(in.Path)), uint64(int64(prev.Path))))
	b = binary.AppendUvarint(b, zig(uint64(int64(in.Depth)), uint64(int64(prev.Depth))))
	b = binary.AppendUvarint(b, in.Conservative)
	b = binary.AppendUvarint(b, in.Aggressive)
	b = binary.AppendUvarint(b, zig(in.Seen, in.Start))
	return binary.AppendUvarint(b, zig(in.End, in.Start))
}

// readInstance decodes an instance written by appendInstance after prev.
func readInstance(r io.ByteReader, prev Instance) (Instance, error) {
	var v [11]uint64
	for i := range v {
		u, err := binary.ReadUvarint(r)
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return Instance{}, err
		}
		v[i] = u
	}
	in := Instance{
		PID:          uint32(unzig(uint64(prev.PID), v[0])),
		TID:          uint32(unzig(uint64(prev.TID), v[1])),
		Start:        unzig(prev.Start, v[2]),
		Func:         int32(int64(unzig(uint64(int64(prev.Func)), v[3]))),
		Node:         int32(int64(unzig(uint64(int64(prev.Node)), v[4]))),
		Path:         int32(int64(unzig(uint64(int64(prev.Path)), v[5]))),
		Depth:        int32(int64(unzig(uint64(int64(prev.Depth)), v[6]))),
		Conservative: v[7],
		Aggressive:   v[8],
	}
	in.Seen = unzig(in.Start, v[9])
	in.End = unzig(in.Start, v[10])
	return in, nil
}

// cursor reads one sorted run.
type cursor struct {
	cur  Instance
	rank int // the run's place: equal instances come in the order of their runs
	// a run in memory
	mem []Instance
	// a run in the file
	r    *bufio.Reader
	left int
}

func (c *cursor) next() (bool, error) {
	if c.r == nil {
		if len(c.mem) == 0 {
			return false, nil
		}
		c.cur, c.mem = c.mem[0], c.mem[1:]
		return true, nil
	}
	if c.left == 0 {
		return false, nil
	}
	in, err := readInstance(c.r, c.cur)
	if err != nil {
		return false, fmt.Errorf("reading the instances' temporary file: %w", err)
	}
	c.cur = in
	c.left--
	return true, nil
}

type cursors []*cursor

func (h cursors) Len() int { return len(h) }
func (h cursors) Less(i, j int) bool {
	if c := TimelineOrder(h[i].cur, h[j].cur); c != 0 {
		return c < 0
	}
	return h[i].rank < h[j].rank
}
func (h cursors) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *cursors) Push(x any)   { *h = append(*h, x.(*cursor)) }
func (h *cursors) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// each calls fn with every instance in timeline order until fn returns an
// error, which it returns.
func (t *timeline) each(fn func(Instance) error) error {
	if len(t.runs) == 0 && len(t.mem) == 0 {
		// Never more than one buffer: sorted in place.
		SortInstances(t.buf)
		for _, in := range t.buf {
			if err := fn(in); err != nil {
				return err
			}
		}
		return nil
	}
	var h cursors
	for _, r := range t.runs {
		h = append(h, &cursor{rank: len(h), r: bufio.NewReaderSize(io.NewSectionReader(t.f, r.off, r.size), 16<<10), left: r.n})
	}
	for _, m := range t.mem {
		h = append(h, &cursor{rank: len(h), mem: m})
	}
	if len(t.buf) > 0 {
		SortInstances(t.buf)
		h = append(h, &cursor{rank: len(h), mem: t.buf})
	}
	live := h[:0]
	for _, c := range h {
		ok, err := c.next()
		if err != nil {
			return err
		}
		if ok {
			live = append(live, c)
		}
	}
	h = live
	heap.Init(&h)
	for len(h) > 0 {
		c := h[0]
		if err := fn(c.cur); err != nil {
			return err
		}
		ok, err := c.next()
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(&h, 0)
		} else {
			heap.Pop(&h)
		}
	}
	return nil
}

// close removes the timeline's file.
func (t *timeline) close() error {
	if t.f == nil {
		return nil
	}
	err := t.f.Close()
	t.f = nil
	return err
}
