package ptracer

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/collector"
	"github.com/culprit-dev/culprit/internal/proc"
	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/unwind"
)

// run handles tracee events until the root process exits or wake is called.
func (s *session) run() error {
	if s.mech == MechanismPoll {
		return s.runPoll()
	}
	var ws unix.WaitStatus
	for !s.stopping.Load() && s.procs[s.root] != nil {
		pid, err := wait(&ws, false)
		t0 := monotonic()
		if err == unix.ECHILD {
			break
		}
		if err != nil {
			return fmt.Errorf("waiting for the target: %w", err)
		}
		s.dispatch(pid, ws, t0)
		s.maybeFlush(t0)
	}
	return nil
}

// Poll mechanism: the least time between two rounds, and the time budgeted
// per thread and round (reading a running thread's counter interrupts its
// CPU), which spaces rounds out when there are many threads.
const (
	minTick           = uint64(50 * time.Microsecond)
	pollCostPerThread = uint64(10 * time.Microsecond)
)

// runPoll is the loop of the poll mechanism: at every round it reads the CPU
// time of each running thread and interrupts those that used their interval.
func (s *session) runPoll() error {
	var ws unix.WaitStatus
	next := monotonic()
	for !s.stopping.Load() && s.procs[s.root] != nil {
		for {
			pid, err := wait(&ws, true)
			if err == unix.ECHILD {
				return nil
			}
			if err != nil {
				return fmt.Errorf("waiting for the target: %w", err)
			}
			if pid == 0 {
				break
			}
			s.dispatch(pid, ws, monotonic())
		}
		now := monotonic()
		if now >= next {
			// Interrupt the threads that used their interval; note when the
			// others would have used theirs if they ran all along.
			for _, t := range s.order {
				if t.state != stRunning || t.interrupted || t.fd < 0 || t.due > now {
					continue // a thread cannot be due before it ran its interval
				}
				cpu, err := s.cpuTime(t)
				if err != nil {
					continue
				}
				if used := cpu - t.last; used < t.armed {
					t.due = now + t.armed - used
					continue
				}
				if interrupt(t.tid) == nil {
					t.interrupted = true
					s.interrupting++
				}
			}
		}
		for s.interrupting > 0 && !s.stopping.Load() {
			pid, err := wait(&ws, false)
			t0 := monotonic()
			if err == unix.ECHILD {
				return nil
			}
			if err != nil {
				return fmt.Errorf("waiting for the target: %w", err)
			}
			s.dispatch(pid, ws, t0)
		}
		now = monotonic()
		s.maybeFlush(now)
		// The next round: when the first thread is due (sampled threads are
		// due one interval after their sample), at least minTick (more with
		// many threads) and at most one interval away.
		next = now + s.interval
		for _, t := range s.order {
			if t.state == stRunning && !t.interrupted && t.fd >= 0 {
				next = min(next, t.due)
			}
		}
		next = max(next, now+max(minTick, uint64(len(s.order))*pollCostPerThread))
		if next > now {
			ts := unix.NsecToTimespec(int64(next))
			for unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil) == unix.EINTR {
			}
		}
	}
	return nil
}

func (s *session) maybeFlush(now uint64) {
	if now-s.lastFlush >= uint64(flushInterval) {
		s.lastFlush = now
		if err := s.w.Flush(); err != nil {
			s.warn("writing the recording: %v", err)
		}
	}
}

func isStopSignal(sig unix.Signal) bool {
	switch sig {
	case unix.SIGSTOP, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU:
		return true
	}
	return false
}

