package view

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"

	pprof "github.com/google/pprof/profile"
)

// Two addresses in one function at two lines, and a caller: merged to
// functions, the two stacks become one with their values summed; merged to
// lines they stay two. Off-CPU profiles have no period type and merge too.
func TestMerged(t *testing.T) {
	for _, period := range []*pprof.ValueType{{Type: "cpu", Unit: "nanoseconds"}, nil} {
		m := &pprof.Mapping{ID: 1, Start: 0x1000, Limit: 0x2000, File: "/bin/x", HasFunctions: true, HasLineNumbers: true}
		leaf := &pprof.Function{ID: 1, Name: "leaf", Filename: "x.c"}
		caller := &pprof.Function{ID: 2, Name: "caller", Filename: "x.c"}
		locs := []*pprof.Location{
			{ID: 1, Mapping: m, Address: 0x1010, Line: []pprof.Line{{Function: leaf, Line: 10}}},
			{ID: 2, Mapping: m, Address: 0x1020, Line: []pprof.Line{{Function: leaf, Line: 11}}},
			{ID: 3, Mapping: m, Address: 0x1100, Line: []pprof.Line{{Function: caller, Line: 20}}},
		}
		p := &pprof.Profile{
			SampleType: []*pprof.ValueType{{Type: "samples", Unit: "count"}},
			PeriodType: period,
			Mapping:    []*pprof.Mapping{m},
			Function:   []*pprof.Function{leaf, caller},
			Location:   locs,
			Sample: []*pprof.Sample{
				{Location: []*pprof.Location{locs[0], locs[2]}, Value: []int64{3}, NumLabel: map[string][]int64{"tid": {7}}},
				{Location: []*pprof.Location{locs[1], locs[2]}, Value: []int64{4}, NumLabel: map[string][]int64{"tid": {7}}},
			},
		}
		fn := merged(p, tier{byFunction, true})
		if len(fn.Sample) != 1 || fn.Sample[0].Value[0] != 7 {
			t.Errorf("period %v: merged to functions: %d samples, want 1 of 7", period, len(fn.Sample))
		}
		if (fn.PeriodType == nil) != (period == nil) {
			t.Errorf("period %v: merged profile's period type %v", period, fn.PeriodType)
		}
		if ln := merged(p, tier{byLine, true}); len(ln.Sample) != 2 {
			t.Errorf("period %v: merged to lines: %d samples, want 2", period, len(ln.Sample))
		}
		// The same stack in two threads: one sample without labels,
		// two with them.
		p.Sample = append(p.Sample, &pprof.Sample{Location: []*pprof.Location{locs[0], locs[2]},
			Value: []int64{5}, NumLabel: map[string][]int64{"tid": {8}}})
		ad := merged(p, tier{byAddress, false})
		byAddr := map[uint64]int64{}
		for _, s := range ad.Sample {
			byAddr[s.Location[0].Address] += s.Value[0]
			if len(s.NumLabel)+len(s.Label) != 0 {
				t.Errorf("period %v: merged without labels, a sample has %v", period, s.NumLabel)
			}
		}
		if len(ad.Sample) != 2 || byAddr[0x1010] != 8 || byAddr[0x1020] != 4 {
			t.Errorf("period %v: merged to addresses without labels: %d samples %v, want 2: 8 at 0x1010, 4 at 0x1020", period, len(ad.Sample), byAddr)
		}
		// A recursion: the same stack of addresses at two depths. Once
		// per stack, both are leaf, rec, main: one sample of their sum.
		rec := &pprof.Function{ID: 3, Name: "rec", Filename: "x.c"}
		rl := &pprof.Location{ID: 4, Mapping: m, Address: 0x1200, Line: []pprof.Line{{Function: rec, Line: 30}}}
		q := &pprof.Profile{SampleType: p.SampleType, PeriodType: period, Mapping: p.Mapping,
			Function: []*pprof.Function{leaf, caller, rec}, Location: append(slices.Clone(locs), rl),
			Sample: []*pprof.Sample{
				{Location: []*pprof.Location{locs[0], rl, locs[2]}, Value: []int64{2}},
				{Location: []*pprof.Location{locs[0], rl, rl, rl, locs[2]}, Value: []int64{5}},
				{Location: []*pprof.Location{locs[1], rl, rl, locs[2], locs[2]}, Value: []int64{1}},
			}}
		once := merged(q, tier{byAddressOnce, false})
		stacks := map[string]int64{}
		for _, s := range once.Sample {
			var ids []string
			for _, l := range s.Location {
				ids = append(ids, fmt.Sprint(l.Address))
			}
			stacks[strings.Join(ids, " ")] += s.Value[0]
		}
		if want := map[string]int64{"4112 4608 4352": 7, "4128 4608 4352": 1}; !maps.Equal(stacks, want) {
			t.Errorf("period %v: merged to addresses once per stack: %v, want %v", period, stacks, want)
		}
		if len(q.Sample[1].Location) != 5 {
			t.Errorf("period %v: merged once per stack changed its input", period)
		}
		if ad := merged(p, tier{byAddress, true}); ad != p {
			t.Errorf("period %v: the whole profile with labels is not the profile", period)
		}
		if fn := merged(p, tier{byFunction, false}); len(fn.Sample) != 1 || fn.Sample[0].Value[0] != 12 {
			t.Errorf("period %v: merged to functions without labels: %d samples, want 1 of 12", period, len(fn.Sample))
		}
		if len(p.Sample) != 3 || p.Sample[0].NumLabel == nil || p.Sample[0].Location[0].Address != 0x1010 {
			t.Errorf("period %v: merged changed its input", period)
		}
	}
}

