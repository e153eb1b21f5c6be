// Package tracer is culprit's function tracer, a collector: it resolves
// function patterns to probe locations (ELF symbols; for Go code the RET
// instructions, found by disassembly), launches a command stopped at its
// exec or attaches to a process, sets the probes through
// internal/traceprog before the command's first instruction, and writes
// every traced call as a Call record of the recording, with the process's
// mappings so that call sites can be named later. Launching and signal
// relaying are internal/collector's. It does not analyse.
package tracer

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/collector"
	"github.com/culprit-dev/culprit/internal/elfx"
	"github.com/culprit-dev/culprit/internal/proc"
	"github.com/culprit-dev/culprit/internal/recorder"
	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/traceprog"
)

// pollInterval is how often the ring of call records is drained: the BPF
// program wakes the reader only when the ring is a quarter full. The CPU
// samples' rings are drained at the same moments. A variable for a test
// that needs the rings to fill between drains.
var pollInterval = 10 * time.Millisecond

// Options configure a trace.
type Options struct {
	Output   string
	Patterns []Pattern
	Args     bool // record arguments and return values
	TimedHz  int  // > 0: record calls only in alternate phases of 1/TimedHz s (timed sampling)
	// Depth > 0 records only calls with fewer than Depth traced calls
	// open below them on their thread.
	Depth int
	// NoCPU leaves out measuring each call's on-CPU time (the program on
	// every context switch and a map lookup at each entry and return).
	NoCPU bool
	// Observe, when set, is given each Probe and Call record as it is
	// written (the caller's summary of the calls: trace.Summary.Add).
	Observe func(recording.Record)
	// Exclude names functions not to trace though the patterns match
	// them (dynamic baseline).
	Exclude map[string]bool
	// Every sets a function's every-N-th-call sampling, over the
	// patterns' #N (dynamic sampling).
	Every map[string]uint32
	// Probing > 0 removes a function's probes once it has been called
	// Probing times (Perun's dynamic probing); with ProbingReattach they
	// are set again after an interval that doubles each time.
	Probing uint64
	// ProbingFor sets dynamic probing's threshold of the functions it
	// names, over Probing, always with reattach (a pipeline keeps the hot
	// functions it protects affordable this way while the others are
	// traced in full).
	ProbingFor      map[string]uint64
	ProbingReattach bool
	ProbingCheck    time.Duration // how often the counts are read (default 100 ms)
	ProbingWait     time.Duration // first interval before setting probes again (default 1 s)
	Duration        time.Duration // stop tracing after this long (0: until exit or signal)
	// TrapBudget > 0 bounds the probes' traps per second, on average:
	// the probes are set for Window at a time; when a window's traps
	// (an entry and a return per call) came faster than TrapBudget, every
	// probe is removed for as long as brings the average down to it, then
	// set again. Each pause is a ProbesOff record.
	TrapBudget float64
	Window     time.Duration // default 1 s
	// SetShare, with TrapBudget, bounds the share of the time the probes
	// are set (from the start of their setting to the end of their
	// removal) once a window is over the budget: a trap's cost varies
	// tenfold with the machine's load and the instruction probed, the
	// share of the time the program runs with probes does not, and it
	// bounds what the probes can take from it. 0: no bound.
	SetShare float64
	// Sched also records the process's scheduler events: switches away
	// (with prev_state and the blocking stack), switches onto a CPU and
	// the wake-ups its threads make (recorder.OpenSched).
	Sched bool
	// SchedPathOnly, with Sched, records of the switches away only what
	// a critical path needs (recorder.OpenSched's pathOnly): their state,
	// and a blocked thread's kernel chain (the kind of wait).
	SchedPathOnly bool
	// CPUSamples, when set, is a recording that CPU samples of the
	// process at CPUHz go to while it is traced (recorder.OpenCPU): where
	// the run's time went, the probes' own cost told apart by the kernel
	// frames of their traps, for choosing what the next trace keeps.
	CPUSamples string
	CPUHz      int
	// CPURingPages is the size of the CPU samples' rings in data pages
	// per CPU, a power of two (0: sized from the rate and the stack copy,
	// as culprit record sizes them).
	CPURingPages int
	Tool         string
	// Extra facts for the recording's Meta (e.g. culprit variance's
	// interval definition).
	Extra map[string]string
	// Refine, when set, is offered every RefineCheck the calls recorded
	// since probes were last set, with every probe so far and the spans
	// when they were off (TrapBudget); it returns more functions of the
	// executable to probe, set at once on the running process (at most
	// MoreProbes in all), or done to be asked no more.
	// lost are the spans in which the tracer dropped calls (Lost records
	// with Since); sched, with Sched, the scheduler events since probes
	// were last set, wake-ups with the waker's functions.
	Refine      func(calls []recording.Call, probes []recording.Probe, off []recording.ProbesOff, lost []recording.Lost, sched []SchedEvent) (more []string, done bool)
	RefineCheck time.Duration
	MoreProbes  int
	// Reads are expressions over the traced functions' parameters whose
	// memory the probes read at entry, with Args (PlanReads): c->id
	// records the id member of what c points to.
	Reads []string
}

// Result summarises a trace.
type Result struct {
	Probes  int
	Calls   uint64
	Events  uint64 // scheduler events recorded (Options.Sched)
	Samples uint64 // CPU samples kept in the recording (Options.CPUSamples)
	// CPULost and CPUThrottled are the CPU samples their rings had no room
	// for, and those the kernel's rate limit kept from being taken.
	CPULost, CPUThrottled uint64
	Lost                  uint64 // call records the ring had no room for
	Depth                 uint64 // calls deeper than the shadow stack, not recorded
	Unmatched             uint64 // returns whose entry was not seen
	Bytes                 int64
	ExitCode              int
	Attach                time.Duration // setting every probe
	Detach                time.Duration // removing them
	Warnings              []string
	Rounds                int // times probes were set (1, or more with Refine)
	// Pauses and Off are how many times, and how long in all, the probes
	// were removed to keep within Options.TrapBudget.
	Pauses int
	Off    time.Duration
	// Removed are the functions dynamic probing removed the probes of at
	// least once: their calls were recorded only while they were set.
	Removed []string
}

