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
// view shows prof minus base (pprof's -diff_base). pprof's driver builds the
// handlers and hands them to its HTTPServer option, which keeps them
// instead of listening. The handlers that write pprof's settings file are
// left out: the server only reads.
func pprofUI(prof, base *pprof.Profile, stderr io.Writer) (map[string]http.Handler, error) {
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
func (s *Server) serveUI(w http.ResponseWriter, r *http.Request, handlers map[string]http.Handler) {
	h := handlers["/"+r.PathValue("rest")]
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
