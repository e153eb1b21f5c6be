package profile

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/culprit-dev/culprit/internal/recording"
)

// Unknown names a sample whose stack is empty, and an object that is not known.
const Unknown = "[unknown]"

// UprobesObject is the Object of frames in the page the kernel maps into a
// process with uprobes: the return probes' trampoline, then the slots
// where probed instructions run out of line.
const UprobesObject = "[uprobes]"

// Uretprobe is the Function of a return address that is the return
// probes' trampoline: a return probe armed on a call in flight put the
// trampoline's address in place of the call's return address (the frame
// of the function that made the call), and nothing in the sample says
// which function that was. The frames after it are the unwinder's.
const Uretprobe = "[uretprobe]"

// KernelObject is the Object of core kernel frames.
const KernelObject = "[kernel.kallsyms]"

// objectBase returns the last element of an object path; pseudo objects such
// as "[vdso]" are returned unchanged, an empty object is "[unknown]".
func objectBase(obj string) string {
	if obj == "" {
		return Unknown
	}
	if strings.HasPrefix(obj, "[") {
		return obj
	}
	b := path.Base(obj)
	if b == "." || b == "/" {
		return obj
	}
	return b
}

// RuntimeObject reports whether an object (a path or a base name) is the C
// runtime or the dynamic loader: libc, libpthread, libdl, librt, ld.so, the
// vDSO. Their functions do what the program asks; a slowdown in them is the
// slowdown of the code that calls them.
func RuntimeObject(obj string) bool {
	b := objectBase(obj)
	for _, p := range []string{"libc.so", "libc-", "libpthread.so", "libpthread-", "ld-linux", "ld-musl",
		"libdl.so", "librt.so", "[vdso]"} {
		if strings.HasPrefix(b, p) {
			return true
		}
	}
	return false
}

// ObjectName is the short name of the frame's object: the basename of Object,
// "[kernel.kallsyms]" for a kernel frame with no object, "[unknown]" otherwise.
func (f Frame) ObjectName() string {
	if f.Object == "" && f.Kernel {
		return KernelObject
	}
	return objectBase(f.Object)
}

// Name returns the function name; when it is not known, object+0xoffset
// (basename of the object) of the function's first instruction if the
// object's unwind tables give it (Entry), else of the address itself.
func (f Frame) Name() string {
	if f.Function != "" {
		return f.Function
	}
	if f.Entry != 0 {
		return fmt.Sprintf("%s+0x%x", f.ObjectName(), f.Entry)
	}
	return f.Address()
}

// Address returns object+0xoffset of the frame's own address.
func (f Frame) Address() string {
	return fmt.Sprintf("%s+0x%x", f.ObjectName(), f.Offset)
}

// Grouping says what a report groups frames by.
type Grouping int

const (
	ByFunction Grouping = iota // function name (Frame.Name)
	ByLine                     // source file and line, "file:line (function)"
	ByObject                   // object basename, e.g. "libc.so.6", "[kernel.kallsyms]"
	ByProcess                  // the sample's process, "comm[pid]" (flat profiles only)
	ByThread                   // the sample's thread, "comm[tid]" (flat profiles only)
)

// PerFrame reports whether g labels frames (function, line, object), as
// calling contexts need, rather than whole samples (process, thread).
func (g Grouping) PerFrame() bool { return g != ByProcess && g != ByThread }

// String returns the name ParseGrouping accepts: "function", "line",
// "object", "process" or "thread".
func (g Grouping) String() string {
	switch g {
	case ByFunction:
		return "function"
	case ByLine:
		return "line"
	case ByObject:
		return "object"
	case ByProcess:
		return "process"
	case ByThread:
		return "thread"
	}
	return fmt.Sprintf("Grouping(%d)", int(g))
}

// ParseGrouping parses "function" (or "func"), "line", "object" (or "dso"),
// "process" (or "pid", "comm") and "thread" (or "tid").
func ParseGrouping(s string) (Grouping, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "function", "func", "functions":
		return ByFunction, nil
	case "line", "lines":
		return ByLine, nil
	case "object", "objects", "dso":
		return ByObject, nil
	case "process", "processes", "pid", "comm":
		return ByProcess, nil
	case "thread", "threads", "tid":
		return ByThread, nil
	}
	return 0, fmt.Errorf("unknown grouping %q (want function, line, object, process or thread)", s)
}

