// Package render turns profile results into text, JSON and foreign formats:
// the flat and caller reports as aligned text or JSON (schemas in
// docs/report-json.md), source listings, call trees and callers/callees, and whole
// profiles as pprof, folded stacks, speedscope and Chrome trace event files
// and SVG flame graphs, and the latency and contexts results of package
// introperf (text, JSON, Chrome trace, DOT, HTML). It only writes to the io.Writer it
// is given; it never reads files or the kernel.
package render

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/culprit-dev/culprit/internal/profile"
)

// unknownFrame stands for the empty stack of a sample.
var unknownFrame = profile.Frame{Function: profile.Unknown, Object: profile.Unknown}

// stackFrames returns the frames of a sample's stack, innermost first; an
// empty stack is one "[unknown]" frame.
func stackFrames(p *profile.Profile, stack int32) []profile.Frame {
	st := p.StackAt(stack)
	if len(st) == 0 {
		return []profile.Frame{unknownFrame}
	}
	out := make([]profile.Frame, len(st))
	for i, fi := range st {
		out[i] = p.FrameAt(fi)
	}
	return out
}

// period returns the ns of CPU time sample s stands for: its Period, else
// 1e9/frequency of the recording, else 1 (times the samples a merged
// Sample stands for).
func period(p *profile.Profile, s profile.Sample) uint64 {
	if s.Period > 0 {
		return s.Period
	}
	return defaultPeriod(p) * uint64(s.N())
}

func defaultPeriod(p *profile.Profile) uint64 {
	for _, m := range p.Metas {
		if m.Frequency > 0 {
			return uint64(1e9 / m.Frequency)
		}
	}
	return 1
}

// commandName names the profile: the recorded command or attached process.
func commandName(p *profile.Profile) string {
	for _, m := range p.Metas {
		if len(m.Command) > 0 {
			return strings.Join(m.Command, " ")
		}
		if m.AttachPID > 0 {
			return fmt.Sprintf("pid %d", m.AttachPID)
		}
	}
	return "culprit profile"
}

// timeRange returns the smallest sample time and the largest time+period.
func timeRange(p *profile.Profile) (first, end uint64, ok bool) {
	for i, s := range p.Samples {
		e := p.LastTime(i) + period(p, s)/uint64(s.N())
		if i == 0 || s.Time < first {
			first = s.Time
		}
		if i == 0 || e > end {
			end = e
		}
	}
	return first, end, len(p.Samples) > 0
}

// origin is the time that exports count from: StartTime, or the first sample.
func origin(p *profile.Profile) uint64 {
	if p.Streamed() {
		// The first sample read is the earliest.
		var first uint64
		ok := false
		_ = p.EachSample(func(s *profile.Sample) bool { first, ok = s.Time, true; return false })
		return originOf(p, first, ok)
	}
	first, _, ok := timeRange(p)
	return originOf(p, first, ok)
}

// threadID is a thread of a timeline.
type threadID struct{ pid, tid uint32 }

func threadLess(a, b threadID) bool {
	if a.pid != b.pid {
		return a.pid < b.pid
	}
	return a.tid < b.tid
}

// threadSamples are the samples of each thread of a profile, read once
// in time order (Profile.EachSample) and kept as varints: a few bytes a
// sample, where a timeline of millions of samples would otherwise hold
// them all as Samples (or their indices, beside the Samples). Past
// heldBytes of them, full blocks go to a temporary file (spill), so that
// the memory stays the same however long the recording.
type threadSamples struct {
	threads []threadID // in order of pid and tid
	lists   []*sampleList
	first   uint64 // the earliest sample's time (ok: there is one)
	ok      bool
	spill   *spill
}

// close removes the temporary file, if any.
func (ts *threadSamples) close() {
	if ts != nil && ts.spill != nil {
		ts.spill.close()
	}
}

// heldBytes is how many bytes of full blocks the lists of a timeline keep
// in memory; the blocks after those go to a temporary file.
var heldBytes = 8 << 20

// spill is the temporary file that takes the full blocks of the sample
// lists once heldBytes are held. It is removed as soon as it is made, so
// that nothing is left behind however the process ends. Where no file can
// be made or written (a full disk), the blocks stay in memory, as before.
type spill struct {
	f    *os.File
	size int64
	held int  // bytes of full blocks in memory
	off  bool // the file could not be made or written: blocks stay in memory
	free []byte
}

// keep takes block b, full: it returns it to stay in memory, or writes it
// out and returns nil and where it went.
func (s *spill) keep(b []byte) (kept []byte, off int64, n int) {
	if s.off || s.held+len(b) <= heldBytes {
		s.held += len(b)
		return b, 0, 0
	}
	if s.f == nil {
		f, err := os.CreateTemp("", "culprit-timeline-*")
		if err != nil {
			s.off, s.held = true, s.held+len(b)
			return b, 0, 0
		}
		os.Remove(f.Name())
		s.f = f
	}
	if _, err := s.f.WriteAt(b, s.size); err != nil { // a full disk: memory it is
		s.off, s.held = true, s.held+len(b)
		return b, 0, 0
	}
	off, n = s.size, len(b)
	s.size += int64(n)
	s.free = b[:0]
	return nil, off, n
}

// newBlock returns an empty block of the given capacity, reusing the last
// block written out.
func (s *spill) newBlock(size int) []byte {
	if b := s.free; cap(b) >= size {
		s.free = nil
		return b
	}
	return make([]byte, 0, size)
}

func (s *spill) close() {
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
}

