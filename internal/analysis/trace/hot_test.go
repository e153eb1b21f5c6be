package trace

import (
	"math"
	"slices"
	"testing"

	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
)

// A sample counts for the innermost frame of the executable (the C
// library's and the kernel's frames below it are its callees' time),
// only under root, inlined frames charged to their function, clone
// suffixes removed.
func TestSampledShares(t *testing.T) {
	p := &profile.Profile{
		Frames: []profile.Frame{
			{Function: "main", Object: "/bin/prog"},                  // 0
			{Function: "work.isra.0", Object: "/bin/prog"},           // 1
			{Function: "memcpy", Object: "/lib/libc.so.6"},           // 2
			{Function: "do_page_fault", Kernel: true},                // 3
			{Function: "helper", Object: "/bin/prog", Inlined: true}, // 4
			{Function: "_start", Object: "/bin/prog"},                // 5
			{Function: "_dl_relocate", Object: "/lib/ld.so"},         // 6
			{Function: "work", Object: "/other/prog2"},               // 7: another program
		},
		Stacks: [][]int32{
			{3, 2, 1, 0, 5}, // kernel under memcpy under work: work
			{1, 0, 5},       // work
			{4, 1, 0, 5},    // helper inlined into work: work
			{0, 5},          // main
			{6, 5},          // the loader before main: not counted
			{2, 7},          // another object only: not counted
		},
	}
	for st, n := range []int{3, 1, 2, 4, 5, 7} {
		for range n {
			p.Samples = append(p.Samples, profile.Sample{Stack: int32(st), Event: recording.EventCPU})
		}
	}
	p.Samples = append(p.Samples, profile.Sample{Stack: 1, Event: recording.EventSyscallEnter}) // not CPU time
	got, n := SampledShares(p, "/elsewhere/prog", []string{"main"})
	if n != 10 {
		t.Fatalf("%d samples counted, want 10 (those under main)", n)
	}
	if len(got) != 2 || math.Abs(got["work"].Share-0.6) > 1e-9 || math.Abs(got["main"].Share-0.4) > 1e-9 {
		t.Errorf("shares %v, want work 0.6 and main 0.4", got)
	}
	if want := profile.Err(6, 10); got["work"].Err != want {
		t.Errorf("work's error %g, want %g", got["work"].Err, want)
	}
	if _, n := SampledShares(p, "/bin/prog", nil); n != 15 {
		t.Errorf("without a root: %d samples counted, want 15 (the loader's under _start too)", n)
	}
}

// In a traced run, a sample taken in a uprobe's trap (the kernel's
// breakpoint, single-step or uretprobe path, the handlers' BPF program,
// or a user frame in the [uprobes] mapping) is the probes' cost: not the
// program's time, counted apart. A return address that is the return
// probes' trampoline is not a trap: the sample is the program's.
func TestSampledCountsTraps(t *testing.T) {
	p := &profile.Profile{
		Frames: []profile.Frame{
			{Function: "work", Object: "/bin/prog"},                         // 0
			{Function: "irqentry_exit_to_user_mode", Kernel: true},          // 1
			{Function: "exc_debug_user", Kernel: true},                      // 2
			{Function: "asm_exc_int3", Kernel: true},                        // 3
			{Function: "__do_sys_uretprobe", Kernel: true},                  // 4
			{Function: "bpf_prog_c11086e3eaa9a27f_culprit_1", Kernel: true}, // 5
			{Function: "", Object: "[uprobes]"},                             // 6
			{Function: "do_page_fault", Kernel: true},                       // 7
			{Function: "leaf", Object: "/bin/prog"},                         // 8
			{Function: "[uretprobe]", Object: "[uprobes]"},                  // 9
		},
		Stacks: [][]int32{
			{1, 2, 0}, // single step of work's first instruction
			{1, 3, 0}, // the breakpoint
			{4, 6, 8}, // the return trampoline's system call
			{5, 0},    // the handler's program
			{6, 0},    // the displaced instruction, out of line
			{7, 0},    // a page fault in work: work's
			{8, 0},    // leaf
			{8, 9},    // leaf, inside a traced call whose return probe is armed: leaf's
		},
	}
	for st, n := range []int{5, 4, 3, 2, 1, 6, 9, 7} {
		for range n {
			p.Samples = append(p.Samples, profile.Sample{Stack: int32(st), Event: recording.EventCPU})
		}
	}
	counts, total, traps := SampledCounts(p, "prog", nil, nil, nil)
	if total != 22 || traps != 15 || counts["work"] != 6 || counts["leaf"] != 16 || len(counts) != 2 {
		t.Errorf("counts %v, %d counted, %d in traps; want work 6, leaf 16, 22 counted and 15 in traps", counts, total, traps)
	}
	for _, fn := range []string{"handle_swbp", "uprobe_notify_resume", "do_int3_user", "arch_uretprobe_hijack_return_addr"} {
		if !TrapFrame(fn) {
			t.Errorf("%s is not seen as a trap's frame", fn)
		}
	}
	for _, fn := range []string{"do_page_fault", "schedule", "copy_user_generic", "do_syscall_64"} {
		if TrapFrame(fn) {
			t.Errorf("%s is seen as a trap's frame", fn)
		}
	}
}

