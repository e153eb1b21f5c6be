// Package profile holds the in-memory model built from one or more recordings:
// symbolized frames, stacks, time-ordered samples, threads, and what is
// computed from it (filters, aggregations, listings, the call tree). Analyses
// and views work on this model; they never read recording files or ELF files
// themselves. Package loader builds it from recordings. The package does not
// read files, talk to the kernel or print.
package profile

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/culprit-dev/culprit/internal/recording"
)

// Frame is one symbolized frame. Inlined functions are frames of their own.
type Frame struct {
	Function string // source-level function name (clone suffixes removed); "" when unknown
	File     string // source file, "" when unknown
	Line     int    // source line, 0 when unknown
	Object   string // object path, "[kernel.kallsyms]", a kernel module "[name]", "[vdso]" or "[unknown]"
	Offset   uint64 // file offset inside Object for user frames, address for kernel frames
	// Entry, for a user frame no symbol names, is the file offset of the
	// first instruction of its function, from the object's unwind tables
	// (0: not known). Reports name such a frame Object+0xEntry, so that
	// the addresses of one unnamed function add up.
	Entry   uint64
	Kernel  bool // a kernel frame
	Inlined bool // inlined into the next (outer) frame of the stack
}

// Sample is one CPU-time sample of the model.
type Sample struct {
	Time uint64 // ns, sample clock (CLOCK_MONOTONIC)
	PID  uint32
	TID  uint32
	CPU  uint32
	// More is, in a merged profile (Profile.Merged), how many more samples
	// of the same stack, thread and event this one stands for: Time is
	// then the earliest of them, Period their sum and CPU the CPU of the
	// first one read. It is 0 otherwise.
	More   uint32
	Period uint64          // ns of CPU time this sample stands for
	Stack  int32           // index into Profile.Stacks
	Event  recording.Event // what took the sample (CPU tick, syscall, switch)
	Arg    uint64          // the event's argument (syscall number, prev_state; SwitchArg)
}

// SwitchArg is a context switch's Arg in a profile loaded without
// merging. A switch away's is the recording's (prev_state, below bit 31)
// and, when the recording has the thread's run delay at the switch
// (recording.Sample.RunDelay), bit 31 set and the run delay modulo 2^32
// in bits 32-63. The run delay's growth between two switches of a thread
// is its wait for a CPU before the run between them: modulo 2^32 it is
// exact for any wait under 4.29 s. A switch onto a CPU's (the recording's
// is 0) is, when the recording has the thread's time on a CPU before the
// run (recording.Sample.ExecRuntime), that time in bits 0-62 and bit 63
// set: the next switch onto a CPU of the thread has its time after the
// run, so the two tell the run's length as the kernel counts it.
func SwitchArg(s *recording.Sample) uint64 {
	switch {
	case s.Event == recording.EventSwitchIn && s.HasExecRuntime:
		return s.ExecRuntime&^switchInRuntime | switchInRuntime
	case s.Event != recording.EventSwitch || !s.HasRunDelay:
		return s.Arg
	}
	return s.Arg&0x7fffffff | switchRunDelay | s.RunDelay<<32
}

const (
	switchRunDelay  = 1 << 31
	switchInRuntime = 1 << 63
)

// ExecRuntime returns a switch onto a CPU's time on a CPU of its thread
// before the run it starts, ns, as the kernel counts it (SwitchArg), and
// whether the profile has it.
func (s *Sample) ExecRuntime() (uint64, bool) {
	if s.Event != recording.EventSwitchIn || s.Arg&switchInRuntime == 0 {
		return 0, false
	}
	return s.Arg &^ switchInRuntime, true
}

