package introperf

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
)

// event is one stack event of a hand-built profile: time, thread and the
// stack root first (as the paper writes it).
type event struct {
	t     uint64
	tid   uint32
	stack []string
	kind  recording.Event
	arg   uint64
}

// build makes a profile from events; function names are their own object's
// functions ("prog"), except names with a "lib:" or "k:" prefix.
func build(events []event) *profile.Profile {
	p := &profile.Profile{Threads: map[uint32]profile.Thread{}}
	frames := map[string]int32{}
	stacks := map[string]int32{}
	for _, e := range events {
		var st []int32
		for i := len(e.stack) - 1; i >= 0; i-- { // innermost first
			name := e.stack[i]
			fi, ok := frames[name]
			if !ok {
				f := profile.Frame{Function: name, Object: "/bin/prog"}
				switch {
				case strings.HasPrefix(name, "lib:"):
					f = profile.Frame{Function: name[4:], Object: "/lib/libx.so"}
				case strings.HasPrefix(name, "libc:"):
					f = profile.Frame{Function: name[5:], Object: "/lib/x86_64-linux-gnu/libc.so.6"}
				case strings.HasPrefix(name, "plug:"):
					f = profile.Frame{Function: name[5:], Object: "/opt/plug.so"}
				case strings.HasPrefix(name, "k:"):
					f = profile.Frame{Function: name[2:], Object: profile.KernelObject, Kernel: true}
				}
				fi = int32(len(p.Frames))
				p.Frames = append(p.Frames, f)
				frames[name] = fi
			}
			st = append(st, fi)
		}
		key := strings.Join(e.stack, ";")
		si, ok := stacks[key]
		if !ok {
			si = int32(len(p.Stacks))
			p.Stacks = append(p.Stacks, st)
			stacks[key] = si
		}
		tid := e.tid
		if tid == 0 {
			tid = 1
		}
		p.Samples = append(p.Samples, profile.Sample{Time: e.t, PID: 1, TID: tid, Stack: si, Event: e.kind, Arg: e.arg})
		p.Threads[tid] = profile.Thread{PID: 1, TID: tid, Comm: "prog"}
	}
	if len(p.Samples) > 0 {
		p.StartTime = p.Samples[0].Time
	}
	return p
}

func stacks(ts []uint64, ss ...string) []event {
	var out []event
	for i, s := range ss {
		out = append(out, event{t: ts[i], stack: strings.Split(s, ","), kind: recording.EventSyscallEnter})
	}
	return out
}

type want struct {
	name       string
	ctx        string // root-first path of the instance's node
	cons, aggr uint64
}

// checkWorkedExample checks the notes' golden table (Part I, Table 1 /
// Figure 3 with the corrected Algorithm 2) on a result of the stacks
// A,B,D / A,B,D / A,C,D / A,C at t1..t4.
func checkWorkedExample(t *testing.T, r *Result, t1, t2, t3, t4 uint64) {
	t.Helper()
	wants := []want{
		{"D", "A;B;D", t2 - t1, t3 - t1}, // cons t2−t1, aggr t3−t1
		{"B", "A;B", t2 - t1, t3 - t1},
		{"D", "A;C;D", 0, t4 - t3},
		{"C", "A;C", t4 - t3, t4 - t3},
		{"A", "A", t4 - t1, t4 - t1},
	}
	if len(r.Instances) != len(wants) {
		t.Fatalf("got %d instances, want %d: %+v", len(r.Instances), len(wants), r.Instances)
	}
	got := map[string]Instance{}
	for _, in := range r.Instances {
		var names []string
		for _, f := range r.Tree.NodePath(r.Tree.Node(in.Node)) {
			names = append(names, r.Tree.Funcs.Get(f).Name)
		}
		got[strings.Join(names, ";")] = in
	}
	t.Logf("%-8s %-10s %14s %14s", "instance", "context", "conservative", "aggressive")
	for _, w := range wants {
		in, ok := got[w.ctx]
		if !ok {
			t.Errorf("no instance in context %s", w.ctx)
			continue
		}
		if fn := r.Tree.Funcs.Get(in.Func).Name; fn != w.name {
			t.Errorf("%s: function %s, want %s", w.ctx, fn, w.name)
		}
		if in.Conservative != w.cons || in.Aggressive != w.aggr {
			t.Errorf("%s: conservative %d aggressive %d, want %d %d", w.ctx, in.Conservative, in.Aggressive, w.cons, w.aggr)
		}
		t.Logf("%-8s %-10s %14d %14d", w.name, w.ctx, in.Conservative, in.Aggressive)
	}
}

func TestWorkedExampleHandBuilt(t *testing.T) {
	ts := []uint64{1000, 2500, 4100, 7000}
	p := build(stacks(ts, "A,B,D", "A,B,D", "A,C,D", "A,C"))
	r := Analyze(p, Options{KeepInstances: true})
	checkWorkedExample(t, r, ts[0], ts[1], ts[2], ts[3])
	// The A→C→D instance was seen once: conservative 0, aggressive the gap.
}

