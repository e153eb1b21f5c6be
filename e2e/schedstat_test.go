package e2e

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/testutil"
)

// The threads' time by scheduler state agrees with the kernel's own
// account of them: runq's threads (more than the CPUs, spinning, sleeping
// and handing a token around, then blocked for good) have their schedstat
// printed (/proc/self/task/TID/schedstat: time on the CPU, time waiting
// on a run queue); culprit's on-cpu time of each thread agrees with the
// first as onCPUAgrees defines, its runnable time is within 5% of the
// second, or of the second with the waits for a CPU the kernel counted in
// the run after them (its run queue's clock not read after a preempting
// wake-up), which culprit gives back to the wait: under load they reached
// 5% of a thread's run_delay (2.9 ms in one wait), and with them the
// runnable time agreed within 0.4% where it was over the run_delay. Each run's length is the kernel's (the thread's
// sum_exec_runtime at its switches onto a CPU, which culprit's BPF program
// records): by the switches' stamps alone, taken after the kernel's pick
// of the next thread, each run was the scheduler's work at its switch
// away longer and that at its switch in shorter, +5 to +19% over the
// kernel's on a busy 2-CPU VM; stamped after the context switch (perf's
// switch records) a few microseconds a switch more moved from on-cpu to
// runnable. It takes every switch of a thread (also its switches
// away recorded beside a tracer's probes) and every wake-up of it, also
// those no thread of the program made (a timer's interrupt wakes a
// sleeper on whatever task the CPU runs: without its wake-up the wait for
// a CPU after it would count as sleep) and a new thread's first (its wait
// for a CPU from its creation). A woken wait's runnable part is the
// kernel's run delay's growth over the run after it (the switches away
// record the thread's run delay): by the stamps, from the wake-up's
// sched_waking event (before the kernel queues the thread) to its switch
// in (after the kernel read the clock that ends the run delay), each
// woken wait was 5-16 µs longer on average, and each thread's runnable
// time 0.7-3.5% over its run_delay under two busy loops, more where a
// thread waited less for a CPU. Both recorders: culprit record's and the
// one culprit trace --sched (and culprit variance --sched) runs.
func TestStatesAgreeWithSchedstat(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "runq", []string{"runq.c"}, "-O2", "-g", "-fno-omit-frame-pointer", "-pthread")
	statesAgree(t, bin, "work")
}

// The same for a Go program, testdata/targets/gorunq (runq in Go: each
// goroutine locked to a thread of its own, so that the threads are the
// goroutines): its threads park in futex waits whenever their goroutine
// parks (time.Sleep, a channel), and another thread of the runtime hands
// the goroutine back and wakes them. Their on-cpu time agrees with the
// kernel's, each thread's, as onCPUAgrees defines, and their runnable
// time is within 5% of their run_delay (with the waits it counted as
// runs, above). They switch some 600 times in
// 110 ms on the CPU, so that a microsecond a switch is a point of the
// comparison: by the switches' stamps alone they were up to +13% over
// the kernel's on the CPU (20 µs a switch), and by the stamps of their
// wake-ups (most of their waits end in one) 8-10% over their run_delay.
func TestStatesAgreeWithSchedstatGo(t *testing.T) {
	testutil.NeedRoot(t)
	statesAgree(t, testutil.Go(t, "gorunq"), "main.work")
}