// NoteSwitchAway keeps s's time on a CPU (recording.Sample.ExecRuntime)
// when s is a context switch away that has it and its thread's latest so
// far. A switch away's Arg has no room for it (SwitchArg), and a thread's
// run is measured by its next switch onto a CPU, but the thread's last run
// has none after it: its switch away tells its length (LastSwitchAway).
// Loaders call it for every sample, in any order.
func (p *Profile) NoteSwitchAway(s *recording.Sample) {
	if s.Event != recording.EventSwitch || !s.HasExecRuntime {
		return
	}
	if p.lastAway == nil {
		p.lastAway = map[uint32]switchAway{}
	}
	if a, ok := p.lastAway[s.TID]; !ok || s.Time >= a.time {
		p.lastAway[s.TID] = switchAway{time: s.Time, runtime: s.ExecRuntime}
	}
}

// LastSwitchAway returns the time on a CPU of thread tid, ns, as the
// kernel counts it, at its switch away at time t, when that is the
// thread's last switch away and the profile has it (NoteSwitchAway).
func (p *Profile) LastSwitchAway(tid uint32, t uint64) (uint64, bool) {
	a, ok := p.lastAway[tid]
	if !ok || a.time != t {
		return 0, false
	}
	return a.runtime, true
}

// switchAway is a thread's last switch away with its time on a CPU.
type switchAway struct{ time, runtime uint64 }

// RunDelay returns a context switch's run delay modulo 2^32 (SwitchArg),
// and whether the profile has it.
func (s *Sample) RunDelay() (uint32, bool) {
	if s.Event != recording.EventSwitch || s.Arg&switchRunDelay == 0 {
		return 0, false
	}
	return uint32(s.Arg >> 32), true
}

// SwitchState is a context switch's prev_state (without its run delay).
func (s *Sample) SwitchState() uint64 { return s.Arg & 0x7fffffff }

// Gap is a window of the sample clock, [From, To], in which the kernel
// dropped records of CPU's ring; CPU is recording.AnyCPU when the ring
// served every CPU.
type Gap struct {
	From, To uint64
	CPU      uint32
}

// N is the number of samples s stands for: 1, or more in a merged profile.
func (s Sample) N() int { return 1 + int(s.More) }

// LastTime is the time of the last sample that p.Samples[i] stands for:
// its Time, unless p is merged.
func (p *Profile) LastTime(i int) uint64 {
	if len(p.lasts) == len(p.Samples) {
		return p.lasts[i]
	}
	return p.Samples[i].Time
}

// SampleCount is the number of samples of p: len(p.Samples), unless p is
// merged or streamed (a streamed profile selected by Apply counts its
// samples by reading them, once).
func (p *Profile) SampleCount() int {
	if p.stream != nil {
		if p.count < 0 {
			n := 0
			if p.EachSample(func(*Sample) bool { n++; return true }) == nil {
				p.count = n
			}
			return n
		}
		return p.count
	}
	n := len(p.Samples)
	for _, s := range p.Samples {
		n += int(s.More)
	}
	return n
}

// Value is one sampled value of the model (see recording.Value).
type Value struct {
	Time   uint64
	PID    uint32
	TID    uint32
	Source int32 // index into Profile.ValueSources
	Depth  uint8
	Type   recording.ValueKind
	PC     uint64
	Bits   uint64
	frame  int32 // 1 + index into Profile.Frames of the innermost frame at PC; 0 = not symbolized (lines.go)
}

// Missing reports whether the value was not available at its sample.
func (v Value) Missing() bool { return v.Type == recording.ValueMissing }

// Float64 returns the value as a float64 (NaN when missing).
func (v Value) Float64() float64 {
	switch v.Type {
	case recording.ValueInt:
		return float64(int64(v.Bits))
	case recording.ValueUint:
		return float64(v.Bits)
	case recording.ValueFloat:
		return math.Float64frombits(v.Bits)
	}
	return math.NaN()
}

