package recorder

import (
	"fmt"
	"slices"

	"github.com/culprit-dev/culprit/internal/follow"
	"github.com/culprit-dev/culprit/internal/perf"
	"github.com/culprit-dev/culprit/internal/proc"
	"github.com/culprit-dev/culprit/internal/recording"
)

// CPU time is sampled by one cpu-clock event per CPU, as perf record -a
// does, not by events on the target's threads: a thread's event restarts
// its timer each time the thread is switched in (an exit to the hypervisor
// on a VM), which a server that blocks once per request pays at every
// request; a CPU's timer runs on regardless. The samples of other
// processes are dropped in the kernel by a BPF program on the events
// (follow.Set.Filter, or the sampling program with it when that one runs)
// that keeps those of the followed processes: the target, and each process
// it forks, added at the fork (internal/follow).
//
// The mmap, comm, fork and exit records the samples are read with come the
// same way, from one dummy event per CPU that samples nothing, as perf
// record -a has them, not from inherited events on the target's threads:
// an event on a thread, even a dummy one, has the scheduler switch the
// thread's perf context at each of its switches: +590 to +720 ns a pipe
// round trip between two processes on this project's VMs, against +80 to
// +140 with the CPUs' dummy events (docs/performance.md, "Records of the
// CPUs"). The CPUs' events report every process of the machine: the
// recorder keeps the records of the followed processes, which it knows
// from the records themselves, in time order (keep): the target, and each
// process a followed one forks, from its fork record, which the kernel
// writes before the child runs, until its address space goes (dropEnded).
//
// What it changes: a thread's samples are those of the CPU's ticks that
// find it running, every millisecond of the CPU's time at 999 Hz, not of
// its own CPU time; right on average, as perf record -a. The kernel
// prepares every tick's sample (its call chains) before the program drops
// it, which costs the other processes of the machine what perf record -a
// -g costs them. Where per-CPU events or BPF are refused (a user without
// CAP_PERFMON or CAP_BPF), or with Options.ThreadClock, the events are the
// threads' own as before; also with jitter, whose clock ticks 4–10 times per
// sample: per CPU, every CPU of the machine would take those interrupts
// (8 µs each on a VM), busy with the target or not.

// startFollowing makes the set of followed processes when CPU time is to
// come from per-CPU events; without it (BPF refused) they come from the
// threads' events.
func (s *session) startFollowing() {
	cpu := false
	for _, k := range s.kinds {
		cpu = cpu || k.event == recording.EventCPU
	}
	if !cpu || s.o.ThreadClock || s.o.UserOnly || s.o.Jitter > 0 {
		return
	}
	f, err := follow.New()
	if err != nil {
		return
	}
	s.follow, s.perCPU = f, true
}

// followProcess has the per-CPU events keep the samples of process pid
// and of the processes it forks.
func (s *session) followProcess(pid int) error {
	s.threadStarted(uint32(pid), uint32(pid))
	if s.followed == nil {
		s.followed = map[uint32]bool{}
	}
	s.followed[uint32(pid)] = true
	if s.follow == nil {
		return nil
	}
	if err := s.follow.Add(uint32(pid)); err != nil {
		return fmt.Errorf("following process %d: %w", pid, err)
	}
	return nil
}

// openSidebandCPU opens the dummy event of each CPU that reports the
// mmap, comm and task records of every process, into the CPU's ring.
// Their MMAP2 records carry no build-id: asked for every mapping of the
// machine, the kernel marks other tools' records of the same mappings as
// carrying one (perf.Config.NoBuildID); the recorder reads the build-id
// from the file instead (collector.Objects.BuildIDs), once per file.
func (s *session) openSidebandCPU(cfg perf.Config, k *eventKind, pages int) error {
	cfg.Inherit, cfg.Disabled, cfg.NoBuildID = false, false, true
	var evs []*perf.Event
	for _, cpu := range s.cpus {
		ev, err := perf.Open(cfg, -1, cpu, -1)
		if err != nil {
			for _, e := range evs {
				e.Close()
			}
			return fmt.Errorf("opening the CPUs' events for mappings and processes: %w", err)
		}
		evs = append(evs, ev)
	}
	s.sidebandCPU = true
	for i, ev := range evs {
		s.events = append(s.events, ev)
		if err := s.output(ev, s.cpus[i], k, pages); err != nil {
			return err
		}
	}
	return nil
}

