package loader

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
)

// Reading samples as a stream (Options.Stream).
//
// The first reading is Load's, except that a sample is not kept: it only
// counts, gives its stack key the earliest (time, file, sample number) it
// is seen at (the stack keys are then symbolized in that order, which is
// the order in which Load meets them in its sorted samples, so that
// Profile.Stacks are the same), and measures how late the file's samples
// come: how far a sample's time lies before the latest time read before
// it. Recordings are written nearly in time order (each drain of the
// rings is sorted), so that lateness is a few milliseconds.
//
// The second reading (Profile.EachSample) reads each file again, from the
// same open file, up to the record the first reading ended at (a file
// still being written may have grown), replaying the first reading's
// address-space versions at the records they were made at, so that each
// sample finds its stack key. A sample waits (window) until a sample
// later than its time plus the file's lateness has been read: no sample
// still to come can be earlier. Files are then merged by time, the earlier
// file first at equal times, which is the order of Load's stable sort of
// the samples of every file read one after the other. Memory follows the
// samples within the lateness window, not the recording.

// streamState is what the first reading keeps for the second.
type streamState struct {
	// keys are the stack keys (loader.keys is not used), found through
	// the files' heads and next, or keyIdx for ids that are not dense.
	keys    []stackKey
	keyIdx  map[stackKey]int32
	files   []*streamFile
	firsts  []firstSample // by stack key
	count   int
	events  map[recording.Event]int // samples by event kind
	minTime uint64
	final   []int32 // by stack key: its index in Profile.Stacks
	// next[k] is 1 + the next stack key of the chain k is on: the keys of
	// a file's stack id (streamFile.heads), whatever their space version.
	next []int32
}

// streamFile is a file as the first reading left it.
type streamFile struct {
	f       *os.File
	records uint64     // records read
	samples uint64     // samples read
	late    uint64     // the largest lateness of a sample, ns
	maxTime uint64     // the latest sample time read so far
	spaces  []spaceSet // address-space versions, in the order made
	// heads[id] is 1 + the first stack key of stack id, for the small
	// dense ids writers give; keys of other ids are in loader.keyIdx.
	heads []int32
}

// key returns the stack key of stack id in space sp (file is f's index),
// adding it when add is set; -1 when it is not known. Found, as the
// samples' merged entries are (loader.find), through a slice indexed by
// the stack id rather than by hashing the key.
func (st *streamState) key(file int, f *streamFile, sp *space, id uint64, dense, add bool) int32 {
	if id < uint64(len(f.heads)) {
		for k := f.heads[id]; k != 0; k = st.next[k-1] {
			if st.keys[k-1].space == sp {
				return k - 1
			}
		}
	}
	sk := stackKey{file: file, space: sp, stack: id}
	if len(st.keyIdx) > 0 {
		if i, ok := st.keyIdx[sk]; ok {
			return i
		}
	}
	if !add {
		return -1
	}
	k := int32(len(st.keys))
	st.keys = append(st.keys, sk)
	if !dense {
		st.keyIdx[sk] = k
		st.next = append(st.next, 0)
		return k
	}
	if id >= uint64(len(f.heads)) {
		f.heads = append(f.heads, make([]int32, int(id)+1-len(f.heads)+1024)...)
	}
	st.next = append(st.next, f.heads[id])
	f.heads[id] = k + 1
	return k
}

// spaceSet is an address-space version made when record rec was added.
type spaceSet struct {
	rec uint64
	pid uint32
	sp  *space
}

// firstSample is where a stack key is first met in time order.
type firstSample struct {
	time      uint64
	file, pid uint32
	seq       uint64 // the sample's number in its file
}

// regularFiles reports whether every path is a regular file, which can be
// read twice: a pipe (culprit export ... /dev/stdin) is read once, its
// samples held.
func regularFiles(paths []string) bool {
	for _, p := range paths {
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
			return false
		}
	}
	return true
}

