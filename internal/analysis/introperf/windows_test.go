package introperf

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
)

const ms = uint64(1e6)

// server returns the events of a thread serving requests every ms for n
// ms from t0: a read that blocks every third request (entry, switch,
// exit), a CPU sample parsing or looking up (every other request), and
// every fifth request a preemption.
func server(t0 uint64, n int) []event {
	var ev []event
	call := []string{"main", "serve", "libc:read", "k:entry_SYSCALL_64", "k:do_syscall_64", "k:ksys_read"}
	for i := range n {
		t := t0 + uint64(i)*ms
		ev = append(ev, event{t: t, stack: call, kind: recording.EventSyscallEnter, arg: 0})
		if i%3 == 0 {
			ev = append(ev, event{t: t + 100_000, stack: append(call[:len(call):len(call)], "k:schedule", "k:__schedule"),
				kind: recording.EventSwitch, arg: 1})
		}
		ev = append(ev, event{t: t + 300_000, stack: call, kind: recording.EventSyscallExit, arg: 0})
		work := []string{"main", "serve", "parse"}
		if i%2 == 1 {
			work = []string{"main", "serve", "lookup"}
		}
		ev = append(ev, event{t: t + 500_000, stack: work, kind: recording.EventCPU})
		if i%5 == 0 {
			ev = append(ev, event{t: t + 700_000, stack: []string{"main", "serve", "parse", "k:asm_sysvec_apic_timer_interrupt", "k:irqentry_exit", "k:schedule", "k:__schedule"},
				kind: recording.EventSwitch, arg: 0})
		}
	}
	return ev
}

// windowed records ev as the recorder does in windows: calls entered
// outside ws are left out with their exits, a blocking switch inside one
// has no stack, and each recorded entry stands for its window's scale.
func windowed(ev []event, ws []recording.SyscallWindow) *profile.Profile {
	in := func(t uint64) (bool, uint64) {
		for _, w := range ws {
			if t >= w.Start && t < w.End {
				return true, uint64(w.Scale())
			}
		}
		return false, 0
	}
	var out []event
	var periods []uint64
	dropped := false
	for _, e := range ev {
		period := uint64(1)
		switch e.kind {
		case recording.EventSyscallEnter:
			ok, sc := in(e.t)
			dropped = !ok
			if dropped {
				continue
			}
			period = sc
		case recording.EventSyscallExit:
			if dropped {
				dropped = false
				continue
			}
		case recording.EventSwitch:
			if dropped && !runnable(e.arg) {
				e.stack = nil
			}
		}
		out = append(out, e)
		periods = append(periods, period)
	}
	p := build(out)
	for i := range p.Samples {
		p.Samples[i].Period = periods[i]
	}
	p.SyscallWindows = ws
	return p
}

// contextsOf lists a tree's contexts with their counts and totals.
func contextsOf(tr *Tree) []string {
	var out []string
	var walk func(v *Node)
	walk = func(v *Node) {
		if v != tr.Root {
			out = append(out, fmt.Sprintf("%s: %d %d %d", strings.Join(funcNames(tr, v), ";"), v.Count, v.Total[Conservative], v.Total[Aggressive]))
		}
		for _, c := range v.Children {
			walk(c)
		}
	}
	walk(tr.Root)
	sort.Strings(out)
	return out
}