type session struct {
	o       Options
	w       *recording.Writer
	t       *traceprog.Tracer
	targets []Target
	res     Result
	pid     int
	maps    *proc.Space
	mapped  map[string]bool
	isGo    bool
	// padsSet are the objects whose landing pads have their probes
	// (traceprog.AttachUnwound), set once with their first RET-probed
	// function.
	padsSet map[string]bool
	goids   goids // Go: each g's goroutine id (GoidOffset)
	pidfd   int
	probing probing
	sched   *recorder.Sched // nil unless Options.Sched
	cpu     *recorder.Sched // nil unless Options.CPUSamples
	exe     string
	recs    []recording.Probe // the Probe records written
	round   []recording.Call  // calls since probes were last set (Refine)
	// rc is the Call record being written, kept here so that writing one
	// allocates nothing (a record handed to the Writer escapes).
	rc      recording.Call
	args    []uint64  // rc's arguments, reused
	next    time.Time // next Refine
	refused int       // probes the kernel refused, already said
	win     windows
	lost    losses
	// drainLimit bounds one drain while the command runs, so that the
	// loop's other work (windows, refinement, dynamic probing) keeps its
	// time when the probes fill the ring as fast as it is read; 0 at the
	// end, to read everything.
	drainLimit time.Duration

	// schedRound are the scheduler events since probes were last set
	// (Refine with Sched), funcs names the executable's functions in them.
	schedRound []SchedEvent
	funcs      *funcTable
}

// windows is the state of the trap budget's windows.
type windows struct {
	on       bool
	since    time.Time // when the current window or pause began
	until    time.Time // when it ends
	traps    uint64    // the probes' traps counted when the window began
	offStart uint64    // sample clock when the current pause began
	off      []recording.ProbesOff
	rate     float64   // traps per second in the last window that was over the budget
	checked  time.Time // when the window's traps were last counted
	// cycle is when the probes began to be set for the current window
	// (or when it followed a window within the budget), base the traps
	// counted then: setting them costs traps too (the counts start at 0
	// with each setting).
	cycle time.Time
	base  uint64
	// removal are the traps counted while the probes were last removed;
	// spent those of every cycle ended, begun when the first window did.
	removal uint64
	spent   uint64
	begun   time.Time
	// set is how long the probes were set in the cycles ended, their
	// setting and removal included.
	set time.Duration
}

// losses are the tracer's counts of calls it could not record as last
// read, and when.
type losses struct {
	calls, depth uint64
	at           uint64 // sample clock just before they were read
	spans        []recording.Lost
}

// noteLosses reads the tracer's counts of calls it could not record (ring
// full, shadow stack full, nested too deep) and, for each that grew since
// the last read, writes a Lost record spanning the two reads: the calls
// were dropped in that span, so an analysis can leave out what overlaps
// it (variance leaves out the intervals).
func (s *session) noteLosses() {
	before := monotonic()
	st := s.t.Stats()
	after := monotonic()
	since := s.lost.at
	if since == 0 {
		since = 1 // before the first read: any time until now
	}
	calls := st.Lost + st.NoThread
	for _, d := range []struct {
		reason    recording.LostReason
		now, prev uint64
	}{{recording.LostCalls, calls, s.lost.calls}, {recording.LostDepth, st.Depth, s.lost.depth}} {
		if d.now > d.prev {
			rec := recording.Lost{Time: after, Since: since, Reason: d.reason, Count: d.now - d.prev, CPU: recording.AnyCPU}
			s.w.Write(&rec)
			s.lost.spans = append(s.lost.spans, rec)
		}
	}
	s.lost.calls, s.lost.depth, s.lost.at = calls, st.Depth, before
}

// probing is the state of dynamic probing.
type probing struct {
	next     time.Time            // next check
	detached map[uint32]time.Time // probe → when to set it again (zero: never)
	wait     map[uint32]time.Duration
	base     map[uint32]uint64 // probe → its hits when last set again
	names    []string          // functions detached, in order
}

func monotonic() uint64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Nano())
}

