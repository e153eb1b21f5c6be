// Package view serves recordings as one local web page: pprof's own web UI
// (github.com/google/pprof/driver) for the CPU views, fed with culprit's
// symbolized profile, and culprit's pages for what pprof cannot show (the
// time view), listed in Pages. The pages are embedded in the binary and
// draw with plain JavaScript: nothing is fetched from elsewhere.
//
// Every request must carry the server's random token as the first element
// of its path (/TOKEN/...); others are refused with 403, so other users of
// the machine cannot read the profiles. The server reads no file after it
// starts other than the recorded objects and sources pprof's source and
// disassembly views name, and the history store cli hands over: no request
// parameter is a path. The calling-context tree is laid out by graphviz's
// dot, fed on its standard input.
package view

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/pprof/driver"
	pprof "github.com/google/pprof/profile"

	"github.com/culprit-dev/culprit/internal/analysis/check"
	"github.com/culprit-dev/culprit/internal/analysis/introperf"
	"github.com/culprit-dev/culprit/internal/analysis/models"
	"github.com/culprit-dev/culprit/internal/analysis/variance"
	"github.com/culprit-dev/culprit/internal/analysis/vprof"
	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/render"
	"github.com/culprit-dev/culprit/internal/store"
	"github.com/culprit-dev/culprit/internal/symbol"
)

//go:embed pages/*.html
var pageFiles embed.FS

var templates = template.Must(template.ParseFS(pageFiles, "pages/*.html"))

// Inputs are what a server shows. cli loads the recordings; the analyses
// that read more than the samples (the recorded objects, the mapping
// times) come as functions that run them, called once, on the first
// request of their page.
type Inputs struct {
	Profile *profile.Profile // the selected CPU samples (and traced calls), with their times
	Events  *profile.Profile // Profile's selection with every event kind (system calls, context switches), or nil
	Base    *profile.Profile // --base: the run to compare with, or nil
	// BaseEvents is Base's selection with every event kind, or nil.
	BaseEvents *profile.Profile
	Names      []string // the recordings of Profile
	Bases      []string // the recordings of Base

	// The analyses, each of the Range of Profile given (of the base run,
	// always all of it), or nil.
	Latency  func(Range) (*introperf.Result, error)    // latency inference on Profile's events
	Contexts func(Range) (introperf.Comparison, error) // Base's contexts against Profile's
	// Diagnose, Base as normal runs and Profile as buggy, runs for
	// minutes on large recordings: it calls pause (nil: none) at its
	// steps, where a build ahead of use waits while requests are answered.
	Diagnose func(rng Range, pause func()) (*vprof.Result, error)
	Variance func(Range) (*variance.Result, error) // the variance tree of a recording of culprit variance

	// Objects opens a recorded object by its path, as it was recorded
	// (a copy culprit archive kept when it changed since), for pprof's
	// source and disassembly views; with nil they read no object.
	Objects func(path string) (*symbol.Object, error)

	// The history store of the repository the server runs in, or nil:
	// its runs, the models of a commit's runs (and the parameter's name),
	// and a commit checked against its nearest ancestor with stored runs.
	// A commit is HEAD or the full hash of a stored one.
	Runs   func() ([]store.Run, error)
	Models func(commit string) ([]models.Function, string, error)
	Check  func(commit string) (render.CheckHeader, check.Result, error)
}

// Server answers the requests of one view of a profile.
type Server struct {
	in    Inputs
	p     *profile.Profile // in.Profile
	base  *pprof.Profile   // in.Base for pprof, or nil
	shown []Page           // the pages in.Profile can feed

	fnOnce sync.Once
	fns    map[string]bool // the profile's function names (functions)
	token  string
	stderr io.Writer
	mux    *http.ServeMux

	uis  uiCache        // pprof's UI per time range ("" the whole profile)
	objs driver.ObjTool // the objects for pprof's UIs (nil: none)

	offMemo    memo[*profile.Profile] // offCPU's
	valuesMemo memo[*valueSummary]    // the time view's values by source
	valuesRead atomic.Int64           // how many values readValues has read
	readMost   int                    // rawReadMost (tests change it)
	// rangeValues are the values of summarised sources read again for a
	// range (valueLanes), the last maxRanges ranges'.
	rangeValues rangeMemo[map[int]*sourceValues]

	// warm are the page's builds that New starts in the background, in
	// order; a page's Handler adds its own.
	warm []func()

	// answering counts the requests being answered: a build ahead of use
	// starts only when there is none (waitAnswered), so that a click
	// does not share the CPU with a build started meanwhile.
	answerMu  sync.Mutex
	answered  *sync.Cond
	answering int
	pausing   int // builds waiting in waitAnswered (for tests)
}

// maxRanges is how many time ranges keep their pprof UI (and their
// analyses' results) at once; the oldest is dropped (and rebuilt if asked
// again).
const maxRanges = 8