// statesAgree runs bin (runq's arguments, its output) under both
// recorders (trace's with fn traced) and compares each thread's on-cpu
// and runnable time, up to the time the program printed ("at NS"), with
// the schedstat it printed.
func statesAgree(t *testing.T, bin, fn string) {
	for _, collector := range [][]string{{"record", "--events", "cpu,wakeup"}, {"trace", "--sched", "-f", fn}} {
		t.Run(collector[0], func(t *testing.T) {
			out := rec(t)
			cmd := append(append([]string(nil), collector...), "-o", out, "--", bin, "6", "300")
			want, at := schedstats(t, mustRun(t, cmd...))
			// Each thread's time by state up to the reading: the threads'
			// exit after it (every thread woken to die, one of them
			// unmapping the process's memory: milliseconds on a busy
			// machine) is not in the account read.
			var st struct {
				End     uint64 `json:"end"`
				Threads []struct {
					TID       uint32          `json:"tid"`
					Intervals []stateInterval `json:"intervals"`
				} `json:"threads"`
			}
			if err := json.Unmarshal([]byte(mustRun(t, "states", "--format", "json", "--intervals", out)), &st); err != nil {
				t.Fatal(err)
			}
			seen, lastAll := 0, true
			var runAll, delayAll float64
			for _, th := range st.Threads {
				w, ok := want[th.TID]
				if !ok {
					continue
				}
				seen++
				unwokenEnds(t, th.TID, th.Intervals)
				ns := map[string]float64{}
				// The runs' time by the kernel's account where the
				// interval has it, else the interval's.
				// lead: the waits for a CPU the kernel counted in the
				// run after them, which culprit states gives back to
				// the wait (a run whose account is longer than its
				// stamps: the run queue's clock not read after a
				// preempting wake-up; docs/cli.md): its run_delay
				// lacks them.
				runs, kernel, account, lead := 0, 0, 0.0, 0.0
				for _, iv := range th.Intervals {
					if to := min(iv.To, at); to > iv.From {
						ns[iv.State] += float64(to - iv.From)
						if iv.State == "on-cpu" {
							runs++
							if iv.KernelLength && to == iv.To {
								kernel++
								account += float64(iv.KernelNS)
								lead += max(0, float64(iv.KernelNS)-float64(to-iv.From))
							} else {
								account += float64(to - iv.From)
							}
						}
					}
				}
				cpu, run := ns["on-cpu"], ns["runnable"]
				t.Logf("thread %d: on-cpu %.2f ms (%+.2f%%), by the kernel's account %.2f ms (%+.2f%%; %d of %d runs), schedstat %.2f ms; runnable %.1f ms (run_delay %.1f, waits the kernel counted as runs %.1f), sleep %.1f ms, lock %.1f ms",
					th.TID, cpu/1e6, 100*(cpu-w.cpu)/w.cpu, account/1e6, 100*(account-w.cpu)/w.cpu, kernel, runs, w.cpu/1e6, run/1e6, w.delay/1e6, lead/1e6, ns["sleep"]/1e6, ns["lock"]/1e6)
				if !onCPUAgrees(account, w.cpu) {
					t.Errorf("thread %d: on-cpu by the kernel's account %.0f ns, its schedstat %.0f ns (%+.2f%%; %.2f µs in each of its %.0f runs)",
						th.TID, account, w.cpu, 100*(account-w.cpu)/w.cpu, (account-w.cpu)/w.runs/1e3, w.runs)
				}
				if kernel < runs*19/20 {
					t.Errorf("thread %d: %d of its %d runs of the kernel's length", th.TID, kernel, runs)
				}
				// The thread's last run, to its exit after the reading,
				// has no switch onto a CPU after it: the switch away that
				// ended it tells its length (a run the recording ended
				// during has none: then the one before, which its switch
				// in tells).
				if k := lastRun(th.Intervals, st.End); k < 0 || !th.Intervals[k].KernelLength {
					lastAll = false
					t.Logf("thread %d: its last run is not of the kernel's length: %+v", th.TID, th.Intervals[max(k, 0):])
				}
				// The waits it counted as runs go back to the wait
				// before the run, its runnable part where the wait
				// was one for a CPU: the run_delay with none of them
				// and with all of them bound the runnable time.
				runAll += run
				delayAll += w.delay
				if run < 0.95*w.delay || run > 1.05*(w.delay+lead) {
					t.Errorf("thread %d: runnable %.0f ns, the kernel's run_delay %.0f ns and the waits it counted as runs %.0f ns", th.TID, run, w.delay, lead)
				}
			}
			t.Logf("the threads' runnable time %.0f ns, the kernel's run_delay %.0f ns", runAll, delayAll)
			if seen != len(want) {
				t.Errorf("%d of the %d threads in culprit states", seen, len(want))
			}
			if !lastAll {
				t.Errorf("a thread's last run without the kernel's length")
			}
		})
	}
}

