package view

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/culprit-dev/culprit/internal/analysis/offcpu"
	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/render"
	pprof "github.com/google/pprof/profile"
)

// offCPUPath and offCPUTitle are the off-CPU page's path and title.
const (
	offCPUPath  = "offcpu"
	offCPUTitle = "Off-CPU flame graph"
)

var offCPUPage = Page{
	Path:  offCPUPath,
	Title: offCPUTitle,
	About: "where threads waited: the stacks they left the CPU with at context switches, each charged with the time until the thread's next event (pprof's views; with --base, the difference)",
	Needs: func(s *Server) string {
		if s.in.Events == nil || !switches(s.in.Events.Samples) {
			return "needs a recording with context switches: culprit record --events cpu,syscalls,sched"
		}
		return ""
	},
	Ranged: true,
	UI:     true,
	ForFunction: func(rng Range, q string) link {
		return link{offCPUPath + "/" + rng.Key() + "/flamegraph" + q, offCPUTitle}
	},
	Handler: func(s *Server) http.Handler {
		type profiles struct{ p, base *profile.Profile }
		var whole memo[profiles]
		spans := func() (profiles, error) {
			var out profiles
			var err error
			if out.p, err = s.offCPU(); err != nil {
				return out, err
			}
			if s.in.BaseEvents != nil {
				b, st, err := offcpu.Profile(s.in.BaseEvents)
				if err != nil {
					return out, fmt.Errorf("the base: %w", err)
				}
				if st.Spans > 0 {
					out.base = b
				}
			}
			return out, nil
		}
		var uis uiCache
		build := func(key string) (*pprofPages, error) {
			ps, err := whole.get(spans)
			if err != nil {
				return nil, err
			}
			p := ps.p
			if key != "" {
				from, to, _ := parseRange(key)
				// The spans that began in the range (AllEvents: they are
				// switches, not CPU samples).
				p = p.Apply(profile.Filter{From: from, To: to, HasFrom: true, HasTo: true, AllEvents: true})
			}
			if len(p.Samples) == 0 {
				return nil, fmt.Errorf("no thread left the CPU between %s", strings.Replace(key, "-", " and ", 1))
			}
			var base *pprof.Profile
			if ps.base != nil {
				base = render.PprofOffCPU(ps.base)
			}
			return pprofUI(render.PprofOffCPU(p), base, s.objs, s.stderr)
		}
		mux := http.NewServeMux()
		mux.HandleFunc("GET /offcpu", func(w http.ResponseWriter, r *http.Request) {
			rng, err := requestRange(r)
			if err != nil {
				s.badRange(w, "Off-CPU flame graph", err)
				return
			}
			// Relative to the page's own path, which holds the token
			// (http.Redirect would resolve it against the path without).
			w.Header().Set("Location", "offcpu/"+rng.Key()+"/flamegraph")
			w.WriteHeader(http.StatusFound)
		})
		mux.HandleFunc("GET /offcpu/{range}/{rest...}", func(w http.ResponseWriter, r *http.Request) {
			key := r.PathValue("range")
			if key == "all" {
				key = ""
			}
			if _, _, err := parseRange(key); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			handlers, err := uis.get(key, build)
			if err != nil {
				s.fail(w, "Off-CPU flame graph", err)
				return
			}
			s.serveUI(w, r, handlers)
		})
		return mux
	},
}

// offCPU is the off-CPU profile of in.Events (analysis/offcpu), made once
// for the off-CPU flame graph and the time view's thread lanes.
func (s *Server) offCPU() (*profile.Profile, error) {
	if s.in.Events == nil || !switches(s.in.Events.Samples) {
		return nil, fmt.Errorf("no context switches recorded")
	}
	return s.offMemo.get(func() (*profile.Profile, error) {
		p, _, err := offcpu.Profile(s.in.Events)
		return p, err
	})
}

// switches reports whether samples hold a context switch.
func switches(samples []profile.Sample) bool {
	for _, s := range samples {
		if s.Event == recording.EventSwitch {
			return true
		}
	}
	return false
}
