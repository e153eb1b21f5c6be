// Package loader builds the profile model from recordings: it reads them
// through package recording, names frames through package symbol (ELF
// symbols, DWARF lines and inlined functions, kernel symbols, the vDSO and
// objects the recording carries), and merges them into one profile.Profile.
// It also answers the questions about a recording that need no symbols
// (Executables, ObjectLoads, RecordedObjects). Analyses take the model;
// only commands load.
package loader

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/culprit-dev/culprit/internal/chunked"
	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/symbol"
)

// Options configure Load.
type Options struct {
	Symbolizer *symbol.Symbolizer // nil: a default one
	// Progress, when set, is called with the number of records read so far.
	Progress func(records int)
	// Merge keeps one Sample per distinct stack, process, thread and event
	// (see Profile.Merged), so that the memory a profile takes grows
	// with its distinct stacks rather than with its samples. For views
	// that do not need time order: flat profiles, callers, trees,
	// listings, exports of totals. A recording with a thread renamed while
	// samples of one merged group were taken is read without merging, so
	// that names as at each sample stay right.
	Merge bool
	// Stream reads the samples twice rather than holding them, for views
	// that need them in time order: Load reads everything but keeps of
	// each sample only what orders the distinct stacks, and the profile's
	// samples (Profile.EachSample) are read again from the files, which
	// stay open, in the order Load would have sorted them into (see
	// stream.go). Profile.Samples is then empty. Values likewise: Load
	// keeps their count by source and the frames of their PCs, and
	// Profile.EachValue reads them again; Profile.Values is empty. Merge
	// takes precedence.
	Stream bool
	// StreamValues reads the values as Stream does (counted by source on
	// the first reading, read again by Profile.EachValue), the samples
	// held as without it: for views that keep the samples and go through
	// the values on request only. Stream implies it; Merge takes
	// precedence.
	StreamValues bool
	// NoSamples reads the calls, probes, threads and values and leaves
	// the samples out, their stacks unresolved (no object is opened for
	// them): for analyses of a trace's calls alone, which would otherwise
	// pay for symbolizing every sampled object.
	NoSamples bool
	// Objects, when set, names the objects whose symbols are read: the
	// frames of any other are shown as object+offset, without a warning,
	// and its file (and debug file) is never opened. For analyses that
	// name the functions of some objects only (trace's hot functions are
	// the executable's): the DWARF of a library a sample fell in can cost
	// a second of CPU to read.
	Objects func(path string) bool
}

// mapping is an executable mapping known from the recording.
type mapping struct {
	start, end, pgoff uint64
	path              string
	buildID           []byte
	obj               int32 // 1 + index of path and build-id in loader.objKeys
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

// stackRec is a Stack record: its kernel addresses, then its user ones,
// each as the zigzag-encoded uvarint of its difference from the one
// before, at off in block blk-1 of loader.addrBlocks, size bytes; a
// third of what the addresses take as uint64s, as most differences are
// small. blk is 0 for a stack id not recorded.
type stackRec struct {
	blk, off, size, nkern int32
}

// stackRecs are the Stack records of a file by id: in a slice for the small
// dense ids writers give, in a map for others.
type stackRecs struct {
	dense []stackRec // by id
	byID  map[uint64]stackRec
}

func (r *stackRecs) put(id uint64, st stackRec, records uint64) {
	if id > records+1024 {
		r.byID[id] = st
		return
	}
	for uint64(len(r.dense)) <= id {
		r.dense = append(r.dense, stackRec{})
	}
	r.dense[id] = st
}

func (r *stackRecs) get(id uint64) (stackRec, bool) {
	if id < uint64(len(r.dense)) {
		st := r.dense[id]
		return st, st.blk != 0
	}
	st, ok := r.byID[id]
	return st, ok
}

type stackKey struct {
	file  int
	space *space
	stack uint64
}

// mergeEntry is a merged sample while reading: the counters and what
// tells it apart from the other entries of its stack id, in one cache line,
// as each sample read touches one entry.
type mergeEntry struct {
	first, last   uint64 // times of the first and last sample
	period, arg   uint64
	pid, tid, cpu uint32 // cpu: the first sample's
	more          uint32 // samples merged into the first one
	next          int32  // 1 + the next entry of the same stack id (loader.heads)
	space         int32  // the id of the space version it was sampled in
	stack         int32  // index of its stack key in loader.keys
	event         recording.Event
}

// mergeKey is what samples merged by Options.Merge share: the stack
// (its id and the space version it was sampled in, which tell the file
// apart too), the task and the event (with its argument); not the CPU,
// which no view of totals looks at.
type mergeKey struct {
	stack    uint64
	space    int
	pid, tid uint32
	event    recording.Event
	arg      uint64
}

func (k *mergeKey) hash() uint64 {
	h := k.stack*0x9e3779b97f4a7c15 ^ uint64(k.space)*0xc2b2ae3d27d4eb4f
	h ^= (uint64(k.pid)<<32 | uint64(k.tid)) * 0x165667b19e3779f9
	h ^= uint64(k.event) * 0xd6e8feb86659fd93
	h ^= k.arg * 0x27d4eb2f165667c5
	h ^= h >> 29
	h *= 0xbf58476d1ce4e5b9
	return h ^ h>>32
}

// mergeTable finds the merged sample of a key: an open-addressing hash
// table, as the lookup is made once per sample read and a Go map with this
// key costs twice as much. A slot holds the upper half of its key's hash
// and 1 + the key's index in keys (0: empty), so that a probe rarely reads
// a key that does not match.
type mergeTable struct {
	slots []uint64
	keys  []mergeKey
}

// find returns the index of k's entry, or adds k as entry next and returns
// next and false.
func (t *mergeTable) find(k *mergeKey, next int32) (int32, bool) {
	if 4*(len(t.keys)+1) > 3*len(t.slots) {
		t.grow()
	}
	h := k.hash()
	tag := h &^ (1<<32 - 1)
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		e := t.slots[i]
		if e == 0 {
			t.slots[i] = tag | uint64(next+1)
			t.keys = append(t.keys, *k)
			return next, false
		}
		if e&^(1<<32-1) != tag {
			continue
		}
		j := int32(e) - 1
		if o := &t.keys[j]; o.stack == k.stack && o.space == k.space && o.pid == k.pid && o.tid == k.tid &&
			o.event == k.event && o.arg == k.arg {
			return j, true
		}
	}
}