// lastRun returns the index of the last on-cpu interval that ended
// before end, the recording's, -1 if none.
func lastRun(ivs []stateInterval, end uint64) int {
	for k := len(ivs) - 1; k >= 0; k-- {
		if ivs[k].State == "on-cpu" && ivs[k].To < end {
			return k
		}
	}
	return -1
}

// stateInterval is an interval of culprit states --format json --intervals.
type stateInterval struct {
	From    uint64 `json:"from"`
	To      uint64 `json:"to"`
	State   string `json:"state"`
	Unwoken bool   `json:"unwoken"`
	// WakeFromRunDelay: the unwoken wait ends at the wake-up the
	// kernel's run delay places.
	WakeFromRunDelay bool `json:"wake_from_run_delay"`
	// KernelLength: an on-cpu interval of the kernel's length,
	// KernelNS, or longer, up to the last event of its thread in it.
	KernelLength bool   `json:"kernel_length"`
	KernelNS     uint64 `json:"kernel_ns"`
	// Woken: the recorded wake-up of a blocked interval that ends
	// after it, at the thread's queueing its run delay places.
	Woken uint64 `json:"woken"`
}

// schedstat is a thread's account as runq printed it: time on the CPU and
// waiting on a run queue (run_delay), ns, and the times it ran.
type schedstat struct{ cpu, delay, runs float64 }

// onCPUAgrees tells whether culprit's on-cpu time of a thread by the
// kernel's account of its runs, cpu, agrees with the kernel's account of
// the thread (schedstat's first field, the scheduler entity's
// sum_exec_runtime), kernel: within 1%. Each run recorded with the
// thread's sum_exec_runtime at the switch onto a CPU that began it and at
// its next has the kernel's length (the intervals' kernel_ns), so the two
// differ by the runs that have no such account (a run whose switch in was
// not recorded, the last before the reading when the thread still ran)
// and by the part of the thread's account after the reading's own (runq
// reads every thread's schedstat once they are all blocked). Culprit's
// on-cpu intervals themselves may be longer: a run ends no sooner than
// the last event the thread made in it (a wake-up, a sample), and the
// kernel's account leaves out the time a VM's host took the CPU (steal);
// that excess is logged, not asserted: on the 2-CPU VM of the tests up
// to +3.3% of a thread's on-cpu time (144 threads: 6 runs of both tests,
// load 4-5; +4.9% in another 144), the kernel's account within -0.37% to
// +0.00% of schedstat (runs the recording missed).
func onCPUAgrees(cpu, kernel float64) bool {
	return math.Abs(cpu-kernel) <= 0.01*kernel
}

// schedstats reads runq's output: each thread's schedstat, and at, when
// it read them.
func schedstats(t *testing.T, stdout string) (want map[uint32]schedstat, at uint64) {
	t.Helper()
	want = map[uint32]schedstat{}
	for _, l := range strings.Split(stdout, "\n") {
		var tid uint32
		var cpu, delay, n float64
		if k, _ := fmt.Sscanf(l, "tid %d %f %f %f", &tid, &cpu, &delay, &n); k == 4 {
			want[tid] = schedstat{cpu, delay, n}
		}
		fmt.Sscanf(l, "at %d", &at)
	}
	if len(want) != 6 || at == 0 {
		t.Fatalf("%d threads printed their schedstat, want 6, at %d:\n%s", len(want), at, stdout)
	}
	return want, at
}