// keep reports whether a record of the CPUs' dummy events is of a
// followed process, and follows the processes they fork: a fork record
// comes before any record of the child, and records are handled in time
// order.
func (s *session) keep(rec any) bool {
	switch r := rec.(type) {
	case *perf.Mmap:
		return s.followed[r.PID]
	case *perf.Comm:
		return s.followed[r.PID]
	case *perf.Task:
		if r.Type == perf.RecordFork && r.PID != r.PPID && s.followed[r.PPID] {
			s.followed[r.PID] = true
		}
		return s.followed[r.PID]
	}
	return true
}

// startCPUClocks gives the per-CPU events the filter where the sampling
// program does not run on them, then starts them: they were opened
// disabled, so that not one sample of another process is written.
func (s *session) startCPUClocks() error {
	if !s.cpuClocks || s.clocksStarted {
		return nil
	}
	for _, ev := range s.clockEvents {
		if s.snap == nil {
			if err := s.follow.Filter(ev.FD); err != nil {
				return err
			}
		}
		if err := ev.Enable(); err != nil {
			return fmt.Errorf("starting the cpu-clock events: %w", err)
		}
	}
	s.clocksStarted = true
	return nil
}

// threadStarted notes a thread of a followed process, for processEnded.
func (s *session) threadStarted(pid, tid uint32) {
	if s.threads == nil {
		s.threads = map[uint32]map[uint32]bool{}
	}
	if s.threads[pid] == nil {
		s.threads[pid] = map[uint32]bool{}
	}
	s.threads[pid][tid] = true
}

// processEnded reports, at the exit of thread tid, whether it was the last
// of process pid, whose address space and value plans can then go. A
// process's first thread can exit before the others (pthread_exit in
// main), and its other threads are sampled on. The follow set knows in the
// kernel (a process leaves it at its last thread's exit, which the kernel
// reports before the exit record); without one, the process's threads seen
// starting are counted, and a process none were seen for (threads that ran
// before an attach) ends with its first thread, as perf's records alone
// tell.
func (s *session) processEnded(pid, tid uint32) bool {
	threads := s.threads[pid]
	delete(threads, tid)
	if s.follow != nil {
		if s.follow.Has(pid) {
			return false
		}
		delete(s.threads, pid)
		return true
	}
	if len(threads) > 0 || threads == nil && pid != tid {
		return false
	}
	delete(s.threads, pid)
	return true
}

// endProcess lets the address space and value plan of an ended process go
// at the end of the next drain, not at once. The follow set says whether a
// process is gone now, not when its exit record was written: the recorder
// handles records a drain behind the kernel, so an exit record can be
// handled after the whole process is gone while samples its other threads
// took before that are still to come, later in the same drain or, written
// after this drain read their ring, in the next one (none after that: the
// process was gone when this drain handled the exit). Unwound without
// their process's mappings, such samples would end at their first frame.
func (s *session) endProcess(pid uint32) {
	if s.ended == nil {
		s.ended = map[uint32]uint64{}
	}
	if _, ok := s.ended[pid]; !ok {
		s.ended[pid] = s.drains
	}
}

// dropEnded forgets the processes that ended before this drain began.
func (s *session) dropEnded() {
	for pid, at := range s.ended {
		if at < s.drains {
			if s.endedSpaces != nil {
				s.endedSpaces.add(pid, s.spaces[pid])
			}
			delete(s.ended, pid)
			delete(s.spaces, pid)
			delete(s.followed, pid)
			s.forget(pid)
		}
	}
}

// goneSpaces keeps the address spaces of the processes that ended, the
// last maxGoneSpaces of them, for a collector beside the session
// (Sched.Mapping): it reads its own records of a process later than the
// session drains its rings, on a busy machine several drains later, and a
// call a process made just before it exited can name a library only these
// mappings still tell.
type goneSpaces struct {
	spaces map[uint32]*proc.Space
	order  []uint32 // oldest first
}

// maxGoneSpaces bounds goneSpaces for a traced tree of many short
// processes (a build): a few hundred bytes each.
const maxGoneSpaces = 1024

func (g *goneSpaces) add(pid uint32, sp *proc.Space) {
	if sp == nil {
		return
	}
	if g.spaces == nil {
		g.spaces = map[uint32]*proc.Space{}
	}
	if _, ok := g.spaces[pid]; ok {
		g.order = slices.DeleteFunc(g.order, func(p uint32) bool { return p == pid })
	}
	g.spaces[pid] = sp
	g.order = append(g.order, pid)
	if len(g.order) > maxGoneSpaces {
		delete(g.spaces, g.order[0])
		g.order = g.order[1:]
	}
}

func (g *goneSpaces) find(pid uint32, addr uint64) (proc.Mapping, bool) {
	if g == nil {
		return proc.Mapping{}, false
	}
	if sp := g.spaces[pid]; sp != nil {
		return sp.Find(addr)
	}
	return proc.Mapping{}, false
}
