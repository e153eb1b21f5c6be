// Package traceprog is the BPF side of culprit's function tracer: a
// program at each traced function's entry and one at its return, a shadow
// stack per thread (per goroutine in Go programs) in a BPF map so that
// recursion, threads and calls that never return (longjmp, C++
// unwinding) are timed and nested correctly, a per-probe counter for
// every-N-th-call sampling, and a ring buffer of call records. It attaches
// probes in batches (one uprobe-multi link per object and kind) and reads
// the records back. It knows nothing of symbols, DWARF or recordings.
//
// The programs are built with cilium/ebpf's asm, as internal/sampleprog's
// is, so that building culprit needs no clang: the shadow stack is a few
// hundred instructions, unrolled where the verifier wants bounds.
package traceprog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"

	"github.com/culprit-dev/culprit/internal/bpfasm"
	"github.com/culprit-dev/culprit/internal/perf"
)

// RingBytes is the size of the ring of call records: 16 MiB, about
// 210,000 records of a trace without --args (80 bytes each with the
// ring's header), a fifth of a second at a million traced calls per
// second.
const RingBytes = 16 << 20

// Options configure the programs.
type Options struct {
	Go bool // the traced program is a Go program (goroutine stacks, RET probes)
	// GoidOff > 0 (Go) is the offset of goid in the runtime's g struct
	// (from the program's DWARF): each call also records its goroutine's
	// id (Call.Goid).
	GoidOff int
	Args    bool // record argument registers and return values
	Probes  int  // number of probes (IDs 1..Probes)
	// Sampling is set when some probe records only every N-th call
	// (Probe.Every > 1); without it every call is recorded.
	Sampling bool
	// TimedHz > 0 records calls only in alternate phases of 1/TimedHz
	// seconds (Perun's timed sampling): a cpu-clock perf event on CPU 0
	// ticks TimedHz times a second and a BPF program on it flips the
	// phase; entries in a dormant phase return at once.
	TimedHz int
	// MaxDepth > 0 records only calls at a traced depth under it.
	MaxDepth int
	// Strings: some probe has char * arguments to copy (Probe.Strs).
	Strings bool
	// Reads: some probe reads memory at entry (Probe.Reads; needs Args).
	Reads bool
	// CPU measures each call's on-CPU time as well: a program on the
	// sched:sched_switch tracepoint keeps every traced thread's time off
	// the CPU, and each call record carries how much of it fell inside
	// the call (Call.Off).
	CPU bool
}

// Probe is one traced function of an object.
type Probe struct {
	ID     uint32 // 1-based, unique in the tracer
	Offset uint64 // file offset of the entry
	// Rets are the file offsets of its RET instructions; when set, they
	// take the place of a uretprobe: in Go code, whose stacks move, and
	// in native code that C++ exceptions or Rust panics unwind through,
	// where they also include the jumps of its tail calls (see
	// returnProgram's RetInsn).
	Rets []uint64
	// RetInsn: the return probes are on Rets, none when it is empty (a
	// function that never returns), not a uretprobe. Go probes always.
	RetInsn bool
	// Tails (native code, RetInsn) are the file offsets of the jumps of
	// its tail calls, where its call ends flagged TailJumped.
	Tails []uint64
	Every uint32 // record the first and every Every-th call (0, 1: all)
	// Point makes it a point probe: each time Offset is reached is
	// recorded (flag Point), with no return probe.
	Point bool
	// Ends make it a USDT begin/end pair: Offset and Begins are where its
	// begin probe is, Ends where its end probe is; a call is entered at a
	// begin and returns at the next end on its thread (its frame is
	// matched by probe). EndRefCtr is the end probe's semaphore.
	Begins, Ends []uint64
	EndRefCtr    uint64
	// BeginCFA are PairCFA of Offset, then of each of Begins (0 or
	// missing: not known).
	BeginCFA []uint32
	// BeginArgs (a pair's, with Options.Args) are the USDT arguments of
	// its begin at Offset, then at each of Begins: recorded in the call
	// record's argument slots in place of the registers.
	BeginArgs [][]ArgSpec
	// BeginID and EndID (a pair's) are its first USDT operand at Offset
	// and each of Begins, and at each of Ends: when given, an end returns
	// the innermost open begin of its pair with the same value, if one
	// is within reach (pairReach), else the innermost.
	BeginID, EndID []ArgSpec
	// RefCtr is the file offset of a USDT semaphore the kernel counts up
	// while the probe is set (0: none).
	RefCtr uint64
	// Args are a USDT point probe's arguments, recorded in the call
	// record's argument slots.
	Args []ArgSpec
	// Strs are the (index+1) of up to MaxStrs char * arguments whose
	// strings are copied (with Options.Strings); 0: none.
	Strs [MaxStrs]uint8
	// Reads are up to MaxReads values of memory read at entry (with
	// Options.Reads), recorded in Call.Mem in this order.
	Reads []Read
}

// Read is a value of memory reached from an argument register: Offs[0]
// is added to the register's value and 8 bytes (a pointer) read there,
// Offs[1] added to that, and so on; the last hop reads Size bytes (1 to
// 8), zero-extended. c->id is one hop, c->req->id two.
type Read struct {
	Arg  int     // 0-based argument register
	Offs []int32 // 1 to MaxHops
	Size int
}

// Tracer holds the loaded programs, their maps and the attached links.
type Tracer struct {
	o                              Options
	stacks, zero, counts, stats    *ebpf.Map
	slots                          *ebpf.Map // not Go: the threads' slots (Slots)
	slotMem                        []byte    // slots, mapped (unmapped by Close)
	events, phase                  *ebpf.Map
	stop                           *ebpf.Map // not 0: the session programs enter no more calls (Detach)
	stopped                        bool      // stop is set
	entry, ret, retInsn, flip, hit *ebpf.Program
	clockFD                        int
	multi                          bool
	links                          []link.Link       // entry probes (and dynamic probing's)
	rets                           []link.Link       // return probes
	own                            map[uint32]*owned // probes with links of their own (AttachEach)
	held                           map[uint32]*heldReturn
	closing                        sync.WaitGroup // DetachProbes' links still being closed
	rd                             *ringbuf.Reader
	// loadHit loads the point-probe program, the first time a point probe
	// is set: a trace without point probes does without it.
	loadHit func(points []Probe) (*ebpf.Program, error)
	// loadPair returns the entry and end programs for pairs: ones shared
	// by all (loaded the first time a pair is set), or, with --args and
	// begins that have USDT arguments or with pairs matched by an id,
	// ones that read those of these pairs.
	loadPair           func(pairs []Probe) (entry, end *ebpf.Program, err error)
	pairEntry, pairEnd *ebpf.Program
	// loadNative loads, the first time native code gets return probes on
	// its RET instructions, their program (retNative) and the one at the
	// unwinder's landing pads (unwound).
	loadNative                   func() error
	retNative, tailJump, unwound *ebpf.Program
	// loadSession loads (New, for native code) the program of uprobe
	// session links (session), which set a call's entry and return
	// probes in one step; noSession is set when the kernel has no such
	// links (before Linux 6.13): the entry and return probes are then
	// separate links.
	loadSession func() error
	session     *ebpf.Program
	// loadRet loads the uretprobes' program (ret) of separate links.
	loadRet   func() error
	noSession bool
	// separate: Attach sets entry and return links apart (AttachEach's,
	// whose returns DetachProbes keeps after their entries).
	separate bool
	// argHits are point-probe and pair-entry programs that also read USDT
	// arguments, one per attachPoints or attachPairs call with such probes.
	argHits []*ebpf.Program
	strs    *ebpf.Map     // Strings: probe id → its string arguments
	reads   *ebpf.Map     // Reads: probe id → its memory reads
	offcpu  *ebpf.Map     // CPU, Go: thread → when it left the CPU, its off-CPU total (else in stacks)
	swtch   *ebpf.Program // CPU: on sched:sched_switch
	swLink  link.Link
	pending map[uint32]pendingStrs // by thread: a string record before its call's
	// unread are the calls Pause took from the threads' batches, given
	// to the next Read first.
	unread []Call
	// refused are the probes the kernel would not set (see Attach).
	refused map[uint32]bool
}

