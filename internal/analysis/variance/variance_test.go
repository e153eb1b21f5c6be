package variance

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// calls builds n intervals of root on thread 1, each calling the children
// for the durations dur(i) gives, one after another, after a fixed body.
func synth(n int, names []string, dur func(i int) []uint64) Input {
	in := Input{Spec: Spec{Start: "root", End: "root"}}
	in.Probes = append(in.Probes, Probe{Function: "root"})
	for _, f := range names {
		in.Probes = append(in.Probes, Probe{Function: f})
	}
	t := uint64(1000)
	for i := range n {
		d := dur(i)
		start := t
		t += 100 // body
		for j, x := range d {
			in.Calls = append(in.Calls, Call{Start: t, End: t + x, TID: 1, Probe: j + 1, Site: int64(10 + j)})
			t += x
		}
		t += 50
		in.Calls = append(in.Calls, Call{Start: start, End: t, TID: 1, Probe: 0})
		t += 1000
	}
	return in
}

func factor(r *Result, label string) *Factor {
	for _, f := range r.Ranked {
		if f.Label() == label {
			return f
		}
	}
	return nil
}

// The tree's identity holds: the root's children (variances of the
// children and the body, 2·covariances) add up to the root's variance.
func TestTreeIdentityAndDominantFactor(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	in := synth(500, []string{"slow", "steady"}, func(i int) []uint64 {
		return []uint64{1000 + uint64(rng.IntN(100000)), 5000 + uint64(rng.IntN(100))}
	})
	r, err := Analyse(in)
	if err != nil {
		t.Fatal(err)
	}
	if r.Intervals != 500 || r.Rounds != 1 {
		t.Fatalf("%d intervals, %d rounds", r.Intervals, r.Rounds)
	}
	sum := 0.0
	for _, c := range r.Tree.Children {
		sum += c.Contribution
	}
	if math.Abs(sum-1) > 1e-9 {
		t.Errorf("root's factors add up to %v, want 1", sum)
	}
	if len(r.Factors) == 0 || r.Factors[0].Label() != "slow" {
		t.Fatalf("first factor %v, want slow", r.Factors)
	}
	if c := r.Factors[0].Contribution; c < 0.99 {
		t.Errorf("slow's contribution %.3f, want about 1", c)
	}
	if r.Height != 1 || r.Breadth != 3+3 {
		t.Errorf("height %d breadth %d, want 1 and 6", r.Height, r.Breadth)
	}
	if r.P50 <= 0 || r.P99 < r.P50 || r.P999 < r.P99 {
		t.Errorf("quantiles %v %v %v", r.P50, r.P99, r.P999)
	}
}

// Two functions slow together: each one's variance is a quarter of the
// root's and their covariance (×2) half of it.
func TestCovarianceFactor(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	in := synth(2000, []string{"a", "b"}, func(i int) []uint64 {
		x := uint64(rng.IntN(100000))
		return []uint64{1000 + x, 1000 + x}
	})
	in.Heights = map[string]int{"root": 1}
	r, err := Analyse(in)
	if err != nil {
		t.Fatal(err)
	}
	cov := factor(r, "(a, b)")
	if cov == nil || math.Abs(cov.Contribution-0.5) > 0.01 {
		t.Fatalf("covariance factor %+v, want contribution 0.5", cov)
	}
	if r.Factors[0] != cov {
		t.Errorf("first factor %s, want (a, b)", r.Factors[0].Label())
	}
}

// Specificity squared puts a child that holds most of its parent's
// variance above the parent (the WriteLog/CopyData example).
func TestSpecificityPrefersDeeper(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	in := Input{Spec: Spec{Start: "root", End: "root"}, Probes: []Probe{{Function: "root"}, {Function: "writelog"}, {Function: "copydata"}}}
	t0 := uint64(0)
	for range 300 {
		c := 1000 + uint64(rng.IntN(50000))
		w := c + 200 + uint64(rng.IntN(3000))
		in.Calls = append(in.Calls,
			Call{Start: t0, End: t0 + w + 100, TID: 7, Probe: 0},
			Call{Start: t0 + 50, End: t0 + 50 + w, TID: 7, Probe: 1, Site: 1},
			Call{Start: t0 + 60, End: t0 + 60 + c, TID: 7, Probe: 2, Site: 2})
		t0 += w + 1000
	}
	in.Heights = map[string]int{"root": 2, "writelog": 1}
	r, err := Analyse(in)
	if err != nil {
		t.Fatal(err)
	}
	if r.Factors[0].Label() != "copydata" {
		t.Errorf("first factor %s, want copydata; ranked %v", r.Factors[0].Label(), labels(r.Ranked))
	}
	if f := factor(r, "writelog"); f == nil || f.Contribution < r.Factors[0].Contribution {
		t.Errorf("writelog %+v should contribute more than copydata yet rank lower", f)
	}
}

