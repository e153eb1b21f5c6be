package render

import (
	"debug/elf"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	pprof "github.com/google/pprof/profile"

	"github.com/culprit-dev/culprit/internal/profile"
)

// WritePprof writes p as a gzipped pprof protocol buffer, readable by
// `go tool pprof`. Sample types are cpu/nanoseconds (the sample's Period) and
// samples/count (1). Samples with the same stack, pid and tid are merged; each
// carries numeric labels "pid" and "tid" and the string label "comm" (the
// thread's name). A Location is one physical frame: a frame together with the
// Inlined frames directly inside it on the stack, its Lines innermost first as
// pprof expects. Its address is the frame's Offset (a file offset for user
// objects, an address for the kernel) in a Mapping per object, the recorded
// program's first (pprof's main binary). Functions are
// named by Frame.Name, so unnamed frames show as "object+0xoffset"; an empty
// stack is the function "[unknown]". TimeNanos is the wall time of the first
// sample when a Meta gives the clock's origin.
func WritePprof(w io.Writer, p *profile.Profile) error {
	return buildPprof(p, false).Write(w)
}

type fnKey struct{ name, file string }

type pprofBuilder struct {
	p         *profile.Profile
	out       *pprof.Profile
	mappings  map[string]*pprof.Mapping
	functions map[fnKey]*pprof.Function
	locations map[string]*pprof.Location // of physical frames with inlined ones, by their frame indexes
	single    map[int32]*pprof.Location  // of physical frames alone, by frame index
	stacks    map[int32][]*pprof.Location
	user      map[*pprof.Mapping]bool // mappings of user objects (file offsets)
}