// TestThinToWindows: a run recorded all along, compared with a run of
// the same program recorded in windows (fixed, or auto: all along for
// its first 200 ms), is thinned to the other's windows, at the same times
// from each run's start: the two runs then have the same contexts,
// counts and latencies, and the same estimate of the calls made. Without
// the thinning the run recorded all along has ten times the kernel
// instances.
func TestThinToWindows(t *testing.T) {
	for _, auto := range []bool{false, true} {
		t.Run(fmt.Sprintf("auto=%v", auto), func(t *testing.T) {
			const n = 1000 // ms of serving
			t0, t1 := uint64(1e9), uint64(7e9)
			base := build(server(t0, n))
			base.Metas = []recording.Meta{{StartClock: t0}}
			var ws []recording.SyscallWindow
			first := uint64(0)
			if auto {
				ws = append(ws, recording.SyscallWindow{Start: t1, End: t1 + 200*ms})
				first = 200 * ms
			}
			for s := first; s < n*ms; s += 100 * ms {
				ws = append(ws, recording.SyscallWindow{Start: t1 + s, End: t1 + s + 10*ms, On: 10 * ms, Period: 100 * ms})
			}
			buggy := windowed(server(t1, n), ws)
			buggy.Metas = []recording.Meta{{StartClock: t1, Extra: map[string]string{recording.ExtraSyscallWindows: "10ms/100ms"}}}

			gb, gg := RegimeOf(base), RegimeOf(buggy)
			funcs := NewFuncTable()
			rb := Analyze(base, Options{Funcs: funcs, Like: &gg})
			rg := Analyze(buggy, Options{Funcs: funcs, Like: &gb})
			if rg.Thinned || !rb.Thinned {
				t.Errorf("thinned: base %v buggy %v, want the base only", rb.Thinned, rg.Thinned)
			}
			cb, cg := contextsOf(rb.Tree), contextsOf(rg.Tree)
			if strings.Join(cb, "\n") != strings.Join(cg, "\n") {
				t.Errorf("contexts differ:\nbase (thinned)\n  %s\nbuggy (windowed)\n  %s", strings.Join(cb, "\n  "), strings.Join(cg, "\n  "))
			}
			if rb.Syscalls != rg.Syscalls {
				t.Errorf("estimated calls: base %d, buggy %d", rb.Syscalls, rg.Syscalls)
			}
			wantKept := 10 * (n / 100)
			if auto {
				wantKept = 200 + 10*(n-200)/100
			}
			if got := rb.EventCounts[recording.EventSyscallEnter]; got != wantKept || rb.ThinnedCalls != n-wantKept {
				t.Errorf("base kept %d calls and left out %d, want %d and %d", got, rb.ThinnedCalls, wantKept, n-wantKept)
			}
			for _, p := range Rank(rb, rg, RankOptions{Totals: true, AllLeaves: true}) {
				if p.Cost != 0 {
					t.Errorf("path %s ranked with cost %v between two runs of the same program", strings.Join(p.Names(), ";"), p.Cost)
				}
			}

			// Without it: the base's kernel instances are all of its calls.
			plain := Analyze(base, Options{Funcs: NewFuncTable()})
			if strings.Join(contextsOf(plain.Tree), "\n") == strings.Join(cg, "\n") {
				t.Errorf("the unthinned base has the windowed run's contexts: the test cannot tell thinning from none")
			}
		})
	}
}

// TestThinAlike: runs recorded alike are not thinned: both all along,
// both in windows, or one whose windows' times are not known (an older
// recording); a run in windows at a time is not thinned there by one
// all along.
func TestThinAlike(t *testing.T) {
	t0 := uint64(1e9)
	ws := []recording.SyscallWindow{{Start: t0, End: t0 + 10*ms, On: 10 * ms, Period: 100 * ms}}
	all := build(server(t0, 300))
	all.Metas = []recording.Meta{{StartClock: t0}}
	win := windowed(server(t0, 300), ws)
	win.Metas = []recording.Meta{{StartClock: t0, Extra: map[string]string{recording.ExtraSyscallWindows: "10ms/100ms"}}}
	old := build(server(t0, 300))
	old.Metas = []recording.Meta{{StartClock: t0, Extra: map[string]string{recording.ExtraSyscallWindows: "10ms/100ms"}}}
	ga, gw, go_ := RegimeOf(all), RegimeOf(win), RegimeOf(old)
	if !go_.Unknown || gw.Unknown || ga.Unknown || !ga.AllAlong() || gw.AllAlong() {
		t.Fatalf("regimes: all along %+v, windowed %+v, older %+v", ga, gw, go_)
	}
	for _, c := range []struct {
		name string
		p    *profile.Profile
		like Regime
	}{{"all along to all along", all, ga}, {"windowed to windowed", win, gw}, {"windowed to all along", win, ga},
		{"all along to unknown", all, go_}, {"unknown to windowed", old, gw}} {
		r := Analyze(c.p, Options{Like: &c.like})
		if r.Thinned || r.ThinnedCalls != 0 || r.ThinnedSwitches != 0 {
			t.Errorf("%s: thinned (%d calls, %d switches)", c.name, r.ThinnedCalls, r.ThinnedSwitches)
		}
	}
}

