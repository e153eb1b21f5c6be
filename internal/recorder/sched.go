package recorder

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/culprit-dev/culprit/internal/perf"
	"github.com/culprit-dev/culprit/internal/proc"
	"github.com/culprit-dev/culprit/internal/recording"
)

// Sched records events of one process beside another collector: the
// scheduler events of --events wakeup (switches away with the kernel's
// prev_state and the blocking stack, switches onto a CPU, wake-ups with the
// waker's stack) into the recording that collector writes (culprit trace
// --sched, whose calls then have the thread states of
// internal/analysis/sched beside them), or CPU samples into a recording of
// their own (OpenCPU). The events, their rings and their decoding are the
// recorder's own; the caller drains them from the goroutine that writes its
// other records.
type Sched struct {
	s   *session
	own bool // the recording is the session's: Close ends it
}

// OpenSched opens the scheduler events on process pid, writing into w. A
// launched process stopped at its exec (launched) needs one inheriting
// event per CPU, which follows every thread and child it creates; a
// running one gets events on each of its threads, re-read until no new one
// appears. With pathOnly the switches away carry what a critical path
// needs: their state, and a blocked thread's kernel chain, which tells a
// lock wait, a sleep and I/O apart; no user chains, and no chains for a
// preemption, which an off-CPU profile would charge its wait to
// (syscallprog.Options.BlockingChainsOnly; where perf's events record the
// switches, they carry their chains).
func OpenSched(w *recording.Writer, pid int, launched, pathOnly bool) (*Sched, error) {
	o := Options{Events: []string{EventsWakeup}, StackBytes: 1024, blockingChainsOnly: pathOnly}
	s, err := openBeside(o, w, pid, launched, nil)
	if err != nil {
		return nil, err
	}
	return &Sched{s: s}, nil
}

// OpenCPU samples the CPU time of process pid (launched: stopped at its
// exec) at frequency Hz into a recording of its own at path, as culprit
// record would (one cpu-clock event per CPU, filtered to the process and
// its children, where the kernel allows it): a tracer's calls are timed
// with its probes' cost inside them, its samples say where the time went
// with that cost told apart (kernel frames of the trap). meta is written
// first; ringPages is the rings' size in data pages per CPU (0: sized as
// culprit record sizes them). Close ends the recording.
func OpenCPU(path string, pid int, launched bool, frequency, ringPages int, meta recording.Meta) (*Sched, error) {
	w, err := recording.Create(path)
	if err != nil {
		return nil, err
	}
	// The stack copy as culprit record's by default: made and sized per
	// thread by the sampling program, which walks the user chain too
	// (stackcopy.go), for every program but Go's.
	o := Options{Events: []string{EventsCPU}, Frequency: frequency, Output: path, RingPages: ringPages}
	s, err := openBeside(o, w, pid, launched, &meta)
	if err != nil {
		w.Discard()
		return nil, err
	}
	return &Sched{s: s, own: true}, nil
}

// openBeside opens the events of o on process pid, writing into w; with
// meta, the recording is the session's and starts with it.
func openBeside(o Options, w *recording.Writer, pid int, launched bool, meta *recording.Meta) (*session, error) {
	if err := o.setDefaults(); err != nil {
		return nil, err
	}
	exe := proc.Exe(pid)
	if o.autoStack {
		o.StackBytes = stackFor(exe)
	}
	cpus, err := onlineCPUs()
	if err != nil {
		return nil, err
	}
	kinds, err := eventKinds(o.Events, false)
	if err != nil {
		return nil, err
	}
	s := &session{o: o, w: w, cpus: cpus, kinds: kinds, pidfd: -1,
		spaces: map[uint32]*proc.Space{}, kseen: map[uint64]bool{}, kaddr: map[uint64]bool{},
		exes: map[uint32]string{}, awaiting: map[uint32]bool{}, endedSpaces: &goneSpaces{}}
	s.startFollowing()
	if s.wantsBPFStack() {
		s.startSnapshots(exe)
	}
	// Switches away through culprit's BPF program, as culprit record
	// takes them: perf's sched_switch events, inherited by a process's
	// threads, miss some of a thread's switches with nothing lost (its
	// thread states then disagree with the kernel's own schedstat).
	s.syscallsViaBPF()
	if err := s.followProcess(pid); err != nil {
		s.close()
		return nil, err
	}
	if launched {
		err = s.openEvents([]int{pid})
	} else {
		opened := map[int]bool{}
		for round := 0; round < 10 && err == nil; round++ {
			var tids, fresh []int
			if tids, err = proc.Tasks(pid); err != nil {
				break
			}
			for _, t := range tids {
				if !opened[t] {
					fresh = append(fresh, t)
					opened[t] = true
				}
			}
			if len(fresh) == 0 {
				break
			}
			err = s.openEvents(fresh)
		}
	}
	if err != nil {
		s.close()
		return nil, fmt.Errorf("%s events of %d: %w", o.Events[0], pid, err)
	}
	if meta != nil {
		meta.StartUnixNano, meta.StartClock = time.Now().UnixNano(), monotonic()
		s.meta = *meta
		s.begin()
	}
	if p, err := readProcess(pid); err == nil {
		s.synthesize(p)
	}
	s.startKernelSymbols()
	return s, nil
}

