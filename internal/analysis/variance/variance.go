// Package variance is VProfiler's variance analysis (Huang et al. 2017;
// the algorithms as repaired in the project's notes, vprof-vprofiler.md
// Part B) over traced calls: semantic intervals defined by a start and an
// end function (and optionally a key that pairs them across threads), the
// (interval, function, time) table with each function's body and the
// interval's `other`, the variance tree Var(parent) = Σ Var(children) +
// Var(body) + 2 Σ Cov, and factors ranked by Equation 4 with specificity
// squared. Variances and covariances are gonum's (unbiased, n−1). It reads
// calls and probes handed in, never files or the kernel.
package variance

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"sort"
	"strings"

	"gonum.org/v1/gonum/stat"

	"github.com/culprit-dev/culprit/internal/elfx"
	"github.com/culprit-dev/culprit/internal/expr"
	"github.com/culprit-dev/culprit/internal/recording"
)

// Spec defines the semantic interval.
type Spec struct {
	Start string // the function whose entry starts an interval
	End   string // the function whose return ends it (Start again: each call is an interval)
	// Key, when set, is an expression over the integer parameters of
	// Start and End (as their DWARF names them); a start and an end with
	// the same value are one interval, on whichever threads they ran.
	Key string
	// Attach, with Key, is a function whose calls join the interval
	// whose key they have (Key over its parameters) when entered while
	// that interval is open, up to their return or the interval's end: a
	// worker's call that takes the request up.
	Attach string
	// Enqueue and Dequeue, when set, are a queue's two ends: an interval
	// starts on one thread (Start), whose next Enqueue hands its item to
	// the thread whose Dequeue returns it (a created-by edge), and ends at
	// the return of that thread's next End call. QueueKey pairs the two
	// calls: "EXPR" over both functions' parameters, or "EXPR:EXPR", the
	// first over Enqueue's parameters, the second over Dequeue's with
	// `return` its return value; empty pairs them in order (the n-th
	// item enqueued is the n-th dequeued: a FIFO queue, empty when
	// tracing began).
	Enqueue, Dequeue, QueueKey string
}

// QueueWait labels the node of an interval's time in a queue: from the
// return of the Enqueue that handed its item over to the return of the
// Dequeue that took it.
const QueueWait = "queue wait"

// Segment is a stretch of one thread's time on a critical path.
type Segment struct {
	TID      uint32
	From, To uint64
	State    string // the thread's own state ("on-cpu", "runnable", "sleep", "queued", ...)
	// For is, when the segment stands for another thread's wait, that
	// thread (the one the segment's thread woke), Wait its state ("lock",
	// "io", "sleep"); 0 and "" on the interval's own threads.
	For  uint32
	Wait string
}

// Handoff is a created-by edge: work handed over by thread FromTID at
// From and taken up by thread ToTID at To.
type Handoff struct {
	FromTID uint32
	From    uint64
	ToTID   uint32
	To      uint64
}

// WakerSuffix marks a node of the tree that is a function another thread
// ran while the interval waited on it.
const WakerSuffix = " (waker)"

// Probe is a traced function.
type Probe struct {
	Function string
	// Since is when it was set (ns, the calls' clock); 0: from the start.
	Since uint64
	// Params are the recorded arguments, "name:code:type" (see
	// recording.Probe), for Key.
	Params []string
	// Ret is the return value's "code:type" ("" when not recorded).
	Ret string
}

// Call is one traced call.
type Call struct {
	Start, End uint64
	// TID is the thread that made it or, in a Go program, its goroutine
	// (GoroutineLane and a number for each goroutine: Input.Goroutines).
	TID   uint32
	Probe int   // index into Input.Probes
	Site  int64 // identifies the call site (0: unknown)
	Args  []uint64
	Ret   uint64
	// Strs are the strings of the probe's first char * parameters (see
	// recording.Call), for a key over them.
	Strs []string
	// Unreturned: the call left without returning, or was open when
	// tracing stopped; its end is an upper bound, so it never starts or
	// ends an interval.
	Unreturned bool
	// Point is the hit of a point probe (a USDT probe) or a call of a
	// marker function (GoMarks): it marks an interval and is not a node
	// of the tree.
	Point bool
}

// GoMarks is the prefix of the marker functions of the Go package
// github.com/culprit-dev/culprit/interval (Start, End), whose calls are
// marks like USDT probes'.
const GoMarks = "github.com/culprit-dev/culprit/interval."

// IsMark reports whether a call of the traced function fn is a mark.
func IsMark(fn string, point bool) bool { return point || strings.HasPrefix(fn, GoMarks) }

// Input is what the analysis reads.
type Input struct {
	Spec   Spec
	Probes []Probe
	Calls  []Call
	// Goroutines: the calls are placed by goroutine, not by thread (a Go
	// program's); the scheduler's states, by thread, do not apply to them.
	Goroutines bool
	// Go are the parks and wake-ups of a Go program's goroutines, from
	// the probes on the runtime's scheduler (GoSchedFuncs); nil when none.
	Go *GoSched
	// Fallback: when the last round of probes saw fewer than 2 complete
	// intervals (a run that ended just after refinement), report the
	// round before it instead (a final report; a live round waits).
	Fallback bool
	// upTo > 0 leaves out the probes set after it (and their calls).
	upTo uint64
	// Off are spans when every probe was removed (the tracer's trap
	// budget): an interval overlapping one is left out, its calls
	// incomplete.
	Off [][2]uint64
	// Lost are spans in which the tracer dropped calls (ring full, nested
	// too deep): an interval overlapping one may lack some of its calls,
	// whose time would count as its callers' own, so it is left out too.
	Lost [][2]uint64
	// Heights are the functions' heights in the program's static call
	// graph (the longest chain of calls below them; a leaf is 0). Missing
	// functions are leaves; nil uses the heights of the observed tree.
	Heights map[string]int
	// SiteName names a call site for the report (nil: sites unnamed).
	SiteName func(int64) string
	// States, when set, splits a thread's time from..to by scheduler
	// state ("on-cpu", "runnable", "lock", "io", "sleep", ...), ns each.
	States func(tid uint32, from, to uint64) map[string]uint64
	// Path, when set, is the critical path of a span (VProfiler's
	// Algorithm 2 over the kernel's wake-ups, with the queue's hand-offs as
	// created-by edges) that ends on thread endTID at end, back to from:
	// segments in time order covering [from, end] exactly. It splits the
	// intervals' time by state, and the calls of a thread whose segment
	// stands for a wait of the interval (the lock holder while the
	// interval waited on the lock) become nodes of the tree under the
	// waiting call, named "F (waker)".
	Path func(from uint64, endTID uint32, end uint64, handoffs []Handoff) []Segment
	// Holders, when set, gives the time a thread spent blocked on a lock
	// from..to by the thread whose release ended each wait ("name[tid]"),
	// and a Go program's waits on its runtime's timers and network poller
	// by source ("(timer)", "(netpoll) fd N").
	Holders func(tid uint32, from, to uint64) map[string]uint64
	// Spans, when set, keeps each interval's span and critical path in
	// Result.Spans (for drawing them).
	Spans bool
	K     int     // factors selected (default 3)
	D     float64 // least contribution of a selected factor, a fraction of the root variance (default 0.05)
}

