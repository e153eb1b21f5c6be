package view

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/culprit-dev/culprit/internal/analysis/exprs"
	"github.com/culprit-dev/culprit/internal/analysis/introperf"
	"github.com/culprit-dev/culprit/internal/analysis/trace"
	"github.com/culprit-dev/culprit/internal/analysis/vprof"
	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/render"
)

// The pages of the analyses show what their commands print, drawn by
// render, on one page each: the analysis runs on the page's first request
// and its output is kept.

// memo runs an analysis the first time its page is asked for and keeps
// the result (or the error) for every later request.
type memo[T any] struct {
	o       sync.Once
	v       T
	err     error
	started atomic.Int64 // unix ns when run started (0: not yet)
	done    chan struct{}
	init    sync.Once
}

func (m *memo[T]) get(run func() (T, error)) (T, error) {
	m.init.Do(func() { m.done = make(chan struct{}) })
	m.o.Do(func() {
		m.started.Store(time.Now().UnixNano())
		defer close(m.done)
		// A build that fails this way fails with a message, not the
		// server (builds run in the background too).
		defer func() {
			if r := recover(); r != nil {
				m.err = fmt.Errorf("internal error: %v", r)
			}
		}()
		m.v, m.err = run()
	})
	return m.v, m.err
}

// running reports whether run has started and not ended.
func (m *memo[T]) running() bool {
	m.init.Do(func() { m.done = make(chan struct{}) })
	select {
	case <-m.done:
		return false
	default:
		return m.started.Load() != 0
	}
}

// within returns run's result if it is ready within wait (run started in
// the background when it has not yet), else ok false and how long it has
// been running.
func (m *memo[T]) within(wait time.Duration, run func() (T, error)) (v T, err error, ok bool, running time.Duration) {
	m.init.Do(func() { m.done = make(chan struct{}) })
	select {
	case <-m.done:
		return m.v, m.err, true, 0
	default:
	}
	go func() { _, _ = m.get(run) }()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-m.done:
		return m.v, m.err, true, 0
	case <-t.C:
	}
	if st := m.started.Load(); st != 0 {
		running = time.Since(time.Unix(0, st))
	}
	return v, nil, false, running
}

// text draws with a render function into a string.
func text(draw func(w io.Writer) error) (string, error) {
	var b strings.Builder
	err := draw(&b)
	return b.String(), err
}

// report is a page of text drawn by render, with the sections given.
type section struct {
	ID, Title string
	Text      string
	Frame     string        // a page of its own drawn into the report, by path
	Drawing   template.HTML // a drawing of render's (SVG)
	HTML      template.HTML // markup of a page template (links)
	TitleHTML template.HTML // Title with the functions' names linked (report sets it)
	Linked    template.HTML // Text with the functions' names linked (report sets it)
}

// rangePages keeps a page's HTML per time range (an analysis's result
// drawn and its functions' names linked: the same for the same range).
type rangePages = rangeMemo[[]byte]

