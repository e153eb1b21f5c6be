package introperf

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/culprit-dev/culprit/internal/chunked"
	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
)

// Mode selects which inferred latency an analysis uses.
type Mode int

const (
	// Conservative: a function instance lasts from the first to the last
	// event in which its calling context was seen (the paper's t_c).
	Conservative Mode = 0
	// Aggressive: it lasts from the first event with its context to the
	// first event without it (t_a).
	Aggressive Mode = 1
)

// String returns the name ParseMode accepts.
func (m Mode) String() string {
	if m == Aggressive {
		return "aggressive"
	}
	return "conservative"
}

// ParseMode parses "conservative" (or "c") and "aggressive" (or "a").
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "conservative", "c", "":
		return Conservative, nil
	case "aggressive", "a":
		return Aggressive, nil
	}
	return 0, fmt.Errorf("unknown mode %q (want conservative or aggressive)", s)
}

// EventSet selects the events whose stacks feed the inference.
type EventSet uint8

const (
	EventsCPU      EventSet = 1 << recording.EventCPU
	EventsSyscalls EventSet = 1<<recording.EventSyscallEnter | 1<<recording.EventSyscallExit
	EventsSched    EventSet = 1 << recording.EventSwitch
	EventsAll               = EventsCPU | EventsSyscalls | EventsSched
)

// Has reports whether e is in the set.
func (s EventSet) Has(e recording.Event) bool { return e < 8 && s&(1<<e) != 0 }

// String lists the set as ParseEvents accepts it.
func (s EventSet) String() string {
	var out []string
	if s&EventsCPU != 0 {
		out = append(out, "cpu")
	}
	if s&EventsSyscalls != 0 {
		out = append(out, "syscalls")
	}
	if s&EventsSched != 0 {
		out = append(out, "sched")
	}
	return strings.Join(out, ",")
}

// ParseEvents parses a comma-separated list of cpu, syscalls and sched (or
// "all").
func ParseEvents(s string) (EventSet, error) {
	var set EventSet
	for _, w := range strings.Split(s, ",") {
		switch strings.ToLower(strings.TrimSpace(w)) {
		case "all":
			set |= EventsAll
		case "cpu":
			set |= EventsCPU
		case "syscalls", "syscall":
			set |= EventsSyscalls
		case "sched", "switch", "switches":
			set |= EventsSched
		case "":
		default:
			return 0, fmt.Errorf("unknown event %q (want cpu, syscalls or sched)", w)
		}
	}
	if set == 0 {
		return 0, fmt.Errorf("no events selected (want cpu, syscalls and/or sched)")
	}
	return set, nil
}

// Options configure Analyze.
type Options struct {
	// Events selects the events used; 0 means all of them.
	Events EventSet
	// Funcs is the function table to intern into. Give two runs the same
	// table to make their function ids comparable; nil makes a new one.
	Funcs *FuncTable
	// KeepInstances keeps the list of inferred instances (the timeline) in
	// Result.Instances; otherwise instances are only aggregated in the tree.
	KeepInstances bool
	// Timeline keeps the instances for a view that lists them all in
	// timeline order (SortInstances): they are read with
	// Result.EachInstance, sorted in runs kept in a temporary file, and
	// Result.Instances stays empty. Memory does not grow with their number.
	Timeline bool
	// Slowest, when not nil, is given every inferred instance: a view of
	// the slowest ones that needs no list of them all.
	Slowest *Slowest
	// Loads are the times objects were first mapped (loader.ObjectLoads),
	// used to tell dlopen'ed plug-ins from libraries loaded at start. Without
	// them no object is called a plug-in.
	Loads []profile.ObjectLoad
	// Like, when not nil, is when the run this one is compared with
	// recorded its system calls (RegimeOf): where that run was recorded in
	// windows and this one all along, this one's events are thinned to
	// the other's windows (see Analyze), so that the two are compared
	// like with like.
	Like *Regime
}

