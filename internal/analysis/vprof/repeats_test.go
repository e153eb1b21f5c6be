package vprof

import (
	"errors"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/profile"
)

// repeatTrace is a trace of n requests (main, the outermost traced call),
// in each of which dispatch_1 calls worker(key, buf) and dispatch_2 calls
// it again with the same key and its own output buffer, which ends holding
// the same string; with differ, dispatch_2 passes another key.
func repeatTrace(n int, differ bool) *profile.Profile {
	p := &profile.Profile{Probes: []profile.Probe{
		{Function: "main"},
		{Function: "dispatch_1"},
		{Function: "dispatch_2"},
		{Function: "worker", Params: []string{"key:u8:long", "buf:s8:char *"}},
	}}
	call := func(probe, caller int32, depth uint32, start, end uint64, args []uint64, strs []string) {
		p.Calls = append(p.Calls, profile.Call{Start: start, End: end, TID: 7, PID: 7, Probe: probe,
			Caller: caller, Depth: depth, Site: -1, Args: args, Strs: strs, Ret: 1})
	}
	for i := 0; i < n; i++ {
		t := uint64(i) * 1000
		key := uint64(i % 3) // the same keys come back in later requests
		call(0, -1, 0, t, t+900, nil, nil)
		call(1, 0, 1, t+10, t+400, nil, nil)
		call(3, 1, 2, t+20, t+390, []uint64{key, 0x7ffc0100}, []string{"done"})
		call(2, 0, 1, t+410, t+850, nil, nil)
		k2 := key
		if differ {
			k2 = key + 10
		}
		call(3, 2, 2, t+420, t+790, []uint64{k2, 0x7ffc0200}, []string{"done"})
	}
	return p
}

// A call that repeats, in one request, an earlier call of the same
// function with the same inputs is found, with the caller of the first;
// an output buffer at another address that ends holding the same string
// is the same input; the same arguments in another request, or other
// arguments, are no repeat.
func TestRepeats(t *testing.T) {
	r, err := Repeats(repeatTrace(50, false))
	if err != nil {
		t.Fatal(err)
	}
	if len(r) != 1 {
		t.Fatalf("repeats %+v, want one (dispatch_2 → worker)", r)
	}
	got := r[0]
	if got.Caller != "dispatch_2" || got.Callee != "worker" || got.First != "dispatch_1" ||
		got.Calls != 50 || got.Repeats != 50 || got.RepeatTime != 50*370 || got.CalleeTime != 50*740 {
		t.Errorf("repeat %+v", got)
	}
	if p := got.Part(); p != 0.5 {
		t.Errorf("part %g, want 0.5", p)
	}
	if r, err := Repeats(repeatTrace(50, true)); err != nil || len(r) != 0 {
		t.Errorf("other keys: repeats %+v, %v; want none", r, err)
	}
	// A loop over a request's items runs the same chain again for an item
	// of the same value: no repeat; nor is one call asking again (a poll).
	loop := &profile.Profile{Probes: []profile.Probe{
		{Function: "main"}, {Function: "dispatch_1"}, {Function: "worker", Params: []string{"key:u8:long"}},
	}}
	add := func(probe, caller int32, depth uint32, start, end uint64, args ...uint64) {
		loop.Calls = append(loop.Calls, profile.Call{Start: start, End: end, TID: 7, PID: 7, Probe: probe,
			Caller: caller, Depth: depth, Site: -1, Args: args})
	}
	add(0, -1, 0, 0, 1000)
	for j := uint64(0); j < 4; j++ { // four items of one value
		add(1, 0, 1, 10+j*100, 90+j*100)
		add(2, 1, 2, 20+j*100, 80+j*100, 5)
	}
	if r, err := Repeats(loop); err != nil || len(r) != 0 {
		t.Errorf("a loop over items of one value: repeats %+v, %v; want none", r, err)
	}
	add(0, -1, 0, 2000, 3000)
	add(1, 0, 1, 2010, 2900)
	add(2, 1, 2, 2020, 2080, 5)
	add(2, 1, 2, 2100, 2160, 5)
	if r, err := Repeats(loop); err != nil || len(r) != 0 {
		t.Errorf("one call asking twice: repeats %+v, %v; want none", r, err)
	}
	// Without arguments nothing can be judged.
	p := repeatTrace(5, false)
	for i := range p.Calls {
		p.Calls[i].Args, p.Calls[i].Strs = nil, nil
	}
	p.Probes[3].Params = nil
	if _, err := Repeats(p); !errors.Is(err, ErrNoArgs) {
		t.Errorf("no arguments: %v, want ErrNoArgs", err)
	}
}