// dispatch handles one wait status. Every stopped thread is resumed before
// it returns (or left in PTRACE_LISTEN in a group-stop).
func (s *session) dispatch(pid int, ws unix.WaitStatus, t0 uint64) {
	if int64(pid) == s.sentinel.Load() {
		s.sentinel.Store(0)
		return
	}
	t := s.threads[pid]
	if ws.Exited() || ws.Signaled() {
		if t != nil {
			s.exited(t, ws, t0)
		}
		return
	}
	if !ws.Stopped() {
		return
	}
	if t == nil {
		if t = s.adopt(pid, t0); t == nil {
			return
		}
	}
	t.state = stStopped
	sig := ws.StopSignal()
	sampled := false
	switch cause := int(ws>>16) & 0xff; cause {
	case unix.PTRACE_EVENT_FORK, unix.PTRACE_EVENT_VFORK, unix.PTRACE_EVENT_CLONE:
		s.created(t, cause, t0)
	case unix.PTRACE_EVENT_EXEC:
		t = s.execed(t, t0)
	case unix.PTRACE_EVENT_STOP:
		if isStopSignal(sig) {
			// A group-stop (it consumes a pending interrupt): stay
			// stopped, but hear of SIGCONT.
			if t.interrupted {
				t.interrupted = false
				s.interrupting--
			}
			t.state = stListening
			if err := listen(t.tid); err != nil {
				t.state = stRunning
			}
			return
		}
		// An interrupt, the first stop of a new thread or the end of a
		// group-stop.
		if t.interrupted {
			t.interrupted = false
			s.interrupting--
			s.sample(t, t0)
			sampled = true
		}
	case 0:
		// A signal-delivery-stop: ours is suppressed, any other delivered.
		// Ours is delivered too if the process handles stopSignal: a
		// standard signal sent while another is pending is dropped, so
		// ours may stand for one the program sent itself as well (the Go
		// runtime's preemption signal, which it never sends again to a
		// thread until one reaches its handler).
		if sig == stopSignal && s.mech == MechanismSignal && s.ourStop(t.tid) {
			if t.fd >= 0 {
				s.sample(t, t0)
				sampled = true
			}
			if s.catchesStopSignal(t.pid, t0) {
				t.resumeSig = int(sig)
			}
		} else {
			if sig == stopSignal && s.mech == MechanismSignal && s.absorbed(t) {
				// The program's own stopSignal was pending when our event
				// overflowed, and the kernel dropped ours: this stop
				// is the one ours would have made.
				s.sample(t, t0)
				sampled = true
			}
			t.resumeSig = int(sig)
		}
	}
	if !t.tried {
		t.tried = true
		s.arm(t)
	}
	if t.state == stStopped {
		s.resume(t)
	}
	for _, fd := range s.closeFDs {
		unix.Close(fd)
	}
	s.closeFDs = s.closeFDs[:0]
	if sampled {
		s.addCost(monotonic() - t0)
	}
}

// ourStop reports whether the signal the thread stopped to take is one of
// our perf events'.
func (s *session) ourStop(tid int) bool {
	var si siginfo
	if getSiginfo(tid, &si) != nil {
		return false
	}
	return ours(&si)
}

// catchCheck is how often, at most, a process not known to handle
// stopSignal has its handlers read again (ns).
const catchCheck = 5_000_000

// catchesStopSignal reports whether process pid has a handler for
// stopSignal. A handler installed since the last read is missed for at
// most catchCheck; one known stays known until exec.
func (s *session) catchesStopSignal(pid int, now uint64) bool {
	p := s.procs[pid]
	if p == nil {
		return false
	}
	if p.catches || (p.caught != 0 && now-p.caught < catchCheck) {
		return p.catches
	}
	p.caught = now
	p.catches = catchesSignal(pid, stopSignal)
	return p.catches
}

// signalQueued reports whether one of our signals is queued for the thread.
func (s *session) signalQueued(tid int) bool {
	n, err := pendingSignals(tid, s.sigSample)
	if err != nil {
		return false
	}
	for _, si := range s.sigSample[:n] {
		if ours(&si) {
			return true
		}
	}
	return false
}

// isThreadOf reports whether tid is a thread of process pid.
func isThreadOf(pid, tid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(tid))
	return err == nil
}

