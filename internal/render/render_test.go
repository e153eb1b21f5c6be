package render

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	pprof "github.com/google/pprof/profile"

	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/testutil"
)

const (
	fMain = iota
	fDispatch
	fWorker
	fHelper // inlined into worker
	fAnon   // no function name
	fSyscall
	fWrite
	fMemcpy
)

const ms = 1_000_000

// testProfile: process 100 (threads 100 "app" and 101 "app-worker") and
// process 200 ("other"), 10 samples of 1 ms.
//
//	tid 100: t=0,1,2 worker<-dispatch_2<-main; t=3 helper(inlined)<-worker<-...;
//	         t=4 memcpy<-worker<-...; t=10 worker<-dispatch_2<-main
//	tid 101: t=0.5, 1.5 ksys_write<-entry_SYSCALL_64<-libc.so.6+0x1234<-main; t=2.5 empty stack
//	tid 200: t=5 worker<-dispatch_2<-main
func testProfile() *profile.Profile {
	const start = 5_000_000_000
	p := &profile.Profile{
		Frames: []profile.Frame{
			fMain:     {Function: "main", File: "/src/main.c", Line: 10, Object: "/usr/bin/app", Offset: 0x1100},
			fDispatch: {Function: "dispatch_2", File: "/src/main.c", Line: 20, Object: "/usr/bin/app", Offset: 0x1200},
			fWorker:   {Function: "worker", File: "/src/work.c", Line: 30, Object: "/usr/bin/app", Offset: 0x1300},
			fHelper:   {Function: "helper", File: "/src/work.h", Line: 5, Object: "/usr/bin/app", Offset: 0x1300, Inlined: true},
			fAnon:     {Object: "/usr/lib/libc.so.6", Offset: 0x1234},
			fSyscall:  {Function: "entry_SYSCALL_64", Object: "[kernel.kallsyms]", Offset: 0xffffffff81000000, Kernel: true},
			fWrite:    {Function: "ksys_write", Object: "[kernel.kallsyms]", Offset: 0xffffffff81200000, Kernel: true},
			fMemcpy:   {Function: "memcpy", Object: "/usr/lib/libc.so.6", Offset: 0x9a000},
		},
		Stacks: [][]int32{
			{fWorker, fDispatch, fMain},
			{fHelper, fWorker, fDispatch, fMain},
			{fWrite, fSyscall, fAnon, fMain},
			{},
			{fMemcpy, fWorker, fDispatch, fMain},
		},
		Threads: map[uint32]profile.Thread{
			100: {PID: 100, TID: 100, Comm: "app"},
			101: {PID: 100, TID: 101, Comm: "app-worker"},
			200: {PID: 200, TID: 200, Comm: "other"},
		},
		Lost:      2,
		Throttled: 1,
		Metas: []recording.Meta{{
			Tool: "culprit test", Command: []string{"./app", "-n", "3"},
			StartUnixNano: 1_700_000_000_000_000_000, StartClock: start - ms,
			Event: "cpu-clock", Frequency: 1000, CallGraph: "dwarf",
		}},
		Sources:   []profile.Source{{Path: "a.culprit", Complete: true, Samples: 10}},
		Warnings:  []string{"no symbols for /usr/lib/libc.so.6"},
		StartTime: start,
	}
	add := func(t uint64, pid, tid uint32, stack int32) {
		p.Samples = append(p.Samples, profile.Sample{Time: start + t, PID: pid, TID: tid, Period: ms, Stack: stack})
	}
	add(0, 100, 100, 0)
	add(ms/2, 100, 101, 2)
	add(1*ms, 100, 100, 0)
	add(3*ms/2, 100, 101, 2)
	add(2*ms, 100, 100, 0)
	add(5*ms/2, 100, 101, 3)
	add(3*ms, 100, 100, 1)
	add(4*ms, 100, 100, 4)
	add(5*ms, 200, 200, 0)
	add(10*ms, 100, 100, 0)
	return p
}

