package vprof

import (
	"fmt"
	"sort"
	"strings"

	"github.com/culprit-dev/culprit/internal/analysis/trace"
	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
)

// Repeat is the work one function made its callee do again: calls of
// Callee that Caller made inside one request (one outermost traced call on
// its thread) with the same arguments as an earlier call of Callee in that
// request, which First made (docs/vprof.md, "Work done twice").
type Repeat struct {
	Caller string `json:"caller"`
	Callee string `json:"callee"`
	First  string `json:"first"` // the caller of the earlier call with the same arguments (the most frequent)
	// Calls is how many calls of Callee Caller made, Repeats how many of
	// them repeated an earlier one.
	Calls   int `json:"calls"`
	Repeats int `json:"repeats"`
	// Time is the ns of Caller's calls of Callee, RepeatTime of the
	// repeats among them, CalleeTime of every call of Callee.
	Time       uint64 `json:"time_ns"`
	RepeatTime uint64 `json:"repeat_time_ns"`
	CalleeTime uint64 `json:"callee_time_ns"`
}

// Part is the repeats' part of all the time of the callee's calls.
func (r Repeat) Part() float64 {
	if r.CalleeTime == 0 {
		return 0
	}
	return float64(r.RepeatTime) / float64(r.CalleeTime)
}

// MinRepeatPart is the part of a callee's traced time that repeats must
// take for their caller to answer for the callee's growth: a repeat of
// every needed call takes half; a third is a repeat in at least every
// other request of the work, more than a rare retry.
const MinRepeatPart = 1.0 / 3

// ErrNoArgs says a trace recording holds no arguments: without them no
// two calls can be told to do the same work.
var ErrNoArgs = fmt.Errorf("the trace holds no arguments of its calls: record it with culprit trace --args")

// ErrNoCalls says a recording holds no traced calls (not a trace).
var ErrNoCalls = fmt.Errorf("no traced calls in it (a trace is made with culprit trace --args -f FUNC ...)")

