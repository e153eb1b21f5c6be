package loader

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sync"

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
	// samples is set when the samples are streamed (Options.Stream);
	// the values always are.
	samples bool
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
	// Values: counted by source, and the frames of their PCs per space
	// version (the loader's cache, which the second reading looks up).
	vcounts []profile.ValueCount
	values  int
	vpcs    valuePCs
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
	// Values: how many, how late (as samples' late and maxTime), and the
	// file's value source IDs as they were mapped, in the order mapped.
	values      uint64
	vlate, vmax uint64
	sources     []sourceSet
	// runs are the runs of values the first reading stepped over
	// (recording.Reader.SkipValues): the records of their first values, in
	// order. A second reading of the samples steps over them too.
	runs []uint64
	// regions are where the file's values are, in file order: the time
	// index of eachValueWithin.
	regions []valueRegion
}

// sourceSet is a file's value source ID mapped to a profile value source
// when record rec was added.
type sourceSet struct {
	rec uint64
	id  uint32
	idx int32
}

// setSource maps the file's value source ID id to the profile's value
// source idx from the record being added on, noting it for a second
// reading of the values.
func (l *loader) setSource(sources map[uint32]int32, id uint32, idx int32) {
	sources[id] = idx
	if l.stream != nil {
		f := l.stream.files[len(l.stream.files)-1]
		f.sources = append(f.sources, sourceSet{rec: l.rec, id: id, idx: idx})
	}
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

// endValues gives the profile its values as a stream.
func (l *loader) endValues() {
	st := l.stream
	st.vpcs = l.vpcs
	for len(st.vcounts) < len(l.p.ValueSources) {
		st.vcounts = append(st.vcounts, profile.ValueCount{})
	}
	l.p.SetValueStream(st.vcounts, st.eachValue)
	l.p.SetValueIndex(st.valuesWithinCost, st.eachValueWithin)
}

// valuesWithinCost is how many values eachValueWithin reads for the times
// [from, to): those of the regions whose times overlap them.
func (st *streamState) valuesWithinCost(from, to uint64) int {
	n := 0
	for _, f := range st.files {
		for _, g := range f.regions {
			if g.to >= from && g.from < to {
				n += int(g.count)
			}
		}
	}
	return n
}

// eachValueWithin yields the values whose times lie in [from, to), file
// by file, each file's in file order, without their frames, until yield
// returns false: it reads only the regions of values whose times overlap
// [from, to), each in one read, decoded in place
// (recording.EachValueAt), and no other record. What needs neither the
// time order nor the frames (summaries by time, a range's values) reads
// the values this way in a fraction of eachValue's time. The regions are
// read and decoded by as many goroutines as there are CPUs, a few regions
// ahead of yield, which is called on the caller's goroutine, in order.
func (st *streamState) eachValueWithin(from, to uint64, yield func(*profile.Value) bool) error {
	type job struct {
		f *streamFile
		g valueRegion
	}
	var jobs []job
	for _, f := range st.files {
		for _, g := range f.regions {
			if g.to >= from && g.from < to {
				jobs = append(jobs, job{f, g})
			}
		}
	}
	if len(jobs) == 0 {
		return nil
	}
	type result struct {
		vals []recording.Value
		err  error
	}
	workers := min(len(jobs), max(1, runtime.GOMAXPROCS(0)))
	results := make([]chan result, len(jobs))
	for i := range results {
		results[i] = make(chan result, 1)
	}
	ahead := make(chan struct{}, 2*workers) // the regions read ahead of yield
	free := make(chan []recording.Value, 2*workers+1)
	next := make(chan int)
	done := make(chan struct{})
	var wg sync.WaitGroup
	defer func() {
		close(done)
		wg.Wait()
	}()
	wg.Add(1 + workers)
	go func() {
		defer wg.Done()
		defer close(next)
		for i := range jobs {
			select {
			case ahead <- struct{}{}:
			case <-done:
				return
			}
			select {
			case next <- i:
			case <-done:
				return
			}
		}
	}()
	for range workers {
		go func() {
			defer wg.Done()
			var buf []byte
			for i := range next {
				var vals []recording.Value
				select {
				case vals = <-free:
				default:
				}
				j := jobs[i]
				var err error
				buf, _, err = recording.EachValueAt(j.f.f, int64(j.g.off), int64(j.g.end-j.g.off), buf, func(x *recording.Value) bool {
					if x.Time >= from && x.Time < to {
						vals = append(vals, *x)
					}
					return true
				})
				if err != nil {
					err = fmt.Errorf("reading %s again: %w", j.f.f.Name(), err)
				}
				results[i] <- result{vals, err}
			}
		}()
	}
	// The file's source IDs as defined at the region read: small dense
	// IDs in a slice (1 + the index, 0 for none), others in a map.
	var f *streamFile
	var dense []int32
	var sparse map[uint32]int32
	slog := 0
	var v profile.Value // yielded: one for all, as yield does not keep it
	for i, j := range jobs {
		r := <-results[i]
		<-ahead
		if r.err != nil {
			return r.err
		}
		if j.f != f {
			f, dense, sparse, slog = j.f, dense[:0], map[uint32]int32{}, 0
		}
		for ; slog < len(f.sources) && f.sources[slog].rec <= j.g.rec; slog++ {
			e := f.sources[slog]
			if e.id < denseSources {
				for uint32(len(dense)) <= e.id {
					dense = append(dense, 0)
				}
				dense[e.id] = e.idx + 1
			} else {
				sparse[e.id] = e.idx
			}
		}
		for k := range r.vals {
			x := &r.vals[k]
			var idx int32
			if x.Source < uint32(len(dense)) && dense[x.Source] > 0 {
				idx = dense[x.Source] - 1
			} else if ix, ok := sparse[x.Source]; ok {
				idx = ix
			} else {
				continue // its definition was lost to damage, as in the first reading
			}
			v = profile.Value{Time: x.Time, PID: x.PID, TID: x.TID, Source: idx,
				Depth: x.Depth, Type: x.Type, PC: x.PC, Bits: x.Bits}
			if !yield(&v) {
				return nil
			}
		}
		select {
		case free <- r.vals[:0]:
		default:
		}
	}
	return nil
}

// eachValue reads the values again, in time order (as Load sorts them:
// by time, then file, then read order), and yields each with its frame
// set; it stops early when yield returns false.
func (st *streamState) eachValue(yield func(*profile.Value) bool) error {
	if st.values == 0 {
		return nil
	}
	cs := make([]*valueCursor, 0, len(st.files))
	heads := make([]profile.Value, 0, len(st.files))
	for _, f := range st.files {
		if f.values == 0 {
			continue
		}
		r, err := recording.OpenAt(f.f)
		if err != nil {
			return fmt.Errorf("reading %s again: %w", f.f.Name(), err)
		}
		r.Reuse()
		c := &valueCursor{rereader: rereader{f: f, r: r, spaces: map[uint32]*space{}}, st: st, sources: map[uint32]int32{}}
		var v profile.Value
		ok, err := c.next(&v)
		if err != nil {
			return err
		}
		if ok {
			cs = append(cs, c)
			heads = append(heads, v)
		}
	}
	var v profile.Value // yielded: one for all, as yield does not keep it
	for len(cs) > 0 {
		best := 0
		for i := range cs {
			if heads[i].Time < heads[best].Time {
				best = i
			}
		}
		v = heads[best]
		if !yield(&v) {
			return nil
		}
		ok, err := cs[best].next(&heads[best])
		if err != nil {
			return err
		}
		if !ok {
			cs = slices.Delete(cs, best, best+1)
			heads = slices.Delete(heads, best, best+1)
		}
	}
	return nil
}

// valueCursor reads one file's values again, in time order.
type valueCursor struct {
	rereader
	st      *streamState
	sources map[uint32]int32
	slog    int    // the next entry of f.sources to replay
	seq     uint64 // values read
	maxTime uint64
	done    bool
	wait    window[profile.Value]
}

// frame is the frame index the first reading gave a value's PC (as
// loader.valueFrame), −1 for none.
func (c *valueCursor) frame(pid uint32, pc uint64, depth uint8) int32 {
	if pc == 0 || pc >= kernelStart {
		return -1
	}
	sp := c.spaces[pid]
	if sp == nil {
		return -1
	}
	pcs := c.st.vpcs.spaces[sp.id]
	if pcs == nil {
		return -1
	}
	k := pc << 1
	if depth > 0 {
		k |= 1
	}
	if f, ok := pcs.frames[k]; ok {
		return f
	}
	return -1
}

// next sets *v to the file's next value in time order; false when there is
// none left.
func (c *valueCursor) next(v *profile.Value) (bool, error) {
	for {
		if t, ok := c.wait.first(); ok && (c.done || t+c.f.vlate < c.maxTime) {
			*v = c.wait.pop()
			return true, nil
		}
		if c.done {
			return false, nil
		}
		if c.seq == c.f.values || c.n == c.f.records {
			c.done = true
			continue
		}
		rec, err := c.read()
		if err != nil {
			return false, err
		}
		for c.slog < len(c.f.sources) && c.f.sources[c.slog].rec <= c.n {
			e := c.f.sources[c.slog]
			c.sources[e.id] = e.idx
			c.slog++
		}
		x, ok := rec.(*recording.Value)
		if !ok {
			continue
		}
		idx, ok := c.sources[x.Source]
		if !ok {
			continue // its definition was lost to damage, as in the first reading
		}
		val := profile.Value{Time: x.Time, PID: x.PID, TID: x.TID, Source: idx,
			Depth: x.Depth, Type: x.Type, PC: x.PC, Bits: x.Bits}
		val.SetFrame(c.frame(x.PID, x.PC, x.Depth))
		c.wait.push(timed[profile.Value]{seq: c.seq, time: x.Time, v: val})
		c.seq++
		c.maxTime = max(c.maxTime, x.Time)
	}
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
	var s profile.Sample // yielded: one for all, as yield does not keep it
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
		s = heads[best]
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

// rereader reads one file's records again, with the address spaces the
// first reading had at each of them.
type rereader struct {
	f      *streamFile
	r      *recording.Reader
	spaces map[uint32]*space
	log    int    // the next entry of f.spaces to replay
	n      uint64 // records read
}

// read returns the file's next record, the address spaces replayed up to
// it. A file that ends sooner than it did at the first reading was cut
// since: an error.
func (c *rereader) read() (recording.Record, error) {
	rec, err := c.r.Next()
	if err == io.EOF {
		return nil, fmt.Errorf("reading %s again: it was cut since it was first read (%d of its %d records left): read it again", c.f.f.Name(), c.n, c.f.records)
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s again: %w", c.f.f.Name(), err)
	}
	c.n++
	if x, ok := rec.(*recording.ValueIndex); ok {
		c.n += x.Count - 1 // a run the first reading stepped over too
	}
	for c.log < len(c.f.spaces) && c.f.spaces[c.log].rec <= c.n {
		e := c.f.spaces[c.log]
		c.spaces[e.pid] = e.sp
		c.log++
	}
	return rec, nil
}

// cursor reads one file's samples again, in time order.
type cursor struct {
	rereader
	st      *streamState
	file    int
	seq     uint64 // samples read
	maxTime uint64
	done    bool
	wait    window[profile.Sample]
}

func newCursor(st *streamState, file int, f *streamFile) (*cursor, error) {
	r, err := recording.OpenAt(f.f)
	if err != nil {
		return nil, fmt.Errorf("reading %s again: %w", f.f.Name(), err)
	}
	r.Reuse()
	c := &cursor{rereader: rereader{f: f, r: r, spaces: map[uint32]*space{}}, st: st, file: file}
	if len(f.runs) > 0 {
		runs := f.runs
		r.SkipValues(func(*recording.ValueIndex) bool {
			for len(runs) > 0 && runs[0] < c.n+1 {
				runs = runs[1:]
			}
			return len(runs) > 0 && runs[0] == c.n+1
		})
	}
	return c, nil
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
		rec, err := c.read()
		if err != nil {
			return false, err
		}
		v, ok := rec.(*recording.Sample)
		if !ok {
			continue
		}
		stack := int32(-1)
		if k := c.st.key(c.file, c.f, c.spaces[v.PID], v.StackID, false, false); k >= 0 {
			stack = c.st.final[k]
		}
		c.wait.push(timed[profile.Sample]{seq: c.seq, time: v.Time, v: profile.Sample{Time: v.Time, PID: v.PID, TID: v.TID, CPU: v.CPU,
			Period: v.Period, Stack: stack, Event: v.Event, Arg: profile.SwitchArg(v)}})
		c.seq++
		c.maxTime = max(c.maxTime, v.Time)
	}
}

// window holds the items (samples, values) read but not yet yielded, by
// time, then number: those that came in order in a queue, the others in a
// heap. Recordings are nearly in time order, so most items take the
// queue's constant time rather than the heap's logarithm.
type window[T any] struct {
	queue []timed[T] // queue[head:] wait, in order
	head  int
	heap  timedHeap[T]
}

func (w *window[T]) push(x timed[T]) {
	if n := len(w.queue); n == w.head || x.time >= w.queue[n-1].time {
		if w.head > 4096 && 2*w.head > n {
			w.queue = w.queue[:copy(w.queue, w.queue[w.head:])]
			w.head = 0
		}
		w.queue = append(w.queue, x)
		return
	}
	w.heap.push(x)
}

// fromHeap reports whether the first item is the heap's.
func (w *window[T]) fromHeap() bool {
	if len(w.heap.items) == 0 {
		return false
	}
	if w.head == len(w.queue) {
		return true
	}
	h, q := &w.heap.items[0], &w.queue[w.head]
	return h.time < q.time || h.time == q.time && h.seq < q.seq
}

// first is the time of the first item; false when none waits.
func (w *window[T]) first() (uint64, bool) {
	if w.fromHeap() {
		return w.heap.items[0].time, true
	}
	if w.head < len(w.queue) {
		return w.queue[w.head].time, true
	}
	return 0, false
}

// pop removes and returns the first item; one must wait.
func (w *window[T]) pop() T {
	if w.fromHeap() {
		return w.heap.pop()
	}
	w.head++
	return w.queue[w.head-1].v
}

// timed is an item waiting in a cursor's window: its time, and seq its
// number in its file.
type timed[T any] struct {
	seq, time uint64
	v         T
}

// timedHeap is a min-heap of items by time, then number.
type timedHeap[T any] struct{ items []timed[T] }

func (h *timedHeap[T]) less(i, j int) bool {
	a, b := &h.items[i], &h.items[j]
	return a.time < b.time || a.time == b.time && a.seq < b.seq
}

func (h *timedHeap[T]) push(x timed[T]) {
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

func (h *timedHeap[T]) pop() T {
	top := h.items[0].v
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

// Values on the first reading (Options.Stream, Options.StreamValues).
//
// readAhead keeps the Value records to itself (valueSkip): it counts them
// by the file's source ID, All and Present, measures how late they come
// (as streamSample does for samples), and notes the PCs they were read at
// (process, PC, caller frame or not), once each, with the record of the
// first. It hands what it noted to the loader (a valueTally) before any
// record that changes what a PC means or which source an ID is, that is
// any record other than a sample, before a sample of a process it has not
// seen a sample of (the loader then gives the process an address space,
// which a value of it before may have had to make), and at the end of the
// file. The loader symbolizes each PC noted, in the order of their first
// values, as it would have at that value (loader.valueFrame, with the
// same record number for a space it makes), so that the frames and their
// order in Profile.Frames are those of a load that holds the values; and
// it adds the counts to the sources the IDs map to, which no record in
// between changed. A value of an ID not defined yet is dropped, as
// addRecord drops it (its definition was lost to damage). The values are
// then read again, decoded in full, only by Profile.EachValue.

// valuePC is a PC a value was read at: the caller bit (depth > 0) in pid's
// low bit, and rec the record of its first value.
type valuePC struct {
	pid, pc, rec uint64
}

// valueTally is what readAhead noted of the values since its last tally.
type valueTally struct {
	pcs    []valuePC
	counts []sourceCount
}

// sourceCount counts the values of one of a file's source IDs.
type sourceCount struct {
	id           uint32
	all, present int
}

// valueSkip is readAhead's state for the values it keeps to itself.
type valueSkip struct {
	// slot[id] is 0 for a source ID not defined so far, 1 for one not
	// counted since the last tally, else 2 + the index of its count in
	// counts: in a slice for the small dense IDs writers give, in a map
	// for others.
	slot    []int32
	slotMap map[uint32]int32
	pids    map[uint32]bool // processes of samples read
	// Noted since the last tally: counts by source ID, the PCs in the
	// order of their first value and the set of them; last is the last PC
	// noted, which most values share with the one before (the values of
	// a sample come together).
	counts []sourceCount
	pcs    []valuePC
	seen   map[[2]uint64]bool
	last   [2]uint64
	// The file's values, how late they come, the latest time read.
	values, late, max uint64
	// The runs of values stepped over (streamFile.runs).
	runs []uint64
	// Where the values are (streamFile.regions), and how many ValueSource
	// records were read.
	regions []valueRegion
	defs    uint64
}

// valueRegion is a stretch of a file that holds values: a run of values
// (the bytes after its ValueIndex), or values read one by one and the
// records between them, none of which defines a value source, up to
// maxRegion bytes. rec is the record of its first value (its sources are
// those defined up to it), count how many values it holds, from and to
// the least and greatest of their times; defs is how many ValueSource
// records came before it.
type valueRegion struct {
	off, end uint64
	rec      uint64
	count    uint64
	from, to uint64
	defs     uint64
	run      bool
}

// maxRegion is the most bytes a region of values read one by one spans,
// as a Writer's runs of values (recordings of format 1.12 and later hold
// few values outside runs; earlier ones hold every value so, a few after
// each sample).
const maxRegion = 1 << 20

// noteRun notes the run x indexes, which ends at offset end and whose
// first value is record rec.
func (vs *valueSkip) noteRun(x *recording.ValueIndex, end int64, rec uint64) {
	vs.regions = append(vs.regions, valueRegion{off: uint64(end) - x.Size, end: uint64(end), rec: rec,
		count: x.Count, from: x.MinTime, to: x.MaxTime, run: true})
}

// noteValue notes a value at time t read one by one from the bytes at
// offsets [at, end), record rec: the region of the values read one by one
// before it grows to hold it when no value source was defined since and
// it stays within maxRegion bytes.
func (vs *valueSkip) noteValue(t uint64, at, end int64, rec uint64) {
	if n := len(vs.regions); n > 0 {
		g := &vs.regions[n-1]
		if !g.run && g.defs == vs.defs && uint64(end)-g.off <= maxRegion {
			g.end = uint64(end)
			g.count++
			g.from, g.to = min(g.from, t), max(g.to, t)
			return
		}
	}
	vs.regions = append(vs.regions, valueRegion{off: uint64(at), end: uint64(end), rec: rec, count: 1, from: t, to: t, defs: vs.defs})
}

// denseSources bounds the source IDs valueSkip.slot holds.
const denseSources = 1 << 16

// slotOf is where source ID id's slot is, nil for an ID not defined.
func (vs *valueSkip) slotOf(id uint32) *int32 {
	if id < uint32(len(vs.slot)) {
		if vs.slot[id] == 0 {
			return nil
		}
		return &vs.slot[id]
	}
	if id < denseSources {
		return nil
	}
	if _, ok := vs.slotMap[id]; !ok {
		return nil
	}
	x := vs.slotMap[id] // a copy, written back by add
	return &x
}

// define notes that source ID id is defined from here on.
func (vs *valueSkip) define(id uint32) {
	vs.defs++
	if id < denseSources {
		for uint32(len(vs.slot)) <= id {
			vs.slot = append(vs.slot, 0)
		}
		if vs.slot[id] == 0 {
			vs.slot[id] = 1
		}
		return
	}
	if vs.slotMap == nil {
		vs.slotMap = map[uint32]int32{}
	}
	if _, ok := vs.slotMap[id]; !ok {
		vs.slotMap[id] = 1
	}
}

// newPID reports whether no sample of process pid was read before.
func (vs *valueSkip) newPID(pid uint32) bool {
	if vs.pids[pid] {
		return false
	}
	if vs.pids == nil {
		vs.pids = map[uint32]bool{}
	}
	vs.pids[pid] = true
	return true
}

// add notes value v, record rec of its file.
func (vs *valueSkip) add(v *recording.Value, rec uint64) {
	slot := vs.slotOf(v.Source)
	if slot == nil {
		return
	}
	if vs.values > 0 && v.Time < vs.max {
		vs.late = max(vs.late, vs.max-v.Time)
	}
	vs.max = max(vs.max, v.Time)
	vs.values++
	if *slot == 1 {
		vs.counts = append(vs.counts, sourceCount{id: v.Source})
		*slot = int32(len(vs.counts)) + 1
		if v.Source >= denseSources {
			vs.slotMap[v.Source] = *slot
		}
	}
	c := &vs.counts[*slot-2]
	c.all++
	if v.Type != recording.ValueMissing {
		c.present++
	}
	if v.PC == 0 || v.PC >= kernelStart {
		return // not symbolized (valueFrame)
	}
	k := [2]uint64{uint64(v.PID) << 1, v.PC}
	if v.Depth > 0 {
		k[0] |= 1
	}
	if k == vs.last && len(vs.pcs) > 0 {
		return
	}
	vs.last = k
	if vs.seen[k] {
		return
	}
	if vs.seen == nil {
		vs.seen = map[[2]uint64]bool{}
	}
	vs.seen[k] = true
	vs.pcs = append(vs.pcs, valuePC{pid: k[0], pc: k[1], rec: rec})
}

// indexed reports whether the run of values x indexes may be noted from x
// (addIndex) instead of its values: when every source of it is defined,
// as a value of an undefined source is not noted.
func (vs *valueSkip) indexed(x *recording.ValueIndex) bool {
	for _, s := range x.Sources {
		if vs.slotOf(s.ID) == nil {
			return false
		}
	}
	return true
}

// addIndex notes the run of values x indexes, as add would each of its
// values; the first is record rec of its file.
func (vs *valueSkip) addIndex(x *recording.ValueIndex, rec uint64) {
	if vs.values > 0 && x.MinTime < vs.max {
		vs.late = max(vs.late, vs.max-x.MinTime)
	}
	vs.late = max(vs.late, x.Late)
	vs.max = max(vs.max, x.MaxTime)
	vs.values += x.Count
	for _, s := range x.Sources {
		slot := vs.slotOf(s.ID)
		if *slot == 1 {
			vs.counts = append(vs.counts, sourceCount{id: s.ID})
			*slot = int32(len(vs.counts)) + 1
			if s.ID >= denseSources {
				vs.slotMap[s.ID] = *slot
			}
		}
		c := &vs.counts[*slot-2]
		c.all += int(s.All)
		c.present += int(s.Present)
	}
	for _, p := range x.PCs {
		if p.PC == 0 || p.PC >= kernelStart {
			continue // not symbolized (valueFrame)
		}
		k := [2]uint64{uint64(p.PID) << 1, p.PC}
		if p.Caller {
			k[0] |= 1
		}
		if vs.seen[k] {
			continue
		}
		if vs.seen == nil {
			vs.seen = map[[2]uint64]bool{}
		}
		vs.seen[k] = true
		vs.pcs = append(vs.pcs, valuePC{pid: k[0], pc: k[1], rec: rec + p.First})
	}
	vs.last = [2]uint64{} // no PC's key (PC 0 is not noted)
}

// flush returns what was noted since the last tally, nil if nothing.
func (vs *valueSkip) flush() *valueTally {
	if len(vs.counts) == 0 {
		return nil
	}
	t := &valueTally{pcs: vs.pcs, counts: vs.counts}
	for _, c := range vs.counts {
		if c.id < denseSources {
			vs.slot[c.id] = 1
		} else {
			vs.slotMap[c.id] = 1
		}
	}
	vs.pcs, vs.counts = nil, nil
	clear(vs.seen)
	return t
}

// addTally symbolizes the PCs of t and counts its values, of a file whose
// source IDs map to the profile's sources in sources.
func (l *loader) addTally(t *valueTally, sources map[uint32]int32) {
	for _, k := range t.pcs {
		l.rec = k.rec
		depth := uint8(k.pid & 1)
		l.valueFrame(uint32(k.pid>>1), k.pc, depth)
	}
	st := l.stream
	for _, c := range t.counts {
		idx, ok := sources[c.id]
		if !ok {
			continue // not reached: readAhead counts defined IDs only
		}
		for len(st.vcounts) <= int(idx) {
			st.vcounts = append(st.vcounts, profile.ValueCount{})
		}
		st.vcounts[idx].All += c.all
		st.vcounts[idx].Present += c.present
	}
}