func TestPathToIDStable(t *testing.T) {
	funcs := NewFuncTable()
	a := funcs.Intern(Func{Name: "A", Object: "p"})
	b := funcs.Intern(Func{Name: "B", Object: "p"})
	c := funcs.Intern(Func{Name: "C", Object: "p"})
	tr := NewTree(funcs)
	p1 := tr.PathToID([]int32{a, b})
	p2 := tr.PathToID([]int32{a, c})
	if p1 == p2 {
		t.Fatalf("different contexts share id %d", p1)
	}
	for i := 0; i < 3; i++ {
		if id := tr.PathToID([]int32{a, b}); id != p1 {
			t.Fatalf("A,B got id %d then %d", p1, id)
		}
	}
	// A path ending at an inner node gets its own id; the node is shared.
	p3 := tr.PathToID([]int32{a})
	if p3 == p1 || p3 == p2 || tr.Nodes() != 3 {
		t.Fatalf("A: id %d, nodes %d", p3, tr.Nodes())
	}
	for _, id := range []int32{p1, p2, p3} {
		back := tr.IDToPath(id)
		if tr.PathToID(back) != id {
			t.Errorf("IDToPath(%d) = %v does not map back", id, back)
		}
	}
	if tr.IDToPath(99) != nil || tr.IDToPath(-1) != nil {
		t.Error("unknown ids must give nil")
	}
	// Node ids via map_node.
	n := tr.Lookup([]int32{a, c})
	if tr.Node(n.ID) != n || tr.PathNode(p2) != n {
		t.Error("map_node / map_path disagree with Lookup")
	}

	// Two analyses of the same profile give the same ids (determinism), and
	// two runs sharing a FuncTable give the same function ids.
	ev := stacks([]uint64{1, 2, 3, 4, 5}, "main,x,y", "main,x", "main,z,y", "main,x,y", "main,w")
	p := build(ev)
	shared := NewFuncTable()
	r1 := Analyze(p, Options{Funcs: shared})
	r2 := Analyze(p, Options{Funcs: shared})
	if r1.Tree.Paths() != r2.Tree.Paths() || r1.Tree.Nodes() != r2.Tree.Nodes() {
		t.Fatal("runs differ in size")
	}
	for id := int32(0); id < int32(r1.Tree.Paths()); id++ {
		a, b := r1.Tree.IDToPath(id), r2.Tree.IDToPath(id)
		if fmtIDs(a) != fmtIDs(b) {
			t.Errorf("path %d: %v vs %v", id, a, b)
		}
	}
	if len(shared.Funcs) != 5 {
		t.Errorf("shared table has %d functions, want 5", len(shared.Funcs))
	}
}

func fmtIDs(ids []int32) string {
	var b strings.Builder
	for _, i := range ids {
		b.WriteString(" ")
		b.WriteString(string(rune('0' + i)))
	}
	return b.String()
}

func TestNormalizeNeverNegative(t *testing.T) {
	// A parent that calls the same child many times: the child's mean is
	// close to the parent's, but its total is many times larger. Subtracting
	// averages would go negative; totals do not.
	var ev []event
	tm := uint64(0)
	for i := 0; i < 20; i++ {
		tm += 10
		ev = append(ev, event{t: tm, stack: []string{"main", "loop", "child", "k:sys"}})
		tm += 10
		ev = append(ev, event{t: tm, stack: []string{"main", "loop", "child", "k:sys"}})
		tm += 1
		ev = append(ev, event{t: tm, stack: []string{"main", "loop"}})
	}
	for _, mode := range []Mode{Conservative, Aggressive} {
		r := Analyze(build(ev), Options{})
		for i := 0; i < r.Tree.Nodes(); i++ {
			v := r.Tree.Node(int32(i))
			var sum uint64
			for _, c := range v.Children {
				sum += c.Total[mode]
			}
			if sum > v.Total[mode] {
				t.Errorf("%s: children total %d exceeds node total %d", mode, sum, v.Total[mode])
			}
			if v.Own[mode] != v.Total[mode]-sum {
				t.Errorf("%s: own %d, want %d", mode, v.Own[mode], v.Total[mode]-sum)
			}
			if v.OwnMean(mode) < 0 {
				t.Errorf("negative own mean")
			}
		}
		loop := r.Tree.Lookup(ids(r.Tree, "main", "loop"))
		child := r.Tree.Lookup(ids(r.Tree, "main", "loop", "child"))
		if loop.Count != 1 || child.Count != 20 {
			t.Fatalf("counts loop %d child %d", loop.Count, child.Count)
		}
		// The average-based subtraction of the paper's pseudocode would be
		// negative here: the child's mean is a large part of the loop's.
		if mode == Aggressive && loop.Mean(mode)-child.Mean(mode)*float64(len(loop.Children)) < 0 {
			t.Log("averages would have been fine here")
		}
	}
}

func ids(tr *Tree, names ...string) []int32 {
	var out []int32
	for _, n := range names {
		found := int32(-1)
		for i, f := range tr.Funcs.Funcs {
			if f.Name == n {
				found = int32(i)
			}
		}
		out = append(out, found)
	}
	return out
}