// created handles a fork, vfork or clone event of t.
func (s *session) created(t *thread, cause int, now uint64) {
	msg, err := eventMsg(t.tid)
	if err != nil || msg == 0 {
		return
	}
	nt := int(msg)
	isThread := cause == unix.PTRACE_EVENT_CLONE && isThreadOf(t.pid, nt)
	pid := nt
	if isThread {
		pid = t.pid
	}
	u := s.threads[nt]
	if u == nil {
		u = s.addThread(pid, nt, stNew)
		if !isThread {
			s.addProcess(nt, t.pid)
		}
	}
	u.ppid, u.ptid = t.pid, t.tid
	if !u.announced {
		u.announced = true
		s.write(&recording.Task{Time: now, PID: uint32(pid), PPID: uint32(t.pid), TID: uint32(nt), PTID: uint32(t.tid)})
	}
}

// adopt takes in a thread whose first stop came before its creator's event.
func (s *session) adopt(tid int, now uint64) *thread {
	tgid, ok := tgidOf(tid)
	if !ok {
		return nil
	}
	var t *thread
	if tgid == tid {
		ppid, _ := statusField(tid, "PPid")
		parent, _ := strconv.Atoi(ppid)
		if s.procs[tid] == nil {
			s.addProcess(tid, parent)
		}
		t = s.addThread(tid, tid, stNew)
		t.ppid, t.ptid = parent, parent
	} else {
		if s.procs[tgid] == nil {
			s.addProcess(tgid, 0)
		}
		t = s.addThread(tgid, tid, stNew)
		t.ppid, t.ptid = tgid, tgid
	}
	t.announced = true
	s.write(&recording.Task{Time: now, PID: uint32(t.pid), PPID: uint32(t.ppid), TID: uint32(tid), PTID: uint32(t.ptid)})
	return t
}

// execed handles an exec event, reported under the process's pid: every
// other thread is gone, the exec'ing thread now has the pid as its tid,
// and the address space is new. It returns the thread to resume.
func (s *session) execed(t *thread, now uint64) *thread {
	pid := t.pid
	former, err := eventMsg(t.tid)
	x := t
	if err == nil && int(former) != t.tid {
		if u := s.threads[int(former)]; u != nil {
			x = u
		}
	}
	for _, u := range append([]*thread(nil), s.order...) {
		if u.pid == pid && u != x {
			s.write(&recording.Task{Exit: true, Time: now, PID: uint32(u.pid), PPID: uint32(u.ppid), TID: uint32(u.tid), PTID: uint32(u.ptid)})
			s.removeThread(u)
		}
	}
	if x.tid != pid {
		delete(s.threads, x.tid)
		x.tid = pid
		s.threads[pid] = x
	}
	x.state = stStopped
	// The event was removed at exec; close it once the thread runs again
	// (closing may wait for the thread to finish signalling it).
	if x.fd >= 0 {
		s.closeFDs = append(s.closeFDs, x.fd)
		x.fd = -1
	}
	x.tried = false
	x.named = true
	p := s.procs[pid]
	if p == nil {
		p = s.addProcess(pid, 0)
	}
	p.space = &proc.Space{}
	p.known = map[proc.Mapping]bool{}
	p.missWait = 0
	p.catches, p.caught = false, 0 // exec resets handlers
	p.exe = proc.Exe(pid)
	s.write(&recording.Comm{Time: now, PID: uint32(pid), TID: uint32(pid), Exec: true, Name: proc.Comm(pid, pid)})
	s.readMaps(p, now)
	return x
}

// exited handles the end of a thread, and of its process with its leader.
func (s *session) exited(t *thread, ws unix.WaitStatus, now uint64) {
	s.write(&recording.Task{Exit: true, Time: now, PID: uint32(t.pid), PPID: uint32(t.ppid), TID: uint32(t.tid), PTID: uint32(t.ptid)})
	s.removeThread(t)
	if t.tid != t.pid {
		return
	}
	delete(s.procs, t.pid)
	if t.pid == s.child {
		s.res.ExitCode = exitCode(ws)
		s.child = 0
	}
}