// A key pairs a start on one thread with the end on another.
func TestKeyPairsAcrossThreads(t *testing.T) {
	in := Input{Spec: Spec{Start: "submit", End: "complete", Key: "id"},
		Probes: []Probe{{Function: "submit", Params: []string{"id:i4:int"}}, {Function: "complete", Params: []string{"q:p8:struct q *", "id:i4:int"}}}}
	for i := range 50 {
		s := uint64(i * 10000)
		wait := uint64(100 + (i%5)*500)
		in.Calls = append(in.Calls,
			Call{Start: s, End: s + 100, TID: 1, Probe: 0, Args: []uint64{uint64(i)}},
			Call{Start: s + 100 + wait, End: s + 300 + wait, TID: 2, Probe: 1, Args: []uint64{0xdead, uint64(i)}})
	}
	r, err := Analyse(in)
	if err != nil {
		t.Fatal(err)
	}
	if r.Intervals != 50 || r.Unpaired != 0 {
		t.Fatalf("%d intervals, %d unpaired", r.Intervals, r.Unpaired)
	}
	if r.Factors[0].Label() != "other" {
		t.Errorf("first factor %s, want other (the hand-off wait)", r.Factors[0].Label())
	}
	// Both functions get the struct; the key is a member of it.
	in.Probes[0].Params = append(in.Probes[0].Params, "q:p8:struct q *")
	for i := range in.Calls {
		if c := &in.Calls[i]; c.Probe == 0 {
			c.Args = append(c.Args, 0xbeef)
		}
	}
	in.Spec.Key = "q->id"
	if _, err := Analyse(in); err == nil || !strings.Contains(err.Error(), "not read") {
		t.Errorf("a key through a pointer the probes did not read: %v", err)
	}
	// Read at the probes, it is a value of the call named by its path,
	// after the registers.
	in.Probes[0].Params = append(in.Probes[0].Params, "q->id:i4:int")
	in.Probes[1].Params = append(in.Probes[1].Params, "q->id:i4:int")
	for i := range in.Calls {
		c := &in.Calls[i]
		c.Args = append(c.Args, uint64(7000-i/2))
	}
	if r, err := Analyse(in); err != nil || r.Intervals != 50 || r.Unpaired != 0 {
		t.Errorf("a key read through a pointer: %v", err)
	}
	in.Spec.Key = "nosuch"
	if _, err := Analyse(in); err == nil {
		t.Error("a key naming no parameter was accepted")
	}
}

// Probes set later (refinement) start a new round: only intervals begun
// after the last probes were set are used.
func TestRoundsUseLastProbes(t *testing.T) {
	in := synth(100, []string{"a"}, func(i int) []uint64 { return []uint64{uint64(100 + i*i)} })
	mid := in.Calls[len(in.Calls)/2].Start
	in.Probes[1].Since = mid
	r, err := Analyse(in)
	if err != nil {
		t.Fatal(err)
	}
	if r.Rounds != 2 || r.Intervals >= 100 || r.Intervals < 40 {
		t.Errorf("%d rounds, %d intervals; want 2 and about 50", r.Rounds, r.Intervals)
	}
}

func labels(fs []*Factor) []string {
	var s []string
	for _, f := range fs {
		s = append(s, f.Label())
	}
	return s
}