// Instance is one inferred function instance: a function that stayed in the
// same calling context over consecutive events of a thread.
type Instance struct {
	Func  int32 // function id (Result.Tree.Funcs)
	Node  int32 // CCT node: the function in its calling context
	Path  int32 // path id of the stack that opened the instance
	Depth int32 // 0 = outermost frame
	PID   uint32
	TID   uint32
	Start uint64 // ns, sample clock: the first event with the context
	// Conservative is the time from Start to the last event with the same
	// context; 0 for an instance seen in one event only. Aggressive runs to
	// the event that broke the context (or the thread's last event). ns, on
	// the thread's own clock: without the waits of preemption (Analyze).
	Conservative uint64
	Aggressive   uint64
	// Seen and End are the sample-clock times of the last event with the
	// context and of the event that broke it: where the instance lies on a
	// timeline, its waits for a CPU included. A thread's instances nest on
	// the sample clock (Span), as its latencies do on its own clock.
	Seen, End uint64
}

// Span returns the instance's end on the sample clock in mode m: the last
// event with its context (conservative) or the event that broke it.
func (in Instance) Span(m Mode) uint64 {
	if m == Aggressive {
		return in.End
	}
	return in.Seen
}

// Latency returns the instance's latency in mode m, ns.
func (in Instance) Latency(m Mode) uint64 {
	if m == Aggressive {
		return in.Aggressive
	}
	return in.Conservative
}

// ThreadInfo summarises one thread's events.
type ThreadInfo struct {
	PID, TID    uint32
	Comm        string
	Events      int
	First, Last uint64 // times of the first and last event used
	Instances   int
}

// Result is the analysis of one run.
type Result struct {
	Tree      *Tree
	Instances []Instance // when Options.KeepInstances without Options.Timeline, in closing order
	Threads   []ThreadInfo
	// EventCounts counts the profile's samples by event kind (all of them,
	// used or not); Used is how many fed the inference. Empty counts events
	// skipped because their stack was empty, Probe those skipped because
	// they landed in the recorder's own code (tracerFrame).
	EventCounts map[recording.Event]int
	Used        int
	Empty       int
	Probe       int
	// Lost is how many records the kernel dropped (Profile.Lost), and Cut
	// how many times a thread's inference was ended at a window where its
	// events may be missing (Profile.Gaps).
	Lost uint64
	Cut  int
	// Syscalls is how many system calls the recorded entries stand for
	// (their samples' period): more than the entries when the recorder
	// left calls out (SyscallLimit, the rule: "RATE/BURST", from the
	// recording's metadata), whose kernel instances are then not inferred.
	Syscalls     uint64
	SyscallLimit string
	// SyscallWindows is the windows the recorder recorded system calls in
	// ("ON/PERIOD", from the recording's metadata; "": all along, or
	// auto windows that never went above the rate): then
	// Syscalls is an estimate.
	SyscallWindows string
	// ThinnedCalls and ThinnedSwitches are the system calls left out, and
	// the context switches inside them left without their stacks, to
	// thin the run to the windows of the run it is compared with
	// (Options.Like); Thinned says that some of its events were.
	ThinnedCalls, ThinnedSwitches int
	Thinned                       bool
	// WindowCut is how many times a thread's inference was ended at a
	// gap between system call windows (its own, or those it was thinned
	// to), where its calls were not recorded.
	WindowCut int
	// Between is how many events were skipped because they lay between
	// system call windows (their own run's, or those it was thinned to):
	// there the run recorded CPU samples and preemptions only, and a
	// caller seen at a CPU sample would be given, as its own, all the
	// time its callees took unseen.
	Between    int
	Start, End uint64 // first and last time used, ns
	Objects    Objects
	// Err is why the samples of a streamed profile could not be read
	// again (Profile.EachSample); the result is then incomplete.
	Err error
	// timeline holds the instances with Options.Timeline.
	timeline *timeline
}

// EachInstance calls fn with every kept instance in timeline order
// (SortInstances) until fn returns an error, which it returns; it also
// fails when the instances cannot be read back from their temporary file
// (Options.Timeline). Without Options.Timeline it sorts a copy of
// Instances.
func (r *Result) EachInstance(fn func(Instance) error) error {
	if r.timeline != nil {
		return r.timeline.each(fn)
	}
	list := r.Instances
	if !slices.IsSortedFunc(list, TimelineOrder) {
		list = slices.Clone(list)
		SortInstances(list)
	}
	for _, in := range list {
		if err := fn(in); err != nil {
			return err
		}
	}
	return nil
}

