package profile

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/culprit-dev/culprit/internal/recording"
)

// Frame indexes of the hand-built profile.
const (
	fMain     = iota // main, /usr/bin/app
	fDispatch        // dispatch_2, /usr/bin/app
	fWorker          // worker, /usr/bin/app
	fHelper          // helper, inlined into worker
	fMemcpy          // memcpy, libc, no line
	fAnon            // no function name, libc
	fSyscall         // kernel entry_SYSCALL_64
	fWrite           // kernel ksys_write
	fRecurse         // recurse, /usr/bin/app
)

func testFrames() []Frame {
	return []Frame{
		fMain:     {Function: "main", File: "/src/app/main.c", Line: 10, Object: "/usr/bin/app", Offset: 0x1100},
		fDispatch: {Function: "dispatch_2", File: "/src/app/main.c", Line: 20, Object: "/usr/bin/app", Offset: 0x1200},
		fWorker:   {Function: "worker", File: "/src/app/work.c", Line: 30, Object: "/usr/bin/app", Offset: 0x1300},
		fHelper:   {Function: "helper", File: "/src/app/work.h", Line: 5, Object: "/usr/bin/app", Offset: 0x1300, Inlined: true},
		fMemcpy:   {Function: "memcpy", Object: "/usr/lib/libc.so.6", Offset: 0x9a000},
		fAnon:     {Object: "/usr/lib/libc.so.6", Offset: 0x1234},
		fSyscall:  {Function: "entry_SYSCALL_64", Object: "[kernel.kallsyms]", Offset: 0xffffffff81000000, Kernel: true},
		fWrite:    {Function: "ksys_write", Object: "[kernel.kallsyms]", Offset: 0xffffffff81200000, Kernel: true},
		fRecurse:  {Function: "recurse", File: "/src/app/rec.c", Line: 7, Object: "/usr/bin/app", Offset: 0x1400},
	}
}

// testProfile has 10 samples at 1ms intervals:
//
//	t=0..3  (4) worker <- dispatch_2 <- main
//	t=4     (1) helper(inlined) <- worker <- dispatch_2 <- main
//	t=5     (1) memcpy <- worker <- dispatch_2 <- main
//	t=6     (1) ksys_write <- entry_SYSCALL_64 <- main  (in the kernel)
//	t=7     (1) entry_SYSCALL_64 only (kernel thread)
//	t=8     (1) recurse <- recurse <- recurse <- main
//	t=9     (1) libc.so.6+0x1234 <- main
func testProfile() *Profile {
	stacks := [][]int32{
		{fWorker, fDispatch, fMain},
		{fHelper, fWorker, fDispatch, fMain},
		{fMemcpy, fWorker, fDispatch, fMain},
		{fWrite, fSyscall, fMain},
		{fSyscall},
		{fRecurse, fRecurse, fRecurse, fMain},
		{fAnon, fMain},
	}
	seq := []int32{0, 0, 0, 0, 1, 2, 3, 4, 5, 6}
	const start = 1_000_000_000
	p := &Profile{
		Frames:    testFrames(),
		Stacks:    stacks,
		Threads:   map[uint32]Thread{100: {PID: 100, TID: 100, Comm: "app"}, 101: {PID: 100, TID: 101, Comm: "app-w"}},
		Lost:      3,
		Throttled: 1,
		StartTime: start,
	}
	for i, st := range seq {
		tid := uint32(100)
		if i%2 == 1 {
			tid = 101
		}
		p.Samples = append(p.Samples, Sample{Time: start + uint64(i)*1e6, PID: 100, TID: tid, Period: 1e6, Stack: st})
	}
	return p
}