func buildPprof(p *profile.Profile, offCPU bool) *pprof.Profile {
	dp := int64(defaultPeriod(p))
	out := &pprof.Profile{
		SampleType: []*pprof.ValueType{
			{Type: "cpu", Unit: "nanoseconds"},
			{Type: "samples", Unit: "count"},
		},
		DefaultSampleType: "cpu",
		PeriodType:        &pprof.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:            dp,
	}
	if offCPU {
		// Each sample is one span: no period stands for it.
		out.SampleType = []*pprof.ValueType{{Type: "off-cpu", Unit: "nanoseconds"}, {Type: "switches", Unit: "count"}}
		out.DefaultSampleType, out.PeriodType, out.Period = "off-cpu", nil, 0
	} else if dp <= 1 && len(p.Samples) > 0 && p.Samples[0].Period > 0 {
		out.Period = int64(p.Samples[0].Period / uint64(p.Samples[0].N()))
	}
	b := &pprofBuilder{
		p: p, out: out,
		mappings:  map[string]*pprof.Mapping{},
		functions: map[fnKey]*pprof.Function{},
		locations: map[string]*pprof.Location{},
		single:    map[int32]*pprof.Location{},
		stacks:    map[int32][]*pprof.Location{},
		user:      map[*pprof.Mapping]bool{},
	}
	type sampleKey struct {
		stack    int32
		pid, tid uint32
	}
	// Samples of one thread and name share their label maps (pprof only
	// reads them), and the samples and their values are allocated in
	// blocks: a profile of many distinct stacks is then not mostly maps.
	type labelKey struct {
		pid, tid uint32
		comm     string
	}
	type labelSet struct {
		num map[string][]int64
		str map[string][]string
	}
	labels := map[labelKey]labelSet{}
	var (
		block  []pprof.Sample
		values []int64
	)
	// The samples made so far, by stack and thread (a map of uint64 keys
	// is several times as fast as one of sampleKeys), and by sampleKey
	// those whose thread number an earlier process had.
	// The sample last found for each stack (most samples of a stack are
	// a thread's) answers first.
	type made struct {
		s        *pprof.Sample
		pid, tid uint32
	}
	byThread := map[uint64]made{}
	merged := map[sampleKey]*pprof.Sample{}
	last := make([]made, len(p.Stacks)+1)
	for _, s := range p.Samples {
		slot := int(s.Stack)
		if slot < 0 || slot >= len(p.Stacks) {
			slot = len(p.Stacks)
		}
		var ps *pprof.Sample
		if l := last[slot]; l.s != nil && l.tid == s.TID && l.pid == s.PID && slot < len(p.Stacks) {
			ps = l.s
			ps.Value[0] += int64(period(p, s))
			ps.Value[1] += int64(s.N())
			continue
		}
		k := sampleKey{s.Stack, s.PID, s.TID}
		tk := uint64(uint32(s.Stack))<<32 | uint64(s.TID)
		first, seen := byThread[tk]
		ps = first.s
		if seen && first.pid != s.PID {
			ps = merged[k]
		}
		if ps == nil {
			lk := labelKey{s.PID, s.TID, p.ThreadNameAt(s.TID, s.Time)}
			ls, ok := labels[lk]
			if !ok {
				ls = labelSet{
					num: map[string][]int64{"pid": {int64(s.PID)}, "tid": {int64(s.TID)}},
					str: map[string][]string{"comm": {lk.comm}},
				}
				labels[lk] = ls
			}
			if len(block) == cap(block) {
				block = make([]pprof.Sample, 0, 1024)
				values = make([]int64, 0, 2*1024)
			}
			values = append(values, 0, 0)
			block = append(block, pprof.Sample{
				Location: b.stack(s.Stack),
				Value:    values[len(values)-2 : len(values) : len(values)],
				NumLabel: ls.num,
				Label:    ls.str,
			})
			ps = &block[len(block)-1]
			if !seen {
				byThread[tk] = made{ps, s.PID, s.TID}
			} else {
				merged[k] = ps
			}
			out.Sample = append(out.Sample, ps)
		}
		last[slot] = made{ps, s.PID, s.TID}
		ps.Value[0] += int64(period(p, s))
		ps.Value[1] += int64(s.N())
	}
	for _, m := range out.Mapping {
		if m.Limit <= m.Start {
			m.Limit = m.Start + 1
		}
		if b.user[m] {
			widenToSegment(m)
		}
	}
	b.mainFirst()
	if first, end, ok := timeRange(p); ok {
		out.DurationNanos = int64(end - first)
		for _, m := range p.Metas {
			if m.StartUnixNano != 0 {
				out.TimeNanos = m.StartUnixNano + int64(first-m.StartClock)
				break
			}
		}
	} else {
		for _, m := range p.Metas {
			if m.StartUnixNano != 0 {
				out.TimeNanos = m.StartUnixNano
				break
			}
		}
	}
	for _, m := range p.Metas {
		if m.Tool != "" {
			out.Comments = append(out.Comments, "recorded by "+m.Tool)
		}
		if len(m.Command) > 0 {
			out.Comments = append(out.Comments, "command: "+strings.Join(m.Command, " "))
		}
		if m.AttachPID > 0 {
			out.Comments = append(out.Comments, "attached to pid "+strconv.Itoa(m.AttachPID))
		}
		if m.Event != "" {
			out.Comments = append(out.Comments, fmt.Sprintf("event %s at %d Hz, call graph %s", m.Event, m.Frequency, m.CallGraph))
		}
	}
	if p.Lost > 0 || p.Throttled > 0 {
		out.Comments = append(out.Comments, fmt.Sprintf("lost %d samples, throttled %d times", p.Lost, p.Throttled))
	}
	return out
}

// mainFirst moves the recorded program's mapping to the front, where pprof
// looks for the main binary (its "File:"): the object named like the
// recorded command, else the one holding main. Mapping IDs follow the order.
func (b *pprofBuilder) mainFirst() {
	var want string
	for _, m := range b.p.Metas {
		if len(m.Command) > 0 {
			want = path.Base(m.Command[0])
			break
		}
	}
	var first *pprof.Mapping
	for _, m := range b.out.Mapping {
		if want != "" && path.Base(m.File) == want {
			first = m
			break
		}
	}
	for _, f := range b.p.Frames {
		if first != nil {
			break
		}
		if !f.Kernel && (f.Function == "main" || f.Function == "main.main") {
			first = b.mappings[f.Object]
		}
	}
	if at := slices.Index(b.out.Mapping, first); at > 0 {
		copy(b.out.Mapping[1:at+1], b.out.Mapping[:at])
		b.out.Mapping[0] = first
	}
	for i, m := range b.out.Mapping {
		m.ID = uint64(i + 1)
	}
}