// Close removes the temporary file of the instances kept for
// Options.Timeline, if any.
func (r *Result) Close() error {
	if r.timeline == nil {
		return nil
	}
	return r.timeline.close()
}

// KernelEvents is the number of system call and context switch events in
// the profile.
func (r *Result) KernelEvents() int {
	return r.EventCounts[recording.EventSyscallEnter] + r.EventCounts[recording.EventSyscallExit] +
		r.EventCounts[recording.EventSwitch]
}

// CountEvents counts p's samples by event kind.
func CountEvents(p *profile.Profile) map[recording.Event]int { return p.EventCounts() }

type reg struct {
	ts, te      uint64 // on the thread's own clock (see thread.waited)
	start, seen uint64 // ts and te on the sample clock
	node        *Node
	pid         int32
	open        bool
	scale       uint64 // what the instance stands for (thread.scale)
}

type thread struct {
	info  int // index in Result.Threads
	last  []int32
	regs  []reg
	tLast uint64 // own clock of the last event
	// waited is the time the thread spent preempted so far, and preempted
	// the time of a runnable context switch not yet followed by an event.
	// Latencies are measured on the thread's own clock: the sample clock
	// minus waited (see Analyze).
	waited, preempted uint64
	now               uint64 // the sample clock at the current event
	slot              slot   // where now lies in the system call windows
	// scale is what an instance opened now stands for: the scale of
	// the system call window it lies in (edges), else 1.
	scale uint64
	cpu   uint32 // the CPU of the current event
}

type stackInfo struct {
	funcs []int32 // root first
	nodes []*Node // root first
	pid   int32
	user  int  // frames before the first kernel frame (root side)
	probe bool // the stack holds the recorder's own code: no funcs
}

type inferer struct {
	p    *profile.Profile
	tree *Tree
	res  *Result
	keep bool
	// slowest is Options.Slowest.
	slowest *Slowest
	// kept is the instances kept (Options.KeepInstances), in closing order,
	// or, with Options.Timeline, timeline.
	kept     chunked.List[Instance]
	timeline *timeline
	cache    []*stackInfo
	// cut caches the stacks of runnable context switches, without the
	// kernel's preemption path (see preempted).
	cut   []*stackInfo
	empty stackInfo
	// froms and tos are the starts and ends of the profile's loss
	// windows, each ordered by time.
	froms, tos []profile.Gap
}