// sampleList is a thread's samples: per sample the uvarints of its time
// after the one before, its period's zigzag difference from the one before
// and 1 + its stack, in blocks of listBlock bytes (a slice grown by
// appending would copy itself and hold up to twice its length); a block
// written out to the spill file is nil in buf, at off[i] for n[i] bytes.
type sampleList struct {
	buf       [][]byte
	out       []spilled // per block of buf; nil: none written out
	n         int
	time, per uint64 // the last sample's
	startTime uint64 // the first sample's
	sum       uint64 // the periods' sum
	spill     *spill
}

// spilled is where a block written out lies in the spill file.
type spilled struct {
	off int64
	n   int
}

// listBlock is the size of a block of a sampleList.
const listBlock = 64 << 10

// block is the block the next sample goes into: the last one, or a new one
// when the last has no room for one more sample.
func (l *sampleList) block() []byte {
	n := len(l.buf)
	if n > 0 && cap(l.buf[n-1])-len(l.buf[n-1]) >= 3*binary.MaxVarintLen64 {
		return l.buf[n-1]
	}
	size := listBlock
	if n == 0 {
		size = 256 // threads with few samples take little
	} else if l.spill != nil {
		kept, off, bytes := l.spill.keep(l.buf[n-1])
		if kept == nil {
			for len(l.out) < n {
				l.out = append(l.out, spilled{})
			}
			l.buf[n-1], l.out[n-1] = nil, spilled{off, bytes}
		}
		l.buf = append(l.buf, l.spill.newBlock(size))
		return l.buf[len(l.buf)-1]
	}
	l.buf = append(l.buf, make([]byte, 0, size))
	return l.buf[len(l.buf)-1]
}

// tsample is a sample of a thread as a timeline needs it.
type tsample struct {
	time, period uint64
	stack        int32
}

// byThread reads p's samples into threadSamples, calling each (when not
// nil) with every sample as it is read, in p's order. A profile's samples
// are in time order; where a profile made by hand has them out of order,
// each thread's are kept in p's order, or, with inTime, stably sorted by
// time.
func byThread(p *profile.Profile, inTime bool, each func(s *profile.Sample)) (*threadSamples, error) {
	ts := &threadSamples{spill: &spill{}}
	lists := map[threadID]*sampleList{}
	var last *sampleList
	var lastT threadID
	add := func(s *profile.Sample) {
		t := threadID{s.PID, s.TID}
		l := last
		if l == nil || t != lastT {
			if l = lists[t]; l == nil {
				l = &sampleList{startTime: s.Time, time: s.Time, spill: ts.spill}
				lists[t] = l
				ts.threads = append(ts.threads, t)
			}
			last, lastT = l, t
		}
		if !ts.ok || s.Time < ts.first {
			ts.first, ts.ok = s.Time, true
		}
		per := period(p, *s)
		d := int64(per - l.per)
		b := l.block()
		b = binary.AppendUvarint(b, s.Time-l.time) // mod 2^64 when out of order
		b = binary.AppendUvarint(b, uint64(d<<1)^uint64(d>>63))
		b = binary.AppendUvarint(b, uint64(int64(s.Stack)+1))
		l.buf[len(l.buf)-1] = b
		l.time, l.per = s.Time, per
		l.sum += per
		l.n++
	}
	byTime := func(a, b profile.Sample) int { return cmp.Compare(a.Time, b.Time) }
	if inTime && !p.Streamed() && !slices.IsSortedFunc(p.Samples, byTime) {
		order := make([]int32, len(p.Samples))
		for i := range order {
			order[i] = int32(i)
			if each != nil {
				s := p.Samples[i]
				each(&s)
			}
		}
		slices.SortStableFunc(order, func(a, b int32) int { return byTime(p.Samples[a], p.Samples[b]) })
		for _, i := range order {
			s := p.Samples[i]
			add(&s)
		}
	} else if err := p.EachSample(func(s *profile.Sample) bool {
		if each != nil {
			each(s)
		}
		add(s)
		return true
	}); err != nil {
		ts.close()
		return nil, err
	}
	sort.Slice(ts.threads, func(i, j int) bool { return threadLess(ts.threads[i], ts.threads[j]) })
	ts.lists = make([]*sampleList, len(ts.threads))
	for i, t := range ts.threads {
		ts.lists[i] = lists[t]
	}
	return ts, nil
}

// each calls f with the thread's samples in time order.
func (l *sampleList) each(f func(tsample)) error {
	t, per := l.startTime, uint64(0)
	var rd []byte
	for i, b := range l.buf {
		if b == nil && i < len(l.out) {
			o := l.out[i]
			rd = slices.Grow(rd[:0], o.n)[:o.n]
			if _, err := l.spill.f.ReadAt(rd, o.off); err != nil {
				return fmt.Errorf("reading the timeline's samples from a temporary file: %w", err)
			}
			b = rd
		}
		decodeSamples(b, &t, &per, f)
	}
	return nil
}

// decodeSamples calls f with the samples of block b, the times and periods
// counted on from *t and *per.
func decodeSamples(b []byte, t, per *uint64, f func(tsample)) {
	for len(b) > 0 {
		dt, n := binary.Uvarint(b)
		b = b[n:]
		z, n := binary.Uvarint(b)
		b = b[n:]
		st, n := binary.Uvarint(b)
		b = b[n:]
		*t += dt
		*per += uint64(int64(z>>1) ^ -int64(z&1))
		f(tsample{time: *t, period: *per, stack: int32(int64(st) - 1)})
	}
}

// originOf is origin with the earliest sample's time given (ok: there is
// a sample).
func originOf(p *profile.Profile, first uint64, ok bool) uint64 {
	if p.StartTime != 0 && (!ok || p.StartTime <= first) {
		return p.StartTime
	}
	return first
}