func TestRank(t *testing.T) {
	// Base: main→work→hash at a steady rate. Buggy: the same, plus a new
	// context main→work→rebuild→hash that takes long; the path absent from
	// the base counts with base latency 0 and ranks first.
	var base, buggy []event
	tm := uint64(0)
	for i := 0; i < 10; i++ {
		tm += 100
		base = append(base, event{t: tm, stack: []string{"main", "work", "hash", "k:read"}})
		tm += 100
		base = append(base, event{t: tm, stack: []string{"main", "work"}})
	}
	tm = 0
	for i := 0; i < 10; i++ {
		tm += 100
		buggy = append(buggy, event{t: tm, stack: []string{"main", "work", "hash", "k:read"}})
		tm += 100
		buggy = append(buggy, event{t: tm, stack: []string{"main", "work", "rebuild", "hash", "k:read"}})
		tm += 5000
		buggy = append(buggy, event{t: tm, stack: []string{"main", "work", "rebuild", "hash", "k:read"}})
		tm += 100
		buggy = append(buggy, event{t: tm, stack: []string{"main", "work"}})
	}
	funcs := NewFuncTable()
	rb := Analyze(build(base), Options{Funcs: funcs})
	rg := Analyze(build(buggy), Options{Funcs: funcs})
	// By default a frame whose calling context the base has is compared
	// with it, wherever the base's path ends: main and work are in the
	// base (as callers of hash), rebuild and below are not.
	for _, p := range Rank(rb, rg, RankOptions{}) {
		if strings.Join(p.Names(), ",") != "main,work,rebuild,hash,read" {
			continue
		}
		if p.InBase || p.Frames[1].Base == 0 || p.Frames[2].Base != 0 || p.Frames[2].BaseCount != 0 {
			t.Errorf("context match: in base %v, work base %v, rebuild base %v", p.InBase, p.Frames[1].Base, p.Frames[2].Base)
		}
	}
	for _, mode := range []Mode{Conservative, Aggressive} {
		paths := Rank(rb, rg, RankOptions{Mode: mode, LeafMatch: true})
		if len(paths) != 2 {
			t.Fatalf("%d paths, want 2", len(paths))
		}
		top := paths[0]
		if strings.Join(top.Names(), ",") != "main,work,rebuild,hash,read" || top.InBase {
			t.Fatalf("%s: top path %v (in base %v)", mode, top.Names(), top.InBase)
		}
		// Absent from the base: cost is the plain sum of latencies.
		var sum float64
		for _, f := range top.Frames {
			if f.Base != 0 {
				t.Errorf("absent path has base latency %v at %s", f.Base, f.Func.Name)
			}
			sum += f.Latency
		}
		if top.Cost != sum {
			t.Errorf("cost %v, want %v", top.Cost, sum)
		}
		second := paths[1]
		if !second.InBase || second.Rank != 2 || top.Rank != 1 || top.Cost < second.Cost {
			t.Errorf("ordering: %+v / %+v", top.Rank, second.Rank)
		}
		// The second path exists in the base: its cost is its frames'
		// growth.
		var diff float64
		for _, f := range second.Frames {
			diff += max(0, f.Latency-f.Base)
		}
		if second.Cost != diff {
			t.Errorf("cost %v, want %v", second.Cost, diff)
		}
		// Per-frame ranks are a permutation ordered by latency, the hottest
		// has distance 0.
		seen := map[int]bool{}
		for i, f := range top.Frames {
			seen[f.Rank] = true
			if f.Distance != i-top.Hottest {
				t.Errorf("distance %d at %d, hottest %d", f.Distance, i, top.Hottest)
			}
			for _, g := range top.Frames {
				if g.Rank < f.Rank && g.Latency < f.Latency {
					t.Errorf("rank %d (%v) below rank %d (%v)", g.Rank, g.Latency, f.Rank, f.Latency)
				}
			}
		}
		for r := 1; r <= len(top.Frames); r++ {
			if !seen[r] {
				t.Errorf("rank %d missing", r)
			}
		}
		if top.Frames[top.Hottest].Rank != 1 {
			t.Error("hottest frame is not rank 1")
		}
		t.Logf("%s: #1 cost %.0f hottest %s candidate %s", mode, top.Cost, top.Frames[top.Hottest].Func.Name, top.Verdict())
	}
	// A nil base ranks the buggy run alone.
	if p := Rank(nil, rg, RankOptions{Top: 1}); len(p) != 1 || p[0].InBase {
		t.Errorf("nil base: %+v", p)
	}
}

func TestRankGrowthNotCancelled(t *testing.T) {
	// Base: loop spends the run in its own code, then tick runs briefly.
	// Buggy: as long, but loop now calls a new scan that takes most of
	// its time, and tick runs a little longer. The scan path's growth is
	// the run's change; loop's own time fell by as much, since the time
	// moved into its callee. Summed with that fall (Net, the paper's
	// cost) the scan path costs about nothing and the tick path ranks
	// first; by growth the scan path ranks first, its cost the sum of its
	// frames' increases.
	var base, buggy []event
	for tm := uint64(100); tm <= 1000; tm += 100 {
		base = append(base, event{t: tm, stack: []string{"main", "loop"}, kind: recording.EventCPU})
	}
	base = append(base, event{t: 1100, stack: []string{"main", "tick"}, kind: recording.EventCPU},
		event{t: 1200, stack: []string{"main", "tick"}, kind: recording.EventCPU})
	buggy = append(buggy, event{t: 100, stack: []string{"main", "loop"}, kind: recording.EventCPU})
	for tm := uint64(200); tm <= 900; tm += 100 {
		buggy = append(buggy, event{t: tm, stack: []string{"main", "loop", "scan"}, kind: recording.EventCPU})
	}
	for tm := uint64(1000); tm <= 1300; tm += 100 {
		buggy = append(buggy, event{t: tm, stack: []string{"main", "tick"}, kind: recording.EventCPU})
	}
	funcs := NewFuncTable()
	rb := Analyze(build(base), Options{Funcs: funcs})
	rg := Analyze(build(buggy), Options{Funcs: funcs})
	for _, net := range []bool{false, true} {
		paths := Rank(rb, rg, RankOptions{Mode: Aggressive, Scaled: true, Net: net})
		if len(paths) != 2 {
			t.Fatalf("net %v: %d paths, want 2", net, len(paths))
		}
		want := "main,loop,scan"
		if net {
			want = "main,tick"
		}
		if got := strings.Join(paths[0].Names(), ","); got != want {
			t.Errorf("net %v: first path %s (cost %.0f), want %s; second %v (cost %.0f)", net, got, paths[0].Cost, want, paths[1].Names(), paths[1].Cost)
		}
		for _, p := range paths {
			var sum float64
			for _, f := range p.Frames {
				if d := f.Delta(); d > 0 || net {
					sum += d
				}
			}
			if p.Cost != sum {
				t.Errorf("net %v: %v costs %v, want %v", net, p.Names(), p.Cost, sum)
			}
		}
	}
}

func TestRankNewPathWithSeparateTables(t *testing.T) {
	// Without a shared FuncTable paths are matched by function identity.
	ev := stacks([]uint64{1, 5, 9}, "main,f", "main,f", "main,g")
	rb := Analyze(build(ev), Options{})
	rg := Analyze(build(ev), Options{})
	for _, p := range Rank(rb, rg, RankOptions{}) {
		if !p.InBase || p.Cost != 0 {
			t.Errorf("identical runs: %v in base %v cost %v", p.Names(), p.InBase, p.Cost)
		}
	}
}

