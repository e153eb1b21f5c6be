package tracer

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/culprit-dev/culprit/internal/proc"
	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/traceprog"
)

// keepCPU copies the CPU samples taken beside the trace into its
// recording, as culprit record writes them (their mappings, threads and
// stacks with them), so that report, export and view read them as a
// profile's; it returns how many samples it copied. The recording of
// their own stays for the build's pool.
//
// A return probe replaces the return address of each traced call in
// flight with the address of the kernel's return trampoline, so a
// sample's user stack holds that address where the traced functions'
// callers should be (the frame-pointer chain goes on past it, the CFI
// unwinder stops there). The trace knows which calls were in flight on
// the sample's thread at its time and where each was to return, so each
// trampoline is given back its call's return address (see fixStack).
func (s *session) keepCPU() uint64 {
	if s.o.CPUSamples == "" {
		return 0
	}
	warn := func(err error) {
		s.res.Warnings = append(s.res.Warnings, fmt.Sprintf("keeping the CPU samples in the trace: %v", err))
	}
	r, err := recording.Open(s.o.CPUSamples)
	if err != nil {
		if !os.IsNotExist(err) {
			warn(err)
		}
		return 0
	}
	fx, err := s.scanSamples(r)
	r.Close()
	if err != nil {
		warn(err)
		return 0
	}
	if len(fx.need) > 0 || len(fx.entry) > 0 {
		if err := s.w.Flush(); err == nil {
			fx.pendingCalls(s.o.Output, s.targets)
		}
	}

	if r, err = recording.Open(s.o.CPUSamples); err != nil {
		warn(err)
		return 0
	}
	defer r.Close()
	stacks := map[uint64]*recording.Stack{}
	var n, stale uint64
	var i int
	for {
		rec, err := r.Next()
		if err != nil {
			if err != io.EOF {
				warn(err)
			}
			break
		}
		switch v := rec.(type) {
		case *recording.Meta, *recording.End:
			// the trace's own
		case *recording.Stack:
			stacks[v.ID] = v
		case *recording.Sample:
			var kernel, user []uint64
			if st := stacks[v.StackID]; st != nil {
				kernel, user = st.Kernel, st.User
			}
			smp := *v
			p, ok := fx.pending[i]
			if e, in := fx.entry[i]; in {
				var cut bool
				user, cut = fx.fixEntry(smp.PID, user, e, p, s.targets)
				smp.Truncated = smp.Truncated || cut
			} else if ok {
				var cut bool
				user, cut = fx.fixStack(smp.PID, user, p, s.targets)
				smp.Truncated = smp.Truncated || cut
			}
			if tr, ok := fx.tramp[smp.PID]; ok && slices.Contains(user[min(1, len(user)):], tr) {
				stale++
			}
			i++
			if s.w.WriteSample(smp, kernel, user) == nil {
				n++
			}
		default:
			s.w.Write(rec)
		}
	}
	s.res.Samples = n
	if stale > 0 {
		s.res.Warnings = append(s.res.Warnings, fmt.Sprintf("%d of the CPU samples kept in the trace show the return probes' trampoline ([uprobes]) in place of a caller: the call there was not recorded (one left out by #N or dynamic sampling, or entered while the probes were being set or removed) or did not return (longjmp, exit, still open when tracing stopped), so its return address is not known", stale))
	}
	return n
}

// stackFix is what keepCPU learns of the samples before copying them.
type stackFix struct {
	tramp  map[uint32]uint64      // process → its uprobe return trampoline
	spaces map[uint32]*proc.Space // process → its executable mappings
	maps   map[uint32][]proc.Mapping
	bids   map[string][]byte // object path → build-id
	// need are the samples whose stacks hold a trampoline, by thread:
	// their times, sorted, and their indexes among the samples.
	need    map[uint32]*threadSamples
	pending map[int][]pend // sample index → calls in flight at it
	// entry are the samples taken in an entry probe's breakpoint before
	// the kernel handled it, by index: the call being entered is the
	// first its thread's records show starting after the sample (next,
	// by thread, has those samples' times and indexes).
	entry map[int]*entryTrap
	next  map[uint32]*threadSamples
}