// Result is the analysis of one round of probes.
type Result struct {
	Spec      Spec    `json:"interval"`
	Intervals int     `json:"intervals"`
	Unpaired  int     `json:"unpaired"` // starts or ends without their other half
	Mean      float64 `json:"mean_ns"`
	Variance  float64 `json:"variance_ns2"`
	StdDev    float64 `json:"stddev_ns"`
	P50       float64 `json:"p50_ns"`
	P99       float64 `json:"p99_ns"`
	P999      float64 `json:"p999_ns"`
	// States splits the intervals' mean by scheduler state, when the
	// recording has scheduler events (a keyed interval's time between its
	// threads along the critical path, by the wait it stands for).
	States map[string]float64 `json:"states,omitempty"`
	// Rounds is how many times probes were set (VProfiler's runs); the
	// analysis uses the intervals of the last round, which had them all.
	Rounds int `json:"rounds"`
	// Since is when the last round's probes were set (ns, the calls'
	// clock; 0: before the command started): its intervals began after.
	Since uint64 `json:"round_start_ns"`
	// Off are the spans when the probes were off (Input.Off); Outside
	// counts the intervals left out for overlapping one, OffNS is their
	// total.
	Off     [][2]uint64 `json:"probes_off,omitempty"`
	Outside int         `json:"outside_windows,omitempty"`
	OffNS   uint64      `json:"probes_off_ns,omitempty"`
	// LostOut counts the intervals left out for overlapping a span in
	// which the tracer dropped calls (Input.Lost).
	LostOut int `json:"lost_calls_intervals,omitempty"`
	Probes  int `json:"probes"`
	Height  int `json:"tree_height"`  // levels of the variance tree below its root
	Breadth int `json:"tree_breadth"` // factors under the widest node
	// Top is the root's height, H of the specificity (H − h)².
	Top int `json:"-"`
	// Factors are the selected factors (Algorithm 1: top K by score,
	// those over D); Ranked every factor by score.
	Factors []*Factor `json:"factors"`
	Ranked  []*Factor `json:"ranked"`
	Tree    *TreeNode `json:"tree"`
	// Warnings are what the user should know about the result.
	Warnings []string `json:"warnings,omitempty"`
	// Spans are the intervals, in start order, with Input.Spans.
	Spans []Span `json:"-"`
	// Rows are the intervals one by one, in start order: the rows of the
	// (interval, node, time) table the tree is computed from, for
	// per-request figures (VProfiler's per-transaction data) and for
	// pairing the intervals with a program's own account of its requests.
	Rows []Row `json:"rows"`
}

// Row is one interval of the table: when it started, how long it took,
// and its time in each node of the tree.
type Row struct {
	// Start is its start (ns, the calls' clock: CLOCK_MONOTONIC, what a
	// program reads with clock_gettime), Duration its latency.
	Start    uint64 `json:"start_ns"`
	Duration uint64 `json:"duration_ns"`
	// Key is the value of --key that paired its start and end (or of
	// --queue-key that paired its queue's two ends), as the expression
	// printed it.
	Key string `json:"key,omitempty"`
	// Threads are the threads whose time is the interval's (the one it
	// started on first); a Go program's goroutines by their ids as the
	// runtime's stack dump prints them, when known (with --sched).
	Threads    []uint32 `json:"threads,omitempty"`
	Goroutines []uint64 `json:"goroutines,omitempty"`
	// Parts is its time in each node of the tree, ns, by the node's
	// calling path below the root as a factor's sites name it ("parse",
	// "parse > lookup", "main.await > main.work (waker)"); a node it did
	// not reach is left out. A node's body is its time minus its
	// children's, the interval's "other" its duration minus its top
	// nodes'.
	Parts map[string]float64 `json:"parts_ns"`
	// States splits its duration by scheduler state along its critical
	// path, ns, when the recording has scheduler events.
	States map[string]uint64 `json:"states,omitempty"`
}

// Span is one interval as it ran.
type Span struct {
	Start, End uint64
	// Threads are the threads whose time is the interval's, the one it
	// started on first and the one it ended on last.
	Threads []uint32
	// Queue is, for an interval handed across a queue, the span of its
	// queue wait (zero otherwise).
	Queue [2]uint64
	// Path is its critical path, when the recording has scheduler events.
	Path []Segment
}

// Factor is a variance or a covariance, summed over the places of the
// tree where it occurs.
type Factor struct {
	Kind string `json:"kind"` // "variance" or "covariance"
	// Names are the function (one, or two for a covariance); a body is
	// named "F (self)", the interval's own time outside probed calls
	// "other".
	Names        []string `json:"names"`
	Contribution float64  `json:"contribution"` // fraction of the root variance (covariances: 2·Cov)
	Height       int      `json:"height"`
	Specificity  float64  `json:"specificity"`
	Score        float64  `json:"score"`
	MeanNS       float64  `json:"mean_ns"` // mean time per interval (variances)
	// Leaf is set for a function with no callees in the call graph, a
	// body or other: nothing to break down.
	Leaf  bool    `json:"leaf"`
	Sites []*Site `json:"sites"`
	// States splits MeanNS by scheduler state (on-cpu, runnable, lock,
	// io, sleep, ...), mean ns per interval, when the recording has them.
	States map[string]float64 `json:"states,omitempty"`
	// Holders splits its lock waits by the thread whose release ended
	// them ("name[tid]"), and a Go program's waits on timers and the
	// network poller by source ("(netpoll) fd 7"), mean ns per interval,
	// with scheduler events.
	Holders map[string]float64 `json:"lock_holders,omitempty"`
	fn      string             // the function a variance factor can be broken into
}

// Label names the factor: "f", "f (self)", "(f, g)".
func (f *Factor) Label() string {
	if len(f.Names) == 2 {
		return "(" + f.Names[0] + ", " + f.Names[1] + ")"
	}
	return f.Names[0]
}

// Function is the probed function a variance factor stands for, "" for
// bodies, other and covariances.
func (f *Factor) Function() string { return f.fn }

// Site is one place of the tree where a factor occurs: the calling path.
type Site struct {
	Letter       string  `json:"letter"` // A, B, ... when there are several
	Path         string  `json:"path"`   // the calling chain from the root, e.g. "handle > parse @ server.c:42"
	Contribution float64 `json:"contribution"`
}

// TreeNode is a node of the variance tree.
type TreeNode struct {
	Kind         string             `json:"kind"` // variance, covariance
	Label        string             `json:"label"`
	Site         string             `json:"site,omitempty"` // where it was called from, when known
	Contribution float64            `json:"contribution"`
	Variance     float64            `json:"variance_ns2"` // Var, or Cov for covariances
	MeanNS       float64            `json:"mean_ns"`
	States       map[string]float64 `json:"states,omitempty"` // MeanNS by scheduler state
	Children     []*TreeNode        `json:"children,omitempty"`
}

// node is a calling path of the observed call tree: the function called
// at a site from its parent node. Node 0 is the interval.
type node struct {
	parent   int
	fn       string // its label: the function, "F (waker)", the queue wait
	probe    string // the function it times ("" for the queue wait)
	pseudo   bool   // not a function: the queue wait
	site     int64
	children map[[2]int64]int // (probe name index, site) → node
	kids     []int
}