// Label names the frame under grouping g: ByFunction gives Name(); ByLine
// gives "file:line (function)", the file path as recorded, or when the line
// is not known Name(), or for a function known only by its entry
// "object+0xaddress (object+0xentry)"; ByObject gives the object's basename
// (kernel frames have the object "[kernel.kallsyms]", or their module's
// "[name]").
func (f Frame) Label(g Grouping) string {
	switch g {
	case ByLine:
		if f.File != "" && f.Line > 0 {
			return fmt.Sprintf("%s:%d (%s)", f.File, f.Line, f.Name())
		}
		if f.Function == "" && f.Entry != 0 {
			return fmt.Sprintf("%s (%s)", f.Address(), f.Name())
		}
		return f.Name()
	case ByObject:
		return f.ObjectName()
	}
	return f.Name()
}

// KernelMode says what to do with kernel frames.
type KernelMode int

const (
	KernelInclude KernelMode = iota // keep kernel and user frames
	KernelExclude                   // drop kernel frames: kernel time is charged to the user frames
	KernelOnly                      // keep kernel frames only, drop samples with none
)

// String returns the name ParseKernelMode accepts.
func (k KernelMode) String() string {
	switch k {
	case KernelInclude:
		return "include"
	case KernelExclude:
		return "exclude"
	case KernelOnly:
		return "only"
	}
	return fmt.Sprintf("KernelMode(%d)", int(k))
}

// ParseKernelMode parses "include" (or "yes"), "exclude" (or "no") and "only".
func ParseKernelMode(s string) (KernelMode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "include", "yes", "":
		return KernelInclude, nil
	case "exclude", "no":
		return KernelExclude, nil
	case "only":
		return KernelOnly, nil
	}
	return 0, fmt.Errorf("unknown kernel mode %q (want include, exclude or only)", s)
}

// Filter selects samples and frames.
type Filter struct {
	From, To       time.Duration // window relative to Profile.StartTime: [From, To)
	HasFrom, HasTo bool          // whether From and To apply
	Kernel         KernelMode
	// AllEvents keeps samples of every event kind; by default only CPU-time
	// samples (recording.EventCPU) are kept, which is what profiles of time
	// spent on the CPU want.
	AllEvents bool
	// PIDs, TIDs and Comms, when not empty, keep only the samples (and
	// values) of those processes, of those threads, and of threads whose
	// own name or whose process's name was one of Comms when the sample was
	// taken (a process that execs changes names). A sample must pass each
	// of the three that is set.
	PIDs  []uint32
	TIDs  []uint32
	Comms []string
	// Focus keeps only the samples with a frame that matches it, Ignore
	// drops the samples with a frame that matches it, and Hide removes the
	// frames that match it from stacks, so that their time goes to their
	// callers (pprof's -focus, -ignore and -hide). Matching is unanchored
	// (use ^ and $ for whole names). A frame matches when its name
	// (Frame.Name: the function, or object+0xoffset when it has none) does,
	// or, when its source file is known, the file as recorded or its base
	// name ("/src/app/work.c", "work.c"), or, when its line is known too,
	// either with the line ("/src/app/work.c:30", "work.c:30"). A stack
	// that is empty has no frame and matches nothing.
	//
	// Order: the sample's event, time and task are checked first; then
	// Focus and Ignore look at the whole recorded stack, so focusing on a
	// kernel function selects samples even when Kernel then drops kernel
	// frames, and focusing on a hidden function selects the samples Hide
	// then charges to its callers; then Hide removes frames, and Kernel
	// trims the rest (KernelOnly drops the samples that had no kernel frame
	// in the recorded stack). A sample whose stack Hide or Kernel empties is
	// kept with an empty stack, which reports show as "[unknown]".
	Focus, Ignore, Hide *regexp.Regexp
}

