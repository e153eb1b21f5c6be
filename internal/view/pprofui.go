package view

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/pprof/driver"
	pprof "github.com/google/pprof/profile"
)

// pprofViews are the views of pprof's web UI that the index links to, by
// the path pprof serves them under.
var pprofViews = []struct{ Path, Title string }{
	{"flamegraph", "Flame graph"},
	{"graph", "Call graph"},
	{"top", "Top functions"},
	{"peek", "Callers and callees"},
	{"source", "Source"},
	{"disasm", "Disassembly"},
}

// pprofUI returns the handlers of pprof's web UI for prof, keyed by the
// path below the UI's root ("/flamegraph", ...). With a base profile, every
// view shows prof minus base (pprof's -diff_base).
//
// pprof's driver builds each page from the whole profile it was given,
// afresh at every request (a copy through its encoding, then a merge to the
// view's granularity), and its flame graph sends the browser one stack per
// sample of that profile. culprit's profiles keep one sample per distinct
// stack of addresses and thread, tens of thousands on a real run, which
// pprof's function views merge to a few hundred. So each view is built
// from the profile merged to the finest granularity it shows (grainOf):
// the same pages from a profile up to a hundredth the size, and a flame
// graph the browser draws at once. Each granularity's UI is built the
// first time a view asks for it, or ahead by the returned pages' warm.
func pprofUI(prof, base *pprof.Profile, stderr io.Writer) (*pprofPages, error) {
	var uis [grains]struct {
		once     sync.Once
		handlers map[string]http.Handler
		err      error
	}
	build := func(g grain) (map[string]http.Handler, error) {
		u := &uis[g]
		u.once.Do(func() {
			p, b := prof, base
			if g < byAddress {
				p, b = merged(prof, g), merged(base, g)
			}
			u.handlers, u.err = driverUI(p, b, stderr)
		})
		return u.handlers, u.err
	}
	first, err := build(byFunction)
	if err != nil {
		return nil, err
	}
	handlers := map[string]http.Handler{}
	for path := range first {
		handlers[path] = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hs, err := build(grainOf(r))
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			hs[path].ServeHTTP(w, r)
		})
	}
	warm := func() {
		for g := byFunction + 1; g < grains; g++ {
			_, _ = build(g)
		}
	}
	return &pprofPages{handlers: handlers, warm: warm}, nil
}

// pprofPages is pprof's web UI for one profile: its handlers by path, and
// warm, which builds the UIs of the finer granularities ahead of their
// first use.
type pprofPages struct {
	handlers map[string]http.Handler
	warm     func()
}

// grain is a granularity pprof's views are built at.
type grain int

const (
	byFunction grain = iota // function and file, inlined frames kept
	byLine                  // and line
	byAddress               // the whole profile
	grains
)

// grainOf returns the granularity pprof's page asked for by r needs:
// pprof's own default for the view (driver.go and webui.go: peek shows
// lines, source and disassembly addresses, the others functions or
// files), or finer when a parameter asks.
func grainOf(r *http.Request) grain {
	q := r.URL.Query()
	switch {
	case r.URL.Path == "/source" || r.URL.Path == "/disasm" || r.URL.Path == "/download",
		q.Get("g") == "addresses", q.Has("noinlines"), q.Has("showcolumns"):
		return byAddress
	case r.URL.Path == "/peek", q.Get("g") == "lines":
		return byLine
	}
	return byFunction
}

// merged returns p merged to granularity g (function and file, and for
// byLine the line; inlined frames kept), its samples with the same stack
// and labels summed. A nil p stays nil.
func merged(p *pprof.Profile, g grain) *pprof.Profile {
	if p == nil {
		return nil
	}
	c := p.Copy()
	if err := c.Aggregate(true, true, true, g == byLine, false, false); err != nil {
		return p
	}
	// A profile without a period type (off-CPU time) comes out of Copy
	// and Merge with an empty one, which pprof's pages then show: keep
	// it without. (Merge needs one: it compares them through pointers.)
	noPeriod := p.PeriodType == nil
	if c.PeriodType == nil {
		c.PeriodType = &pprof.ValueType{}
	}
	m, err := pprof.Merge([]*pprof.Profile{c})
	if err != nil {
		return p
	}
	if noPeriod {
		m.PeriodType = nil
	}
	return m
}

// driverUI returns the handlers pprof's driver builds for prof and base:
// it hands them to its HTTPServer option, which keeps them instead of
// listening. The handlers that write pprof's settings file are left out:
// the server only reads.
func driverUI(prof, base *pprof.Profile, stderr io.Writer) (map[string]http.Handler, error) {
	pprofMu.Lock() // the driver keeps global state while it starts
	defer pprofMu.Unlock()
	var handlers map[string]http.Handler
	args := []string{"-http=localhost:1", "-no_browser", "-symbolize=none"}
	if base != nil {
		args = append(args, "-diff_base="+baseSource)
	}
	fs := &pprofFlags{FlagSet: flag.NewFlagSet("pprof", flag.ContinueOnError),
		args: append(args, profileSource)}
	fs.SetOutput(io.Discard)
	err := driver.PProf(&driver.Options{
		Flagset: fs,
		Fetch:   fetcher{prof, base},
		UI:      &pprofConsole{stderr: stderr},
		HTTPServer: func(a *driver.HTTPServerArgs) error {
			handlers = map[string]http.Handler{}
			for path, h := range a.Handlers {
				if path == "/saveconfig" || path == "/deleteconfig" {
					continue
				}
				handlers[path] = h
			}
			return nil
		},
	})
	if err != nil {
		return nil, fmt.Errorf("starting pprof's web UI: %w", err)
	}
	if handlers == nil {
		return nil, fmt.Errorf("starting pprof's web UI: it served nothing")
	}
	return handlers, nil
}

