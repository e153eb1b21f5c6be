package ptracer

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/collector"
	"github.com/culprit-dev/culprit/internal/perf"
	"github.com/culprit-dev/culprit/internal/proc"
	"github.com/culprit-dev/culprit/internal/recording"
)

// flushInterval bounds how long records wait in the writer's buffer, so the
// recording can be reported on while it is written.
const flushInterval = 100 * time.Millisecond

// Bounds of the time between two reads of a process's maps caused by
// return addresses outside every known mapping (a sampled PC outside them
// always causes one): after a read that found something new, the next miss
// reads again at once; each read that found nothing doubles the wait.
const (
	minMissWait = uint64(time.Millisecond)
	maxMissWait = uint64(time.Second)
)

// detachTimeout bounds how long detaching waits for threads to stop (a
// variable for tests).
var detachTimeout = 5 * time.Second

type tstate uint8

const (
	stRunning   tstate = iota // resumed (or seized while running)
	stStopped                 // in a ptrace-stop the collector is handling
	stListening               // in a group-stop, resumed with PTRACE_LISTEN
	stNew                     // attached by the kernel, first stop not seen yet
)

// thread is one traced thread.
type thread struct {
	tid, pid  int
	ppid      int // for Task records: the creating process and thread
	ptid      int
	state     tstate
	resumeSig int // signal to deliver when the thread is resumed or detached
	fd        int // signalling perf event, or CPU-time counter or schedstat file in poll mode; -1: none
	last      uint64
	armed     uint64 // current interval, ns of CPU time
	// expect: signal mode, the CPU time at which the event's next overflow
	// is due (0: unknown).
	expect uint64
	due    uint64 // poll mode: when it would have used armed if it ran all along
	// interrupted: poll mode sent PTRACE_INTERRUPT and awaits the stop.
	interrupted bool
	tried       bool // arm was called since it appeared or exec'd
	named       bool // a Comm record was written for it
	announced   bool // a Task record was written for its creation
}

// process is one traced process (thread group).
type process struct {
	pid      int
	exe      string
	space    *proc.Space
	known    map[proc.Mapping]bool
	refresh  uint64 // monotonic ns of the last maps read
	missWait uint64 // ns to wait after refresh before a return address outside the maps causes another
	// catches: the process has a handler for stopSignal (read from
	// SigCgt, at most once per catchCheck while it has none; a handler
	// stays known until exec). caught: monotonic ns of the last read.
	catches bool
	caught  uint64
}

// session is one recording in progress. All its methods run on the locked
// tracing thread, except wake.
type session struct {
	o    Options
	w    *recording.Writer
	res  Result
	mech string

	threads map[int]*thread
	order   []*thread // the same threads, for iteration in a stable order
	procs   map[int]*process
	root    int // the launched or attached process: the session ends with it
	child   int // the launched command while it is not reaped, else 0

	interval     uint64 // nominal period, ns of CPU time
	excludeKern  bool
	pollPerf     bool // poll mode reads CPU time from counting perf events
	interrupting int  // poll mode: threads interrupted and not stopped yet
	rng          *rand.Rand

	objs collector.Objects

	regs      unix.PtraceRegs
	stack     []byte
	memPID    int                                 // the process Mem reads
	mem       func(addr uint64, buf []byte) error // s.readStopped, made once
	costs     []uint32                            // ns per sample, a reservoir of at most costCap
	costN     uint64
	lastFlush uint64
	closeFDs  []int // fds to close once the thread that owned them runs again

	stopping  atomic.Bool
	sentinel  atomic.Int64 // pid of the sentinel child, 0 when none
	wakeOnce  sync.Once
	detached  bool
	finished  bool
	sigSample []siginfo
}

const costCap = 1 << 17

func monotonic() uint64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Nano())
}

