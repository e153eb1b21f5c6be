package view

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
)

// TestFocusedMaps checks the time view's data for a function (?f=): its
// maps count, per thread and cell, only the samples whose stack holds a
// frame f matches (by name or file, as pprof's focus), and its lanes are
// those of the whole data, the threads' lanes in the order of the maps
// drawn.
func TestFocusedMaps(t *testing.T) {
	const start = 1_000_000_000
	p := &profile.Profile{
		Frames: []profile.Frame{{Function: "main"}, {Function: "alpha", File: "/src/alpha.c"}, {Function: "beta"}},
		// Innermost first: main alone, alpha under main, beta under alpha, beta under main.
		Stacks:    [][]int32{{0}, {1, 0}, {2, 1, 0}, {2, 0}},
		Threads:   map[uint32]profile.Thread{1: {PID: 1, TID: 1, Comm: "one"}, 2: {PID: 1, TID: 2, Comm: "two"}},
		StartTime: start,
	}
	ev := &profile.Profile{Frames: p.Frames, Stacks: p.Stacks, Threads: p.Threads, StartTime: start}
	// Thread 1 runs main alone and beta, thread 2 alpha and beta under it.
	// want[f][tid][cell] counts the samples the test expects in each.
	want := map[string]map[uint32]map[int]int{"alpha": {}, "alpha.c": {}, "beta": {}, "": {}}
	add := func(f string, tid uint32, cell int) {
		if want[f][tid] == nil {
			want[f][tid] = map[int]int{}
		}
		want[f][tid][cell]++
	}
	for i := range 3000 {
		tm := uint64(start + i*1_000_000) // 1 ms apart: 3 s, 20 samples a cell
		tid := uint32(1 + i%2)
		var stack int32
		switch {
		case tid == 1 && i%10 < 6:
			stack = 0 // main alone
		case tid == 1:
			stack = 3 // beta under main
		case i%10 < 5:
			stack = 1 // alpha
		default:
			stack = 2 // beta under alpha
		}
		p.Samples = append(p.Samples, profile.Sample{Time: tm, PID: 1, TID: tid, Period: 1_000_000, Stack: stack, Event: recording.EventCPU})
		cell := i / 20
		add("", tid, cell)
		if stack == 1 || stack == 2 {
			add("alpha", tid, cell)
			add("alpha.c", tid, cell)
		}
		if stack == 2 || stack == 3 {
			add("beta", tid, cell)
		}
		if i%7 == 0 {
			ev.Samples = append(ev.Samples, profile.Sample{Time: tm, PID: 1, TID: tid, Stack: stack, Event: recording.EventSyscallEnter})
		}
	}
	s, err := New(Inputs{Profile: p, Events: ev, Names: []string{"a.rec"}}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	get := func(f string) TimeData {
		t.Helper()
		path := "time/data"
		if f != "" {
			path += "?f=" + f
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, s.Path()+path, nil))
		if w.Code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, w.Code, w.Body)
		}
		var d TimeData
		if err := json.Unmarshal(w.Body.Bytes(), &d); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		return d
	}
	whole := get("")
	if len(whole.Lanes) != 3 {
		t.Fatalf("whole data: %d lanes, want 3 (system calls, a lane per thread): %+v", len(whole.Lanes), whole.Lanes)
	}
	for _, f := range []string{"", "alpha", "alpha.c", "beta"} {
		d := get(f)
		total := 0
		for _, cells := range want[f] {
			for _, n := range cells {
				total += n
			}
		}
		if d.Samples != total || d.Threads[0].Samples != total {
			t.Errorf("f=%q: %d samples (all threads' map %d), want %d", f, d.Samples, d.Threads[0].Samples, total)
		}
		if len(d.Threads) != 1+len(want[f]) {
			t.Fatalf("f=%q: %d maps, want all threads' and %d", f, len(d.Threads), len(want[f]))
		}
		for _, h := range d.Threads[1:] {
			got := map[int]int{}
			for c, col := range h.Cells {
				for r, n := range col {
					if n > 0 {
						got[c*d.Rows+r] = n
					}
				}
			}
			if !reflect.DeepEqual(got, want[f][h.TID]) {
				t.Errorf("f=%q: thread %d's map %v, want %v", f, h.TID, got, want[f][h.TID])
			}
		}
		// The busiest thread first: 1 in the whole data (1500 each, the
		// lower TID first), 2 for alpha (1500 against 0) and beta (900
		// against 600).
		first := uint32(2)
		if f == "" {
			first = 1
		}
		if d.Threads[1].TID != first {
			t.Errorf("f=%q: first map thread %d's, want %d's", f, d.Threads[1].TID, first)
		}
		// The same lanes, the threads' in the order of the maps.
		if len(d.Lanes) != len(whole.Lanes) || !reflect.DeepEqual(d.Lanes[0], whole.Lanes[0]) {
			t.Fatalf("f=%q: lanes %+v, want the whole data's %+v", f, d.Lanes, whole.Lanes)
		}
		for i, h := range d.Threads[1:] {
			if l := d.Lanes[1+i]; l.Kind != "thread" || l.TID != h.TID {
				t.Errorf("f=%q: lane %d is %s %d, want thread %d's (the order of the maps)", f, 1+i, l.Kind, l.TID, h.TID)
			}
		}
	}
}