// Analyze runs the latency inference (Algorithm 2) on p: per thread, over
// the time-ordered stacks of the selected events, with frames compared by
// function, building the run's calling context tree (Algorithm 1) and
// annotating it with instance counts and total latencies. It then
// normalises the tree (Tree.Normalize) and classifies the objects seen into
// layers.
//
// A context switch whose prev_state says the thread stayed runnable is a
// preemption (or a yield): the thread waits for a CPU, not for anything
// the program asked for. Its stack counts without the kernel's preemption
// path (preempted), as does a CPU sample taken on that path, and the wait
// is taken out of the thread's clock: exactly, up to the thread's switch
// back onto a CPU when that was recorded (--events wakeup), else up to its
// next event. The thread resumed somewhere in that window, so at most one
// event interval of its running is lost with each preemption, while the
// waits of a busy machine are many times longer and few: charged to what
// was open, they would add a noise as large as the differences being
// ranked, most of all to callers' own time (the gap between two callees).
// Latency here is what the program's own work and waits took, not how busy
// the machine was. Instances keep their start on the sample clock.
//
// Records the kernel dropped leave holes in a thread's sequence of events
// that no stack shows: a function that returned and another that was
// called in a hole would be read as one instance lasting across it, and a
// run that lost more records would grow for no reason of its own. When a
// thread's next event lies past a window where its CPU's ring dropped
// records (Profile.Gaps), the thread's open instances end at its last
// event before the window and the next event starts afresh, as at the
// thread's first event (counted in Result.Cut); the same at the window's
// end. The window's events from the CPU's other rings (CPU samples while
// system call records were dropped, say) make instances of their own, cut
// off from what came before and after. No instance is read across a
// window's edge, where a call may have ended and another begun unseen.
//
// With Options.Like (the run it is compared with recorded its system
// calls in windows, record --syscall-windows), the times at which that run
// was windowed and this one recorded every call are thinned to that run's
// windows (thinning): calls outside them are left out with their exits,
// blocking context switches inside those calls are skipped as stackless,
// and kept calls stand for the other's scale (Result.Syscalls), so that
// kernel instances and the moments user functions are seen at come at
// the same rate in both runs (counted in Result.ThinnedCalls and
// ThinnedSwitches). In a run's windows with a scale above 1 (its own, or
// those it is thinned to), the events between windows are skipped
// (Result.Between), each thread's inference is cut at a window's edges as
// at a loss window (Result.WindowCut), and each instance inferred in a
// window counts its scale times in the tree, so that the tree estimates
// the whole run (edges).
//
// Events whose stack is empty are skipped. It fails only when the samples
// of a streamed profile cannot be read again (Result.Err): an empty profile
// gives an empty result.
func Analyze(p *profile.Profile, o Options) *Result {
	set := o.Events
	if set == 0 {
		set = EventsAll
	}
	tree := NewTree(o.Funcs)
	res := &Result{Tree: tree, EventCounts: map[recording.Event]int{}}
	res.Lost = p.Lost
	for _, m := range p.Metas {
		if l := m.Extra[recording.ExtraSyscallLimit]; l != "" {
			res.SyscallLimit = l
		}
		if w := m.Extra[recording.ExtraSyscallWindows]; w != "" {
			res.SyscallWindows = w
		}
	}
	if g := RegimeOf(p); res.SyscallWindows != "" && g.AllAlong() {
		res.SyscallWindows = "" // auto, never above the rate
	}
	in := &inferer{p: p, tree: tree, res: res, keep: o.KeepInstances, slowest: o.Slowest, cache: make([]*stackInfo, len(p.Stacks)), cut: make([]*stackInfo, len(p.Stacks))}
	if o.KeepInstances && o.Timeline {
		in.timeline = &timeline{}
		res.timeline = in.timeline
	}
	in.froms = slices.SortedFunc(slices.Values(p.Gaps), func(a, b profile.Gap) int { return cmp.Compare(a.From, b.From) })
	in.tos = slices.SortedFunc(slices.Values(p.Gaps), func(a, b profile.Gap) int { return cmp.Compare(a.To, b.To) })
	threads := map[uint64]*thread{}
	var order []*thread
	// One pass over the samples, in time order, counts them, finds when
	// each process started its program and infers latencies.
	started := newStarts(p)
	thin := newThinning(p, o.Like)
	edge := newEdges(p, thin)
	var frac float64 // of the thinned calls' scaled count
	err := p.EachSample(func(sp *profile.Sample) bool {
		s := *sp
		started.see(sp)
		scale, keep := 1.0, true
		if thin != nil {
			if keep, scale = thin.keep(sp); !keep || scale != 1 {
				res.Thinned = true
			}
		}
		var sl slot
		if edge != nil {
			sl = edge.slot(s.Time)
		}
		if !keep || sl.gap {
			switch {
			case !keep && s.Event == recording.EventSyscallEnter:
				res.ThinnedCalls++
			case !keep && s.Event == recording.EventSwitch && !sl.gap:
				res.ThinnedSwitches++
			}
			if keep || s.Event == recording.EventSwitch {
				res.EventCounts[s.Event]++ // a switch made bare is one still
			}
			if sl.gap && (keep || s.Event == recording.EventSwitch) {
				res.Between++ // between windows: see edges
			}
			return true
		}
		res.EventCounts[s.Event]++
		if s.Event == recording.EventSwitchIn {
			// The thread is back on a CPU: its wait since a preemption
			// is known exactly (recorded with --events wakeup).
			if th := threads[uint64(s.PID)<<32|uint64(s.TID)]; th != nil && th.preempted != 0 && s.Time > th.preempted {
				th.waited += s.Time - th.preempted
				th.preempted = 0
			}
			return true
		}
		if s.Event == recording.EventSyscallEnter {
			n := max(s.Period, uint64(s.More)+1) // a merged sample: their sum
			if scale != 1 {
				w := float64(n)*scale + frac
				n = uint64(w)
				frac = w - float64(n)
			}
			res.Syscalls += n
		}
		if !set.Has(s.Event) {
			return true
		}
		si := in.stack(s.Stack)
		preempt := s.Event == recording.EventSwitch && runnable(s.Arg)
		if preempt || s.Event == recording.EventCPU {
			si = in.preempted(s.Stack, si)
		}
		if si.probe {
			res.Probe++
			return true
		}
		key := uint64(s.PID)<<32 | uint64(s.TID)
		if len(si.funcs) == 0 {
			res.Empty++
			// A preemption recorded without stacks (the recorder had
			// spent the thread's budget for walking them) still says
			// the thread waits for a CPU from here: that wait leaves
			// its clock like any other preemption's. Else it would be
			// charged to whatever was open, mostly to the outermost
			// frames, which every path of the program shares.
			if th := threads[key]; th != nil && preempt {
				if th.preempted != 0 && s.Time > th.preempted {
					th.waited += s.Time - th.preempted
				}
				th.preempted = s.Time
			}
			return true
		}
		th := threads[key]
		if th == nil {
			th = &thread{info: len(res.Threads)}
			threads[key] = th
			order = append(order, th)
			res.Threads = append(res.Threads, ThreadInfo{PID: s.PID, TID: s.TID, Comm: p.Threads[s.TID].Comm, First: s.Time})
		} else if in.lostBetween(th.now, s.Time, th.cpu, s.CPU) {
			for d := len(th.regs) - 1; d >= 0; d-- {
				in.close(th, d, th.tLast)
			}
			th.last = nil
			res.Cut++
		} else if edge != nil && cut(th.slot, sl) {
			for d := len(th.regs) - 1; d >= 0; d-- {
				in.close(th, d, th.tLast)
			}
			th.last = nil
			res.WindowCut++
		}
		th.slot = sl
		th.scale = max(sl.scale, 1)
		info := &res.Threads[th.info]
		info.Events++
		info.Last = s.Time
		if res.Used == 0 || s.Time < res.Start {
			res.Start = s.Time
		}
		if s.Time > res.End {
			res.End = s.Time
		}
		res.Used++
		if th.preempted != 0 && s.Time > th.preempted {
			th.waited += s.Time - th.preempted
		}
		th.preempted = 0
		if preempt {
			th.preempted = s.Time
		}
		th.now, th.cpu = s.Time, s.CPU
		in.event(th, s.Time-th.waited, si, s.Event)
		return true
	})
	if err != nil {
		res.Err = err
		return res
	}
	// Close everything still open at each thread's last event.
	for _, th := range order {
		for d := len(th.regs) - 1; d >= 0; d-- {
			in.close(th, d, th.tLast)
		}
	}
	tree.Normalize()
	res.Objects = classify(p, o.Loads, started.at)
	if in.timeline == nil {
		res.Instances = in.kept.Flat()
	}
	return res
}