type interval struct {
	start, end uint64
	windows    []window
	key        string // the key that paired its start and end ("" without)
	// queue is, for an interval handed across a queue, the span from
	// its Enqueue's return to its Dequeue's.
	queue [2]uint64
}

// window is a span of one thread that belongs to an interval: calls
// inside it nest under the interval's root (skipping the call that is the
// root itself, for Start == End).
type window struct {
	tid        uint32
	start, end uint64
	skip       int // index of the root call, -1 none
	// cut, when not 0, is where the interval left this thread before the
	// window's end (a queue's item taken up by another thread while its
	// enqueue had not returned): the window's calls count up to it, so
	// that no time is counted on two threads at once.
	cut uint64
}

// counted is where the time the window counts ends: its cut, else its end.
func (w window) counted() uint64 {
	if w.cut > 0 && w.cut < w.end {
		return w.cut
	}
	return w.end
}

// Analyse builds the intervals, the variance tree and the factors.
func Analyse(in Input) (*Result, error) {
	if in.K <= 0 {
		in.K = 3
	}
	if in.D == 0 {
		in.D = 0.05
	}
	if in.Spec.Start == "" || in.Spec.End == "" {
		return nil, fmt.Errorf("no interval: name its start and end functions")
	}
	res := &Result{Spec: in.Spec}
	var cut uint64
	sinces := map[uint64]bool{}
	startP, endP := map[int]bool{}, map[int]bool{}
	enqP, deqP := map[int]bool{}, map[int]bool{}
	for i, p := range in.Probes {
		if named(p.Function, in.Spec.Enqueue) {
			enqP[i] = true
		}
		if named(p.Function, in.Spec.Dequeue) {
			deqP[i] = true
		}
		sinces[p.Since] = true
		if in.upTo == 0 || p.Since <= in.upTo {
			cut = max(cut, p.Since)
		}
		if named(p.Function, in.Spec.Start) {
			startP[i] = true
		}
		if named(p.Function, in.Spec.End) {
			endP[i] = true
		}
	}
	res.Rounds = len(sinces)
	res.Since = cut
	res.Probes = len(in.Probes)
	if len(startP) == 0 {
		return nil, fmt.Errorf("%s was not traced: no interval starts", in.Spec.Start)
	}
	if len(endP) == 0 {
		return nil, fmt.Errorf("%s was not traced: no interval ends", in.Spec.End)
	}
	if in.Spec.Enqueue != "" && (len(enqP) == 0 || len(deqP) == 0) {
		return nil, fmt.Errorf("%s or %s was not traced: no hand-offs across the queue", in.Spec.Enqueue, in.Spec.Dequeue)
	}
	calls := slices.Clone(in.Calls)
	if in.upTo > 0 {
		calls = slices.DeleteFunc(calls, func(c Call) bool { return in.Probes[c.Probe].Since > in.upTo })
	}
	slices.SortFunc(calls, func(a, b Call) int {
		if c := cmp.Compare(a.TID, b.TID); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Start, b.Start); c != 0 {
			return c
		}
		return cmp.Compare(b.End, a.End) // outer first
	})
	var ivs []interval
	var unpaired int
	var err error
	if in.Spec.Enqueue != "" {
		ivs, unpaired, err = queueIntervals(in, calls, startP, endP, enqP, deqP, cut)
	} else {
		ivs, unpaired, err = intervals(in, calls, startP, endP, cut)
	}
	if err != nil {
		return nil, err
	}
	res.Unpaired = unpaired
	if len(in.Off) > 0 {
		ivs, res.Outside = leaveOut(ivs, in.Off)
		res.Off = in.Off
		for _, o := range in.Off {
			res.OffNS += o[1] - o[0]
		}
		res.Warnings = append(res.Warnings, fmt.Sprintf("the probes were off for %s in %d pauses, to keep their traps within budget: the %d intervals that overlapped a pause were left out",
			fmtNS(res.OffNS), len(in.Off), res.Outside))
	}
	if ivs, res.LostOut = leaveOut(ivs, in.Lost); res.LostOut > 0 {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the tracer dropped calls (its ring was full, or they nested too deep) at %d moments: the %d intervals around them were left out, as their functions' times would be wrong", len(in.Lost), res.LostOut))
	}
	res.Intervals = len(ivs)
	if len(ivs) < 2 {
		// A run that ended soon after refinement set its last probes: the
		// round before, with the probes it had, is the report.
		var prev uint64
		for s := range sinces {
			if s < cut && s >= prev {
				prev = s
			}
		}
		if in.Fallback && prev < cut && len(sinces) > 1 {
			before := in
			before.upTo = max(prev, 1)
			if r, err := Analyse(before); err == nil {
				r.Warnings = append(r.Warnings, fmt.Sprintf("the last round of probes saw %d complete intervals: this is the round before it, without the %d functions the last one added", len(ivs), countAfter(in.Probes, before.upTo)))
				return r, nil
			}
		}
		return res, fmt.Errorf("%d complete intervals from %s to %s: too few for a variance", len(ivs), in.Spec.Start, in.Spec.End)
	}
	// The (interval, node, time) table.
	rootName := "interval"
	if in.Spec.Start == in.Spec.End && in.Spec.Key == "" {
		rootName = in.Spec.Start
	}
	nodes := []*node{{parent: -1, fn: rootName, probe: rootName, children: map[[2]int64]int{}}}
	fnIdx := map[string]int64{}
	child := func(parent int, fn, probe string, site int64, pseudo bool) int {
		fi, ok := fnIdx[fn]
		if !ok {
			fi = int64(len(fnIdx))
			fnIdx[fn] = fi
		}
		k := [2]int64{fi, site}
		if id, ok := nodes[parent].children[k]; ok {
			return id
		}
		id := len(nodes)
		nodes = append(nodes, &node{parent: parent, fn: fn, probe: probe, site: site, pseudo: pseudo, children: map[[2]int64]int{}})
		nodes[parent].children[k] = id
		nodes[parent].kids = append(nodes[parent].kids, id)
		return id
	}
	byTID := map[uint32][]int{} // thread → its calls' indexes, in order
	for i, c := range calls {
		byTID[c.TID] = append(byTID[c.TID], i)
	}
	table := make([]map[int]float64, len(ivs))
	states := map[int]map[string]float64{}  // node → state → ns over every interval
	holders := map[int]map[string]float64{} // node → lock holder → ns of lock wait
	addHolders := func(id int, h map[string]uint64) {
		if len(h) == 0 {
			return
		}
		m := holders[id]
		if m == nil {
			m = map[string]float64{}
			holders[id] = m
		}
		for k, v := range h {
			m[k] += float64(v)
		}
	}
	addStates := func(id int, st map[string]uint64) {
		if len(st) == 0 {
			return
		}
		m := states[id]
		if m == nil {
			m = map[string]float64{}
			states[id] = m
		}
		for k, v := range st {
			m[k] += float64(v)
		}
	}
	// The interval's calls placed in the tree, and the longest call of
	// each thread (to find the calls overlapping a time).
	type placedCall struct {
		tid        uint32
		start, end uint64
		node       int
	}
	var placed []placedCall
	longest := map[uint32]uint64{}
	for _, c := range calls {
		longest[c.TID] = max(longest[c.TID], c.End-c.Start)
	}
	var row map[int]float64
	// wakers charges the calls a thread made while it stood on the
	// critical path for a wait of the interval to nodes "F (waker)" under
	// the innermost call that waited (the root when none did), nested as
	// they were called, each with the time it overlapped the segment; a
	// wait a Go runtime's source ended (a timer, the network poller) to a
	// node "(timer)", "(netpoll)" there.
	wakers := func(path []Segment, own map[uint32]bool) {
		for _, sg := range path {
			if sg.For == 0 || sg.TID == sg.For {
				continue
			}
			// The interval's thread whose wait the segment stands for:
			// a waker that was itself blocked stands, through its own
			// waker's segments, for the thread it woke next.
			waiter := sg.For
			for range 64 {
				if own[waiter] {
					break
				}
				next := uint32(0)
				for _, o := range path {
					if o.TID == waiter && o.For != 0 && o.To >= sg.To {
						next = o.For
						break
					}
				}
				if next == 0 {
					break
				}
				waiter = next
			}
			parent := 0
			var inner uint64 = math.MaxUint64
			for _, pc := range placed {
				if pc.tid == waiter && pc.start <= sg.From && pc.end >= sg.To && pc.end-pc.start < inner {
					parent, inner = pc.node, pc.end-pc.start
				}
			}
			if IsRuntimeLane(sg.TID) {
				// A wait the Go runtime's timer or network poller ended:
				// a node of its own under the call that waited.
				id := child(parent, LaneName(sg.TID), "", 0, true)
				row[id] += float64(sg.To - sg.From)
				st := sg.Wait
				if st == "" {
					st = sg.State
				}
				addStates(id, map[string]uint64{st: sg.To - sg.From})
				if in.Holders != nil {
					addHolders(id, in.Holders(sg.For, sg.From, sg.To))
				}
				continue
			}
			idx := byTID[sg.TID]
			lo := uint64(0)
			if sg.From > longest[sg.TID] {
				lo = sg.From - longest[sg.TID]
			}
			first := sort.Search(len(idx), func(i int) bool { return calls[idx[i]].Start >= lo })
			var stack []struct {
				end  uint64
				node int
			}
			for _, ci := range idx[first:] {
				c := calls[ci]
				if c.Start >= sg.To {
					break
				}
				from, to := max(c.Start, sg.From), min(c.End, sg.To)
				if to <= from || c.Unreturned {
					continue
				}
				for len(stack) > 0 && stack[len(stack)-1].end < c.End {
					stack = stack[:len(stack)-1]
				}
				p := parent
				if len(stack) > 0 {
					p = stack[len(stack)-1].node
				}
				fn := in.Probes[c.Probe].Function
				id := child(p, fn+WakerSuffix, fn, c.Site, false)
				row[id] += float64(to - from)
				if in.States != nil {
					st := map[string]uint64{}
					for k, v := range in.States(c.TID, from, to) {
						st[k] = v
					}
					addStates(id, st)
				}
				stack = append(stack, struct {
					end  uint64
					node int
				}{c.End, id})
			}
		}
	}
	if in.Spans {
		res.Spans = make([]Span, len(ivs))
		for n, iv := range ivs {
			sp := Span{Start: iv.start, End: iv.end, Queue: iv.queue}
			for _, w := range iv.windows {
				if !slices.Contains(sp.Threads, w.tid) {
					sp.Threads = append(sp.Threads, w.tid)
				}
			}
			res.Spans[n] = sp
		}
	}
	durations := make([]float64, len(ivs))
	rowStates := make([]map[string]uint64, len(ivs))
	for n, iv := range ivs {
		row = map[int]float64{0: float64(iv.end - iv.start)}
		durations[n] = float64(iv.end - iv.start)
		if in.States != nil && in.Path == nil {
			for _, w := range iv.windows {
				addStates(0, in.States(w.tid, w.start, w.counted()))
			}
		}
		placed = placed[:0]
		for _, w := range iv.windows {
			idx := byTID[w.tid]
			first := sort.Search(len(idx), func(i int) bool { return calls[idx[i]].Start >= w.start })
			var stack []struct {
				end  uint64
				node int
			}
			for _, ci := range idx[first:] {
				c := calls[ci]
				if c.Start > w.end {
					break
				}
				if ci == w.skip || c.End > w.end || c.Point || (w.cut > 0 && c.Start >= w.cut) {
					continue
				}
				for len(stack) > 0 && stack[len(stack)-1].end < c.End {
					stack = stack[:len(stack)-1]
				}
				parent := 0
				if len(stack) > 0 {
					parent = stack[len(stack)-1].node
				}
				fn := in.Probes[c.Probe].Function
				id := child(parent, fn, fn, c.Site, false)
				end := min(c.End, w.counted())
				placed = append(placed, placedCall{c.TID, c.Start, end, id})
				row[id] += float64(end - c.Start)
				if in.States != nil {
					addStates(id, in.States(c.TID, c.Start, end))
				}
				if in.Holders != nil {
					addHolders(id, in.Holders(c.TID, c.Start, end))
				}
				stack = append(stack, struct {
					end  uint64
					node int
				}{c.End, id})
			}
		}
		if q := iv.queue[1] - iv.queue[0]; q > 0 {
			id := child(0, QueueWait, "", 0, true)
			row[id] += float64(q)
			if in.States != nil {
				st := map[string]uint64{"queued": q}
				if in.Path == nil {
					addStates(0, st)
				}
				addStates(id, st)
			}
		}
		if in.Path != nil {
			// The thread that ended it: its window ends with it.
			last := iv.windows[len(iv.windows)-1]
			for _, w := range iv.windows {
				if w.end == iv.end {
					last = w
				}
			}
			var hs []Handoff
			if iv.queue[1] > 0 {
				hs = []Handoff{{FromTID: iv.windows[0].tid, From: iv.queue[0], ToTID: last.tid, To: iv.queue[1]}}
			}
			path := in.Path(iv.start, last.tid, iv.end, hs)
			if in.Spans {
				res.Spans[n].Path = path
			}
			st := map[string]uint64{}
			for _, sg := range path {
				k := sg.State
				if sg.Wait != "" {
					k = sg.Wait
				}
				st[k] += sg.To - sg.From
			}
			if in.States != nil {
				addStates(0, st)
			}
			rowStates[n] = st
			own := map[uint32]bool{}
			for _, w := range iv.windows {
				own[w.tid] = true
			}
			wakers(path, own)
		}
		table[n] = row
	}
	col := func(id int) []float64 {
		x := make([]float64, len(table))
		for i, r := range table {
			x[i] = r[id]
		}
		return x
	}
	res.Mean, res.Variance = stat.MeanVariance(durations, nil)
	res.StdDev = math.Sqrt(res.Variance)
	sorted := slices.Clone(durations)
	slices.Sort(sorted)
	res.P50 = stat.Quantile(0.5, stat.Empirical, sorted, nil)
	res.P99 = stat.Quantile(0.99, stat.Empirical, sorted, nil)
	res.P999 = stat.Quantile(0.999, stat.Empirical, sorted, nil)
	if res.Variance == 0 {
		return res, fmt.Errorf("the %d intervals all took the same time: no variance to explain", len(ivs))
	}

	// Heights: the static call graph's, else the observed tree's.
	heights := in.Heights
	if heights == nil {
		heights = map[string]int{}
		var h func(id int) int
		h = func(id int) int {
			m := 0
			for _, k := range nodes[id].kids {
				m = max(m, h(k)+1)
			}
			if id != 0 && nodes[id].probe != "" {
				heights[nodes[id].probe] = max(heights[nodes[id].probe], m)
			}
			return m
		}
		h(0)
	}
	top := 0 // the height of the root
	if rootName != "interval" {
		top = heights[rootName]
	}
	for _, k := range nodes[0].kids {
		top = max(top, heights[nodes[k].probe]+1)
	}

	nIv := float64(len(ivs))
	meanStates := func(id int) map[string]float64 {
		if states[id] == nil {
			return nil
		}
		m := map[string]float64{}
		for k, v := range states[id] {
			m[k] = v / nIv
		}
		return m
	}
	bodyStates := func(id int) map[string]float64 {
		m := meanStates(id)
		if m == nil {
			return nil
		}
		for _, k := range nodes[id].kids {
			for st, v := range meanStates(k) {
				m[st] -= v
			}
		}
		for st, v := range m {
			if v <= 0 {
				delete(m, st)
			}
		}
		return m
	}
	res.States = meanStates(0)

	V := res.Variance
	factors := map[string]*Factor{}
	addFactor := func(kind string, names []string, fn string, height int, contri, mean float64, leaf bool, path string, st map[string]float64, hold map[string]float64) {
		key := kind + "\x00" + strings.Join(names, "\x00")
		f := factors[key]
		if f == nil {
			spec := float64(max(top-height, 0))
			f = &Factor{Kind: kind, Names: names, Height: height, Specificity: spec * spec, Leaf: leaf, fn: fn}
			factors[key] = f
		}
		f.Contribution += contri
		f.MeanNS += mean
		for k, v := range st {
			if f.States == nil {
				f.States = map[string]float64{}
			}
			f.States[k] += v
		}
		for k, v := range hold {
			if f.Holders == nil {
				f.Holders = map[string]float64{}
			}
			f.Holders[k] += v / nIv
		}
		f.Sites = append(f.Sites, &Site{Path: path, Contribution: contri})
	}
	siteName := func(site int64) string {
		if in.SiteName == nil || site == 0 {
			return ""
		}
		return in.SiteName(site)
	}
	pathOf := func(id int) string {
		var parts []string
		for ; id > 0; id = nodes[id].parent {
			s := nodes[id].fn
			if in.SiteName != nil && nodes[id].site != 0 {
				if n := in.SiteName(nodes[id].site); n != "" {
					s += " @ " + n
				}
			}
			parts = append(parts, s)
		}
		slices.Reverse(parts)
		return strings.Join(parts, " > ")
	}
	breadth, height := 0, 0
	var build func(id int, x []float64, depth int) *TreeNode
	build = func(id int, x []float64, depth int) *TreeNode {
		n := nodes[id]
		mean, v := stat.MeanVariance(x, nil)
		tn := &TreeNode{Kind: "variance", Label: n.fn, Site: siteName(n.site), Variance: v, Contribution: v / V, MeanNS: mean}
		tn.States = meanStates(id)
		if len(n.kids) == 0 {
			return tn
		}
		height = max(height, depth+1)
		type part struct {
			label, fn string
			disp      string // the label, with the call site when a sibling has the same
			id        int    // -1: the body
			x         []float64
			h         int
		}
		var parts []part
		body := slices.Clone(x)
		for _, k := range n.kids {
			ck := col(k)
			for i := range body {
				body[i] -= ck[i]
			}
			parts = append(parts, part{label: nodes[k].fn, fn: nodes[k].probe, id: k, x: ck, h: heights[nodes[k].probe]})
		}
		bodyLabel := n.fn + " (self)"
		if id == 0 {
			bodyLabel = "other"
		}
		parts = append(parts, part{label: bodyLabel, id: -1, x: body})
		m := len(parts)
		same := map[string]int{}
		for _, p := range parts {
			same[p.label]++
		}
		for i := range parts {
			parts[i].disp = parts[i].label
			if parts[i].id >= 0 && same[parts[i].label] > 1 {
				if sn := siteName(nodes[parts[i].id].site); sn != "" {
					parts[i].disp += " @ " + sn
				}
			}
		}
		breadth = max(breadth, m+m*(m-1)/2)
		for _, p := range parts {
			var c *TreeNode
			if p.id >= 0 {
				c = build(p.id, p.x, depth+1)
				leaf := in.Heights != nil && heights[p.fn] == 0 || in.Heights == nil && len(nodes[p.id].kids) == 0
				c.States = meanStates(p.id)
				fn := p.fn
				if nodes[p.id].pseudo {
					leaf = true
				}
				addFactor("variance", []string{p.label}, fn, p.h, c.Contribution, c.MeanNS, leaf, pathOf(p.id), c.States, holders[p.id])
			} else {
				bm, bv := stat.MeanVariance(p.x, nil)
				c = &TreeNode{Kind: "variance", Label: p.label, Variance: bv, Contribution: bv / V, MeanNS: bm}
				path := pathOf(id)
				if path == "" {
					path = rootName
				}
				c.States = bodyStates(id)
				addFactor("variance", []string{p.label}, "", 0, c.Contribution, bm, true, path, c.States, nil)
			}
			tn.Children = append(tn.Children, c)
		}
		for i := 0; i < m; i++ {
			for j := i + 1; j < m; j++ {
				cv := stat.Covariance(parts[i].x, parts[j].x, nil)
				a, b := parts[i], parts[j]
				names := []string{a.label, b.label}
				disp := []string{a.disp, b.disp}
				if names[0] > names[1] {
					names[0], names[1] = names[1], names[0]
					disp[0], disp[1] = disp[1], disp[0]
				}
				tn.Children = append(tn.Children, &TreeNode{Kind: "covariance", Label: "(" + disp[0] + ", " + disp[1] + ")",
					Variance: cv, Contribution: 2 * cv / V})
				path := pathOf(id)
				if path == "" {
					path = rootName
				}
				addFactor("covariance", names, "", max(a.h, b.h), 2*cv/V, 0, true, path, nil, nil)
			}
		}
		return tn
	}
	res.Tree = build(0, col(0), 0)
	res.Rows = rows(in, ivs, table, rowStates, pathOf)
	res.Height, res.Breadth, res.Top = height, breadth, top
	for _, f := range factors {
		f.Score = f.Specificity * f.Contribution
		slices.SortStableFunc(f.Sites, func(a, b *Site) int { return cmp.Compare(b.Contribution, a.Contribution) })
		if len(f.Sites) > 1 {
			for i, s := range f.Sites {
				s.Letter = siteLetter(i)
			}
		}
		res.Ranked = append(res.Ranked, f)
	}
	slices.SortStableFunc(res.Ranked, func(a, b *Factor) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Contribution, a.Contribution); c != 0 {
			return c
		}
		return cmp.Compare(a.Label(), b.Label())
	})
	res.Factors = Select(res.Ranked, in.K, in.D)
	return res, nil
}

