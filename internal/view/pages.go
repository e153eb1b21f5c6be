package view

import "net/http"

// Page is one of culprit's own pages. Handler answers GET requests for
// Path (the page) and below Path+"/" (its data, e.g. Path+"/data").
type Page struct {
	Path    string // below the server's root, e.g. "time"
	Title   string // the index's link
	About   string // one line under the link
	Handler func(s *Server) http.Handler
	// Needs, when set, says what the page needs that the server's inputs
	// lack ("" when they have it); the index then says so instead of
	// linking to it.
	Needs func(s *Server) string
	// Ranged pages show a time range of the recordings when asked with
	// ?from=FROM&to=TO (the time view's selection).
	Ranged bool
	// Focus pages show the functions matching RE when asked with
	// ?f=RE: the links to them atop pprof's pages take the function
	// selected there along (pprofNav).
	Focus bool
	// ForFunction, when set, is the link (its path below the server's
	// root, and its text) to this page showing one function, for the
	// function page: q is "?f=RE", RE the function's regular expression
	// as pprof's f parameter, and rng the function page's range.
	ForFunction func(rng Range, q string) link
	// UI is set on a page whose views are pprof's UI, served below
	// Path/RANGE/VIEW as pprof's own are below pprof/RANGE/VIEW: they are
	// put in place as pprof's are (swapUIs).
	UI bool
}

// Every page is put in place of the page a link or a form leads from
// (swapScript), and that page back in place of it: a page's scripts run
// again in a document that showed other pages before, so they declare
// no global with let or const, and add listeners only to their elements
// or through window's and document's addEventListener.

// query is how a link asks the page for the time range r.
func (pg Page) query(r Range) string {
	if !pg.Ranged {
		return ""
	}
	return r.Query()
}

func (pg Page) missing(s *Server) string {
	if pg.Needs == nil {
		return ""
	}
	return pg.Needs(s)
}

// Pages are culprit's own pages, in the index's order. An analysis that
// has something to show adds its page here; the server needs no other
// change.
var Pages = []Page{
	timePage,
	functionPage,
	offCPUPage,
	latencyPage,
	contextsPage,
	diagnosePage,
	tracePage,
	variancePage,
	historyPage,
	modelsPage,
}