func TestOddProfiles(t *testing.T) {
	empty := &profile.Profile{}
	r := Analyze(empty, Options{KeepInstances: true})
	if len(r.Instances) != 0 || r.Tree.Nodes() != 0 || r.KernelEvents() != 0 {
		t.Fatal("empty profile gave data")
	}
	if p := Rank(r, r, RankOptions{}); len(p) != 0 {
		t.Fatal("paths from empty profile")
	}
	// Out-of-range stack indexes, empty stacks, one event, equal times.
	p := &profile.Profile{
		Frames:  []profile.Frame{{Function: "main", Object: "/bin/x"}, {Object: "/bin/x", Offset: 0x10}},
		Stacks:  [][]int32{{}, {1, 0}},
		Samples: []profile.Sample{{Time: 5, Stack: -1}, {Time: 5, Stack: 0}, {Time: 5, Stack: 1}, {Time: 5, Stack: 99}, {Time: 5, Stack: 1}},
	}
	r = Analyze(p, Options{KeepInstances: true})
	if r.Empty != 3 || len(r.Instances) != 2 {
		t.Fatalf("empty %d instances %d", r.Empty, len(r.Instances))
	}
	if r.Tree.Funcs.Get(r.Instances[0].Func).Name != "x+0x10" {
		t.Errorf("unnamed frame is %q", r.Tree.Funcs.Get(r.Instances[0].Func).Name)
	}
	if _, err := ParseMode("x"); err == nil {
		t.Error("ParseMode accepted x")
	}
	if _, err := ParseEvents("cpu,bogus"); err == nil {
		t.Error("ParseEvents accepted bogus")
	}
	if s, err := ParseEvents("syscalls,sched"); err != nil || s.Has(recording.EventCPU) || !s.Has(recording.EventSwitch) {
		t.Errorf("ParseEvents: %v %v", s, err)
	}
}

func TestPerThread(t *testing.T) {
	// Two threads interleaved: each keeps its own registers.
	ev := []event{
		{t: 10, tid: 1, stack: []string{"main", "a"}},
		{t: 11, tid: 2, stack: []string{"start", "b"}},
		{t: 20, tid: 1, stack: []string{"main", "a"}},
		{t: 21, tid: 2, stack: []string{"start", "c"}},
		{t: 30, tid: 1, stack: []string{"main"}},
	}
	r := Analyze(build(ev), Options{KeepInstances: true})
	SortInstances(r.Instances)
	byCtx := map[string]Instance{}
	for _, in := range r.Instances {
		var names []string
		for _, f := range r.Tree.NodePath(r.Tree.Node(in.Node)) {
			names = append(names, r.Tree.Funcs.Get(f).Name)
		}
		byCtx[strings.Join(names, ";")] = in
	}
	if in := byCtx["main;a"]; in.Conservative != 10 || in.Aggressive != 20 || in.TID != 1 {
		t.Errorf("main;a: %+v", in)
	}
	if in := byCtx["main"]; in.Conservative != 20 || in.Aggressive != 20 {
		t.Errorf("main: %+v", in)
	}
	if in := byCtx["start;b"]; in.Conservative != 0 || in.Aggressive != 10 {
		t.Errorf("start;b: %+v", in)
	}
	if in := byCtx["start"]; in.Conservative != 10 || in.TID != 2 {
		t.Errorf("start: %+v", in)
	}
}

// instances analyses ev and lists its instances as
// "function@start:conservative/aggressive", sorted.
func instances(ev []event) []string {
	r := Analyze(build(ev), Options{KeepInstances: true})
	var got []string
	for _, in := range r.Instances {
		fn := r.Tree.Funcs.Get(in.Func)
		got = append(got, fmt.Sprintf("%s@%d:%d/%d", fn.Name, in.Start, in.Conservative, in.Aggressive))
	}
	sort.Strings(got)
	return got
}

func TestSyscallExitEndsKernelFrames(t *testing.T) {
	// Two back-to-back write system calls: enter at 10, exit at 14, enter at
	// 20, exit at 23. The kernel frames must form two instances, not one.
	k := []string{"main", "lib:write", "k:entry", "k:do_syscall"}
	ev := []event{
		{t: 10, stack: k, kind: recording.EventSyscallEnter},
		{t: 14, stack: k, kind: recording.EventSyscallExit},
		{t: 20, stack: k, kind: recording.EventSyscallEnter},
		{t: 23, stack: k, kind: recording.EventSyscallExit},
	}
	got := instances(ev)
	want := []string{"do_syscall@10:4/10", "do_syscall@20:3/3", "entry@10:4/10", "entry@20:3/3", "main@10:13/13", "write@10:13/13"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("instances\n got %v\nwant %v", got, want)
	}
}

func TestPreemptionIsNotLatency(t *testing.T) {
	// work runs from 10; at 12 a timer interrupt preempts the thread, which
	// waits for a CPU until 1012 and then runs other. The same program
	// blocking in a read (prev_state S) keeps its wait.
	pre := []string{"main", "work", "k:asm_sysvec_apic_timer_interrupt", "k:irqentry_exit_to_user_mode", "k:schedule", "k:__schedule"}
	blk := []string{"main", "work", "lib:read", "k:entry", "k:schedule"}
	run := func(stack []string, state uint64) []string {
		ev := []event{
			{t: 10, stack: []string{"main", "work"}, kind: recording.EventCPU},
			{t: 12, stack: stack, kind: recording.EventSwitch, arg: state},
			{t: 1012, stack: []string{"main", "other"}, kind: recording.EventCPU},
			{t: 1014, stack: []string{"main", "other"}, kind: recording.EventCPU},
		}
		got := instances(ev)
		return got
	}
	if got, want := run(pre, 0), "main@10:4/4 other@1012:2/2 work@10:2/2"; strings.Join(got, " ") != want {
		t.Errorf("preempted (R): instances\n got %v\nwant %v", got, want)
	}
	// The kernel's preemption mark above the state bits is still runnable.
	if got, want := run(pre, 0x100), "main@10:4/4 other@1012:2/2 work@10:2/2"; strings.Join(got, " ") != want {
		t.Errorf("preempted (R+): instances\n got %v\nwant %v", got, want)
	}
	if got, want := run(blk, 1), "entry@12:0/1000 main@10:1004/1004 other@1012:2/2 read@12:0/1000 schedule@12:0/1000 work@10:2/1002"; strings.Join(got, " ") != want {
		t.Errorf("blocked (S): instances\n got %v\nwant %v", got, want)
	}
}