// rows are the intervals' rows of the table, their nodes named by path.
func rows(in Input, ivs []interval, table []map[int]float64, states []map[string]uint64, pathOf func(int) string) []Row {
	paths := map[int]string{}
	out := make([]Row, len(ivs))
	for n, iv := range ivs {
		r := Row{Start: iv.start, Duration: iv.end - iv.start, Key: iv.key, Parts: map[string]float64{}, States: states[n]}
		for _, w := range iv.windows {
			if w.tid&GoroutineLane == 0 {
				if !slices.Contains(r.Threads, w.tid) {
					r.Threads = append(r.Threads, w.tid)
				}
			} else if in.Go != nil {
				if g, ok := in.Go.Goids[w.tid]; ok && !slices.Contains(r.Goroutines, g) {
					r.Goroutines = append(r.Goroutines, g)
				}
			}
		}
		for id, v := range table[n] {
			if id == 0 || v == 0 {
				continue
			}
			p, ok := paths[id]
			if !ok {
				p = pathOf(id)
				paths[id] = p
			}
			r.Parts[p] += v
		}
		out[n] = r
	}
	return out
}

// USDTPrefix marks a USDT probe where a function is named: usdt:PROVIDER:NAME.
const USDTPrefix = "usdt:"

// named reports whether the probed function (or USDT probe PROVIDER:NAME)
// fn is the one a spec names: by its name, or in any enclosing scope as
// the tracer's -f does (elfx.MatchName: "handle" names svc::handle).
func named(fn, name string) bool {
	if name == "" {
		return false
	}
	if u, ok := strings.CutPrefix(name, USDTPrefix); ok {
		return fn == u
	}
	return fn == name || elfx.MatchName(name, fn)
}

