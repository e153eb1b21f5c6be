package introperf

import (
	"errors"
	"math/rand"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/recording"
)

// manyEvents is a run of three threads with stacks drawn from a small call
// tree, deep and shallow, so that instances close in an order far from the
// timeline's; times start near 2^60 ns to exercise the encoding's widths.
func manyEvents(n int) []event {
	rng := rand.New(rand.NewSource(7))
	funcs := []string{"main", "serve", "parse", "lib:read", "k:sys_read", "lib:write", "compute", "k:schedule"}
	var out []event
	t := [4]uint64{0, 1 << 60, 1<<60 + 5, 1<<60 + 11}
	for i := 0; i < n; i++ {
		tid := uint32(1 + rng.Intn(3))
		t[tid] += uint64(1 + rng.Intn(1<<uint(rng.Intn(30))))
		depth := 1 + rng.Intn(len(funcs))
		stack := []string{"main"}
		for d := 1; d < depth; d++ {
			stack = append(stack, funcs[1+rng.Intn(len(funcs)-1)])
		}
		kinds := []recording.Event{recording.EventCPU, recording.EventSyscallEnter, recording.EventSyscallExit, recording.EventSwitch}
		out = append(out, event{t: t[tid], tid: tid, stack: stack, kind: kinds[rng.Intn(len(kinds))], arg: 1})
	}
	// build wants events in time order.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].t < out[j-1].t; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func collect(t *testing.T, r *Result) []Instance {
	t.Helper()
	var got []Instance
	if err := r.EachInstance(func(in Instance) error { got = append(got, in); return nil }); err != nil {
		t.Fatal(err)
	}
	return got
}

// The instances kept for a timeline read back in timeline order, the same
// as the whole list sorted, whether they were sorted in one buffer, in runs
// written to the temporary file, or in runs kept in memory (no temporary
// directory).
func TestTimelineRuns(t *testing.T) {
	p := build(manyEvents(3000))
	all := Analyze(p, Options{KeepInstances: true})
	want := append([]Instance(nil), all.Instances...)
	SortInstances(want)
	if len(want) < 2000 {
		t.Fatalf("only %d instances", len(want))
	}

	one := Analyze(p, Options{KeepInstances: true, Timeline: true})
	if len(one.Instances) != 0 || len(one.timeline.runs) != 0 || len(one.timeline.mem) != 0 {
		t.Fatalf("one buffer: %d instances listed, %d runs in the file, %d in memory",
			len(one.Instances), len(one.timeline.runs), len(one.timeline.mem))
	}
	if got := collect(t, one); !reflect.DeepEqual(got, want) {
		t.Errorf("one buffer: %d instances differ from the %d sorted", len(got), len(want))
	}

	defer func(n int) { runInstances = n }(runInstances)
	runInstances = 97
	spilled := Analyze(p, Options{KeepInstances: true, Timeline: true})
	tl := spilled.timeline
	if tl.f == nil || len(tl.runs) != len(want)/97 || len(tl.mem) != 0 || len(tl.buf) != len(want)%97 {
		t.Fatalf("spilled: file %v, %d runs in it, %d in memory, %d buffered", tl.f != nil, len(tl.runs), len(tl.mem), len(tl.buf))
	}
	for i := 0; i < 2; i++ { // a second reading gives the same
		if got := collect(t, spilled); !reflect.DeepEqual(got, want) {
			t.Fatalf("spilled, reading %d: %d instances differ from the %d sorted", i, len(got), len(want))
		}
	}
	stop := errors.New("stop")
	n := 0
	if err := spilled.EachInstance(func(Instance) error { n++; return stop }); err != stop || n != 1 {
		t.Errorf("stopped reading: %v after %d", err, n)
	}
	if err := spilled.Close(); err != nil {
		t.Fatal(err)
	}

	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "missing"))
	mem := Analyze(p, Options{KeepInstances: true, Timeline: true})
	if mem.timeline.f != nil || len(mem.timeline.runs) != 0 || len(mem.timeline.mem) != len(want)/97 {
		t.Fatalf("no temporary directory: %d runs in a file, %d in memory", len(mem.timeline.runs), len(mem.timeline.mem))
	}
	if got := collect(t, mem); !reflect.DeepEqual(got, want) {
		t.Errorf("runs in memory: %d instances differ from the %d sorted", len(got), len(want))
	}
}

// Every field reads back from the encoding, at the extremes of its type.
func TestTimelineEncoding(t *testing.T) {
	list := []Instance{
		{Func: 3, Node: 9, Path: -1, Depth: 0, PID: 1, TID: 1, Start: 1 << 63, Conservative: 0, Aggressive: 5, Seen: 1 << 63, End: 1<<63 + 5},
		{Func: 1<<31 - 1, Node: 0, Path: 1<<31 - 1, Depth: 1<<31 - 1, PID: 1<<32 - 1, TID: 0, Start: 0, Conservative: 1<<64 - 1, Aggressive: 1<<64 - 1, Seen: 1<<64 - 1, End: 0},
		{Func: -1 << 31, Node: -1 << 31, Path: -1 << 31, Depth: -1 << 31, PID: 0, TID: 1<<32 - 1, Start: 1<<64 - 1, Seen: 0, End: 1<<64 - 1},
		{},
	}
	var b []byte
	var prev Instance
	for _, in := range list {
		b = appendInstance(b, &prev, in)
		prev = in
	}
	r := strings.NewReader(string(b))
	prev = Instance{}
	for i, want := range list {
		got, err := readInstance(r, prev)
		if err != nil || got != want {
			t.Fatalf("instance %d: %+v %v, want %+v", i, got, err, want)
		}
		prev = got
	}
	if _, err := readInstance(r, prev); err == nil {
		t.Errorf("read past the end")
	}
}