func TestFlatText(t *testing.T) {
	p := testProfile()
	var b bytes.Buffer
	if err := FlatText(&b, p.Flat(profile.ByFunction), 3); err != nil {
		t.Fatal(err)
	}
	want := `10 samples (lost 2, throttled 1)
 self%   ±err  total%   ±err  samples  name
 50.0%  ±31.6   70.0%  ±29.0        5  worker
 20.0%  ±25.3   20.0%  ±25.3        2  ksys_write
 10.0%  ±19.0   10.0%  ±19.0        1  [unknown]
(6 more not shown)
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	if err := FlatText(&b, p.Flat(profile.ByFunction), 0); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), "\n"); n != 2+9 {
		t.Errorf("all rows: %d lines\n%s", n, b.String())
	}
}

func TestFlatTextSameName(t *testing.T) {
	p := &profile.Profile{
		Frames:  []profile.Frame{{Function: "main", Object: "/bin/a"}, {Function: "main", Object: "/bin/b"}},
		Stacks:  [][]int32{{0}, {1}},
		Samples: []profile.Sample{{Stack: 0}, {Stack: 1}},
	}
	var b bytes.Buffer
	if err := FlatText(&b, p.Flat(profile.ByFunction), 0); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "main [a]\n") || !strings.Contains(b.String(), "main [b]\n") {
		t.Errorf("no disambiguation:\n%s", b.String())
	}
}

func TestCallersText(t *testing.T) {
	p := testProfile()
	var b bytes.Buffer
	if err := CallersText(&b, p.Callers(profile.ByFunction, 3), len(p.Samples), 2); err != nil {
		t.Fatal(err)
	}
	want := ` 50.0% ±31.6 worker <- dispatch_2 <- main
 20.0% ±25.3 ksys_write <- entry_SYSCALL_64 <- libc.so.6+0x1234
(3 more not shown)
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	// The example of the specification: 67.6% ±1.2.
	b.Reset()
	rows := []profile.CallerRow{{Path: []string{"worker", "dispatch_2", "main"}, Samples: 6760}}
	if err := CallersText(&b, rows, 10000, 0); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != " 67.6% ±0.9  worker <- dispatch_2 <- main\n" {
		t.Errorf("got %q", got)
	}
}

func TestEmptyText(t *testing.T) {
	var p profile.Profile
	var b bytes.Buffer
	if err := FlatText(&b, p.Flat(profile.ByFunction), 10); err != nil {
		t.Fatal(err)
	}
	if b.String() != "no samples (lost 0, throttled 0)\n" {
		t.Errorf("flat: %q", b.String())
	}
	b.Reset()
	if err := CallersText(&b, p.Callers(profile.ByFunction, 3), 0, 10); err != nil {
		t.Fatal(err)
	}
	if b.String() != "no samples\n" {
		t.Errorf("callers: %q", b.String())
	}
}