func TestPreemptionWithoutStack(t *testing.T) {
	// The recorder spent the thread's budget for walking chains: its
	// preemption at 12 is recorded with its state and no stack. The wait
	// until 1012 still leaves the thread's clock (else main, open across
	// it, would take 1,000 of own time that no path of the run has); a
	// blocked thread's switch without a stack keeps its wait.
	run := func(state uint64) string {
		ev := []event{
			{t: 10, stack: []string{"main", "work"}, kind: recording.EventCPU},
			{t: 12, kind: recording.EventSwitch, arg: state},
			{t: 1012, stack: []string{"main", "other"}, kind: recording.EventCPU},
			{t: 1014, stack: []string{"main", "other"}, kind: recording.EventCPU},
		}
		return strings.Join(instances(ev), " ")
	}
	if got, want := run(0), "main@10:4/4 other@1012:2/2 work@10:0/2"; got != want {
		t.Errorf("preempted (R), no stack: instances\n got %v\nwant %v", got, want)
	}
	if got, want := run(1), "main@10:1004/1004 other@1012:2/2 work@10:0/1002"; got != want {
		t.Errorf("blocked (S), no stack: instances\n got %v\nwant %v", got, want)
	}
}

func TestPreemptionWaitEndsAtSwitchIn(t *testing.T) {
	// Preempted at 12, back on a CPU at 1008 (a recorded switch-in), next
	// sampled at 1012 in another function: work ran 2 before the switch
	// and 4 after it, which its aggressive latency keeps.
	pre := []string{"main", "work", "k:asm_sysvec_apic_timer_interrupt", "k:irqentry_exit_to_user_mode", "k:schedule"}
	ev := []event{
		{t: 10, stack: []string{"main", "work"}, kind: recording.EventCPU},
		{t: 12, stack: pre, kind: recording.EventSwitch},
		{t: 1008, kind: recording.EventSwitchIn},
		{t: 1012, stack: []string{"main", "other"}, kind: recording.EventCPU},
		{t: 1014, stack: []string{"main", "other"}, kind: recording.EventCPU},
	}
	if got, want := instances(ev), "main@10:8/8 other@1012:2/2 work@10:2/6"; strings.Join(got, " ") != want {
		t.Errorf("instances\n got %v\nwant %v", got, want)
	}
}

func TestPreemptionPathInCPUSamples(t *testing.T) {
	// A CPU sample on the preemption path counts as its user frames; one
	// in a page fault keeps its kernel frames.
	ev := []event{
		{t: 10, stack: []string{"main", "work"}, kind: recording.EventCPU},
		{t: 11, stack: []string{"main", "work", "k:asm_sysvec_apic_timer_interrupt", "k:irqentry_exit_to_user_mode", "k:schedule"}, kind: recording.EventCPU},
		{t: 12, stack: []string{"main", "work", "k:asm_exc_page_fault", "k:exc_page_fault"}, kind: recording.EventCPU},
		{t: 13, stack: []string{"main", "work"}, kind: recording.EventCPU},
	}
	r := Analyze(build(ev), Options{KeepInstances: true})
	seen := map[string]bool{}
	for _, in := range r.Instances {
		seen[r.Tree.Funcs.Get(in.Func).Name] = true
	}
	if seen["asm_sysvec_apic_timer_interrupt"] || seen["schedule"] || seen["irqentry_exit_to_user_mode"] {
		t.Errorf("the preemption path became instances: %v", seen)
	}
	if !seen["exc_page_fault"] || !seen["asm_exc_page_fault"] {
		t.Errorf("the page fault lost its frames: %v", seen)
	}
}

func TestSyscallEnterStartsKernelFrames(t *testing.T) {
	// The exit of the first call was lost: the second entry still starts new
	// kernel instances.
	k := []string{"main", "k:entry"}
	ev := []event{
		{t: 10, stack: k, kind: recording.EventSyscallEnter},
		{t: 20, stack: k, kind: recording.EventSyscallEnter},
		{t: 23, stack: k, kind: recording.EventSyscallExit},
	}
	got := instances(ev)
	want := []string{"entry@10:0/10", "entry@20:3/3", "main@10:13/13"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("instances\n got %v\nwant %v", got, want)
	}
}