// entryTrap is a sample in the breakpoint of target's entry probe at
// ip: with the IP one past it (after) or at it, and the call its
// thread's records show starting next after the sample.
type entryTrap struct {
	target uint32 // 1-based, as Call.Probe
	ip     uint64
	after  bool
	xol    bool // the IP in the slot where the kernel runs the probed instruction
	// ret: in the return trampoline's system call, the IP already the
	// return address, the stack pointer not yet the caller's.
	ret   bool
	next  pend
	found bool
}

type threadSamples struct {
	times []uint64
	index []int
}

// pend is a traced call in flight at a sample.
type pend struct {
	start uint64
	depth uint32
	probe uint32
	site  uint64
}

// scanSamples reads the side recording once for the trampolines'
// addresses (the first page of the [uprobes] mapping), the mappings and
// the samples whose user stacks hold a trampoline.
func (s *session) scanSamples(r *recording.Reader) (*stackFix, error) {
	fx := &stackFix{tramp: map[uint32]uint64{}, spaces: map[uint32]*proc.Space{}, maps: map[uint32][]proc.Mapping{}, bids: map[string][]byte{},
		need: map[uint32]*threadSamples{}, pending: map[int][]pend{},
		entry: map[int]*entryTrap{}, next: map[uint32]*threadSamples{}}
	type smp struct {
		pid, tid uint32
		time     uint64
		stack    uint64
	}
	var samples []smp
	stacks := map[uint64][]uint64{}
	kstacks := map[uint64][]uint64{}
	// The kernel functions of the breakpoint's exception and of the
	// return trampoline's system call.
	var int3, uret [][2]uint64
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		switch v := rec.(type) {
		case *recording.Mmap:
			if v.Path == "[uprobes]" {
				fx.tramp[v.PID] = v.Start
			}
			if v.Prot&0x4 == 0 { // PROT_EXEC
				continue
			}
			sp := fx.spaces[v.PID]
			if sp == nil {
				sp = &proc.Space{}
				fx.spaces[v.PID] = sp
			}
			m := proc.Mapping{Start: v.Start, End: v.Start + v.Len, Offset: v.Pgoff, Path: v.Path}
			sp.Add(m)
			fx.maps[v.PID] = append(fx.maps[v.PID], m)
			if len(v.BuildID) > 0 {
				fx.bids[v.Path] = v.BuildID
			}
		case *recording.Stack:
			stacks[v.ID] = v.User
			if len(v.Kernel) > 0 {
				kstacks[v.ID] = v.Kernel
			}
		case *recording.KernelSymbol:
			if strings.Contains(v.Name, "exc_int3") {
				int3 = append(int3, [2]uint64{v.Addr, v.Addr + v.Size})
			}
			if strings.Contains(v.Name, "sys_uretprobe") {
				uret = append(uret, [2]uint64{v.Addr, v.Addr + v.Size})
			}
		case *recording.Sample:
			samples = append(samples, smp{v.PID, v.TID, v.Time, v.StackID})
		}
	}
	in := func(k []uint64, fns [][2]uint64) bool {
		return len(fns) > 0 && slices.ContainsFunc(k, func(a uint64) bool {
			return slices.ContainsFunc(fns, func(r [2]uint64) bool { return a >= r[0] && a < r[1] })
		})
	}
	add := func(m map[uint32]*threadSamples, tid uint32, t uint64, i int) {
		ts := m[tid]
		if ts == nil {
			ts = &threadSamples{}
			m[tid] = ts
		}
		ts.times, ts.index = append(ts.times, t), append(ts.index, i)
	}
	for i, sm := range samples {
		if u := stacks[sm.stack]; len(u) > 0 && in(kstacks[sm.stack], uret) && !isTramp(0, u[0], fx.tramp[sm.pid]) && fx.mapped(sm.pid, u[0]) {
			fx.entry[i] = &entryTrap{ret: true, ip: u[0]}
			add(fx.need, sm.tid, sm.time, i)
			continue
		}
		if u := stacks[sm.stack]; len(u) > 0 && (in(kstacks[sm.stack], int3) || isXOL(fx.tramp, sm.pid, u[0])) {
			e := &entryTrap{target: s.entryProbeAt(fx, sm.pid, u[0]-1), ip: u[0] - 1, after: true}
			if e.target == 0 {
				e = &entryTrap{target: s.entryProbeAt(fx, sm.pid, u[0]), ip: u[0]}
			}
			if e.target == 0 && isXOL(fx.tramp, sm.pid, u[0]) {
				e = &entryTrap{xol: true, ip: u[0]}
			}
			if e.target > 0 || e.xol {
				fx.entry[i] = e
				add(fx.next, sm.tid, sm.time, i)
				add(fx.need, sm.tid, sm.time, i)
				continue
			}
		}
		tr, ok := fx.tramp[sm.pid]
		if !ok {
			continue
		}
		for j, a := range stacks[sm.stack] {
			if isTramp(j, a, tr) {
				add(fx.need, sm.tid, sm.time, i)
				break
			}
		}
	}
	for _, ts := range fx.need {
		sort.Sort(ts)
	}
	for _, ts := range fx.next {
		sort.Sort(ts)
	}
	return fx, nil
}

