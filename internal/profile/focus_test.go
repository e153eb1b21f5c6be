package profile

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/culprit-dev/culprit/internal/recording"
)

// stackNames are the function names of each sample's stack, innermost first.
func stackNames(p *Profile) [][]string {
	var out [][]string
	for _, s := range p.Samples {
		var names []string
		for _, fi := range p.StackAt(s.Stack) {
			names = append(names, p.FrameAt(fi).Name())
		}
		out = append(out, names)
	}
	return out
}

func TestFocusIgnoreHide(t *testing.T) {
	p := testProfile()
	re := regexp.MustCompile
	count := func(f Filter) int { return len(p.Apply(f).Samples) }

	// worker is on 6 stacks (4 sharing one stack), dispatch_2 on the same 6.
	if n := count(Filter{Focus: re(`^worker$`)}); n != 6 {
		t.Errorf("focus worker kept %d samples, want 6", n)
	}
	if n := count(Filter{Ignore: re(`^worker$`)}); n != 4 {
		t.Errorf("ignore worker kept %d samples, want 4", n)
	}
	if n := count(Filter{Focus: re(`^worker$`), Ignore: re(`^(helper|memcpy)$`)}); n != 4 {
		t.Errorf("focus worker, ignore helper and memcpy kept %d, want 4", n)
	}
	// By file:line: work.h:5 is the inlined helper's line.
	if n := count(Filter{Focus: re(`work\.h:5$`)}); n != 1 {
		t.Errorf("focus on work.h:5 kept %d, want 1", n)
	}
	// Focus on a kernel function still works when kernel frames are then
	// dropped: the sample is kept, charged to main.
	q := p.Apply(Filter{Focus: re(`^ksys_write$`), Kernel: KernelExclude})
	if got := stackNames(q); len(got) != 1 || len(got[0]) != 1 || got[0][0] != "main" {
		t.Errorf("focus ksys_write, kernel excluded: %v", got)
	}

	// Hide worker: its self time goes to dispatch_2, its callees keep theirs.
	h := p.Apply(Filter{Hide: re(`^worker$`)})
	if len(h.Samples) != len(p.Samples) {
		t.Fatalf("hide dropped samples: %d of %d", len(h.Samples), len(p.Samples))
	}
	self := map[string]int{}
	for _, r := range h.Flat(ByFunction).Rows {
		self[r.Name] = r.Self
		if r.Name == "worker" {
			t.Errorf("hidden worker still has a row: %+v", r)
		}
	}
	if self["dispatch_2"] != 4 || self["helper"] != 1 || self["memcpy"] != 1 {
		t.Errorf("self after hiding worker: %v, want dispatch_2 4, helper 1, memcpy 1", self)
	}
	// Hiding every frame of a stack leaves an empty stack, kept.
	e := p.Apply(Filter{Hide: re(`.`)})
	if len(e.Samples) != len(p.Samples) || len(e.Flat(ByFunction).Rows) != 1 || e.Flat(ByFunction).Rows[0].Name != Unknown {
		t.Errorf("hide everything: %d samples, rows %+v", len(e.Samples), e.Flat(ByFunction).Rows)
	}
	// Hide then focus: focus sees the whole stack, so hiding worker does not
	// lose the samples a focus on worker selects.
	if n := count(Filter{Focus: re(`^worker$`), Hide: re(`^worker$`)}); n != 6 {
		t.Errorf("focus and hide worker kept %d, want 6", n)
	}
	// The four samples sharing a stack are decided together and keep sharing
	// one stack.
	w := p.Apply(Filter{Focus: re(`^dispatch_2$`), Hide: re(`^memcpy$`)})
	stacks := map[int32]int{}
	for _, s := range w.Samples {
		stacks[s.Stack]++
	}
	if len(w.Samples) != 6 || len(stacks) != 3 {
		t.Errorf("focus dispatch_2 hide memcpy: %d samples on %d stacks (%v), want 6 on 3", len(w.Samples), len(stacks), stackNames(w))
	}
}

// sampleTimes are the times of p's samples, in ms from the first of
// testProfile, which are also their indexes there.
func sampleTimes(p *Profile) []int {
	var out []int
	for _, s := range p.Samples {
		out = append(out, int((s.Time-p.StartTime)/1e6))
	}
	return out
}