// sample records the stopped thread t.
func (s *session) sample(t *thread, now uint64) {
	cpu, err := s.cpuTime(t)
	if err != nil {
		return
	}
	period := cpu - t.last
	if cpu < t.last {
		period = 0
	}
	t.last = cpu
	armed := t.armed
	defer func() { t.due = now + t.armed }()
	next := armed
	if s.o.Jitter > 0 {
		next = s.nextInterval()
	}
	var missed uint64 // ticks since the one this sample takes
	if s.mech == MechanismSignal {
		missed = s.rearm(t, cpu, period, armed, next)
	} else {
		if armed > 0 && period >= armed+armed/2 {
			missed = (period+armed/2)/armed - 1
		}
		t.armed = next
	}

	r := &s.regs
	regsErr := getRegs(t.tid, r)
	if missed > 0 && (regsErr != nil || !s.oneKernelEntry(r)) {
		// Ticks that got no stop of their own: the thread ran code the
		// collector did not see (polling fell behind, or the signal was
		// blocked).
		s.res.Lost += missed
		s.write(&recording.Lost{Time: now, Reason: recording.LostRecorder, Count: missed})
	}
	if regsErr != nil {
		return
	}
	p := s.procs[t.pid]
	if p == nil {
		return
	}
	d := toDWARF(r)
	n, _ := readMem(t.pid, r.Rsp, s.stack)
	wants := s.o.State != nil && s.o.State.Wants(p.exe)
	res := s.objs.In(p.space)
	pcs, frames, complete := s.unwind(d, unwind.StackCopy{SP: r.Rsp, Data: s.stack[:n]}, &res, wants)
	if res.Miss {
		// A PC outside every known mapping: the process may have mapped
		// something (dlopen, the libraries ld.so maps after exec). A return
		// address may also be garbage from an unwinding gone astray, so
		// those re-read the maps at a rate that halves each time nothing
		// new turns up.
		_, known := p.space.Find(r.Rip)
		if !known || now-p.refresh >= p.missWait {
			if s.readMaps(p, now) {
				p.missWait = 0
				res = s.objs.In(p.space)
				pcs, frames, complete = s.unwind(d, unwind.StackCopy{SP: r.Rsp, Data: s.stack[:n]}, &res, wants)
			} else {
				p.missWait = min(max(2*p.missWait, minMissWait), maxMissWait)
			}
		}
	}
	if !t.named {
		t.named = true
		s.write(&recording.Comm{Time: now, PID: uint32(t.pid), TID: uint32(t.tid), Name: proc.Comm(t.pid, t.tid)})
	}
	keep := true
	var extra []recording.Record
	if wants {
		s.memPID = t.pid
		v := s.o.State.Sample(collector.Thread{PID: t.pid, TID: t.tid, Time: now, Exe: p.exe,
			Frames: frames, Mem: s.mem, Objects: &res})
		extra, keep = v.Records, !v.Drop
		if v.Keep > 0 && v.Keep < len(pcs) {
			pcs = pcs[:v.Keep]
		}
	}
	if keep {
		s.res.Samples++
		if !complete {
			s.res.Truncated++
		}
		smp := recording.Sample{Time: now, PID: uint32(t.pid), TID: uint32(t.tid), Period: period,
			Truncated: !complete, Event: recording.EventCPU}
		if err := s.w.WriteSample(smp, nil, pcs); err != nil {
			s.warn("writing the recording: %v", err)
		}
	}
	for _, rec := range extra {
		s.write(rec)
	}
}

// rearm sets the next interval of t's signalling event at a sample taken
// when its CPU time was cpu (period since the previous one, armed the
// interval that was in force), and returns how many ticks since the one
// the sample takes got no stop of their own. The stop comes a little
// after the overflow (the thread runs on until it returns to user mode
// and stops), so the next overflow is set that much sooner: ticks stay
// one interval apart in the thread's CPU time, as the kernel's own
// restart of the timer keeps them, and the collector knows when each is
// due (t.expect, for absorbed).
func (s *session) rearm(t *thread, cpu, period, armed, next uint64) uint64 {
	var over uint64 // CPU time since the overflow this sample answers
	switch {
	case t.expect > 0 && cpu > t.expect:
		over = cpu - t.expect
	case t.expect == 0 && period > armed:
		over = period - armed
	}
	var missed uint64
	if armed > 0 {
		missed = over / armed
		over %= armed
	}
	// The next tick is due next-over from here; when that is less than
	// half an interval, the one after it is taken instead (its sample
	// stands for a little more time). A period of a few µs set on this
	// event made the kernel's count of it jump by seconds (Linux 6.18).
	p := next
	if over < next {
		p = next - over
		if p < next/2 {
			p += next
		}
	}
	if setPeriod(t.fd, p) != nil {
		t.expect = 0 // unknown: judged by the period
		return missed
	}
	t.armed, t.expect = next, cpu+p
	return missed
}

