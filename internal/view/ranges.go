package view

import (
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/culprit-dev/culprit/internal/profile"
)

// Range is a time range of the recordings, offsets from their first
// sample as --from and --to take them. The zero Range is everything the
// server shows.
type Range struct{ From, To time.Duration }

// Whole reports whether r is everything.
func (r Range) Whole() bool { return r == Range{} }

// Key is r as pprof's and the off-CPU pages' paths name it: "all" or
// FROM-TO.
func (r Range) Key() string {
	if r.Whole() {
		return "all"
	}
	return r.From.String() + "-" + r.To.String()
}

// Query is r as the analysis pages take it: "" or "?from=FROM&to=TO".
func (r Range) Query() string {
	if r.Whole() {
		return ""
	}
	return "?" + url.Values{"from": {r.From.String()}, "to": {r.To.String()}}.Encode()
}

func (r Range) String() string {
	if r.Whole() {
		return "the whole recording"
	}
	return fmt.Sprintf("%s to %s", r.From, r.To)
}

// Narrow narrows f, a selection of the recordings (--from/--to), to r.
func (r Range) Narrow(f profile.Filter) profile.Filter {
	if r.Whole() {
		return f
	}
	if !f.HasFrom || f.From < r.From {
		f.From, f.HasFrom = r.From, true
	}
	if !f.HasTo || f.To > r.To {
		f.To, f.HasTo = r.To, true
	}
	return f
}

// requestRange is the range a request for an analysis page names with its
// from and to parameters (both or neither).
func requestRange(r *http.Request) (Range, error) {
	q := r.URL.Query()
	from, to := q.Get("from"), q.Get("to")
	if from == "" && to == "" {
		return Range{}, nil
	}
	f, t, err := parseRange(from + "-" + to)
	if err != nil {
		return Range{}, fmt.Errorf("from=%q to=%q: want both, durations from the first sample with from < to (e.g. from=1.5s&to=2s)", from, to)
	}
	return Range{f, t}, nil
}

// rangeMemo keeps an analysis's result per time range: the whole
// recording's for good, the last maxRanges others.
type rangeMemo[T any] = memos[Range, T]

// memos keeps a result per key: the zero key's for good, the last
// maxRanges others.
type memos[K comparable, T any] struct {
	mu    sync.Mutex
	runs  map[K]*memo[T]
	order []K // keys other than the zero one, oldest first
}

// get returns run's result for r, run once per key kept; requests for
// other keys do not wait for it.
func (c *memos[K, T]) get(r K, run func(K) (T, error)) (T, error) {
	return c.memo(r).get(func() (T, error) { return run(r) })
}

// within is get that waits for run's result at most wait (see
// memo.within).
func (c *memos[K, T]) within(r K, wait time.Duration, run func(K) (T, error)) (T, error, bool, time.Duration) {
	return c.memo(r).within(wait, func() (T, error) { return run(r) })
}

// memo returns the memo of r, made and kept if it is not.
func (c *memos[K, T]) memo(r K) *memo[T] {
	c.mu.Lock()
	m, ok := c.runs[r]
	if !ok {
		if c.runs == nil {
			c.runs = map[K]*memo[T]{}
		}
		m = &memo[T]{}
		c.runs[r] = m
		var zero K
		if r != zero {
			if len(c.order) == maxRanges {
				delete(c.runs, c.order[0])
				c.order = c.order[1:]
			}
			c.order = append(c.order, r)
		}
	}
	c.mu.Unlock()
	return m
}