// With scheduler states, each factor's mean splits by state: a function
// blocked on a lock shows lock time, the rest on-CPU time.
func TestStatesSplit(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	in := synth(300, []string{"waits", "works"}, func(i int) []uint64 {
		return []uint64{1000 + uint64(rng.IntN(90000)), 2000}
	})
	// "waits" is the child at site 10: say its time is all lock wait.
	var waits [][2]uint64
	for _, c := range in.Calls {
		if c.Probe == 1 {
			waits = append(waits, [2]uint64{c.Start, c.End})
		}
	}
	in.States = func(tid uint32, from, to uint64) map[string]uint64 {
		lock := uint64(0)
		for _, w := range waits {
			lo, hi := max(w[0], from), min(w[1], to)
			if hi > lo {
				lock += hi - lo
			}
		}
		return map[string]uint64{"lock": lock, "on-cpu": to - from - lock}
	}
	r, err := Analyse(in)
	if err != nil {
		t.Fatal(err)
	}
	w, k := factor(r, "waits"), factor(r, "works")
	if w == nil || k == nil || math.Abs(w.States["lock"]-w.MeanNS) > 1 || w.States["on-cpu"] > 1 || math.Abs(k.States["on-cpu"]-k.MeanNS) > 1 {
		t.Errorf("states: waits %+v, works %+v", w, k)
	}
	if o := factor(r, "other"); o == nil || o.States["lock"] > 1 || o.States["on-cpu"] < 100 {
		t.Errorf("other's states %+v, want on-cpu only", o)
	}
	if r.States["lock"] <= 0 || r.States["on-cpu"] <= 0 {
		t.Errorf("interval states %v", r.States)
	}
}

// queueInput is n requests accepted on thread 1 (accept, which calls
// enqueue), dequeued on threads 2 and 3 in turn and served there (serve,
// which calls work); work's length and the queue wait vary.
func queueInput(n int) Input {
	in := Input{Spec: Spec{Start: "accept", End: "serve", Enqueue: "enqueue", Dequeue: "dequeue"},
		Probes: []Probe{{Function: "accept"}, {Function: "enqueue", Params: []string{"r:p8:struct req *"}},
			{Function: "dequeue", Ret: "p8:struct req *"}, {Function: "serve"}, {Function: "work"}}}
	for i := range n {
		s := uint64(i) * 100000
		item := uint64(0x1000 + 64*(i%7)) // addresses reused
		queued := uint64(500 + (i%3)*200)
		work := uint64(1000 + (i%5)*10000)
		tid := uint32(2 + i%2)
		d := s + 300 + queued // the dequeue's return
		in.Calls = append(in.Calls,
			Call{Start: s, End: s + 300, TID: 1, Probe: 0},
			Call{Start: s + 100, End: s + 300, TID: 1, Probe: 1, Args: []uint64{item}},
			Call{Start: d - 2000, End: d, TID: tid, Probe: 2, Ret: item},
			Call{Start: d + 50, End: d + 150 + work, TID: tid, Probe: 3},
			Call{Start: d + 100, End: d + 100 + work, TID: tid, Probe: 4})
	}
	return in
}

// An interval handed across a queue: its time is the start thread's until
// the enqueue returned, the queue wait, and the dequeuing thread's up to
// its next serve's return; the queue's ends pair by key or in order.
func TestQueueHandoff(t *testing.T) {
	for _, key := range []string{"", "r:return"} {
		in := queueInput(300)
		in.Spec.QueueKey = key
		r, err := Analyse(in)
		if err != nil {
			t.Fatalf("key %q: %v", key, err)
		}
		if r.Intervals != 300 || r.Unpaired != 0 {
			t.Fatalf("key %q: %d intervals, %d unpaired", key, r.Intervals, r.Unpaired)
		}
		var q *TreeNode
		sum := 0.0
		for _, c := range r.Tree.Children {
			sum += c.Contribution
			if c.Label == QueueWait {
				q = c
			}
		}
		if math.Abs(sum-1) > 1e-9 {
			t.Errorf("key %q: the root's factors add up to %v", key, sum)
		}
		if q == nil || math.Abs(q.MeanNS-700) > 1 {
			t.Fatalf("key %q: queue wait %+v, want a node of mean 700 ns", key, q)
		}
		if r.Factors[0].Label() != "work" {
			t.Errorf("key %q: first factor %s, want work; ranked %v", key, r.Factors[0].Label(), labels(r.Ranked))
		}
		if f := factor(r, QueueWait); f == nil || f.Function() != "" || !f.Leaf {
			t.Errorf("key %q: queue wait factor %+v: want a leaf standing for no function", key, f)
		}
		if math.Abs(r.Mean-(300+700+150+21000)) > 1 {
			t.Errorf("key %q: mean %v", key, r.Mean)
		}
	}
	in := queueInput(10)
	in.Spec.QueueKey = "nosuch:return"
	if _, err := Analyse(in); err == nil {
		t.Error("a queue key naming no parameter was accepted")
	}
	in.Spec.QueueKey = "r:return"
	in.Probes[2].Ret = ""
	if _, err := Analyse(in); err == nil {
		t.Error("a queue key on a return value not recorded was accepted")
	}
}