// Stats are the tracer's own counts of what it could not record.
type Stats struct {
	Lost      uint64 // call records dropped: the ring was full
	Depth     uint64 // calls not recorded: deeper than MaxDepth traced frames
	Unmatched uint64 // returns whose entry was not seen (attached mid-call)
	NoThread  uint64 // calls not recorded: the map of shadow stacks was full
	// Unseen are calls recorded without their time on the CPU because one
	// of their thread's context switches during them reached no program
	// at all: the kernel did not deliver the tracepoint event, or skipped
	// the program on a CPU where another BPF program was running.
	Unseen uint64
}

// Call is one call record.
type Call struct {
	Start, End uint64 // CLOCK_MONOTONIC ns
	Child      uint64 // ns spent in traced calls it made
	Site       uint64 // return address: the instruction after the call
	PID, TID   uint32
	Probe      uint32
	Caller     uint32 // the probe of the traced frame below it; 0: none
	Depth      uint32 // traced frames below it
	Flags      uint32 // Unreturned
	Args       [MaxArgs]uint64
	Ret        uint64
	// Strs are the strings of the probe's Strs arguments, in that order
	// (with Options.Strings; nil when none were recorded).
	Strs []string
	// Mem are the values of the probe's Reads, in that order (0 where a
	// read faulted).
	Mem [MaxReads]uint64
	// Off is how long the call's thread was off the CPU during the call
	// (preempted, blocked, asleep), ChildOff how much of that fell in the
	// traced calls it made; both measured only with flag CPU.
	Off, ChildOff uint64
	// G is, in Go programs, the goroutine that made the call: the address
	// of its runtime g (R14 under Go's register ABI), which its shadow
	// stack is keyed by, so that a call that blocked and returned on
	// another thread is still its goroutine's; 0 in other programs.
	G uint64
	// Goid is, with Options.GoidOff, the id the runtime gave that
	// goroutine (its goid, read from the g when the call ended; 0 when
	// the read faulted or for a system goroutine g0).
	Goid uint64
}

func explain(err error) error {
	if errors.Is(err, ebpf.ErrNotSupported) {
		return fmt.Errorf("%w: this kernel lacks a BPF feature tracing needs", err)
	}
	if errors.Is(err, os.ErrPermission) {
		return fmt.Errorf("%w: tracing needs root (CAP_BPF and CAP_PERFMON)", err)
	}
	return err
}