// OnEvent has fn shown every event as it is written, in the order the
// drains write them: switches onto a CPU, switches away (Arg the
// prev_state) and wake-ups (Arg the woken thread, with
// recording.WakeupInterrupt), with the user call chain for switches away
// and wake-ups (the waker's, innermost first; the slice is fn's only
// during the call). A collector that adapts while the program runs (which
// thread woke which, in which functions) reads them here instead of from
// the recording.
func (x *Sched) OnEvent(fn func(smp recording.Sample, user []uint64)) { x.s.onSched = fn }

// Drain writes the events the rings hold, but for those stamped in its
// last moments, which wait for the next drain or Close (orderedUntil).
func (x *Sched) Drain() {
	if err := x.s.drain(); err != nil {
		x.s.warn("writing the recording: %v", err)
	}
}

// Close stops the events, writes what is left and the kernel functions
// their stacks name, and returns the events written, those lost (their
// rings had no room) and what the user should know; Throttled tells the
// events the kernel's rate limit took. A recording of its own (OpenCPU) is ended; else
// the writer stays open.
func (x *Sched) Close() (events, lost uint64, warnings []string) {
	s := x.s
	for _, e := range s.events {
		e.Disable()
	}
	if err := s.drainAll(); err != nil {
		s.warn("writing the recording: %v", err)
	}
	s.unreportedLost()
	s.close()
	s.writeKernelSymbols(true)
	if x.own {
		s.write(&recording.End{Time: monotonic(), Samples: s.res.Samples, Lost: s.res.Lost, Throttled: s.res.Throttled, ExitCode: -1})
		if err := s.w.Close(); err != nil {
			s.warn("writing %s: %v", s.o.Output, err)
		}
	}
	return s.res.Samples, s.res.Lost, s.res.Warnings
}

// Throttled returns how many events the kernel's rate limit kept from
// being taken (perf_event_max_sample_rate), counted apart from the lost.
func (x *Sched) Throttled() uint64 { return x.s.res.Throttled }

// Mapping returns the mapping of process pid that holds addr, as the
// events' mmap records have described it so far: one of a library the
// process loaded and then exited with, whose /proc maps are gone, is
// still known, also drains after its exit (goneSpaces), and so is one
// whose record waits for the next drain (orderedUntil).
func (s *Sched) Mapping(pid uint32, addr uint64) (proc.Mapping, bool) {
	if sp := s.s.spaces[pid]; sp != nil {
		if m, ok := sp.Find(addr); ok {
			return m, true
		}
	}
	if m, ok := s.s.endedSpaces.find(pid, addr); ok {
		return m, true
	}
	var found proc.Mapping
	var ok bool
	var buf []byte
	var recs [][]byte
	for i := range s.s.rings {
		r := &s.s.rings[i]
		buf, recs = r.Peek(buf[:0], recs[:0])
		for _, raw := range recs {
			if rec, err := perf.Decode(raw, r.Event.Layout); err == nil {
				if m, is := rec.(*perf.Mmap); is && m.PID == pid && m.Prot&unix.PROT_EXEC != 0 && addr >= m.Start && addr-m.Start < m.Len {
					found, ok = proc.Mapping{Start: m.Start, End: m.Start + m.Len, Offset: m.Pgoff, Path: m.Path}, true
				}
			}
		}
		r.ReleaseFirst(0) // left for the drain
	}
	return found, ok
}
