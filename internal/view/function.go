package view

import (
	"net/http"
	"net/url"
	"regexp"
	"slices"

	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
)

// functionPath is the function page's path.
const functionPath = "fn"

// The function page gathers one function (a regular expression, as
// pprof's f parameter) from every view: the samples with it on the stack,
// per thread, and the links that open it in pprof's views, the off-CPU
// flame graph and the time view. A function's name on any page links
// here, and pprof's pages send their selected function here.
var functionPage = Page{
	Path:   functionPath,
	Title:  "Function",
	Focus:  true,
	About:  "one function in every view: its samples per thread and links to pprof's views and the time view focused on it (a function's name on any page opens it)",
	Ranged: true,
	Needs: func(s *Server) string {
		if !s.hasSamples() {
			return "needs CPU samples: culprit record"
		}
		return ""
	},
	Handler: func(s *Server) http.Handler {
		var merged rangeMemo[fnSamples]
		var shown memos[fnKey, map[string]any]
		merge := func(rng Range) (fnSamples, error) { return s.mergedSamples(rng), nil }
		if s.hasSamples() {
			// The whole recording's samples merged in the background.
			s.warm = append(s.warm, func() { _, _ = merged.get(Range{}, merge) })
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rng, err := requestRange(r)
			if err != nil {
				s.badRange(w, "Function", err)
				return
			}
			f := r.URL.Query().Get("f")
			data := map[string]any{"Title": "Function", "F": f, "Range": rng, "RangeText": rangeText(rng),
				"From": "", "To": ""}
			if !rng.Whole() {
				data["From"], data["To"] = rng.From.String(), rng.To.String()
			}
			if f == "" {
				s.html(w, "function.html", data)
				return
			}
			re, err := regexp.Compile(f)
			if err != nil {
				w.WriteHeader(http.StatusBadRequest)
				data["Error"] = "f=" + f + ": " + err.Error()
				s.html(w, "function.html", data)
				return
			}
			found, _ := shown.get(fnKey{rng, f}, func(k fnKey) (map[string]any, error) {
				ms, _ := merged.get(rng, merge)
				return s.function(ms, re, rng), nil
			})
			for k, v := range found {
				data[k] = v
			}
			s.html(w, "function.html", data)
		})
	},
}

// fnKey is what the function page shows: a function (its f) of a time
// range.
type fnKey struct {
	Range
	F string
}

// fnSamples are a time range's samples merged by stack, thread and event
// (a merged profile: each stands for those of its stack and thread, its
// Time the first of theirs, in that order), and how many samples they
// stand for. The function page selects a function's from them: as many
// as there are distinct stacks per thread, not every sample.
type fnSamples struct {
	p     *profile.Profile
	total int
}

// mergedSamples merges the samples of the time range rng (fnSamples).
func (s *Server) mergedSamples(rng Range) fnSamples {
	p := s.p
	if !rng.Whole() {
		p = s.p.Apply(rng.Narrow(profile.Filter{}))
	}
	// at[thread and event][stack] is the index+1 in out of the samples
	// merged so far (stacks out of range are merged by the map too).
	type key struct {
		tid   uint32
		event recording.Event
	}
	at := map[key][]int32{}
	odd := map[struct {
		key
		stack int32
	}]int{}
	var (
		out   []profile.Sample
		lasts []uint64
		total int
		last  key
		row   []int32
	)
	for i, smp := range p.Samples {
		n := smp.N()
		total += n
		k := key{smp.TID, smp.Event}
		if row == nil || k != last {
			row = at[k]
			if row == nil {
				row = make([]int32, len(p.Stacks))
				at[k] = row
			}
			last = k
		}
		var j int
		ok := false
		if smp.Stack >= 0 && int(smp.Stack) < len(row) {
			j, ok = int(row[smp.Stack])-1, row[smp.Stack] > 0
			if !ok {
				row[smp.Stack] = int32(len(out) + 1)
			}
		} else {
			ko := struct {
				key
				stack int32
			}{k, smp.Stack}
			j, ok = odd[ko]
			if !ok {
				odd[ko] = len(out)
			}
		}
		if !ok {
			out = append(out, smp)
			lasts = append(lasts, p.LastTime(i))
			continue
		}
		m := &out[j]
		m.More += uint32(n)
		m.Period += smp.Period
		lasts[j] = max(lasts[j], p.LastTime(i))
	}
	q := &profile.Profile{Frames: p.Frames, Stacks: p.Stacks, Samples: out, Threads: p.Threads, StartTime: p.StartTime}
	q.SetMerged(lasts)
	return fnSamples{q, total}
}

// fnThread is a thread's row of the function page.
type fnThread struct {
	Name    string
	TID     uint32
	Samples int
}

// function is what the function page shows of the functions re matches
// among the samples ms: the samples with one on the stack, per thread
// (named as at its first), the functions' names, and the links to the
// other views of them.
func (s *Server) function(ms fnSamples, re *regexp.Regexp, rng Range) map[string]any {
	in := ms.p.Apply(profile.Filter{Focus: re})
	per := map[uint32]*fnThread{}
	for _, smp := range in.Samples {
		t := per[smp.TID]
		if t == nil {
			t = &fnThread{Name: s.p.ThreadNameAt(smp.TID, smp.Time), TID: smp.TID}
			per[smp.TID] = t
		}
		t.Samples += smp.N()
	}
	threads := make([]*fnThread, 0, len(per))
	for _, t := range per {
		threads = append(threads, t)
	}
	slices.SortFunc(threads, func(a, b *fnThread) int {
		if a.Samples != b.Samples {
			return b.Samples - a.Samples
		}
		return int(a.TID) - int(b.TID)
	})
	var names []string
	for name := range s.functions() {
		if re.MatchString(name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	const maxNames = 30
	more := max(0, len(names)-maxNames)
	names = names[:min(len(names), maxNames)]
	q := "?f=" + url.QueryEscape(re.String())
	var links []link
	for _, v := range pprofViews {
		links = append(links, link{"pprof/" + rng.Key() + "/" + v.Path + q, "pprof: " + v.Title})
	}
	for _, pg := range s.shown {
		if pg.ForFunction != nil {
			links = append(links, pg.ForFunction(rng, q))
		}
	}
	return map[string]any{"Links": links, "Names": names, "More": more, "Threads": threads,
		"Samples": total(in), "Total": ms.total}
}

// total is the number of samples p's samples stand for.
func total(p *profile.Profile) int {
	n := 0
	for _, s := range p.Samples {
		n += s.N()
	}
	return n
}
