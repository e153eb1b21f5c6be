package recorder

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/culprit-dev/culprit/internal/collector"
	"github.com/culprit-dev/culprit/internal/perf"
	"github.com/culprit-dev/culprit/internal/proc"
	"github.com/culprit-dev/culprit/internal/sampleprog"
)

// Memory snapshots: when expressions, rules or value sampling need memory
// beyond the copied stack (globals, the heap), a BPF program on the
// cpu-clock events copies it at each sample (internal/snapshot). Each
// process gets a plan the first time one of its samples needs it, renewed
// every planEvery as its mappings change.

const planEvery = 200 * time.Millisecond

type snaps struct {
	tk      *sampleprog.Taker
	plans   map[uint32]*snapPlan
	needs   map[string]*exeNeeds              // by executable
	pending map[uint32][]*sampleprog.Snapshot // by CPU, oldest first
	stacks  map[uint32][]*sampleprog.Snapshot // the stack copies' records, by CPU, oldest first
	stack   bool                              // the program copies stacks
	until   uint64                            // the last drain's end (expireRecords)
}

// exeNeeds is what an executable's plans copy, the same for all its
// processes and all the run: found once per executable.
type exeNeeds struct {
	globals map[string][]collector.MemoryRange // by mapped object (the executable, libraries): ELF addresses
	chase   bool
	warned  bool // about globals left out
}

func lens(rs []collector.MemoryRange) []int {
	out := make([]int, len(rs))
	for i, r := range rs {
		out[i] = r.Len
	}
	return out
}

func total(rs []collector.MemoryRange) int {
	n := 0
	for _, r := range rs {
		n += r.Len
	}
	return n
}