// A recorded call trapped at its entry, and at its return when it had
// a return address.
func TestProbeTraps(t *testing.T) {
	p := &profile.Profile{
		Frames: []profile.Frame{{Function: "loop", Object: "/bin/prog"}},
		Probes: []profile.Probe{{Function: "loop"}, {Function: "leaf"}},
		Calls: []profile.Call{
			{Probe: 0, Caller: -1, Site: -1},
			{Probe: 1, Caller: 0, Site: 0},
			{Probe: 1, Caller: 0, Site: 0},
		},
	}
	if got := ProbeTraps(p); got != 5 {
		t.Errorf("%d probe traps, want 5", got)
	}
}

// Traces of many and of few probe traps give the time a trap adds, and
// the pool's samples less that time for every trace's traps are the
// untraced runs' total, whichever functions the slowing fell on.
func TestUntracedTotal(t *testing.T) {
	// 100 samples a run untraced at 1000 Hz (0.1 s), and 2 µs of the
	// program's own time lost to each trap: 2 samples per 1,000 traps.
	const u, perTrap = 0.1, 2e-6
	var traces []PooledTrace
	for _, k := range []int{1000, 50000, 100000} {
		traces = append(traces, PooledTrace{Samples: int((u + perTrap*float64(k)) * 1000), Hz: 1000, Traps: k})
	}
	total, d, ok := UntracedTotal(traces)
	if !ok || math.Abs(d-perTrap) > 1e-9 || math.Abs(total-300) > 1e-6 {
		t.Errorf("UntracedTotal = %g, %g, %v; want 300 samples, %g s a trap", total, d, ok, perTrap)
	}
	// At another rate the samples of a trace count as many.
	mixed := append(slices.Clone(traces), PooledTrace{Samples: int((u + perTrap*20000) * 10000), Hz: 10000, Traps: 20000})
	if total, d, ok := UntracedTotal(mixed); !ok || math.Abs(d-perTrap) > 1e-9 || math.Abs(total-1300) > 1e-6 {
		t.Errorf("with a trace at 10 kHz: UntracedTotal = %g, %g, %v; want 1300 samples", total, d, ok)
	}
	// Traces all of about the same traps give no slope.
	same := []PooledTrace{{Samples: 300, Hz: 1000, Traps: 100000}, {Samples: 310, Hz: 1000, Traps: 150000}}
	if _, _, ok := UntracedTotal(same); ok {
		t.Error("a slope from traps within a factor of two")
	}
	if _, _, ok := UntracedTotal(traces[:1]); ok {
		t.Error("a slope from one trace")
	}
	// A slope that leaves nothing is no estimate.
	steep := []PooledTrace{{Samples: 10, Hz: 1000, Traps: 1000}, {Samples: 1000, Hz: 1000, Traps: 100000}, {Samples: 2, Hz: 1000, Traps: 1500}}
	if total, _, ok := UntracedTotal(steep); ok && total <= 0 {
		t.Errorf("total %g accepted", total)
	}
}