// open opens a recording, keeping the file open when streaming.
func (l *loader) open(path string) (*recording.Reader, error) {
	if l.stream == nil {
		return recording.Open(path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening recording: %w", err)
	}
	r, err := recording.OpenAt(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	l.stream.files = append(l.stream.files, &streamFile{f: f})
	return r, nil
}

// streamSample notes sample s (its Stack a stack key) in the first reading.
func (l *loader) streamSample(s *profile.Sample) {
	st := l.stream
	file := len(st.files) - 1
	f := st.files[file]
	k := int(s.Stack)
	for len(st.firsts) <= k {
		st.firsts = append(st.firsts, firstSample{time: ^uint64(0)})
	}
	if fs := &st.firsts[k]; s.Time < fs.time {
		*fs = firstSample{time: s.Time, file: uint32(file), pid: s.PID, seq: f.samples}
	}
	if f.samples > 0 && s.Time < f.maxTime {
		f.late = max(f.late, f.maxTime-s.Time)
	}
	f.maxTime = max(f.maxTime, s.Time)
	f.samples++
	if st.count == 0 || s.Time < st.minTime {
		st.minTime = s.Time
	}
	st.count++
	st.events[s.Event]++
}

// endStream symbolizes the stack keys in the order of their first sample
// in time, as resolveStacks would, and gives the profile its samples as a
// stream.
func (l *loader) endStream() {
	st := l.stream
	l.keys = st.keys
	order := make([]int32, len(l.keys))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		x, y := &st.firsts[a], &st.firsts[b]
		if c := cmp.Compare(x.time, y.time); c != 0 {
			return c
		}
		if c := cmp.Compare(x.file, y.file); c != 0 {
			return c
		}
		return cmp.Compare(x.seq, y.seq)
	})
	l.merged, l.heads = mergeTable{}, nil
	st.final = make([]int32, len(l.keys))
	l.p.Stacks = slices.Grow(l.p.Stacks, len(l.keys))
	for _, k := range order {
		st.final[k] = l.stack(l.keys[k], st.firsts[k].pid)
	}
	st.firsts = nil
	l.stacks, l.addrBlocks = nil, nil
	l.keys = nil
	// The stream holds st, not the loader and the objects it symbolized
	// with.
	l.p.SetStream(st.events, st.each)
}

// each reads the samples again, in time order, and yields each with its
// stack resolved; it stops early when yield returns false.
func (st *streamState) each(yield func(*profile.Sample) bool) error {
	cs := make([]*cursor, 0, len(st.files))
	for i, f := range st.files {
		c, err := newCursor(st, i, f)
		if err != nil {
			return err
		}
		cs = append(cs, c)
	}
	heads := make([]profile.Sample, len(cs))
	live := make([]bool, len(cs))
	for i, c := range cs {
		ok, err := c.next(&heads[i])
		if err != nil {
			return err
		}
		live[i] = ok
	}
	for {
		best := -1
		for i := range cs {
			if live[i] && (best < 0 || heads[i].Time < heads[best].Time) {
				best = i
			}
		}
		if best < 0 {
			return nil
		}
		s := heads[best]
		if !yield(&s) {
			return nil
		}
		ok, err := cs[best].next(&heads[best])
		if err != nil {
			return err
		}
		live[best] = ok
	}
}

// cursor reads one file's samples again, in time order.
type cursor struct {
	st      *streamState
	file    int
	f       *streamFile
	r       *recording.Reader
	spaces  map[uint32]*space
	log     int    // the next entry of f.spaces to replay
	n       uint64 // records read
	seq     uint64 // samples read
	maxTime uint64
	done    bool
	wait    window
}

func newCursor(st *streamState, file int, f *streamFile) (*cursor, error) {
	r, err := recording.OpenAt(f.f)
	if err != nil {
		return nil, fmt.Errorf("reading %s again: %w", f.f.Name(), err)
	}
	r.Reuse()
	return &cursor{st: st, file: file, f: f, r: r, spaces: map[uint32]*space{}}, nil
}