// lostBetween reports whether a thread's events at t0 (on CPU c0) and t1
// (on c1) are on the two sides of a boundary of a loss window of either
// CPU's ring: a window starts in [t0, t1) or ends in (t0, t1]. Events
// inside a window come from the CPU's other rings (a window is one ring's:
// the system call ring, say, while CPU samples were kept) and are used; the
// inference is cut where the window starts and where it ends.
func (in *inferer) lostBetween(t0, t1 uint64, c0, c1 uint32) bool {
	on := func(g profile.Gap) bool { return g.CPU == c0 || g.CPU == c1 || g.CPU == recording.AnyCPU }
	i, _ := slices.BinarySearchFunc(in.froms, t0, func(g profile.Gap, t uint64) int { return cmp.Compare(g.From, t) })
	for ; i < len(in.froms) && in.froms[i].From < t1; i++ {
		if on(in.froms[i]) {
			return true
		}
	}
	i, _ = slices.BinarySearchFunc(in.tos, t0+1, func(g profile.Gap, t uint64) int { return cmp.Compare(g.To, t) })
	for ; i < len(in.tos) && in.tos[i].To <= t1; i++ {
		if on(in.tos[i]) {
			return true
		}
	}
	return false
}

// grow makes room in the caches for stack i of a streamed selection, whose
// stacks are made as its samples are read (Profile.Apply).
func (in *inferer) grow(i int32) {
	if n := len(in.p.Stacks); int(i) >= len(in.cache) && int(i) < n {
		in.cache = append(in.cache, make([]*stackInfo, n-len(in.cache))...)
		in.cut = append(in.cut, make([]*stackInfo, n-len(in.cut))...)
	}
}