// The innermost call open at a time, on its thread: nested calls, a
// callee that returned before the time (its caller is), another thread's
// calls apart.
func TestInnermostOpen(t *testing.T) {
	p := &profile.Profile{
		Probes: []profile.Probe{{Function: "main"}, {Function: "parse"}, {Function: "leaf"}, {Function: "worker"}},
		Calls: []profile.Call{
			{Start: 10, End: 100, TID: 1, Probe: 0},
			{Start: 20, End: 60, TID: 1, Probe: 1},
			{Start: 30, End: 40, TID: 1, Probe: 2},
			{Start: 45, End: 50, TID: 1, Probe: 2},
			{Start: 15, End: 90, TID: 2, Probe: 3},
		},
	}
	open := InnermostOpen(p, nil)
	for _, c := range []struct {
		tid  uint32
		t    uint64
		want string
	}{
		{1, 5, ""}, {1, 10, "main"}, {1, 25, "parse"}, {1, 35, "leaf"},
		{1, 42, "parse"}, {1, 47, "leaf"}, {1, 55, "parse"}, {1, 70, "main"},
		{1, 150, ""}, {2, 50, "worker"}, {3, 50, ""},
	} {
		if got := open(c.tid, c.t); got != c.want {
			t.Errorf("open(%d, %d) = %q, want %q", c.tid, c.t, got, c.want)
		}
	}
	// A sample in a library whose stack the trace cut short (no frame of
	// the executable) counts for the call open then; one with no call
	// open (the loader) for nothing.
	sp := &profile.Profile{
		Frames: []profile.Frame{{Function: "malloc", Object: "/lib/libc.so.6"}, {Function: "parse", Object: "/bin/prog"}},
		Stacks: [][]int32{{0}, {1}},
		Samples: []profile.Sample{
			{Stack: 0, TID: 1, Time: 35, Event: recording.EventCPU},
			{Stack: 0, TID: 1, Time: 5, Event: recording.EventCPU},
			{Stack: 1, TID: 1, Time: 25, Event: recording.EventCPU},
		},
	}
	counts, total, _ := SampledCounts(sp, "prog", nil, nil, open)
	if total != 2 || counts["leaf"] != 1 || counts["parse"] != 1 {
		t.Errorf("counts %v, %d counted; want leaf 1 (open at its time), parse 1, 2 counted", counts, total)
	}
	if _, total, _ := SampledCounts(sp, "prog", nil, nil, nil); total != 1 {
		t.Errorf("without open: %d counted, want 1", total)
	}
}

// Fitted function by function, a function's samples that grow with the
// traps go to the slope and those that do not to its untraced time; the
// functions' estimates sum to the pool's untraced total.
func TestUntracedByFunction(t *testing.T) {
	// At 1000 Hz: "loop" 50 samples a run and 1 more per 1,000 traps
	// (the code after the traps), "leaf" 20 and none more, "near" none
	// untraced and 2 per 1,000 traps.
	var traces []PooledTrace
	for _, k := range []int{2000, 50000, 100000, 100000} {
		c := map[string]int{"loop": 50 + k/1000, "leaf": 20, "near": 2 * k / 1000}
		traces = append(traces, PooledTrace{Samples: c["loop"] + c["leaf"] + c["near"], Hz: 1000, Traps: k, Counts: c})
	}
	by, total, d, ok := UntracedByFunction(traces)
	if !ok {
		t.Fatal("no fit")
	}
	want := map[string]float64{"loop": 200, "leaf": 80, "near": 0}
	sum := 0.0
	for f, w := range want {
		if math.Abs(by[f].Samples-w) > 1e-6 {
			t.Errorf("%s: %g untraced samples, want %g", f, by[f].Samples, w)
		}
		sum += by[f].Samples
	}
	if tt, dd, _ := UntracedTotal(traces); math.Abs(sum-total) > 1e-6 || math.Abs(tt-total) > 1e-6 || math.Abs(dd-d) > 1e-15 {
		t.Errorf("functions sum to %g; total %g, UntracedTotal's %g", sum, total, tt)
	}
	if by["leaf"].Err <= 0 || by["near"].Err <= 0 {
		t.Errorf("errors %+v", by)
	}
	// One sample in a trace of many traps is mostly the traps'; one in a
	// trace of few is the program's.
	traces[3].Counts["once"] = 1
	traces[3].Samples++
	traces[0].Counts["seen"] = 1
	traces[0].Samples++
	by, _, _, _ = UntracedByFunction(traces)
	if u := by["once"]; u.Samples+u.Err >= 1 {
		t.Errorf("once, in a trace of 100,000 traps: %+v", u)
	}
	if u := by["seen"]; u.Samples < 1 {
		t.Errorf("seen, in a trace of 2,000 traps: %+v", u)
	}
	// A trace without counts (a pool written before they were kept)
	// cannot be fitted.
	old := append(slices.Clone(traces), PooledTrace{Samples: 90, Hz: 1000, Traps: 40000})
	if _, _, _, ok := UntracedByFunction(old); ok {
		t.Error("a fit with a trace without counts")
	}
}