// Select is Algorithm 1's last step as the paper prints it: of the k
// factors with the highest scores, those contributing more than d.
func Select(ranked []*Factor, k int, d float64) []*Factor {
	var out []*Factor
	for i := 0; i < k && i < len(ranked); i++ {
		if ranked[i].Contribution > d {
			out = append(out, ranked[i])
		}
	}
	return out
}

func siteLetter(i int) string {
	s := ""
	for i++; i > 0; i = (i - 1) / 26 {
		s = string(rune('A'+(i-1)%26)) + s
	}
	return s
}

// intervals pairs starts and ends into intervals that began after cut.
// leaveOut removes, in place, the intervals that overlap one of the spans
// and returns the rest and how many went.
func leaveOut(ivs []interval, spans [][2]uint64) ([]interval, int) {
	if len(spans) == 0 {
		return ivs, 0
	}
	kept := ivs[:0]
	for _, iv := range ivs {
		if !overlapsOff(spans, iv.start, iv.end) {
			kept = append(kept, iv)
		}
	}
	return kept, len(ivs) - len(kept)
}

// overlapsOff reports whether from..to overlaps one of the spans.
func overlapsOff(off [][2]uint64, from, to uint64) bool {
	for _, o := range off {
		if from <= o[1] && to >= o[0] {
			return true
		}
	}
	return false
}