// stack returns the function ids and CCT nodes of profile stack i.
func (in *inferer) stack(i int32) *stackInfo {
	in.grow(i)
	if i < 0 || int(i) >= len(in.cache) {
		return &in.empty
	}
	if si := in.cache[i]; si != nil {
		return si
	}
	frames := in.p.StackAt(i)
	// An event in the recorder's own code (the probe effect) is skipped: a
	// CPU sample that lands in perf's tracepoint handling has perf_* frames
	// inside the traced kernel function, one in a BPF program on a
	// tracepoint (the recorder's system call program) its frame and the
	// code that ran it, and a preemption where such a program ends its
	// frames under the scheduler's. Cut where that code starts, the stack
	// would end in a kernel function that the other events do not show
	// (syscall_trace_enter, syscall_exit_work with the recorder's system
	// call program): a context of its own, which the run compared with
	// may by chance not have, and then ranks with all of its callers'
	// latency as growth.
	for _, fi := range frames {
		if f := in.p.FrameAt(fi); f.Kernel && tracerFrame(f.Function) {
			si := &stackInfo{probe: true}
			in.cache[i] = si
			return si
		}
	}
	si := &stackInfo{funcs: make([]int32, len(frames))}
	for k, fi := range frames {
		f := in.p.FrameAt(fi)
		si.funcs[len(frames)-1-k] = in.tree.Funcs.ID(f)
		if !f.Kernel && si.user == 0 {
			si.user = len(frames) - k
		}
	}
	si.nodes, si.pid = in.tree.index(si.funcs, make([]*Node, 0, len(frames)))
	in.cache[i] = si
	return si
}

// event is NewStackEvent of Algorithm 2, with the corrections: a frame is
// new when its function differs from the previous event's at that depth
// (!=, not ==), a change propagates to every deeper frame, frames beyond the
// new stack's depth are closed, and LastStack and Register persist across
// the thread's events.
//
// Two additions for Linux use what the event says: at a system call exit
// the thread is about to return to user space, so the stack's kernel frames
// end there: they are dropped from LastStack, and the next event, even with
// the same kernel frames (the next system call), opens new instances; the
// closed ones end at the exit (conservative) or at that next event
// (aggressive). Likewise at a system call entry the thread comes from user
// space, so its kernel frames are always new (this covers exits lost by the
// kernel). Without them back-to-back system calls would merge into one long
// kernel instance.
func (in *inferer) event(th *thread, t uint64, si *stackInfo, ev recording.Event) {
	n := len(si.funcs)
	d0 := 0 // first depth whose context changed
	for d0 < n && d0 < len(th.last) && si.funcs[d0] == th.last[d0] {
		d0++
	}
	if ev == recording.EventSyscallEnter && d0 > si.user {
		d0 = si.user
	}
	for i := len(th.regs) - 1; i >= n; i-- {
		in.close(th, i, t)
	}
	for len(th.regs) < n {
		th.regs = append(th.regs, reg{})
	}
	for d := n - 1; d >= 0; d-- {
		if d >= d0 {
			in.close(th, d, t)
			th.regs[d] = reg{ts: t, te: t, start: th.now, seen: th.now, node: si.nodes[d], pid: si.pid, open: true, scale: th.scale}
		} else {
			th.regs[d].te, th.regs[d].seen = t, th.now
		}
	}
	th.last = si.funcs
	if ev == recording.EventSyscallExit {
		th.last = si.funcs[:si.user]
	}
	th.tLast = t
}