// prepare resolves the patterns in exe, loads the programs and creates the
// output.
func prepare(o Options, exe string, pid int) (*session, error) {
	if len(o.Patterns) == 0 {
		return nil, fmt.Errorf("no function to trace: give -f PATTERN (a glob on function names, e.g. -f 'parse_*')")
	}
	targets, isGo, err := ResolveEvery(exe, pid, o.Patterns, o.Args, o.Every, o.Exclude)
	if err != nil {
		return nil, err
	}
	if len(targets) == 0 {
		if len(o.Exclude) > 0 {
			return nil, fmt.Errorf("every function of %s the patterns match is left out by the dynamic baseline", exe)
		}
		return nil, fmt.Errorf("no function of %s matches the patterns given", exe)
	}
	sampling := o.Probing > 0 || len(o.ProbingFor) > 0 || o.TrapBudget > 0 // the programs count every probe's calls
	for _, t := range targets {
		sampling = sampling || t.Every > 1
	}
	if o.ProbingCheck <= 0 {
		o.ProbingCheck = 100 * time.Millisecond
	}
	if o.ProbingWait <= 0 {
		o.ProbingWait = time.Second
	}
	if o.Refine != nil && o.MoreProbes <= 0 {
		o.MoreProbes = 4096
	}
	if o.Refine == nil {
		o.MoreProbes = 0
	}
	if o.Window <= 0 {
		o.Window = time.Second
	}
	if o.TrapBudget > 0 && (o.Probing > 0 || len(o.ProbingFor) > 0) {
		return nil, fmt.Errorf("a trap budget and dynamic probing both remove probes: use one")
	}
	if o.RefineCheck <= 0 {
		o.RefineCheck = 200 * time.Millisecond
	}
	strs := false
	for _, t := range targets {
		strs = strs || strArgs(t) != [traceprog.MaxStrs]uint8{}
	}
	strs = o.Args && !isGo && (strs || o.MoreProbes > 0)
	if len(o.Reads) > 0 && !o.Args {
		return nil, fmt.Errorf("reading memory at the probes needs the arguments recorded (Args)")
	}
	if err := PlanReads(targets, o.Reads); err != nil {
		return nil, err
	}
	goidOff := 0
	var goidWarn string
	if isGo {
		var err error
		if goidOff, err = GoidOffset(exe); err != nil {
			goidWarn = fmt.Sprintf("goroutines are named by the address of their runtime g, not their id: %v", err)
		}
	}
	t, err := traceprog.New(traceprog.Options{Go: isGo, GoidOff: goidOff, Args: o.Args, Probes: len(targets) + o.MoreProbes, Sampling: sampling, TimedHz: o.TimedHz, MaxDepth: o.Depth,
		Strings: strs, Reads: len(o.Reads) > 0, CPU: !o.NoCPU})
	if err != nil {
		return nil, err
	}
	w, err := recording.Create(o.Output)
	if err != nil {
		t.Close()
		return nil, err
	}
	if o.Args {
		os.Chmod(o.Output, 0o600) // argument values are process memory
	}
	s := &session{o: o, w: w, t: t, targets: targets, isGo: isGo, goids: goids{}, pidfd: -1, maps: &proc.Space{}, mapped: map[string]bool{}, exe: exe,
		next: time.Now().Add(o.RefineCheck), drainLimit: 5 * pollInterval}
	if goidWarn != "" {
		s.res.Warnings = append(s.res.Warnings, goidWarn)
	}
	return s, nil
}

// unwinds reports whether the object at path unwinds its stack for C++
// exceptions or Rust panics (unwindsFile).
func unwinds(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	return unwindsFile(f)
}

// unwindsFile reports whether an object calls or defines the stack
// unwinder of C++ exceptions and Rust panics (__cxa_throw,
// _Unwind_RaiseException, _Unwind_Resume: a C++ object with a destructor
// to run on the way, every Rust program). Its functions' return probes
// go on their RET instructions (nativeRets): a uretprobe replaces the
// call's return address on the stack with its trampoline's, which no
// unwind table covers, so an exception or panic unwinding through a
// traced call would stop there and the program end (std::terminate,
// Rust's "failed to initiate panic").
func unwindsFile(f *elf.File) bool {
	syms, _ := f.DynamicSymbols()
	st, _ := f.Symbols()
	for _, s := range append(syms, st...) {
		switch elfx.CleanName(s.Name) {
		case "__cxa_throw", "_Unwind_RaiseException", "_Unwind_Resume":
			return true
		}
	}
	return false
}

// landingPads returns the file offsets in the object at path where its
// code meets an exception or panic on the way up, the functions a landing
// pad calls in the frame it belongs to: __cxa_begin_catch (a C++ catch),
// Rust's std::panicking::try::cleanup (catch_unwind's catch; named
// std::panicking::catch_unwind::cleanup in later versions) and
// _Unwind_Resume (a clean-up, which goes on unwinding): their entries
// where the object defines them, else their PLT stubs. The tracer ends
// there the calls the unwinding left (traceprog.AttachUnwound).
func landingPads(path string) []uint64 {
	f, err := elf.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	want := func(name string) bool {
		name, _, _ = strings.Cut(name, "@")
		switch elfx.CleanName(name) {
		case "__cxa_begin_catch", "_Unwind_Resume", "std::panicking::try::cleanup", "std::panicking::catch_unwind::cleanup":
			return true
		}
		return false
	}
	var out []uint64
	seen := map[string]bool{}
	st, _ := f.Symbols()
	dyn, _ := f.DynamicSymbols()
	for _, s := range append(st, dyn...) {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Section == elf.SHN_UNDEF || s.Value == 0 || !want(s.Name) {
			continue
		}
		if off, ok := fileOffset(f, s.Value); ok && !seen[s.Name] {
			seen[s.Name] = true
			out = append(out, off)
		}
	}
	for _, p := range elfx.PLTStubs(f) {
		if !want(p.Name) {
			continue
		}
		if off, ok := fileOffset(f, p.Addr); ok {
			out = append(out, off)
		}
	}
	return out
}

func (s *session) meta(m recording.Meta) {
	host, _ := os.Hostname()
	var u unix.Utsname
	unix.Uname(&u)
	m.Tool = s.o.Tool
	m.Hostname = host
	m.KernelRelease = unix.ByteSliceToString(u.Release[:])
	m.Arch = runtime.GOARCH
	m.StartUnixNano = time.Now().UnixNano()
	m.StartClock = monotonic()
	m.Event = "trace"
	m.Extra = map[string]string{"probes": fmt.Sprint(len(s.targets))}
	if s.o.Args {
		m.Extra["args"] = "1"
	}
	if s.o.TimedHz > 0 {
		m.Extra["timed_sampling_hz"] = fmt.Sprint(s.o.TimedHz)
	}
	if s.o.Sched {
		m.Extra["sched"] = "1"
	}
	for k, v := range s.o.Extra {
		m.Extra[k] = v
	}
	s.w.Write(&m)
}

// strArgs are the char * arguments of a traced function whose strings are
// copied (none for point probes).
func strArgs(t Target) [traceprog.MaxStrs]uint8 {
	if t.Point {
		return [traceprog.MaxStrs]uint8{}
	}
	return StrArgs(t.Params)
}