var pprofMu sync.Mutex

// The sources the driver is told to fetch: names, not files.
const (
	profileSource = "culprit"
	baseSource    = "culprit-base"
)

// fetcher hands the driver culprit's own profiles: the base for
// baseSource, the profile for any other source.
type fetcher struct{ p, base *pprof.Profile }

func (f fetcher) Fetch(src string, _, _ time.Duration) (*pprof.Profile, string, error) {
	if src == baseSource && f.base != nil {
		return f.base.Copy(), "", nil
	}
	return f.p.Copy(), "", nil
}

// pprofFlags gives the driver a fixed command line.
type pprofFlags struct {
	*flag.FlagSet
	args []string
}

func (f *pprofFlags) StringList(name, def, usage string) *[]*string {
	return &[]*string{f.String(name, def, usage)}
}
func (f *pprofFlags) ExtraUsage() string   { return "" }
func (f *pprofFlags) AddExtraUsage(string) {}
func (f *pprofFlags) Parse(usage func()) []string {
	f.Usage = usage
	if err := f.FlagSet.Parse(f.args); err != nil {
		return nil
	}
	return f.Args()
}

// pprofConsole is the driver's UI: no prompt, no browser; its messages
// about the server it would start are dropped, its errors (a source file
// that cannot be read) go to stderr.
type pprofConsole struct{ stderr io.Writer }

func (pprofConsole) ReadLine(string) (string, error) { return "", io.EOF }
func (pprofConsole) Print(...any)                    {}
func (c *pprofConsole) PrintErr(a ...any) {
	msg := fmt.Sprint(a...)
	if !strings.HasSuffix(msg, "\n") {
		msg += "\n"
	}
	fmt.Fprint(c.stderr, "pprof: "+msg)
}
func (pprofConsole) IsTerminal() bool                    { return false }
func (pprofConsole) WantBrowser() bool                   { return false }
func (pprofConsole) SetAutoComplete(func(string) string) {}

// serveUI serves a request for one of pprof's views, the path element
// "rest" naming it and "range" the time range, with the handlers of a
// pprof UI. Its HTML pages get culprit's links atop them (pprofNav).
func (s *Server) serveUI(w http.ResponseWriter, r *http.Request, pages *pprofPages) {
	h := pages.handlers["/"+r.PathValue("rest")]
	if h == nil {
		http.NotFound(w, r)
		return
	}
	r2 := r.Clone(r.Context())
	r2.URL.Path = "/" + r.PathValue("rest")
	r2.URL.RawPath = ""
	var rng Range
	if from, to, err := parseRange(r.PathValue("range")); err == nil {
		rng = Range{from, to}
	}
	bw := &bufferedWriter{header: w.Header()}
	h.ServeHTTP(bw, r2)
	body := bw.body.Bytes()
	if strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") {
		if i := bytes.Index(body, []byte("<body>")); i >= 0 {
			var nav bytes.Buffer
			if err := templates.ExecuteTemplate(&nav, "pprofnav", s.pprofNav(rng)); err == nil {
				i += len("<body>")
				body = slices.Concat(body[:i], nav.Bytes(), body[i:])
			}
		}
		w.Header().Del("Content-Length")
	}
	if bw.code != 0 {
		w.WriteHeader(bw.code)
	}
	_, _ = w.Write(body)
}

// pprofNav is the links atop pprof's pages (two levels below the root,
// pprof/RANGE/VIEW or offcpu/RANGE/VIEW), of the time range r: culprit's
// index, the time view and the pages that can be shown. Those marked Fn
// take the function selected in pprof's page along (its f parameter).
func (s *Server) pprofNav(r Range) []navLink {
	out := []navLink{{Path: "../../", Title: "index"}}
	for _, pg := range s.shown {
		l := navLink{Path: "../../" + pg.Path + pg.query(r), Title: pg.Title}
		if pg.Path == timePath || pg.Path == functionPath {
			l.Fn = true
		}
		out = append(out, l)
	}
	return out
}

// navLink is a link of pprofNav.
type navLink struct {
	Path, Title string
	Fn          bool // the function selected goes along as f
}

// bufferedWriter keeps a handler's response for serveUI to add to it.
type bufferedWriter struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (b *bufferedWriter) Header() http.Header { return b.header }
func (b *bufferedWriter) Write(p []byte) (int, error) {
	if b.code == 0 {
		b.code = http.StatusOK
	}
	return b.body.Write(p)
}
func (b *bufferedWriter) WriteHeader(code int) {
	if b.code == 0 {
		b.code = code
	}
}
