package view

import (
	"math/rand"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
)

// TestFunctionMerged checks that the function page, which selects from
// the samples merged by stack and thread, counts what selecting from
// every sample counts: the samples with a matching function on the
// stack, per thread, and the total, of the whole recording and of time
// ranges, with samples of other events and stacks out of range among
// them.
func TestFunctionMerged(t *testing.T) {
	p := &profile.Profile{
		Frames: []profile.Frame{{Function: "main", File: "/src/main.c"}, {Function: "work"}, {Function: "leaf"},
			{Function: "leaf_b", File: "/src/b.c"}, {Function: "sys_read", Kernel: true}},
		Stacks: [][]int32{{2, 1, 0}, {3, 1, 0}, {1, 0}, {4, 2, 1, 0}, {0}},
		Threads: map[uint32]profile.Thread{
			1: {PID: 1, TID: 1, Comm: "main"}, 2: {PID: 1, TID: 2, Comm: "worker"}, 3: {PID: 1, TID: 3, Comm: "other"}},
		StartTime: 1000,
	}
	rnd := rand.New(rand.NewSource(1))
	for i := range 20000 {
		smp := profile.Sample{Time: 1000 + uint64(i)*100_000, PID: 1, TID: uint32(1 + rnd.Intn(3)),
			Stack: int32(rnd.Intn(len(p.Stacks)+1)) - int32(rnd.Intn(2)), Period: 10, Event: recording.EventCPU}
		if rnd.Intn(5) == 0 {
			smp.Event = recording.EventSwitch
		}
		p.Samples = append(p.Samples, smp)
	}
	s := &Server{p: p}
	type row struct {
		name     string
		tid      uint32
		nSamples int
	}
	// want counts as selecting from every sample does.
	want := func(rng Range, re *regexp.Regexp) ([]row, int, int) {
		in := p
		if !rng.Whole() {
			in = p.Apply(rng.Narrow(profile.Filter{}))
		}
		focus := in.Apply(profile.Filter{Focus: re})
		per := map[uint32]*row{}
		var rows []row
		for _, smp := range focus.Samples {
			if per[smp.TID] == nil {
				per[smp.TID] = &row{name: p.ThreadNameAt(smp.TID, smp.Time), tid: smp.TID}
			}
			per[smp.TID].nSamples += smp.N()
		}
		for _, r := range per {
			rows = append(rows, *r)
		}
		slices.SortFunc(rows, func(a, b row) int {
			if a.nSamples != b.nSamples {
				return b.nSamples - a.nSamples
			}
			return int(a.tid) - int(b.tid)
		})
		return rows, total(focus), total(in)
	}
	for _, rng := range []Range{{}, {From: 200 * time.Millisecond, To: 900 * time.Millisecond}, {From: time.Second, To: 1100 * time.Millisecond}} {
		ms := s.mergedSamples(rng)
		if len(ms.p.Samples) > 3*2*(len(p.Stacks)+2) {
			t.Errorf("%v: %d samples merged, want one per stack, thread and event", rng, len(ms.p.Samples))
		}
		for _, f := range []string{"leaf", "^leaf$", "work", "b\\.c", "sys_", "nothing", "."} {
			re := regexp.MustCompile(f)
			got := s.function(ms, re, rng)
			wantRows, wantN, wantTotal := want(rng, re)
			var gotRows []row
			for _, th := range got["Threads"].([]*fnThread) {
				gotRows = append(gotRows, row{th.Name, th.TID, th.Samples})
			}
			if !slices.Equal(gotRows, wantRows) || got["Samples"] != wantN || got["Total"] != wantTotal {
				t.Errorf("%v, f=%s: %d of %d samples, per thread %v; want %d of %d, %v", rng, f, got["Samples"], got["Total"], gotRows, wantN, wantTotal, wantRows)
			}
			if wantN == 0 && f != "nothing" {
				t.Errorf("%v, f=%s: no sample matches: the case tests nothing", rng, f)
			}
		}
	}
}