func (t *mergeTable) grow() {
	t.slots = make([]uint64, max(1024, 2*len(t.slots)))
	mask := uint64(len(t.slots) - 1)
	for j := range t.keys {
		h := t.keys[j].hash()
		i := h & mask
		for t.slots[i] != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = h&^(1<<32-1) | uint64(j+1)
	}
}

// spaceKey is the key of an address of a space version in loader.saddrs:
// the version's id in the top bits, the address below them; ok is false
// for an id or address too large for that.
func spaceKey(sp *space, addr uint64) (k uint64, ok bool) {
	if addr >= 1<<48 || sp.id >= 1<<15 {
		return 0, false
	}
	return uint64(sp.id)<<48 | addr, true
}

// userKey is the key of a user address in loader.uaddrs: the object
// (mapping.obj) in the top bits, the offset in the object below them; ok
// is false for an object or offset too large for that, whose frames are
// then not cached.
func userKey(obj int32, off uint64) (k uint64, ok bool) {
	if off >= 1<<40 || obj >= 1<<23 {
		return 0, false
	}
	return uint64(obj)<<40 | off, true
}

// loader builds a Profile.
type loader struct {
	p          *profile.Profile
	sym        *symbol.Symbolizer
	spaces     map[uint32]*space
	nextID     int
	stacks     []*stackRecs // per file: Stack records by id
	addrBlocks [][]byte     // the addresses of Stack records (stackRec)
	arena      []int32      // where Profile.Stacks are carved from
	scratch    []int32      // the stack being symbolized
	ksyms      []symbol.KernelSymbol
	ktab       *symbol.KernelTable
	vdso       map[string]*symbol.Object
	objs       map[string]*symbol.Object
	only       func(path string) bool // Options.Objects
	objByID    []*symbol.Object       // by mapping.obj: what object answered, when objKnown
	objKnown   []bool
	tails      map[[2]uint64][]int32 // tailFrames' answers (see there)
	objIDs     map[string]int32      // path and build-id → mapping.obj
	objErr     map[string]bool
	frames     map[profile.Frame]int32
	kaddrs     map[uint64]int32   // kernel address → its frame
	uaddrs     map[uint64][]int32 // userKey → its frames, inlined ones first
	saddrs     map[uint64][]int32 // spaceKey → the frames of the address in the space version
	parts      map[int32]bool     // frames of the outlined part of a function, not inlined (stack)
	// Samples are read with Stack the index of their stackKey in keys
	// (keyIdx), resolved to frames once sorted (resolveStacks).
	keyIdx  map[stackKey]int32
	keys    []stackKey
	chunks  chunked.List[profile.Sample] // samples as read (not merged)
	values  chunked.List[profile.Value]  // values as read
	merge   bool
	merged  mergeTable   // entry of each key with a large stack id (Merge)
	heads   []int32      // per stack id of the file: 1 + its first entry (find)
	entries []mergeEntry // merged samples while reading (Merge)
	sink    int32        // what addSamples loads ahead, kept so that the loads are made
	noSyms  map[string]bool
	cut     int                             // samples recorded Truncated
	cutOut  int                             // of cut, those whose outermost user frame is in no object file
	syms    map[uint32][]recording.Symbol   // Symbol records by pid (0: all), sorted after reading
	vsrc    map[recording.ValueSource]int32 // value source (ID cleared) → index
	vpcs    valuePCs                        // value PCs symbolized so far (lines.go)
	names   profile.Naming                  // comm and fork records, resolved at the end
	probes  map[probeKey]int32              // traced functions merged across files (calls.go)
	stream  *streamState                    // Options.Stream (stream.go)
	rec     uint64                          // the number of the record being added, in its file
}

// loadGCPercent is the garbage collector's target while Load runs (see
// lowerGC).
const loadGCPercent = 50

// lowerGC lowers the garbage collector's target to loadGCPercent (unless
// it is lower, or off) and returns what ends it: once no Load runs any
// more, it restores the target and collects once. Most of what Load holds
// at its peak is its own: the symbolizer's tables of the objects it read
// (libc's DWARF, say), read-ahead batches, stack addresses, which it
// drops when it returns. Under the default target the heap may grow to
// twice that peak before a collection, and then the views grow it further
// over the loader's garbage; the lower target while loading and one
// collection when it ends keep the process's peak near 1.5× the loading's
// live heap, for a few more collections of a heap that is small. Loads
// may run at once (culprit view): the first saves the target, the last
// restores it. Only streamed loads lower it: their readers' targets are
// memory against perf script's, while a report's is time against perf
// report's, and the extra collections cost a 1M-sample report about a
// fifth of its time.
func lowerGC() func() {
	gcLoads.Lock()
	defer gcLoads.Unlock()
	if gcLoads.n == 0 {
		gcLoads.old = debug.SetGCPercent(loadGCPercent)
		if gcLoads.old < loadGCPercent { // off (−1) or lower: keep it
			debug.SetGCPercent(gcLoads.old)
		}
	}
	gcLoads.n++
	return func() {
		gcLoads.Lock()
		gcLoads.n--
		last := gcLoads.n == 0
		if last {
			debug.SetGCPercent(gcLoads.old)
		}
		gcLoads.Unlock()
		if last {
			runtime.GC()
		}
	}
}

// gcLoads counts the Loads running and the GC target before the first.
var gcLoads struct {
	sync.Mutex
	n   int
	old int
}