func newSession(o Options, meta recording.Meta) (*session, error) {
	w, err := recording.Create(o.Output)
	if err != nil {
		return nil, err
	}
	s := &session{o: o, w: w,
		threads: map[int]*thread{}, procs: map[int]*process{},

		interval: uint64(time.Second) / uint64(o.Frequency),
		rng:      rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(os.Getpid()))),
		stack:    make([]byte, o.StackBytes),
	}
	s.sigSample = make([]siginfo, 4)
	s.res.ExitCode = -1
	if o.FastStart {
		if err := perf.FastStart(); err != nil {
			s.warn("%v", err)
		}
	}
	// The sentinel is forked before any perf event exists, so it holds none
	// (it also closes every descriptor it inherited).
	pid, errno := forkSentinel()
	if errno != 0 {
		w.Discard()
		return nil, fmt.Errorf("starting the collector: fork: %w", errno)
	}
	s.sentinel.Store(int64(pid))
	var uts unix.Utsname
	_ = unix.Uname(&uts)
	host, _ := os.Hostname()
	meta.Tool = o.Tool
	meta.Hostname = host
	meta.KernelRelease = unix.ByteSliceToString(uts.Release[:])
	meta.Arch = runtime.GOARCH
	meta.StartUnixNano = time.Now().UnixNano()
	meta.StartClock = monotonic()
	meta.Event = Event
	meta.Frequency = o.Frequency
	meta.CallGraph = "dwarf"
	meta.StackBytes = o.StackBytes
	meta.Extra = map[string]string{"collector": "ptrace"}
	if o.Jitter > 0 {
		meta.Extra["jitter_percent"] = strconv.FormatFloat(o.Jitter, 'g', -1, 64)
	}
	s.write(&meta)
	if err := s.objs.AddVDSO(w); err != nil {
		s.warn("writing the recording: %v", err)
	}
	s.mem = s.readStopped
	return s, nil
}

// wake asks the tracing loop to stop; it is safe from any goroutine. The
// tracing thread may be blocked in wait4, so the sentinel is killed: its
// exit ends the wait.
func (s *session) wake() {
	s.stopping.Store(true)
	s.wakeOnce.Do(func() {
		if pid := s.sentinel.Load(); pid > 0 {
			unix.Kill(int(pid), unix.SIGKILL)
		}
	})
}

// reapSentinel kills and reaps the sentinel.
func (s *session) reapSentinel() {
	pid := int(s.sentinel.Swap(0))
	if pid <= 0 {
		return
	}
	unix.Kill(pid, unix.SIGKILL)
	var ws unix.WaitStatus
	for {
		if _, err := unix.Wait4(pid, &ws, 0, nil); err != unix.EINTR {
			return
		}
	}
}

func (s *session) warn(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	for _, w := range s.res.Warnings {
		if w == msg {
			return
		}
	}
	s.res.Warnings = append(s.res.Warnings, msg)
}

func (s *session) write(r recording.Record) {
	if err := s.w.Write(r); err != nil {
		s.warn("writing the recording: %v", err)
	}
}

// cleanup runs on every way out of Launch and Attach, panics included: it
// detaches from every thread (an attached process runs on; a launched
// command that did not end is killed, as it would be by the perf
// collector) and kills the sentinel. A recording that was not finished is
// closed as it is (readable, without an End record).
func (s *session) cleanup() {
	s.detachAll()
	if s.child != 0 {
		// Only on an error path: a launched command lives and dies with
		// culprit, as with the perf collector.
		unix.Kill(s.child, unix.SIGKILL)
		var ws unix.WaitStatus
		for {
			if _, err := unix.Wait4(s.child, &ws, 0, nil); err != unix.EINTR {
				break
			}
		}
		s.child = 0
	}
	s.reapSentinel()
	if !s.finished {
		s.finished = true
		s.w.Close()
	}
}

// abandon removes the output of a session that failed before sampling.
func (s *session) abandon() {
	s.detachAll()
	s.reapSentinel()
	if !s.finished {
		s.finished = true
		s.w.Discard()
	}
}

// finish writes the End record and closes the recording.
func (s *session) finish() (Result, error) {
	s.reapSentinel()
	s.write(&recording.End{Time: monotonic(), Samples: s.res.Samples, Lost: s.res.Lost, ExitCode: int32(s.res.ExitCode)})
	s.finished = true
	err := s.w.Close()
	s.res.Bytes = s.w.Bytes()
	s.res.Mechanism = s.mech
	s.res.CostMedian, s.res.CostP99 = s.costQuantiles()
	if err := perf.FastStartError(); err != nil {
		s.warn("%v", err)
	}
	if s.res.Samples > 0 && s.res.Truncated*10 > s.res.Samples {
		s.warn("%d of %d samples have incomplete stacks", s.res.Truncated, s.res.Samples)
	}
	if s.o.State != nil {
		for _, w := range s.o.State.Warnings() {
			s.warn("%s", w)
		}
	}
	return s.res, err
}