// ExecBetween says whether an executable mapping process pid had lies
// wholly between addresses a and b (in either order): no object of the
// process spans from one to the other.
func (p *Profile) ExecBetween(pid uint32, a, b uint64) bool {
	lo, hi := min(a, b), max(a, b)
	for _, s := range p.ExecSpans[pid] {
		if s[0] > lo && s[1] <= hi {
			return true
		}
	}
	return false
}

// ThreadName is the last name (comm) of thread tid, or "tid N" when not
// known.
func (p *Profile) ThreadName(tid uint32) string { return p.ThreadNameAt(tid, math.MaxUint64) }

// ProcessName is the last name of process pid: the comm of its main thread
// (TID == PID), else that of its thread tid, else "pid N".
func (p *Profile) ProcessName(pid, tid uint32) string {
	return p.ProcessNameAt(pid, tid, math.MaxUint64)
}

// Thread is what is known of a thread.
type Thread struct {
	PID  uint32
	TID  uint32
	Comm string
}

// Source describes one recording file that went into the profile.
type Source struct {
	Path     string
	Complete bool   // the file ended with an End record
	Salvage  string // what the reader salvaged from a damaged file, "" if intact
	Samples  int
}

// Profile is the model built from recordings.
type Profile struct {
	Frames  []Frame   // unique frames
	Stacks  [][]int32 // frame indexes, innermost first: kernel frames, then user frames
	Samples []Sample  // ordered by time (merged ones by their first time)
	// Merged says that samples were merged at loading (SetMerged):
	// the profile has totals but no time order, and selecting a time window
	// (Filter.From, Filter.To) is not possible.
	Merged bool
	// lasts holds, in a merged profile, the time of the last sample each
	// Sample stands for (LastTime).
	lasts     []uint64
	Threads   map[uint32]Thread
	Lost      uint64 // samples the kernel or recorder dropped
	Throttled uint64 // throttle events reported by the kernel
	// Gaps are the windows in which a CPU's ring dropped records, as far as
	// the recording says (format 1.6), in the order read. A thread's
	// events there may be missing: an analysis that follows a thread from
	// event to event should not bridge one.
	Gaps []Gap
	// ExecSpans are the executable mappings (start, end) each process
	// had at any time of the recording, by process: what lies between
	// two of its addresses (ExecBetween).
	ExecSpans map[uint32][][2]uint64
	Metas     []recording.Meta
	Sources   []Source
	Warnings  []string // things the user should know, e.g. objects without symbols
	// ValueSources are the variables, expressions and counters whose values
	// were sampled, merged across recordings by what they denote.
	ValueSources []recording.ValueSource
	Values       []Value // ordered by time
	// Probes are the traced functions and Calls their traced calls
	// (culprit trace), ordered by start time.
	Probes []Probe
	Calls  []Call
	// ProbesOff are the spans when every probe was removed (recording.
	// ProbesOff, sample clock ns): calls overlapping them are incomplete.
	ProbesOff [][2]uint64
	// CallsLost are the spans in which the tracer dropped calls (its ring
	// was full, or they nested deeper than its shadow stack): calls
	// overlapping them may miss callees.
	CallsLost [][2]uint64
	// SyscallWindows are the spans in which system calls were recorded
	// (recording.SyscallWindow), in the order read; none when calls were
	// recorded all along or the recording predates them (see Metas'
	// recording.ExtraSyscallWindows).
	SyscallWindows []recording.SyscallWindow
	// StartTime is the smallest sample time, used as the origin of --from/--to.
	StartTime uint64
	// names holds, per thread that was ever renamed (exec, prctl), its
	// names in time order, the first from time 0; Threads has the last one.
	names map[uint32][]timedName
	// stream, when set (SetStream), yields the samples, which Samples
	// then does not hold; count is how many (-1: not known yet).
	stream func(yield func(*Sample) bool) error
	count  int
	// events counts a streamed profile's samples by event kind (nil: not
	// known); bound bounds the counts from above, in a selection of one
	// (Apply) too.
	events, bound map[recording.Event]int
	// values, when set (SetValueStream), yields the values, which Values
	// then does not hold; valueCounts counts them by source (nil: not
	// known).
	values      func(yield func(*Value) bool) error
	valueCounts []ValueCount
	// within and withinCost, when set (SetValueIndex), read a streamed
	// profile's values of a span of time (EachValueWithin).
	within     func(from, to uint64, yield func(*Value) bool) error
	withinCost func(from, to uint64) int
	// lastAway is each thread's last switch away, with its time on a CPU
	// (NoteSwitchAway).
	lastAway map[uint32]switchAway
}