func TestFocusIgnoreExactSamples(t *testing.T) {
	p := testProfile()
	re := regexp.MustCompile
	for _, c := range []struct {
		name string
		f    Filter
		want []int // indexes of the samples kept, see testProfile
	}{
		{"focus worker", Filter{Focus: re(`^worker$`)}, []int{0, 1, 2, 3, 4, 5}},
		{"focus unanchored", Filter{Focus: re(`ecurs`)}, []int{8}},
		{"focus kernel", Filter{Focus: re(`entry_SYSCALL`)}, []int{6, 7}},
		{"focus unnamed frame by object+offset", Filter{Focus: re(`^libc\.so\.6\+0x1234$`)}, []int{9}},
		{"ignore worker", Filter{Ignore: re(`^worker$`)}, []int{6, 7, 8, 9}},
		{"ignore main", Filter{Ignore: re(`^main$`)}, []int{7}},
		{"focus main, ignore kernel and worker", Filter{Focus: re(`^main$`), Ignore: re(`^(ksys_write|worker)$`)}, []int{8, 9}},
		{"focus and ignore the same", Filter{Focus: re(`worker`), Ignore: re(`worker`)}, nil},
		// Files: the recorded path, its base name, either with the line.
		{"focus file:line", Filter{Focus: re(`^/src/app/work\.c:30$`)}, []int{0, 1, 2, 3, 4, 5}},
		{"focus base:line", Filter{Focus: re(`^work\.h:5$`)}, []int{4}},
		{"focus base name", Filter{Focus: re(`^rec\.c$`)}, []int{8}},
		{"focus directory", Filter{Focus: re(`^/src/app/`)}, []int{0, 1, 2, 3, 4, 5, 6, 8, 9}},
		{"wrong line", Filter{Focus: re(`work\.c:31`)}, nil},
		// Focus and ignore see kernel frames that --kernel exclude drops.
		{"ignore kernel, kernel excluded", Filter{Ignore: re(`^ksys_write$`), Kernel: KernelExclude}, []int{0, 1, 2, 3, 4, 5, 7, 8, 9}},
		// And user frames that --kernel only drops.
		{"focus main, kernel only", Filter{Focus: re(`^main$`), Kernel: KernelOnly}, []int{6}},
		// Time and task selection apply as well.
		{"focus worker from 2ms", Filter{Focus: re(`^worker$`), From: 2 * time.Millisecond, HasFrom: true}, []int{2, 3, 4, 5}},
		{"focus worker, thread 101", Filter{Focus: re(`^worker$`), TIDs: []uint32{101}}, []int{1, 3, 5}},
	} {
		if got := sampleTimes(p.Apply(c.f)); !slices.Equal(got, c.want) {
			t.Errorf("%s: kept samples %v, want %v", c.name, got, c.want)
		}
	}
}