// Along the critical path, a function another thread ran while the
// interval waited on it is a node "F (waker)" under the call that waited,
// with the time of the wait it stood for; a waker that was itself blocked
// passes its own waker's time on to the interval's thread.
func TestWakerFunctions(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	in := Input{Spec: Spec{Start: "handle", End: "handle"},
		Probes: []Probe{{Function: "handle"}, {Function: "update"}, {Function: "hold"}, {Function: "relay"}}}
	type wait struct{ from, to uint64 }
	waits := map[uint64]wait{} // by the interval's start
	for i := range 200 {
		s := uint64(i) * 1_000_000
		w := 1000 + uint64(rng.IntN(50000))
		// Thread 1 handles; update blocks from s+200 until thread 3
		// wakes it at s+200+w; thread 3 (relay) waited on thread 2
		// (hold) until s+200+w/2.
		in.Calls = append(in.Calls,
			Call{Start: s, End: s + w + 500, TID: 1, Probe: 0},
			Call{Start: s + 100, End: s + w + 300, TID: 1, Probe: 1, Site: 1},
			Call{Start: s + 50, End: s + 200 + w/2 + 10, TID: 2, Probe: 2, Site: 2},
			Call{Start: s + 150, End: s + 200 + w + 5, TID: 3, Probe: 3, Site: 3})
		waits[s] = wait{s + 200, s + 200 + w}
	}
	in.Path = func(from uint64, endTID uint32, end uint64, _ []Handoff) []Segment {
		w := waits[from]
		mid := w.from + (w.to-w.from)/2
		return []Segment{
			{TID: 1, From: from, To: w.from, State: "on-cpu"},
			{TID: 2, From: w.from, To: mid, State: "on-cpu", For: 3, Wait: "lock"},
			{TID: 3, From: mid, To: w.to, State: "on-cpu", For: 1, Wait: "lock"},
			{TID: 1, From: w.to, To: end, State: "on-cpu"},
		}
	}
	in.States = func(tid uint32, from, to uint64) map[string]uint64 { return map[string]uint64{"on-cpu": to - from} }
	r, err := Analyse(in)
	if err != nil {
		t.Fatal(err)
	}
	var update *TreeNode
	for _, c := range r.Tree.Children {
		if c.Label == "update" {
			update = c
		}
	}
	if update == nil {
		t.Fatalf("no update under the root: %+v", r.Tree.Children)
	}
	got := map[string]float64{}
	for _, c := range update.Children {
		got[c.Label] = c.MeanNS
	}
	var mean float64
	for _, w := range waits {
		mean += float64(w.to-w.from) / 2
	}
	mean /= float64(len(waits))
	if math.Abs(got["hold (waker)"]-mean) > 1 || math.Abs(got["relay (waker)"]-mean) > 1 {
		t.Errorf("update's children %v: want hold (waker) and relay (waker) each %.0f ns", got, mean)
	}
	if f := factor(r, "hold (waker)"); f == nil || f.Function() != "hold" {
		t.Errorf("hold (waker) factor %+v: want it to stand for hold", f)
	}
	if r.States["lock"] == 0 || math.Abs(r.States["lock"]+r.States["on-cpu"]-r.Mean) > 1 {
		t.Errorf("states %v, mean %v", r.States, r.Mean)
	}
}