// TestRegimeWindowed: where a run was in its windows, between them, and
// past its last window (its windows' grid goes on; a steady span stays
// steady).
func TestRegimeWindowed(t *testing.T) {
	g := Regime{Windows: []RegimeWindow{{Start: 0, End: 200 * ms}, {Start: 200 * ms, End: 210 * ms, On: 10 * ms, Period: 100 * ms},
		{Start: 300 * ms, End: 310 * ms, On: 10 * ms, Period: 100 * ms}}}
	for _, c := range []struct {
		rel          uint64
		windowed, in bool
	}{{0, false, true}, {199 * ms, false, true}, {200 * ms, true, true}, {209 * ms, true, true}, {210 * ms, true, false},
		{299 * ms, true, false}, {305 * ms, true, true}, {350 * ms, true, false}, {405 * ms, true, true}, {1000*ms + 9*ms, true, true}, {1011 * ms, true, false}} {
		w, in, sc := g.Windowed(c.rel)
		if w != c.windowed || in != c.in || (w && sc != 10) || (!w && sc != 1) {
			t.Errorf("at %v ms: windowed %v in %v scale %v, want %v %v", float64(c.rel)/1e6, w, in, sc, c.windowed, c.in)
		}
	}
	steady := Regime{Windows: []RegimeWindow{{Start: 0, End: 50 * ms}}}
	if w, in, _ := steady.Windowed(80 * ms); w || !in {
		t.Errorf("past a last steady span: windowed %v in %v", w, in)
	}
}

// TestWindowedEstimates: a run recorded in windows estimates the latency
// totals of the same run recorded all along (each instance in a window
// stands for PERIOD/ON): its CPU samples between windows, where no call
// was recorded, are skipped, so that serve is not given the time of the
// reads it made unseen there as its own.
func TestWindowedEstimates(t *testing.T) {
	const n = 2000
	t0 := uint64(1e9)
	all := build(server(t0, n))
	all.Metas = []recording.Meta{{StartClock: t0}}
	var ws []recording.SyscallWindow
	for s := uint64(0); s < n*ms; s += 100 * ms {
		ws = append(ws, recording.SyscallWindow{Start: t0 + s, End: t0 + s + 10*ms, On: 10 * ms, Period: 100 * ms})
	}
	win := windowed(server(t0, n), ws)
	win.Metas = []recording.Meta{{StartClock: t0, Extra: map[string]string{recording.ExtraSyscallWindows: "10ms/100ms"}}}
	ra, rw := Analyze(all, Options{}), Analyze(win, Options{})
	if rw.Between == 0 || rw.WindowCut == 0 {
		t.Errorf("windowed run: %d events between windows skipped, %d cuts at their edges", rw.Between, rw.WindowCut)
	}
	for _, path := range [][]string{{"main", "serve"}, {"main", "serve", "parse"}, {"main", "serve", "read", "entry_SYSCALL_64", "do_syscall_64", "ksys_read"}} {
		va, vw := ra.Tree.Lookup(ids(ra.Tree, path...)), rw.Tree.Lookup(ids(rw.Tree, path...))
		if va == nil || vw == nil {
			t.Fatalf("%v: not in both runs", path)
		}
		for _, m := range []Mode{Conservative, Aggressive} {
			a, w := float64(va.Own[m]), float64(vw.Own[m])
			t.Logf("%s %v: own %.1f ms all along, %.1f ms estimated in windows; count %d, %d", strings.Join(path, ";"), m, a/1e6, w/1e6, va.Count, vw.Count)
			if w < a*0.9 || w > a*1.1 {
				t.Errorf("%s %v: own time %.1f ms estimated in windows, %.1f ms all along: want within 10%%", strings.Join(path, ";"), m, w/1e6, a/1e6)
			}
		}
	}
}
