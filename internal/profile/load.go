package profile

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/symbol"
)

// LoadOptions configure Load.
type LoadOptions struct {
	Symbolizer *symbol.Symbolizer // nil: a default one
	// Progress, when set, is called with the number of records read so far.
	Progress func(records int)
}

// mapping is an executable mapping known from the recording.
type mapping struct {
	start, end, pgoff uint64
	path              string
	buildID           []byte
}

// space is an immutable version of a process's executable address space.
type space struct {
	id   int
	maps []mapping // sorted by start
}

func (sp *space) find(pc uint64) (mapping, bool) {
	i := sort.Search(len(sp.maps), func(i int) bool { return sp.maps[i].end > pc })
	if i < len(sp.maps) && sp.maps[i].start <= pc {
		return sp.maps[i], true
	}
	return mapping{}, false
}

type rawSample struct {
	Sample
	space *space
	stack uint64 // stack id within its file
	file  int
}

type stackKey struct {
	file  int
	space int
	stack uint64
}

type addrKey struct {
	obj    string
	off    uint64
	kernel bool
}

// loader builds a Profile.
type loader struct {
	p        *Profile
	sym      *symbol.Symbolizer
	spaces   map[uint32]*space
	nextID   int
	stacks   []map[uint64]*recording.Stack // per file: id → stack
	ksyms    []symbol.KernelSymbol
	ktab     *symbol.KernelTable
	vdso     map[string]*symbol.Object
	objs     map[string]*symbol.Object
	objErr   map[string]bool
	frames   map[Frame]int32
	addrs    map[addrKey][]int32
	resolved map[stackKey]int32
	raw      []rawSample
	noSyms   map[string]bool
	cut      int                             // samples recorded Truncated
	syms     map[uint32][]recording.Symbol   // Symbol records by pid (0: all), sorted after reading
	vsrc     map[recording.ValueSource]int32 // value source (ID cleared) → index
	vpcs     valuePCs                        // value PCs symbolized so far (lines.go)
	names    naming                          // comm and fork records, resolved at the end
}

// Load reads recordings and builds a symbolized Profile. Damaged or
// unfinished files are read up to their last complete record; what was
// salvaged is described in Profile.Sources.
func Load(paths []string, o LoadOptions) (*Profile, error) {
	if len(paths) == 0 {
		return nil, errors.New("no recording given")
	}
	l := &loader{
		p:        &Profile{Threads: map[uint32]Thread{}},
		sym:      o.Symbolizer,
		vdso:     map[string]*symbol.Object{},
		objs:     map[string]*symbol.Object{},
		objErr:   map[string]bool{},
		frames:   map[Frame]int32{},
		addrs:    map[addrKey][]int32{},
		resolved: map[stackKey]int32{},
		noSyms:   map[string]bool{},
		syms:     map[uint32][]recording.Symbol{},
		vsrc:     map[recording.ValueSource]int32{},
	}
	if l.sym == nil {
		l.sym = symbol.New(symbol.Options{})
	}
	records := 0
	for i, path := range paths {
		if err := l.readFile(i, path, &records, o.Progress); err != nil {
			return nil, err
		}
	}
	l.names.resolve(l.p)
	l.ktab = symbol.NewKernelTable(l.ksyms)
	for _, list := range l.syms {
		sort.Slice(list, func(i, j int) bool { return list[i].Addr < list[j].Addr })
	}
	sort.SliceStable(l.raw, func(i, j int) bool { return l.raw[i].Time < l.raw[j].Time })
	sort.SliceStable(l.p.Values, func(i, j int) bool { return l.p.Values[i].Time < l.p.Values[j].Time })
	l.p.Samples = make([]Sample, len(l.raw))
	for i, r := range l.raw {
		s := r.Sample
		s.Stack = l.stack(r)
		l.p.Samples[i] = s
	}
	if len(l.p.Samples) > 0 {
		l.p.StartTime = l.p.Samples[0].Time
	}
	var missing []string
	for obj := range l.noSyms {
		missing = append(missing, obj)
	}
	sort.Strings(missing)
	for _, obj := range missing {
		l.p.Warnings = append(l.p.Warnings, fmt.Sprintf("%s has no symbols: its functions are shown as %s+0xoffset of their first instruction (--by line: of each address)", obj, filepath.Base(obj)))
	}
	if w := l.cutWarning(); w != "" {
		l.p.Warnings = append(l.p.Warnings, w)
	}
	return l.p, nil
}

// cutWarning says, when more than a tenth of the samples lost callers (the
// recorder marks them Truncated), that callers' totals are too low and how
// to record complete stacks.
func (l *loader) cutWarning() string {
	n := len(l.p.Samples)
	if n == 0 || l.cut*10 <= n {
		return ""
	}
	fp := false
	for _, m := range l.p.Metas {
		fp = fp || m.CallGraph == "fp"
	}
	if fp {
		return fmt.Sprintf("%d of %d samples lost callers in code without frame pointers (libc, or -O2 code), so callers' totals are too low: record with --call-graph dwarf for complete stacks", l.cut, n)
	}
	return fmt.Sprintf("%d of %d samples have user stacks not unwound to their outermost frame, so callers' totals are too low: a larger --stack-size may help", l.cut, n)
}