// close is closeRegister: it ends the instance open at depth d at time t,
// on the thread's own clock; th.now is the same moment on the sample clock.
// An empty register is left alone.
func (in *inferer) close(th *thread, d int, t uint64) {
	if d >= len(th.regs) || !th.regs[d].open {
		return
	}
	r := th.regs[d]
	th.regs[d].open = false
	var ta uint64
	if t > r.ts {
		ta = t - r.ts
	}
	tc := r.te - r.ts
	v := r.node
	// An instance in a system call window stands for the window's scale
	// of them (edges).
	v.Count += int64(r.scale)
	v.Total[Conservative] += tc * r.scale
	v.Total[Aggressive] += ta * r.scale
	info := &in.res.Threads[th.info]
	info.Instances++
	if in.keep || in.slowest != nil {
		inst := Instance{
			Func: v.Func, Node: v.ID, Path: r.pid, Depth: int32(d),
			PID: info.PID, TID: info.TID, Start: r.start, Conservative: tc, Aggressive: ta,
			Seen: r.seen, End: max(th.now, r.seen),
		}
		if in.timeline != nil {
			in.timeline.add(inst)
		} else if in.keep {
			in.kept.Add(inst)
		}
		if in.slowest != nil {
			in.slowest.Add(inst)
		}
	}
}

// SortInstances orders instances by process, thread, start and depth
// (callers before callees), the timeline order.
func SortInstances(list []Instance) { slices.SortFunc(list, TimelineOrder) }

// TimelineOrder compares a and b in the timeline order (SortInstances).
func TimelineOrder(a, b Instance) int {
	return cmp.Or(cmp.Compare(a.PID, b.PID), cmp.Compare(a.TID, b.TID), cmp.Compare(a.Start, b.Start),
		cmp.Compare(a.Depth, b.Depth), cmp.Compare(a.Node, b.Node))
}

// runnable reports whether a context switch's prev_state says the thread
// left the CPU still runnable (TASK_RUNNING, or the kernel's preemption
// mark above the state bits): it was preempted or yielded, it did not wait
// for anything.
func runnable(prevState uint64) bool { return prevState&0xff == 0 }

// preempted returns a stack without the kernel's preemption path: from the
// scheduler's entry (schedule, preempt_schedule*, cond_resched, or the
// exit-to-user or irq-exit work that calls them) on, and from the interrupt
// entry above it when the preemption came with an interrupt. Those frames
// are where the kernel took the CPU away, not a context of the program; on
// a busy machine they would become long-lived "functions" whose latency is
// only the wait for a CPU. A stack without a scheduler frame is kept whole,
// so an interrupt or a page fault that did not preempt stays a context.
func (in *inferer) preempted(i int32, si *stackInfo) *stackInfo {
	in.grow(i)
	if i < 0 || int(i) >= len(in.cut) {
		return si
	}
	if c := in.cut[i]; c != nil {
		return c
	}
	c := si
	entry := -1
	for d := si.user; d < len(si.funcs); d++ {
		fn := in.tree.Funcs.Get(si.funcs[d])
		if !fn.Kernel {
			continue
		}
		if entry < 0 && interruptEntry(fn.Name) {
			entry = d
		}
		if schedulerEntry(fn.Name) {
			if entry < 0 {
				entry = d
			}
			c = &stackInfo{funcs: si.funcs[:entry], user: min(si.user, entry)}
			c.nodes, c.pid = in.tree.index(c.funcs, make([]*Node, 0, entry))
			break
		}
	}
	in.cut[i] = c
	return c
}

// interruptEntry reports whether a kernel function is an interrupt or
// exception entry (x86-64 asm_*, arm64 el0*/el1*).
func interruptEntry(name string) bool {
	for _, p := range []string{"asm_", "el0t_", "el1h_", "el0_interrupt", "el1_interrupt"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// schedulerEntry reports whether a kernel function starts the path by
// which the kernel gives the CPU to another thread: the scheduler's entry
// points and the exit-to-user and irq-exit work that calls them.
func schedulerEntry(name string) bool {
	for _, p := range []string{"irqentry_exit", "preempt_schedule"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	switch name {
	case "schedule", "__schedule", "__cond_resched", "_cond_resched", "cond_resched":
		return true
	}
	return false
}

// tracerFrame reports whether a kernel function belongs to perf's event
// handling or to a BPF program on a tracepoint and the code that runs it,
// which run only because the program is being recorded.
func tracerFrame(name string) bool {
	for _, p := range []string{"perf_", "__perf_", "bpf_prog_", "bpf_trace_run", "__bpf_trace_", "__traceiter_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