func TestLayers(t *testing.T) {
	// ld.so runs first (maps libx), then the program; plug.so is mapped
	// after the program started running.
	ev := []event{
		{t: 10, stack: []string{"ldso:_dl_start", "k:entry"}, kind: recording.EventSyscallEnter},
		{t: 20, stack: []string{"main", "lib:helper", "k:entry"}, kind: recording.EventSyscallEnter},
		{t: 40, stack: []string{"main", "plug:hook", "k:entry"}, kind: recording.EventSyscallEnter},
	}
	p := build(ev)
	for i, f := range p.Frames {
		if strings.HasPrefix(f.Function, "ldso:") {
			p.Frames[i] = profile.Frame{Function: f.Function[5:], Object: "/lib/ld-linux-x86-64.so.2"}
		}
	}
	p.Metas = []recording.Meta{{Command: []string{"./prog", "arg"}}}
	loads := []profile.ObjectLoad{
		{PID: 1, Path: "/bin/prog", Time: 1},
		{PID: 1, Path: "/lib/ld-linux-x86-64.so.2", Time: 1},
		{PID: 1, Path: "/lib/libx.so", Time: 15}, // after ld.so's first event, before the program ran
		{PID: 1, Path: "/opt/plug.so", Time: 30},
	}
	r := Analyze(p, Options{Loads: loads})
	if r.Objects.Main != "/bin/prog" || !r.Objects.LoadTimes {
		t.Fatalf("objects %+v", r.Objects)
	}
	want := map[string]Layer{"main": LayerMain, "helper": LayerLibrary, "hook": LayerPlugin, "entry": LayerKernel, "_dl_start": LayerLibrary}
	for _, fn := range r.Tree.Funcs.Funcs {
		if got := r.Objects.Layer(fn); got != want[fn.Name] {
			t.Errorf("%s (%s): layer %s, want %s", fn.Name, fn.Path, got, want[fn.Name])
		}
	}
	// Without mapping times nothing is a plug-in; without a command the
	// object of main is the main program.
	p.Metas = nil
	r = Analyze(p, Options{})
	if r.Objects.Main != "/bin/prog" || len(r.Objects.Plugins) != 0 || r.Objects.Note == "" {
		t.Errorf("no loads: %+v", r.Objects)
	}
	// The candidate of a path whose growth is in the kernel or libc is the
	// nearest caller outside them.
	base := Analyze(build([]event{{t: 1, stack: []string{"main", "plug:hook", "libc:write", "k:entry"}}}), Options{})
	var bug []event
	for i := uint64(0); i < 10; i++ {
		bug = append(bug, event{t: 10 * i, stack: []string{"main", "plug:hook", "libc:write", "k:entry"}, kind: recording.EventSyscallEnter})
	}
	pb := build(bug)
	for i, f := range pb.Frames {
		if strings.HasPrefix(f.Function, "libc:") {
			pb.Frames[i] = profile.Frame{Function: f.Function[5:], Object: "/lib/libc.so.6"}
		}
	}
	rb := Analyze(pb, Options{Loads: []profile.ObjectLoad{{PID: 1, Path: "/opt/plug.so", Time: 5}}})
	paths := Rank(base, rb, RankOptions{Mode: Aggressive})
	if len(paths) != 1 {
		t.Fatalf("%d paths", len(paths))
	}
	c := paths[0].CandidateFrame()
	if c.Func.Name != "hook" || c.Layer != LayerPlugin || paths[0].Frames[paths[0].Grew].Func.Name == "hook" {
		t.Errorf("candidate %s [%s], grew %s: %s", c.Func.Name, c.Layer, paths[0].Frames[paths[0].Grew].Func.Name, paths[0].Verdict())
	}
}

func TestIdleWait(t *testing.T) {
	for _, n := range []string{"__poll", "epoll_wait", "do_epoll_wait", "clock_nanosleep", "accept4", "do_sys_poll"} {
		if !IdleWait(n) {
			t.Errorf("%s is an idle wait", n)
		}
	}
	for _, n := range []string{"futex_wait", "__lll_lock_wait", "read", "pthread_cond_wait", "poll_ack", "schedule"} {
		if IdleWait(n) {
			t.Errorf("%s is not an idle wait", n)
		}
	}
}

func TestLossWindowCutsThread(t *testing.T) {
	// The thread's CPU dropped records between 25 and 90: work's instance
	// ends at its last event before the window and a new one starts after
	// it, instead of one instance across the window. A window of another
	// CPU leaves the thread alone; an event inside the window (from
	// another ring) is an instance of its own.
	ev := []event{
		{t: 10, stack: []string{"main", "work"}, kind: recording.EventCPU},
		{t: 20, stack: []string{"main", "work"}, kind: recording.EventCPU},
		{t: 100, stack: []string{"main", "work"}, kind: recording.EventCPU},
		{t: 110, stack: []string{"main", "work"}, kind: recording.EventCPU},
	}
	run := func(g profile.Gap) (string, *Result) {
		p := build(ev)
		p.Gaps = []profile.Gap{g}
		p.Lost = 7
		r := Analyze(p, Options{KeepInstances: true})
		var got []string
		for _, in := range r.Instances {
			got = append(got, fmt.Sprintf("%s@%d:%d/%d", r.Tree.Funcs.Get(in.Func).Name, in.Start, in.Conservative, in.Aggressive))
		}
		sort.Strings(got)
		return strings.Join(got, " "), r
	}
	got, r := run(profile.Gap{From: 25, To: 90, CPU: 0})
	if want := "main@100:10/10 main@10:10/10 work@100:10/10 work@10:10/10"; got != want || r.Cut != 1 || r.Lost != 7 {
		t.Errorf("loss on the thread's CPU: instances\n got %v (cut %d, lost %d)\nwant %v (cut 1, lost 7)", got, r.Cut, r.Lost, want)
	}
	// The window may start at the thread's last event and end at its next.
	if got, r := run(profile.Gap{From: 20, To: 100, CPU: recording.AnyCPU}); r.Cut != 1 {
		t.Errorf("loss on a ring of every CPU from 20 to 100: cut %d, want 1 (%s)", r.Cut, got)
	}
	if got, r := run(profile.Gap{From: 25, To: 90, CPU: 1}); got != "main@10:100/100 work@10:100/100" || r.Cut != 0 {
		t.Errorf("loss on another CPU: instances %v (cut %d), want one instance each", got, r.Cut)
	}
	if got, r := run(profile.Gap{From: 111, To: 200, CPU: 0}); r.Cut != 0 {
		t.Errorf("loss after the last event: cut %d (%s)", r.Cut, got)
	}
	ev = append(ev[:2:2], append([]event{{t: 50, stack: []string{"main", "work"}, kind: recording.EventCPU}}, ev[2:]...)...)
	got, r = run(profile.Gap{From: 25, To: 90, CPU: 0})
	if want := "main@100:10/10 main@10:10/10 main@50:0/0 work@100:10/10 work@10:10/10 work@50:0/0"; got != want || r.Cut != 2 {
		t.Errorf("an event inside the window: instances\n got %v (cut %d)\nwant %v (cut 2)", got, r.Cut, want)
	}
}

