package flatdiff

import (
	"math"
	"testing"

	"github.com/culprit-dev/culprit/internal/profile"
)

// build makes a profile of one thread from stack counts; frames are named
// by function and object, stacks innermost first, each sample 1 ms.
func build(counts map[int][]profile.Frame, n map[int]int) *profile.Profile {
	p := &profile.Profile{Threads: map[uint32]profile.Thread{1: {PID: 1, TID: 1, Comm: "app"}}}
	idx := map[profile.Frame]int32{}
	for s := 0; s < len(counts); s++ {
		var st []int32
		for _, f := range counts[s] {
			i, ok := idx[f]
			if !ok {
				i = int32(len(p.Frames))
				idx[f] = i
				p.Frames = append(p.Frames, f)
			}
			st = append(st, i)
		}
		p.Stacks = append(p.Stacks, st)
		for range n[s] {
			p.Samples = append(p.Samples, profile.Sample{Time: uint64(len(p.Samples)), PID: 1, TID: 1, Period: 1e6, Stack: int32(s)})
		}
	}
	return p
}

func fr(fn, obj string) profile.Frame { return profile.Frame{Function: fn, Object: obj} }

func TestCompare(t *testing.T) {
	base := build(map[int][]profile.Frame{
		0: {fr("worker", "/v1/app"), fr("main", "/v1/app")},
		1: {fr("other", "/lib/libc.so.6"), fr("main", "/v1/app")},
	}, map[int]int{0: 30, 1: 70})
	new := build(map[int][]profile.Frame{
		0: {fr("worker", "/v2/app2"), fr("main", "/v2/app2")},
		1: {fr("other", "/lib/libc.so.6"), fr("main", "/v2/app2")},
		2: {fr("fresh", "/lib/libc.so.6"), fr("main", "/v2/app2")},
	}, map[int]int{0: 120, 1: 70, 2: 10})
	res := Compare(base, new, profile.ByFunction, false)
	if res.Base != (Run{100, 100e6}) || res.New != (Run{200, 200e6}) {
		t.Fatalf("runs %+v %+v", res.Base, res.New)
	}
	got := map[string]Row{}
	var order []string
	for _, r := range res.Rows {
		got[r.Name] = r
		order = append(order, r.Name)
	}
	if len(res.Rows) != 4 {
		t.Fatalf("rows %v, want worker, main (each rebuilt under another name), other, fresh", order)
	}
	w := got["worker"]
	// 0.30 → 0.60: err 2·sqrt(.3·.7/100 + .6·.4/200) = 0.1149.
	if w.Object != "app → app2" || w.Base.Self != 30 || w.New.Self != 120 || math.Abs(w.DeltaSelf-0.3) > 1e-12 ||
		math.Abs(w.ErrSelf-2*math.Sqrt(.21/100+.24/200)) > 1e-12 || !w.Significant || w.Base.SelfCPU != 30e6 || w.New.SelfCPU != 120e6 {
		t.Errorf("worker %+v", w)
	}
	// other: 0.70 → 0.35, same CPU time.
	if o := got["other"]; math.Abs(o.DeltaSelf+0.35) > 1e-12 || !o.Significant || o.Base.SelfCPU != o.New.SelfCPU || o.Object != "libc.so.6" {
		t.Errorf("other %+v", o)
	}
	if m := got["main"]; m.DeltaSelf != 0 || m.DeltaTotal != 0 || m.Significant || m.Base.Total != 100 || m.New.Total != 200 {
		t.Errorf("main %+v", m)
	}
	// 0 → 0.05 from 200 samples: err 2·sqrt(.05·.95/200) = 0.0308, significant.
	if f := got["fresh"]; f.Base.Total != 0 || f.New.Self != 10 || !f.Significant {
		t.Errorf("fresh %+v", f)
	}
	if order[0] != "other" || order[1] != "worker" || order[3] != "main" {
		t.Errorf("ranked %v, want other (−35 points), worker (+30), fresh, main", order)
	}
	// Ranked by total change, main (unchanged) is last and worker first.
	byTotal := Compare(base, new, profile.ByFunction, true)
	if byTotal.Rows[0].Name != "other" || byTotal.Rows[len(byTotal.Rows)-1].Name != "main" || !byTotal.ByTotal {
		t.Errorf("by total %+v", byTotal.Rows)
	}
}

// A change within sampling noise is not significant, and an empty run
// makes nothing significant.
func TestCompareNoise(t *testing.T) {
	stacks := map[int][]profile.Frame{0: {fr("a", "x")}, 1: {fr("b", "x")}}
	base := build(stacks, map[int]int{0: 50, 1: 50})
	new := build(stacks, map[int]int{0: 55, 1: 45})
	for _, r := range Compare(base, new, profile.ByFunction, false).Rows {
		if r.Significant || r.Object != "x" {
			t.Errorf("%+v: ±5 points of 100 samples is noise (err %.3f)", r, r.ErrSelf)
		}
	}
	empty := build(nil, nil)
	for _, r := range Compare(empty, new, profile.ByFunction, false).Rows {
		if r.Significant || r.ErrSelf != 0 || r.Base.Total != 0 {
			t.Errorf("against an empty run: %+v", r)
		}
	}
}

// Processes are compared by name, whatever their PIDs.
func TestCompareProcesses(t *testing.T) {
	stacks := map[int][]profile.Frame{0: {fr("a", "x")}}
	base := build(stacks, map[int]int{0: 10})
	new := build(stacks, map[int]int{0: 30})
	for i := range new.Samples {
		new.Samples[i].PID, new.Samples[i].TID = 7, 7
	}
	new.Threads[7] = profile.Thread{PID: 7, TID: 7, Comm: "app"}
	res := Compare(base, new, profile.ByProcess, false)
	if len(res.Rows) != 1 || res.Rows[0].Name != "app" || res.Rows[0].Base.Self != 10 || res.Rows[0].New.Self != 30 || res.Rows[0].DeltaSelf != 0 {
		t.Errorf("by process: %+v", res.Rows)
	}
}

// A label found in two objects of one run, _start in the program and in
// the dynamic loader when a sample fell in the loader's start-up, is
// still paired with the rebuilt program's along the objects main and
// worker paired.
func TestCompareRebuiltAmbiguous(t *testing.T) {
	base := build(map[int][]profile.Frame{
		0: {fr("worker", "/v1/app"), fr("main", "/v1/app"), fr("_start", "/v1/app")},
		1: {fr("_dl_start", "/lib/ld.so"), fr("_start", "/lib/ld.so")},
	}, map[int]int{0: 99, 1: 1})
	new := build(map[int][]profile.Frame{
		0: {fr("worker", "/v2/app2"), fr("main", "/v2/app2"), fr("_start", "/v2/app2")},
	}, map[int]int{0: 200})
	got := map[string][]Row{}
	for _, r := range Compare(base, new, profile.ByFunction, true).Rows {
		got[r.Name] = append(got[r.Name], r)
	}
	s := got["_start"]
	if len(s) != 2 {
		t.Fatalf("_start rows %+v, want the program's paired and the loader's alone", s)
	}
	for _, r := range s {
		switch r.Object {
		case "app → app2":
			if r.Base.Total != 99 || r.New.Total != 200 {
				t.Errorf("the program's _start %+v", r)
			}
		case "ld.so":
			if r.Base.Total != 1 || r.New.Total != 0 {
				t.Errorf("the loader's _start %+v", r)
			}
		default:
			t.Errorf("_start in %q: not paired", r.Object)
		}
	}
}
