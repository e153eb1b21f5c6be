package view

import (
	"flag"
	"fmt"
	"io"
	"net/http"
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