// leftOut names the expressions and variables that read only ranges
// beyond the first kept ones, at most ten of them.
func leftOut(rs []collector.MemoryRange, kept int) string {
	var out []string
	seen := map[string]bool{}
	for _, r := range rs[kept:] {
		for _, n := range r.Names {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	s := ""
	for i, n := range out {
		if i == 10 {
			s += fmt.Sprintf(" and %d more", len(out)-10)
			break
		}
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}

func (sn *snaps) what(sampler collector.MemoryState, exe string) *exeNeeds {
	if w, ok := sn.needs[exe]; ok {
		return w
	}
	w := &exeNeeds{globals: map[string][]collector.MemoryRange{}, chase: sampler.NeedsHeap(exe)}
	sn.needs[exe] = w
	return w
}

// objectGlobals is what the plans of exe's processes copy of the globals of
// obj, one of the objects they map.
func (w *exeNeeds) objectGlobals(sampler collector.MemoryState, exe, obj string) []collector.MemoryRange {
	rs, ok := w.globals[obj]
	if !ok {
		rs = sampler.GlobalMemory(exe, obj)
		w.globals[obj] = rs
	}
	return rs
}

type snapPlan struct {
	exe string
	at  time.Time
}

// snapLoad is the BPF program being loaded (the kernel's verifier takes
// about 40 ms) while the command starts.
type snapLoad struct {
	done  chan struct{}
	tk    *sampleprog.Taker
	err   error
	stack bool // the program copies stacks
}

// startSnapshots starts loading the BPF program in the background, with
// only the parts the recording needs: pointer chasing, most of the program
// and of its load time, only when an expression, a rule or the main
// executable's schema follows a pointer.
func (s *session) startSnapshots(mainExe string) {
	l := &snapLoad{done: make(chan struct{})}
	o := sampleprog.Options{Jitter: s.o.jitterRange(), Snapshots: s.mem != nil, Frequency: s.o.Frequency, Follow: s.follow,
		Stack: s.wantsBPFStack()}
	if s.o.ringGiven {
		// --mmap-pages can give the program's ring more room too.
		o.RingBytes = s.o.RingPages * os.Getpagesize()
	}
	if o.Stack {
		o.Memos = s.memoMap()
	}
	go func() {
		defer close(l.done)
		defer func() {
			if r := recover(); r != nil {
				l.tk, l.err = nil, fmt.Errorf("loading the BPF sampling program failed: %v", r)
			}
		}()
		if o.Stack && !bpfStackFor(mainExe) {
			o.Stack = false
			if !o.Snapshots && o.Jitter.Max == 0 {
				return // nothing for the program to do
			}
		}
		l.stack = o.Stack
		// The program that copies the stack walks the user chain too,
		// sparing perf's walk its fault at the chain's root.
		o.UserChain = o.Stack
		if o.Snapshots {
			// With --values this makes the main executable's schema
			// (tens of ms for a big program), while the command starts.
			o.Chase = s.mem.MayNeedHeap(mainExe)
			// The ring follows what the main executable's samples copy.
			if mainExe != "" {
				o.PlannedBytes = total(s.mem.GlobalMemory(mainExe, mainExe))
			}
		}
		l.tk, l.err = sampleprog.New(o)
	}()
	s.snapLoad = l
}

// attachSnapshots waits for the program the first time, then attaches it
// to the cpu-clock events opened since the last call. Without the program
// heap and globals are recorded missing, and the user is told why once; but
// jitter, which only the program does, is an error.
func (s *session) attachSnapshots() error {
	if err := s.loadSnapshots(); err != nil {
		return err
	}
	if s.snap == nil {
		return nil
	}
	for ; s.attached < len(s.clockEvents); s.attached++ {
		ev := s.clockEvents[s.attached]
		if err := s.snap.tk.Attach(ev.FD); err != nil {
			if s.o.Jitter > 0 || s.perCPU || s.stacks != nil {
				// Per-CPU events without their filter would record the
				// whole machine; without the program, samples would have
				// no stack copy.
				return err
			}
			s.warn("heap and global values will be recorded missing: %v", err)
			s.closeSnapshots()
			return nil
		}
		if s.stacks != nil && !s.perCPU {
			if err := ev.Enable(); err != nil {
				return fmt.Errorf("starting the cpu-clock events: %w", err)
			}
		}
	}
	return nil
}

// loadSnapshots waits for the program the first time. Without the program
// heap and globals are recorded missing, and the user is told why once;
// stacks are copied by perf; but jitter, which only the program does, is
// an error.
func (s *session) loadSnapshots() error {
	l := s.snapLoad
	if l == nil {
		return nil
	}
	<-l.done
	s.snapLoad = nil
	if l.err != nil {
		if s.o.Jitter > 0 {
			return fmt.Errorf("--jitter needs culprit's BPF sampling program (or use --collector ptrace): %w", l.err)
		}
		if s.mem != nil {
			s.warn("heap and global values will be recorded missing (%v); --collector ptrace reads them with the thread stopped", l.err)
		}
		if l.stack {
			s.warn("perf copies the stacks, the same size at every sample, instead of the BPF sampling program sizing them per thread (%v): callers beyond the copy are lost", l.err)
		}
		return nil
	}
	if l.tk == nil {
		return nil // not needed after all
	}
	s.snap = &snaps{tk: l.tk, plans: map[uint32]*snapPlan{}, needs: map[string]*exeNeeds{},
		pending: map[uint32][]*sampleprog.Snapshot{}, stacks: map[uint32][]*sampleprog.Snapshot{}, stack: l.stack}
	return nil
}

// expireSnapshots is the end of a drain that handled the samples stamped
// up to until: the stamped records of samples before the previous drain's
// end go.
func (s *session) expireSnapshots(until uint64) {
	if s.snap == nil {
		return
	}
	expireRecords(s.snap.pending, s.snap.until)
	expireRecords(s.snap.stacks, s.snap.until)
	s.snap.until = until
}

// drainSnapshots collects the snapshots written so far, after the rings
// were read: a sample read from a ring always finds its snapshot, which the
// kernel wrote before it.
func (s *session) drainSnapshots() {
	if s.snap == nil {
		return
	}
	err := s.snap.tk.Drain(func(sn *sampleprog.Snapshot) {
		c := uint32(sn.CPU)
		if sn.IsStack {
			if s.stacks != nil {
				s.snap.stacks[c] = append(s.snap.stacks[c], sn)
			}
			return
		}
		s.snap.pending[c] = append(s.snap.pending[c], sn)
	})
	if err != nil {
		s.warn("reading memory snapshots: %v", err)
	}
}

// snapshotFor returns the snapshot taken at a sample, nil when there is
// none (matchRecord). Where the records carry no stamp, a snapshot with
// the sample's user stack pointer pairs with it over the wider window (a
// stalled CPU delays the program); one without (no plan: the registers
// were not read) over the narrow one.
func (s *session) snapshotFor(r *perf.Sample) *sampleprog.Snapshot {
	if s.snap == nil {
		return nil
	}
	if len(r.Regs) == perf.NumRegs && r.Regs[perf.RegSP] != 0 {
		if sn := matchRecord(s.snap.pending, r, s.o.Frequency, r.Regs[perf.RegSP]); sn != nil {
			return sn
		}
	}
	return matchRecord(s.snap.pending, r, s.o.Frequency, 0)
}

// matchRecord takes the record of sample r from pending, the records by
// CPU, oldest first; nil when there is none. sp, when not 0, is the
// sample's user stack pointer, which its record has too.
//
// A record stamped with its sample's time (Snapshot.Stamp: the kernel
// prepares the sample before it runs the program, Linux 6.3 on) is the
// sample's of the same CPU, thread and time, exactly: however late the
// program ran (a stalled virtual CPU) and in whatever order the samples
// come. It never pairs with another sample, and stays until expireRecords
// drops it. Every record of a sample read from a perf ring is in pending
// by then: the program writes it before the kernel writes the sample, on
// the same CPU, and a drain reads the perf rings before the program's
// (drainUntil). So a stamped sample without its record lost it: the
// program's ring was full, or the process had no plan.
//
// An unstamped record (older kernels, whose program runs before the
// sample's time is taken) pairs by time within a window instead.
func matchRecord(pending map[uint32][]*sampleprog.Snapshot, r *perf.Sample, frequency int, sp uint64) *sampleprog.Snapshot {
	q := pending[r.CPU]
	for i, c := range q {
		if c.Stamp == r.Time && c.TID == r.TID && c.Stamp != 0 {
			pending[r.CPU] = slices.Delete(q, i, i+1)
			return c
		}
	}
	// The program runs in the sample's interrupt, microseconds from the
	// moment the kernel stamps the sample (before it on kernels that
	// stamp no record), or later when the (virtual) CPU stalls in
	// between: 658 µs seen at load 30. A sample whose own snapshot is
	// missing (its process not planned yet, a full ring) must not take
	// its neighbour's: the thread's next sample on the CPU comes a period
	// later, so a record with the sample's stack pointer is its own up to
	// three quarters of a period away, one without it up to a quarter (at
	// most 200 µs).
	window := min(uint64(200*time.Microsecond), uint64(time.Second)/uint64(4*frequency))
	if sp != 0 {
		window = uint64(time.Second) * 3 / uint64(4*frequency)
	}
	var found *sampleprog.Snapshot
	k := 0 // the records kept: stamped ones, and those of later samples
	for i, c := range q {
		switch {
		case c.Stamp != 0:
			q[k] = q[i]
			k++
		case found == nil && c.TID == r.TID && c.Time+window > r.Time && c.Time <= r.Time+window && (sp == 0 || c.StackSP == sp):
			found = c
		case c.Time+window <= r.Time:
			// Older than any sample still to come on the CPU could take.
		default:
			q[k] = q[i]
			k++
		}
	}
	clear(q[k:])
	pending[r.CPU] = q[:k]
	return found
}

// expireRecords drops the stamped records of samples stamped up to
// before: the samples of a drain are those stamped up to its end
// (orderedUntil), and a sample stamped before the previous drain's end
// that no drain since has read never will be (it was lost, or the
// recorder does not sample its process). Unstamped records age out in
// matchRecord.
func expireRecords(pending map[uint32][]*sampleprog.Snapshot, before uint64) {
	for cpu, q := range pending {
		k := 0
		for _, c := range q {
			if c.Stamp == 0 || c.Stamp > before {
				q[k] = c
				k++
			}
		}
		clear(q[k:])
		pending[cpu] = q[:k]
	}
}

// plan installs or renews the memory plan of a process. The collector
// calls it as soon as it knows a process's executable (before a launched
// command runs, at an exec, at a fork) and at its samples, so that the plan
// follows the mappings.
func (s *session) plan(pid uint32, exe string) {
	if s.snap == nil || s.mem == nil || exe == "" || !s.mem.Wants(exe) {
		return
	}
	p := s.snap.plans[pid]
	if p != nil && p.exe == exe && time.Since(p.at) < planEvery {
		return
	}
	if p == nil || p.exe != exe {
		p = &snapPlan{exe: exe}
		s.snap.plans[pid] = p
	}
	p.at = time.Now()
	maps, err := proc.Maps(int(pid))
	if err != nil {
		return
	}
	what := s.snap.what(s.mem, exe)
	plan := &sampleprog.Plan{Chase: what.chase, Data: proc.DataRanges(int(pid), maps)}
	// The globals of the executable, then of each library mapped (dlopen'ed
	// ones from the first renewal after they are), each at its load bias
	// in this process.
	var all []collector.MemoryRange
	add := func(obj string, m proc.Mapping) {
		rs := what.objectGlobals(s.mem, exe, obj)
		if len(rs) == 0 {
			return
		}
		t := s.objs.Tables.Lookup(obj)
		if t == nil {
			return
		}
		bias, ok := t.Bias(m.Start, m.Offset)
		if !ok {
			return
		}
		first := len(all)
		for _, r := range rs {
			a, from := r.Addr, r.From
			if from < 0 {
				a += bias
			} else {
				from += first
			}
			plan.Abs = append(plan.Abs, sampleprog.Range{Addr: a, Len: r.Len, From: from, PtrOff: r.PtrOff})
			all = append(all, r)
		}
	}
	for _, m := range maps {
		if m.Path == exe && m.Exec() {
			add(exe, m)
			break
		}
	}
	seen := map[string]bool{exe: true}
	for _, m := range maps {
		if m.Exec() && !seen[m.Path] && strings.HasPrefix(m.Path, "/") {
			seen[m.Path] = true
			add(m.Path, m)
		}
	}
	if kept := sampleprog.Fit(lens(all)); kept < len(all) && !what.warned {
		what.warned = true
		s.warn("%d bytes of globals to copy at each sample in %s, more than the %d (in %d pieces) culprit copies: these are recorded missing: %s",
			total(all), exe, sampleprog.GlobalBytes, sampleprog.MaxAbs, leftOut(all, kept))
	}
	if err := s.snap.tk.SetPlan(pid, plan); err != nil {
		s.warn("heap and global values will be recorded missing: installing a memory plan: %v", err)
	}
}

// replan makes the plan of a process anew, however recent it is.
func (s *session) replan(pid uint32, exe string) {
	if s.snap == nil {
		return
	}
	if p := s.snap.plans[pid]; p != nil {
		p.at = time.Time{}
	}
	s.plan(pid, exe)
}

// mapped renews the plan of a process that has mapped code (a library
// loaded at its start or with dlopen), whose globals the plan may copy.
func (s *session) mapped(pid uint32) {
	if s.snap == nil {
		return
	}
	if p := s.snap.plans[pid]; p != nil {
		p.at = time.Time{}
		s.plan(pid, p.exe)
	}
}

// forget drops the plan of a process that exited.
func (s *session) forget(pid uint32) {
	if s.snap == nil || s.snap.plans[pid] == nil {
		return
	}
	delete(s.snap.plans, pid)
	s.snap.tk.DeletePlan(pid)
}

// memory reads what a sample carries: its stack copy, then its snapshot.
func memory(r *perf.Sample, sn *sampleprog.Snapshot) func(uint64, []byte) error {
	stack := collector.StackMemory(r.StackSP, r.Stack)
	if sn == nil {
		return stack
	}
	return func(addr uint64, buf []byte) error {
		if err := stack(addr, buf); err == nil {
			return nil
		}
		return sn.Read(addr, buf)
	}
}

func (s *session) closeSnapshots() {
	if l := s.snapLoad; l != nil { // a start that failed before the program was needed
		<-l.done
		if l.tk != nil {
			l.tk.Close()
		}
		s.snapLoad = nil
	}
	if s.snap != nil {
		s.snap.tk.Close()
		s.snap = nil
	}
}