func (s *session) costQuantiles() (time.Duration, time.Duration) {
	if len(s.costs) == 0 {
		return 0, 0
	}
	c := append([]uint32(nil), s.costs...)
	sort.Slice(c, func(i, j int) bool { return c[i] < c[j] })
	q := func(f float64) time.Duration { return time.Duration(c[int(f*float64(len(c)-1))]) }
	return q(0.5), q(0.99)
}

func (s *session) addCost(ns uint64) {
	s.costN++
	v := uint32(min(ns, 1<<32-1))
	if len(s.costs) < costCap {
		s.costs = append(s.costs, v)
	} else if i := s.rng.Uint64N(s.costN); i < costCap {
		s.costs[i] = v
	}
}

func (s *session) addThread(pid, tid int, st tstate) *thread {
	t := &thread{tid: tid, pid: pid, ppid: pid, ptid: tid, state: st, fd: -1}
	s.threads[tid] = t
	s.order = append(s.order, t)
	if s.root == 0 {
		s.root = pid
	}
	return t
}

func (s *session) removeThread(t *thread) {
	if t.fd >= 0 {
		unix.Close(t.fd)
		t.fd = -1
	}
	if t.interrupted {
		t.interrupted = false
		s.interrupting--
	}
	delete(s.threads, t.tid)
	for i, u := range s.order {
		if u == t {
			s.order = append(s.order[:i], s.order[i+1:]...)
			break
		}
	}
}

func (s *session) addProcess(pid int, parent int) *process {
	p := &process{pid: pid, space: &proc.Space{}, known: map[proc.Mapping]bool{}}
	if pp := s.procs[parent]; pp != nil {
		p.exe = pp.exe
		p.catches = pp.catches // a fork keeps its parent's handlers
		p.space = pp.space.Clone()
		for m := range pp.known {
			p.known[m] = true
		}
	}
	s.procs[pid] = p
	return p
}

// describe writes what a reader needs to know about a process that runs
// already: the names of its threads and its executable mappings. exec marks
// the Comm as an exec (a launched command stopped at its exec).
func (s *session) describe(p *process, exec bool) {
	now := monotonic()
	p.exe = proc.Exe(p.pid)
	for _, t := range s.order {
		if t.pid == p.pid && t.state != stNew {
			s.write(&recording.Comm{Time: now, PID: uint32(p.pid), TID: uint32(t.tid), Exec: exec && t.tid == p.pid,
				Name: proc.Comm(p.pid, t.tid)})
			t.named = true
		}
	}
	s.readMaps(p, now)
}

// readMaps reads /proc/PID/maps and writes an Mmap record for each
// executable mapping not described yet; it reports whether there was one.
func (s *session) readMaps(p *process, now uint64) bool {
	p.refresh = now
	maps, err := proc.Maps(p.pid)
	if err != nil {
		return false
	}
	changed := false
	for _, m := range maps {
		if !m.Exec() {
			continue
		}
		mm := proc.Mapping{Start: m.Start, End: m.End, Offset: m.Offset, Path: m.Path}
		if p.known[mm] {
			continue
		}
		p.known[mm] = true
		p.space.Add(mm)
		changed = true
		if len(m.Path) > 0 && m.Path[0] == '/' {
			// Load its CFI in the background: the first sample in it then
			// does not hold the thread stopped for the load.
			go s.loadTable(m.Path)
		}
		s.write(&recording.Mmap{Time: now, PID: uint32(p.pid), TID: uint32(p.pid), Start: m.Start, Len: m.End - m.Start,
			Pgoff: m.Offset, Prot: unix.PROT_READ | unix.PROT_EXEC, BuildID: s.objs.BuildIDs.Get(m.Path), Path: m.Path})
	}
	return changed
}