// Load reads recordings and builds a symbolized Profile. Damaged or
// unfinished files are read up to their last complete record; what was
// salvaged is described in Profile.Sources.
func Load(paths []string, o Options) (*profile.Profile, error) {
	if len(paths) == 0 {
		return nil, errors.New("no recording given")
	}
	if o.Stream {
		defer lowerGC()()
	}
	l := &loader{
		p:      &profile.Profile{Threads: map[uint32]profile.Thread{}},
		sym:    o.Symbolizer,
		vdso:   map[string]*symbol.Object{},
		objs:   map[string]*symbol.Object{},
		tails:  map[[2]uint64][]int32{},
		objErr: map[string]bool{},
		objIDs: map[string]int32{},
		frames: map[profile.Frame]int32{},
		kaddrs: map[uint64]int32{},
		uaddrs: map[uint64][]int32{},
		parts:  map[int32]bool{},
		saddrs: map[uint64][]int32{},
		keyIdx: map[stackKey]int32{},
		merge:  o.Merge || o.NoSamples,
		only:   o.Objects,
		noSyms: map[string]bool{},
		syms:   map[uint32][]recording.Symbol{},
		vsrc:   map[recording.ValueSource]int32{},
		probes: map[probeKey]int32{},
	}
	if (o.Stream || o.StreamValues) && !l.merge && regularFiles(paths) {
		l.stream = &streamState{samples: o.Stream, keyIdx: map[stackKey]int32{}, events: map[recording.Event]int{}}
	}
	if l.sym == nil {
		l.sym = symbol.New(symbol.Options{})
	}
	samples, calls := recorded(paths)
	if !l.merge && (l.stream == nil || !l.stream.samples) {
		l.chunks.Reserve(samples)
	}
	if calls > 0 {
		l.p.Calls = make([]profile.Call, 0, calls)
	}
	records := 0
	for i, path := range paths {
		if err := l.readFile(i, path, &records, o.Progress); err != nil {
			return nil, err
		}
	}
	l.names.Resolve(l.p)
	l.ktab = symbol.NewKernelTable(l.ksyms)
	for _, list := range l.syms {
		sort.Slice(list, func(i, j int) bool { return list[i].Addr < list[j].Addr })
	}
	streamed := l.stream != nil && l.stream.samples
	if streamed {
		l.endStream()
	} else if o.NoSamples {
		l.p.Samples, l.entries = []profile.Sample{}, nil
	} else if l.merge {
		if l.namesChangeWithin() {
			o.Merge = false
			return Load(paths, o)
		}
		slices.SortStableFunc(l.entries, func(a, b mergeEntry) int { return cmp.Compare(a.first, b.first) })
		l.p.Samples = make([]profile.Sample, len(l.entries))
		lasts := make([]uint64, len(l.entries))
		for i, e := range l.entries {
			l.p.Samples[i] = profile.Sample{Time: e.first, PID: e.pid, TID: e.tid, CPU: e.cpu, More: e.more,
				Period: e.period, Stack: e.stack, Event: e.event, Arg: e.arg}
			lasts[i] = e.last
		}
		l.p.SetMerged(lasts)
		l.entries = nil
	} else {
		l.p.Samples = l.chunks.Flat()
		if l.p.Samples == nil {
			l.p.Samples = []profile.Sample{}
		}
	}
	l.p.Values = l.values.Flat()
	if l.stream != nil {
		l.endValues()
	}
	byTime := func(a, b profile.Sample) int { return cmp.Compare(a.Time, b.Time) }
	if !streamed && !slices.IsSortedFunc(l.p.Samples, byTime) {
		slices.SortStableFunc(l.p.Samples, byTime)
	}
	valueTime := func(a, b profile.Value) int { return cmp.Compare(a.Time, b.Time) }
	if !slices.IsSortedFunc(l.p.Values, valueTime) {
		slices.SortStableFunc(l.p.Values, valueTime)
	}
	if !streamed {
		l.resolveStacks()
	}
	slices.SortStableFunc(l.p.Calls, func(a, b profile.Call) int { return cmp.Compare(a.Start, b.Start) })
	hasSamples := len(l.p.Samples) > 0
	if hasSamples {
		l.p.StartTime = l.p.Samples[0].Time
	}
	if l.stream != nil && l.stream.count > 0 {
		l.p.StartTime, hasSamples = l.stream.minTime, true
	}
	if len(l.p.Calls) > 0 && (!hasSamples || l.p.Calls[0].Start < l.p.StartTime) {
		l.p.StartTime = l.p.Calls[0].Start
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

// endsInObject reports whether the outermost user address of stack id of
// file idx lies in a mapping of an object file in sp: else the unwind
// stopped in code no file describes (a uprobe's trampoline or
// single-step slot, [uprobes]; JIT code), which no larger stack copy
// would have unwound further.
func (l *loader) endsInObject(idx int, sp *space, id uint64) bool {
	st, ok := l.stacks[idx].get(id)
	if !ok || st.blk == 0 {
		return true
	}
	b := l.addrBlocks[st.blk-1][st.off : st.off+st.size]
	var a uint64
	n := int32(0)
	for ; len(b) > 0; n++ {
		z, k := binary.Uvarint(b)
		b = b[k:]
		a += uint64(int64(z>>1) ^ -int64(z&1))
	}
	if n <= st.nkern {
		return true // no user frames
	}
	m, ok := sp.find(a - 1)
	return ok && strings.HasPrefix(m.path, "/")
}

// cutWarning says, when more than a tenth of the samples lost callers (the
// recorder marks them Truncated), that callers' totals are too low and how
// to record complete stacks.
func (l *loader) cutWarning() string {
	n := l.p.SampleCount()
	if n == 0 || l.cut*10 <= n {
		return ""
	}
	fp, dwarf := false, false
	for _, m := range l.p.Metas {
		fp = fp || m.CallGraph == "fp"
		dwarf = dwarf || m.CallGraph == "dwarf"
	}
	switch {
	case fp:
		return fmt.Sprintf("%d of %d samples lost callers in code without frame pointers (libc, or -O2 code), so callers' totals are too low: record with --call-graph dwarf for complete stacks", l.cut, n)
	case dwarf && (l.cut-l.cutOut)*10 > n:
		return fmt.Sprintf("%d of %d samples have user stacks not unwound to their outermost frame, so callers' totals are too low: a larger --stack-size may help", l.cut-l.cutOut, n)
	case dwarf:
		return fmt.Sprintf("%d of %d samples have user stacks not unwound to their outermost frame, so callers' totals are too low: %d stopped in code no object file describes (probes' trampolines, JIT code), which no larger --stack-size unwinds", l.cut, n, l.cutOut)
	}
	// A trace's CPU samples (no call graph in its Meta, no --stack-size to
	// give): their stacks lost callers to the probes' return trampolines,
	// which the trace's own warning explains, or to frameless code.
	return fmt.Sprintf("%d of %d samples have user stacks not unwound to their outermost frame, so callers' totals are too low", l.cut, n)
}

func (l *loader) readFile(idx int, path string, records *int, progress func(int)) error {
	r, err := l.open(path)
	if err != nil {
		return err
	}
	defer r.Close()
	r.Reuse()
	l.spaces = map[uint32]*space{}
	l.heads = l.heads[:0]
	stacks := &stackRecs{byID: map[uint64]stackRec{}}
	l.stacks = append(l.stacks, stacks)
	sources := map[uint32]int32{} // this file's ValueSource IDs → index
	probes := map[uint32]int32{}  // this file's Probe IDs → index
	src := profile.Source{Path: path}
	batches, free := make(chan []item, 2), make(chan []item, 3)
	for range cap(free) {
		free <- make([]item, 0, itemBatch)
	}
	var rerr error
	var vs *valueSkip
	if l.stream != nil {
		vs = &valueSkip{}
	}
	go func() {
		defer close(batches)
		rerr = l.readAhead(r, stacks, vs, batches, free)
	}()
	base := *records
	for b := range batches {
		for i := 0; i < len(b); {
			if b[i].rec == nil && b[i].tally == nil { // a run of samples
				j := i + 1
				for j < len(b) && b[j].rec == nil && b[j].tally == nil && j-i < sampleBatch {
					j++
				}
				l.addSamples(idx, &src, b[i:j])
				i = j
				continue
			}
			if b[i].tally != nil {
				l.addTally(b[i].tally, sources)
			} else {
				l.rec = b[i].records
				l.addRecord(&src, b[i].rec, sources, probes)
			}
			i++
		}
		if len(b) > 0 {
			n := base + int(b[len(b)-1].records)
			if progress != nil && n/100000 > *records/100000 {
				progress(n)
			}
			*records = n
		}
		free <- b[:0]
	}
	if rerr != nil {
		return fmt.Errorf("reading %s: %w", path, rerr)
	}
	if l.stream != nil {
		f := l.stream.files[idx]
		f.records = uint64(*records - base)
		f.values, f.vlate, f.runs, f.regions = vs.values, vs.late, vs.runs, vs.regions
		l.stream.values += int(vs.values)
	}
	src.Salvage = r.Salvage().String()
	l.p.Sources = append(l.p.Sources, src)
	return nil
}

// recorded is how many samples and traced calls the End records of the
// recordings at paths say were recorded (0 when one has none: cut short,
// still being written, not a regular file), each at most what its size
// could hold. Load holds that many samples at once, in one slice it hands
// on (chunked.List's Reserve) rather than in chunks copied into one at
// the end: the copy and the page faults of the second copy are most of
// what holding a million samples costs; and it makes the calls' slice
// that long at once, where growing it copied every call several times
// (a trace's end loads its own recording for the build's statistics).
// It is a hint: a file that holds more or fewer than its End says reads
// the same.
func recorded(paths []string) (samples, calls int) {
	n, c := 0, 0
	for _, path := range paths {
		// Not opened unless regular: opening a pipe takes its writer,
		// whose data closing it would lose before Load reads it.
		fi, err := os.Stat(path)
		if err != nil || !fi.Mode().IsRegular() {
			return 0, 0
		}
		f, err := os.Open(path)
		if err != nil {
			return 0, 0
		}
		end, ok := recording.TailEnd(f, fi.Size())
		f.Close()
		if !ok {
			return 0, 0
		}
		// A Sample or Call frame takes at least its kind, length and CRC
		// (its zero fields at the end are left out).
		n += int(min(end.Samples, uint64(fi.Size())/(1+1+4)))
		c += int(min(end.Calls, uint64(fi.Size())/(1+1+4)))
	}
	return n, c
}

// itemBatch is how many records readAhead sends at once.
const itemBatch = 1024

// item is a record read by readAhead: a sample (rec and tally nil), a
// record other than a sample or stack, or a tally of skipped values, with
// the number of records of its file read up to it.
type item struct {
	sample  recording.Sample
	rec     recording.Record
	tally   *valueTally
	records uint64
}

// readAhead reads the records of r, on its own goroutine while the
// records read before it are added: it stores Stack records in stacks
// (which nothing else touches while reading) and sends the others, in
// order, in batches taken from free; with vs, it keeps Value records to
// itself (see valueSkip). It returns the read error, if any.
func (l *loader) readAhead(r *recording.Reader, stacks *stackRecs, vs *valueSkip, batches chan<- []item, free <-chan []item) error {
	b := <-free
	var n uint64
	send := func(it item) {
		b = append(b, it)
		if len(b) == cap(b) {
			batches <- b
			b = <-free
		}
	}
	end := func(err error) error {
		if vs != nil {
			if t := vs.flush(); t != nil {
				send(item{tally: t, records: n})
			}
		}
		batches <- b
		return err
	}
	if vs != nil {
		r.SkipValues(vs.indexed)
	}
	for {
		at := r.Offset()
		rec, err := r.Next()
		if err == io.EOF {
			return end(nil)
		}
		if err != nil {
			return end(err)
		}
		n++
		switch v := rec.(type) {
		case *recording.ValueIndex:
			vs.addIndex(v, n)
			vs.runs = append(vs.runs, n)
			vs.noteRun(v, r.Offset(), n)
			n += v.Count - 1
			continue
		case *recording.Stack:
			stacks.put(v.ID, l.putAddrs(v.Kernel, v.User), n)
			continue
		case *recording.Sample:
			if vs != nil && vs.newPID(v.PID) {
				if t := vs.flush(); t != nil {
					send(item{tally: t, records: n - 1})
				}
			}
			send(item{sample: *v, records: n})
		case *recording.Value:
			if vs != nil {
				vs.add(v, n)
				vs.noteValue(v.Time, at, r.Offset(), n)
				continue
			}
			x := *v // the reader reuses v
			send(item{rec: &x, records: n})
		default:
			if vs != nil {
				if s, ok := v.(*recording.ValueSource); ok {
					vs.define(s.ID)
				}
				if t := vs.flush(); t != nil {
					send(item{tally: t, records: n - 1})
				}
			}
			send(item{rec: rec, records: n})
		}
	}
}

// addRecord adds a record other than a Sample or a Stack, of a file whose
// value sources and probes map to the loader's in sources and probes.
func (l *loader) addRecord(src *profile.Source, rec recording.Record, sources, probes map[uint32]int32) {
	switch v := rec.(type) {
	case *recording.Meta:
		l.p.Metas = append(l.p.Metas, *v)
	case *recording.Mmap:
		l.addMapping(v)
		l.addExecSpan(v.PID, [2]uint64{v.Start, v.Start + v.Len})
	case *recording.Comm:
		if v.Exec && v.PID == v.TID {
			l.setSpace(v.PID, l.newSpace(nil))
		}
		l.p.Threads[v.TID] = profile.Thread{PID: v.PID, TID: v.TID, Comm: v.Name}
		l.names.Comm(v.Time, v.PID, v.TID, v.Name)
	case *recording.Task:
		if !v.Exit && v.PID != v.PPID {
			if parent, ok := l.spaces[v.PPID]; ok {
				l.setSpace(v.PID, parent)
			}
			for _, s := range l.p.ExecSpans[v.PPID] {
				l.addExecSpan(v.PID, s)
			}
		}
		if !v.Exit {
			l.names.Fork(*v)
			if _, ok := l.p.Threads[v.TID]; !ok {
				// Named as its parent is at the fork.
				l.p.Threads[v.TID] = profile.Thread{PID: v.PID, TID: v.TID, Comm: l.p.Threads[v.PTID].Comm}
			}
		}
	case *recording.Lost:
		if v.Reason == recording.LostThrottled {
			l.p.Throttled += v.Count
		} else {
			l.p.Lost += v.Count
		}
		if v.Reason == recording.LostRing && v.Since != 0 && v.Since <= v.Time {
			l.p.Gaps = append(l.p.Gaps, profile.Gap{From: v.Since, To: v.Time, CPU: v.CPU})
		}
		if (v.Reason == recording.LostCalls || v.Reason == recording.LostDepth) && v.Since != 0 && v.Since <= v.Time {
			l.p.CallsLost = append(l.p.CallsLost, [2]uint64{v.Since, v.Time})
		}
	case *recording.KernelSymbol:
		l.ksyms = append(l.ksyms, symbol.KernelSymbol{Addr: v.Addr, Size: v.Size, Name: v.Name, Module: v.Module})
	case *recording.Object:
		if o, err := l.sym.ObjectFromBytes(v.Name, v.Data); err == nil {
			l.vdso[v.Name] = o
			l.objByID, l.objKnown = nil, nil // object's answers for v.Name change
			clear(l.tails)
		}
	case *recording.Symbol:
		l.syms[v.PID] = append(l.syms[v.PID], *v)
	case *recording.ValueSource:
		if idx, ok := sources[v.ID]; ok && v.Enum != "" {
			// The same source again, now with its enumerators.
			old := l.p.ValueSources[idx]
			if old.Enum == "" {
				old.Enum = v.Enum
				if o, ok := l.vsrc[old]; !ok {
					delete(l.vsrc, l.p.ValueSources[idx])
					l.p.ValueSources[idx] = old
					l.vsrc[old] = idx
				} else {
					l.setSource(sources, v.ID, o)
				}
			}
			return
		}
		key := *v
		key.ID = 0
		idx, ok := l.vsrc[key]
		if !ok {
			idx = int32(len(l.p.ValueSources))
			l.p.ValueSources = append(l.p.ValueSources, key)
			l.vsrc[key] = idx
		}
		l.setSource(sources, v.ID, idx)
	case *recording.Value:
		idx, ok := sources[v.Source]
		if !ok {
			return // its definition was lost to damage
		}
		val := profile.Value{Time: v.Time, PID: v.PID, TID: v.TID, Source: idx,
			Depth: v.Depth, Type: v.Type, PC: v.PC, Bits: v.Bits}
		val.SetFrame(l.valueFrame(v.PID, v.PC, v.Depth))
		l.values.Add(val)
	case *recording.Probe:
		probes[v.ID] = l.addProbe(v)
	case *recording.Call:
		l.addCall(v, probes)
	case *recording.ProbesOff:
		l.p.ProbesOff = append(l.p.ProbesOff, [2]uint64{v.Start, v.End})
	case *recording.SyscallWindow:
		l.p.SyscallWindows = append(l.p.SyscallWindows, *v)
	case *recording.End:
		src.Complete = true
	}
}

func (l *loader) newSpace(maps []mapping) *space {
	l.nextID++
	return &space{id: l.nextID, maps: maps}
}

// addMapping makes a new version of the process's space with m added.
func (l *loader) addMapping(v *recording.Mmap) {
	m := mapping{start: v.Start, end: v.Start + v.Len, pgoff: v.Pgoff, path: v.Path, buildID: v.BuildID}
	key := v.Path + "\x00" + string(v.BuildID)
	if m.obj = l.objIDs[key]; m.obj == 0 {
		m.obj = int32(len(l.objIDs) + 1)
		l.objIDs[key] = m.obj
	}
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
	l.setSpace(v.PID, l.newSpace(out))
}

// addExecSpan notes that process pid had an executable mapping at s
// (Profile.ExecSpans), once.
func (l *loader) addExecSpan(pid uint32, s [2]uint64) {
	if l.p.ExecSpans == nil {
		l.p.ExecSpans = map[uint32][][2]uint64{}
	}
	if !slices.Contains(l.p.ExecSpans[pid], s) {
		l.p.ExecSpans[pid] = append(l.p.ExecSpans[pid], s)
	}
}

// setSpace makes sp the space of process pid from the record being added
// on, noting it for a second reading of the samples (Options.Stream).
func (l *loader) setSpace(pid uint32, sp *space) {
	l.spaces[pid] = sp
	if l.stream != nil {
		f := l.stream.files[len(l.stream.files)-1]
		f.spaces = append(f.spaces, spaceSet{rec: l.rec, pid: pid, sp: sp})
	}
}

// sampleBatch is how many consecutive samples addSamples takes at once.
const sampleBatch = 64

// addSamples adds the samples of batch, read from file idx. When merging,
// it first loads the merged entry each sample's stack id leads to, for
// all samples before adding any: the loads miss the cache (a 1M-sample
// recording has some 100k entries, spread over megabytes), and made one
// after the other they overlap, where the lookups of one sample at a time
// would wait for each in turn.
func (l *loader) addSamples(idx int, src *profile.Source, batch []item) {
	if l.merge {
		var sink int32
		for i := range batch {
			if id := batch[i].sample.StackID; id < uint64(len(l.heads)) {
				sink += l.heads[id]
			}
		}
		for i := range batch {
			if id := batch[i].sample.StackID; id < uint64(len(l.heads)) {
				if e := l.heads[id]; e > 0 && int(e) <= len(l.entries) {
					sink += l.entries[e-1].space
				}
			}
		}
		l.sink = sink
	}
	for i := range batch {
		v := &batch[i].sample
		sp := l.spaces[v.PID]
		if sp == nil {
			l.rec = batch[i].records
			sp = l.newSpace(nil)
			l.setSpace(v.PID, sp)
		}
		l.addSample(v, stackKey{file: idx, space: sp, stack: v.StackID}, batch[i].records)
		src.Samples++
		if v.Truncated {
			l.cut++
			if !l.endsInObject(idx, sp, v.StackID) {
				l.cutOut++
			}
		}
		if _, ok := l.p.Threads[v.TID]; !ok {
			l.p.Threads[v.TID] = profile.Thread{PID: v.PID, TID: v.TID}
		}
	}
}

// addSample adds the sample v of stack k, read when records records of its
// file were, merged with those of its group when merging.
func (l *loader) addSample(v *recording.Sample, k stackKey, records uint64) {
	s := profile.Sample{Time: v.Time, PID: v.PID, TID: v.TID, CPU: v.CPU, Period: v.Period, Event: v.Event, Arg: v.Arg}
	if !l.merge {
		s.Arg = profile.SwitchArg(v)
		l.p.NoteSwitchAway(v)
	}
	if l.merge {
		if e, ok := l.find(v, k, records); ok {
			e.more++
			e.period += v.Period
			e.first = min(e.first, v.Time)
			e.last = max(e.last, v.Time)
		}
		return
	}
	if l.stream != nil && l.stream.samples {
		f := l.stream.files[k.file]
		s.Stack = l.stream.key(k.file, f, k.space, k.stack, k.stack <= records+1024, true)
		l.streamSample(&s)
		return
	}
	s.Stack = l.keyIndex(k)
	l.chunks.Add(s)
}

// find returns the merged entry of v (stack k), or adds one for it and
// returns false. Stack ids are small and dense in recordings (the writer
// counts them from 1), so a sample's id indexes l.heads, the first of the
// chain of entries of the id in this file; an id too large for that goes
// to the hash table.
func (l *loader) find(v *recording.Sample, k stackKey, records uint64) (*mergeEntry, bool) {
	next := int32(len(l.entries))
	space := int32(k.space.id)
	id := v.StackID
	dense := id <= records+1024
	key := int32(-1) // the index of k in l.keys, when an entry of the chain has it
	if dense {
		if int(id) >= len(l.heads) {
			l.heads = append(l.heads, make([]int32, int(id)+1-len(l.heads)+1024)...)
		}
		for e := l.heads[id]; e != 0; {
			m := &l.entries[e-1]
			if m.space == space {
				if m.pid == v.PID && m.tid == v.TID && m.event == v.Event && m.arg == v.Arg {
					return m, true
				}
				key = m.stack
			}
			e = m.next
		}
	} else {
		mk := mergeKey{stack: k.stack, space: k.space.id, pid: v.PID, tid: v.TID, event: v.Event, arg: v.Arg}
		if i, ok := l.merged.find(&mk, next); ok {
			return &l.entries[i], true
		}
	}
	if key < 0 {
		if dense && len(l.keyIdx) == 0 {
			// No entry of the chain has k's space, and keys are only
			// mapped for ids that were not dense (which stay dense once
			// they are): k is new.
			key = int32(len(l.keys))
			l.keys = append(l.keys, k)
		} else {
			key = l.keyIndex(k)
		}
	}
	l.entries = append(l.entries, mergeEntry{first: v.Time, last: v.Time, period: v.Period, arg: v.Arg,
		pid: v.PID, tid: v.TID, cpu: v.CPU, space: space, stack: key, event: v.Event})
	if dense {
		l.entries[next].next = l.heads[id]
		l.heads[id] = next + 1
	}
	return &l.entries[next], false
}

// keyIndex is the index of stack key k in l.keys.
func (l *loader) keyIndex(k stackKey) int32 {
	i, ok := l.keyIdx[k]
	if !ok {
		i = int32(len(l.keys))
		l.keys = append(l.keys, k)
		l.keyIdx[k] = i
	}
	return i
}

// namesChangeWithin reports whether a thread or its process was renamed
// between the first and the last sample of a merged sample, which then
// does not have one name.
func (l *loader) namesChangeWithin() bool {
	for _, e := range l.entries {
		if l.p.RenamedBetween(e.tid, e.first, e.last) || l.p.RenamedBetween(e.pid, e.first, e.last) {
			return true
		}
	}
	return false
}

// resolveStacks replaces the samples' stack keys (sorted by time) by
// indexes in Profile.Stacks, symbolizing each distinct key once, in the
// order of the first sample that has it, with that sample's process.
func (l *loader) resolveStacks() {
	l.keyIdx, l.merged, l.heads = nil, mergeTable{}, nil // not needed any more: free them before symbolizing
	final := make([]int32, len(l.keys))
	l.p.Stacks = slices.Grow(l.p.Stacks, len(l.keys))
	for i := range final {
		final[i] = -1
	}
	for i := range l.p.Samples {
		s := &l.p.Samples[i]
		k := s.Stack
		if final[k] < 0 {
			final[k] = l.stack(l.keys[k], s.PID)
		}
		s.Stack = final[k]
	}
	l.keys, l.stacks, l.addrBlocks = nil, nil, nil
}

// stack symbolizes the stack of key k, sampled in process pid, into a new
// entry of Profile.Stacks.
func (l *loader) stack(k stackKey, pid uint32) int32 {
	frames := l.scratch[:0]
	if st, ok := l.stacks[k.file].get(k.stack); ok {
		b := l.addrBlocks[st.blk-1][st.off : st.off+st.size]
		var a, inner uint64
		for i := int32(0); len(b) > 0; i++ {
			z, n := binary.Uvarint(b)
			b = b[n:]
			a += uint64(int64(z>>1) ^ -int64(z&1))
			if i < st.nkern {
				frames = append(frames, l.kernelFrame(a, i > 0))
			} else {
				if i > st.nkern {
					frames = append(frames, l.tailFrames(k.space, a, inner, i > st.nkern+1)...)
				}
				ids := l.userFrames(pid, k.space, a, i > st.nkern)
				if len(ids) > 0 && len(frames) > 0 && l.partOf(frames[len(frames)-1], ids[0]) {
					ids = ids[1:]
				}
				frames = append(frames, ids...)
				inner = a
			}
		}
	}
	l.scratch = frames
	idx := int32(len(l.p.Stacks))
	l.p.Stacks = append(l.p.Stacks, l.carve(frames))
	return idx
}

// partOf reports whether frame callee runs the outlined part of frame
// caller's function, so that the two are one call of it. GCC's partial
// inlining splits a function f into a head (often a test and an early
// return), kept in f and inlined into f's callers, and the rest, outlined
// into f.part.N, which the head calls: f calling f.part.N, or a caller
// with f's head inlined calling it, is one call of f, not a recursion.
// The caller's frame is then left out of the stack and the part's frame,
// which holds the time and the line, stays: the caller's f sits at the
// call of the part, which is no line of f's source a user wrote. A frame
// that is itself a part's (f.part.N calling f.part.N directly) is a real
// recursion and stays.
func (l *loader) partOf(callee, caller int32) bool {
	if !l.parts[callee] || l.parts[caller] {
		return false
	}
	fc, fr := &l.p.Frames[callee], &l.p.Frames[caller]
	return fc.Function != "" && fc.Function == fr.Function && fc.Object == fr.Object
}

// addrBlock is the size of a block of loader.addrBlocks.
const addrBlock = 1 << 20

// putAddrs stores the addresses kern and then user of a Stack record in
// l.addrBlocks.
func (l *loader) putAddrs(kern, user []uint64) stackRec {
	need := binary.MaxVarintLen64 * (len(kern) + len(user))
	n := len(l.addrBlocks)
	if n == 0 || cap(l.addrBlocks[n-1])-len(l.addrBlocks[n-1]) < need {
		l.addrBlocks = append(l.addrBlocks, make([]byte, 0, max(addrBlock, need)))
		n++
	}
	b := l.addrBlocks[n-1]
	off := len(b)
	var prev uint64
	for _, list := range [2][]uint64{kern, user} {
		for _, a := range list {
			d := int64(a - prev)
			b = binary.AppendUvarint(b, uint64(d<<1)^uint64(d>>63))
			prev = a
		}
	}
	l.addrBlocks[n-1] = b
	return stackRec{blk: int32(n), off: int32(off), size: int32(len(b) - off), nkern: int32(len(kern))}
}

// arenaBlock is how many frame indexes a block of loader.arena holds.
const arenaBlock = 1 << 16

// carve returns a copy of stack f carved from l.arena: stacks are stored in
// blocks rather than allocated one by one.
func (l *loader) carve(f []int32) []int32 {
	if len(f) == 0 {
		return nil
	}
	if cap(l.arena)-len(l.arena) < len(f) {
		l.arena = make([]int32, 0, max(arenaBlock, len(f)))
	}
	n := len(l.arena)
	l.arena = append(l.arena, f...)
	return l.arena[n:len(l.arena):len(l.arena)]
}

func (l *loader) intern(f profile.Frame) int32 {
	if i, ok := l.frames[f]; ok {
		return i
	}
	i := int32(len(l.p.Frames))
	l.p.Frames = append(l.p.Frames, f)
	l.frames[f] = i
	return i
}

func (l *loader) kernelFrame(addr uint64, isReturn bool) int32 {
	look := addr
	if isReturn {
		look--
	}
	if id, ok := l.kaddrs[look]; ok {
		return id
	}
	f := profile.Frame{Object: "[kernel.kallsyms]", Offset: addr, Kernel: true}
	if name, module, ok := l.ktab.Lookup(look); ok {
		f.Function = symbol.CleanName(name)
		if module != "" {
			f.Object = "[" + module + "]"
		}
	}
	id := l.intern(f)
	l.kaddrs[look] = id
	return id
}

// userFrames symbolizes a user address: inlined frames first, innermost first.
func (l *loader) userFrames(pid uint32, sp *space, addr uint64, isReturn bool) []int32 {
	look := addr
	if isReturn {
		look--
	}
	sk, cacheSpace := spaceKey(sp, look)
	if ids, ok := l.saddrs[sk]; ok && cacheSpace {
		return ids
	}
	m, ok := sp.find(look)
	if !ok && isReturn {
		// A return address one past the end of every mapping's code:
		// the first byte of the [uprobes] page, where the kernel put its
		// return trampoline in place of a traced call's return address.
		if m, ok := sp.find(addr); ok && m.path == profile.UprobesObject {
			return []int32{l.intern(profile.Frame{Function: profile.Uretprobe, Object: m.path, Offset: addr - m.start + m.pgoff})}
		}
	}
	if !ok {
		if f, ok := l.namedSymbol(pid, look); ok {
			return []int32{l.intern(f)}
		}
		return []int32{l.intern(profile.Frame{Object: "[unknown]", Offset: addr})}
	}
	ids := l.objectFrames(m, look-m.start+m.pgoff)
	if cacheSpace {
		l.saddrs[sk] = ids
	}
	return ids
}

// tailFrames returns the frames that tail calls removed between the caller
// frame at return address ret and the frame below it at inner (a return
// address too when innerIsReturn), both in the space sp: the functions
// through which ret's call reached inner's function (symbol.TailCalls),
// innermost first, each at its jump, inlined frames included. Nil when both
// are not in one object or nothing is missing. Distinct stacks share
// their callers, and each pair of frames costs a decoded call instruction
// and two symbol searches: answers are kept in l.tails by the spaceKey of
// ret and by inner (its top bit set when innerIsReturn).
func (l *loader) tailFrames(sp *space, ret, inner uint64, innerIsReturn bool) []int32 {
	k0, ok := spaceKey(sp, ret)
	if !ok || inner >= 1<<63 {
		return l.findTailFrames(sp, ret, inner, innerIsReturn)
	}
	k := [2]uint64{k0, inner}
	if innerIsReturn {
		k[1] |= 1 << 63
	}
	if ids, ok := l.tails[k]; ok {
		return ids
	}
	ids := l.findTailFrames(sp, ret, inner, innerIsReturn)
	l.tails[k] = ids
	return ids
}

// findTailFrames is tailFrames without its cache.
func (l *loader) findTailFrames(sp *space, ret, inner uint64, innerIsReturn bool) []int32 {
	if innerIsReturn {
		inner--
	}
	m, ok := sp.find(ret - 1)
	if !ok {
		return nil
	}
	mi, ok := sp.find(inner)
	if !ok || m.obj == 0 || mi.obj == 0 {
		return nil
	}
	var ids []int32
	if mi.obj != m.obj {
		// A call into another object through a PLT stub, which entered
		// it at the function the stub names.
		obj, in := l.object(m), l.object(mi)
		if obj == nil || in == nil {
			return nil
		}
		name, ok := obj.StubCall(ret - m.start + m.pgoff)
		if !ok {
			return nil
		}
		for _, off := range in.TailCallsFrom(name, inner-mi.start+mi.pgoff) {
			ids = append(ids, l.objectFrames(mi, off)...)
		}
		return ids
	}
	if obj := l.object(m); obj != nil {
		for _, off := range obj.TailCalls(ret-m.start+m.pgoff, inner-mi.start+mi.pgoff) {
			ids = append(ids, l.objectFrames(m, off)...)
		}
	}
	return ids
}

// objectFrames symbolizes offset off of m's object.
func (l *loader) objectFrames(m mapping, off uint64) []int32 {
	k, cache := userKey(m.obj, off)
	if ids, ok := l.uaddrs[k]; ok && cache {
		return ids
	}
	var ids []int32
	obj := l.object(m)
	if obj != nil {
		frames := obj.Lookup(off)
		for i, sf := range frames {
			ids = append(ids, l.intern(profile.Frame{Function: sf.Function, File: sf.File, Line: sf.Line,
				Object: m.path, Offset: off, Inlined: i < len(frames)-1}))
		}
		if n := len(frames); n > 0 && symbol.IsPartClone(frames[n-1].Symbol) {
			l.parts[ids[n-1]] = true
		}
	}
	if len(ids) == 0 {
		// An object that could not be opened has had its warning.
		if obj != nil && !obj.HasSymbols() && strings.HasPrefix(m.path, "/") {
			l.noSyms[m.path] = true
		}
		f := profile.Frame{Object: m.path, Offset: off}
		if obj != nil {
			if e, ok := obj.FunctionEntry(off); ok {
				f.Entry = e
			}
		}
		ids = []int32{l.intern(f)}
	}
	if cache {
		l.uaddrs[k] = ids
	}
	return ids
}

// namedSymbol finds a Symbol record of the process (or of every process)
// that covers addr.
func (l *loader) namedSymbol(pid uint32, addr uint64) (profile.Frame, bool) {
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
		return profile.Frame{Function: symbol.CleanName(y.Name), Object: obj, Offset: addr - y.Addr}, true
	}
	return profile.Frame{}, false
}

func (l *loader) object(m mapping) *symbol.Object {
	if m.obj > 0 && int(m.obj) < len(l.objKnown) && l.objKnown[m.obj] {
		return l.objByID[m.obj]
	}
	o := l.findObject(m)
	if m.obj > 0 {
		for len(l.objKnown) <= int(m.obj) {
			l.objKnown = append(l.objKnown, false)
			l.objByID = append(l.objByID, nil)
		}
		l.objKnown[m.obj], l.objByID[m.obj] = true, o
	}
	return o
}

// findObject is object without its cache by mapping.obj.
func (l *loader) findObject(m mapping) *symbol.Object {
	if o, ok := l.vdso[m.path]; ok {
		return o
	}
	key := m.path + "\x00" + string(m.buildID)
	if o, ok := l.objs[key]; ok {
		return o
	}
	if !strings.HasPrefix(m.path, "/") || l.only != nil && !l.only(m.path) {
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