// frameMatcher reports whether frame fi matches re (see Filter.Focus),
// deciding each frame once; it is nil when re is.
func (p *Profile) frameMatcher(re *regexp.Regexp) func(fi int32) bool {
	if re == nil {
		return nil
	}
	memo := make([]int8, len(p.Frames)) // 0 unknown, 1 matches, -1 does not
	return func(fi int32) bool {
		if fi < 0 || int(fi) >= len(memo) {
			return re.MatchString(Unknown)
		}
		if memo[fi] == 0 {
			memo[fi] = -1
			if frameMatches(re, p.Frames[fi]) {
				memo[fi] = 1
			}
		}
		return memo[fi] == 1
	}
}

// StacksMatching reports, per index of p.Stacks, whether the stack holds a
// frame re matches, as Filter.Focus decides it: each frame is matched
// once, so that a view can select a function's samples by their stack
// without a copy of them (Apply).
func (p *Profile) StacksMatching(re *regexp.Regexp) []bool {
	match := p.frameMatcher(re)
	out := make([]bool, len(p.Stacks))
	for i, st := range p.Stacks {
		out[i] = slices.ContainsFunc(st, match)
	}
	return out
}

// frameMatches reports whether re matches the frame's name, or its file or
// the file's base name, alone or with ":line".
func frameMatches(re *regexp.Regexp, fr Frame) bool {
	if re.MatchString(fr.Name()) {
		return true
	}
	if fr.File == "" {
		return false
	}
	files := []string{fr.File}
	if b := path.Base(fr.File); b != fr.File && b != "." && b != "/" {
		files = append(files, b)
	}
	for _, file := range files {
		if re.MatchString(file) || fr.Line > 0 && re.MatchString(fmt.Sprintf("%s:%d", file, fr.Line)) {
			return true
		}
	}
	return false
}

// selectsTasks reports whether f selects by process, thread or name.
func (f Filter) selectsTasks() bool { return len(f.PIDs)+len(f.TIDs)+len(f.Comms) > 0 }

// taskSelector returns whether a sample of pid and tid at time t passes f's
// PIDs, TIDs and Comms; names are those the thread and its process had at t.
func (p *Profile) taskSelector(f Filter) func(pid, tid uint32, t uint64) bool {
	if !f.selectsTasks() {
		return func(uint32, uint32, uint64) bool { return true }
	}
	named := func(pid, tid uint32, t uint64) bool {
		return len(f.Comms) == 0 || slices.Contains(f.Comms, p.ThreadNameAt(tid, t)) ||
			slices.Contains(f.Comms, p.ProcessNameAt(pid, tid, t))
	}
	memo := map[[2]uint32]bool{} // for threads whose names did not change
	return func(pid, tid uint32, t uint64) bool {
		if len(f.PIDs) > 0 && !slices.Contains(f.PIDs, pid) || len(f.TIDs) > 0 && !slices.Contains(f.TIDs, tid) {
			return false
		}
		if p.renamed(tid) || p.renamed(pid) {
			return named(pid, tid, t)
		}
		k := [2]uint32{pid, tid}
		ok, done := memo[k]
		if !done {
			ok = named(pid, tid, t)
			memo[k] = ok
		}
		return ok
	}
}

// StackAt returns the stack with index i, innermost first, or nil when i is
// out of range (reports show such a sample as "[unknown]").
func (p *Profile) StackAt(i int32) []int32 {
	if i < 0 || int(i) >= len(p.Stacks) {
		return nil
	}
	return p.Stacks[i]
}

// FrameAt returns the frame with index i, or an "[unknown]" frame when i is out
// of range.
func (p *Profile) FrameAt(i int32) Frame {
	if i < 0 || int(i) >= len(p.Frames) {
		return Frame{Function: Unknown, Object: Unknown}
	}
	return p.Frames[i]
}

