package view

import (
	"io"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

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