func TestHideKernel(t *testing.T) {
	p := testProfile()
	re := regexp.MustCompile
	// Hiding worker, then dropping kernel frames: ksys_write's sample is
	// main's, the kernel thread's is empty, worker's time is dispatch_2's.
	q := p.Apply(Filter{Hide: re(`^worker$`), Kernel: KernelExclude})
	want := [][]string{
		{"dispatch_2", "main"}, {"dispatch_2", "main"}, {"dispatch_2", "main"}, {"dispatch_2", "main"},
		{"helper", "dispatch_2", "main"}, {"memcpy", "dispatch_2", "main"},
		{"main"}, nil, {"recurse", "recurse", "recurse", "main"}, {"libc.so.6+0x1234", "main"},
	}
	if got := stackNames(q); !reflect.DeepEqual(got, want) {
		t.Errorf("hide worker, kernel excluded:\n got %v\nwant %v", got, want)
	}
	// Kernel only drops the samples with no kernel frame in the recorded
	// stack; a sample whose kernel frames are all hidden is kept, empty.
	k := p.Apply(Filter{Hide: re(`^ksys_write$`), Kernel: KernelOnly})
	if got, want := stackNames(k), [][]string{{"entry_SYSCALL_64"}, {"entry_SYSCALL_64"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("hide ksys_write, kernel only: %v, want %v", got, want)
	}
	e := p.Apply(Filter{Hide: re(`^(ksys_write|entry_SYSCALL_64)$`), Kernel: KernelOnly})
	if got := sampleTimes(e); !slices.Equal(got, []int{6, 7}) {
		t.Errorf("hide every kernel frame, kernel only: samples %v, want [6 7]", got)
	}
	if rows := e.Flat(ByFunction).Rows; len(rows) != 1 || rows[0].Name != Unknown || rows[0].Self != 2 {
		t.Errorf("hide every kernel frame, kernel only: rows %+v, want [unknown] with 2", rows)
	}
	// Hide matches files too: hiding work.h drops the inlined helper only.
	h := p.Apply(Filter{Hide: re(`^work\.h$`)})
	if got := stackNames(h)[4]; !slices.Equal(got, []string{"worker", "dispatch_2", "main"}) {
		t.Errorf("hide work.h: %v", got)
	}
}

func TestFocusStackCache(t *testing.T) {
	p := testProfile()
	re := regexp.MustCompile
	for _, f := range []Filter{
		{Focus: re(`main`)},
		{Ignore: re(`^memcpy$`)},
		{Hide: re(`^dispatch_2$`)},
		{Focus: re(`worker`), Hide: re(`^main$`), Kernel: KernelExclude},
		{Hide: re(`^(ksys_write|entry_SYSCALL_64|main)$`)},
	} {
		q := p.Apply(f)
		// Samples that shared a stack still share one, and no stack is
		// stored twice: each distinct stack was decided once.
		byOld := map[int32]int32{}
		seen := map[string]bool{}
		used := map[int32]bool{}
		for i, s := range q.Samples {
			old := p.Samples[sampleTimes(q)[i]].Stack
			if ns, ok := byOld[old]; ok && ns != s.Stack {
				t.Errorf("%+v: samples of stack %d went to stacks %d and %d", f, old, ns, s.Stack)
			}
			byOld[old] = s.Stack
			used[s.Stack] = true
		}
		for i, st := range q.Stacks {
			k := fmt.Sprint(st)
			if f.Hide != nil && seen[k] {
				t.Errorf("%+v: stack %v stored twice", f, st)
			}
			seen[k] = true
			if f.Hide != nil && !used[int32(i)] {
				t.Errorf("%+v: stack %d (%v) has no sample", f, i, st)
			}
		}
	}
	// Sharing is by index: the four samples on stack 0 keep sharing one.
	q := p.Apply(Filter{Focus: re(`^worker$`), Hide: re(`^main$`)})
	if len(q.Stacks) != 3 || q.Samples[0].Stack != q.Samples[3].Stack {
		t.Errorf("focus worker hide main: %d stacks, %v", len(q.Stacks), stackNames(q))
	}
	// The first decision about a stack is the one every later sample gets.
	p.Samples = append(p.Samples, p.Samples[0], p.Samples[6])
	a := p.Apply(Filter{Ignore: re(`^ksys_write$`), Hide: re(`^dispatch_2$`)})
	if got, want := len(a.Samples), 10; got != want {
		t.Errorf("ignore ksys_write with two samples appended: %d samples, want %d", got, want)
	}
	if last := a.Samples[len(a.Samples)-1]; last.Stack != a.Samples[0].Stack {
		t.Errorf("appended sample of stack 0 is on stack %d, the first on %d", last.Stack, a.Samples[0].Stack)
	}
}

func TestFocusStackOutOfRange(t *testing.T) {
	p := testProfile()
	re := regexp.MustCompile
	p.Samples[9].Stack = 99 // no such stack: an empty one, "[unknown]"
	p.Samples[8].Stack = -1
	if got := sampleTimes(p.Apply(Filter{Focus: re(`.`)})); !slices.Equal(got, []int{0, 1, 2, 3, 4, 5, 6, 7}) {
		t.Errorf("focus on anything: %v; a stack with no frame matches nothing", got)
	}
	q := p.Apply(Filter{Ignore: re(`^worker$`)})
	if got := sampleTimes(q); !slices.Equal(got, []int{6, 7, 8, 9}) || q.Samples[2].Stack != -1 || q.Samples[3].Stack != 99 {
		t.Errorf("ignore worker: %v, stacks %d %d", got, q.Samples[2].Stack, q.Samples[3].Stack)
	}
	h := p.Apply(Filter{Hide: re(`^worker$`)})
	if n := len(h.StackAt(h.Samples[8].Stack)) + len(h.StackAt(h.Samples[9].Stack)); len(h.Samples) != 10 || n != 0 {
		t.Errorf("hide worker: %d samples, the out-of-range ones have %d frames", len(h.Samples), n)
	}
}

// A selection of every value of a streamed profile (a focus, no time
// window, no task) keeps its counts instead of reading the values again
// to count them; a time window counts what it keeps.
func TestApplyKeepsValueCounts(t *testing.T) {
	p := testProfile()
	p.ValueSources = []recording.ValueSource{{ID: 1, Name: "n"}}
	vals := []Value{{Time: p.StartTime, Source: 0, Type: recording.ValueInt}, {Time: p.StartTime + uint64(2*time.Second), Source: 0, Type: recording.ValueInt}}
	reads := 0
	p.SetValueStream([]ValueCount{{All: 2, Present: 2}}, func(yield func(*Value) bool) error {
		reads++
		for _, v := range vals {
			if !yield(&v) {
				break
			}
		}
		return nil
	})
	c, err := p.Apply(Filter{Focus: regexp.MustCompile(`^worker$`)}).ValueCounts()
	if err != nil || !reflect.DeepEqual(c, []ValueCount{{All: 2, Present: 2}}) || reads != 0 {
		t.Errorf("focus: counts %v, %v after %d readings, want [{2 2}] without reading", c, err, reads)
	}
	c, err = p.Apply(Filter{To: time.Second, HasTo: true}).ValueCounts()
	if err != nil || !reflect.DeepEqual(c, []ValueCount{{All: 1, Present: 1}}) || reads != 1 {
		t.Errorf("window: counts %v, %v after %d readings, want [{1 1}] in one", c, err, reads)
	}
}