// Two callers whose calls of one function grew alike cannot be told apart
// from samples; a trace in which the second repeats the first's calls
// makes it answer for the growth, above the work and the first caller.
func TestRepeatsTakeGrowth(t *testing.T) {
	mk := func(buggy bool) *profile.Profile {
		fx := newFixture(t)
		r := fx.create(t, "repeats.rec")
		work := 50
		if buggy {
			work = 450
		}
		for _, d := range []string{"dispatch_1", "dispatch_2"} {
			n := r.variable("n", d, "long", "none", false)
			for i := 0; i < 300; i++ {
				r.tick(1, []string{d, "main"}, 0, val{n, 0, int64(i % 5)})
			}
			for i := 0; i < work; i++ {
				r.tick(1, []string{"worker", d, "main"}, 0, val{n, 1, int64(i % 5)})
			}
		}
		for i := 0; i < 600; i++ {
			r.tick(1, []string{"main"}, 0)
		}
		return r.done()
	}
	normal, buggy := mk(false), mk(true)
	before := analyzeWith(t, DefaultOptions(), []*profile.Profile{normal}, []*profile.Profile{buggy})
	if d := before.fn(t, "dispatch_2"); d.Rank == 1 || d.Evidence == EvidenceRepeats {
		t.Fatalf("without a trace dispatch_2 ranks %d, evidence %s: the samples should not tell the two callers apart", d.Rank, d.Evidence)
	}

	a, err := New(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if err := a.AddNormal(normal, Run{Path: "normal"}); err != nil {
		t.Fatal(err)
	}
	if err := a.AddBuggy(buggy, Run{Path: "buggy"}); err != nil {
		t.Fatal(err)
	}
	if err := a.AddCalls(repeatTrace(100, false)); err != nil {
		t.Fatal(err)
	}
	res, err := a.Result()
	if err != nil {
		t.Fatal(err)
	}
	d := res.fn(t, "dispatch_2")
	if d.Rank != 1 || d.Evidence != EvidenceRepeats || d.Pattern != MissingConstraint || d.Repeats == nil {
		t.Fatalf("dispatch_2: rank %d evidence %s pattern %s repeats %+v; ranking %v", d.Rank, d.Evidence, d.Pattern, d.Repeats, res.names())
	}
	if !strings.Contains(d.Why, "calls worker again with the arguments dispatch_1 already called it with in the same request (100 of its 100 calls, 50% of worker's time in a trace)") {
		t.Errorf("why %q", d.Why)
	}
	for _, n := range []string{"worker", "dispatch_1"} {
		if f := res.fn(t, n); f.Rank <= d.Rank {
			t.Errorf("%s ranks %d, above or with dispatch_2 (%d)", n, f.Rank, d.Rank)
		}
	}

	// A trace whose second caller passes other arguments changes nothing.
	a, _ = New(DefaultOptions())
	_ = a.AddNormal(normal, Run{Path: "normal"})
	_ = a.AddBuggy(buggy, Run{Path: "buggy"})
	if err := a.AddCalls(repeatTrace(100, true)); err != nil {
		t.Fatal(err)
	}
	res, err = a.Result()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(res.names(), " "), strings.Join(before.names(), " "); got != want {
		t.Errorf("ranking with a trace of no repeats %s, without %s", got, want)
	}
}
