package view

import (
	"io"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	pprof "github.com/google/pprof/profile"
)

// TestSwapViews checks that every view pprof's View menu links to is one
// the swap script puts in place, and that each is a page of the UI.
func TestSwapViews(t *testing.T) {
	m := &pprof.Mapping{ID: 1, Start: 0x1000, Limit: 0x2000, File: "/bin/x", HasFunctions: true}
	fn := &pprof.Function{ID: 1, Name: "leaf", Filename: "x.c"}
	loc := &pprof.Location{ID: 1, Mapping: m, Address: 0x1010, Line: []pprof.Line{{Function: fn, Line: 10}}}
	p := &pprof.Profile{
		SampleType: []*pprof.ValueType{{Type: "samples", Unit: "count"}},
		PeriodType: &pprof.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Mapping:    []*pprof.Mapping{m}, Function: []*pprof.Function{fn}, Location: []*pprof.Location{loc},
		Sample: []*pprof.Sample{{Location: []*pprof.Location{loc}, Value: []int64{3}}},
	}
	pages, err := pprofUI(p, nil, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	pages.handlers["/top"].ServeHTTP(w, httptest.NewRequest("GET", "/top", nil))
	page := w.Body.String()
	i := strings.Index(page, `id="view"`)
	j := strings.Index(page, `id="refine"`)
	if i < 0 || j < i {
		t.Fatalf("pprof's top page has no View menu before its Refine menu")
	}
	links := regexp.MustCompile(`href="\./([^"?]*)"`).FindAllStringSubmatch(page[i:j], -1)
	if len(links) < 6 {
		t.Fatalf("pprof's View menu links to %d views, want 6 at least", len(links))
	}
	views := swapViews()
	for _, l := range links {
		if !slices.Contains(views, l[1]) {
			t.Errorf("pprof's View menu links to %q, which is not put in place (%q)", l[1], views)
		}
	}
	for _, v := range views {
		if pages.handlers["/"+v] == nil {
			t.Errorf("%q is put in place but is no page of pprof's UI", v)
		}
	}
	if !strings.Contains(swapScriptHTML, `const views = ["",`) || strings.Contains(swapScriptHTML, "VIEWS") {
		t.Errorf("the swap script has no list of views: %.300s", swapScriptHTML)
	}
}

// TestPagesDeclare checks that what the server says of a page it reads
// from Pages: the links atop pprof's pages take the function selected
// there to the Focus pages (the time view and the function page among
// them), the swap script puts the views of the UI pages (the off-CPU
// flame graph's) in place as pprof's, and every page's link for one
// function leads to the page.
func TestPagesDeclare(t *testing.T) {
	s := &Server{shown: Pages}
	nav := s.pprofNav(Range{})
	focus := map[string]bool{}
	for i, l := range nav[1:] {
		if want := "../../" + Pages[i].Path; l.Path != want || l.Fn != Pages[i].Focus {
			t.Errorf("pprof's link %d: %s, function along %v; want %s, %v", i, l.Path, l.Fn, want, Pages[i].Focus)
		}
		focus[Pages[i].Path] = Pages[i].Focus
	}
	if !focus[timePath] || !focus[functionPath] || focus[offCPUPath] {
		t.Errorf("pages taking the function along: %v, want the time view and the function page, not the off-CPU flame graph", focus)
	}
	if uis := swapUIs(); !slices.Equal(uis, []string{"pprof", offCPUPath}) {
		t.Errorf("swapUIs() = %v, want pprof's and the off-CPU flame graph's", uis)
	}
	rng := Range{From: time.Second, To: 2 * time.Second}
	var linked []string
	for _, pg := range Pages {
		if pg.ForFunction == nil {
			continue
		}
		l := pg.ForFunction(rng, "?f=leaf")
		if !strings.HasPrefix(l.Path, pg.Path) || !strings.HasSuffix(l.Path, "?f=leaf") || l.Title == "" {
			t.Errorf("page %s: link for a function %+v, want one to the page, f along", pg.Path, l)
		}
		linked = append(linked, pg.Path)
	}
	if !slices.Equal(linked, []string{timePath, offCPUPath}) {
		t.Errorf("pages linked from the function page: %v, want the time view and the off-CPU flame graph", linked)
	}
}