// entryProbeAt returns the target (1-based) whose entry probe is at addr
// in process pid, a function's (whose calls the records give a return
// address), or 0.
func (s *session) entryProbeAt(fx *stackFix, pid uint32, addr uint64) uint32 {
	sp := fx.spaces[pid]
	if sp == nil {
		return 0
	}
	m, ok := sp.Find(addr)
	if !ok {
		return 0
	}
	off := addr - m.Start + m.Offset
	for i := range s.targets {
		t := &s.targets[i]
		if t.Offset != off || t.Point || t.Pair || t.Code[1] == 0 {
			continue
		}
		if m.Path == t.Object || len(t.BuildID) > 0 && bytes.Equal(fx.bids[m.Path], t.BuildID) {
			return uint32(i + 1)
		}
	}
	return 0
}

func (ts *threadSamples) Len() int           { return len(ts.times) }
func (ts *threadSamples) Less(i, j int) bool { return ts.times[i] < ts.times[j] }
func (ts *threadSamples) Swap(i, j int) {
	ts.times[i], ts.times[j] = ts.times[j], ts.times[i]
	ts.index[i], ts.index[j] = ts.index[j], ts.index[i]
}

// trampBytes bounds the code of the return trampoline (on x86-64 four
// pushes, a mov and the uretprobe system call, 13 bytes; an int3 where
// that call is not used); the single-step slots of entry probes come
// after it in the same page.
const trampBytes = 16

// xolBytes bounds the [uprobes] mapping: its first page holds the
// trampoline and the slots where the kernel runs probed instructions
// out of line, one at a time per thread.
const xolBytes = 4096

// isXOL says whether ip, in process pid, is in a slot where the kernel
// runs a probed instruction out of line.
func isXOL(tramp map[uint32]uint64, pid uint32, ip uint64) bool {
	tr, ok := tramp[pid]
	return ok && ip >= tr+trampBytes && ip-tr < xolBytes
}

// isTramp says whether the i-th address of a user stack stands for the
// trampoline tr: a return address equal to it, or the sampled IP inside
// its code.
func isTramp(i int, a, tr uint64) bool {
	return a == tr || i == 0 && a >= tr && a-tr < trampBytes
}

// returnProbed says the calls of t return through the kernel's
// trampoline: a function's, not a point's, a pair's, or one whose
// return probes sit on its RET instructions (Go code, native code that
// unwinds).
func returnProbed(t *Target) bool {
	return !t.Point && !t.Pair && !t.RetInsn
}