// A wait whose wake-up the recording lacks is marked unwoken, and holds
// the thread's wait for a CPU after its wake-up. runq's threads are
// recorded with perf's events (--perf-events), which record no wake-up
// made while a task outside the program runs, beside busy loops of the
// test's own (one per CPU): the timer interrupts that end runq's 100 µs
// sleeps often land on them. Up to the time runq read its threads'
// schedstat, each thread's runnable time is at most its run_delay, and its
// runnable time with its unwoken waits' at least that (5% each way: the
// switches onto a CPU perf stamps after the context switch move a few
// microseconds each from on-cpu to runnable); some waits were unwoken.
// Each thread's timeline begins runnable, at its creation's wake-up
// (sched_wakeup_new, which fires no sched_waking): without it a thread's
// wait for its first CPU was counted nowhere, 39 ms of one thread's
// under four busy loops (runnable with its unwoken waits 8.7% short of
// its run_delay).
// Kernels may deliver no event while some tasks run (docs/cli.md, culprit
// states): this makes the same case on any kernel.
func TestStatesUnwokenWaits(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "runq", []string{"runq.c"}, "-O2", "-g", "-fno-omit-frame-pointer", "-pthread")
	out := rec(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			for {
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
	}
	stdout := mustRun(t, "record", "--perf-events", "--events", "cpu,wakeup", "-o", out, "--", bin, "6", "300")
	close(stop)
	wg.Wait()
	want, at := schedstats(t, stdout)
	var st struct {
		Threads []struct {
			TID       uint32          `json:"tid"`
			Intervals []stateInterval `json:"intervals"`
		} `json:"threads"`
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, "states", "--format", "json", "--intervals", out)), &st); err != nil {
		t.Fatal(err)
	}
	unwoken, seen := 0, 0
	for _, th := range st.Threads {
		unwoken += unwokenEnds(t, th.TID, th.Intervals)
		w, ok := want[th.TID]
		if !ok {
			continue
		}
		seen++
		if len(th.Intervals) == 0 || th.Intervals[0].State != "runnable" {
			t.Errorf("thread %d: its timeline does not begin runnable at its creation's wake-up: %+v", th.TID, th.Intervals[:min(len(th.Intervals), 2)])
		}
		var run, wait float64
		n := 0
		for _, iv := range th.Intervals {
			to := min(iv.To, at)
			if to <= iv.From {
				continue
			}
			if iv.State == "runnable" {
				run += float64(to - iv.From)
			}
			if iv.Unwoken {
				wait += float64(to - iv.From)
				n++
			}
		}
		t.Logf("thread %d: runnable %.1f ms, run_delay %.1f ms, %d unwoken waits %.1f ms", th.TID, run/1e6, w.delay/1e6, n, wait/1e6)
		if run > 1.05*w.delay || run+wait < 0.95*w.delay {
			t.Errorf("thread %d: runnable %.0f ns, with its unwoken waits %.0f ns: the kernel's run_delay %.0f ns is not between", th.TID, run, run+wait, w.delay)
		}
	}
	if seen != len(want) {
		t.Errorf("%d of the %d threads in culprit states", seen, len(want))
	}
	if unwoken == 0 {
		t.Errorf("no wait was unwoken: warnings %q", st.Warnings)
	}
	found := false
	for _, w := range st.Warnings {
		found = found || strings.HasPrefix(w, fmt.Sprintf("%d waits ended with no wake-up recorded", unwoken))
	}
	if !found {
		t.Errorf("%d unwoken waits, warnings %q", unwoken, st.Warnings)
	}
}

// unwokenEnds checks that a blocked interval ended by its thread's running
// again, no wake-up between, is marked unwoken, and only such a one, or
// one the run delay placed the wake-up of (a runnable interval next); it
// returns how many there are.
func unwokenEnds(t *testing.T, tid uint32, ivs []stateInterval) int {
	t.Helper()
	n := 0
	for i, iv := range ivs {
		blocked := iv.State == "lock" || iv.State == "io" || iv.State == "sleep"
		ranNext := i+1 < len(ivs) && ivs[i+1].State == "on-cpu"
		if iv.WakeFromRunDelay {
			ranNext = i+1 < len(ivs) && ivs[i+1].State == "runnable"
		}
		if iv.Unwoken != (blocked && ranNext) || iv.WakeFromRunDelay && !iv.Unwoken {
			t.Errorf("thread %d: %s interval %d-%d, on-cpu next %v: unwoken %v", tid, iv.State, iv.From, iv.To, ranNext, iv.Unwoken)
		}
		if iv.Unwoken {
			n++
		}
	}
	return n
}