func (l *loader) readFile(idx int, path string, records *int, progress func(int)) error {
	r, err := recording.Open(path)
	if err != nil {
		return err
	}
	defer r.Close()
	l.spaces = map[uint32]*space{}
	stacks := map[uint64]*recording.Stack{}
	l.stacks = append(l.stacks, stacks)
	sources := map[uint32]int32{} // this file's ValueSource IDs → index
	src := Source{Path: path}
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
		*records++
		if progress != nil && *records%100000 == 0 {
			progress(*records)
		}
		switch v := rec.(type) {
		case *recording.Meta:
			l.p.Metas = append(l.p.Metas, *v)
		case *recording.Mmap:
			l.addMapping(v)
		case *recording.Comm:
			if v.Exec && v.PID == v.TID {
				l.spaces[v.PID] = l.newSpace(nil)
			}
			l.p.Threads[v.TID] = Thread{PID: v.PID, TID: v.TID, Comm: v.Name}
			l.names.comms = append(l.names.comms, nameEvent{v.Time, v.PID, v.TID, v.Name})
		case *recording.Task:
			if !v.Exit && v.PID != v.PPID {
				if parent, ok := l.spaces[v.PPID]; ok {
					l.spaces[v.PID] = parent
				}
			}
			if !v.Exit {
				l.names.forks = append(l.names.forks, *v)
				if _, ok := l.p.Threads[v.TID]; !ok {
					// Named as its parent is at the fork.
					l.p.Threads[v.TID] = Thread{PID: v.PID, TID: v.TID, Comm: l.p.Threads[v.PTID].Comm}
				}
			}
		case *recording.Stack:
			stacks[v.ID] = v
		case *recording.Sample:
			sp := l.spaces[v.PID]
			if sp == nil {
				sp = l.newSpace(nil)
				l.spaces[v.PID] = sp
			}
			l.raw = append(l.raw, rawSample{
				Sample: Sample{Time: v.Time, PID: v.PID, TID: v.TID, CPU: v.CPU, Period: v.Period,
					Event: v.Event, Arg: v.Arg},
				space: sp, stack: v.StackID, file: idx})
			src.Samples++
			if v.Truncated {
				l.cut++
			}
			if _, ok := l.p.Threads[v.TID]; !ok {
				l.p.Threads[v.TID] = Thread{PID: v.PID, TID: v.TID}
			}
		case *recording.Lost:
			if v.Reason == recording.LostThrottled {
				l.p.Throttled += v.Count
			} else {
				l.p.Lost += v.Count
			}
		case *recording.KernelSymbol:
			l.ksyms = append(l.ksyms, symbol.KernelSymbol{Addr: v.Addr, Size: v.Size, Name: v.Name, Module: v.Module})
		case *recording.Object:
			if o, err := l.sym.ObjectFromBytes(v.Name, v.Data); err == nil {
				l.vdso[v.Name] = o
			}
		case *recording.Symbol:
			l.syms[v.PID] = append(l.syms[v.PID], *v)
		case *recording.ValueSource:
			key := *v
			key.ID = 0
			idx, ok := l.vsrc[key]
			if !ok {
				idx = int32(len(l.p.ValueSources))
				l.p.ValueSources = append(l.p.ValueSources, key)
				l.vsrc[key] = idx
			}
			sources[v.ID] = idx
		case *recording.Value:
			idx, ok := sources[v.Source]
			if !ok {
				continue // its definition was lost to damage
			}
			l.p.Values = append(l.p.Values, Value{Time: v.Time, PID: v.PID, TID: v.TID, Source: idx,
				Depth: v.Depth, Type: v.Type, PC: v.PC, Bits: v.Bits, frame: l.valueFrame(v.PID, v.PC, v.Depth)})
		case *recording.End:
			src.Complete = true
		}
	}
	src.Salvage = r.Salvage().String()
	l.p.Sources = append(l.p.Sources, src)
	return nil
}

func (l *loader) newSpace(maps []mapping) *space {
	l.nextID++
	return &space{id: l.nextID, maps: maps}
}

// addMapping makes a new version of the process's space with m added.
func (l *loader) addMapping(v *recording.Mmap) {
	m := mapping{start: v.Start, end: v.Start + v.Len, pgoff: v.Pgoff, path: v.Path, buildID: v.BuildID}
	var out []mapping
	if old := l.spaces[v.PID]; old != nil {
		for _, o := range old.maps {
			if o.end <= m.start || o.start >= m.end {
				out = append(out, o)
			}
		}
	}
	i := sort.Search(len(out), func(i int) bool { return out[i].start >= m.start })
	out = append(out, mapping{})
	copy(out[i+1:], out[i:])
	out[i] = m
	l.spaces[v.PID] = l.newSpace(out)
}