// Apply returns a new profile, sharing Frames with p, holding the samples whose
// time minus StartTime lies in [From, To) (each bound only if set) and whose
// process and thread pass f.PIDs, f.TIDs and f.Comms, and whose stacks pass
// f.Focus and f.Ignore, with stacks trimmed by f.Hide and f.Kernel, in the
// order Filter.Focus documents: KernelExclude drops kernel frames, so a
// sample taken in the kernel is charged to its user frames; KernelOnly keeps
// kernel frames only and drops samples that have none. Samples left with an
// empty stack (a kernel thread under KernelExclude, say) are kept; reports
// show them as "[unknown]". Each distinct stack is examined once, however
// many samples share it. Values and calls are selected by time and task
// only (shared with p when neither is selected by). Threads, the
// threads' last switches away (LastSwitchAway),
// Lost, Throttled, Gaps, Metas, Sources, Warnings and StartTime are carried over
// unchanged: lost and throttled counts are totals of the recording, not of
// the window.
func (p *Profile) Apply(f Filter) *Profile {
	q := &Profile{
		Frames:    p.Frames,
		Threads:   p.Threads,
		names:     p.names,
		Lost:      p.Lost,
		Throttled: p.Throttled,
		Gaps:      p.Gaps,
		Metas:     p.Metas,
		Sources:   p.Sources,
		Warnings:  p.Warnings,
		StartTime: p.StartTime,
		Merged:    p.Merged,

		ValueSources: p.ValueSources,
		Probes:       p.Probes,
		ProbesOff:    p.ProbesOff,
		CallsLost:    p.CallsLost,

		SyscallWindows: p.SyscallWindows,
		lastAway:       p.lastAway,
	}
	inWindow := func(t uint64) bool {
		rel := time.Duration(int64(t - p.StartTime))
		if t < p.StartTime {
			rel = -time.Duration(int64(p.StartTime - t))
		}
		return (!f.HasFrom || rel >= f.From) && (!f.HasTo || rel < f.To)
	}
	selected := p.taskSelector(f)
	if p.values != nil {
		q.values = func(yield func(*Value) bool) error {
			return p.values(func(v *Value) bool {
				if !inWindow(v.Time) || !selected(v.PID, v.TID, v.Time) {
					return true
				}
				return yield(v)
			})
		}
	}
	if p.within != nil {
		q.withinCost = p.withinCost
		q.within = func(from, to uint64, yield func(*Value) bool) error {
			return p.within(from, to, func(v *Value) bool {
				if !inWindow(v.Time) || !selected(v.PID, v.TID, v.Time) {
					return true
				}
				return yield(v)
			})
		}
	}
	if !f.HasFrom && !f.HasTo && !f.selectsTasks() {
		// Every value and call is kept: shared, not copied (a trace of
		// millions of calls took seconds to copy for each report), and
		// so are a streamed profile's counts: a selection of every value
		// would otherwise read them all again to count them.
		q.Values, q.Calls, q.valueCounts = p.Values, p.Calls, p.valueCounts
	} else {
		for _, v := range p.Values {
			if inWindow(v.Time) && selected(v.PID, v.TID, v.Time) {
				q.Values = append(q.Values, v)
			}
		}
		for _, c := range p.Calls {
			if inWindow(c.Start) && selected(c.PID, c.TID, c.Start) {
				q.Calls = append(q.Calls, c)
			}
		}
	}
	focus := p.frameMatcher(f.Focus)
	ignore := p.frameMatcher(f.Ignore)
	hide := p.frameMatcher(f.Hide)
	trims := f.Kernel != KernelInclude || hide != nil
	examines := trims || focus != nil || ignore != nil
	if !trims {
		q.Stacks = p.Stacks
	}
	emptyStack := int32(-1)
	// decide returns the index in q.Stacks of the stack old becomes, or
	// false when its samples are dropped.
	decide := func(old int32) (int32, bool) {
		src := p.StackAt(old)
		if focus != nil && !slices.ContainsFunc(src, focus) || ignore != nil && slices.ContainsFunc(src, ignore) {
			return 0, false
		}
		if !trims {
			return old, true
		}
		if f.Kernel == KernelOnly && !slices.ContainsFunc(src, func(fi int32) bool { return p.FrameAt(fi).Kernel }) {
			return 0, false
		}
		var dst []int32
		for _, fi := range src {
			if hide != nil && hide(fi) {
				continue
			}
			k := p.FrameAt(fi).Kernel
			if f.Kernel == KernelInclude || (f.Kernel == KernelExclude && !k) || (f.Kernel == KernelOnly && k) {
				dst = append(dst, fi)
			}
		}
		if len(dst) == 0 {
			if emptyStack < 0 {
				emptyStack = int32(len(q.Stacks))
				q.Stacks = append(q.Stacks, []int32{})
			}
			return emptyStack, true
		}
		q.Stacks = append(q.Stacks, dst)
		return int32(len(q.Stacks) - 1), true
	}
	// remap[old] = new index + 1, -1 when dropped, 0 while not yet decided;
	// every index out of range names an empty stack, decided once in oor.
	var remap []int32
	if examines {
		remap = make([]int32, len(p.Stacks))
	}
	var oor, oorStack int32
	newStack := func(old int32) (int32, bool) {
		switch {
		case !examines:
			return old, true
		case old < 0 || int(old) >= len(remap):
			if oor == 0 {
				oor = -1
				if ns, ok := decide(old); ok {
					oor, oorStack = 1, ns
				}
			}
			if !trims {
				oorStack = old // kept as it was, out of range
			}
			return oorStack, oor > 0
		}
		if remap[old] == 0 {
			remap[old] = -1
			if ns, ok := decide(old); ok {
				remap[old] = ns + 1
			}
		}
		return remap[old] - 1, remap[old] > 0
	}
	keep := func(s *Sample) bool {
		ns, ok := int32(0), false
		if (f.AllEvents || s.Event == recording.EventCPU) && inWindow(s.Time) && selected(s.PID, s.TID, s.Time) {
			ns, ok = newStack(s.Stack)
		}
		s.Stack = ns
		return ok
	}
	if p.stream != nil {
		// Selected as the samples are read; q.Stacks grows as they are
		// (examined stacks are decided as their first sample is met).
		q.setSelectionStream(p, keep)
		if !trims {
			q.Stacks = p.Stacks
		}
		return q
	}
	// While every sample is kept as it is, q shares p's samples (capped,
	// so that an append to either copies): a timeline of millions of
	// samples is not held twice for a selection that keeps them all.
	merged := len(p.lasts) == len(p.Samples) && len(p.lasts) > 0
	shared := true
	unshare := func(i int) {
		shared = false
		q.Samples = append(make([]Sample, 0, len(p.Samples)), p.Samples[:i]...)
		if merged {
			q.lasts = append(make([]uint64, 0, len(p.lasts)), p.lasts[:i]...)
		}
	}
	// A time window of samples held in time order is one run of them,
	// found by bisection: a window of a long recording reads its own
	// samples, not all of them.
	lo, hi := p.window(f)
	if lo > 0 || hi < len(p.Samples) {
		shared = false
		q.Samples = make([]Sample, 0, hi-lo)
	}
	for i := lo; i < hi; i++ {
		s := p.Samples[i]
		old := s.Stack
		ok := keep(&s)
		if shared {
			if ok && s.Stack == old {
				continue
			}
			unshare(i)
		}
		if !ok {
			continue
		}
		q.Samples = append(q.Samples, s)
		if merged {
			q.lasts = append(q.lasts, p.lasts[i])
		}
	}
	if shared {
		n := len(p.Samples)
		q.Samples = p.Samples[:n:n]
		if q.Samples == nil {
			q.Samples = []Sample{}
		}
		if merged {
			q.lasts = p.lasts[:n:n]
		}
	}
	return q
}

// window returns the run of p's samples that can lie in f's time window,
// [lo, hi): all of them unless p holds its samples in time order, unmerged.
func (p *Profile) window(f Filter) (lo, hi int) {
	n := len(p.Samples)
	if !f.HasFrom && !f.HasTo || p.Merged || len(p.lasts) > 0 || p.stream != nil {
		return 0, n
	}
	for i := 1; i < n; i++ {
		if p.Samples[i].Time < p.Samples[i-1].Time {
			return 0, n
		}
	}
	// At or after the bound d (from the start), as inWindow reads it.
	from := func(d time.Duration) func(i int) bool {
		return func(i int) bool {
			t := p.Samples[i].Time
			if t < p.StartTime {
				return -time.Duration(int64(p.StartTime-t)) >= d
			}
			return time.Duration(int64(t-p.StartTime)) >= d
		}
	}
	if f.HasFrom {
		lo = sort.Search(n, from(f.From))
	}
	hi = n
	if f.HasTo {
		hi = max(lo, sort.Search(n, from(f.To)))
	}
	return lo, hi
}