func TestName(t *testing.T) {
	fr := testFrames()
	if got := fr[fAnon].Name(); got != "libc.so.6+0x1234" {
		t.Errorf("anon Name = %q", got)
	}
	if got := (Frame{Offset: 0x10}).Name(); got != "[unknown]+0x10" {
		t.Errorf("empty Name = %q", got)
	}
	if got := (Frame{Kernel: true, Offset: 0xff}).Name(); got != "[kernel.kallsyms]+0xff" {
		t.Errorf("kernel Name = %q", got)
	}
	if got := fr[fWorker].Name(); got != "worker" {
		t.Errorf("worker Name = %q", got)
	}
}

func TestLabel(t *testing.T) {
	fr := testFrames()
	cases := []struct {
		f    Frame
		g    Grouping
		want string
	}{
		{fr[fWorker], ByFunction, "worker"},
		{fr[fWorker], ByLine, "/src/app/work.c:30 (worker)"},
		{fr[fWorker], ByObject, "app"},
		{fr[fMemcpy], ByLine, "memcpy"},
		{fr[fMemcpy], ByObject, "libc.so.6"},
		{fr[fAnon], ByLine, "libc.so.6+0x1234"},
		{fr[fSyscall], ByObject, "[kernel.kallsyms]"},
		{fr[fSyscall], ByLine, "entry_SYSCALL_64"},
		{Frame{Function: "f", File: "rel/x.c", Line: 3}, ByLine, "rel/x.c:3 (f)"},
		{Frame{Kernel: true}, ByObject, "[kernel.kallsyms]"},
		{Frame{}, ByObject, "[unknown]"},
	}
	for _, c := range cases {
		if got := c.f.Label(c.g); got != c.want {
			t.Errorf("%+v.Label(%v) = %q, want %q", c.f, c.g, got, c.want)
		}
	}
}

func TestParse(t *testing.T) {
	for s, want := range map[string]Grouping{"function": ByFunction, "line": ByLine, "object": ByObject, "Func": ByFunction,
		"process": ByProcess, "pid": ByProcess, "thread": ByThread, "tid": ByThread} {
		g, err := ParseGrouping(s)
		if err != nil || g != want {
			t.Errorf("ParseGrouping(%q) = %v, %v", s, g, err)
		}
		if g2, _ := ParseGrouping(g.String()); g2 != g {
			t.Errorf("round trip %v", g)
		}
	}
	if _, err := ParseGrouping("bogus"); err == nil {
		t.Error("ParseGrouping(bogus) succeeded")
	}
	for s, want := range map[string]KernelMode{"include": KernelInclude, "exclude": KernelExclude, "only": KernelOnly} {
		k, err := ParseKernelMode(s)
		if err != nil || k != want || k.String() != s {
			t.Errorf("ParseKernelMode(%q) = %v, %v", s, k, err)
		}
	}
	if _, err := ParseKernelMode("bogus"); err == nil {
		t.Error("ParseKernelMode(bogus) succeeded")
	}
}