func TestFlatJSON(t *testing.T) {
	p := testProfile()
	var b bytes.Buffer
	err := FlatJSON(&b, p.Flat(profile.ByFunction), JSONExtra{Sources: p.Sources, Warnings: p.Warnings})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Samples   int    `json:"samples"`
		Lost      uint64 `json:"lost"`
		Throttled uint64 `json:"throttled"`
		Grouping  string `json:"grouping"`
		Entries   []struct {
			Name         string  `json:"name"`
			Object       string  `json:"object"`
			Self         float64 `json:"self"`
			Total        float64 `json:"total"`
			SelfSamples  int     `json:"self_samples"`
			TotalSamples int     `json:"total_samples"`
			SelfErr      float64 `json:"self_err"`
			TotalErr     float64 `json:"total_err"`
		} `json:"entries"`
		Sources []struct {
			Path     string `json:"path"`
			Complete bool   `json:"complete"`
			Samples  int    `json:"samples"`
		} `json:"sources"`
		Warnings []string `json:"warnings"`
	}
	dec := json.NewDecoder(&b)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.Samples != 10 || got.Lost != 2 || got.Throttled != 1 || got.Grouping != "function" {
		t.Errorf("header %+v", got)
	}
	e := got.Entries[0]
	if e.Name != "worker" || e.Object != "app" || e.Self != 0.5 || e.Total != 0.7 || e.SelfSamples != 5 || e.TotalSamples != 7 ||
		math.Abs(e.SelfErr-2*math.Sqrt(0.025)) > 1e-12 {
		t.Errorf("entry %+v", e)
	}
	if len(got.Sources) != 1 || got.Sources[0].Path != "a.culprit" || !got.Sources[0].Complete || len(got.Warnings) != 1 {
		t.Errorf("extra %+v %+v", got.Sources, got.Warnings)
	}
	// Empty: arrays, not null.
	b.Reset()
	var empty profile.Profile
	if err := FlatJSON(&b, empty.Flat(profile.ByLine), JSONExtra{}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"entries": []`, `"sources": []`, `"warnings": []`, `"grouping": "line"`, `"samples": 0`} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("empty flat JSON lacks %s:\n%s", s, b.String())
		}
	}
}

func TestCallersJSON(t *testing.T) {
	p := testProfile()
	var b bytes.Buffer
	err := CallersJSON(&b, p.Callers(profile.ByFunction, 2), len(p.Samples),
		JSONExtra{Lost: p.Lost, Throttled: p.Throttled, Grouping: "function", Warnings: p.Warnings})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Samples   int    `json:"samples"`
		Lost      uint64 `json:"lost"`
		Throttled uint64 `json:"throttled"`
		Grouping  string `json:"grouping"`
		Callers   []struct {
			Path    []string `json:"path"`
			Samples int      `json:"samples"`
			Share   float64  `json:"share"`
			Err     float64  `json:"err"`
		} `json:"callers"`
		Sources  []any    `json:"sources"`
		Warnings []string `json:"warnings"`
	}
	dec := json.NewDecoder(&b)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.Samples != 10 || got.Lost != 2 || got.Throttled != 1 || got.Grouping != "function" || got.Sources == nil {
		t.Errorf("header %+v", got)
	}
	c := got.Callers[0]
	if !reflect.DeepEqual(c.Path, []string{"worker", "dispatch_2"}) || c.Samples != 5 || c.Share != 0.5 || math.Abs(c.Err-profile.Err(5, 10)) > 1e-12 {
		t.Errorf("first %+v", c)
	}
	sum := 0
	for _, c := range got.Callers {
		sum += c.Samples
	}
	if sum != 10 {
		t.Errorf("callers sum to %d", sum)
	}
	b.Reset()
	if err := CallersJSON(&b, nil, 0, JSONExtra{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"callers": []`) || strings.Contains(b.String(), "grouping") {
		t.Errorf("empty callers JSON:\n%s", b.String())
	}
}