// Repeats finds, in a trace recording (culprit trace --args), the calls
// that repeat an earlier call of the same function with the same inputs
// inside one request. A request is one outermost traced call on its thread
// (depth 0: trace the function that handles one request, e.g. a
// dispatcher, with the functions below it). Two calls have the same
// inputs when each argument is equal or, for a char * argument whose
// string was recorded, points to the same string when the call ended (an
// output buffer in each caller's frame that ends holding the same
// result), and their return values are equal; a call without recorded
// arguments is never a repeat. The repeat must be asked for by other code
// than the first call (another chain of traced calls above it): the same
// chain asking again is a loop over a request's items meeting two of one
// value, or a loop in one call asking again while the memory the callee
// reads changes (a poll, a pool that grows), not work asked for twice. A
// string cut at trace.MaxString bytes is the same only at the same
// address. A repeat nested in another repeat belongs to that one: only
// the outermost counts. The result is ordered by repeat time, the largest
// first.
func Repeats(p *profile.Profile) ([]Repeat, error) {
	withArgs := false
	for i := range p.Probes {
		if len(p.Probes[i].Params) > 0 {
			withArgs = true
		}
	}
	if !withArgs {
		for i := range p.Calls {
			if len(p.Calls[i].Args) > 0 {
				withArgs = true
				break
			}
		}
	}
	if len(p.Calls) == 0 {
		return nil, ErrNoCalls
	}
	if !withArgs {
		return nil, ErrNoArgs
	}
	// Calls by thread in start order, outer calls before inner ones that
	// start at the same time.
	order := make([]int, 0, len(p.Calls))
	for i := range p.Calls {
		if p.Calls[i].Flags&recording.CallUnreturned == 0 {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(x, y int) bool {
		a, b := &p.Calls[order[x]], &p.Calls[order[y]]
		if a.PID != b.PID || a.TID != b.TID {
			if a.PID != b.PID {
				return a.PID < b.PID
			}
			return a.TID < b.TID
		}
		if a.Start != b.Start {
			return a.Start < b.Start
		}
		return a.Depth < b.Depth
	})
	type key struct {
		probe int32
		args  string
	}
	type pair struct{ caller, callee string }
	stats := map[pair]*Repeat{}
	firsts := map[pair]map[string]int{}
	calleeTime := map[string]uint64{}
	type first struct {
		call int    // the call
		path string // the traced functions open when it was made
	}
	var (
		seen      map[key]first // the first call with those inputs in this request
		reqEnd    uint64
		tid, pid  uint32
		repEnd    uint64 // the end of the outermost repeat open, 0: none
		started   bool
		open      []int // the calls open on the thread, outermost first
		argsBuild strings.Builder
	)
	for _, i := range order {
		c := &p.Calls[i]
		if !started || c.TID != tid || c.PID != pid || c.Depth == 0 || c.Start >= reqEnd {
			seen, reqEnd, tid, pid, repEnd, started, open = map[key]first{}, c.End, c.TID, c.PID, 0, true, open[:0]
		}
		for len(open) > 0 && p.Calls[open[len(open)-1]].End <= c.Start {
			open = open[:len(open)-1]
		}
		open = append(open, i)
		name := p.Probes[c.Probe].Function
		calleeTime[name] += c.End - c.Start
		caller := callerName(p, c)
		pr := pair{caller, name}
		st := stats[pr]
		if st == nil {
			st = &Repeat{Caller: caller, Callee: name}
			stats[pr] = st
		}
		st.Calls++
		st.Time += c.End - c.Start
		if repEnd != 0 && c.Start < repEnd {
			continue // inside a repeat: part of it
		}
		repEnd = 0
		if len(c.Args) == 0 {
			continue // no inputs recorded (none passed, or unknown): nothing to compare
		}
		argsBuild.Reset()
		strs := 0
		params := p.Probes[c.Probe].Params
		for j, v := range c.Args {
			if j < len(params) && strings.Contains(params[j], ":s8:") && strs < len(c.Strs) {
				switch str := c.Strs[strs]; {
				case v == 0:
					argsBuild.WriteString("NULL")
				case len(str) >= trace.MaxString:
					// Cut: only the same address says it is the
					// same string.
					fmt.Fprintf(&argsBuild, "%x:%q", v, str)
				default:
					fmt.Fprintf(&argsBuild, "%q", str)
				}
				strs++
			} else {
				fmt.Fprintf(&argsBuild, "%x", v)
			}
			argsBuild.WriteByte(',')
		}
		fmt.Fprintf(&argsBuild, "=%x", c.Ret)
		k := key{c.Probe, argsBuild.String()}
		var path strings.Builder
		for _, o := range open[:len(open)-1] {
			path.WriteString(p.Probes[p.Calls[o].Probe].Function)
			path.WriteByte('/')
		}
		f, ok := seen[k]
		if !ok {
			seen[k] = first{i, path.String()}
			continue
		}
		if p.Calls[f.call].End > c.Start {
			continue // the earlier call encloses this one: recursion, not a repeat
		}
		if f.path == path.String() {
			// The same chain asking again: a loop over the request's
			// items meeting two of one value, or one call asking again
			// while what it waits for changes (a poll, a pool that
			// grows): not the same work asked for twice.
			continue
		}
		st.Repeats++
		st.RepeatTime += c.End - c.Start
		repEnd = c.End
		if firsts[pr] == nil {
			firsts[pr] = map[string]int{}
		}
		firsts[pr][callerName(p, &p.Calls[f.call])]++
	}
	var out []Repeat
	for pr, st := range stats {
		if st.Repeats == 0 {
			continue
		}
		st.CalleeTime = calleeTime[st.Callee]
		best := -1
		for f, n := range firsts[pr] {
			if n > best || n == best && f < st.First {
				st.First, best = f, n
			}
		}
		out = append(out, *st)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].RepeatTime != out[j].RepeatTime {
			return out[i].RepeatTime > out[j].RepeatTime
		}
		if out[i].Caller != out[j].Caller {
			return out[i].Caller < out[j].Caller
		}
		return out[i].Callee < out[j].Callee
	})
	return out, nil
}

// callerName names where a call was made from (trace.CallerName), "" when
// unknown.
func callerName(p *profile.Profile, c *profile.Call) string {
	if n := trace.CallerName(p, c); n != "[unknown]" {
		return n
	}
	return ""
}