// Paths that differ only in their kernel frames are listed once by default,
// the costliest of them; AllLeaves lists each, as the paper does.
func TestRankOnePathPerUserContext(t *testing.T) {
	var base, buggy []event
	tm := uint64(0)
	for i := 0; i < 10; i++ {
		tm += 100
		base = append(base, event{t: tm, stack: []string{"main", "work", "k:read"}})
		tm += 100
		base = append(base, event{t: tm, stack: []string{"main", "other"}})
	}
	tm = 0
	for i := 0; i < 10; i++ {
		tm += 100
		buggy = append(buggy, event{t: tm, stack: []string{"main", "work", "k:read"}})
		tm += 3000
		buggy = append(buggy, event{t: tm, stack: []string{"main", "work", "k:irq"}})
		tm += 100
		buggy = append(buggy, event{t: tm, stack: []string{"main", "other"}})
	}
	funcs := NewFuncTable()
	rb := Analyze(build(base), Options{Funcs: funcs})
	rg := Analyze(build(buggy), Options{Funcs: funcs})
	count := func(paths []RankedPath) (n int, ranks []int) {
		for _, p := range paths {
			if p.Frames[1].Func.Name == "work" {
				n++
			}
			ranks = append(ranks, p.Rank)
		}
		return n, ranks
	}
	all := Rank(rb, rg, RankOptions{AllLeaves: true})
	if n, _ := count(all); n != 2 {
		t.Fatalf("AllLeaves: %d paths through work, want its 2 kernel variants", n)
	}
	one := Rank(rb, rg, RankOptions{})
	n, ranks := count(one)
	if n != 1 || len(one) != len(all)-1 {
		t.Fatalf("default: %d paths through work of %d, want 1 of %d", n, len(one), len(all)-1)
	}
	for i, r := range ranks {
		if r != i+1 {
			t.Errorf("ranks %v, want 1..%d", ranks, len(ranks))
		}
	}
	first := func(paths []RankedPath) string {
		for _, p := range paths {
			if p.Frames[1].Func.Name == "work" {
				return strings.Join(p.Names(), ",")
			}
		}
		return ""
	}
	if a, o := first(all), first(one); a != o {
		t.Errorf("kept %s, not the costliest variant %s", o, a)
	}
}

// The kernel variants of a user context in an idle wait all cost the same
// (the wait counts 0): the one listed is where the time went, the sleep,
// not the variant first by name (here an interrupt taken on the way in).
func TestRankIdleVariantByTime(t *testing.T) {
	var base, buggy []event
	tm := uint64(0)
	for i := 0; i < 10; i++ {
		tm += 100
		base = append(base, event{t: tm, stack: []string{"main", "other"}, kind: recording.EventCPU})
	}
	tm = 0
	for i := 0; i < 10; i++ {
		tm += 100
		buggy = append(buggy, event{t: tm, stack: []string{"main", "flush", "lib:nanosleep", "k:a_interrupt"}, kind: recording.EventCPU})
		tm += 10
		buggy = append(buggy, event{t: tm, stack: []string{"main", "flush", "lib:nanosleep", "k:do_nanosleep", "k:schedule"}, kind: recording.EventSwitch, arg: 1})
		tm += 3000
		buggy = append(buggy, event{t: tm, stack: []string{"main", "other"}, kind: recording.EventCPU})
	}
	funcs := NewFuncTable()
	rb := Analyze(build(base), Options{Funcs: funcs})
	rg := Analyze(build(buggy), Options{Funcs: funcs})
	var costs []float64
	for _, p := range Rank(rb, rg, RankOptions{AllLeaves: true}) {
		if p.Frames[1].Func.Name == "flush" {
			costs = append(costs, p.Cost)
		}
	}
	if len(costs) != 2 || costs[0] != costs[1] {
		t.Fatalf("the two variants through flush cost %v, want two equal costs", costs)
	}
	for _, p := range Rank(rb, rg, RankOptions{}) {
		if p.Frames[1].Func.Name == "flush" {
			if leaf := p.Frames[len(p.Frames)-1].Func.Name; leaf != "schedule" {
				t.Errorf("listed the variant ending in %s, want the sleep (do_nanosleep > schedule)", leaf)
			}
		}
	}
}

func TestInstanceSpanKeepsWaits(t *testing.T) {
	// Preempted at 12 until 1012: work's latency leaves the wait out, its
	// span on the sample clock keeps it, so that main's span still holds
	// work's and other's on a timeline.
	pre := []string{"main", "work", "k:asm_sysvec_apic_timer_interrupt", "k:irqentry_exit_to_user_mode", "k:schedule", "k:__schedule"}
	ev := []event{
		{t: 10, stack: []string{"main", "work"}, kind: recording.EventCPU},
		{t: 12, stack: pre, kind: recording.EventSwitch},
		{t: 1012, stack: []string{"main", "other"}, kind: recording.EventCPU},
		{t: 1014, stack: []string{"main", "other"}, kind: recording.EventCPU},
	}
	r := Analyze(build(ev), Options{KeepInstances: true})
	var got []string
	for _, in := range r.Instances {
		got = append(got, fmt.Sprintf("%s@%d:%d/%d seen %d end %d", r.Tree.Funcs.Get(in.Func).Name, in.Start,
			in.Conservative, in.Aggressive, in.Seen, in.End))
	}
	sort.Strings(got)
	want := "main@10:4/4 seen 1014 end 1014|other@1012:2/2 seen 1014 end 1014|work@10:2/2 seen 12 end 1012"
	if strings.Join(got, "|") != want {
		t.Errorf("instances\n got %s\nwant %s", strings.Join(got, "|"), want)
	}
}