// New loads the programs and makes the maps.
func New(o Options) (*Tracer, error) {
	t := &Tracer{o: o, clockFD: -1}
	t.multi = features.HaveBPFLinkUprobeMulti() == nil
	var err error
	mk := func(s *ebpf.MapSpec) *ebpf.Map {
		if err != nil {
			return nil
		}
		var m *ebpf.Map
		m, err = ebpf.NewMap(s)
		return m
	}
	t.stacks = mk(&ebpf.MapSpec{Name: "culprit_stacks", Type: ebpf.Hash, KeySize: 8, ValueSize: threadSize,
		MaxEntries: 1 << 14, Flags: 1 /* BPF_F_NO_PREALLOC */})
	if !o.Go {
		t.slots = mk(&ebpf.MapSpec{Name: "culprit_slots", Type: ebpf.Array, KeySize: 4, ValueSize: threadSize,
			MaxEntries: Slots, Flags: unix.BPF_F_MMAPABLE})
		if err == nil {
			// Mapped by hand, not with Map.Memory, whose mapping (and so
			// the map) lives until the garbage collector unmaps it.
			t.slotMem, err = unix.Mmap(t.slots.FD(), 0, Slots*threadSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		}
	}
	t.zero = mk(&ebpf.MapSpec{Name: "culprit_zero", Type: ebpf.Array, KeySize: 4, ValueSize: threadSize, MaxEntries: 1})
	t.counts = mk(&ebpf.MapSpec{Name: "culprit_counts", Type: ebpf.Array, KeySize: 4, ValueSize: 16, MaxEntries: uint32(o.Probes + 1)})
	t.stats = mk(&ebpf.MapSpec{Name: "culprit_tstats", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: statsSize, MaxEntries: 1})
	t.events = mk(&ebpf.MapSpec{Name: "culprit_calls", Type: ebpf.RingBuf, MaxEntries: RingBytes})
	t.phase = mk(&ebpf.MapSpec{Name: "culprit_phase", Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	t.stop = mk(&ebpf.MapSpec{Name: "culprit_stop", Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	if o.Strings {
		t.strs = mk(&ebpf.MapSpec{Name: "culprit_strs", Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: uint32(o.Probes + 1)})
	}
	if o.Reads && o.Args {
		t.reads = mk(&ebpf.MapSpec{Name: "culprit_reads", Type: ebpf.Array, KeySize: 4, ValueSize: readsValue, MaxEntries: uint32(o.Probes + 1)})
	}
	var cpuOpts progOptions
	if o.CPU {
		offs, terr := bpfasm.TaskOffsets("to measure calls' time on the CPU (--no-cpu-time does without)", "nvcsw", "nivcsw", "pid", "tgid")
		if terr == nil && slices.ContainsFunc(offs, func(o int32) bool { return o > math.MaxInt16-8 }) {
			// A BPF load's offset is 16 bits.
			terr = errors.New("measuring calls' time on the CPU: this kernel's task_struct is too large to read its switch counts (--no-cpu-time does without)")
		}
		if terr != nil {
			t.Close()
			return nil, terr
		}
		cpuOpts = progOptions{CPU: true, Nvcsw: offs[0], Nivcsw: offs[1], Pid: offs[2], Tgid: offs[3], Acct: kernelAccount()}
		if o.Go {
			// Other programs keep these in their shadow stacks.
			t.offcpu = mk(&ebpf.MapSpec{Name: "culprit_offcpu", Type: ebpf.Hash, KeySize: 4, ValueSize: offCPUVal, MaxEntries: 1 << 14})
		}
	}
	if err != nil {
		t.Close()
		return nil, explain(fmt.Errorf("making the tracer's maps: %w", err))
	}
	m := maps{stacks: t.stacks.FD(), zero: t.zero.FD(), counts: t.counts.FD(), stats: t.stats.FD(), events: t.events.FD(), phase: t.phase.FD(), stop: t.stop.FD()}
	if t.strs != nil {
		m.strs = t.strs.FD()
	}
	if t.reads != nil {
		m.reads = t.reads.FD()
	}
	if t.offcpu != nil {
		m.offcpu = t.offcpu.FD()
	}
	if t.slots != nil {
		m.slots = t.slots.FD()
	}
	attach := ebpf.AttachNone
	if t.multi {
		attach = ebpf.AttachTraceUprobeMulti
	}
	// newProbe loads one of the probes' programs.
	newProbe := func(name string, ins asm.Instructions) (*ebpf.Program, error) {
		return ebpf.NewProgramWithOptions(&ebpf.ProgramSpec{Name: name, Type: ebpf.Kprobe, AttachType: attach,
			License: "GPL", Instructions: ins}, ebpf.ProgramOptions{LogSizeStart: 1 << 20})
	}
	load := func(name string, ins asm.Instructions) *ebpf.Program {
		if err != nil {
			return nil
		}
		var p *ebpf.Program
		p, err = newProbe(name, ins)
		if err != nil {
			err = fmt.Errorf("loading %s: %w", name, err)
		}
		return p
	}
	// cpu adds the options of --cpu-time to p.
	cpu := func(p progOptions) progOptions {
		p.CPU, p.Nvcsw, p.Nivcsw, p.Pid, p.Tgid, p.Acct = cpuOpts.CPU, cpuOpts.Nvcsw, cpuOpts.Nivcsw, cpuOpts.Pid, cpuOpts.Tgid, cpuOpts.Acct
		return p
	}
	// Named as internal/sampleprog's program is: culprit_PID.
	name := bpfasm.ProgName()
	t.entry = load(name, entryProgram(m, cpu(progOptions{Go: o.Go, Args: o.Args, GoidOff: int32(o.GoidOff), Sampling: o.Sampling, Timed: o.TimedHz > 0, MaxDepth: int32(o.MaxDepth), Strings: o.Strings, Reads: t.reads != nil})))
	t.loadHit = func(points []Probe) (*ebpf.Program, error) {
		p, err := newProbe(name, hitProgram(m, progOptions{Go: o.Go, Args: o.Args, GoidOff: int32(o.GoidOff)}, points))
		if err != nil {
			return nil, explain(fmt.Errorf("loading %s: %w", name, err))
		}
		return p, nil
	}
	t.loadPair = func(pairs []Probe) (*ebpf.Program, *ebpf.Program, error) {
		var err error
		mk := func(ins asm.Instructions) *ebpf.Program {
			if err != nil {
				return nil
			}
			var p *ebpf.Program
			p, err = newProbe(name, ins)
			return p
		}
		pairOpts := progOptions{Go: o.Go, Args: o.Args, Sampling: o.Sampling, Timed: o.TimedHz > 0, MaxDepth: int32(o.MaxDepth), Pair: true}
		endOpts := progOptions{Go: o.Go, Args: o.Args, RetAdjust: 0, Pair: true}
		withArgs, withIDs := false, false
		for _, p := range pairs {
			withArgs = withArgs || o.Args && len(p.BeginArgs) > 0
			withIDs = withIDs || !o.Go && len(p.BeginID) > 0 && len(p.EndID) > 0
		}
		end := t.pairEnd
		if withIDs {
			pairOpts.PairIDs, endOpts.PairIDs = pairs, pairs
			end = mk(returnProgram(m, cpu(endOpts)))
			if err != nil {
				return nil, nil, explain(fmt.Errorf("loading %s: %w", name, err))
			}
			t.argHits = append(t.argHits, end) // closed with the others
		} else if end == nil {
			end = mk(returnProgram(m, cpu(endOpts)))
			if err != nil {
				return nil, nil, explain(fmt.Errorf("loading %s: %w", name, err))
			}
			t.pairEnd = end
		}
		if withArgs || withIDs {
			if withArgs {
				pairOpts.PairArgs = pairs
			}
			entry := mk(entryProgram(m, cpu(pairOpts)))
			if err != nil {
				return nil, nil, explain(fmt.Errorf("loading %s: %w", name, err))
			}
			t.argHits = append(t.argHits, entry) // closed with the others
			return entry, end, nil
		}
		if t.pairEntry == nil {
			entry := mk(entryProgram(m, cpu(pairOpts)))
			if err != nil {
				return nil, nil, explain(fmt.Errorf("loading %s: %w", name, err))
			}
			t.pairEntry = entry
		}
		return t.pairEntry, end, nil
	}
	if o.Go {
		t.retInsn = load(name, returnProgram(m, cpu(progOptions{Go: true, Args: o.Args, GoidOff: int32(o.GoidOff), RetAdjust: 0, Strings: o.Strings, Reads: t.reads != nil})))
	} else {
		retOpts := cpu(progOptions{Args: o.Args, RetAdjust: 8, Strings: o.Strings, Reads: t.reads != nil})
		t.loadRet = func() error {
			if t.ret != nil {
				return nil
			}
			p, err := newProbe(name, returnProgram(m, retOpts))
			if err != nil {
				return explain(fmt.Errorf("loading %s: %w", name, err))
			}
			t.ret = p
			return nil
		}
		// Where the kernel has uprobe sessions, calls with uretprobes get
		// the session program, whose verifying costs as much as the entry's
		// and the return's together, and the return program is loaded
		// only for links that need it apart (AttachEach's).
		sessionOpts := cpu(progOptions{Args: o.Args, Sampling: o.Sampling, Timed: o.TimedHz > 0, MaxDepth: int32(o.MaxDepth), Strings: o.Strings, Reads: t.reads != nil})
		t.loadSession = func() error {
			if t.session != nil || t.noSession {
				return nil
			}
			isReturn, err := bpfasm.KfuncCall("for uprobe session links", "bpf_session_is_return")
			if err == nil {
				t.session, err = ebpf.NewProgramWithOptions(&ebpf.ProgramSpec{Name: name, Type: ebpf.Kprobe, AttachType: attachUprobeSession,
					License: "GPL", Instructions: sessionProgram(m, sessionOpts, isReturn)}, ebpf.ProgramOptions{LogSizeStart: 1 << 20})
			}
			if err != nil {
				t.noSession = true // the separate links then
			}
			return nil
		}
		if err == nil && t.multi {
			err = t.loadSession()
		}
		if err == nil && t.session == nil {
			err = t.loadRet()
		}
		t.loadNative = func() error {
			if t.retNative != nil {
				return nil
			}
			var err error
			mk := func(ins asm.Instructions) *ebpf.Program {
				if err != nil {
					return nil
				}
				var p *ebpf.Program
				p, err = newProbe(name, ins)
				return p
			}
			ret := mk(returnProgram(m, cpu(progOptions{Args: o.Args, RetAdjust: 0, RetInsn: true, Strings: o.Strings, Reads: t.reads != nil})))
			tail := mk(returnProgram(m, cpu(progOptions{Args: o.Args, RetAdjust: 0, RetInsn: true, TailJump: true, Strings: o.Strings, Reads: t.reads != nil})))
			unw := mk(unwoundProgram(m, cpu(progOptions{Args: o.Args, Strings: o.Strings, Reads: t.reads != nil})))
			if err != nil {
				for _, p := range []*ebpf.Program{ret, tail, unw} {
					if p != nil {
						p.Close()
					}
				}
				return explain(fmt.Errorf("loading %s: %w", name, err))
			}
			t.retNative, t.tailJump, t.unwound = ret, tail, unw
			return nil
		}
	}
	if err == nil && o.CPU {
		err = t.startSwitch(m, name, cpuOpts.Acct)
	}

	if err == nil && o.TimedHz > 0 {
		t.flip, err = ebpf.NewProgram(&ebpf.ProgramSpec{Name: name, Type: ebpf.PerfEvent, License: "GPL", Instructions: flipProgram(m)})
		if err == nil {
			err = t.startClock(o.TimedHz)
		}
	}
	if err != nil {
		t.Close()
		return nil, explain(err)
	}
	t.rd, err = ringbuf.NewReader(t.events)
	if err != nil {
		t.Close()
		return nil, explain(fmt.Errorf("reading the tracer's ring: %w", err))
	}
	_ = t.touchRing() // best effort: without it the probes pay the first writes
	return t, nil
}

// touchRing writes each page of the ring once before any probe is set:
// the first write to a page of a new ring costs the writer far more than
// later ones, and the writer is otherwise the traced program's return
// probe (docs/performance.md, "The call record's size in the ring"). A
// program run by BPF_PROG_TEST_RUN reserves and discards one record a
// page, half the ring at a time, and the reader skips the discarded
// records.
func (t *Tracer) touchRing() error {
	const page = 4096
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.SocketFilter, License: "GPL", Instructions: asm.Instructions{
		asm.LoadMapPtr(asm.R1, t.events.FD()),
		asm.Mov.Imm(asm.R2, page-8), // with the record's 8-byte header, a page
		asm.Mov.Imm(asm.R3, 0),
		asm.FnRingbufReserve.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.Mov.Imm(asm.R2, 1), // BPF_RB_NO_WAKEUP
		asm.FnRingbufDiscard.Call(),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	}})
	if err != nil {
		return err
	}
	defer p.Close()
	var rec ringbuf.Record
	for half := 0; half < 2; half++ {
		if _, err := p.Run(&ebpf.RunOptions{Data: make([]byte, 14), Repeat: RingBytes / page / 2}); err != nil {
			return err
		}
		t.rd.SetDeadline(time.Now())
		for {
			err := t.rd.ReadInto(&rec)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				break
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// startSwitch loads the off-CPU accounting program, ending runs by acct
// (the probes' own), and attaches it to sched:sched_switch.
func (t *Tracer) startSwitch(m maps, name string, acct runAccount) error {
	tp, err := perf.OpenTracepoint("sched:sched_switch")
	if err != nil {
		return fmt.Errorf("measuring on-CPU time: %w", err)
	}
	off, size, ok := tp.Field("next_pid")
	if !ok || size != 4 {
		return errors.New("measuring on-CPU time: this kernel's sched:sched_switch has no 4-byte next_pid")
	}
	t.swtch, err = ebpf.NewProgram(&ebpf.ProgramSpec{Name: name, Type: ebpf.TracePoint, License: "GPL",
		Instructions: switchProgram(m, int16(off), t.o.Go, acct)})
	if err != nil {
		return fmt.Errorf("loading the off-CPU program: %w", err)
	}
	t.swLink, err = link.Tracepoint("sched", "sched_switch", t.swtch, nil)
	if err != nil {
		return fmt.Errorf("attaching to sched:sched_switch: %w", err)
	}
	return nil
}

// startClock opens the cpu-clock event that flips the phase hz times a
// second and runs the flip program on it.
func (t *Tracer) startClock(hz int) error {
	a := &unix.PerfEventAttr{
		Type:   unix.PERF_TYPE_SOFTWARE,
		Config: unix.PERF_COUNT_SW_CPU_CLOCK,
		Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Sample: uint64(1e9 / hz),
		Bits:   unix.PerfBitDisabled,
	}
	fd, err := unix.PerfEventOpen(a, -1, 0, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("opening the timed-sampling clock: %w", err)
	}
	t.clockFD = fd
	if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_BPF, t.flip.FD()); err != nil {
		return fmt.Errorf("attaching the timed-sampling program: %w", err)
	}
	if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
		return fmt.Errorf("starting the timed-sampling clock: %w", err)
	}
	return nil
}

// Attach sets the probes on the object at path for process pid (0: every
// process). With uprobe-multi it makes one link for the entries and one
// for the returns, whatever their number; without, one link per probe.
func (t *Tracer) Attach(path string, probes []Probe, pid int) error {
	if len(probes) == 0 {
		return nil
	}
	for _, p := range probes {
		var v [16]byte
		binary.LittleEndian.PutUint64(v[8:], uint64(p.Every))
		if err := t.counts.Put(p.ID, v[:]); err != nil {
			return fmt.Errorf("setting probe %d: %w", p.ID, err)
		}
		if err := t.setStrs(p); err != nil {
			return err
		}
		if err := t.setReads(p); err != nil {
			return err
		}
	}
	ex, err := link.OpenExecutable(path)
	if err != nil {
		return fmt.Errorf("opening %s: %w", path, err)
	}
	var points, pairs []Probe
	for _, p := range probes {
		if p.Point {
			points = append(points, p)
		} else if len(p.Ends) > 0 {
			pairs = append(pairs, p)
		}
	}
	if len(points) > 0 {
		if err := t.attachPoints(ex, path, points, pid); err != nil {
			return err
		}
	}
	if len(pairs) > 0 {
		if err := t.attachPairs(ex, path, pairs, pid); err != nil {
			return err
		}
	}
	if len(points)+len(pairs) == len(probes) {
		return nil
	}
	// Return probes: uretprobes (roffs), or probes on RET instructions
	// (ioffs: Go code, and native code that unwinds), each group attached
	// with its own program.
	var offs, cookies, roffs, rcookies, ioffs, icookies, toffs, tcookies []uint64
	for _, p := range probes {
		if p.Point || len(p.Ends) > 0 {
			continue
		}
		offs = append(offs, p.Offset)
		cookies = append(cookies, uint64(p.ID))
		if t.o.Go || p.RetInsn {
			for _, r := range p.Rets {
				ioffs = append(ioffs, r)
				icookies = append(icookies, uint64(p.ID))
			}
			for _, r := range p.Tails {
				toffs = append(toffs, r)
				tcookies = append(tcookies, uint64(p.ID))
			}
		} else {
			roffs = append(roffs, p.Offset)
			rcookies = append(rcookies, uint64(p.ID))
		}
	}
	insnProg := t.retInsn
	if !t.o.Go && len(ioffs)+len(toffs) > 0 {
		if err := t.loadNative(); err != nil {
			return err
		}
		insnProg = t.retNative
	}
	// Calls with uretprobes: one uprobe session link for both ends, set in
	// one step, where the kernel has them (sessionProgram); their entries
	// are not set again below.
	ids := cookies
	var sessionErr error
	if t.multi && !t.separate && len(roffs) > 0 && t.session != nil {
		if t.stopped {
			if err := t.stop.Update(uint32(0), uint32(0), ebpf.UpdateAny); err != nil {
				return fmt.Errorf("setting probes again: %w", err)
			}
			t.stopped = false
		}
		links, refused, err := attachSplit(roffs, rcookies, func(o, c []uint64) (link.Link, error) {
			return attachSession(path, t.session, o, c, pid)
		})
		if len(refused) == len(roffs) && len(roffs) > 1 {
			// Refused as a whole, even halved: not an address the
			// kernel cannot probe but the links themselves.
			t.noSession = true
		} else {
			t.rets = append(t.rets, links...)
			for _, id := range refused {
				if sessionErr == nil {
					sessionErr = fmt.Errorf("attaching probes to %s: %w", path, explain(err))
				}
				if t.refused == nil {
					t.refused = map[uint32]bool{}
				}
				t.refused[uint32(id)] = true
			}
			in := map[uint64]bool{}
			for _, id := range rcookies {
				in[id] = true
			}
			var o, c []uint64
			for i, id := range cookies {
				if !in[id] {
					o, c = append(o, offs[i]), append(c, id)
				}
			}
			offs, cookies, roffs, rcookies = o, c, nil, nil
		}
	}
	if len(roffs) > 0 && t.loadRet != nil {
		if err := t.loadRet(); err != nil {
			return err
		}
	}
	// The return probes first: a call whose entry was seen then always has
	// its return seen. A probe whose return the kernel refuses gets no
	// entry either.
	firstErr := sessionErr
	refuse := func(id uint64, err error) {
		if t.refused == nil {
			t.refused = map[uint32]bool{}
		}
		t.refused[uint32(id)] = true
		if firstErr == nil {
			firstErr = err
		}
	}
	if t.multi {
		for _, g := range []struct {
			offs, cookies []uint64
			prog          *ebpf.Program
		}{{roffs, rcookies, nil}, {ioffs, icookies, insnProg}, {toffs, tcookies, t.tailJump}} {
			if len(g.offs) == 0 {
				continue
			}
			links, refused, err := attachSplit(g.offs, g.cookies, func(o, c []uint64) (link.Link, error) {
				opts := &link.UprobeMultiOptions{Addresses: o, Cookies: c, PID: uint32(pid)}
				if g.prog == nil {
					return ex.UretprobeMulti(nil, t.ret, opts)
				}
				return ex.UprobeMulti(nil, g.prog, opts)
			})
			t.rets = append(t.rets, links...)
			for _, id := range refused {
				refuse(id, fmt.Errorf("attaching return probes to %s: %w", path, explain(err)))
			}
		}
		offs, cookies = t.unrefused(offs, cookies)
		links, refused, err := attachSplit(offs, cookies, func(o, c []uint64) (link.Link, error) {
			return ex.UprobeMulti(nil, t.entry, &link.UprobeMultiOptions{Addresses: o, Cookies: c, PID: uint32(pid)})
		})
		t.links = append(t.links, links...)
		for _, id := range refused {
			refuse(id, fmt.Errorf("attaching entry probes to %s: %w", path, explain(err)))
		}
	} else {
		for i, off := range roffs {
			l, err := ex.Uretprobe("", t.ret, &link.UprobeOptions{Address: off, Cookie: rcookies[i], PID: pid})
			if err != nil {
				refuse(rcookies[i], fmt.Errorf("attaching a return probe to %s at %#x: %w", path, off, explain(err)))
				continue
			}
			t.rets = append(t.rets, l)
		}
		for i, off := range append(ioffs, toffs...) {
			prog, id := insnProg, uint64(0)
			if i < len(ioffs) {
				id = icookies[i]
			} else {
				prog, id = t.tailJump, tcookies[i-len(ioffs)]
			}
			l, err := ex.Uprobe("", prog, &link.UprobeOptions{Address: off, Cookie: id, PID: pid})
			if err != nil {
				refuse(id, fmt.Errorf("attaching a return probe to %s at %#x: %w", path, off, explain(err)))
				continue
			}
			t.rets = append(t.rets, l)
		}
		offs, cookies = t.unrefused(offs, cookies)
		for i, off := range offs {
			l, err := ex.Uprobe("", t.entry, &link.UprobeOptions{Address: off, Cookie: cookies[i], PID: pid})
			if err != nil {
				refuse(cookies[i], fmt.Errorf("attaching a probe to %s at %#x: %w", path, off, explain(err)))
				continue
			}
			t.links = append(t.links, l)
		}
	}
	if firstErr != nil && len(t.refusedOf(ids)) == len(ids) {
		return firstErr // nothing was set
	}
	return nil
}

// AttachUnwound sets, in the object at path, the probes where C++ and
// Rust code meets an exception or panic on its way up (offs: the entries,
// or PLT stubs, of __cxa_begin_catch and _Unwind_Resume), which end the
// traced calls the unwinding left (unwoundProgram): an object whose
// calls have return probes on RET instructions (Probe.Rets) leaves them
// open otherwise until a later probe on the thread finds them gone past.
// Not for Go programs.
func (t *Tracer) AttachUnwound(path string, offs []uint64, pid int) error {
	if t.o.Go || len(offs) == 0 {
		return nil
	}
	if err := t.loadNative(); err != nil {
		return err
	}
	ex, err := link.OpenExecutable(path)
	if err != nil {
		return fmt.Errorf("opening %s: %w", path, err)
	}
	if t.multi {
		l, err := ex.UprobeMulti(nil, t.unwound, &link.UprobeMultiOptions{Addresses: offs, PID: uint32(pid)})
		if err != nil {
			return fmt.Errorf("attaching probes to the unwinder's landing pads in %s: %w", path, explain(err))
		}
		t.rets = append(t.rets, l)
		return nil
	}
	for _, off := range offs {
		l, err := ex.Uprobe("", t.unwound, &link.UprobeOptions{Address: off, PID: pid})
		if err != nil {
			return fmt.Errorf("attaching a probe to the unwinder's landing pads in %s at %#x: %w", path, off, explain(err))
		}
		t.rets = append(t.rets, l)
	}
	return nil
}

// unrefused drops the probes the kernel refused from offs and cookies.
func (t *Tracer) unrefused(offs, cookies []uint64) ([]uint64, []uint64) {
	var o, c []uint64
	for i, id := range cookies {
		if !t.refused[uint32(id)] {
			o, c = append(o, offs[i]), append(c, id)
		}
	}
	return o, c
}

// refusedOf returns the ids among cookies the kernel refused.
func (t *Tracer) refusedOf(cookies []uint64) []uint64 {
	var out []uint64
	for _, id := range cookies {
		if t.refused[uint32(id)] {
			out = append(out, id)
		}
	}
	return out
}

// Refused returns the probes the kernel would not set, sorted: an
// instruction uprobes cannot single-step or emulate at the offset (a lock
// prefix, for one), or any other refusal of that one address.
func (t *Tracer) Refused() []uint32 {
	var out []uint32
	for id := range t.refused {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// attachUprobeSession is BPF_TRACE_UPROBE_SESSION (Linux 6.13), which
// cilium/ebpf v0.22 does not name.
const attachUprobeSession = ebpf.AttachType(57)

// attachSession sets a uprobe session link (attachUprobeSession) of prog
// at offs in the object at path (cookies: their ids), for the threads of
// pid (0: all): the link's create command as cilium/ebpf's UprobeMulti
// makes it, with the session's attach type, which it has no option for.
func attachSession(path string, prog *ebpf.Program, offs, cookies []uint64, pid int) (link.Link, error) {
	p, err := unix.BytePtrFromString(path)
	if err != nil {
		return nil, err
	}
	// union bpf_attr's link_create with its uprobe_multi part.
	attr := struct {
		progFD, targetFD, attachType, flags uint32
		path, offsets, refCtrOffsets        uint64
		cookies                             uint64
		cnt, multiFlags, pid                uint32
		_                                   uint32
	}{
		progFD: uint32(prog.FD()), attachType: uint32(attachUprobeSession),
		path: uint64(uintptr(unsafe.Pointer(p))), offsets: uint64(uintptr(unsafe.Pointer(&offs[0]))),
		cookies: uint64(uintptr(unsafe.Pointer(&cookies[0]))), cnt: uint32(len(offs)), pid: uint32(pid),
	}
	fd, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_LINK_CREATE, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	runtime.KeepAlive(p)
	runtime.KeepAlive(offs)
	runtime.KeepAlive(cookies)
	if errno != 0 {
		return nil, fmt.Errorf("creating a uprobe session link: %w", errno)
	}
	return link.NewFromFD(int(fd)) // closes fd on an error
}

// attachSplit attaches the probes at offs (cookies: their ids) with one
// call of try. When the kernel refuses the set, which it does as a whole
// when it refuses any one address, the set is halved until the refused
// probes are found: the others are attached, and their ids are returned
// with the first error. Without a refusal it costs one call.
func attachSplit(offs, cookies []uint64, try func(offs, cookies []uint64) (link.Link, error)) ([]link.Link, []uint64, error) {
	if len(offs) == 0 {
		return nil, nil, nil
	}
	l, err := try(offs, cookies)
	if err == nil {
		return []link.Link{l}, nil, nil
	}
	if len(offs) == 1 {
		return nil, cookies, err
	}
	h := len(offs) / 2
	l1, r1, e1 := attachSplit(offs[:h], cookies[:h], try)
	l2, r2, e2 := attachSplit(offs[h:], cookies[h:], try)
	if e1 == nil {
		e1 = e2
	}
	return append(l1, l2...), append(r1, r2...), e1
}

// attachPoints sets point probes: the hit program at each offset, with
// USDT semaphores counted up while set.
func (t *Tracer) attachPoints(ex *link.Executable, path string, points []Probe, pid int) error {
	hit := t.hit
	withArgs := false
	for _, p := range points {
		withArgs = withArgs || len(p.Args) > 0
	}
	if withArgs {
		p, err := t.loadHit(points)
		if err != nil {
			return err
		}
		t.argHits = append(t.argHits, p)
		hit = p
	} else if hit == nil {
		p, err := t.loadHit(nil)
		if err != nil {
			return err
		}
		t.hit, hit = p, p
	}
	var offs, cookies, refs []uint64
	anyRef := false
	for _, p := range points {
		offs = append(offs, p.Offset)
		cookies = append(cookies, uint64(p.ID))
		refs = append(refs, p.RefCtr)
		anyRef = anyRef || p.RefCtr != 0
	}
	if t.multi {
		opts := &link.UprobeMultiOptions{Addresses: offs, Cookies: cookies, PID: uint32(pid)}
		if anyRef {
			opts.RefCtrOffsets = refs
		}
		l, err := ex.UprobeMulti(nil, hit, opts)
		if err != nil {
			return fmt.Errorf("attaching %d point probes to %s: %w", len(offs), path, explain(err))
		}
		t.links = append(t.links, l)
		return nil
	}
	for i, off := range offs {
		l, err := ex.Uprobe("", hit, &link.UprobeOptions{Address: off, Cookie: cookies[i], PID: pid, RefCtrOffset: refs[i]})
		if err != nil {
			return fmt.Errorf("attaching a point probe to %s at %#x: %w", path, off, explain(err))
		}
		t.links = append(t.links, l)
	}
	return nil
}

// attachPairs sets USDT begin/end pairs: the pair entry program at every
// begin site and the pair end program at every end site, the ends first
// (a call whose begin was seen then has its end seen), with their
// semaphores counted up while set.
func (t *Tracer) attachPairs(ex *link.Executable, path string, pairs []Probe, pid int) error {
	entry, end, err := t.loadPair(pairs)
	if err != nil {
		return err
	}
	var boffs, bcookies, brefs, eoffs, ecookies, erefs []uint64
	for _, p := range pairs {
		for i, off := range append([]uint64{p.Offset}, p.Begins...) {
			cookie := uint64(p.ID) | PairSite(i)
			if i < len(p.BeginCFA) {
				cookie |= uint64(p.BeginCFA[i]) << 32
			}
			boffs, bcookies, brefs = append(boffs, off), append(bcookies, cookie), append(brefs, p.RefCtr)
		}
		for i, off := range p.Ends {
			eoffs, ecookies, erefs = append(eoffs, off), append(ecookies, uint64(p.ID)|PairSite(i)), append(erefs, p.EndRefCtr)
		}
	}
	set := func(prog *ebpf.Program, offs, cookies, refs []uint64, what string) ([]link.Link, error) {
		anyRef := slices.ContainsFunc(refs, func(r uint64) bool { return r != 0 })
		if t.multi {
			opts := &link.UprobeMultiOptions{Addresses: offs, Cookies: cookies, PID: uint32(pid)}
			if anyRef {
				opts.RefCtrOffsets = refs
			}
			l, err := ex.UprobeMulti(nil, prog, opts)
			if err != nil {
				return nil, fmt.Errorf("attaching %d USDT %s probes to %s: %w", len(offs), what, path, explain(err))
			}
			return []link.Link{l}, nil
		}
		var ls []link.Link
		for i, off := range offs {
			l, err := ex.Uprobe("", prog, &link.UprobeOptions{Address: off, Cookie: cookies[i], PID: pid, RefCtrOffset: refs[i]})
			if err != nil {
				for _, l := range ls {
					l.Close()
				}
				return nil, fmt.Errorf("attaching a USDT %s probe to %s at %#x: %w", what, path, off, explain(err))
			}
			ls = append(ls, l)
		}
		return ls, nil
	}
	ends, err := set(end, eoffs, ecookies, erefs, "end")
	if err != nil {
		return err
	}
	t.rets = append(t.rets, ends...)
	begins, err := set(entry, boffs, bcookies, brefs, "begin")
	if err != nil {
		return err
	}
	t.links = append(t.links, begins...)
	return nil
}

// owned is a probe with links of its own, so that it can be removed and
// set again alone (dynamic probing).
type owned struct {
	path       string
	p          Probe
	pid        int
	entry, ret link.Link
}

// AttachEach sets each probe with links of its own (an entry and a return
// link per probe), so that DetachProbe and ReattachProbe can act on one.
// Setting them takes longer than Attach's batches.
func (t *Tracer) AttachEach(path string, probes []Probe, pid int) error {
	if t.own == nil {
		t.own = map[uint32]*owned{}
	}
	for _, p := range probes {
		if err := t.setStrs(p); err != nil {
			return err
		}
		if err := t.setReads(p); err != nil {
			return err
		}
	}
	set := 0
	var firstErr error
	for _, p := range probes {
		o := &owned{path: path, p: p, pid: pid}
		t.own[p.ID] = o
		if err := t.setOwned(o); err != nil {
			if !t.refused[p.ID] {
				return err
			}
			delete(t.own, p.ID) // refused alone: the others go on
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		set++
	}
	if set == 0 {
		return firstErr
	}
	return nil
}

func (t *Tracer) setOwned(o *owned) error {
	links, rets := t.links, t.rets
	t.links, t.rets = nil, nil
	t.separate = true
	err := t.Attach(o.path, []Probe{o.p}, o.pid)
	t.separate = false
	got, gotRets := t.links, t.rets
	t.links, t.rets = links, rets
	if err != nil {
		for _, l := range append(got, gotRets...) {
			l.Close()
		}
		return err
	}
	if len(got) > 0 {
		o.entry = got[0]
	}
	if len(gotRets) == 1 {
		o.ret = gotRets[0]
	} else {
		t.rets = append(t.rets, gotRets...) // several RET probes (Go, native code that unwinds): kept
	}
	return nil
}

// Hits returns how many times probe id's entry fired (counted only when
// the programs count calls: Options.Sampling).
func (t *Tracer) Hits(id uint32) uint64 {
	var v [16]byte
	if err := t.counts.Lookup(id, &v); err != nil {
		return 0
	}
	return binary.LittleEndian.Uint64(v[:8])
}

// AllHits returns how many times each probe's entry fired, indexed by
// probe id (counted only with Options.Sampling), read in one batch where
// the kernel allows it: a trap budget checks them every few ms.
func (t *Tracer) AllHits() []uint64 {
	n := int(t.counts.MaxEntries())
	out := make([]uint64, n)
	keys := make([]uint32, n)
	vals := make([]byte, n*16)
	var cursor ebpf.MapBatchCursor
	got, err := t.counts.BatchLookup(&cursor, keys, vals, nil)
	if err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		for id := range out {
			out[id] = t.Hits(uint32(id))
		}
		return out
	}
	for i := 0; i < got; i++ {
		if k := int(keys[i]); k < n {
			out[k] = binary.LittleEndian.Uint64(vals[16*i:])
		}
	}
	return out
}

// DetachProbes removes AttachEach probes: their entries at once, their
// returns once no call of the probe is open on any thread's shadow stack
// any more, checked by RetireReturns from wait on, or at the latest after
// hold (a call open longer is then recorded as one that did not return).
// A removed entry stops new calls being recorded; the calls in flight
// return through the return probe, which must stay until they have. It
// returns at once: closing a uprobe link waits for an RCU grace period
// (tens to hundreds of milliseconds on a busy machine), during which the
// caller goes on checking other probes; Detach and Close wait for it.
func (t *Tracer) DetachProbes(ids []uint32, wait, hold time.Duration) {
	var entries []link.Link
	now := time.Now()
	begun := &sync.WaitGroup{}
	for _, id := range ids {
		o := t.own[id]
		if o == nil || o.entry == nil {
			continue
		}
		entries = append(entries, o.entry)
		if o.ret != nil {
			if t.held == nil {
				t.held = map[uint32]*heldReturn{}
			}
			t.held[id] = &heldReturn{ret: o.ret, begun: begun, after: now.Add(wait), until: now.Add(max(hold, wait))}
		}
		o.entry, o.ret = nil, nil
	}
	if len(entries) == 0 {
		return
	}
	begun.Add(len(entries))
	t.closing.Add(1)
	go func() {
		defer t.closing.Done()
		closeLinks(entries, begun.Done)
	}()
}

// heldReturn is the return link of a probe whose entry DetachProbes
// removed, kept while calls of it are open.
type heldReturn struct {
	ret link.Link
	// begun is done when the close of the entries removed with it has
	// begun. The breakpoint, shared by a function's entry and return
	// links, goes only with the second of them, and closing a link
	// waits for a grace period (hundreds of milliseconds on a busy
	// machine): were the return's close to wait for the entry's to end,
	// every call would go on trapping that long, the cost dynamic
	// probing is there to remove.
	begun *sync.WaitGroup
	after time.Time // not closed before
	until time.Time // closed then, calls open or not
}

// RetireReturns closes the held return links (DetachProbes) of the probes
// with no call open on any thread's shadow stack, and those held for as
// long as they may be.
func (t *Tracer) RetireReturns() {
	if len(t.held) == 0 {
		return
	}
	now := time.Now()
	var open map[uint32]bool
	var done []*heldReturn
	for id, h := range t.held {
		if now.Before(h.after) {
			continue
		}
		if open == nil && now.Before(h.until) {
			open = t.openProbes()
		}
		if now.Before(h.until) && open[id] {
			continue
		}
		done = append(done, h)
		delete(t.held, id)
	}
	t.closeHeld(done)
}

// closeHeld closes held return links in the background, each once its
// entry's close has begun.
func (t *Tracer) closeHeld(hs []*heldReturn) {
	if len(hs) == 0 {
		return
	}
	t.closing.Add(1)
	go func() {
		defer t.closing.Done()
		var ls []link.Link
		for _, h := range hs {
			h.begun.Wait()
			ls = append(ls, h.ret)
		}
		closeLinks(ls, nil)
	}()
}

// openProbes are the probes with a call open on a thread's shadow stack.
func (t *Tracer) openProbes() map[uint32]bool {
	open := map[uint32]bool{}
	le := binary.LittleEndian
	t.eachStack(func(s *shadowStack) {
		depth := int(le.Uint32(s.val))
		for i := min(depth, MaxDepth) - 1; i >= 0; i-- {
			open[le.Uint32(s.val[stackHdr+i*frameSize+fProbe:])] = true
		}
	})
	return open
}

// anyOpen says whether a thread's shadow stack holds a call.
func (t *Tracer) anyOpen() bool {
	open := false
	t.eachStack(func(s *shadowStack) {
		open = open || binary.LittleEndian.Uint32(s.val) > 0
	})
	return open
}

// closeLinks closes links, many at once: closing a uprobe link waits for
// an SRCU grace period, which closes made together share (one after the
// other, thousands of per-probe links took minutes on a busy machine).
// begun, if not nil, is called once per link as its close begins.
func closeLinks(ls []link.Link, begun func()) {
	const parallel = 256
	var wg sync.WaitGroup
	sem := make(chan struct{}, parallel)
	for _, l := range ls {
		if l == nil {
			if begun != nil {
				begun()
			}
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			defer func() { recover() }() // a collector goroutine never ends culprit
			if begun != nil {
				begun()
			}
			l.Close()
		}()
	}
	wg.Wait()
}

// ReattachProbe sets a removed AttachEach probe again.
func (t *Tracer) ReattachProbe(id uint32) error {
	o := t.own[id]
	if o == nil || o.entry != nil {
		return nil
	}
	if err := t.setOwned(o); err != nil {
		return err
	}
	// A return link still held goes now that there is a new one: the
	// new one's program sees the returns of the calls in flight too.
	if h := t.held[id]; h != nil {
		delete(t.held, id)
		t.closeHeld([]*heldReturn{h})
	}
	return nil
}

// Pause removes every probe at once, entries and returns together, and
// forgets the calls in flight: a probe's breakpoint stays while its return
// probe does, and removing a link waits for the kernel's grace periods (a
// second on a busy machine), so Detach's entries-first order keeps the
// traps coming that long; a pause (a trap budget's) wants them gone now.
// The calls open at that moment are neither recorded nor left on the
// shadow stacks (they overlap the pause, which makes them incomplete
// anyway). Attach sets the probes again.
func (t *Tracer) Pause() {
	ls := append(t.links, t.rets...)
	for _, o := range t.own {
		ls = append(ls, o.entry, o.ret)
		o.entry, o.ret = nil, nil
	}
	for id, h := range t.held {
		h.begun.Wait()
		ls = append(ls, h.ret)
		delete(t.held, id)
	}
	t.links, t.rets = nil, nil
	closeLinks(ls, nil)
	// No program runs now: closing a link waits for those in flight.
	var all []*shadowStack
	t.eachStack(func(s *shadowStack) {
		all = append(all, s)
		eachBatched(s.val, func(c *Call) { t.unread = append(t.unread, *c) })
	})
	for _, s := range all {
		t.putStack(s, true)
	}
}

// retireWait is how long Detach leaves the return probes after removing
// the entries, so that calls in flight return through them; retireHold
// how long at most it waits for the calls of session links (which it
// can tell are open) to return.
const (
	retireWait = 10 * time.Millisecond
	retireHold = 100 * time.Millisecond
)

// Detach removes every probe: the entry probes first, then, after
// retireWait, the return probes. Removing returns first (or both at
// once) would leave every call entered while the links go (removing
// thousands of probes takes a tenth of a second or more) on the shadow
// stacks with no return, nested in each other. A session link's entries
// stop at once (the stop map), and it stays until no call is open on the
// shadow stacks, or retireHold: a call's return address comes with its
// return, and a call that has none keeps the trampoline in its CPU
// samples. Calls still in flight are finished by Leftovers.
func (t *Tracer) Detach() {
	if t.stop != nil && t.session != nil && !t.stopped {
		t.stopped = t.stop.Update(uint32(0), uint32(1), ebpf.UpdateAny) == nil
	}
	start := time.Now()
	entries, rets := t.links, t.rets
	for _, o := range t.own {
		entries = append(entries, o.entry)
		rets = append(rets, o.ret)
		o.entry, o.ret = nil, nil
	}
	var held []*heldReturn
	for id, h := range t.held {
		held = append(held, h)
		delete(t.held, id)
	}
	t.links, t.rets = nil, nil
	closeLinks(entries, nil)
	for _, h := range held {
		h.begun.Wait()
		rets = append(rets, h.ret)
	}
	if slices.ContainsFunc(rets, func(l link.Link) bool { return l != nil }) {
		time.Sleep(retireWait)
		for t.stopped && time.Since(start) < retireHold && t.anyOpen() {
			time.Sleep(time.Millisecond)
		}
	}
	closeLinks(rets, nil)
	t.closing.Wait()
}

// setStrs tells the programs which of a probe's arguments are strings.
func (t *Tracer) setStrs(p Probe) error {
	if t.strs == nil || p.Strs == [MaxStrs]uint8{} {
		return nil
	}
	var v [4]byte
	copy(v[:], p.Strs[:])
	if err := t.strs.Put(p.ID, v[:]); err != nil {
		return fmt.Errorf("setting probe %d's strings: %w", p.ID, err)
	}
	return nil
}

// setReads tells the entry program which memory a probe reads.
func (t *Tracer) setReads(p Probe) error {
	if len(p.Reads) == 0 {
		return nil
	}
	if t.reads == nil {
		return fmt.Errorf("probe %d reads memory, but the tracer was made without Options.Reads and Args", p.ID)
	}
	if len(p.Reads) > MaxReads {
		return fmt.Errorf("probe %d: at most %d memory reads a probe, not %d", p.ID, MaxReads, len(p.Reads))
	}
	var v [readsValue]byte
	for k, r := range p.Reads {
		if r.Arg < 0 || r.Arg >= MaxArgs || len(r.Offs) == 0 || len(r.Offs) > MaxHops || r.Size < 1 || r.Size > 8 {
			return fmt.Errorf("probe %d: read %d (argument %d, %d hops, %d bytes) is not one the programs make", p.ID, k, r.Arg, len(r.Offs), r.Size)
		}
		b := v[k*readSize:]
		b[rdArg], b[rdHops], b[rdSize] = uint8(r.Arg+1), uint8(len(r.Offs)), uint8(r.Size)
		for h, off := range r.Offs {
			binary.LittleEndian.PutUint32(b[rdOff+4*h:], uint32(off))
		}
	}
	if err := t.reads.Put(p.ID, v[:]); err != nil {
		return fmt.Errorf("setting probe %d's memory reads: %w", p.ID, err)
	}
	return nil
}

// pendingStrs is a string record waiting for its call's record.
type pendingStrs struct {
	start uint64
	probe uint32
	strs  []string
}

// Read calls fn with each call record in the ring until wait has passed
// with the ring empty (wait 0: only what is there now), or for at most
// wait+limit when records keep coming (limit 0: no bound), so that a
// caller polling other things is not held while the probes fill the ring
// as fast as it is read. A call's string record comes just before it from
// the same thread; it is joined to the call with the same thread, start
// and probe (kept on the Tracer between reads).
func (t *Tracer) Read(wait, limit time.Duration, fn func(*Call)) error {
	for i := range t.unread {
		fn(&t.unread[i])
	}
	t.unread = nil
	start := time.Now()
	t.rd.SetDeadline(start.Add(wait))
	var rec ringbuf.Record
	var c Call
	le := binary.LittleEndian
	for n := 1; ; n++ {
		if limit > 0 && n%1024 == 0 && time.Since(start) > wait+limit {
			return nil
		}
		err := t.rd.ReadInto(&rec)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil
		}
		if err != nil {
			return err
		}
		b := rec.RawSample
		if t.o.Strings && len(b) == StrRecordSize {
			if t.pending == nil {
				t.pending = map[uint32]pendingStrs{}
			}
			ps := pendingStrs{start: le.Uint64(b[sStart:]), probe: le.Uint32(b[sProbe:])}
			for k := 0; k < MaxStrs; k++ {
				slot := b[sSlots+k*StrLen : sSlots+(k+1)*StrLen]
				if i := bytes.IndexByte(slot, 0); i >= 0 {
					slot = slot[:i]
				}
				ps.strs = append(ps.strs, string(slot))
			}
			t.pending[uint32(le.Uint64(b[sPidTgid:]))] = ps
			continue
		}
		if !t.o.Strings {
			// A thread's batch: its calls' records side by side.
			eachCall(b, fn)
			continue
		}
		if !decode(b, &c) {
			continue
		}
		c.Strs = nil
		if ps, ok := t.pending[c.TID]; ok {
			delete(t.pending, c.TID)
			if ps.start == c.Start && ps.probe == c.Probe {
				c.Strs = ps.strs
			}
		}
		fn(&c)
	}
}

// eachCall calls fn with each call record of b, records side by side
// (a thread's batch, or a single record), each as long as its flags say.
func eachCall(b []byte, fn func(*Call)) {
	var c Call
	for len(b) >= recHead {
		n := int(recSize(b))
		if n > len(b) || !decode(b[:n], &c) {
			return
		}
		fn(&c)
		b = b[n:]
	}
}

// recSize is the size of the call record at b's start, from its flags.
func recSize(b []byte) int32 {
	flags := binary.LittleEndian.Uint32(b[rFlags:])
	return recLayout(flags&hasCPU != 0, flags&hasGo != 0, flags&hasArgs != 0).size
}

// shadowStack is a thread's (or goroutine's) shadow stack as read from
// its map: a value of the stacks map, or a slot taken.
type shadowStack struct {
	key  uint64 // the thread id (Go: the goroutine's g)
	slot int    // its index in the slots map; -1: in the stacks map
	val  []byte
}

// eachStack calls fn with each shadow stack: the slots taken, then the
// stacks map's. fn may keep s; a slot's val is the map's memory itself,
// which the programs write while they run.
func (t *Tracer) eachStack(fn func(s *shadowStack)) {
	le := binary.LittleEndian
	for i := 0; i < Slots && t.slotMem != nil; i++ {
		val := t.slotMem[i*threadSize : (i+1)*threadSize]
		if owner := le.Uint32(val[hOwner:]); owner != 0 {
			fn(&shadowStack{key: uint64(owner - 1), slot: i, val: val})
		}
	}
	var key uint64
	val := make([]byte, threadSize)
	it := t.stacks.Iterate()
	for it.Next(&key, &val) {
		fn(&shadowStack{key: key, slot: -1, val: val})
		val = make([]byte, threadSize)
	}
}

// putStack writes s.val back where it was read; with drop, it removes
// the stack instead (a slot is freed). Only when no program can write it.
func (t *Tracer) putStack(s *shadowStack, drop bool) {
	switch {
	case s.slot >= 0 && drop:
		clear(s.val)
	case s.slot >= 0:
		// Written in place.
	case drop:
		t.stacks.Delete(s.key)
	default:
		t.stacks.Update(s.key, s.val, ebpf.UpdateExist)
	}
}

// eachBatched calls fn with each call in a shadow stack's batch (the
// value of the stacks map, see bLen): calls that ended and were not yet
// sent to the ring.
func eachBatched(val []byte, fn func(*Call)) {
	n := int(binary.LittleEndian.Uint32(val[bLen:]))
	if n > batchCap {
		return
	}
	eachCall(val[bData:bData+n], fn)
}

// decode reads a call record into c: its head, then the parts its flags
// name (recHead); false when b is not a call record of that size.
func decode(b []byte, c *Call) bool {
	if len(b) < recHead {
		return false
	}
	le := binary.LittleEndian
	flags := le.Uint32(b[rFlags:])
	l := recLayout(flags&hasCPU != 0, flags&hasGo != 0, flags&hasArgs != 0)
	if len(b) != int(l.size) {
		return false
	}
	*c = Call{
		Start:  le.Uint64(b[rStart:]),
		End:    le.Uint64(b[rEnd:]),
		Child:  le.Uint64(b[rChild:]),
		Site:   le.Uint64(b[rSite:]),
		Probe:  le.Uint32(b[rProbe:]),
		Caller: le.Uint32(b[rCaller:]),
		Depth:  le.Uint32(b[rDepth:]),
		Flags:  flags &^ hasParts,
	}
	pt := le.Uint64(b[rPidTgid:])
	c.PID, c.TID = uint32(pt>>32), uint32(pt)
	if l.cpu > 0 {
		c.Off = le.Uint64(b[l.cpu+pOff:])
		c.ChildOff = le.Uint64(b[l.cpu+pChildOff:])
	}
	if l.g > 0 {
		c.G = le.Uint64(b[l.g+pG:])
		c.Goid = le.Uint64(b[l.g+pGoid:])
	}
	if l.args > 0 {
		for i := range c.Args {
			c.Args[i] = le.Uint64(b[l.args+pArgs+int16(8*i):])
		}
		c.Ret = le.Uint64(b[l.args+pRet:])
		for k := range c.Mem {
			c.Mem[k] = le.Uint64(b[l.args+pMem+int16(8*k):])
		}
	}
	return true
}

// TakeBatched calls fn with the calls that ended and are still in their
// threads' batches, and empties the batches. Only when no program can
// write them: the traced process has exited (its threads' batches are
// written by its threads alone), or the probes are removed.
func (t *Tracer) TakeBatched(fn func(*Call)) {
	var full []*shadowStack
	t.eachStack(func(s *shadowStack) {
		if binary.LittleEndian.Uint32(s.val[bLen:]) != 0 {
			full = append(full, s)
		}
	})
	for _, s := range full {
		eachBatched(s.val, fn)
		binary.LittleEndian.PutUint32(s.val[bLen:], 0)
		t.putStack(s, false)
	}
}

// Leftovers calls fn with the calls that ended and are still in their
// threads' batches (threads that made no traced call since), then with
// the calls still open in the shadow stacks at time end (threads that
// exited inside a traced call, or calls open when tracing stopped),
// marked Unreturned. The open calls' thread is not known in Go programs
// (stacks are per goroutine): TID is 0 there.
func (t *Tracer) Leftovers(end uint64, fn func(*Call)) {
	le := binary.LittleEndian
	t.eachStack(func(s *shadowStack) {
		key, val := s.key, s.val
		eachBatched(val, fn)
		depth := int(le.Uint32(val))
		for i := min(depth, MaxDepth) - 1; i >= 0; i-- {
			f := val[stackHdr+i*frameSize:]
			if le.Uint32(f[fFlags:])&flagSkip != 0 {
				continue
			}
			c := Call{Start: le.Uint64(f[fStart:]), End: end, Child: le.Uint64(f[fChild:]),
				Site: le.Uint64(f[fSite:]), Probe: le.Uint32(f[fProbe:]), Depth: uint32(i), Flags: Unreturned}
			if i > 0 {
				c.Caller = le.Uint32(val[stackHdr+(i-1)*frameSize+fProbe:])
			}
			if t.o.Go {
				c.G = key
			} else {
				pt := le.Uint64(val[hPidTgid:])
				c.PID, c.TID = uint32(pt>>32), uint32(pt)
			}
			for a := range c.Args {
				c.Args[a] = le.Uint64(f[fArgs+8*a:])
			}
			if t.reads != nil {
				for k := range c.Mem {
					c.Mem[k] = le.Uint64(f[fMem+8*k:])
				}
			}
			fn(&c)
		}
	})
}

// Stats sums the per-CPU counters.
func (t *Tracer) Stats() Stats {
	var vals [][]byte
	var s Stats
	if err := t.stats.Lookup(uint32(0), &vals); err != nil {
		return s
	}
	le := binary.LittleEndian
	for _, v := range vals {
		s.Lost += le.Uint64(v[sLost:])
		s.Depth += le.Uint64(v[sDepth:])
		s.Unmatched += le.Uint64(v[sUnmatched:])
		s.NoThread += le.Uint64(v[sNoThread:])
		s.Unseen += le.Uint64(v[sUnseen:])
	}
	return s
}

// Close detaches every probe and frees the programs and maps.
func (t *Tracer) Close() {
	t.Detach()
	if t.swLink != nil {
		t.swLink.Close()
		t.swLink = nil
	}

	if t.rd != nil {
		t.rd.Close()
	}
	if t.clockFD >= 0 {
		unix.Close(t.clockFD)
		t.clockFD = -1
	}
	for _, p := range append([]*ebpf.Program{t.entry, t.ret, t.session, t.retInsn, t.retNative, t.tailJump, t.unwound, t.flip, t.hit, t.swtch, t.pairEntry, t.pairEnd}, t.argHits...) {
		if p != nil {
			p.Close()
		}
	}
	if t.slotMem != nil {
		unix.Munmap(t.slotMem)
		t.slotMem = nil
	}
	for _, m := range []*ebpf.Map{t.stacks, t.slots, t.zero, t.counts, t.stats, t.events, t.phase, t.stop, t.strs, t.reads, t.offcpu} {
		if m != nil {
			m.Close()
		}
	}
}