// --attach: a call on a third thread with the interval's key joins it,
// and the calls made inside it are the interval's.
func TestAttachJoinsInterval(t *testing.T) {
	in := Input{Spec: Spec{Start: "submit", End: "complete", Key: "id"},
		Probes: []Probe{{Function: "submit", Params: []string{"id:i4:int"}}, {Function: "complete", Params: []string{"id:i4:int"}},
			{Function: "work", Params: []string{"id:i4:int"}}, {Function: "slow"}}}
	for i := range 100 {
		s := uint64(i) * 100000
		slow := uint64(1000 + (i%4)*20000)
		in.Calls = append(in.Calls,
			Call{Start: s, End: s + 100, TID: 1, Probe: 0, Args: []uint64{uint64(i)}},
			Call{Start: s + 200, End: s + 400 + slow, TID: 3, Probe: 2, Args: []uint64{uint64(i)}},
			Call{Start: s + 300, End: s + 300 + slow, TID: 3, Probe: 3},
			Call{Start: s + 500 + slow, End: s + 600 + slow, TID: 2, Probe: 1, Args: []uint64{uint64(i)}})
	}
	r, err := Analyse(in)
	if err != nil {
		t.Fatal(err)
	}
	if factor(r, "slow") != nil {
		t.Errorf("slow is a factor without --attach")
	}
	in.Spec.Attach = "work"
	if r, err = Analyse(in); err != nil {
		t.Fatal(err)
	}
	if r.Intervals != 100 || r.Factors[0].Label() != "slow" || r.Factors[0].Contribution < 0.99 {
		t.Errorf("%d intervals, factors %v: want 100 and slow first with all the variance", r.Intervals, labels(r.Factors))
	}
	in.Spec.Attach = "nosuch"
	if _, err := Analyse(in); err == nil {
		t.Error("an attach function that was not traced was accepted")
	}
}

// A key over a char * parameter pairs by the recorded string, not by its
// address.
func TestKeyOverString(t *testing.T) {
	in := Input{Spec: Spec{Start: "begin", End: "finish", Key: "name"},
		Probes: []Probe{{Function: "begin", Params: []string{"name:s8:char *"}}, {Function: "finish", Params: []string{"n:i4:int", "name:s8:const char *"}}}}
	for i := range 20 {
		s := uint64(i) * 10000
		name := []string{"alpha", "beta"}[i%2] + string(rune('a'+i))
		in.Calls = append(in.Calls,
			Call{Start: s, End: s + 100, TID: 1, Probe: 0, Args: []uint64{0x1000 + uint64(i)}, Strs: []string{name}},
			Call{Start: s + 500 + uint64(i)*10, End: s + 600 + uint64(i)*10, TID: 2, Probe: 1, Args: []uint64{7, 0x9000 + uint64(i)}, Strs: []string{name}})
	}
	r, err := Analyse(in)
	if err != nil {
		t.Fatal(err)
	}
	if r.Intervals != 20 || r.Unpaired != 0 {
		t.Errorf("%d intervals, %d unpaired: want 20 and 0", r.Intervals, r.Unpaired)
	}
}

// Intervals overlapping a span when the probes were off are left out,
// and only those: their calls are incomplete (here, the slow child's
// calls during the pause are missing, as a removed probe would miss
// them).
func TestIntervalsInPausesLeftOut(t *testing.T) {
	in := synth(300, []string{"slow"}, func(i int) []uint64 { return []uint64{uint64(1000 + 10*i)} })
	// Pause from the middle of interval 100 to the middle of interval 199.
	var starts []uint64
	for _, c := range in.Calls {
		if c.Probe == 0 {
			starts = append(starts, c.Start)
		}
	}
	off := [2]uint64{starts[100] + 10, starts[199] + 10}
	kept := in.Calls[:0]
	for _, c := range in.Calls {
		if c.Probe == 1 && c.Start > off[0] && c.Start < off[1] {
			continue // not seen: the probe was off
		}
		kept = append(kept, c)
	}
	in.Calls = kept
	in.Off = [][2]uint64{off}
	r, err := Analyse(in)
	if err != nil {
		t.Fatal(err)
	}
	if r.Intervals != 200 || r.Outside != 100 || r.OffNS != off[1]-off[0] {
		t.Fatalf("%d intervals, %d left out, %d ns off; want 200, 100 (100 to 199), %d", r.Intervals, r.Outside, r.OffNS, off[1]-off[0])
	}
	// Every interval kept has its child: the body's variance is nil.
	if f := factor(r, "slow"); f == nil || f.Contribution < 0.99 {
		t.Errorf("slow holds %v of the variance, want all of it (no interval with a call missing)", f)
	}
	if len(r.Warnings) == 0 {
		t.Error("no warning says intervals were left out")
	}
}