// absorbed reports whether t, stopped for a stopSignal that is not ours,
// used its interval since its last sample: our event overflowed while the
// program's own signal was pending, and a standard signal already pending
// absorbs another (the Go runtime's preemption signal, which it sends every
// 10 ms or so to a goroutine that runs on). rearm knows when the overflow
// is due.
func (s *session) absorbed(t *thread) bool {
	if t.fd < 0 || t.armed == 0 {
		return false
	}
	cpu, err := s.cpuTime(t)
	if err != nil {
		return false
	}
	if t.expect > 0 {
		return cpu >= t.expect
	}
	return cpu >= t.last && cpu-t.last >= t.armed
}

// Signal-mask changes on x86-64: the system calls after which a signal
// that was blocked can be delivered.
var maskCalls = map[int64]bool{
	unix.SYS_RT_SIGPROCMASK: true, unix.SYS_RT_SIGRETURN: true, unix.SYS_RT_SIGSUSPEND: true,
	unix.SYS_RT_SIGTIMEDWAIT: true, unix.SYS_PSELECT6: true, unix.SYS_PPOLL: true,
	unix.SYS_EPOLL_PWAIT: true, unix.SYS_EPOLL_PWAIT2: true, unix.SYS_IO_PGETEVENTS: true,
}

// oneKernelEntry reports whether a signal stop that came late (the thread
// used more than one interval since its last sample) ended one stretch
// in the kernel: our signal, once sent, is delivered at the thread's next
// return to user mode unless the thread blocks it, and a blocked signal
// becomes deliverable only at the end of a system call that changes the
// mask. So unless the stop ends such a call, the thread did not run its
// own code since the first overflow: it was in one system call (a large
// munmap, say), one fault or interrupt, or its CPU was taken by the
// hypervisor, all at the user stack the sample records. The sample's
// Period covers that time; a ptrace stop cannot split a kernel entry, and
// the collector records no kernel stacks, so no tick is lost. orig_rax
// holds the system call, or -1 after an interrupt, or an exception's error
// code (taken for a call number, it can only count a loss that was none).
func (s *session) oneKernelEntry(r *unix.PtraceRegs) bool {
	return s.mech == MechanismSignal && !maskCalls[int64(r.Orig_rax)]
}

// maxFrames bounds the frames unwound per sample.
const maxFrames = 256

// unwind unwinds a stack copy. For the state hook it keeps every frame's
// registers and CFA (unwind.UnwindFrames); otherwise only the PCs.
func (s *session) unwind(regs unwind.Regs, stack unwind.StackCopy, r unwind.Resolver, withFrames bool) ([]uint64, []unwind.Frame, bool) {
	if !withFrames {
		pcs, complete := unwind.Unwind(regs, stack, r, maxFrames)
		return pcs, nil, complete
	}
	frames, complete := unwind.UnwindFrames(regs, stack, r, maxFrames)
	pcs := make([]uint64, len(frames))
	for i, f := range frames {
		pcs[i] = f.PC
	}
	return pcs, frames, complete
}

// toDWARF puts ptrace's registers in DWARF x86-64 numbering.
func toDWARF(r *unix.PtraceRegs) unwind.Regs {
	return unwind.Regs{r.Rax, r.Rdx, r.Rcx, r.Rbx, r.Rsi, r.Rdi, r.Rbp, r.Rsp,
		r.R8, r.R9, r.R10, r.R11, r.R12, r.R13, r.R14, r.R15, r.Rip}
}