// pendingCalls reads the trace's call records from its file and notes,
// for each sample that needs it, the return-probed calls in flight on
// its thread at its time.
func (fx *stackFix) pendingCalls(path string, targets []Target) {
	r, err := recording.Open(path)
	if err != nil {
		return
	}
	defer r.Close()
	r.Reuse()
	r.ReuseCalls()
	// first[tid][j]: the earliest call starting after the thread's j-th
	// entry-trap sample and no later than the next one; ended[tid][j]:
	// the earliest end of a call that returned (or of a point reached) in
	// that span, 0 when none did.
	first := map[uint32][]*pend{}
	ended := map[uint32][]uint64{}
	defer func() { fx.nextCalls(first, ended) }()
	for {
		rec, err := r.Next()
		if err != nil {
			return
		}
		c, ok := rec.(*recording.Call)
		if !ok || c.Probe == 0 || int(c.Probe) > len(targets) {
			continue
		}
		if ts := fx.next[c.TID]; ts != nil && c.Flags&recording.CallUnreturned == 0 {
			if j := sort.Search(len(ts.times), func(i int) bool { return ts.times[i] >= c.End }) - 1; j >= 0 {
				e := ended[c.TID]
				if e == nil {
					e = make([]uint64, len(ts.times))
					ended[c.TID] = e
				}
				if e[j] == 0 || e[j] > c.End {
					e[j] = c.End
				}
			}
		}
		if ts := fx.next[c.TID]; ts != nil && !targets[c.Probe-1].Point && !targets[c.Probe-1].Pair {
			if j := sort.Search(len(ts.times), func(i int) bool { return ts.times[i] >= c.Start }) - 1; j >= 0 {
				f := first[c.TID]
				if f == nil {
					f = make([]*pend, len(ts.times))
					first[c.TID] = f
				}
				if f[j] == nil || f[j].start > c.Start {
					f[j] = &pend{c.Start, c.Depth, c.Probe, fx.siteOf(c)}
				}
			}
		}
		if !returnProbed(&targets[c.Probe-1]) || c.End <= c.Start {
			continue
		}
		ts := fx.need[c.TID]
		if ts == nil {
			continue
		}
		i := sort.Search(len(ts.times), func(i int) bool { return ts.times[i] >= c.Start })
		for ; i < len(ts.times) && ts.times[i] < c.End; i++ {
			fx.pending[ts.index[i]] = append(fx.pending[ts.index[i]], pend{c.Start, c.Depth, c.Probe, fx.siteOf(c)})
		}
	}
}

// siteOf is the return address call c's stack held while it ran: the
// trampoline's for a call a traced caller jumped to (its record's Site
// is its caller's return address, which the kernel's chained return
// went back to).
func (fx *stackFix) siteOf(c *recording.Call) uint64 {
	if c.Flags&recording.CallChained != 0 {
		if tr, ok := fx.tramp[c.PID]; ok {
			return tr
		}
	}
	return c.Site
}

// nextCalls gives each entry-trap sample the first call its thread's
// records show starting after it (first: by thread, the earliest call
// starting between each such sample and the next, as pendingCalls found
// them). That is the call being entered only if nothing else happened on
// the thread in between: a call that returned, or a point reached, before
// it started (ended: by thread, the earliest such end between each
// sample and the next) says the call entered had no record (one #N or
// dynamic sampling left out) and a later one was taken for it. The calls
// its entry found abandoned end in between too, but are marked so.
func (fx *stackFix) nextCalls(first map[uint32][]*pend, ended map[uint32][]uint64) {
	for tid, f := range first {
		ts := fx.next[tid]
		e := ended[tid]
		var next *pend
		var end uint64 // the earliest end after sample j
		for j := len(f) - 1; j >= 0; j-- {
			if f[j] != nil {
				next = f[j]
			}
			if e != nil && e[j] != 0 && (end == 0 || e[j] < end) {
				end = e[j]
			}
			if t := fx.entry[ts.index[j]]; t != nil && next != nil && next.probe == t.target && (end == 0 || end >= next.start) {
				t.next, t.found = *next, true
			}
		}
	}
}