// fmtNS formats ns as seconds or milliseconds.
func fmtNS(ns uint64) string {
	if ns >= 1e9 {
		return fmt.Sprintf("%.1f s", float64(ns)/1e9)
	}
	return fmt.Sprintf("%.0f ms", float64(ns)/1e6)
}

func intervals(in Input, calls []Call, startP, endP map[int]bool, cut uint64) ([]interval, int, error) {
	var out []interval
	unpaired := 0
	if in.Spec.Key == "" {
		// On each thread, an interval runs from a start's entry to the
		// return of the next end (the start's own return when they are the
		// same function).
		same := in.Spec.Start == in.Spec.End
		open := -1
		var tid uint32
		for i, c := range calls {
			if c.TID != tid {
				if open >= 0 {
					unpaired++
				}
				open, tid = -1, c.TID
			}
			if c.Unreturned {
				continue
			}
			if same {
				if startP[c.Probe] && c.Start >= cut {
					out = append(out, interval{start: c.Start, end: c.End, windows: []window{{c.TID, c.Start, c.End, i, 0}}})
				}
				continue
			}
			if startP[c.Probe] && c.Start >= cut {
				if open >= 0 {
					unpaired++
				}
				open = i
			}
			if endP[c.Probe] && open >= 0 && c.Start >= calls[open].Start {
				s := calls[open]
				out = append(out, interval{start: s.Start, end: c.End, windows: []window{{c.TID, s.Start, c.End, -1, 0}}})
				open = -1
			}
		}
		if open >= 0 {
			unpaired++
		}
		slices.SortFunc(out, func(a, b interval) int { return cmp.Compare(a.start, b.start) })
		return out, unpaired, nil
	}
	if in.Spec.Start == in.Spec.End {
		return nil, 0, fmt.Errorf("--key pairs a start with an end: give different --start and --end functions")
	}
	key, err := expr.Parse(in.Spec.Key)
	if err != nil {
		return nil, 0, fmt.Errorf("--key %q: %w", in.Spec.Key, err)
	}
	eval := func(c Call) (string, error) {
		v, err := expr.Eval(key, argEnv{p: in.Probes[c.Probe], args: c.Args, strs: c.Strs})
		if err != nil {
			return "", fmt.Errorf("--key %q in %s: %w", in.Spec.Key, in.Probes[c.Probe].Function, err)
		}
		return v.String(), nil
	}
	attachP := map[int]bool{}
	if in.Spec.Attach != "" {
		for i, p := range in.Probes {
			if named(p.Function, in.Spec.Attach) {
				attachP[i] = true
			}
		}
		if len(attachP) == 0 {
			return nil, 0, fmt.Errorf("%s was not traced: nothing attaches to intervals", in.Spec.Attach)
		}
	}
	// Starts by time over every thread; each end closes the earliest open
	// start with its key.
	order := make([]int, len(calls))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(calls[a].Start, calls[b].Start) })
	open := map[string][]int{}
	type endAt struct {
		i   int
		key string
	}
	var ends, attaches []endAt
	for _, i := range order {
		c := calls[i]
		if c.Unreturned {
			continue
		}
		if attachP[c.Probe] {
			k, err := eval(c)
			if err != nil {
				return nil, 0, err
			}
			attaches = append(attaches, endAt{i, k})
		}
		if startP[c.Probe] && c.Start >= cut {
			k, err := eval(c)
			if err != nil {
				return nil, 0, err
			}
			open[k] = append(open[k], i)
		}
		if endP[c.Probe] {
			k, err := eval(c)
			if err != nil {
				return nil, 0, err
			}
			ends = append(ends, endAt{i, k})
		}
	}
	// Ends by their return; each takes the earliest start of its key that
	// began before it.
	slices.SortStableFunc(ends, func(a, b endAt) int { return cmp.Compare(calls[a.i].End, calls[b.i].End) })
	prevEnd := map[int]uint64{} // an end → the return of the end before it on its thread
	lastEnd := map[uint32]uint64{}
	for _, e := range ends {
		c := calls[e.i]
		if t, ok := lastEnd[c.TID]; ok {
			prevEnd[e.i] = t
		}
		lastEnd[c.TID] = c.End
	}
	used := 0
	keyOf := map[int]string{} // an interval of out → its key
	for _, e := range ends {
		q := open[e.key]
		c := calls[e.i]
		if len(q) == 0 || calls[q[0]].Start > c.Start {
			if c.Start >= cut {
				unpaired++
			}
			continue
		}
		s := calls[q[0]]
		open[e.key] = q[1:]
		used++
		// On one thread the interval is all the time between; across
		// threads, the time inside the start's and the end's calls.
		ws := []window{{s.TID, s.Start, c.End, -1, 0}}
		if s.TID != c.TID {
			ws = []window{{s.TID, s.Start, s.End, -1, 0}, {c.TID, c.Start, c.End, -1, 0}}
			if c.Point {
				// An end mark: the ending thread's time since it last
				// ended an interval (or since the start) is the
				// interval's.
				from := s.Start
				if p, ok := prevEnd[e.i]; ok {
					from = max(from, p)
				}
				ws[1].start = from
			}
		}
		iv := interval{start: s.Start, end: c.End, windows: ws, key: e.key}
		keyOf[len(out)] = e.key
		out = append(out, iv)
	}
	// Attached calls join the interval of their key that holds them (the
	// latest begun, when several do). A key's intervals are searched by
	// start, with the latest end so far, so that a server's thousands of
	// intervals per key (a connection's) cost a search, not a scan.
	if len(attaches) > 0 {
		type span struct {
			n      int
			maxEnd uint64
		}
		byKey := map[string][]span{}
		for n, k := range keyOf {
			byKey[k] = append(byKey[k], span{n: n})
		}
		for _, sp := range byKey {
			slices.SortFunc(sp, func(a, b span) int { return cmp.Compare(out[a.n].start, out[b.n].start) })
			var m uint64
			for i := range sp {
				m = max(m, out[sp[i].n].end)
				sp[i].maxEnd = m
			}
		}
		for _, a := range attaches {
			c := calls[a.i]
			sp := byKey[a.key]
			j := sort.Search(len(sp), func(i int) bool { return out[sp[i].n].start > c.Start }) - 1
			for ; j >= 0 && sp[j].maxEnd > c.Start; j-- {
				// A call entered while the interval is open; its time
				// after the interval's end is not the interval's.
				if iv := &out[sp[j].n]; c.Start < iv.end {
					iv.windows = addWindow(iv.windows, window{c.TID, c.Start, min(c.End, iv.end), -1, 0})
					break
				}
			}
		}
	}
	for _, q := range open {
		unpaired += len(q)
	}
	slices.SortFunc(out, func(a, b interval) int { return cmp.Compare(a.start, b.start) })
	return out, unpaired, nil
}