// detachAll leaves every traced thread running (or stopped, if it was in a
// group-stop) and untraced. It is idempotent and runs on every way out.
//
// Order matters. Threads the collector holds stopped are resumed first, so
// that closing the perf events below never waits on them. Closing the
// events ends the signals. Then every thread is interrupted and detached at
// its next stop: our signals, delivered or still queued, are consumed
// (PTRACE_DETACH from a signal-delivery-stop with signal 0 suppresses it),
// any other signal is delivered, and threads created meanwhile are detached
// at their first stop.
func (s *session) detachAll() {
	if s.detached {
		return
	}
	s.detached = true
	for _, t := range s.order {
		if t.state == stStopped {
			s.resume(t)
		}
	}
	for _, t := range s.order {
		if t.fd >= 0 {
			unix.Close(t.fd)
			t.fd = -1
		}
		t.interrupted = false
	}
	s.interrupting = 0
	for _, fd := range s.closeFDs {
		unix.Close(fd)
	}
	s.closeFDs = nil
	if len(s.order) == 0 {
		return
	}
	pending := map[int]*thread{}
	for _, t := range s.order {
		if interrupt(t.tid) == unix.ESRCH && unix.Tgkill(t.pid, t.tid, 0) == unix.ESRCH {
			continue // gone and reaped: nothing will be reported
		}
		pending[t.tid] = t
	}
	deadline := time.Now().Add(detachTimeout)
	var ws unix.WaitStatus
	masks := map[int]uint64{} // threads whose stopSignal was unblocked to take our queued one
	blocked := 0
	for len(pending) > 0 {
		pid, err := wait(&ws, true)
		if err != nil {
			if err != unix.ECHILD {
				s.warn("detaching: %v", err)
			}
			break
		}
		if pid == 0 {
			if time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Microsecond)
			continue
		}
		now := monotonic()
		if int64(pid) == s.sentinel.Load() {
			s.sentinel.Store(0)
			continue
		}
		t := pending[pid]
		if ws.Exited() || ws.Signaled() {
			delete(pending, pid)
			if u := s.threads[pid]; u != nil {
				s.exited(u, ws, now)
			} else if pid == s.child {
				s.res.ExitCode = exitCode(ws)
				s.child = 0
			}
			continue
		}
		if !ws.Stopped() {
			continue
		}
		sig := ws.StopSignal()
		detachSig := 0
		switch cause := int(ws>>16) & 0xff; cause {
		case unix.PTRACE_EVENT_FORK, unix.PTRACE_EVENT_VFORK, unix.PTRACE_EVENT_CLONE:
			if msg, err := eventMsg(pid); err == nil && msg != 0 && pending[int(msg)] == nil {
				nt := int(msg)
				pending[nt] = &thread{tid: nt, pid: nt, fd: -1}
			}
		case unix.PTRACE_EVENT_EXEC:
			for tid, u := range pending {
				if tid != pid && t != nil && u.pid == t.pid {
					delete(pending, tid)
				}
			}
		case unix.PTRACE_EVENT_STOP:
			if _, done := masks[pid]; !done && s.mech == MechanismSignal && s.signalQueued(pid) {
				// Let it take our queued signal, then detach from that
				// stop. A thread that blocks it is let take it with the
				// signal unblocked (its mask is restored before detaching):
				// left queued, it would kill the program once unblocked.
				if m, err := getSigmask(pid); err == nil && m&stopSignalBit != 0 && setSigmask(pid, m&^stopSignalBit) == nil {
					masks[pid] = m
					blocked++
				}
				cont(pid, 0)
				continue
			}
		case 0:
			if !(sig == stopSignal && s.mech == MechanismSignal && s.ourStop(pid)) {
				detachSig = int(sig)
			}
		}
		if m, ok := masks[pid]; ok {
			setSigmask(pid, m)
		}
		if err := detach(pid, detachSig); err != nil && err != unix.ESRCH {
			s.warn("detaching from thread %d: %v", pid, err)
		}
		delete(pending, pid)
	}
	if len(pending) > 0 {
		s.warn("%d threads did not stop within %v to be detached; they stay traced until culprit exits", len(pending), detachTimeout)
	}
	if blocked > 0 {
		s.warn("%d threads blocked SIGURG while traced, so the signal mechanism could not sample them", blocked)
	}
	s.threads = map[int]*thread{}
	s.order = nil
}