// A wait whose wake-up the recording lacks ends where the kernel's own
// account places its wake-up: culprit's BPF program records each thread's
// run delay (schedstat's run_delay) at its switches away, whose growth
// over a run is the thread's wait on a run queue before it. runq's
// threads are recorded with every wake-up; a copy of the recording
// without its wake-ups (as a kernel that delivers no event while some
// tasks run leaves some out, docs/cli.md) is read again. There each wait
// ends unwoken and, at least 80% of them (not a thread's first, nor one
// after which the kernel counted no wait for a CPU), at the wake-up the
// run delay places: each thread's runnable time is within 5% of its
// run_delay, as with the wake-ups (TestStatesAgreeWithSchedstat), and no
// placed wake-up (but one in a thousand) is before the recorded one: the
// kernel's run queue clock is read when the woken thread is queued,
// after the sched_waking event, and when the scheduler starts to pick
// it, before the switch in is stamped (placed - recorded: 2-908 µs,
// medians 8-14 µs).
func TestStatesWakeFromRunDelay(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "runq", []string{"runq.c"}, "-O2", "-g", "-fno-omit-frame-pointer", "-pthread")
	out := rec(t)
	want, at := schedstats(t, mustRun(t, "record", "--events", "cpu,wakeup", "-o", out, "--", bin, "6", "300"))
	cut := filepath.Join(t.TempDir(), "nowake.rec")
	if n := withoutWakeups(t, out, cut); n == 0 {
		t.Fatal("the recording has no wake-ups")
	}
	accounts := readSwitches(t, out)
	type states struct {
		Threads []struct {
			TID       uint32          `json:"tid"`
			Intervals []stateInterval `json:"intervals"`
		} `json:"threads"`
		Warnings []string `json:"warnings"`
	}
	var full, lacking states
	for _, s := range []struct {
		path string
		v    *states
	}{{out, &full}, {cut, &lacking}} {
		if err := json.Unmarshal([]byte(mustRun(t, "states", "--format", "json", "--intervals", s.path)), s.v); err != nil {
			t.Fatal(err)
		}
	}
	// The recorded wake-up of each wait, by the time it began (its
	// switch away, the same in both): where the wait ends, or, when its
	// run delay placed the thread's queueing after it, woken.
	woken := map[[2]uint64]uint64{}
	for _, th := range full.Threads {
		for _, iv := range th.Intervals {
			if (iv.State == "lock" || iv.State == "io" || iv.State == "sleep") && !iv.Unwoken {
				r := iv.To
				if iv.Woken != 0 {
					r = iv.Woken
				}
				woken[[2]uint64{uint64(th.TID), iv.From}] = r
			}
		}
	}
	var diffs []float64
	unwoken, placed, seen, early, missed := 0, 0, 0, 0, 0
	for _, th := range lacking.Threads {
		w, ok := want[th.TID]
		if !ok {
			continue
		}
		seen++
		var run float64
		for i, iv := range th.Intervals {
			if to := min(iv.To, at); to > iv.From && iv.State == "runnable" {
				run += float64(to - iv.From)
			}
			if !iv.Unwoken {
				continue
			}
			unwoken++
			if !iv.WakeFromRunDelay {
				// Not placed: it must be one the run delay cannot
				// place (below), whose thread waited for a CPU
				// briefly if at all.
				if r, ok := woken[[2]uint64{uint64(th.TID), iv.From}]; ok && iv.To > r+250e3 && r < at {
					d, lead := accounts.after(th.TID, iv.To)
					if d > 0 || lead > 0 {
						missed++
					}
					t.Logf("thread %d: the wait from %d, woken at %d, runnable %.1f µs to %d, not placed (run delay grew %d ns over the run after it, its account %d ns over its stamps)", th.TID, iv.From, r, float64(iv.To-r)/1e3, iv.To, d, lead)
				}
				continue
			}
			placed++
			if i+1 >= len(th.Intervals) || th.Intervals[i+1].State != "runnable" || th.Intervals[i+1].From != iv.To {
				t.Errorf("thread %d: the wait %d-%d placed by its run delay is not followed by a runnable interval", th.TID, iv.From, iv.To)
			}
			if r, ok := woken[[2]uint64{uint64(th.TID), iv.From}]; ok {
				d := float64(iv.To) - float64(r)
				diffs = append(diffs, d)
				// The kernel queues the thread after its sched_waking
				// event, so the placed wake-up is not before the recorded
				// one, but for the rates of the two clocks (the run
				// queue's, the recording's, which NTP may slew by up to
				// 500 ppm) over the wait: 2 µs and that.
				if d < -(2e3 + 5e-4*float64(iv.To-iv.From)) {
					early++
					t.Logf("thread %d: the wait from %d placed its wake-up at %d, %.1f µs before the recorded one", th.TID, iv.From, iv.To, -d/1e3)
				}
			}
		}
		t.Logf("thread %d: runnable %.1f ms without the wake-ups, run_delay %.1f ms", th.TID, run/1e6, w.delay/1e6)
		if math.Abs(run-w.delay) > 0.05*w.delay {
			t.Errorf("thread %d: runnable %.0f ns placed by the run delays, the kernel's run_delay %.0f ns", th.TID, run, w.delay)
		}
	}
	if seen != len(want) {
		t.Errorf("%d of the %d threads in culprit states", seen, len(want))
	}
	slices.Sort(diffs)
	q := func(f float64) float64 { return diffs[int(f*float64(len(diffs)-1))] / 1e3 }
	if len(diffs) == 0 {
		t.Fatalf("%d unwoken waits, %d placed, none matched a recorded wake-up", unwoken, placed)
	}
	t.Logf("%d unwoken waits, %d placed by the run delay, %d matched: placed - recorded wake-up µs: min %.1f p5 %.1f p50 %.1f p95 %.1f max %.1f",
		unwoken, placed, len(diffs), q(0), q(0.05), q(0.5), q(0.95), q(1))
	// Those not placed: each thread's first wait (no switch away before
	// it), and waits after which the kernel counted no wait for a CPU in
	// either of its accounts: the run delay did not grow (2-4% of runq's
	// waits at a load of 17-25 on Linux 6.18, the thread switched in
	// 8-150 µs after its sched_waking, and at times 250 µs-1.3 ms: the
	// schedule after a wake-up that preempted the running task reads no
	// clock, so neither the wait's end nor the run's start is read after
	// the queueing), and the run after it was no longer by the kernel's
	// account than by its stamps (the run, begun on that stale reading,
	// counts the wait otherwise, and the wait is placed from that: in 55
	// recordings, of 18,833 waits whose run delay did not grow none
	// before its recorded sched_waking, each of the 7 over 200 µs placed
	// 3-147 µs after it; a few of 50-100 µs, whose run was also short of
	// its stamps, were left unplaced).
	// The kernel's run delay over-counts now and then: a sleep of
	// memcached's, ended by a recorded wake-up 362 µs before its switch in
	// on another CPU, grew it by 966 ms of the 971 ms sleep (1 wait in
	// 4920; docs/cli.md). One in a thousand is let through.
	if early > placed/1000 {
		t.Errorf("%d of %d placed wake-ups before the recorded one", early, placed)
	}
	// How many are placed depends on how often the threads queue for a
	// CPU (79% of waits idle, 96-98% at load 17-38), so what is checked is
	// that no wait with a real stay on a run queue (over 250 µs from the
	// recorded wake-up to the switch in, beyond the kernel's uncounted
	// 8-150 µs) that the kernel's accounts hold goes unplaced: one after
	// which neither the run delay grew nor the run was longer by its
	// sum_exec_runtime than by its stamps is the stale clock's above,
	// which reaches past 250 µs at times (a CI run: 325 µs from the
	// recorded wake-up, the run delay grown 0 ns, the run 21 µs shorter
	// by its account): no account places it, and it is logged, not
	// counted. Not the waits woken after runq read the
	// schedstats (at), by its exit: the run after that wake-up ends in the
	// thread's exit, whose switch away is not recorded, so the run delay
	// does not say how long the thread waited before it (under four busy
	// loops, in 12 runs of 25 one such wait, up to 4 ms from its wake-up
	// to its switch in, and no other wait, was left unplaced). Nor, but as
	// many as the recording shows, the waits of runs whose switches were
	// not all recorded (the growth then spans more than one wait): events
	// lost, runs with no switch onto a CPU (docs/cli.md, culprit states;
	// 0-1 a run in those 25, none with a wait left unplaced).
	missing := 0
	for _, w := range lacking.Warnings {
		var n int
		if _, err := fmt.Sscanf(w, "%d events were lost", &n); err == nil {
			missing += n
		}
		if _, err := fmt.Sscanf(w, "%d runs of a thread had no switch onto a CPU recorded", &n); err == nil {
			missing += n
		}
	}
	if missed > missing {
		t.Errorf("%d of %d unwoken waits not placed though their thread waited over 250 µs for a CPU (%d placed; %d runs without all their switches recorded): warnings %q", missed, unwoken, placed, missing, lacking.Warnings)
	}
}