// uiCache keeps pprof's UIs by time range key: the whole profile's ("")
// for good, the last maxRanges others. A range's build does not wait for
// another's, but pprof's driver starts one UI at a time (pprofMu); a
// range's build goes before the builds ahead of use (requesting).
type uiCache = memos[string, *pprofPages]

// New returns a server for in, whose samples keep their times (loaded
// without merging). Its messages (pprof's errors) go to stderr.
func New(in Inputs, stderr io.Writer) (*Server, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	s := &Server{in: in, p: in.Profile, token: hex.EncodeToString(b[:]), stderr: stderr,
		mux: http.NewServeMux(), readMost: rawReadMost}
	if in.Base != nil && len(in.Base.Samples) > 0 {
		s.base = render.Pprof(in.Base)
	}
	if in.Objects != nil {
		s.objs = newObjTool(in.Objects)
	}
	s.mux.HandleFunc("GET /{$}", s.index)
	s.mux.HandleFunc("/pprof/{range}/{rest...}", s.pprof)
	for _, pg := range Pages {
		if pg.missing(s) == "" {
			s.shown = append(s.shown, pg)
		}
	}
	var shown []http.Handler // the pages the index links to, in s.shown's order
	for _, pg := range Pages {
		h := pg.Handler(s)
		if pg.missing(s) == "" {
			shown = append(shown, h)
		}
		if why := pg.missing(s); why != "" {
			h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusNotFound)
				s.html(w, "missing.html", map[string]any{"Title": pg.Title, "Missing": why})
			})
		}
		s.mux.Handle("GET /"+pg.Path, h)
		s.mux.Handle("GET /"+pg.Path+"/", h)
	}
	// What the first views ask for is built in the background, one after
	// the other, so that the URL is printed as soon as the recordings are
	// loaded: the time view's data (cheap), then pprof's UI of the whole
	// profile (its function views first, its flame graph, top and call
	// graph pages, then the views of lines and addresses). A request that comes first waits for it; pprof's errors show on its pages. (A trace of calls
	// has no samples for it.)
	if s.hasSamples() {
		s.warm = append(s.warm, func() {
			if pages, err := s.ui(""); err == nil {
				pages.warm()
			}
		})
	}
	// Then the time view's values by source, which its lanes of values
	// ask for once its maps are drawn.
	if len(s.p.ValueSources) > 0 {
		s.warm = append(s.warm, s.valuesAhead)
	}
	// Last, every page the index links to, of the whole recording, so that
	// a first click shows what was kept instead of running its analysis
	// (each page keeps its results: rangePages, memos).
	for i, h := range shown {
		path := "/" + s.shown[i].Path
		s.warm = append(s.warm, func() {
			// A page that fails here fails again, with its message, when
			// it is asked for; the server goes on.
			defer func() { _ = recover() }()
			r, err := http.NewRequestWithContext(context.WithValue(context.Background(), waitBuilt{}, true), http.MethodGet, path, nil)
			if err == nil {
				h.ServeHTTP(discard{}, r)
			}
		})
	}
	s.answered = sync.NewCond(&s.answerMu)
	go func() {
		for _, f := range s.warm {
			s.waitAnswered()
			f()
		}
	}()
	return s, nil
}

// waitAnswered waits until no request is being answered: the one way a
// build ahead of use gives up the CPU to requests. Such a build waits
// here before it starts, and the long ones midway too (valuesAhead every
// 2^16 values; diagnose's analysis at its steps, Inputs.Diagnose's
// pause), never while they hold what a request may wait for unbounded:
// the requests for their results wait for them buildWait at most, and
// not counted as being answered meanwhile (awaiting), so that a build
// does not pause for the request that waits for it.
func (s *Server) waitAnswered() {
	s.answerMu.Lock()
	for s.answering > 0 {
		s.pausing++
		s.answered.Wait()
		s.pausing--
	}
	s.answerMu.Unlock()
}

// answer counts a request as being answered until the returned func is
// called.
func (s *Server) answer() func() {
	s.count(1)
	return func() { s.count(-1) }
}

// count adds n to the requests being answered and wakes the builds
// waiting in waitAnswered when there is none left.
func (s *Server) count(n int) {
	s.answerMu.Lock()
	if s.answering += n; s.answering == 0 {
		s.answered.Broadcast()
	}
	s.answerMu.Unlock()
}

// answeringKey marks the context of a request counted by answer.
type answeringKey struct{}

// awaiting runs wait, which waits for a build, with r not counted as
// being answered meanwhile: the builds ahead of use, the one r waits for
// among them, do not pause for a request that only waits.
func (s *Server) awaiting(r *http.Request, wait func()) {
	if r.Context().Value(answeringKey{}) == nil {
		wait()
		return
	}
	s.count(-1)
	defer s.count(1)
	wait()
}

// hasSamples reports whether there are CPU samples, which pprof's views
// and the time view show.
func (s *Server) hasSamples() bool { return len(s.p.Samples) > 0 }

// link is a link of the index or of the links atop every page.
type link struct{ Path, Title string }

