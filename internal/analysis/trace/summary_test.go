package trace_test

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/culprit-dev/culprit/internal/analysis/trace"
	"github.com/culprit-dev/culprit/internal/loader"
	"github.com/culprit-dev/culprit/internal/recording"
)

// A trace's calls summarized as they are written give what its recording
// loaded back gives: the Dynamic Stats (a function's two probe IDs of
// one object merged, sampling, callees, exclusive time), the probe
// traps (a call that did not return trapped once) and the innermost call
// open at a time, on each thread.
func TestSummaryAsWritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.rec")
	w, err := recording.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := trace.NewSummary()
	write := func(r recording.Record) {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
		sum.Add(r)
	}
	write(&recording.Meta{Command: []string{"prog"}})
	write(&recording.Probe{ID: 1, Function: "main", Object: "/bin/prog", Offset: 0x1000})
	write(&recording.Probe{ID: 2, Function: "parse", Object: "/bin/prog", Offset: 0x1100, Every: 3})
	write(&recording.Probe{ID: 3, Function: "leaf", Object: "/bin/prog", Offset: 0x1200})
	write(&recording.Probe{ID: 4, Function: "leaf", Object: "/bin/prog", Offset: 0x1200, Since: 500}) // set again
	calls := []recording.Call{
		{Start: 30, End: 40, Child: 0, PID: 7, TID: 7, Probe: 3, Caller: 2, Depth: 2},
		{Start: 45, End: 50, PID: 7, TID: 7, Probe: 4, Caller: 2, Depth: 2},
		{Start: 20, End: 60, Child: 15, PID: 7, TID: 7, Probe: 2, Caller: 1, Depth: 1},
		{Start: 70, End: 95, PID: 7, TID: 7, Probe: 2, Caller: 1, Depth: 1, Flags: recording.CallUnreturned},
		{Start: 10, End: 100, Child: 65, PID: 7, TID: 7, Probe: 1},
		{Start: 15, End: 90, PID: 7, TID: 8, Probe: 3},
		{Start: 16, End: 17, PID: 7, TID: 8, Probe: 9}, // its probe unknown
	}
	for i := range calls {
		if calls[i].Flags&recording.CallUnreturned == 0 {
			calls[i].Site = 0x1050 // returned: a call site
		}
		write(&calls[i])
	}
	// More calls than a chunk of the summary holds, on a thread of their
	// own: main's calls of parse, one in three with a leaf in it.
	const many = 10000
	for i := uint64(0); i < many; i++ {
		t := 1000 + 100*i
		if i%3 == 0 {
			write(&recording.Call{Start: t + 20, End: t + 30 + i%7, PID: 7, TID: 9, Probe: 3, Caller: 2, Depth: 1, Site: 0x1050})
		}
		write(&recording.Call{Start: t, End: t + 50 + i%11, Child: 10, PID: 7, TID: 9, Probe: 2, Site: 0x1050})
	}
	write(&recording.End{Time: 200, Calls: uint64(len(calls)) + many + many/3 + 1})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	p, err := loader.Load([]string{path}, loader.Options{NoSamples: true})
	if err != nil {
		t.Fatal(err)
	}
	// The written calls say which returned; the loader keeps a call
	// site only where a symbol names it, none here.
	made := 6 + many + many/3 + 1
	if got, want := sum.Traps(), 2*made-1; got != want {
		t.Errorf("%d traps as written, want %d (%d calls, one did not return)", got, want, made)
	}
	if got := trace.ProbeTraps(p); got != made {
		t.Errorf("%d traps loaded, want %d (no call site named)", got, made)
	}
	got, want := sum.Stats(), trace.DynamicStats(p)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("stats as written:\n%+v\nloaded:\n%+v", got, want)
	}
	if s := got["leaf"]; s.SampledCount != 3+many/3+1 || s.Min != 5 || s.Max != 75 {
		t.Errorf("leaf: %+v, want its calls under both probe IDs", s)
	}
	if s := got["parse"]; s.Sample != 3 || s.SampledCount != 2+many || s.Callees["leaf"] != 2+many/3+1 {
		t.Errorf("parse: %+v, want %d calls recorded of every 3rd, %d of leaf", s, 2+many, 2+many/3+1)
	}
	open, loaded := sum.InnermostOpen(nil), trace.InnermostOpen(p, nil)
	for _, tid := range []uint32{7, 8, 9, 10} {
		for at := uint64(0); at <= 1000+100*many; at += 1 + at/1000 {
			if a, b := open(tid, at), loaded(tid, at); a != b {
				t.Errorf("thread %d at %d: %q as written, %q loaded", tid, at, a, b)
			}
		}
	}
	if open(7, 47) != "leaf" || open(7, 65) != "main" || open(8, 50) != "leaf" {
		t.Errorf("innermost open: %q %q %q, want leaf, main, leaf", open(7, 47), open(7, 65), open(8, 50))
	}
	// leaf hands its frame to a library function by a tail call: a
	// sample in it counts for the call leaf was made in, parse, as an
	// untraced stack shows it; one with no traced caller open, for none.
	tail := sum.InnermostOpen(map[string]bool{"leaf": true})
	if tail(7, 47) != "parse" || tail(7, 35) != "parse" || tail(7, 65) != "main" || tail(8, 50) != "" {
		t.Errorf("innermost open, leaf jumping out: %q %q %q %q, want parse, parse, main and none", tail(7, 47), tail(7, 35), tail(7, 65), tail(8, 50))
	}
}