// switchAccounts is each thread's switches of a recording, in time
// order, with the kernel's accounts they carry.
type switchAccounts map[uint32][]recording.Sample

// readSwitches reads the switches of the recording at path.
func readSwitches(t *testing.T, path string) switchAccounts {
	t.Helper()
	a := switchAccounts{}
	eachRecord(t, path, func(x recording.Record) {
		if s, ok := x.(*recording.Sample); ok && (s.Event == recording.EventSwitch || s.Event == recording.EventSwitchIn) {
			a[s.TID] = append(a[s.TID], *s)
		}
	})
	for _, ss := range a {
		slices.SortStableFunc(ss, func(x, y recording.Sample) int { return cmp.Compare(x.Time, y.Time) })
	}
	return a
}

// after returns, for the run of thread tid that its switch onto a CPU at
// in began, how much its run delay grew from the switch away before to
// the one that ended it, and how much longer the run was by its
// sum_exec_runtime than by those switches' stamps (negative: shorter); 0
// for what the recording does not tell.
func (a switchAccounts) after(tid uint32, in uint64) (grew, longer int64) {
	ss := a[tid]
	i := slices.IndexFunc(ss, func(s recording.Sample) bool { return s.Event == recording.EventSwitchIn && s.Time == in })
	if i < 0 {
		return 0, 0
	}
	var before, away *recording.Sample
	for j := i - 1; j >= 0 && before == nil; j-- {
		if ss[j].Event == recording.EventSwitch {
			before = &ss[j]
		}
	}
	for j := i + 1; j < len(ss) && away == nil; j++ {
		if ss[j].Event == recording.EventSwitch {
			away = &ss[j]
		}
	}
	if away == nil {
		return 0, 0
	}
	if before != nil && before.HasRunDelay && away.HasRunDelay {
		grew = int64(away.RunDelay - before.RunDelay)
	}
	if ss[i].HasExecRuntime && away.HasExecRuntime {
		longer = int64(away.ExecRuntime-ss[i].ExecRuntime) - int64(away.Time-in)
	}
	return grew, longer
}

// withoutWakeups copies the recording in to out without its wake-ups,
// and returns how many it left out.
func withoutWakeups(t *testing.T, in, out string) int {
	t.Helper()
	w, err := recording.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	eachRecord(t, in, func(x recording.Record) {
		if s, ok := x.(*recording.Sample); ok && s.Event == recording.EventWakeup {
			n++
			return
		}
		if e, ok := x.(*recording.End); ok {
			e.Samples -= uint64(n)
		}
		if err := w.Write(x); err != nil {
			t.Fatal(err)
		}
	})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return n
}