// ValueCount counts the values of one value source: All of them, Present
// those not Missing.
type ValueCount struct{ All, Present int }

// SetValueStream makes p's values streamed: counted by source in counts
// (indexed like ValueSources), they are not held in Values but yielded, in
// time order, by each (which reads them again from the recordings, and may
// fail doing so), every time EachValue is called.
func (p *Profile) SetValueStream(counts []ValueCount, each func(yield func(*Value) bool) error) {
	p.Values, p.values, p.valueCounts = nil, each, counts
}

// EachValue calls yield with each value of p in time order (the order of
// Values) until it returns false. The value is yield's to change; it is
// not kept. Only a streamed profile can fail, when reading the recordings
// again fails.
func (p *Profile) EachValue(yield func(*Value) bool) error {
	if p.values != nil {
		return p.values(yield)
	}
	yieldCopies(p.Values, yield)
	return nil
}

// SetValueIndex gives a streamed profile's values (SetValueStream) a time
// index: within yields the values whose times lie in [from, to), in no set
// order and without their frames, reading only the parts of the
// recordings that may hold them; cost says how many values it reads for
// [from, to), at least as many as it yields.
func (p *Profile) SetValueIndex(cost func(from, to uint64) int, within func(from, to uint64, yield func(*Value) bool) error) {
	p.withinCost, p.within = cost, within
}

// EachValueWithin calls yield with each value of p whose Time lies in
// [from, to) until it returns false, in no set order and with no frame
// (FrameIndex −1): for what needs neither (summaries of the values
// by time, the values of a span), a streamed profile with a time index
// (SetValueIndex) reads only the values' bytes, and those of the span,
// where EachValue reads every record in time order. The value is yield's
// to change; it is not kept.
func (p *Profile) EachValueWithin(from, to uint64, yield func(*Value) bool) error {
	if p.within != nil {
		return p.within(from, to, yield)
	}
	if p.values != nil {
		return p.values(func(v *Value) bool {
			if v.Time < from || v.Time >= to {
				return true
			}
			v.frame = 0
			return yield(v)
		})
	}
	var v Value
	for i := range p.Values {
		if t := p.Values[i].Time; t < from || t >= to {
			continue
		}
		v = p.Values[i]
		v.frame = 0
		if !yield(&v) {
			return nil
		}
	}
	return nil
}

// ValuesWithinCost is how many values EachValueWithin(from, to) reads: at
// least as many as it yields, more when the time index (SetValueIndex)
// places a part of the recordings across from or to; every value of a
// streamed profile without one; those it yields of a profile holding its
// values (counted in one pass over them).
func (p *Profile) ValuesWithinCost(from, to uint64) int {
	if p.withinCost != nil {
		return p.withinCost(from, to)
	}
	if p.values != nil {
		n := 0
		for _, c := range p.valueCounts {
			n += c.All
		}
		return n
	}
	n := 0
	for i := range p.Values {
		if t := p.Values[i].Time; t >= from && t < to {
			n++
		}
	}
	return n
}

// ValueCounts counts p's values by source (indexed like ValueSources;
// values of a source out of range are not counted).
func (p *Profile) ValueCounts() ([]ValueCount, error) {
	if p.valueCounts != nil {
		return p.valueCounts, nil
	}
	out := make([]ValueCount, len(p.ValueSources))
	err := p.EachValue(func(v *Value) bool {
		if v.Source >= 0 && int(v.Source) < len(out) {
			out[v.Source].All++
			if !v.Missing() {
				out[v.Source].Present++
			}
		}
		return true
	})
	return out, err
}

