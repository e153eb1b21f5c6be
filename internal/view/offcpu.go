package view

import (
	"fmt"
	"net/http"

	"github.com/culprit-dev/culprit/internal/analysis/offcpu"
	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/render"
	pprof "github.com/google/pprof/profile"
)

var offCPUPage = Page{
	Path:  "offcpu",
	Title: "Off-CPU flame graph",
	About: "where threads waited: the stacks they left the CPU with at context switches, each charged with the time until the thread's next event (pprof's views; with --base, the difference)",
	Needs: func(s *Server) string {
		if s.in.Events == nil || !switches(s.in.Events.Samples) {
			return "needs a recording with context switches: culprit record --events cpu,syscalls,sched"
		}
		return ""
	},
	Handler: func(s *Server) http.Handler {
		var ui memo[map[string]http.Handler]
		build := func() (map[string]http.Handler, error) {
			q, _, err := offcpu.Profile(s.in.Events)
			if err != nil {
				return nil, err
			}
			var base *pprof.Profile
			if s.in.BaseEvents != nil {
				b, st, err := offcpu.Profile(s.in.BaseEvents)
				if err != nil {
					return nil, fmt.Errorf("the base: %w", err)
				}
				if st.Spans > 0 {
					base = render.PprofOffCPU(b)
				}
			}
			return pprofUI(render.PprofOffCPU(q), base, s.stderr)
		}
		mux := http.NewServeMux()
		mux.HandleFunc("GET /offcpu", func(w http.ResponseWriter, r *http.Request) {
			// Relative to the page's own path, which holds the token
			// (http.Redirect would resolve it against the path without).
			w.Header().Set("Location", "offcpu/flamegraph")
			w.WriteHeader(http.StatusFound)
		})
		mux.HandleFunc("GET /offcpu/{rest...}", func(w http.ResponseWriter, r *http.Request) {
			handlers, err := ui.get(build)
			if err != nil {
				s.fail(w, "Off-CPU flame graph", err)
				return
			}
			serveUI(w, r, handlers)
		})
		return mux
	},
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