// chooseMechanism settles how threads are stopped, trying a signalling event on
// t (which it keeps) unless poll was asked for.
func (s *session) chooseMechanism(t *thread) error {
	if s.o.Mechanism == MechanismPoll {
		s.mech = MechanismPoll
		s.choosePollClock(t)
		return nil
	}
	fd, err := openSignalClock(t.tid, s.interval, false)
	if err == unix.EACCES || err == unix.EPERM {
		// Unprivileged users may still sample user mode.
		fd, err = openSignalClock(t.tid, s.interval, true)
		s.excludeKern = err == nil
	}
	if err == nil {
		s.mech = MechanismSignal
		t.fd, t.armed, t.last, t.expect = fd, s.interval, 0, s.interval
		return nil
	}
	if s.o.Mechanism == MechanismSignal {
		return fmt.Errorf("opening a signalling cpu-clock perf event on thread %d: %w", t.tid, err)
	}
	s.mech = MechanismPoll
	s.warn("signalling perf events are unavailable (%v): sampling by polling each thread's CPU time instead", err)
	s.choosePollClock(t)
	return nil
}

// choosePollClock picks how the poll mechanism reads CPU time: counting
// perf events when the kernel allows them, else schedstat files, which are
// only as fresh as the last scheduler tick.
func (s *session) choosePollClock(t *thread) {
	fd, err := openCPUCounter(t.tid, false)
	if err == unix.EACCES || err == unix.EPERM {
		fd, err = openCPUCounter(t.tid, true)
		s.excludeKern = err == nil
	}
	if err != nil {
		s.warn("perf events are unavailable (%v): CPU time is read from /proc/PID/task/TID/schedstat, whose resolution is the scheduler tick", err)
		return
	}
	s.pollPerf = true
	t.fd, t.armed, t.last = fd, s.nextInterval(), 0
}

// cpuTime reads the CPU time of t in ns.
func (s *session) cpuTime(t *thread) (uint64, error) {
	if s.mech == MechanismSignal || s.pollPerf {
		return readCount(t.fd)
	}
	return readSchedstat(t.fd)
}

// nextInterval draws the next sampling interval with jitter.
func (s *session) nextInterval() uint64 {
	if s.o.Jitter <= 0 {
		return s.interval
	}
	f := 1 + s.o.Jitter/100*(2*s.rng.Float64()-1)
	return max(uint64(float64(s.interval)*f), 10000)
}

// arm starts sampling a thread: its perf event, or its schedstat file.
func (s *session) arm(t *thread) {
	t.tried = true
	if t.fd >= 0 {
		return
	}
	t.armed = s.nextInterval()
	switch s.mech {
	case MechanismSignal:
		fd, err := openSignalClock(t.tid, t.armed, s.excludeKern)
		if err != nil {
			if err != unix.ESRCH {
				s.warn("thread %d is not sampled: opening its perf event: %v", t.tid, err)
			}
			return
		}
		t.fd, t.last, t.expect = fd, 0, t.armed
	case MechanismPoll:
		var fd int
		var err error
		if s.pollPerf {
			fd, err = openCPUCounter(t.tid, s.excludeKern)
		} else {
			fd, err = openSchedstat(t.pid, t.tid)
		}
		if err != nil {
			return
		}
		t.fd = fd
		t.last, _ = s.cpuTime(t)
		t.due = monotonic() + t.armed
	}
}

// resume continues a stopped thread with its pending signal.
func (s *session) resume(t *thread) {
	sig := t.resumeSig
	t.resumeSig = 0
	t.state = stRunning
	if err := cont(t.tid, sig); err != nil && err != unix.ESRCH {
		s.warn("resuming thread %d: %v", t.tid, err)
	}
}

// loadTable loads an object's CFI in the background. A failure (or a panic
// in the parser) only leaves the object without CFI: the first sample in it
// tries again.
func (s *session) loadTable(path string) {
	defer func() { recover() }()
	s.objs.Tables.Get(path)
}

// readStopped reads len(buf) bytes of the stopped process's memory at addr;
// a short read is an error. It is the Mem of collector.Thread.
func (s *session) readStopped(addr uint64, buf []byte) error {
	n, err := readMem(s.memPID, addr, buf)
	if err == nil && n != len(buf) {
		err = fmt.Errorf("only %d readable", n)
	}
	if err != nil {
		return fmt.Errorf("reading %d bytes at %#x of process %d: %w", len(buf), addr, s.memPID, err)
	}
	return nil
}