func TestTierOf(t *testing.T) {
	for url, want := range map[string]tier{
		"/flamegraph":           {byFunction, false},
		"/top":                  {byFunction, false},
		"/graph?f=x":            {byFunction, false},
		"/top?g=files":          {byFunction, false},
		"/top?tf=tid=7":         {byFunction, true},
		"/flamegraph?th=comm":   {byFunction, true},
		"/top?config=mine":      {byFunction, true},
		"/peek?f=x":             {byLine, false},
		"/top?g=lines":          {byLine, false},
		"/peek?f=x&ti=pid=1":    {byLine, true},
		"/source?f=x":           {byAddressOnce, false},
		"/disasm?f=x&si=cpu":    {byAddressOnce, false},
		"/source?f=x&h=y":       {byAddress, false},
		"/disasm?f=x&tf=tid=7":  {byAddress, true},
		"/download":             {byAddress, true},
		"/graph?g=addresses":    {byAddress, false},
		"/flamegraph?noinlines": {byAddress, false},
	} {
		if got := tierOf(httptest.NewRequest("GET", url, nil)); got != want {
			t.Errorf("%s: tier %v, want %v", url, got, want)
		}
	}
}

// Responses are kept by key up to maxResponses, the oldest dropped first,
// and a kept one is written back with its status, headers and body.
func TestPagesKeep(t *testing.T) {
	var p pprofPages
	for i := range maxResponses + 1 {
		p.keep(fmt.Sprint(i), &response{code: 200, header: http.Header{"Content-Type": {"text/plain"}}, body: []byte(fmt.Sprint("body ", i))})
	}
	if w := httptest.NewRecorder(); p.cached(w, "0") {
		t.Errorf("the oldest response is still kept past %d", maxResponses)
	}
	w := httptest.NewRecorder()
	if !p.cached(w, "1") {
		t.Fatalf("response 1 not kept")
	}
	if w.Code != 200 || w.Header().Get("Content-Type") != "text/plain" || w.Body.String() != "body 1" {
		t.Errorf("kept response written as %d %v %q", w.Code, w.Header(), w.Body)
	}
	p.keep("big", &response{code: 200, body: make([]byte, maxResponseBytes)})
	if p.cached(httptest.NewRecorder(), "big") {
		t.Errorf("a response of %d bytes was kept", maxResponseBytes)
	}
}

// After warm, the whole profile's flame graph, top and call graph are
// answered from the responses kept, and they are pprof's pages of the
// profile.
func TestPagesWarm(t *testing.T) {
	m := &pprof.Mapping{ID: 1, Start: 0x1000, Limit: 0x2000, File: "/bin/x", HasFunctions: true, HasLineNumbers: true}
	leaf := &pprof.Function{ID: 1, Name: "leaf", Filename: "x.c"}
	caller := &pprof.Function{ID: 2, Name: "caller", Filename: "x.c"}
	locs := []*pprof.Location{
		{ID: 1, Mapping: m, Address: 0x1010, Line: []pprof.Line{{Function: leaf, Line: 10}}},
		{ID: 2, Mapping: m, Address: 0x1100, Line: []pprof.Line{{Function: caller, Line: 20}}},
	}
	p := &pprof.Profile{
		SampleType: []*pprof.ValueType{{Type: "samples", Unit: "count"}},
		PeriodType: &pprof.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Mapping:    []*pprof.Mapping{m},
		Function:   []*pprof.Function{leaf, caller},
		Location:   locs,
		Sample: []*pprof.Sample{
			{Location: locs, Value: []int64{3}, NumLabel: map[string][]int64{"tid": {7}}},
		},
	}
	pages, err := pprofUI(p, nil, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"/flamegraph?", "/top?", "/graph?"} {
		if pages.cached(httptest.NewRecorder(), key) {
			t.Errorf("%s kept before warm", key)
		}
	}
	pages.warm()
	for _, key := range []string{"/flamegraph?", "/top?"} {
		w := httptest.NewRecorder()
		if !pages.cached(w, key) {
			t.Errorf("%s not kept after warm", key)
			continue
		}
		if !strings.Contains(w.Body.String(), "caller") {
			t.Errorf("%s: pprof's page does not name the caller", key)
		}
	}
	w := httptest.NewRecorder()
	pages.handlers["/top"].ServeHTTP(w, httptest.NewRequest("GET", "/top", nil))
	if w.Code != 200 || !strings.Contains(w.Body.String(), "leaf") {
		t.Errorf("top after warm: %d, without leaf", w.Code)
	}
}

// A key's lock makes a second holder wait, and is forgotten once no one
// holds or waits for it.
func TestPagesLockKey(t *testing.T) {
	var p pprofPages
	unlock := p.lockKey("/top?")
	got, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		defer p.lockKey("/top?")()
		close(got)
	}()
	users := func() int {
		p.mu.Lock()
		defer p.mu.Unlock()
		if l := p.keys["/top?"]; l != nil {
			return l.users
		}
		return 0
	}
	for users() != 2 { // the second holder is waiting
		runtime.Gosched()
	}
	select {
	case <-got:
		t.Fatal("a second holder got the key's lock while it was held")
	default:
	}
	p.lockKey("/graph?")() // another key does not wait
	unlock()
	<-done
	if len(p.keys) != 0 {
		t.Errorf("locks kept after use: %v", p.keys)
	}
}
