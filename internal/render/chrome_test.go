package render

import (
	"bytes"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
)

func TestAppendJSONMicros(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	vals := []uint64{0, 1, 9, 10, 100, 999, 1000, 1001, 1500, 123456789, 1e15 - 1, 1e15, 1e15 + 1, 1<<53 + 1, 1<<64 - 1}
	for range 200000 {
		vals = append(vals, r.Uint64()>>uint(r.Intn(64)))
	}
	for _, ns := range vals {
		want := string(appendJSONFloat(nil, float64(ns)/1e3))
		if got := string(appendJSONMicros(nil, ns)); got != want {
			t.Fatalf("appendJSONMicros(%d) = %s, want %s", ns, got, want)
		}
	}
}

// TestChromeTimelineOrder checks the sample events of WriteChrome against
// the rule its documentation gives, applied the plain way: every event made
// as a frame ends, all sorted by start and depth. The profiles are random:
// threads interleaved, samples out of order, equal times, gaps, frames of
// one name under different indices, empty stacks.
func TestChromeTimelineOrder(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for round := range 300 {
		p := randomTimeline(r)
		var b bytes.Buffer
		if err := WriteChrome(&b, p); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, l := range strings.Split(b.String(), "\n") {
			l = strings.TrimSuffix(l, ",")
			if strings.Contains(l, `"ph":"X"`) {
				got = append(got, l)
			}
		}
		want := plainChromeSamples(p)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("round %d: events differ:\n%s\nwant\n%s", round, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

func randomTimeline(r *rand.Rand) *profile.Profile {
	p := &profile.Profile{
		Frames: []profile.Frame{
			{Function: "main", Object: "/bin/a"},
			{Function: "run", Object: "/bin/a", File: "a.c", Line: 3},
			{Function: "run", Object: "/bin/a", File: "a.c", Line: 7}, // the same event as 1
			{Function: "leaf", Object: "/bin/a"},
			{Function: "run", Object: "[kernel.kallsyms]", Kernel: true}, // not
			{Function: "write", Object: "/lib/libc.so.6"},
		},
		Metas:     []recording.Meta{{Frequency: 1000}},
		StartTime: 1000,
	}
	for range 1 + r.Intn(6) {
		n := r.Intn(5)
		st := make([]int32, n)
		for i := range st {
			st[i] = int32(r.Intn(len(p.Frames)))
		}
		p.Stacks = append(p.Stacks, st)
	}
	t := uint64(1000)
	for range r.Intn(60) {
		switch r.Intn(4) {
		case 0: // the same time
		case 1:
			t += uint64(r.Intn(5)) * 1e6 // contiguous or a gap
		default:
			t += 1e6
		}
		s := profile.Sample{Time: t, PID: 1, TID: uint32(1 + r.Intn(3)), Stack: int32(r.Intn(len(p.Stacks)))}
		if r.Intn(3) == 0 {
			s.Period = uint64(1+r.Intn(3)) * 1e6
		}
		p.Samples = append(p.Samples, s)
	}
	r.Shuffle(len(p.Samples), func(i, j int) {
		if r.Intn(4) == 0 {
			p.Samples[i], p.Samples[j] = p.Samples[j], p.Samples[i]
		}
	})
	return p
}

// plainChromeSamples is the sample events of WriteChrome by its rule: for
// each thread, its samples stably sorted by time, events closed as the
// stacks part, then all sorted stably by start and depth.
func plainChromeSamples(p *profile.Profile) []string {
	type span struct {
		start, end   uint64
		frame, depth int32
	}
	byThread := map[threadID][]profile.Sample{}
	var threads []threadID
	for _, s := range p.Samples {
		t := threadID{s.PID, s.TID}
		if _, ok := byThread[t]; !ok {
			threads = append(threads, t)
		}
		byThread[t] = append(byThread[t], s)
	}
	sort.Slice(threads, func(i, j int) bool { return threadLess(threads[i], threads[j]) })
	fj := chromeFrames{p: p, json: map[int32][2][]byte{}}
	org := origin(p)
	var out []string
	for _, t := range threads {
		ss := byThread[t]
		sort.SliceStable(ss, func(i, j int) bool { return ss[i].Time < ss[j].Time })
		var spans, open []span
		closeFrom := func(n int, at uint64) {
			for _, o := range open[n:] {
				o.end = max(at, o.start)
				spans = append(spans, o)
			}
			open = open[:n]
		}
		var lastEnd, lastPeriod uint64
		for i, s := range ss {
			st := p.StackAt(s.Stack)
			if len(st) == 0 {
				st = []int32{-1}
			}
			common := 0
			if i > 0 && s.Time <= lastEnd+lastPeriod/2 {
				for common < len(open) && common < len(st) && fj.same(open[common].frame, st[len(st)-1-common]) {
					common++
				}
				closeFrom(common, s.Time)
			} else {
				closeFrom(0, lastEnd)
			}
			for d := common; d < len(st); d++ {
				open = append(open, span{start: s.Time, frame: st[len(st)-1-d], depth: int32(d)})
			}
			per := period(p, s)
			lastEnd, lastPeriod = s.Time+per, per
		}
		closeFrom(0, lastEnd)
		sort.SliceStable(spans, func(a, b int) bool {
			if spans[a].start != spans[b].start {
				return spans[a].start < spans[b].start
			}
			return spans[a].depth < spans[b].depth
		})
		for _, sp := range spans {
			head, args := fj.get(sp.frame)
			out = append(out, fmt.Sprintf(`%s%s,"dur":%s,"pid":%d,"tid":%d,"args":%s}`, head,
				appendJSONFloat(nil, float64(sp.start-org)/1e3), appendJSONFloat(nil, float64(sp.end-sp.start)/1e3), t.pid, t.tid, args))
		}
	}
	return out
}