// Calls the tracer dropped (its ring full) in a span: the intervals around
// them are left out, so the time of a missing call does not count as its
// caller's own.
func TestIntervalsWithLostCallsLeftOut(t *testing.T) {
	in := synth(300, []string{"slow"}, func(i int) []uint64 { return []uint64{uint64(1000 + 10*i)} })
	var starts []uint64
	for _, c := range in.Calls {
		if c.Probe == 0 {
			starts = append(starts, c.Start)
		}
	}
	// Two spans, inside intervals 50 and 120-121; slow's calls there were dropped.
	lost := [][2]uint64{{starts[50] + 1, starts[50] + 2}, {starts[120] + 5, starts[121] + 5}}
	kept := in.Calls[:0]
	for _, c := range in.Calls {
		if c.Probe == 1 && overlapsOff(lost, c.Start, c.End) {
			continue
		}
		kept = append(kept, c)
	}
	in.Calls = kept
	in.Lost = lost
	r, err := Analyse(in)
	if err != nil {
		t.Fatal(err)
	}
	if r.Intervals != 297 || r.LostOut != 3 {
		t.Fatalf("%d intervals, %d left out for lost calls; want 297, 3 (50, 120, 121)", r.Intervals, r.LostOut)
	}
	if f := factor(r, "slow"); f == nil || f.Contribution < 0.99 {
		t.Errorf("slow holds %v of the variance, want all of it (no interval with a call missing)", f)
	}
	if len(r.Warnings) == 0 || !strings.Contains(strings.Join(r.Warnings, "\n"), "dropped calls") {
		t.Errorf("no warning says intervals were left out for dropped calls: %q", r.Warnings)
	}
}

// A last round that saw no complete interval (the run ended just after
// refinement set its probes) gives the report of the round before it.
func TestLastRoundEmptyFallsBack(t *testing.T) {
	in := synth(100, []string{"a"}, func(i int) []uint64 { return []uint64{uint64(100 + i*i)} })
	last := in.Calls[len(in.Calls)-1].End + 1
	in.Probes[1].Since = last
	if _, err := Analyse(in); err == nil {
		t.Error("a live round with no interval was analysed (it should wait)")
	}
	in.Fallback = true
	r, err := Analyse(in)
	if err != nil {
		t.Fatal(err)
	}
	if r.Intervals != 100 || r.Since != 0 || len(r.Warnings) == 0 || !strings.Contains(r.Warnings[len(r.Warnings)-1], "round before") {
		t.Errorf("%d intervals from %d, warnings %q; want the first round's 100, said", r.Intervals, r.Since, r.Warnings)
	}
}