// mapping returns the mapping of frame f's object, widened to hold addr.
func (b *pprofBuilder) mapping(f profile.Frame, addr uint64) *pprof.Mapping {
	obj := f.Object
	if obj == "" {
		obj = f.ObjectName()
	}
	m := b.mappings[obj]
	if m == nil {
		m = &pprof.Mapping{
			ID:              uint64(len(b.out.Mapping) + 1),
			Start:           addr,
			Limit:           addr + 1,
			File:            obj,
			HasFunctions:    true,
			HasFilenames:    true,
			HasLineNumbers:  true,
			HasInlineFrames: true,
		}
		b.mappings[obj] = m
		b.out.Mapping = append(b.out.Mapping, m)
	}
	if addr < m.Start {
		m.Start = addr
	}
	if addr >= m.Limit {
		m.Limit = addr + 1
	}
	if !f.Kernel {
		// Addresses are file offsets: the mapping maps them onto themselves.
		m.Offset = m.Start
		b.user[m] = true
	}
	return m
}

func (b *pprofBuilder) function(f profile.Frame) *pprof.Function {
	k := fnKey{f.Name(), f.File}
	fn := b.functions[k]
	if fn == nil {
		fn = &pprof.Function{ID: uint64(len(b.out.Function) + 1), Name: k.name, SystemName: k.name, Filename: k.file}
		b.functions[k] = fn
		b.out.Function = append(b.out.Function, fn)
	}
	return fn
}

// stack returns the locations of a stack, innermost first.
func (b *pprofBuilder) stack(i int32) []*pprof.Location {
	if locs, ok := b.stacks[i]; ok {
		return locs
	}
	var locs []*pprof.Location
	st := b.p.StackAt(i)
	if len(st) == 0 {
		locs = []*pprof.Location{b.location([]int32{-1})}
	}
	for j := 0; j < len(st); {
		// A physical frame is a run of Inlined frames and the frame they
		// are inlined into.
		k := j
		for k+1 < len(st) && b.p.FrameAt(st[k]).Inlined {
			k++
		}
		locs = append(locs, b.location(st[j:k+1]))
		j = k + 1
	}
	b.stacks[i] = locs
	return locs
}

// location returns the location of a physical frame: frame indexes, the
// inlined ones first; -1 alone is the "[unknown]" of an empty stack.
func (b *pprofBuilder) location(group []int32) *pprof.Location {
	var key string
	if len(group) == 1 {
		if l := b.single[group[0]]; l != nil {
			return l
		}
	} else {
		var kb strings.Builder
		for _, fi := range group {
			kb.WriteString(strconv.Itoa(int(fi)))
			kb.WriteByte(',')
		}
		key = kb.String()
		if l := b.locations[key]; l != nil {
			return l
		}
	}
	frame := func(fi int32) profile.Frame {
		if fi < 0 {
			return unknownFrame
		}
		return b.p.FrameAt(fi)
	}
	first, phys := frame(group[0]), frame(group[len(group)-1])
	l := &pprof.Location{ID: uint64(len(b.out.Location) + 1), Address: first.Offset}
	if group[0] >= 0 {
		l.Mapping = b.mapping(phys, l.Address)
	}
	for _, fi := range group {
		f := frame(fi)
		l.Line = append(l.Line, pprof.Line{Function: b.function(f), Line: int64(f.Line)})
	}
	if len(group) == 1 {
		b.single[group[0]] = l
	} else {
		b.locations[key] = l
	}
	b.out.Location = append(b.out.Location, l)
	return l
}

// Pprof returns p as the pprof profile WritePprof writes, for code that
// hands it to pprof's own packages (the web UI of culprit view).
func Pprof(p *profile.Profile) *pprof.Profile { return buildPprof(p, false) }

// PprofOffCPU is Pprof for an off-CPU profile (analysis/offcpu): each
// sample's Period is the time its thread stayed off the CPU, the values
// are off-CPU nanoseconds and switches.
func PprofOffCPU(p *profile.Profile) *pprof.Profile { return buildPprof(p, true) }

// widenToSegment widens a user object's mapping from the offsets sampled to
// the whole file when an executable segment of it holds them, so that pprof's disassembly and source views, which read a few
// hundred bytes around the addresses sampled, stay inside the mapping.
// Objects that cannot be read keep the sampled range.
func widenToSegment(m *pprof.Mapping) {
	f, err := elf.Open(m.File)
	if err != nil {
		return
	}
	defer f.Close()
	for _, ph := range f.Progs {
		if ph.Type != elf.PT_LOAD || ph.Flags&elf.PF_X == 0 {
			continue
		}
		if m.Start >= ph.Off && m.Limit <= ph.Off+ph.Filesz {
			if st, err := os.Stat(m.File); err == nil && uint64(st.Size()) > m.Limit {
				m.Start, m.Limit, m.Offset = 0, uint64(st.Size()), 0
			}
			return
		}
	}
}