// queueIntervals builds the intervals handed across a queue: a start on
// one thread, that thread's next Enqueue, the Dequeue paired with it on
// another thread (by the queue key, or in order), and the first End that
// thread calls after the Dequeue returned.
func queueIntervals(in Input, calls []Call, startP, endP, enqP, deqP map[int]bool, cut uint64) ([]interval, int, error) {
	enqKey, deqKey := in.Spec.QueueKey, in.Spec.QueueKey
	if a, b, ok := strings.Cut(in.Spec.QueueKey, ":"); ok {
		enqKey, deqKey = a, b
	}
	keyOf := func(src string) (func(Call) (string, error), error) {
		if src == "" {
			return nil, nil
		}
		n, err := expr.Parse(src)
		if err != nil {
			return nil, fmt.Errorf("--queue-key %q: %w", src, err)
		}
		return func(c Call) (string, error) {
			v, err := expr.Eval(n, argEnv{p: in.Probes[c.Probe], args: c.Args, strs: c.Strs, ret: c.Ret, hasRet: true})
			if err != nil {
				return "", fmt.Errorf("--queue-key %q in %s: %w", src, in.Probes[c.Probe].Function, err)
			}
			return v.String(), nil
		}, nil
	}
	ek, err := keyOf(enqKey)
	if err != nil {
		return nil, 0, err
	}
	dk, err := keyOf(deqKey)
	if err != nil {
		return nil, 0, err
	}
	if (ek == nil) != (dk == nil) {
		return nil, 0, fmt.Errorf("--queue-key %q: give an expression for both ends, ENQ_EXPR:DEQ_EXPR", in.Spec.QueueKey)
	}
	// Per thread, the indexes of its starts, ends and dequeues by entry.
	type perThread struct{ starts, ends []int }
	threads := map[uint32]*perThread{}
	var enqs, deqs []int
	for i, c := range calls {
		if c.Unreturned {
			continue
		}
		th := threads[c.TID]
		if th == nil {
			th = &perThread{}
			threads[c.TID] = th
		}
		if startP[c.Probe] {
			th.starts = append(th.starts, i)
		}
		if endP[c.Probe] {
			th.ends = append(th.ends, i)
		}
		if enqP[c.Probe] {
			enqs = append(enqs, i)
		}
		if deqP[c.Probe] {
			deqs = append(deqs, i)
		}
	}
	// Enqueues by entry, dequeues by return: an item can be taken out
	// (and the dequeue return) before its enqueue has returned, not
	// before it was entered.
	slices.SortStableFunc(enqs, func(a, b int) int { return cmp.Compare(calls[a].Start, calls[b].Start) })
	slices.SortStableFunc(deqs, func(a, b int) int { return cmp.Compare(calls[a].End, calls[b].End) })
	// Pair each dequeue with an enqueue entered before it returned.
	type pair struct {
		enq, deq int
		key      string // the queue key that paired them ("" in order)
	}
	var pairs []pair
	if ek == nil {
		for i, j := 0, 0; i < len(enqs) && j < len(deqs); j++ {
			if calls[enqs[i]].Start > calls[deqs[j]].End {
				continue // a dequeue of an item enqueued before tracing began
			}
			pairs = append(pairs, pair{enq: enqs[i], deq: deqs[j]})
			i++
		}
	} else {
		open := map[string][]int{}
		e := 0
		for _, d := range deqs {
			for ; e < len(enqs) && calls[enqs[e]].Start <= calls[d].End; e++ {
				k, err := ek(calls[enqs[e]])
				if err != nil {
					return nil, 0, err
				}
				open[k] = append(open[k], enqs[e])
			}
			k, err := dk(calls[d])
			if err != nil {
				return nil, 0, err
			}
			if q := open[k]; len(q) > 0 {
				pairs = append(pairs, pair{q[0], d, k})
				open[k] = q[1:]
			}
		}
	}
	var out []interval
	unpaired := 0
	usedStart, usedEnd := map[int]bool{}, map[int]bool{}
	for _, p := range pairs {
		e, d := calls[p.enq], calls[p.deq]
		// The latest start on the enqueuing thread entered before the
		// enqueue, and the first end on the dequeuing thread entered after
		// the dequeue returned.
		st := threads[e.TID].starts
		i := sort.Search(len(st), func(i int) bool { return calls[st[i]].Start > e.Start }) - 1
		if i < 0 || usedStart[st[i]] || calls[st[i]].Start < cut {
			continue
		}
		th := threads[d.TID]
		if th == nil {
			continue
		}
		j := sort.Search(len(th.ends), func(j int) bool { return calls[th.ends[j]].Start >= d.End })
		if j == len(th.ends) || usedEnd[th.ends[j]] {
			unpaired++
			continue
		}
		s, en := calls[st[i]], calls[th.ends[j]]
		usedStart[st[i]], usedEnd[th.ends[j]] = true, true
		// An item taken up before its enqueue returned (the worker woken
		// inside it) leaves the first thread at the dequeue's return.
		var cut uint64
		if d.End < e.End {
			cut = d.End
		}
		out = append(out, interval{start: s.Start, end: en.End,
			windows: []window{{s.TID, s.Start, e.End, -1, cut}, {d.TID, d.End, en.End, -1, 0}},
			queue:   [2]uint64{min(e.End, d.End), d.End}, key: p.key})
	}
	for _, th := range threads {
		for _, i := range th.starts {
			if !usedStart[i] && calls[i].Start >= cut {
				unpaired++
			}
		}
	}
	slices.SortFunc(out, func(a, b interval) int { return cmp.Compare(a.start, b.start) })
	return out, unpaired, nil
}