// Path is the root of the pages: "/TOKEN/".
func (s *Server) Path() string { return "/" + s.token + "/" }

// Profile is the profile the server shows.
func (s *Server) Profile() *profile.Profile { return s.p }

// ServeHTTP refuses requests whose path does not start with the token and
// serves the others with the token removed.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/")
	tok, rest, _ := strings.Cut(rest, "/")
	if !ok || subtle.ConstantTimeCompare([]byte(tok), []byte(s.token)) != 1 {
		http.Error(w, "forbidden: open the URL culprit view printed", http.StatusForbidden)
		return
	}
	if rest == "" && !strings.HasSuffix(r.URL.Path, "/") {
		http.Redirect(w, r, s.Path(), http.StatusFound)
		return
	}
	defer s.answer()()
	r2 := r.Clone(context.WithValue(r.Context(), answeringKey{}, true))
	r2.URL.Path = "/" + rest
	r2.URL.RawPath = ""
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer") // the token is in the URL
	s.mux.ServeHTTP(w, r2)
}

func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	type entry struct{ Path, Title, About, Missing string }
	var pp, own []entry
	if s.hasSamples() {
		for _, v := range pprofViews {
			pp = append(pp, entry{Path: "pprof/all/" + v.Path, Title: v.Title})
		}
	}
	for _, pg := range Pages {
		own = append(own, entry{pg.Path, pg.Title, pg.About, pg.missing(s)})
	}
	s.html(w, "index.html", map[string]any{
		"Samples": len(s.p.Samples), "Calls": len(s.p.Calls), "Names": s.in.Names, "Bases": s.in.Bases,
		"Pprof": pp, "Pages": own,
	})
}

// nav is the links atop every page, of the time range r: the index,
// pprof's flame graph and the pages that can be shown.
func (s *Server) nav(r Range) []link {
	out := []link{{"./", "index"}}
	if s.hasSamples() {
		out = append(out, link{"pprof/" + r.Key() + "/flamegraph", "flame graph"})
	}
	for _, pg := range s.shown {
		out = append(out, link{pg.Path + pg.query(r), pg.Title})
	}
	return out
}

// html writes a page from the embedded templates; data's "Nav" is set to
// the links of the time range data["Range"] (a Range; the whole recording
// when unset).
func (s *Server) html(w http.ResponseWriter, name string, data map[string]any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	s.execute(w, name, data)
}

// execute writes what html answers, the page alone.
func (s *Server) execute(w io.Writer, name string, data map[string]any) {
	r, _ := data["Range"].(Range)
	data["Nav"] = s.nav(r)
	data["Swap"] = swapOwnHTML
	if err := templates.ExecuteTemplate(w, name, data); err != nil {
		fmt.Fprintf(s.stderr, "culprit view: %s: %v\n", name, err)
	}
}

// pprof serves pprof's web UI for the samples of a time range, named in the
// path as "all" or FROM-TO, offsets from the first sample ("1.5s-2s").
func (s *Server) pprof(w http.ResponseWriter, r *http.Request) {
	if !s.hasSamples() {
		http.Error(w, "the recordings have no CPU samples for pprof's views", http.StatusNotFound)
		return
	}
	key := r.PathValue("range")
	if key == "all" {
		key = ""
	}
	if _, _, err := parseRange(key); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	handlers, err := s.ui(key)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	s.serveUI(w, r, handlers)
}

// parseRange parses "" (everything) or FROM-TO.
func parseRange(key string) (from, to time.Duration, err error) {
	if key == "" {
		return 0, 0, nil
	}
	a, b, ok := strings.Cut(key, "-")
	if ok {
		if from, err = time.ParseDuration(a); err == nil {
			to, err = time.ParseDuration(b)
		}
	}
	if !ok || err != nil || from < 0 || to <= from {
		return 0, 0, fmt.Errorf("time range %q: want FROM-TO, offsets from the first sample with FROM < TO (e.g. 1.5s-2s)", key)
	}
	return from, to, nil
}

// rangeProfile returns the samples of the time range key.
func (s *Server) rangeProfile(key string) (*profile.Profile, error) {
	from, to, err := parseRange(key)
	if err != nil || key == "" {
		return s.p, err
	}
	return s.p.Apply(profile.Filter{From: from, To: to, HasFrom: true, HasTo: true}), nil
}

// ui returns pprof's UI for the time range key, built on first use.
func (s *Server) ui(key string) (*pprofPages, error) {
	return s.uis.get(key, func(key string) (*pprofPages, error) {
		if key != "" { // a range's, asked for by a request
			defer requesting()()
		}
		p, err := s.rangeProfile(key)
		if err != nil {
			return nil, err
		}
		if len(p.Samples) == 0 {
			return nil, fmt.Errorf("no samples between %s", strings.Replace(key, "-", " and ", 1))
		}
		return pprofUI(render.Pprof(p), s.base, s.objs, s.stderr)
	})
}

// discard is the response writer of the builds ahead of use: what the
// page's handler keeps is the point, not what it writes.
type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}