// SetStream makes p a streamed profile: its samples, counted by event kind
// in events, are not held in Samples but yielded, in time order, by each
// (which reads them again from the recordings, and may fail doing so),
// every time EachSample is called.
// A streamed profile is for views that go through the samples in time
// order once or a few times (timelines, latency); p.Stacks must hold every
// stack the samples name.
func (p *Profile) SetStream(events map[recording.Event]int, each func(yield func(*Sample) bool) error) {
	n := 0
	for _, c := range events {
		n += c
	}
	p.Samples, p.stream, p.count, p.events, p.bound = nil, each, n, events, events
}

// EventCounts counts p's samples by event kind (a merged profile's
// Samples as one each).
func (p *Profile) EventCounts() map[recording.Event]int {
	out := map[recording.Event]int{}
	if p.stream != nil && p.events != nil {
		for e, n := range p.events {
			if n > 0 {
				out[e] = n
			}
		}
		return out
	}
	_ = p.EachSample(func(s *Sample) bool { // as perStack
		out[s.Event]++
		return true
	})
	return out
}

// MayHaveEvent reports whether p may have samples of event kind e: false
// only when it is known to have none.
func (p *Profile) MayHaveEvent(e recording.Event) bool {
	return p.bound == nil || p.bound[e] > 0
}

// setSelectionStream makes q, a selection of the streamed p, yield what
// keep keeps of p's samples.
func (q *Profile) setSelectionStream(p *Profile, keep func(*Sample) bool) {
	q.stream = func(yield func(*Sample) bool) error {
		return p.stream(func(s *Sample) bool {
			if !keep(s) {
				return true
			}
			return yield(s)
		})
	}
	q.count, q.events, q.bound = -1, nil, p.bound
}

// Streamed reports whether p's samples are yielded by EachSample rather
// than held in Samples.
func (p *Profile) Streamed() bool { return p.stream != nil }

// EachSample calls yield with each sample of p in time order (the order of
// Samples) until it returns false. The sample is yield's to change; it is
// not kept. Only a streamed profile can fail, when reading the recordings
// again fails.
func (p *Profile) EachSample(yield func(*Sample) bool) error {
	if p.stream != nil {
		return p.stream(yield)
	}
	yieldCopies(p.Samples, yield)
	return nil
}

// yieldCopies calls yield with a copy of each element of xs in turn until
// it returns false: one copy for all, as yield does not keep it, and the
// element itself unchanged whatever yield does to it.
func yieldCopies[T any](xs []T, yield func(*T) bool) {
	var x T
	for i := range xs {
		x = xs[i]
		if !yield(&x) {
			return
		}
	}
}

// HasSamples reports whether p has a sample (for a streamed profile
// selected by Apply, it reads up to the first).
func (p *Profile) HasSamples() bool {
	if p.stream == nil || p.count >= 0 {
		return p.SampleCount() > 0
	}
	found := false
	_ = p.EachSample(func(*Sample) bool { found = true; return false })
	return found
}

// timedName is a thread's name from Time on.
type timedName struct {
	Time uint64
	Name string
}

// SetMerged marks p as merged: lasts[i] is the time of the last sample
// that p.Samples[i] stands for (LastTime).
func (p *Profile) SetMerged(lasts []uint64) {
	p.Merged = true
	p.lasts = lasts
}

// Naming is what recordings say of threads' names: comm records (exec,
// prctl) and forks, whose child starts with its parent's name. Rings are
// drained CPU by CPU, so these come only roughly in time order; the loader
// collects them (Comm, Fork) and Resolve sorts them out.
type Naming struct {
	comms []nameEvent
	forks []recording.Task
}