// A worker that takes the item up before its enqueue returned (woken
// inside it): the interval leaves the accepting thread at the dequeue's
// return, so accept and its enqueue count up to it, no time is counted on
// two threads at once, and other holds only the worker's time before its
// serve.
func TestQueueTakenInsideEnqueue(t *testing.T) {
	in := queueInput(300)
	for i := 0; i+4 < len(in.Calls); i += 5 {
		s := in.Calls[i].Start
		d := s + 250 // inside enqueue, s+100 … s+300
		work := in.Calls[i+4].End - in.Calls[i+4].Start
		in.Calls[i+2].Start, in.Calls[i+2].End = d-2000, d
		in.Calls[i+3].Start, in.Calls[i+3].End = d+50, d+150+work
		in.Calls[i+4].Start, in.Calls[i+4].End = d+100, d+100+work
	}
	r, err := Analyse(in)
	if err != nil {
		t.Fatal(err)
	}
	if r.Intervals != 300 {
		t.Fatalf("%d intervals", r.Intervals)
	}
	means := map[string]float64{}
	var walk func(n *TreeNode)
	walk = func(n *TreeNode) {
		if n.Kind == "variance" {
			means[n.Label] = n.MeanNS
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	var sum float64
	for _, c := range r.Tree.Children {
		walk(c)
		if c.Kind == "variance" {
			sum += c.MeanNS
		}
	}
	for label, want := range map[string]float64{"accept": 250, "other": 50} {
		if got, ok := means[label]; !ok || math.Abs(got-want) > 1 {
			t.Errorf("%s: mean %v ns, want %v; nodes %v", label, got, want, means)
		}
	}
	if got, ok := means["enqueue"]; ok && math.Abs(got-150) > 1 {
		t.Errorf("enqueue: mean %v ns, want 150 (its entry to the dequeue's return)", got)
	}
	if _, ok := means[QueueWait]; ok {
		t.Errorf("a queue wait node: the item was taken up inside the enqueue; nodes %v", means)
	}
	if math.Abs(sum-r.Mean) > 1 {
		t.Errorf("the root's children add up to %v ns, the intervals' mean is %v", sum, r.Mean)
	}
}

// Each interval's row holds its start, duration and time in each node by
// path, and the tree's figures follow from the rows: a function's factor
// is the variance of its column over the root's, its mean the column's.
func TestRowsMakeTheFactors(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	in := synth(200, []string{"slow", "steady"}, func(i int) []uint64 {
		return []uint64{1000 + uint64(rng.IntN(100000)), 5000 + uint64(rng.IntN(100))}
	})
	r, err := Analyse(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Rows) != r.Intervals {
		t.Fatalf("%d rows for %d intervals", len(r.Rows), r.Intervals)
	}
	var starts []uint64
	for _, c := range in.Calls {
		if c.Probe == 0 {
			starts = append(starts, c.Start)
		}
	}
	var slow, dur []float64
	for i, row := range r.Rows {
		c := in.Calls[3*i+2] // the root's call, after its two children
		if row.Start != starts[i] || row.Start != c.Start || row.Duration != c.End-c.Start {
			t.Fatalf("row %d: start %d, duration %d; the call %d-%d", i, row.Start, row.Duration, c.Start, c.End)
		}
		if len(row.Threads) != 1 || row.Threads[0] != 1 || row.Key != "" || len(row.Parts) != 2 {
			t.Fatalf("row %d: %+v", i, row)
		}
		if got, want := row.Parts["slow"], float64(in.Calls[3*i].End-in.Calls[3*i].Start); got != want {
			t.Fatalf("row %d: slow %v ns, the call's %v", i, got, want)
		}
		slow = append(slow, row.Parts["slow"])
		dur = append(dur, float64(row.Duration))
	}
	f := factor(r, "slow")
	share := variance(slow) / variance(dur)
	if math.Abs(share-f.Contribution) > 1e-9 || math.Abs(mean(slow)-f.MeanNS) > 1e-6 {
		t.Errorf("slow: %.6f of the variance, mean %.1f; from the rows %.6f, %.1f", f.Contribution, f.MeanNS, share, mean(slow))
	}
}

// A keyed interval's row carries the key that paired it and the threads
// of both its halves.
func TestRowsCarryKey(t *testing.T) {
	in := Input{Spec: Spec{Start: "submit", End: "complete", Key: "id"},
		Probes: []Probe{{Function: "submit", Params: []string{"id:i4:int"}}, {Function: "complete", Params: []string{"id:i4:int"}}}}
	for i := range 20 {
		s := uint64(i * 10000)
		wait := uint64(100 + (i%5)*500)
		in.Calls = append(in.Calls,
			Call{Start: s, End: s + 100, TID: 1, Probe: 0, Args: []uint64{uint64(100 + i)}},
			Call{Start: s + 100 + wait, End: s + 300 + wait, TID: 2, Probe: 1, Args: []uint64{uint64(100 + i)}})
	}
	r, err := Analyse(in)
	if err != nil {
		t.Fatal(err)
	}
	for i, row := range r.Rows {
		if want := fmt.Sprint(100 + i); row.Key != want || row.Start != uint64(i*10000) || len(row.Threads) != 2 {
			t.Errorf("row %d: key %q, start %d, threads %v; want key %s", i, row.Key, row.Start, row.Threads, want)
		}
	}
}

func mean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

func variance(x []float64) float64 {
	m, s := mean(x), 0.0
	for _, v := range x {
		s += (v - m) * (v - m)
	}
	return s / float64(len(x)-1)
}