// mapped says whether addr lies in an executable mapping of process
// pid.
func (fx *stackFix) mapped(pid uint32, addr uint64) bool {
	sp := fx.spaces[pid]
	if sp == nil {
		return false
	}
	_, ok := sp.Find(addr)
	return ok
}

// in says whether addr, in process pid, lies in the code of t.
func (fx *stackFix) in(pid uint32, addr uint64, t *Target) bool {
	if t.Code[1] == 0 {
		return false
	}
	sp := fx.spaces[pid]
	if sp == nil {
		return false
	}
	m, ok := sp.Find(addr)
	if !ok || m.Path != t.Object && (len(t.BuildID) == 0 || !bytes.Equal(fx.bids[m.Path], t.BuildID)) {
		return false
	}
	off := addr - m.Start + m.Offset
	return off >= t.Code[0] && off < t.Code[1]
}

// fixStack gives each trampoline address of a sample's user stack the
// return address of the traced call it stands for, and returns the
// stack and whether it lost callers.
//
// The calls in flight p are taken innermost first. A trampoline stands
// for the innermost call not yet given whose function holds the frame
// below it (a call the records show in flight but that is not on the
// stack, one a longjmp went past or one entered a moment before the
// kernel replaced its return address, is passed over); when none does (a
// tail call to an untraced function), for the innermost not yet given.
// At the stack's first frame the trampoline is where the program is
// (returning through it): it stays, and its call's return address is
// put after it if that call is still in flight by the records (more
// calls in flight than trampolines further up). While the kernel runs
// the return's handlers the sampled IP may already be the call's return
// address; the call not yet recorded as ended is then passed over. Where the unwinder stopped at a trampoline (it has no
// unwind information) the stack goes on by the calls in flight for as
// long as each one's return address lies in the function of the next
// one out; an untraced function between them ends it, with callers lost.
func (fx *stackFix) fixStack(pid uint32, user []uint64, p []pend, targets []Target) ([]uint64, bool) {
	tr := fx.tramp[pid]
	// A thread has one call open at each depth of its shadow stack: of
	// two the records show in flight at one depth, the earlier is one
	// found abandoned later (its end an upper bound), gone by then.
	sort.Slice(p, func(i, j int) bool {
		if p[i].depth != p[j].depth {
			return p[i].depth > p[j].depth
		}
		return p[i].start > p[j].start
	})
	p = slices.CompactFunc(p, func(a, b pend) bool { return a.depth == b.depth })
	// A depth the shadow stack cannot hold says nothing of the calls
	// below it, and filling the depths under it would not end soon: the
	// records give none, but a damaged file could.
	if len(p) > 0 && p[0].depth < traceprog.MaxDepth &&
		slices.ContainsFunc(targets, func(t Target) bool { return t.Every > 1 && returnProbed(&t) }) {
		// A call sampling left out (#N) has no record but its depth on
		// the thread's stack, and the kernel took over its return all
		// the same: each depth below the innermost call with no call
		// in flight stands for one, whose trampoline stays (its return
		// address is not known), so that the trampolines above it are
		// given their own calls' return addresses.
		all := make([]pend, 0, p[0].depth+1)
		d := int64(p[0].depth)
		for _, c := range p {
			for ; d > int64(c.depth); d-- {
				all = append(all, pend{depth: uint32(d)})
			}
			all = append(all, c)
			d = int64(c.depth) - 1
		}
		for ; d >= 0; d-- {
			all = append(all, pend{depth: uint32(d)})
		}
		p = all
	}
	// A function a traced one jumped to (a tail call) found the
	// trampoline on top of the stack at its entry: the kernel chains its
	// return to its caller's, and the two share one return address, the
	// caller's, while only the callee's frame is on the stack.
	chained := func(m int) bool { return p[m].site == tr && p[m].probe != 0 }
	// holds says the function of call m, when known, holds addr.
	holds := func(m int, addr uint64) bool {
		return p[m].probe != 0 && fx.in(pid, addr, &targets[p[m].probe-1])
	}
	// next is the first call from m out that has a return address of
	// its own.
	next := func(m int) int {
		for m < len(p) && chained(m) {
			m++
		}
		return m
	}
	// holder is the call from k out whose function holds ref, as the
	// call whose return address the trampoline above ref stands for (a
	// chained one stands for the next); -1 when none does.
	holder := func(k int, ref uint64) int {
		if ref == 0 {
			return -1 // the frame below not known: the next in order
		}
		for m := k; m < len(p); m++ {
			if p[m].probe == 0 || holds(m, ref) { // a call left out is on the stack
				return next(m)
			}
		}
		return -1
	}
	// traced says the function holding ref is that of the next call in
	// flight from k out with a return address of its own: ref's frame
	// then returns through the trampoline.
	traced := func(k int, ref uint64) bool {
		m := next(k)
		return m < len(p) && holds(m, ref)
	}
	out := make([]uint64, 0, len(user)+len(p)+1)
	k := 0         // the next call not yet given
	var ref uint64 // the frame below, as an address inside its function
	// give puts call m's return address on the stack: the trampoline
	// stays for a call left out, or one that never returned (longjmp,
	// exit, still open when tracing stopped), whose is not known.
	give := func(m int) {
		if p[m].probe == 0 || p[m].site == 0 {
			out, ref = append(out, tr), 0
			return
		}
		out, ref = append(out, p[m].site), p[m].site-1
	}
	endsAt := false // the stack's last frame was a trampoline
	for i, a := range user {
		if endsAt && !isTramp(i, a, tr) && (!fx.mapped(pid, a) || traced(k, ref)) {
			// Past a trampoline where the CFI unwinder stopped, the
			// frame-pointer chain of code without frame pointers
			// reads junk: not a return address into code, or not the
			// trampoline where the caller is a traced call in flight
			// (its return address is the trampoline's): stale return
			// addresses on the stack are in code too.
			break
		}
		endsAt = false
		if !isTramp(i, a, tr) || next(k) >= len(p) {
			out = append(out, a)
			ref = a
			if i > 0 {
				ref = a - 1
			}
			continue
		}
		if i == 0 {
			// The IP in the trampoline: its call may have been recorded
			// as ended already (the kernel runs the return's handlers in
			// the trampoline's system call), and then every call in
			// flight has a trampoline further up the stack where the
			// frame-pointer chain goes on.
			n, own := 0, 0
			for _, b := range user[1:] {
				if b == tr {
					n++
				}
			}
			for m := range p {
				if !chained(m) {
					own++
				}
			}
			out = append(out, a)
			ref = 0
			if own > n {
				k = next(k)
				give(k)
				k++
				endsAt = true
			}
			continue
		}
		j := holder(k, ref)
		if j < 0 || j >= len(p) {
			j = next(k)
		}
		k = j + 1
		give(j)
		endsAt = true
	}
	if !endsAt {
		return out, false
	}
	// On through the calls in flight while each holds the return
	// address before it (a chained one: the next's return address).
	for k < len(p) {
		if !holds(k, ref) {
			return out, true
		}
		j := next(k)
		if j >= len(p) {
			break
		}
		give(j)
		k = j + 1
	}
	return out, false
}