// Comm adds a name thread tid of process pid took at time t.
func (n *Naming) Comm(t uint64, pid, tid uint32, name string) {
	n.comms = append(n.comms, nameEvent{t, pid, tid, name})
}

// Fork adds a thread's creation; it starts with its creator's name.
func (n *Naming) Fork(task recording.Task) { n.forks = append(n.forks, task) }

type nameEvent struct {
	time     uint64
	pid, tid uint32
	name     string
}

// Resolve sets, in p, the history of every thread whose name changed
// (ThreadNameAt) and each thread's last name in p.Threads. Forks are taken
// in time order, so that a parent's name at the fork is known when its
// child inherits it.
func (n *Naming) Resolve(p *Profile) {
	hist := map[uint32][]timedName{}
	slices.SortStableFunc(n.comms, func(a, b nameEvent) int { return cmp.Compare(a.time, b.time) })
	for _, c := range n.comms {
		hist[c.tid] = append(hist[c.tid], timedName{c.time, c.name})
	}
	slices.SortStableFunc(n.forks, func(a, b recording.Task) int { return cmp.Compare(a.Time, b.Time) })
	for _, f := range n.forks {
		if f.TID == f.PTID {
			continue
		}
		name, ok := nameAt(hist[f.PTID], f.Time)
		if !ok {
			continue
		}
		if h := hist[f.TID]; len(h) == 0 || h[0].Time > f.Time {
			hist[f.TID] = append([]timedName{{f.Time, name}}, h...)
		}
	}
	for tid, h := range hist {
		// Consecutive equal names are one; the first name holds from the start.
		h = slices.CompactFunc(h, func(a, b timedName) bool { return a.Name == b.Name })
		h[0].Time = 0
		th := p.Threads[tid]
		th.TID, th.Comm = tid, h[len(h)-1].Name
		if th.PID == 0 {
			th.PID = tid
		}
		p.Threads[tid] = th
		if len(h) > 1 {
			if p.names == nil {
				p.names = map[uint32][]timedName{}
			}
			p.names[tid] = h
		}
	}
}

// nameAt is the name in history h (time order) at time t: the last one from
// t or earlier; false when h has none.
func nameAt(h []timedName, t uint64) (string, bool) {
	i := sort.Search(len(h), func(i int) bool { return h[i].Time > t })
	if i == 0 {
		return "", false
	}
	return h[i-1].Name, true
}

// ThreadNameAt is the name thread tid had at time t (its first name before
// any rename was recorded), or "tid N" when not known.
func (p *Profile) ThreadNameAt(tid uint32, t uint64) string {
	if name, ok := nameAt(p.names[tid], t); ok {
		return name
	}
	if th, ok := p.Threads[tid]; ok && th.Comm != "" {
		return th.Comm
	}
	return fmt.Sprintf("tid %d", tid)
}

// ProcessNameAt is ProcessName at time t: a process that execs is named
// after each program it ran, in turn.
func (p *Profile) ProcessNameAt(pid, tid uint32, t uint64) string {
	if th, ok := p.Threads[pid]; ok && th.Comm != "" {
		return p.ThreadNameAt(pid, t)
	}
	if th, ok := p.Threads[tid]; ok && th.Comm != "" {
		return p.ThreadNameAt(tid, t)
	}
	return fmt.Sprintf("pid %d", pid)
}

// renamed reports whether thread tid has had more than one name.
func (p *Profile) renamed(tid uint32) bool { return len(p.names[tid]) > 1 }

// RenamedBetween reports whether thread tid had different names at times a
// and b.
func (p *Profile) RenamedBetween(tid uint32, a, b uint64) bool {
	h := p.names[tid]
	if len(h) < 2 {
		return false
	}
	at := func(t uint64) int { return sort.Search(len(h), func(i int) bool { return h[i].Time > t }) }
	return at(a) != at(b)
}