// A pool like lua5.4's (six traces of every function, one of the basic
// pipeline, a few samples of the program's own code in each): by its
// pooled counts every function with a sample is hot; fitted by function,
// one seen once under a trace of every function is not, while one seen in
// the trace of few probes is, and so are the interpreter loop and one
// whose samples do not grow with the traps.
func TestFittedHot(t *testing.T) {
	var traces []PooledTrace
	pooled := map[string]int{}
	for i := range 7 {
		k, c := 165800, map[string]int{"luaV_execute": 40, "luaH_get": 2}
		if i == 6 {
			k, c = 26180, map[string]int{"luaV_execute": 8, "luaH_get": 2, "str_find_aux": 1}
		}
		if i == 2 {
			c["luaC_step"] = 1
		}
		n := 0
		for f, v := range c {
			n += v
			pooled[f] += v
		}
		traces = append(traces, PooledTrace{Samples: n, Hz: 9999, Traps: k, Counts: c})
	}
	by, total, _, ok := UntracedByFunction(traces)
	if !ok {
		t.Fatal("no fit")
	}
	got := FittedHot(by, total, 1)
	for f, want := range map[string]bool{"luaV_execute": true, "luaH_get": true, "str_find_aux": true, "luaC_step": false} {
		if got[f] != want {
			t.Errorf("%s: hot %v, want %v (%+v of %g)", f, got[f], want, by[f], total)
		}
	}
	n := 0
	for _, v := range pooled {
		n += v
	}
	if !SampledHot(pooled, int(math.Round(total)), 1)["luaC_step"] {
		t.Error("the pooled rule does not keep a function seen once")
	}
	if SampledHot(map[string]int{"a": 1, "b": 999}, 1000, 1)["a"] || !SampledHot(map[string]int{"a": 6, "b": 994}, 1000, 1)["a"] {
		t.Error("SampledHot: 1 of 1000 kept or 6 of 1000 not")
	}
}

// Functions judged hot only by their interval's upper end are the
// doubtful ones; one whose share is over the line is not.
func TestSampledDoubtful(t *testing.T) {
	counts := map[string]int{"big": 30, "over": 2, "once": 1}
	// Of 100: big 30% and over 2% are over 1% by their share; once (1%)
	// is judged hot by its interval only.
	d := SampledDoubtful(counts, 100, 1)
	if _, ok := d["big"]; ok || len(d) != 1 || d["once"] != 0.01 {
		t.Errorf("doubtful of 100: %v", d)
	}
	if !SampledHot(counts, 100, 1)["once"] {
		t.Error("once is not judged hot")
	}
	// Of 300: over (0.67%) is doubtful; once (0.33%) is not hot at all.
	d = SampledDoubtful(counts, 300, 1)
	if _, ok := d["over"]; !ok || len(d) != 1 {
		t.Errorf("doubtful of 300: %v", d)
	}
}

func TestHotThreshold(t *testing.T) {
	for _, c := range []struct{ count, base, want uint64 }{
		{0, 200, 200},     // never traced: Perun's threshold
		{90000, 200, 200}, // called often: Perun's threshold
		{1500, 200, 150},  // a tenth of its calls
		{100, 200, 20},    // at least MinHotCalls
		{100, 10, 10},     // never over the base
		{100000, 2000, 2000},
	} {
		if got := HotThreshold(c.count, c.base); got != c.want {
			t.Errorf("HotThreshold(%d, %d) = %d, want %d", c.count, c.base, got, c.want)
		}
	}
}