// addWindow adds w to ws, merged with a window of its thread it
// overlaps (so no call is counted twice).
func addWindow(ws []window, w window) []window {
	for i := range ws {
		if ws[i].tid == w.tid && ws[i].start <= w.end && w.start <= ws[i].end {
			ws[i].start, ws[i].end = min(ws[i].start, w.start), max(ws[i].end, w.end)
			return ws
		}
	}
	return append(ws, w)
}

// argEnv evaluates a key over a call's recorded integer arguments (and,
// with hasRet, its return value as `return`).
type argEnv struct {
	p      Probe
	args   []uint64
	strs   []string
	ret    uint64
	hasRet bool
}

func (e argEnv) Var(name string) (expr.Object, error) {
	if name == "return" && e.hasRet {
		if e.p.Ret == recording.RetVoid {
			return nil, &expr.TypeError{Col: 1, Msg: fmt.Sprintf("%s returns void (its DWARF type)", e.p.Function)}
		}
		if code, typ, _ := strings.Cut(e.p.Ret, ":"); code == recording.RetUnread {
			return nil, &expr.TypeError{Col: 1, Msg: fmt.Sprintf("%s returns a %s, in a register probes cannot read (XMM0)", e.p.Function, typ)}
		}
		if e.p.Ret == "" {
			return nil, &expr.TypeError{Col: 1, Msg: fmt.Sprintf("%s returns nothing culprit records (an integer or a pointer, as DWARF types it)", e.p.Function)}
		}
		code, _, _ := strings.Cut(e.p.Ret, ":")
		return scalar{value(e.ret, code)}, nil
	}
	if _, ok := e.param(name); ok {
		return path{e: e, root: name, p: name}, nil
	}
	var names []string
	for _, p := range e.p.Params {
		if n := strings.SplitN(p, ":", 2)[0]; isName(n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return nil, &expr.TypeError{Col: 1, Msg: fmt.Sprintf("%s has no parameter passed in an integer register that DWARF names", e.p.Function)}
	}
	return nil, &expr.TypeError{Col: 1, Msg: fmt.Sprintf("%s has no parameter %q (it has %s)", e.p.Function, name, strings.Join(names, ", "))}
}

// isName: a parameter's name, not a value read through one ("c->id").
func isName(s string) bool { return !strings.ContainsAny(s, "-.[(*") }

// param finds the recorded value named name: a parameter, or memory the
// probe read through one (named by its path, "c->id").
func (e argEnv) param(name string) (expr.Scalar, bool) {
	for i, p := range e.p.Params {
		f := strings.SplitN(p, ":", 3)
		if f[0] != name {
			continue
		}
		if i >= len(e.args) {
			return expr.Scalar{}, false
		}
		code := ""
		if len(f) > 1 {
			code = f[1]
		}
		if code == "s8" {
			// A char * whose string was recorded: the expression
			// language has no strings and a key is only compared, so
			// the string stands as its 64-bit FNV-1a hash (equal
			// strings, equal keys, whatever their addresses).
			n := 0
			for _, q := range e.p.Params[:i] {
				if f := strings.SplitN(q, ":", 3); len(f) > 1 && f[1] == "s8" {
					n++
				}
			}
			if n < len(e.strs) && e.args[i] != 0 {
				h := fnv.New64a()
				h.Write([]byte(e.strs[n]))
				return expr.UintValue(h.Sum64()), true
			}
		}
		return value(e.args[i], code), true
	}
	return expr.Scalar{}, false
}

// value reads a register as the integer its type code ("i4", "u8", "p",
// ...) says.
func value(v uint64, code string) expr.Scalar {
	if len(code) == 2 && (code[0] == 'i' || code[0] == 'u') {
		bits := 8 * int(code[1]-'0')
		if bits > 0 && bits < 64 {
			v &= 1<<bits - 1
			if code[0] == 'i' && v&(1<<(bits-1)) != 0 {
				v |= ^uint64(0) << bits
			}
		}
		if code[0] == 'i' {
			return expr.IntValue(int64(v))
		}
	}
	return expr.UintValue(v)
}

// scalar is a value with nothing behind it (a return value).
type scalar struct{ v expr.Scalar }

func (s scalar) Member(name string, arrow bool) (expr.Object, error) {
	return nil, &expr.TypeError{Col: 1, Msg: "a return value is read from its register: culprit does not follow it into memory"}
}
func (s scalar) Index(int64) (expr.Object, error) { return s.Member("", false) }
func (s scalar) Deref() (expr.Object, error)      { return s.Member("", false) }
func (s scalar) Scalar() (expr.Scalar, error)     { return s.v, nil }

// path is a parameter, or what is reached through it: the probe read the
// memory at entry when the trace was asked for it (the tracer's reads,
// named by the same paths), and the value is found by its path.
type path struct {
	e       argEnv
	root, p string
}

func (p path) Member(name string, arrow bool) (expr.Object, error) {
	return path{p.e, p.root, expr.PathMember(p.p, name, arrow)}, nil
}
func (p path) Index(i int64) (expr.Object, error) {
	return path{p.e, p.root, expr.PathIndex(p.p, i)}, nil
}
func (p path) Deref() (expr.Object, error) { return path{p.e, p.root, expr.PathDeref(p.p)}, nil }
func (p path) Scalar() (expr.Scalar, error) {
	if v, ok := p.e.param(p.p); ok {
		return v, nil
	}
	if p.p == p.root {
		return expr.Scalar{}, fmt.Errorf("%s: %w", p.p, expr.ErrMissing)
	}
	return expr.Scalar{}, &expr.TypeError{Col: 1, Msg: fmt.Sprintf("%s was not read at %s's entry: culprit variance reads the memory its key names at the probes of --start, --end and --attach (DWARF types the member); other recordings hold only what they were asked to read", p.p, p.e.p.Function)}
}

// Heights gives each function of a call graph (callees by caller) its
// height: the longest chain of calls below it, a function without callees
// being 0. Calls that close a cycle (recursion) are not followed.
func Heights(callees map[string][]string) map[string]int {
	h := map[string]int{}
	state := map[string]int{} // 1: on the path, 2: done
	var visit func(f string) int
	visit = func(f string) int {
		switch state[f] {
		case 1:
			return -1 // a cycle: not a chain
		case 2:
			return h[f]
		}
		state[f] = 1
		m := 0
		for _, c := range callees[f] {
			if v := visit(c); v >= 0 {
				m = max(m, v+1)
			}
		}
		state[f] = 2
		h[f] = m
		return m
	}
	names := make([]string, 0, len(callees))
	for f := range callees {
		names = append(names, f)
	}
	sort.Strings(names)
	for _, f := range names {
		visit(f)
	}
	return h
}

// countAfter counts the probes set after t.
func countAfter(ps []Probe, t uint64) int {
	n := 0
	for _, p := range ps {
		if p.Since > t {
			n++
		}
	}
	return n
}