// cachedReport answers with the page of sections build makes of the time
// range rng, made on the range's first request and kept (rangePages),
// or the error build returns.
//
// A request does not wait for a build longer than buildWait: it is
// answered with a page that says the page is being built and for how
// long, and asks again (the builds ahead of use wait: waitBuilt). A build
// ahead of use is given waitAnswered as pause, to call at its steps (a
// long analysis: Inputs.Diagnose); a build a request starts, nil.
func (s *Server) cachedReport(w http.ResponseWriter, r *http.Request, pages *rangePages, title string, rng Range, build func(rng Range, pause func()) ([]section, error)) {
	var pause func()
	if r.Context().Value(waitBuilt{}) != nil {
		pause = s.waitAnswered
	}
	run := func(rng Range) ([]byte, error) {
		secs, err := build(rng, pause)
		if err != nil {
			return nil, err
		}
		var b bytes.Buffer
		s.report(&b, title, rng, secs)
		return b.Bytes(), nil
	}
	var body []byte
	var err error
	if r.Context().Value(waitBuilt{}) != nil {
		body, err = pages.get(rng, run)
	} else {
		var ok bool
		var running time.Duration
		s.awaiting(r, func() { body, err, ok, running = pages.within(rng, buildWait, run) })
		if !ok {
			s.building(w, title, rng, running)
			return
		}
	}
	if err != nil {
		s.fail(w, title, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(body)
}

// buildWait is how long a request waits for its page's build before it is
// answered with a page that says the page is being built.
const buildWait = 50 * time.Millisecond

// waitBuilt is the context key of the builds ahead of use, which wait for
// the page they build.
type waitBuilt struct{}

// building answers a request for a page whose build is not over: the
// page says so, for how long it has been built, and asks for itself again
// (put in place, as a link would) until it is built.
func (s *Server) building(w http.ResponseWriter, title string, rng Range, running time.Duration) {
	w.Header().Set("Cache-Control", "no-store")
	s.html(w, "building.html", map[string]any{"Title": title, "Range": rng, "RangeText": rangeText(rng),
		"Running": running.Round(100 * time.Millisecond).String()})
}

// report writes a page of sections of the time range rng.
func (s *Server) report(w io.Writer, title string, rng Range, secs []section) {
	for i := range secs {
		secs[i].TitleHTML = template.HTML(s.linked(secs[i].Title, rng))
		if secs[i].Text != "" {
			secs[i].Linked = template.HTML(s.linked(secs[i].Text, rng))
		}
		if secs[i].Drawing != "" {
			secs[i].Drawing = template.HTML(s.linkMarkup(string(secs[i].Drawing), rng, "", ""))
		}
	}
	s.execute(w, "report.html", map[string]any{"Title": title, "Sections": secs, "Names": s.in.Names, "Bases": s.in.Bases,
		"Range": rng, "RangeText": rangeText(rng)})
}

// rangeText says which part of the recordings a page shows, "" for all.
func rangeText(r Range) string {
	if r.Whole() {
		return ""
	}
	return "From " + r.From.String() + " to " + r.To.String() + " after the first sample (the time view's selection)."
}

func (s *Server) fail(w http.ResponseWriter, title string, err error) {
	w.WriteHeader(http.StatusUnprocessableEntity)
	s.html(w, "missing.html", map[string]any{"Title": title, "Missing": err.Error()})
}

// badRange answers a request whose from and to parameters are wrong.
func (s *Server) badRange(w http.ResponseWriter, title string, err error) {
	w.WriteHeader(http.StatusBadRequest)
	s.html(w, "missing.html", map[string]any{"Title": title, "Missing": err.Error()})
}

var latencyPage = Page{
	Path:  "latency",
	Title: "Latency",
	About: "function latencies inferred from the stacks of system calls and context switches, slowest instances first (IntroPerf; culprit latency)",
	Needs: func(s *Server) string {
		if s.in.Latency == nil {
			return "needs a recording with system call or context switch events: culprit record --events cpu,syscalls,sched"
		}
		return ""
	},
	Ranged: true,
	Handler: func(s *Server) http.Handler {
		var pages rangePages
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rng, err := requestRange(r)
			if err != nil {
				s.badRange(w, "Latency", err)
				return
			}
			s.cachedReport(w, r, &pages, "Latency", rng, func(rng Range, pause func()) ([]section, error) {
				lat, err := s.in.Latency(rng)
				if err != nil {
					return nil, err
				}
				t, err := text(func(w io.Writer) error {
					return render.LatencyText(w, lat, render.LatencyView{Mode: introperf.Conservative, Top: 40, Name: strings.Join(s.in.Names, ", ")})
				})
				return []section{{ID: "latency", Title: "Slowest function instances", Text: t}}, err
			})
		})
	},
}