// fixEntry gives a sample taken in an entry probe's breakpoint its
// stack where the unwinder read a junk caller. Before the kernel handles
// the breakpoint the IP is one byte past the probe, in the function's
// first instruction, not yet run: the unwind rule there (after a push,
// say) is not the stack's. After the probe's programs ran, the kernel
// emulates some instructions (a push) in steps, the stack pointer moved
// before the IP. The caller is known from the records: the return
// address of the call being entered, the first its thread starts after
// the sample (before the handling) or the innermost in flight (after).
// Where the unwound caller is either's, the stack stays as unwound (an
// emulated instruction's state, or a probed instruction that moves no
// stack pointer); else the IP goes back to the probe, its caller is the
// call's return address, and the stack goes on by the calls in flight,
// as above a trampoline where unwinding stopped (fixStack), then by the
// unwound stack where that holds the same return address. Without the
// call's record only the IP is kept, the stack cut after it.
func (fx *stackFix) fixEntry(pid uint32, user []uint64, e *entryTrap, p []pend, targets []Target) ([]uint64, bool) {
	// The innermost call in flight, if it is the probe's.
	var prev *pend
	for i := range p {
		if prev == nil || p[i].depth > prev.depth || p[i].depth == prev.depth && p[i].start > prev.start {
			prev = &p[i]
		}
	}
	tr, ok := fx.tramp[pid]
	if e.ret {
		// The call returning is the innermost in flight if its end is
		// not yet recorded: the stack is its caller's.
		if prev != nil && prev.site == e.ip {
			p = slices.DeleteFunc(slices.Clone(p), func(c pend) bool { return c == *prev })
		}
		if !ok {
			return user, false
		}
		out, cut := fx.fixStack(pid, []uint64{e.ip, tr}, p, targets)
		if out[len(out)-1] == tr {
			// No call in flight: an untraced function's caller, which
			// the records do not know; the unwound one where it is in
			// code (the frame-pointer chain's), else none.
			if len(user) > 1 && user[1] != tr && fx.mapped(pid, user[1]) {
				return fx.fixStack(pid, user, p, targets)
			}
			return out[:len(out)-1], true
		}
		if len(user) > 1 && user[1] == out[1] {
			return fx.fixStack(pid, user, p, targets) // unwound right
		}
		return fx.takeUp(out, user, tr, cut)
	}
	if e.xol && prev != nil {
		// The probed instruction runs out of line after the probe's
		// programs ran: the last probe hit, the innermost call's entry.
		e.target = prev.probe
		if e.ip = fx.probeAddr(pid, &targets[prev.probe-1]); e.ip == 0 {
			return user, false
		}
	}
	if prev != nil && prev.probe != e.target {
		prev = nil
	}
	if !e.xol && len(user) > 1 && (e.found && user[1] == e.next.site || prev != nil && (user[1] == prev.site || ok && user[1] == tr)) {
		if len(p) > 0 {
			return fx.fixStack(pid, user, p, targets)
		}
		return user, false
	}
	switch {
	case e.xol && prev == nil:
		return user, false
	case e.after && e.found && ok:
		// Not yet entered by the records: its return address stands
		// where the trampoline would, innermost, at the depth its
		// record gives. A call in flight at that depth or deeper is
		// off the stack by then: its entry retires it as abandoned.
		c := e.next
		p = append(slices.DeleteFunc(slices.Clone(p), func(q pend) bool { return q.depth >= c.depth }), c)
	case !e.after && prev != nil && ok: // e.xol too
	default:
		return []uint64{e.ip}, true
	}
	out, cut := fx.fixStack(pid, []uint64{e.ip, tr}, p, targets)
	return fx.takeUp(out, user, tr, cut)
}

// takeUp goes on from a stack rebuilt from the records (out, cut when it
// lost callers) by the unwound one (user) where that holds out's last
// return address and no trampoline after it.
func (fx *stackFix) takeUp(out, user []uint64, tr uint64, cut bool) ([]uint64, bool) {
	last := out[len(out)-1]
	if j := slices.Index(user[1:], last); len(out) > 1 && j >= 0 && !slices.Contains(user[j+2:], tr) {
		return append(out, user[j+2:]...), false
	}
	return out, cut
}

// probeAddr is the address of t's entry probe in process pid (0: not
// mapped).
func (fx *stackFix) probeAddr(pid uint32, t *Target) uint64 {
	for _, m := range fx.maps[pid] {
		if (m.Path == t.Object || len(t.BuildID) > 0 && bytes.Equal(fx.bids[m.Path], t.BuildID)) &&
			t.Offset >= m.Offset && t.Offset-m.Offset < m.End-m.Start {
			a := m.Start + t.Offset - m.Offset
			if fx.in(pid, a, t) {
				return a
			}
		}
	}
	return 0
}