// next sets *s to the file's next sample in time order; false when there is
// none left.
func (c *cursor) next(s *profile.Sample) (bool, error) {
	for {
		if t, ok := c.wait.first(); ok && (c.done || t+c.f.late < c.maxTime) {
			*s = c.wait.pop()
			return true, nil
		}
		if c.done {
			return false, nil
		}
		if c.n == c.f.records {
			c.done = true
			continue
		}
		rec, err := c.r.Next()
		if err == io.EOF {
			return false, fmt.Errorf("reading %s again: it was cut since it was first read (%d of its %d records left): read it again", c.f.f.Name(), c.n, c.f.records)
		}
		if err != nil {
			return false, fmt.Errorf("reading %s again: %w", c.f.f.Name(), err)
		}
		c.n++
		for c.log < len(c.f.spaces) && c.f.spaces[c.log].rec <= c.n {
			e := c.f.spaces[c.log]
			c.spaces[e.pid] = e.sp
			c.log++
		}
		v, ok := rec.(*recording.Sample)
		if !ok {
			continue
		}
		stack := int32(-1)
		if k := c.st.key(c.file, c.f, c.spaces[v.PID], v.StackID, false, false); k >= 0 {
			stack = c.st.final[k]
		}
		c.wait.push(heapSample{seq: c.seq, s: profile.Sample{Time: v.Time, PID: v.PID, TID: v.TID, CPU: v.CPU,
			Period: v.Period, Stack: stack, Event: v.Event, Arg: v.Arg}})
		c.seq++
		c.maxTime = max(c.maxTime, v.Time)
	}
}

// window holds the samples read but not yet yielded, by time, then
// number: those that came in order in a queue, the others in a heap.
// Recordings are nearly in time order, so most samples take the queue's
// constant time rather than the heap's logarithm.
type window struct {
	queue []heapSample // queue[head:] wait, in order
	head  int
	heap  sampleHeap
}

func (w *window) push(x heapSample) {
	if n := len(w.queue); n == w.head || x.s.Time >= w.queue[n-1].s.Time {
		if w.head > 4096 && 2*w.head > n {
			w.queue = w.queue[:copy(w.queue, w.queue[w.head:])]
			w.head = 0
		}
		w.queue = append(w.queue, x)
		return
	}
	w.heap.push(x)
}

// fromHeap reports whether the first sample is the heap's.
func (w *window) fromHeap() bool {
	if len(w.heap.items) == 0 {
		return false
	}
	if w.head == len(w.queue) {
		return true
	}
	h, q := &w.heap.items[0], &w.queue[w.head]
	return h.s.Time < q.s.Time || h.s.Time == q.s.Time && h.seq < q.seq
}

// first is the time of the first sample; false when none waits.
func (w *window) first() (uint64, bool) {
	if w.fromHeap() {
		return w.heap.items[0].s.Time, true
	}
	if w.head < len(w.queue) {
		return w.queue[w.head].s.Time, true
	}
	return 0, false
}

// pop removes and returns the first sample; one must wait.
func (w *window) pop() profile.Sample {
	if w.fromHeap() {
		return w.heap.pop()
	}
	w.head++
	return w.queue[w.head-1].s
}

// heapSample is a sample waiting in a cursor's window, seq its number in
// its file.
type heapSample struct {
	seq uint64
	s   profile.Sample
}

// sampleHeap is a min-heap of samples by time, then number.
type sampleHeap struct{ items []heapSample }

func (h *sampleHeap) less(i, j int) bool {
	a, b := &h.items[i], &h.items[j]
	return a.s.Time < b.s.Time || a.s.Time == b.s.Time && a.seq < b.seq
}

func (h *sampleHeap) push(x heapSample) {
	h.items = append(h.items, x)
	for i := len(h.items) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h.items[i], h.items[p] = h.items[p], h.items[i]
		i = p
	}
}

func (h *sampleHeap) pop() profile.Sample {
	top := h.items[0].s
	n := len(h.items) - 1
	h.items[0] = h.items[n]
	h.items = h.items[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && h.less(l, m) {
			m = l
		}
		if r < n && h.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		h.items[i], h.items[m] = h.items[m], h.items[i]
		i = m
	}
	return top
}