var contextsPage = Page{
	Path:  "contexts",
	Title: "Contexts",
	About: "the calling contexts whose latency grew most from the base run, as a heat map, ranked paths and the calling-context tree of both runs (IntroPerf; culprit contexts)",
	Needs: func(s *Server) string {
		if s.in.Contexts == nil {
			return "needs a base run (--base FILE) and recordings with system call or context switch events: culprit record --events cpu,syscalls,sched"
		}
		return ""
	},
	Ranged: true,
	Handler: func(s *Server) http.Handler {
		var cmp rangeMemo[introperf.Comparison]
		var pages, ccts, heats rangePages // the page, its two frames
		mux := http.NewServeMux()
		mux.HandleFunc("GET /contexts", func(w http.ResponseWriter, r *http.Request) {
			rng, err := requestRange(r)
			if err != nil {
				s.badRange(w, "Contexts", err)
				return
			}
			s.cachedReport(w, r, &pages, "Contexts", rng, func(rng Range, pause func()) ([]section, error) {
				c, err := cmp.get(rng, s.in.Contexts)
				if err != nil {
					return nil, err
				}
				t, err := text(func(w io.Writer) error { return render.ContextsText(w, c) })
				return []section{
					{ID: "heatmap", Title: "Heat map of the ranked paths", Frame: "contexts/heatmap" + rng.Query()},
					{ID: "paths", Title: "Ranked paths", Text: t},
					{ID: "cct", Title: "Calling-context tree of both runs (buggy red, base blue; ranked paths filled)", Frame: "contexts/cct" + rng.Query()},
				}, err
			})
		})
		mux.HandleFunc("GET /contexts/cct", func(w http.ResponseWriter, r *http.Request) {
			rng, err := requestRange(r)
			if err != nil {
				s.badRange(w, "Contexts", err)
				return
			}
			// Laid out on the range's first request (graphviz's dot, of
			// no request: its answer is kept) and kept.
			svg, err := ccts.get(rng, func(rng Range) ([]byte, error) {
				c, err := cmp.get(rng, s.in.Contexts)
				if err != nil {
					return nil, err
				}
				var dot bytes.Buffer
				if err := render.ContextsDOT(&dot, c); err != nil {
					return nil, err
				}
				svg, err := layout(context.Background(), dot.Bytes())
				return []byte(s.linkMarkup(string(svg), rng, "../", "_top")), err
			})
			if err != nil {
				s.fail(w, "Contexts", err)
				return
			}
			w.Header().Set("Content-Type", "image/svg+xml")
			_, _ = w.Write(svg)
		})
		mux.HandleFunc("GET /contexts/heatmap", func(w http.ResponseWriter, r *http.Request) {
			rng, err := requestRange(r)
			if err != nil {
				s.badRange(w, "Contexts", err)
				return
			}
			heat, err := heats.get(rng, func(rng Range) ([]byte, error) {
				c, err := cmp.get(rng, s.in.Contexts)
				if err != nil {
					return nil, err
				}
				t, err := text(func(w io.Writer) error { return render.ContextsHTML(w, c) })
				return []byte(s.linkMarkup(t, rng, "../", "_top")), err
			})
			if err != nil {
				s.fail(w, "Contexts", err)
				return
			}
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write(heat)
		})
		return mux
	},
}

var diagnosePage = Page{
	Path:  "diagnose",
	Title: "Diagnose",
	About: "the functions most likely to cause the slowdown of these runs against the base (normal) runs, with the bug pattern and why (vProf; culprit diagnose)",
	Needs: func(s *Server) string {
		if s.in.Diagnose == nil {
			return "needs normal runs as --base and buggy runs as FILE, both recorded with sampled values: culprit record --values"
		}
		return ""
	},
	Ranged: true,
	Handler: func(s *Server) http.Handler {
		var pages rangePages
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rng, err := requestRange(r)
			if err != nil {
				s.badRange(w, "Diagnose", err)
				return
			}
			s.cachedReport(w, r, &pages, "Diagnose", rng, func(rng Range, pause func()) ([]section, error) {
				d, err := s.in.Diagnose(rng, pause)
				if err != nil {
					return nil, err
				}
				t, err := text(func(w io.Writer) error { return render.DiagnoseText(w, d, 20) })
				if err != nil {
					return nil, err
				}
				secs := []section{{ID: "diagnosis", Title: "Ranked functions", Text: t}}
				return append(secs, s.histograms(d, rng)...), nil
			})
		})
	},
}

