package view

import (
	"net/http"
	"net/url"
	"regexp"
	"slices"

	"github.com/culprit-dev/culprit/internal/profile"
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
	About:  "one function in every view: its samples per thread and links to pprof's views and the time view focused on it (a function's name on any page opens it)",
	Ranged: true,
	Needs: func(s *Server) string {
		if !s.hasSamples() {
			return "needs CPU samples: culprit record"
		}
		return ""
	},
	Handler: func(s *Server) http.Handler {
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
			p := s.p
			if !rng.Whole() {
				p = s.p.Apply(rng.Narrow(profile.Filter{}))
			}
			in := p.Apply(profile.Filter{Focus: re})
			type thread struct {
				Name    string
				TID     uint32
				Samples int
			}
			per := map[uint32]*thread{}
			for _, smp := range in.Samples {
				t := per[smp.TID]
				if t == nil {
					t = &thread{Name: p.ThreadNameAt(smp.TID, smp.Time), TID: smp.TID}
					per[smp.TID] = t
				}
				t.Samples += smp.N()
			}
			threads := make([]*thread, 0, len(per))
			for _, t := range per {
				threads = append(threads, t)
			}
			slices.SortFunc(threads, func(a, b *thread) int {
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
			q := "?f=" + url.QueryEscape(f)
			var links []link
			for _, v := range pprofViews {
				links = append(links, link{"pprof/" + rng.Key() + "/" + v.Path + q, "pprof: " + v.Title})
			}
			for _, pg := range s.shown {
				switch pg.Path {
				case offCPUPage.Path:
					links = append(links, link{"offcpu/" + rng.Key() + "/flamegraph" + q, pg.Title})
				case timePath:
					links = append(links, link{timePath + q, "Time view of its samples"})
				}
			}
			data["Links"], data["Names"], data["More"], data["Threads"] = links, names, more, threads
			data["Samples"], data["Total"] = total(in), total(p)
			s.html(w, "function.html", data)
		})
	},
}

// total is the number of samples p's samples stand for.
func total(p *profile.Profile) int {
	n := 0
	for _, s := range p.Samples {
		n += s.N()
	}
	return n
}