func rowMap(f Flat) map[string]FlatRow {
	m := map[string]FlatRow{}
	for _, r := range f.Rows {
		m[r.Name] = r
	}
	return m
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

func TestFlat(t *testing.T) {
	p := testProfile()
	f := p.Flat(ByFunction)
	if f.Samples != 10 || f.Lost != 3 || f.Throttled != 1 || f.Grouping != ByFunction {
		t.Fatalf("header = %+v", f)
	}
	want := map[string][2]int{ // self, total
		"worker":           {4, 6},
		"main":             {0, 9},
		"dispatch_2":       {0, 6},
		"helper":           {1, 1},
		"memcpy":           {1, 1},
		"ksys_write":       {1, 1},
		"entry_SYSCALL_64": {1, 2},
		"recurse":          {1, 1}, // recursion counted once
		"libc.so.6+0x1234": {1, 1},
	}
	got := rowMap(f)
	if len(got) != len(want) {
		t.Errorf("rows = %+v", f.Rows)
	}
	for name, w := range want {
		r, ok := got[name]
		if !ok {
			t.Errorf("no row %q", name)
			continue
		}
		if r.Self != w[0] || r.Total != w[1] {
			t.Errorf("%s: self %d total %d, want %v", name, r.Self, r.Total, w)
		}
		if !near(r.SelfFrac, float64(w[0])/10) || !near(r.TotalFrac, float64(w[1])/10) {
			t.Errorf("%s: fractions %v %v", name, r.SelfFrac, r.TotalFrac)
		}
	}
	// worker: p = 0.4, N = 10: 2*sqrt(0.4*0.6/10)
	if w := got["worker"]; !near(w.SelfErr, 2*math.Sqrt(0.024)) || !near(w.TotalErr, 2*math.Sqrt(0.6*0.4/10)) {
		t.Errorf("worker errors %v %v", w.SelfErr, w.TotalErr)
	}
	if got["main"].SelfErr != 0 {
		t.Errorf("zero count must have zero error")
	}
	if got["worker"].Object != "app" || got["memcpy"].Object != "libc.so.6" {
		t.Errorf("objects: %+v %+v", got["worker"], got["memcpy"])
	}
	// Order: self desc, total desc, name.
	names := []string{}
	for _, r := range f.Rows {
		names = append(names, r.Name)
	}
	wantOrder := []string{"worker", "entry_SYSCALL_64", "helper", "ksys_write", "libc.so.6+0x1234", "memcpy", "recurse", "main", "dispatch_2"}
	if !reflect.DeepEqual(names, wantOrder) {
		t.Errorf("order = %q, want %q", names, wantOrder)
	}
}

func TestFlatByObject(t *testing.T) {
	f := testProfile().Flat(ByObject)
	got := rowMap(f)
	// app: self = 4 worker + 1 helper + 1 recurse = 6; total = every sample but the kernel thread = 9.
	if r := got["app"]; r.Self != 6 || r.Total != 9 {
		t.Errorf("app = %+v", r)
	}
	if r := got["libc.so.6"]; r.Self != 2 || r.Total != 2 {
		t.Errorf("libc = %+v", r)
	}
	if r := got["[kernel.kallsyms]"]; r.Self != 2 || r.Total != 2 {
		t.Errorf("kernel = %+v", r)
	}
}

func TestFlatByLine(t *testing.T) {
	got := rowMap(testProfile().Flat(ByLine))
	if r := got["/src/app/work.c:30 (worker)"]; r.Self != 4 || r.Total != 6 {
		t.Errorf("worker line = %+v", r)
	}
	if r := got["/src/app/work.h:5 (helper)"]; r.Self != 1 {
		t.Errorf("helper line = %+v", r)
	}
}

func TestFlatSameNameDifferentObjects(t *testing.T) {
	p := &Profile{
		Frames: []Frame{{Function: "main", Object: "/bin/a"}, {Function: "main", Object: "/bin/b"}},
		Stacks: [][]int32{{0}, {1}},
		Samples: []Sample{
			{Stack: 0}, {Stack: 0}, {Stack: 1},
		},
	}
	f := p.Flat(ByFunction)
	if len(f.Rows) != 2 || f.Rows[0].Object != "a" || f.Rows[0].Self != 2 || f.Rows[1].Object != "b" {
		t.Errorf("rows = %+v", f.Rows)
	}
}

func TestCallers(t *testing.T) {
	p := testProfile()
	rows := p.Callers(ByFunction, 3)
	want := []CallerRow{
		{Path: []string{"worker", "dispatch_2", "main"}, Samples: 4},
		{Path: []string{"entry_SYSCALL_64"}, Samples: 1},
		{Path: []string{"helper", "worker", "dispatch_2"}, Samples: 1},
		{Path: []string{"ksys_write", "entry_SYSCALL_64", "main"}, Samples: 1},
		{Path: []string{"libc.so.6+0x1234", "main"}, Samples: 1},
		{Path: []string{"memcpy", "worker", "dispatch_2"}, Samples: 1},
		{Path: []string{"recurse", "recurse", "recurse"}, Samples: 1},
	}
	if len(rows) != len(want) {
		t.Fatalf("rows = %+v", rows)
	}
	for i := range want {
		if !reflect.DeepEqual(rows[i].Path, want[i].Path) || rows[i].Samples != want[i].Samples {
			t.Errorf("row %d = %+v, want %+v", i, rows[i], want[i])
		}
		if !near(rows[i].Frac, float64(want[i].Samples)/10) || !near(rows[i].Err, Err(want[i].Samples, 10)) {
			t.Errorf("row %d frac/err = %v/%v", i, rows[i].Frac, rows[i].Err)
		}
	}
	// n = 1 is the self profile.
	one := p.Callers(ByFunction, 1)
	if one[0].Samples != 4 || one[0].Path[0] != "worker" || len(one) != 7 {
		t.Errorf("n=1: %+v", one)
	}
	// n <= 0: whole stacks.
	all := p.Callers(ByFunction, 0)
	if !reflect.DeepEqual(all[0].Path, []string{"worker", "dispatch_2", "main"}) || len(all) != 7 {
		t.Errorf("n=0: %+v", all)
	}
	for _, r := range all {
		if r.Path[0] == "recurse" && len(r.Path) != 4 {
			t.Errorf("recursion collapsed: %q", r.Path)
		}
	}
}

func TestApplyTime(t *testing.T) {
	p := testProfile()
	q := p.Apply(Filter{From: 2 * time.Millisecond, HasFrom: true, To: 5 * time.Millisecond, HasTo: true})
	if len(q.Samples) != 3 {
		t.Fatalf("samples = %d, want 3 (t=2,3,4ms)", len(q.Samples))
	}
	if &q.Frames[0] != &p.Frames[0] {
		t.Error("frames not shared")
	}
	if q.StartTime != p.StartTime || q.Lost != p.Lost {
		t.Error("header not carried over")
	}
	if got := p.Apply(Filter{From: 9 * time.Millisecond, HasFrom: true}); len(got.Samples) != 1 {
		t.Errorf("from 9ms: %d samples", len(got.Samples))
	}
	if got := p.Apply(Filter{To: 1, HasTo: true}); len(got.Samples) != 1 {
		t.Errorf("to 1ns: %d samples", len(got.Samples))
	}
	if got := p.Apply(Filter{}); len(got.Samples) != 10 {
		t.Errorf("no filter: %d samples", len(got.Samples))
	}
	if len(p.Samples) != 10 {
		t.Error("Apply changed its receiver")
	}
}

func TestApplyKernelExclude(t *testing.T) {
	p := testProfile()
	q := p.Apply(Filter{Kernel: KernelExclude})
	if len(q.Samples) != 10 {
		t.Fatalf("samples = %d, want all 10", len(q.Samples))
	}
	got := rowMap(q.Flat(ByFunction))
	// The sample in ksys_write is charged to main; the kernel thread is [unknown].
	if got["main"].Self != 1 || got["main"].Total != 9 {
		t.Errorf("main = %+v", got["main"])
	}
	if got[Unknown].Self != 1 {
		t.Errorf("[unknown] = %+v", got[Unknown])
	}
	if _, ok := got["ksys_write"]; ok {
		t.Error("kernel frame left")
	}
	for _, st := range q.Stacks {
		for _, fi := range st {
			if q.Frames[fi].Kernel {
				t.Errorf("kernel frame %d in stack %v", fi, st)
			}
		}
	}
	if len(p.Stacks[3]) != 3 {
		t.Error("Apply changed the receiver's stacks")
	}
}

func TestApplyKernelOnly(t *testing.T) {
	p := testProfile()
	q := p.Apply(Filter{Kernel: KernelOnly})
	if len(q.Samples) != 2 {
		t.Fatalf("samples = %d, want 2", len(q.Samples))
	}
	f := q.Flat(ByFunction)
	got := rowMap(f)
	if got["entry_SYSCALL_64"].Total != 2 || got["ksys_write"].Self != 1 || len(got) != 2 {
		t.Errorf("rows = %+v", f.Rows)
	}
	if !near(got["entry_SYSCALL_64"].TotalFrac, 1) {
		t.Errorf("fractions are not of the filtered profile: %+v", got["entry_SYSCALL_64"])
	}
	// Combined with a window.
	w := p.Apply(Filter{Kernel: KernelOnly, From: 7 * time.Millisecond, HasFrom: true})
	if len(w.Samples) != 1 || w.Flat(ByFunction).Rows[0].Name != "entry_SYSCALL_64" {
		t.Errorf("window+only: %+v", w.Samples)
	}
}

func TestEmptyAndBroken(t *testing.T) {
	var p Profile
	f := p.Flat(ByFunction)
	if f.Samples != 0 || len(f.Rows) != 0 {
		t.Errorf("empty flat = %+v", f)
	}
	if rows := p.Callers(ByFunction, 3); len(rows) != 0 {
		t.Errorf("empty callers = %+v", rows)
	}
	if q := p.Apply(Filter{Kernel: KernelExclude, HasTo: true}); len(q.Samples) != 0 {
		t.Error("empty apply")
	}
	// Stack and frame indexes out of range degrade to [unknown].
	b := &Profile{Frames: []Frame{{Function: "f"}}, Stacks: [][]int32{{0, 7}}, Samples: []Sample{{Stack: 0}, {Stack: 5}, {Stack: -1}}}
	got := rowMap(b.Flat(ByFunction))
	if got["f"].Self != 1 || got[Unknown].Self != 2 || got[Unknown].Total != 3 {
		t.Errorf("broken = %+v", got)
	}
	_ = b.Callers(ByLine, 2)
	_ = b.Apply(Filter{Kernel: KernelExclude}).Flat(ByObject)
	_ = b.Apply(Filter{Kernel: KernelOnly}).Flat(ByObject)
}

func TestSignificant(t *testing.T) {
	cases := []struct {
		n1, n2 int
		want   bool
	}{
		{100, 80, false}, // 20 < 2*sqrt(180) = 26.8
		{100, 70, true},  // 30 > 2*sqrt(170) = 26.1
		{10, 0, true},    // 10 > 6.3
		{4, 0, false},    // 4 = 2*sqrt(4): not strictly greater
		{5, 0, true},
		{0, 0, false},
		{70, 100, false},
	}
	for _, c := range cases {
		if got := Significant(c.n1, c.n2); got != c.want {
			t.Errorf("Significant(%d, %d) = %v, want %v", c.n1, c.n2, got, c.want)
		}
	}
}

func TestErr(t *testing.T) {
	// PCT: 2*sqrt(N p (1-p)) samples; N=1000, n=250: 2*sqrt(187.5) = 27.39 samples = 2.739%.
	if e := Err(250, 1000); math.Abs(e*1000-2*math.Sqrt(187.5)) > 1e-9 {
		t.Errorf("Err = %v", e)
	}
	if Err(0, 0) != 0 || Err(5, 5) != 0 || Err(0, 5) != 0 {
		t.Error("degenerate errors")
	}
}

// The hand-built profile's samples alternate between threads 100 ("app") and
// 101 ("app-w") of process 100; a second process is added here.
func TestFlatByTask(t *testing.T) {
	p := testProfile()
	p.Threads[200] = Thread{PID: 200, TID: 200, Comm: "child"}
	p.Samples = append(p.Samples, Sample{Time: p.StartTime + 10e6, PID: 200, TID: 200, Stack: 0})
	procs := p.Flat(ByProcess)
	want := []FlatRow{
		{Name: "app[100]", Self: 10, Total: 10},
		{Name: "child[200]", Self: 1, Total: 1},
	}
	if len(procs.Rows) != len(want) || procs.Samples != 11 || procs.Grouping != ByProcess {
		t.Fatalf("by process: %+v", procs)
	}
	for i, w := range want {
		r := procs.Rows[i]
		if r.Name != w.Name || r.Self != w.Self || r.Total != w.Total || r.SelfFrac != float64(w.Self)/11 || r.SelfErr != Err(w.Self, 11) {
			t.Errorf("row %d = %+v, want %+v", i, r, w)
		}
	}
	threads := p.Flat(ByThread)
	var names []string
	for _, r := range threads.Rows {
		names = append(names, fmt.Sprintf("%s=%d", r.Name, r.Self))
	}
	if got := strings.Join(names, " "); got != "app-w[101]=5 app[100]=5 child[200]=1" {
		t.Errorf("by thread: %s", got)
	}
	if ByProcess.PerFrame() || ByThread.PerFrame() || !ByObject.PerFrame() {
		t.Error("PerFrame")
	}
}

func TestApplyTasks(t *testing.T) {
	p := testProfile()
	p.Threads[200] = Thread{PID: 200, TID: 200, Comm: "child"}
	p.Samples = append(p.Samples, Sample{Time: p.StartTime + 10e6, PID: 200, TID: 200, Stack: 0})
	p.Values = []Value{{Time: p.StartTime, PID: 100, TID: 101}, {Time: p.StartTime, PID: 200, TID: 200}}
	count := func(f Filter) (int, int) {
		q := p.Apply(f)
		return len(q.Samples), len(q.Values)
	}
	for _, c := range []struct {
		name           string
		f              Filter
		samples, value int
	}{
		{"none", Filter{}, 11, 2},
		{"pid 100", Filter{PIDs: []uint32{100}}, 10, 1},
		{"pid 100,200", Filter{PIDs: []uint32{100, 200}}, 11, 2},
		{"tid 101", Filter{TIDs: []uint32{101}}, 5, 1},
		{"pid 200 tid 101", Filter{PIDs: []uint32{200}, TIDs: []uint32{101}}, 0, 0},
		{"comm app-w", Filter{Comms: []string{"app-w"}}, 5, 1},
		// A process's name selects all its threads.
		{"comm app", Filter{Comms: []string{"app"}}, 10, 1},
		{"comm child", Filter{Comms: []string{"child"}}, 1, 1},
		{"comm nobody", Filter{Comms: []string{"nobody"}}, 0, 0},
		{"comm and window", Filter{Comms: []string{"app"}, HasTo: true, To: 2 * time.Millisecond}, 2, 1},
	} {
		if s, v := count(c.f); s != c.samples || v != c.value {
			t.Errorf("%s: %d samples, %d values; want %d, %d", c.name, s, v, c.samples, c.value)
		}
	}
}

// A process that forks a child which execs: the child is named as its parent
// until its exec, whatever the order the records came in.
func TestNamesOverTime(t *testing.T) {
	p := &Profile{Threads: map[uint32]Thread{}}
	var n Naming
	// The exec comm came before the fork record (another CPU's ring).
	n.Comm(50, 2, 2, "tool")
	n.Comm(1, 1, 1, "sh")
	n.Comm(70, 2, 2, "tool")
	n.Fork(recording.Task{Time: 20, PID: 2, PPID: 1, TID: 2, PTID: 1})
	n.Fork(recording.Task{Time: 30, PID: 2, PPID: 2, TID: 3, PTID: 2})
	n.Resolve(p)
	for _, c := range []struct {
		tid  uint32
		t    uint64
		want string
	}{{1, 0, "sh"}, {1, 100, "sh"}, {2, 10, "sh"}, {2, 49, "sh"}, {2, 50, "tool"}, {2, 100, "tool"},
		{3, 40, "sh"}, {3, 60, "sh"}, {9, 5, "tid 9"}} {
		if got := p.ThreadNameAt(c.tid, c.t); got != c.want {
			t.Errorf("ThreadNameAt(%d, %d) = %q, want %q", c.tid, c.t, got, c.want)
		}
	}
	// Thread 3 forked before the exec keeps its name; exec would have ended it.
	if got := p.ProcessNameAt(2, 3, 60); got != "tool" {
		t.Errorf("ProcessNameAt(2, 3, 60) = %q", got)
	}
	if p.Threads[2].Comm != "tool" || p.Threads[1].Comm != "sh" || len(p.names[2]) != 2 || p.renamed(1) ||
		!p.RenamedBetween(2, 49, 50) || p.RenamedBetween(2, 50, 100) || p.RenamedBetween(1, 0, 100) {
		t.Errorf("threads %+v names %+v", p.Threads, p.names)
	}
	p.Samples = []Sample{{Time: 10, PID: 1, TID: 1}, {Time: 40, PID: 2, TID: 2}, {Time: 60, PID: 2, TID: 2}, {Time: 61, PID: 2, TID: 2}}
	var rows []string
	for _, r := range p.Flat(ByProcess).Rows {
		rows = append(rows, fmt.Sprintf("%s=%d", r.Name, r.Self))
	}
	if got := strings.Join(rows, " "); got != "tool[2]=2 sh[1]=1 sh[2]=1" {
		t.Errorf("by process: %s", got)
	}
	if q := p.Apply(Filter{Comms: []string{"sh"}}); len(q.Samples) != 2 || q.ProcessNameAt(2, 2, 40) != "sh" {
		t.Errorf("--comm sh kept %+v", q.Samples)
	}
	if q := p.Apply(Filter{Comms: []string{"tool"}}); len(q.Samples) != 2 {
		t.Errorf("--comm tool kept %+v", q.Samples)
	}
}

// A time window of samples in time order is found by bisection; it
// selects what a pass over every sample selects (bounds on equal
// times, before the start, past the end), and samples out of order are
// selected by that pass.
func TestApplyWindow(t *testing.T) {
	const start = 1000
	times := []uint64{990, 1000, 1000, 1003, 1003, 1003, 1007, 1010, 1010, 1020}
	brute := func(p *Profile, f Filter) []uint64 {
		var out []uint64
		for _, s := range p.Samples {
			rel := time.Duration(int64(s.Time) - int64(start))
			if (!f.HasFrom || rel >= f.From) && (!f.HasTo || rel < f.To) {
				out = append(out, s.Time)
			}
		}
		return out
	}
	for _, order := range [][]int{{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 0, 1, 2, 9, 4, 5, 6, 7, 8}} {
		p := &Profile{StartTime: start, Stacks: [][]int32{{}}, Threads: map[uint32]Thread{}}
		for _, i := range order {
			p.Samples = append(p.Samples, Sample{Time: times[i], Event: recording.EventCPU})
		}
		sorted := order[0] == 0
		for _, b := range []time.Duration{-20, -10, -1, 0, 1, 3, 4, 7, 10, 11, 20, 21, 50} {
			for _, e := range []time.Duration{-5, 0, 3, 4, 10, 20, 21, 100} {
				for _, f := range []Filter{{From: b, HasFrom: true, To: e, HasTo: true}, {From: b, HasFrom: true}, {To: e, HasTo: true}} {
					var got []uint64
					for _, s := range p.Apply(f).Samples {
						got = append(got, s.Time)
					}
					if want := brute(p, f); fmt.Sprint(got) != fmt.Sprint(want) {
						t.Errorf("sorted %v, from %v (%v) to %v (%v): %v, want %v", sorted, f.From, f.HasFrom, f.To, f.HasTo, got, want)
					}
				}
			}
		}
		lo, hi := p.window(Filter{From: 3, HasFrom: true, To: 10, HasTo: true})
		if sorted && (lo != 3 || hi != 7) || !sorted && (lo != 0 || hi != len(times)) {
			t.Errorf("sorted %v: window [3ns, 10ns) is samples [%d, %d)", sorted, lo, hi)
		}
	}
}