func TestFolded(t *testing.T) {
	var b bytes.Buffer
	if err := WriteFolded(&b, testProfile()); err != nil {
		t.Fatal(err)
	}
	want := `app;[unknown] 1
app;main;dispatch_2;worker 4
app;main;dispatch_2;worker;helper 1
app;main;dispatch_2;worker;memcpy 1
app;main;libc.so.6+0x1234;entry_SYSCALL_64_[k];ksys_write_[k] 2
other;main;dispatch_2;worker 1
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	if err := WriteFolded(&b, &profile.Profile{}); err != nil || b.Len() != 0 {
		t.Errorf("empty: %q %v", b.String(), err)
	}
	// Separators in names, unknown threads.
	p := &profile.Profile{
		Frames:  []profile.Frame{{Function: "a;b"}},
		Stacks:  [][]int32{{0}},
		Samples: []profile.Sample{{PID: 7, TID: 8, Stack: 0}},
	}
	b.Reset()
	if err := WriteFolded(&b, p); err != nil || b.String() != "pid 7;a:b 1\n" {
		t.Errorf("sanitized: %q %v", b.String(), err)
	}
}

func parsePprof(t *testing.T, p *profile.Profile) (*pprof.Profile, []byte) {
	t.Helper()
	var b bytes.Buffer
	if err := WritePprof(&b, p); err != nil {
		t.Fatal(err)
	}
	data := b.Bytes()
	pp, err := pprof.Parse(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if err := pp.CheckValid(); err != nil {
		t.Fatal(err)
	}
	return pp, data
}

func TestPprof(t *testing.T) {
	p := testProfile()
	pp, data := parsePprof(t, p)
	if len(pp.SampleType) != 2 || pp.SampleType[0].Type != "cpu" || pp.SampleType[0].Unit != "nanoseconds" ||
		pp.SampleType[1].Type != "samples" || pp.SampleType[1].Unit != "count" {
		t.Errorf("sample types %v", pp.SampleType)
	}
	var cpu, count int64
	names := map[string]int64{} // leaf function -> samples
	for _, s := range pp.Sample {
		cpu += s.Value[0]
		count += s.Value[1]
		if s.Value[0] != s.Value[1]*ms {
			t.Errorf("sample values %v", s.Value)
		}
		if len(s.NumLabel["pid"]) != 1 || len(s.NumLabel["tid"]) != 1 || len(s.Label["comm"]) != 1 {
			t.Errorf("labels %v %v", s.NumLabel, s.Label)
		}
		if s.NumLabel["tid"][0] == 101 && s.Label["comm"][0] != "app-worker" {
			t.Errorf("comm of 101 = %v", s.Label["comm"])
		}
		names[s.Location[0].Line[0].Function.Name] += s.Value[1]
	}
	if cpu != 10*ms || count != 10 {
		t.Errorf("cpu %d count %d", cpu, count)
	}
	want := map[string]int64{"worker": 5, "helper": 1, "memcpy": 1, "ksys_write": 2, "[unknown]": 1}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("leaves %v, want %v", names, want)
	}
	// The inlined helper shares a location with worker, innermost first.
	found := false
	for _, l := range pp.Location {
		if len(l.Line) == 2 {
			found = true
			if l.Line[0].Function.Name != "helper" || l.Line[1].Function.Name != "worker" || l.Line[0].Line != 5 || l.Line[1].Line != 30 {
				t.Errorf("inline location %+v %+v", l.Line[0], l.Line[1])
			}
			if l.Mapping == nil || l.Mapping.File != "/usr/bin/app" {
				t.Errorf("inline mapping %+v", l.Mapping)
			}
		}
		if l.Mapping != nil && (l.Address < l.Mapping.Start || l.Address >= l.Mapping.Limit) {
			t.Errorf("address %#x outside mapping %+v", l.Address, l.Mapping)
		}
	}
	if !found {
		t.Error("no location with inlined lines")
	}
	for _, f := range pp.Function {
		if f.Name == "" {
			t.Errorf("function without name: %+v", f)
		}
	}
	var files []string
	for _, m := range pp.Mapping {
		files = append(files, m.File)
	}
	for _, obj := range []string{"/usr/bin/app", "/usr/lib/libc.so.6", "[kernel.kallsyms]"} {
		if !strings.Contains(strings.Join(files, " "), obj) {
			t.Errorf("no mapping for %s in %v", obj, files)
		}
	}
	// The wall time of the first sample: StartClock is 1 ms before it.
	if pp.TimeNanos != 1_700_000_000_000_000_000+ms || pp.DurationNanos != 11*ms {
		t.Errorf("time %d duration %d", pp.TimeNanos, pp.DurationNanos)
	}
	if pp.Period != ms {
		t.Errorf("period %d", pp.Period)
	}
	runPprofTop(t, data, "worker", "ksys_write", "libc.so.6+0x1234", "helper")
}

func runPprofTop(t *testing.T, data []byte, want ...string) {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
		_, err := os.Stat(goTool)
		testutil.Need(t, err == nil, "the go tool, to run go tool pprof")
	}
	file := filepath.Join(t.TempDir(), "cpu.pb.gz")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goTool, "tool", "pprof", "-top", file)
	cmd.Env = append(os.Environ(), "PPROF_TMPDIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -top: %v\n%s", err, out)
	}
	for _, w := range want {
		if !bytes.Contains(out, []byte(w)) {
			t.Errorf("go tool pprof -top output lacks %q:\n%s", w, out)
		}
	}
}

func TestPprofEmpty(t *testing.T) {
	pp, data := parsePprof(t, &profile.Profile{})
	if len(pp.Sample) != 0 || len(pp.SampleType) != 2 {
		t.Errorf("empty pprof %+v", pp)
	}
	runPprofTop(t, data)
}

type ssTest struct {
	Schema string `json:"$schema"`
	Shared struct {
		Frames []struct {
			Name string `json:"name"`
			File string `json:"file"`
			Line int    `json:"line"`
		} `json:"frames"`
	} `json:"shared"`
	Profiles []struct {
		Type       string   `json:"type"`
		Name       string   `json:"name"`
		Unit       string   `json:"unit"`
		StartValue uint64   `json:"startValue"`
		EndValue   uint64   `json:"endValue"`
		Samples    [][]int  `json:"samples"`
		Weights    []uint64 `json:"weights"`
	} `json:"profiles"`
	Name               string `json:"name"`
	ActiveProfileIndex int    `json:"activeProfileIndex"`
	Exporter           string `json:"exporter"`
}

func TestSpeedscope(t *testing.T) {
	var b bytes.Buffer
	if err := WriteSpeedscope(&b, testProfile()); err != nil {
		t.Fatal(err)
	}
	var got ssTest
	dec := json.NewDecoder(&b)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.Schema != SpeedscopeSchema || got.Exporter != "culprit" || got.Name != "./app -n 3" {
		t.Errorf("header %q %q %q", got.Schema, got.Exporter, got.Name)
	}
	if len(got.Profiles) != 3 {
		t.Fatalf("%d profiles", len(got.Profiles))
	}
	wantNames := []string{"app (pid 100, tid 100)", "app-worker (pid 100, tid 101)", "other (pid 200, tid 200)"}
	var total uint64
	for i, sp := range got.Profiles {
		if sp.Type != "sampled" || sp.Unit != "nanoseconds" || sp.Name != wantNames[i] {
			t.Errorf("profile %d: %q %q %q", i, sp.Type, sp.Unit, sp.Name)
		}
		if len(sp.Samples) != len(sp.Weights) {
			t.Errorf("profile %d: %d samples, %d weights", i, len(sp.Samples), len(sp.Weights))
		}
		var sum uint64
		for j, s := range sp.Samples {
			sum += sp.Weights[j]
			if len(s) == 0 {
				t.Errorf("profile %d sample %d empty", i, j)
			}
			for _, fi := range s {
				if fi < 0 || fi >= len(got.Shared.Frames) {
					t.Fatalf("frame index %d out of range", fi)
				}
			}
		}
		if sp.EndValue-sp.StartValue != sum {
			t.Errorf("profile %d: start %d end %d sum %d", i, sp.StartValue, sp.EndValue, sum)
		}
		total += sum
	}
	if total != 10*ms {
		t.Errorf("total weight %d", total)
	}
	frameName := func(i int) string { return got.Shared.Frames[i].Name }
	first := got.Profiles[0].Samples[0]
	if len(first) != 3 || frameName(first[0]) != "main" || frameName(first[2]) != "worker" {
		t.Errorf("first sample not root first: %v", first)
	}
	if f := got.Shared.Frames[first[2]]; f.File != "/src/work.c" || f.Line != 30 {
		t.Errorf("worker frame %+v", f)
	}
	k := got.Profiles[1].Samples[0]
	if frameName(k[len(k)-1]) != "ksys_write [k]" || frameName(k[1]) != "libc.so.6+0x1234" {
		t.Errorf("kernel sample %v", k)
	}
	if got.Profiles[2].StartValue != 5*ms {
		t.Errorf("startValue %d", got.Profiles[2].StartValue)
	}

	b.Reset()
	if err := WriteSpeedscope(&b, &profile.Profile{}); err != nil {
		t.Fatal(err)
	}
	var empty ssTest
	if err := json.Unmarshal(b.Bytes(), &empty); err != nil || empty.Profiles == nil || empty.Shared.Frames == nil {
		t.Errorf("empty speedscope %s %v", b.String(), err)
	}
}

type xev struct {
	name       string
	depth      int
	start, end float64
}

func TestChrome(t *testing.T) {
	var b bytes.Buffer
	if err := WriteChrome(&b, testProfile()); err != nil {
		t.Fatal(err)
	}
	var tr struct {
		TraceEvents []struct {
			Name string            `json:"name"`
			Cat  string            `json:"cat"`
			Ph   string            `json:"ph"`
			Ts   float64           `json:"ts"`
			Dur  *float64          `json:"dur"`
			PID  uint32            `json:"pid"`
			TID  uint32            `json:"tid"`
			Args map[string]string `json:"args"`
		} `json:"traceEvents"`
		DisplayTimeUnit string `json:"displayTimeUnit"`
	}
	dec := json.NewDecoder(&b)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&tr); err != nil {
		t.Fatal(err)
	}
	if tr.DisplayTimeUnit != "ms" {
		t.Errorf("displayTimeUnit %q", tr.DisplayTimeUnit)
	}
	perThread := map[uint32][]xev{}
	lastTs := map[uint32]float64{}
	const eps = 1e-6
	for _, e := range tr.TraceEvents {
		switch e.Ph {
		case "M":
		case "X":
			if e.Dur == nil || *e.Dur < 0 {
				t.Fatalf("X event without duration: %+v", e)
			}
			if e.Ts < lastTs[e.TID] {
				t.Errorf("tid %d: ts %v after %v", e.TID, e.Ts, lastTs[e.TID])
			}
			lastTs[e.TID] = e.Ts
			if isKernel := e.Name == "entry_SYSCALL_64" || e.Name == "ksys_write"; (e.Cat == "kernel") != isKernel {
				t.Errorf("category of %s: %s", e.Name, e.Cat)
			}
			// Nesting: an event lies inside every open event it starts in.
			evs := perThread[e.TID]
			depth := 0
			for i := len(evs) - 1; i >= 0; i-- {
				if evs[i].end > e.Ts+eps {
					depth = evs[i].depth + 1
					if e.Ts+*e.Dur > evs[i].end+eps {
						t.Errorf("tid %d: %s [%v,%v] overlaps %s [%v,%v]", e.TID, e.Name, e.Ts, e.Ts+*e.Dur, evs[i].name, evs[i].start, evs[i].end)
					}
					break
				}
			}
			perThread[e.TID] = append(evs, xev{e.Name, depth, e.Ts, e.Ts + *e.Dur})
		default:
			t.Errorf("unexpected phase %q", e.Ph)
		}
	}
	var names []string
	for _, e := range tr.TraceEvents {
		if e.Ph == "M" {
			names = append(names, e.Name+"="+e.Args["name"])
		}
	}
	if want := []string{"process_name=app", "thread_name=app", "thread_name=app-worker", "process_name=other", "thread_name=other"}; !reflect.DeepEqual(names, want) {
		t.Errorf("metadata %v, want %v", names, want)
	}

	// tid 100: main, dispatch_2, worker over [0,5ms) with helper [3,4) and
	// memcpy [4,5) beneath worker; after the gap, main..worker over [10,11).
	want100 := []xev{
		{"main", 0, 0, 5000}, {"dispatch_2", 1, 0, 5000}, {"worker", 2, 0, 5000},
		{"helper", 3, 3000, 4000}, {"memcpy", 3, 4000, 5000},
		{"main", 0, 10000, 11000}, {"dispatch_2", 1, 10000, 11000}, {"worker", 2, 10000, 11000},
	}
	if !reflect.DeepEqual(perThread[100], want100) {
		t.Errorf("tid 100:\n got %v\nwant %v", perThread[100], want100)
	}
	want101 := []xev{
		{"main", 0, 500, 2500}, {"libc.so.6+0x1234", 1, 500, 2500}, {"entry_SYSCALL_64", 2, 500, 2500}, {"ksys_write", 3, 500, 2500},
		{"[unknown]", 0, 2500, 3500},
	}
	if !reflect.DeepEqual(perThread[101], want101) {
		t.Errorf("tid 101:\n got %v\nwant %v", perThread[101], want101)
	}
	if len(perThread[200]) != 3 || perThread[200][0].start != 5000 {
		t.Errorf("tid 200: %v", perThread[200])
	}

	b.Reset()
	if err := WriteChrome(&b, &profile.Profile{}); err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(b.String()) != `{"traceEvents":[],"displayTimeUnit":"ms"}` {
		t.Errorf("empty chrome: %s", b.String())
	}
}

// Samples whose stack changes only at the leaf keep their callers open;
// jittered samples (a little late) still count as contiguous.
func TestChromeMergeJitter(t *testing.T) {
	p := testProfile()
	p.Samples = nil
	for i, st := range []int32{0, 1, 0, 4} {
		p.Samples = append(p.Samples, profile.Sample{Time: p.StartTime + uint64(i)*(ms+ms/4), PID: 100, TID: 100, Period: ms, Stack: st})
	}
	tr := chromeTrace(p)
	count := map[string]int{}
	for _, e := range tr.TraceEvents {
		if e.Ph == "X" {
			count[e.Name]++
		}
	}
	if count["main"] != 1 || count["worker"] != 1 || count["helper"] != 1 || count["memcpy"] != 1 {
		t.Errorf("events %v", count)
	}
	// A gap of more than half a period splits.
	p.Samples[2].Time += ms / 2
	p.Samples[3].Time += ms / 2
	count = map[string]int{}
	for _, e := range chromeTrace(p).TraceEvents {
		if e.Ph == "X" {
			count[e.Name]++
		}
	}
	if count["main"] != 2 {
		t.Errorf("after gap: %v", count)
	}
}

// pprof takes the first mapping for the main binary: it is the recorded
// program's even when the first sample starts in the kernel, found by the
// command's name or, without one, by the object holding main.
func TestPprofMainFirst(t *testing.T) {
	for _, command := range [][]string{{"./app", "-n", "3"}, nil} {
		p := testProfile()
		p.Metas[0].Command = command
		p.Samples[0].Stack = 2 // ksys_write <- entry_SYSCALL_64 <- libc <- main
		pp, _ := parsePprof(t, p)
		if len(pp.Mapping) < 3 || pp.Mapping[0].File != "/usr/bin/app" {
			t.Errorf("command %q: mappings %+v, want /usr/bin/app first", command, pp.Mapping)
		}
		for i, m := range pp.Mapping {
			if m.ID != uint64(i+1) {
				t.Errorf("mapping %d has ID %d", i, m.ID)
			}
		}
	}
}

// LostNote is silent when nothing was lost, and says what was otherwise.
func TestLostNote(t *testing.T) {
	for _, c := range []struct {
		lost, throttled uint64
		want            string
	}{
		{0, 0, ""},
		{12, 0, "12 samples lost while recording: these figures leave them out\n"},
		{0, 3, "the sampling was throttled 3 times while recording: these figures leave out what it missed\n"},
		{5, 2, "5 samples lost and the sampling throttled 2 times while recording: these figures leave them out\n"},
	} {
		var b bytes.Buffer
		if err := LostNote(&b, c.lost, c.throttled); err != nil {
			t.Fatal(err)
		}
		if b.String() != c.want {
			t.Errorf("lost %d throttled %d: %q, want %q", c.lost, c.throttled, b.String(), c.want)
		}
	}
}

// chromeTrace is the Chrome trace WriteChrome writes for p, decoded.
func chromeTrace(p *profile.Profile) ChromeTrace {
	var b bytes.Buffer
	var tr ChromeTrace
	if err := WriteChrome(&b, p); err != nil {
		panic(err)
	}
	if err := json.Unmarshal(b.Bytes(), &tr); err != nil {
		panic(err)
	}
	return tr
}

// TestSpeedscopeBytes checks that the file is byte for byte what
// json.Encoder writes for its content, HTML-escaped names included.
func TestSpeedscopeBytes(t *testing.T) {
	p := testProfile()
	p.Frames[0].Function = "operator<<(A&, \"B\")"
	for _, p := range []*profile.Profile{p, {}} {
		var b bytes.Buffer
		if err := WriteSpeedscope(&b, p); err != nil {
			t.Fatal(err)
		}
		var v struct {
			Schema string `json:"$schema"`
			Shared struct {
				Frames []ssFrame `json:"frames"`
			} `json:"shared"`
			Profiles []struct {
				Type       string   `json:"type"`
				Name       string   `json:"name"`
				Unit       string   `json:"unit"`
				StartValue uint64   `json:"startValue"`
				EndValue   uint64   `json:"endValue"`
				Samples    [][]int  `json:"samples"`
				Weights    []uint64 `json:"weights"`
			} `json:"profiles"`
			Name               string `json:"name"`
			ActiveProfileIndex int    `json:"activeProfileIndex"`
			Exporter           string `json:"exporter"`
		}
		if err := json.Unmarshal(b.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		if err := json.NewEncoder(&want).Encode(v); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b.Bytes(), want.Bytes()) {
			t.Errorf("got\n%s\nwant\n%s", b.Bytes(), want.Bytes())
		}
	}
}

// One sample per stack, process and thread, whatever the order: a thread
// number that a second process reuses, and threads taking turns on one
// stack.
func TestPprofSamplesByThread(t *testing.T) {
	p := testProfile()
	p.Samples = p.Samples[:0]
	add := func(pid, tid uint32, stack int32) {
		p.Samples = append(p.Samples, profile.Sample{Time: p.StartTime + uint64(len(p.Samples))*ms, PID: pid, TID: tid, Period: ms, Stack: stack})
	}
	for range 3 {
		add(100, 100, 0)
		add(100, 101, 0)
		add(300, 100, 0) // thread number 100 again, in another process
		add(100, 100, 0)
		add(100, 101, 1)
		add(200, 200, 0)
	}
	add(300, 100, 1)
	pp := Pprof(p)
	type key struct {
		pid, tid int64
		leaf     string
	}
	got := map[key]int64{}
	for _, s := range pp.Sample {
		k := key{s.NumLabel["pid"][0], s.NumLabel["tid"][0], s.Location[0].Line[0].Function.Name}
		if _, dup := got[k]; dup {
			t.Errorf("two samples of %v", k)
		}
		got[k] += s.Value[1]
	}
	leaf := func(st int32) string { return p.FrameAt(p.StackAt(st)[0]).Function }
	want := map[key]int64{
		{100, 100, leaf(0)}: 6, {100, 101, leaf(0)}: 3, {300, 100, leaf(0)}: 3,
		{100, 101, leaf(1)}: 3, {200, 200, leaf(0)}: 3, {300, 100, leaf(1)}: 1,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("samples %v, want %v", got, want)
	}
}