// stack resolves a sample's stack to an index in Profile.Stacks.
func (l *loader) stack(r rawSample) int32 {
	key := stackKey{file: r.file, space: r.space.id, stack: r.stack}
	if idx, ok := l.resolved[key]; ok {
		return idx
	}
	var frames []int32
	if st := l.stacks[r.file][r.stack]; st != nil {
		for i, a := range st.Kernel {
			frames = append(frames, l.kernelFrame(a, i > 0)...)
		}
		for i, a := range st.User {
			frames = append(frames, l.userFrames(r.PID, r.space, a, i > 0)...)
		}
	}
	idx := int32(len(l.p.Stacks))
	l.p.Stacks = append(l.p.Stacks, frames)
	l.resolved[key] = idx
	return idx
}

func (l *loader) intern(f Frame) int32 {
	if i, ok := l.frames[f]; ok {
		return i
	}
	i := int32(len(l.p.Frames))
	l.p.Frames = append(l.p.Frames, f)
	l.frames[f] = i
	return i
}

func (l *loader) kernelFrame(addr uint64, isReturn bool) []int32 {
	look := addr
	if isReturn {
		look--
	}
	k := addrKey{off: look, kernel: true}
	if ids, ok := l.addrs[k]; ok {
		return ids
	}
	f := Frame{Object: "[kernel.kallsyms]", Offset: addr, Kernel: true}
	if name, module, ok := l.ktab.Lookup(look); ok {
		f.Function = symbol.CleanName(name)
		if module != "" {
			f.Object = "[" + module + "]"
		}
	}
	ids := []int32{l.intern(f)}
	l.addrs[k] = ids
	return ids
}

// userFrames symbolizes a user address: inlined frames first, innermost first.
func (l *loader) userFrames(pid uint32, sp *space, addr uint64, isReturn bool) []int32 {
	look := addr
	if isReturn {
		look--
	}
	m, ok := sp.find(look)
	if !ok {
		if f, ok := l.namedSymbol(pid, look); ok {
			return []int32{l.intern(f)}
		}
		return []int32{l.intern(Frame{Object: "[unknown]", Offset: addr})}
	}
	off := look - m.start + m.pgoff
	k := addrKey{obj: m.path + "\x00" + string(m.buildID), off: off}
	if ids, ok := l.addrs[k]; ok {
		return ids
	}
	var ids []int32
	obj := l.object(m)
	if obj != nil {
		frames := obj.Lookup(off)
		for i, sf := range frames {
			ids = append(ids, l.intern(Frame{Function: sf.Function, File: sf.File, Line: sf.Line,
				Object: m.path, Offset: off, Inlined: i < len(frames)-1}))
		}
	}
	if len(ids) == 0 {
		// An object that could not be opened has had its warning.
		if obj != nil && !obj.HasSymbols() && strings.HasPrefix(m.path, "/") {
			l.noSyms[m.path] = true
		}
		f := Frame{Object: m.path, Offset: off}
		if obj != nil {
			if e, ok := obj.FunctionEntry(off); ok {
				f.Entry = e
			}
		}
		ids = []int32{l.intern(f)}
	}
	l.addrs[k] = ids
	return ids
}

// namedSymbol finds a Symbol record of the process (or of every process)
// that covers addr.
func (l *loader) namedSymbol(pid uint32, addr uint64) (Frame, bool) {
	for _, p := range []uint32{pid, 0} {
		list := l.syms[p]
		i := sort.Search(len(list), func(i int) bool { return list[i].Addr > addr }) - 1
		if i < 0 {
			continue
		}
		y := list[i]
		if y.Size != 0 && addr-y.Addr >= y.Size {
			continue
		}
		if y.Size == 0 && i+1 == len(list) && addr-y.Addr > 1<<20 {
			continue // an unsized last symbol does not cover everything above it
		}
		obj := y.Object
		if obj == "" {
			obj = "[unknown]"
		}
		return Frame{Function: symbol.CleanName(y.Name), Object: obj, Offset: addr - y.Addr}, true
	}
	return Frame{}, false
}

func (l *loader) object(m mapping) *symbol.Object {
	if o, ok := l.vdso[m.path]; ok {
		return o
	}
	key := m.path + "\x00" + string(m.buildID)
	if o, ok := l.objs[key]; ok {
		return o
	}
	if !strings.HasPrefix(m.path, "/") {
		l.objs[key] = nil
		return nil
	}
	o, err := l.sym.Object(m.path, m.buildID)
	if err != nil {
		var mm *symbol.MismatchError
		if errors.As(err, &mm) {
			l.p.Warnings = append(l.p.Warnings, err.Error())
		} else {
			l.p.Warnings = append(l.p.Warnings, fmt.Sprintf("cannot symbolize %s: %v; its frames are shown as %s+0xoffset", m.path, err, filepath.Base(m.path)))
		}
		o = nil
	}
	l.objs[key] = o
	return o
}