// An event in the recorder's own code (perf's tracepoint handling, a BPF
// program on a tracepoint and the code that runs it) is skipped: it makes
// no context of its own, neither of that code nor of the kernel function
// it ran under (syscall_exit_work, where the system call program runs at a
// call's exit), which no other event shows and which a comparison with
// another run would rank with its callers' whole latency, in place of the
// paths with the same user frames.
func TestProbeEffectCut(t *testing.T) {
	p := build([]event{
		{t: 10, stack: []string{"main", "lib:write", "k:entry"}, kind: recording.EventSyscallEnter},
		{t: 11, stack: []string{"main", "lib:write", "k:bpf_prog_c11086e3eaa9a27f_culprit_1"}},
		{t: 12, stack: []string{"main", "lib:write", "k:entry", "k:__traceiter_sys_exit", "k:bpf_trace_run2"}},
		{t: 13, stack: []string{"main", "lib:write", "k:entry", "k:perf_swevent_event"}},
		{t: 14, stack: []string{"main", "lib:write", "k:entry", "k:syscall_exit_work", "k:__bpf_trace_sys_exit", "k:bpf_prog_c11086e3eaa9a27f_culprit_1"}},
		{t: 15, stack: []string{"main", "lib:write", "k:entry"}, kind: recording.EventSyscallExit},
	})
	r := Analyze(p, Options{})
	for _, fn := range r.Tree.Funcs.Funcs {
		switch fn.Name {
		case "bpf_prog_c11086e3eaa9a27f_culprit_1", "__traceiter_sys_exit", "bpf_trace_run2", "perf_swevent_event", "syscall_exit_work":
			t.Errorf("a context of the recorder's own %s", fn.Name)
		}
	}
	if r.Probe != 4 || r.Used != 2 {
		t.Errorf("%d events in the recorder's code skipped, %d used; want 4 and 2", r.Probe, r.Used)
	}
	if !tracerFrame("bpf_prog_c11086e3eaa9a27f_culprit_1") || tracerFrame("bpf_probe_read_kernel") || tracerFrame("sys_bpf") {
		t.Error("tracerFrame tells the recorder's code wrongly")
	}
}

// parkedRun is a synthetic timeline of three threads over n rounds: main
// handling requests (work ticks of 100 ns), a worker that waits for a lock
// (lockWait ns) before each piece of its work, and a maintenance thread
// that blocks in a condition wait, is woken every fifth round only to
// signal another condition and wait again, and at the end of the run to
// exit.
func parkedRun(n int, work, lockWait uint64) []event {
	var ev []event
	park := []string{"libc:start_thread", "maint", "libc:cond_wait", "k:do_futex", "k:schedule"}
	ev = append(ev, event{t: 1, tid: 3, stack: park, kind: recording.EventSwitch, arg: 1})
	tm := uint64(10)
	for i := 0; i < n; i++ {
		for w := uint64(0); w < work; w++ {
			tm += 100
			ev = append(ev, event{t: tm, tid: 1, stack: []string{"main", "handle"}, kind: recording.EventCPU})
		}
		ev = append(ev, event{t: tm + 1, tid: 2, stack: []string{"libc:start_thread", "worker", "libc:lock_wait", "k:do_futex", "k:schedule"}, kind: recording.EventSwitch, arg: 1})
		ev = append(ev, event{t: tm + 1 + lockWait, tid: 2, stack: []string{"libc:start_thread", "worker", "libc:lock_wait", "k:do_futex"}, kind: recording.EventSyscallExit})
		ev = append(ev, event{t: tm + 2 + lockWait, tid: 2, stack: []string{"libc:start_thread", "worker", "compute"}, kind: recording.EventCPU})
		tm += 2 + lockWait
		if i%5 == 4 {
			ev = append(ev, event{t: tm + 3, tid: 3, stack: park[:4], kind: recording.EventSyscallExit})
			ev = append(ev, event{t: tm + 4, tid: 3, stack: []string{"libc:start_thread", "maint", "libc:cond_signal", "k:do_futex"}, kind: recording.EventSyscallEnter})
			ev = append(ev, event{t: tm + 5, tid: 3, stack: []string{"libc:start_thread", "maint", "libc:cond_signal", "k:do_futex"}, kind: recording.EventSyscallExit})
			ev = append(ev, event{t: tm + 6, tid: 3, stack: park, kind: recording.EventSwitch, arg: 1})
			tm += 6
		}
	}
	ev = append(ev, event{t: tm + 10, tid: 3, stack: park[:4], kind: recording.EventSyscallExit})
	sort.SliceStable(ev, func(a, b int) bool { return ev[a].t < ev[b].t })
	return ev
}

// A thread that does nothing but wait (below its start routine only C
// runtime calls: a condition wait that blocked in the kernel and the
// signal it sends when woken) waits longer in a longer run, but no work
// followed its wait: it is not growth. A lock wait followed by the
// worker's work is.
func TestRankParkedThreadIsNotGrowth(t *testing.T) {
	funcs := NewFuncTable()
	rb := Analyze(build(parkedRun(20, 1, 50)), Options{Funcs: funcs})
	rg := Analyze(build(parkedRun(20, 3, 400)), Options{Funcs: funcs})
	parked := ParkedWaits(rg.Tree, &rg.Objects)
	var names []string
	for v := range parked {
		names = append(names, strings.Join(funcNames(rg.Tree, v), ","))
	}
	if len(names) != 1 || names[0] != "start_thread,maint,cond_wait" {
		t.Fatalf("parked waits %v, want the maintenance thread's cond_wait only", names)
	}
	through := func(paths []RankedPath, fn string) *RankedPath {
		for i, p := range paths {
			for _, f := range p.Frames {
				if f.Func.Name == fn {
					return &paths[i]
				}
			}
		}
		return nil
	}
	paper := Rank(rb, rg, RankOptions{Totals: true, Idle: true})
	if p := through(paper, "maint"); p == nil || p.Rank != 1 {
		t.Fatalf("with --idle the parked wait should rank 1st (it grew most): %v", paper)
	}
	def := Rank(rb, rg, RankOptions{Totals: true})
	if p := through(def, "maint"); p == nil || p.Cost != 0 {
		t.Errorf("parked wait's path: %+v, want cost 0", p)
	}
	w := through(def, "lock_wait")
	if w == nil || w.Cost <= 0 || w.Rank != 1 {
		t.Errorf("the worker's lock wait, which delays its work, should rank 1st with a positive cost: %+v", w)
	}
}

func funcNames(t *Tree, v *Node) []string {
	var out []string
	for _, f := range t.NodePath(v) {
		out = append(out, t.Funcs.Get(f).Name)
	}
	return out
}