var tracePage = Page{
	Path:  "trace",
	Title: "Traced calls",
	About: "per-function call timings of a trace (calls, totals, mean, p50, p99, max), by caller, and against the base trace (culprit trace)",
	Needs: func(s *Server) string {
		if len(s.p.Calls) == 0 {
			return "needs a trace of function calls: culprit trace -f PATTERN -o FILE -- CMD"
		}
		return ""
	},
	Ranged: true,
	Handler: func(s *Server) http.Handler {
		var pages rangePages
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rng, err := requestRange(r)
			if err != nil {
				s.badRange(w, "Traced calls", err)
				return
			}
			s.cachedReport(w, r, &pages, "Traced calls", rng, func(rng Range, pause func()) ([]section, error) {
				p := s.p
				if !rng.Whole() {
					p = s.p.Apply(rng.Narrow(profile.Filter{AllEvents: true}))
				}
				var secs []section
				add := func(id, title string, draw func(w io.Writer) error) {
					t, err := text(draw)
					if err != nil {
						t = err.Error()
					}
					secs = append(secs, section{ID: id, Title: title, Text: t})
				}
				if s.in.Base != nil && len(s.in.Base.Calls) > 0 {
					add("diff", "Against the base", func(w io.Writer) error {
						return render.TraceDiffText(w, trace.Diff(s.in.Base, p, true), 0)
					})
				}
				add("functions", "Per function", func(w io.Writer) error {
					return render.TraceText(w, trace.Functions(p, false), p.Lost, 0)
				})
				add("callers", "Per function and caller", func(w io.Writer) error {
					return render.TraceText(w, trace.Functions(p, true), p.Lost, 0)
				})
				return secs, nil
			})
		})
	},
}

// histograms draws, for the best-ranked functions whose variable told the
// normal runs from the buggy ones, that variable's values in both.
func (s *Server) histograms(d *vprof.Result, rng Range) []section {
	buggy := s.p
	if !rng.Whole() {
		buggy = s.p.Apply(rng.Narrow(profile.Filter{AllEvents: true}))
	}
	var out []section
	for _, f := range d.Functions {
		if len(out) == maxHistograms {
			break
		}
		v := f.Var
		if v == nil || !v.Anomalous {
			continue
		}
		h, err := exprs.Histograms([]*profile.Profile{s.in.Base, buggy}, v.Name, v.Function, 24)
		if err != nil || h == nil {
			continue
		}
		title := fmt.Sprintf("%s: the values of %s in the normal and buggy runs (told apart by its %s)", f.Name, v.Name, v.Dimension)
		svg, err := text(func(w io.Writer) error { return render.HistogramsSVG(w, title, []string{"normal", "buggy"}, h) })
		if err != nil {
			continue
		}
		out = append(out, section{ID: fmt.Sprintf("hist-%d", len(out)), Title: title, Drawing: template.HTML(svg)})
	}
	return out
}

// maxHistograms is how many variables the diagnose page draws.
const maxHistograms = 5

var variancePage = Page{
	Path:  "variance",
	Title: "Variance tree",
	About: "which functions make the intervals' latency vary: the variance tree and its top factors (VProfiler; culprit variance)",
	Needs: func(s *Server) string {
		if s.in.Variance == nil {
			return "needs a recording of culprit variance: culprit variance --start FUNC -o FILE -- CMD"
		}
		return ""
	},
	Ranged: true,
	Handler: func(s *Server) http.Handler {
		var pages rangePages
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rng, err := requestRange(r)
			if err != nil {
				s.badRange(w, "Variance tree", err)
				return
			}
			s.cachedReport(w, r, &pages, "Variance tree", rng, func(rng Range, pause func()) ([]section, error) {
				v, err := s.in.Variance(rng)
				if err != nil {
					return nil, err
				}
				t, err := text(func(w io.Writer) error { return render.VarianceText(w, v, true) })
				return []section{{ID: "variance", Title: "Factors and tree", Text: t}}, err
			})
		})
	},
}

// layout draws a graph of graphviz's dot language as SVG with graphviz's
// dot, as pprof's graph view does: laying out a graph is graphviz's trade,
// and no Go library does it.
func layout(ctx context.Context, dot []byte) ([]byte, error) {
	path, err := exec.LookPath("dot")
	if err != nil {
		return nil, errors.New("drawing the calling-context tree needs graphviz's dot: install graphviz (apt-get install graphviz)")
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "-Tsvg")
	cmd.Stdin = bytes.NewReader(dot)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("graphviz's dot: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return out.Bytes(), nil
}