// probes writes the Probe records of targets from index first on, set at
// since (0: before the command's first instruction).
func (s *session) probes(first int, since uint64) {
	for i, t := range s.targets[first:] {
		p := recording.Probe{ID: uint32(first + i + 1), Function: t.Function, Object: t.Object, BuildID: t.BuildID,
			Offset: t.Offset, Every: t.Every, Params: append(t.Params[:len(t.Params):len(t.Params)], t.ReadParams...), Ret: t.Ret, Since: since}
		s.w.Write(&p)
		if s.o.Observe != nil {
			s.o.Observe(&p)
		}
		s.recs = append(s.recs, p)
	}
}

// attach sets every probe, object by object, for process pid.
func (s *session) attach(pid int) error {
	start := time.Now()
	if err := s.set(0, pid); err != nil {
		return err
	}
	s.probing = probing{next: time.Now().Add(s.o.ProbingCheck), detached: map[uint32]time.Time{}, wait: map[uint32]time.Duration{}, base: map[uint32]uint64{}}
	s.res.Attach = time.Since(start)
	s.win = windows{on: true, since: time.Now(), until: time.Now().Add(s.o.Window), cycle: start, begun: start}
	s.res.Probes = len(s.targets)
	s.res.Rounds = 1
	return nil
}

// set sets the probes of targets from index first on.
func (s *session) set(first, pid int) error {
	// Probes dynamic probing may remove get a link each, so that each can
	// be removed alone; the others share a link per object.
	type group struct {
		obj  string
		each bool
	}
	byObj := map[group][]traceprog.Probe{}
	var order []group
	for i, t := range s.targets[first:] {
		g := group{t.Object, s.probingLimit(first+i) > 0}
		if _, ok := byObj[g]; !ok {
			order = append(order, g)
		}
		byObj[g] = append(byObj[g], traceprog.Probe{ID: uint32(first + i + 1), Offset: t.Offset, Rets: t.Rets, RetInsn: t.RetInsn, Tails: t.Tails, Every: t.Every, Point: t.Point, RefCtr: t.RefCtr, Args: t.USDTArgs, BeginArgs: t.BeginArgs, BeginID: t.BeginID, EndID: t.EndID,
			Begins: t.Begins, Ends: t.Ends, EndRefCtr: t.EndRefCtr, BeginCFA: t.BeginCFA, Strs: strArgs(t), Reads: t.Reads})
	}
	if first == 0 {
		s.padsSet = nil // set again with the other probes
	}
	for _, g := range order {
		obj := g.obj
		if !s.isGo && !s.padsSet[obj] && slices.ContainsFunc(byObj[g], func(p traceprog.Probe) bool { return p.RetInsn }) {
			if err := s.t.AttachUnwound(obj, landingPads(obj), pid); err != nil {
				return err
			}
			if s.padsSet == nil {
				s.padsSet = map[string]bool{}
			}
			s.padsSet[obj] = true
		}
		attach := s.t.Attach
		if g.each {
			attach = s.t.AttachEach
		}
		if err := attach(obj, byObj[g], pid); err != nil {
			if ids := s.t.Refused(); len(ids) > s.refused {
				var names []string
				for _, id := range ids[s.refused:] {
					names = append(names, s.targets[id-1].Function)
				}
				return fmt.Errorf("the kernel refused to probe %s in %s (%w): trace other functions", strings.Join(names, ", "), obj, err)
			}
			return err
		}
	}
	if ids := s.t.Refused(); len(ids) > s.refused {
		var names []string
		for _, id := range ids {
			names = append(names, s.targets[id-1].Function)
		}
		names = names[s.refused:]
		s.refused = len(ids)
		n := len(names)
		if n > 8 {
			names = append(names[:8:8], fmt.Sprintf("and %d more", n-8))
		}
		s.res.Warnings = append(s.res.Warnings, fmt.Sprintf("the kernel refused the probes of %d of the functions (%s): their calls are not traced", n, strings.Join(names, ", ")))
	}
	return nil
}

// refine offers the calls since probes were last set to o.Refine and sets
// the probes it asks for on the running process.
func (s *session) refine() {
	if s.o.Refine == nil || time.Now().Before(s.next) || !s.win.on {
		return
	}
	s.next = time.Now().Add(s.o.RefineCheck)
	more, done := s.o.Refine(s.round, s.recs, s.win.off, s.lost.spans, s.schedRound)
	if done {
		s.o.Refine, s.round, s.schedRound = nil, nil, nil
		return
	}
	if len(more) == 0 {
		return
	}
	var pats []Pattern
	for _, f := range more {
		pats = append(pats, Pattern{Glob: GlobQuote(f)})
	}
	targets, _, err := Resolve(s.exe, s.pid, pats, s.o.Args)
	if err == nil {
		// Callees need not have the expressions' parameters.
		if PlanReads(targets, s.o.Reads) != nil {
			for i := range targets {
				targets[i].Reads, targets[i].ReadParams = nil, nil
			}
		}
	}
	if err != nil {
		s.res.Warnings = append(s.res.Warnings, fmt.Sprintf("adding probes: %v", err))
		s.o.Refine, s.round, s.schedRound = nil, nil, nil
		return
	}
	have := map[string]bool{}
	for _, t := range s.targets {
		have[fmt.Sprintf("%s\x00%x", t.Object, t.Offset)] = true
	}
	first := len(s.targets)
	for _, t := range targets {
		k := fmt.Sprintf("%s\x00%x", t.Object, t.Offset)
		if have[k] {
			continue
		}
		if len(s.targets)-s.res.Probes >= s.o.MoreProbes {
			s.res.Warnings = append(s.res.Warnings, fmt.Sprintf("refinement stopped at %d probes added: no room for more", s.o.MoreProbes))
			break
		}
		have[k] = true
		s.targets = append(s.targets, t)
	}
	if len(s.targets) == first {
		s.o.Refine, s.round, s.schedRound = nil, nil, nil // nothing new to learn
		return
	}
	if err := s.set(first, s.pid); err != nil {
		s.res.Warnings = append(s.res.Warnings, fmt.Sprintf("adding probes: %v", err))
		s.targets = s.targets[:first]
		s.o.Refine, s.round, s.schedRound = nil, nil, nil
		return
	}
	s.probes(first, monotonic())
	s.round, s.schedRound = s.round[:0], s.schedRound[:0]
	s.res.Rounds++
}

// GlobQuote makes a function's name (as a trace names it) a glob that
// matches only that function: anchored at the outermost scope, so that
// it names no member of the same name in another scope.
func GlobQuote(name string) string {
	var b strings.Builder
	b.WriteString("::")
	for _, r := range name {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// readMaps writes the executable mappings of the process not yet written.
func (s *session) readMaps() {
	maps, err := proc.Maps(s.pid)
	if err != nil {
		return
	}
	now := monotonic()
	for _, m := range maps {
		if !m.Exec() {
			continue
		}
		key := fmt.Sprintf("%x-%x-%x-%s", m.Start, m.End, m.Offset, m.Path)
		if s.mapped[key] {
			continue
		}
		s.mapped[key] = true
		s.maps.Add(m)
		var bid []byte
		if len(m.Path) > 0 && m.Path[0] == '/' {
			bid = elfx.FileBuildID(m.Path)
		}
		s.w.Write(&recording.Mmap{Time: now, PID: uint32(s.pid), TID: uint32(s.pid), Start: m.Start, Len: m.End - m.Start,
			Pgoff: m.Offset, Prot: unix.PROT_READ | unix.PROT_EXEC, BuildID: bid, Path: m.Path})
	}
}

// mappedBySamples writes the mapping of process pid (the traced one when
// 0) that holds addr as the CPU samples' session knows it, and says
// whether it knew one.
func (s *session) mappedBySamples(pid uint32, addr uint64) bool {
	if s.cpu == nil {
		return false
	}
	if pid == 0 {
		pid = uint32(s.pid)
	}
	m, ok := s.cpu.Mapping(pid, addr)
	if !ok || m.Path == "" {
		return false
	}
	s.maps.Add(m)
	s.mapped[fmt.Sprintf("%x-%x-%x-%s", m.Start, m.End, m.Offset, m.Path)] = true
	var bid []byte
	if m.Path[0] == '/' {
		bid = elfx.FileBuildID(m.Path)
	}
	s.w.Write(&recording.Mmap{Time: monotonic(), PID: pid, TID: pid, Start: m.Start, Len: m.End - m.Start,
		Pgoff: m.Offset, Prot: unix.PROT_READ | unix.PROT_EXEC, BuildID: bid, Path: m.Path})
	return true
}

// record writes one call; a call site outside every known mapping (a
// library loaded since) makes the mappings be read again, and when the
// process has gone (a library it loaded shortly before it exited) the
// CPU samples' session is asked, which has followed its mmaps.
func (s *session) record(c *traceprog.Call) {
	if c.Site != 0 && s.pid > 0 {
		if _, ok := s.maps.Find(c.Site); !ok {
			s.readMaps()
			if _, ok := s.maps.Find(c.Site); !ok {
				if !s.mappedBySamples(c.PID, c.Site) {
					s.maps.Add(proc.Mapping{Start: c.Site, End: c.Site + 1}) // unknown: do not read again for it
				}
			}
		}
	}
	if c.Probe == 0 || int(c.Probe) > len(s.targets) {
		return
	}
	rc := &s.rc
	*rc = recording.Call{Start: c.Start, End: c.End, Child: c.Child, PID: c.PID, TID: c.TID, Probe: c.Probe,
		Caller: c.Caller, Depth: c.Depth, Site: c.Site, Flags: c.Flags, Ret: c.Ret, Goroutine: s.goids.of(c.G, c.Goid)}
	if rc.PID == 0 && s.pid > 0 {
		rc.PID = uint32(s.pid)
	}
	if s.o.Args {
		// Refine keeps the calls: each its own arguments.
		args := s.args[:0]
		if s.o.Refine != nil {
			args = nil
		}
		if t := &s.targets[c.Probe-1]; len(t.Params) > 0 {
			args = append(args, c.Args[:len(t.Params)]...)
			args = append(args, c.Mem[:len(t.Reads)]...)
		} else {
			args = append(args, c.Args[:]...)
		}
		rc.Args = args
		if s.o.Refine == nil {
			s.args = args
		}
	}
	if c.Flags&traceprog.Unreturned != 0 {
		rc.Flags = recording.CallUnreturned
		if c.Flags&traceprog.Unwound != 0 {
			rc.Flags |= recording.CallUnwound
		}
	}
	if c.Flags&traceprog.TailJumped != 0 {
		rc.Flags |= recording.CallTailJumped
	}
	if c.Flags&traceprog.CPU != 0 {
		rc.Flags |= recording.CallCPU
		rc.Off, rc.ChildOff = c.Off, c.ChildOff
	}
	if c.Flags&traceprog.CPULost != 0 {
		rc.Flags |= recording.CallCPULost
	}
	rc.Strs = c.Strs
	s.w.Write(rc)
	if s.o.Observe != nil {
		s.o.Observe(rc)
	}
	s.res.Calls++
	if s.o.Refine != nil {
		s.round = append(s.round, *rc)
	}
}

// openSched opens the scheduler events when asked for.
func (s *session) openSched(pid int, launched bool) error {
	if !s.o.Sched {
		return nil
	}
	sc, err := recorder.OpenSched(s.w, pid, launched, s.o.SchedPathOnly)
	if err != nil {
		return err
	}
	s.sched = sc
	if s.o.Refine != nil {
		sc.OnEvent(s.onSched)
	}
	return nil
}

// openCPU starts the CPU samples when asked for. Where they cannot be
// taken the trace goes on without them, saying so.
func (s *session) openCPU(pid int, launched bool, meta recording.Meta) {
	if s.o.CPUSamples == "" {
		return
	}
	meta.Tool = s.o.Tool
	c, err := recorder.OpenCPU(s.o.CPUSamples, pid, launched, s.o.CPUHz, s.o.CPURingPages, meta)
	if err != nil {
		s.res.Warnings = append(s.res.Warnings, fmt.Sprintf("sampling the CPU beside the trace: %v", err))
		return
	}
	s.cpu = c
}

// closeCPU ends the CPU samples' recording.
func (s *session) closeCPU() {
	if s.cpu == nil {
		return
	}
	_, lost, warns := s.cpu.Close()
	s.res.CPULost, s.res.CPUThrottled = lost, s.cpu.Throttled()
	s.cpu = nil
	for _, w := range warns {
		s.res.Warnings = append(s.res.Warnings, "CPU samples beside the trace: "+w)
	}
	if lost > 0 {
		s.res.Warnings = append(s.res.Warnings, fmt.Sprintf("%d CPU samples beside the trace were lost", lost))
	}
}

func (s *session) drain(wait time.Duration) {
	if s.sched != nil {
		s.sched.Drain()
	}
	if s.cpu != nil {
		s.cpu.Drain()
	}
	if err := s.t.Read(wait, s.drainLimit, s.record); err != nil {
		s.res.Warnings = append(s.res.Warnings, fmt.Sprintf("reading call records: %v", err))
	}
	s.noteLosses()
	s.w.Flush()
}

// finish detaches, drains what is left, closes calls still open and ends
// the recording.
func (s *session) finish(exitCode int) (Result, error) {
	// A launched command that exited left its threads' last calls in
	// their batches (docs/trace.md): they are read while the CPU samples'
	// session still knows the mappings of its libraries (a call site in
	// one it loaded just before it exited has no /proc maps left).
	if exitCode >= 0 {
		s.t.TakeBatched(s.record)
	}
	// The CPU samples end before the probes are removed: a call entered
	// while they are being removed can have its return probe armed (its
	// trampoline on the stack) and no record, so a sample then could
	// not be given its callers.
	s.closeCPU()
	start := time.Now()
	s.t.Detach()
	s.res.Detach = time.Since(start)
	s.drainLimit = 0
	if !s.win.on {
		off := recording.ProbesOff{Start: s.win.offStart, End: monotonic()}
		s.win.off = append(s.win.off, off)
		s.w.Write(&off)
	}
	if n := len(s.win.off); n > 0 {
		var total uint64
		for _, o := range s.win.off {
			total += o.End - o.Start
		}
		s.res.Pauses, s.res.Off = n, time.Duration(total)
		spent, set := s.win.spent, s.win.set
		if s.win.on {
			spent += s.traps() - s.win.base
			set += start.Sub(s.win.cycle) + s.res.Detach
		}
		run := time.Since(s.win.begun)
		s.res.Warnings = append(s.res.Warnings, fmt.Sprintf("the probes took %.0f traps a second, over the budget of %.0f (--trap-budget): they were off %d times, %s in all; %d traps in all, %.0f a second over the run; set %.1f%% of the time, setting and removal included",
			s.win.rate, s.o.TrapBudget, n, s.res.Off.Round(time.Millisecond), spent, float64(spent)/run.Seconds(), 100*set.Seconds()/run.Seconds()))
	}
	s.drain(0)
	s.t.Leftovers(monotonic(), s.record)
	samples := s.keepCPU()
	var events, eventsLost uint64
	if s.sched != nil {
		var warns []string
		events, eventsLost, warns = s.sched.Close()
		s.sched = nil
		s.res.Warnings = append(s.res.Warnings, warns...)
		s.res.Events = events
		if eventsLost > 0 {
			s.res.Warnings = append(s.res.Warnings, fmt.Sprintf("%d scheduler events were lost: thread states around them may be wrong", eventsLost))
		}
	}
	st := s.t.Stats() // the drain above wrote the last drops' Lost records
	s.res.Lost, s.res.Depth, s.res.Unmatched = st.Lost+st.NoThread, st.Depth, st.Unmatched
	if st.Unseen > 0 {
		s.res.Warnings = append(s.res.Warnings, fmt.Sprintf("%d calls have no time on the CPU, only their duration: the kernel did not show culprit every context switch of their thread (it drops some under load, and skips them on a CPU already running a BPF program)", st.Unseen))
	}
	now := monotonic()
	if s.res.Lost > 0 {
		s.res.Warnings = append(s.res.Warnings, fmt.Sprintf("%d calls were not recorded: the ring of call records was full (trace fewer functions, or every N-th call with -f PATTERN#N)", s.res.Lost))
	}
	if s.res.Depth > 0 {
		s.res.Warnings = append(s.res.Warnings, fmt.Sprintf("%d calls were not recorded: nested deeper than %d traced calls", s.res.Depth, traceprog.MaxDepth))
	}
	for _, f := range s.probing.names {
		if !slices.Contains(s.res.Removed, f) {
			s.res.Removed = append(s.res.Removed, f)
		}
	}
	if n := len(s.probing.names); n > 0 {
		names := s.probing.names
		if n > 8 {
			names = append(names[:8:8], fmt.Sprintf("and %d more", n-8))
		}
		limit := fmt.Sprintf("more than %d calls", s.o.Probing)
		if len(s.o.ProbingFor) > 0 {
			limit = "their thresholds' calls"
		}
		what := "the counts of those functions stop there"
		if s.o.ProbingReattach || len(s.o.ProbingFor) > 0 {
			what = "their calls are recorded while the probes are set, the intervals between doubling"
		}
		s.res.Warnings = append(s.res.Warnings, fmt.Sprintf("dynamic probing removed probes %d times after %s (%s): %s", n, limit, strings.Join(names, ", "), what))
	}
	if s.res.Calls == 0 && exitCode < 0 && s.res.Probes > 0 {
		// Attached: the probes were set on the running process, and a
		// program busy elsewhere for the whole time (starting up, or
		// blocked) makes none of the calls traced.
		s.res.Warnings = append(s.res.Warnings, fmt.Sprintf("no traced function was called in the %s the probes were set on process %d: its threads ran other code or waited (the CPU samples, when taken, show where)",
			(time.Since(s.win.begun)-s.res.Detach).Round(time.Millisecond), s.pid))
	}
	s.res.ExitCode = exitCode
	// The End record counts every record lost, as the Lost records copied
	// from the CPU samples' recording (keepCPU) and written here tell them.
	s.w.Write(&recording.End{Time: now, Samples: events + samples, Lost: s.res.Lost + s.res.Depth + eventsLost + s.res.CPULost,
		Throttled: s.res.CPUThrottled, ExitCode: int32(exitCode), Calls: s.res.Calls})
	err := s.w.Close()
	s.res.Bytes = s.w.Bytes()
	s.t.Close()
	if s.pidfd >= 0 {
		unix.Close(s.pidfd)
	}
	return s.res, err
}

func (s *session) abandon() {
	if s.sched != nil {
		s.sched.Close()
	}
	if s.cpu != nil {
		s.cpu.Close()
		os.Remove(s.o.CPUSamples)
	}
	s.t.Close()
	s.w.Close()
	os.Remove(s.o.Output)
}

// probe runs dynamic probing's check: a probe called more than
// o.Probing times since it was set is removed (entry first, its return
// after a drain interval, so that calls in flight return); with reattach,
// it is set again after an interval that doubles at each removal.
func (s *session) probe() {
	if s.o.Probing == 0 && len(s.o.ProbingFor) == 0 || time.Now().Before(s.probing.next) {
		return
	}
	now := time.Now()
	s.probing.next = now.Add(s.o.ProbingCheck)
	var gone []uint32
	defer func() { s.t.DetachProbes(gone, pollInterval, s.o.ProbingWait) }()
	for i := range s.targets {
		id := uint32(i + 1)
		limit := s.probingLimit(i)
		if limit == 0 {
			continue
		}
		_, own := s.o.ProbingFor[s.targets[i].Function]
		reattach := s.o.ProbingReattach || own
		if at, off := s.probing.detached[id]; off {
			if reattach && !at.IsZero() && now.After(at) {
				if err := s.t.ReattachProbe(id); err == nil {
					delete(s.probing.detached, id)
					s.probing.base[id] = s.t.Hits(id)
				}
			}
			continue
		}
		if s.t.Hits(id)-s.probing.base[id] <= limit {
			continue
		}
		gone = append(gone, id)
		s.probing.names = append(s.probing.names, s.targets[i].Function)
		var again time.Time
		if reattach {
			w := s.probing.wait[id]
			if w == 0 {
				w = s.o.ProbingWait
			} else {
				w *= 2
			}
			s.probing.wait[id] = w
			again = time.Now().Add(w)
		}
		s.probing.detached[id] = again
	}
}

// probingLimit is dynamic probing's threshold for target i: 0 for none.
func (s *session) probingLimit(i int) uint64 {
	if i >= len(s.targets) || s.targets[i].Pair {
		return 0 // a USDT pair's several links are not removed alone
	}
	if n, ok := s.o.ProbingFor[s.targets[i].Function]; ok {
		return n
	}
	return s.o.Probing
}

// traps counts the traps the probes have taken: an entry and a return
// per call (one per hit of a point probe).
func (s *session) traps() uint64 {
	var n uint64
	hits := s.t.AllHits()
	for i, t := range s.targets {
		if i+1 >= len(hits) {
			break
		}
		h := hits[i+1]
		if !t.Point {
			h *= 2
		}
		n += h
	}
	return n
}

// budgetCheck is how often a window's traps are counted before its end.
const budgetCheck = 20 * time.Millisecond

// window keeps the probes' traps within o.TrapBudget: at the end of a
// window whose traps came faster, every probe is removed for as long as
// brings the average rate down to the budget; after that pause they are
// set again for another window. A window ends early once its traps reach
// what the whole window may take (TrapBudget × Window): at a rate far over
// the budget a whole window would cost more than a short run's pauses
// win back (a server that starts under culprit spends its first window
// idle, so its first busy one came at full rate).
func (s *session) window() {
	if s.o.TrapBudget <= 0 {
		return
	}
	now := time.Now()
	if now.Before(s.win.until) {
		if !s.win.on || now.Sub(s.win.checked) < budgetCheck {
			return
		}
		s.win.checked = now
		// A window may take what a whole window at the budget would,
		// or, when more, as many traps as the last removal of the
		// probes cost: then about half of what a pause pays for goes
		// to the window's intervals.
		allow := max(s.o.TrapBudget*s.o.Window.Seconds(), float64(s.win.removal))
		if float64(s.traps()-s.win.traps) < allow {
			return
		}
	}
	if !s.win.on {
		cycle := time.Now()
		if err := s.set(0, s.pid); err != nil {
			s.t.Detach()
			s.res.Warnings = append(s.res.Warnings, fmt.Sprintf("setting the probes again after a pause: %v; they stay off", err))
			s.o.TrapBudget, s.o.Refine = 0, nil // the pause lasts to the end
			return
		}
		off := recording.ProbesOff{Start: s.win.offStart, End: monotonic()}
		s.win.off = append(s.win.off, off)
		s.w.Write(&off)
		s.win.on, s.win.since, s.win.until, s.win.traps = true, time.Now(), time.Now().Add(s.o.Window), s.traps()
		s.win.cycle, s.win.base = cycle, 0
		return
	}
	traps := s.traps()
	rate := float64(traps-s.win.traps) / now.Sub(s.win.since).Seconds()
	if rate <= s.o.TrapBudget {
		s.win.since, s.win.until, s.win.traps = now, now.Add(s.o.Window), traps
		s.win.cycle, s.win.base = now, traps
		return
	}
	s.win.rate = rate
	s.win.offStart = monotonic()
	s.t.Pause()
	// Removing hundreds of probes takes from tens of milliseconds to
	// seconds on a busy machine, the breakpoints going one by one while
	// the program goes on trapping at the window's rate. The traps
	// counted while they went, and while they were set, are the
	// window's as much as its own: the pause makes the average over the
	// whole cycle, from the setting's start, the budget.
	after := s.traps()
	s.win.removal = after - traps
	s.win.spent += after - s.win.base
	on := time.Since(s.win.cycle)
	s.win.set += on
	cycle := time.Duration(float64(after-s.win.base) / s.o.TrapBudget * float64(time.Second))
	if s.o.SetShare > 0 {
		cycle = max(cycle, time.Duration(float64(on)/s.o.SetShare))
	}
	pause := cycle - on
	s.win.on, s.win.since, s.win.until = false, time.Now(), time.Now().Add(max(pause, 0))
}

// wait waits pollInterval (with a pidfd, then looks whether the process
// has exited), then drains the ring; it reports whether the process has
// exited.
func (s *session) wait() bool {
	s.probe()
	s.t.RetireReturns()
	s.window()
	s.refine()
	exited := false
	if s.pidfd >= 0 {
		// Slept in the Go runtime, then polled without waiting: a
		// thread blocked in a system call of 10 ms or more has its P
		// taken by the runtime's monitor, which then wakes every 20 µs
		// for a millisecond and more after each (a tenth of culprit's
		// own CPU in a trace, measured); a goroutine asleep leaves it
		// idle.
		time.Sleep(pollInterval)
		fds := []unix.PollFd{{Fd: int32(s.pidfd), Events: unix.POLLIN}}
		unix.Poll(fds, 0)
		exited = fds[0].Revents&(unix.POLLIN|unix.POLLHUP) != 0
		s.drain(0)
	} else {
		s.drain(pollInterval)
		exited = !proc.Exists(s.pid)
	}
	return exited
}

// Launch runs argv with the probes set before its first instruction and
// returns when it exits.
func Launch(o Options, argv []string) (Result, error) {
	if len(argv) == 0 {
		return Result{}, fmt.Errorf("no command given: use culprit trace -f PATTERN -- CMD [ARGS...]")
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return Result{}, fmt.Errorf("%w: %s", collector.ErrCommandNotFound, argv[0])
	}
	s, err := prepare(o, path, 0)
	if err != nil {
		return Result{}, err
	}
	relay := collector.CatchSignals()
	defer relay.Stop()

	// Ptrace requests must come from the thread that started the command.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	child, err := collector.Start(argv, 0)
	if err != nil {
		s.abandon()
		return Result{}, err
	}
	pid := child.Pid
	s.pid = pid
	s.meta(recording.Meta{Command: argv})
	if err := s.attach(pid); err != nil {
		child.Kill()
		s.abandon()
		return Result{}, err
	}
	if err := s.openSched(pid, true); err != nil {
		child.Kill()
		s.abandon()
		return Result{}, err
	}
	s.openCPU(pid, true, recording.Meta{Command: argv})
	s.probes(0, 0) // set before its first instruction
	s.w.Write(&recording.Comm{Time: monotonic(), PID: uint32(pid), TID: uint32(pid), Exec: true, Name: proc.Comm(pid, pid)})
	s.readMaps()
	relay.Caught()
	if err := child.Release(); err != nil {
		child.Kill()
		s.abandon()
		return Result{}, err
	}
	relay.Forward(pid)
	if fd, err := unix.PidfdOpen(pid, 0); err == nil {
		s.pidfd = fd
	}
	code, err := child.Run(s.pidfd, o.Duration, s.wait, func() {
		s.t.Detach() // the command runs on untraced
		s.o.TrapBudget, s.o.Refine = 0, nil
	})
	if err != nil {
		s.res.Warnings = append(s.res.Warnings, err.Error())
	}
	return s.finish(code)
}

// Attach traces the running process pid until stop is closed, the
// duration ends or the process exits, then removes the probes, leaving it
// running.
func Attach(o Options, pid int, stop <-chan struct{}) (Result, error) {
	if pid <= 0 || !proc.Exists(pid) {
		return Result{}, fmt.Errorf("no process with PID %d: %w", pid, proc.ErrNoProcess)
	}
	exe := proc.Exe(pid)
	if exe == "" {
		return Result{}, fmt.Errorf("reading the executable of process %d: is it a kernel thread, or not yours?", pid)
	}
	// A deleted or replaced executable is reached through /proc.
	if _, err := os.Stat(exe); err != nil {
		exe = fmt.Sprintf("/proc/%d/exe", pid)
	}
	s, err := prepare(o, exe, pid)
	if err != nil {
		return Result{}, err
	}
	s.pid = pid
	s.meta(recording.Meta{AttachPID: pid, Command: proc.Cmdline(pid)})
	if err := s.attach(pid); err != nil {
		s.abandon()
		return Result{}, err
	}
	if err := s.openSched(pid, false); err != nil {
		s.abandon()
		return Result{}, err
	}
	s.openCPU(pid, false, recording.Meta{AttachPID: pid, Command: proc.Cmdline(pid)})
	s.probes(0, monotonic())
	s.w.Write(&recording.Comm{Time: monotonic(), PID: uint32(pid), TID: uint32(pid), Name: proc.Comm(pid, pid)})
	s.readMaps()
	if fd, err := unix.PidfdOpen(pid, 0); err == nil {
		s.pidfd = fd
	}
	collector.Follow(stop, o.Duration, s.wait)
	return s.finish(-1)
}
