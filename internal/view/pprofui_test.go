package view

import (
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
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
		"/peek?f=x":             {byLineCut, false},
		"/peek?f=x&h=y&si=cpu":  {byLineCut, false},
		"/peek?f=x&calltree=1":  {byLine, false},
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

func TestCutRepeats(t *testing.T) {
	locs := map[byte]*pprof.Location{}
	stack := func(s string) []*pprof.Location {
		var out []*pprof.Location
		for _, c := range []byte(s) {
			if locs[c] == nil {
				locs[c] = &pprof.Location{ID: uint64(c)}
			}
			out = append(out, locs[c])
		}
		return out
	}
	str := func(st []*pprof.Location) string {
		var b []byte
		for _, l := range st {
			b = append(b, byte(l.ID))
		}
		return string(b)
	}
	for in, want := range map[string]string{
		"":              "",
		"abc":           "abc",
		"aab":           "aab",
		"aaab":          "aab",
		"xaaaaaaab":     "xaab",
		"xababab":       "xabab",
		"xabababababy":  "xababy",
		"xabcabcabcabc": "xabcabc",
		"abaabaaba":     "abaaba",
		"aaabbbcccaaa":  "aabbccaa",
		"abcabdabc":     "abcabdabc",
	} {
		if got := str(cutRepeats(stack(in))); got != want {
			t.Errorf("cutRepeats(%q) = %q, want %q", in, got, want)
		}
	}
}

// pprof's peek of a profile with its repeats cut is its peek of the
// profile: stacks of a recursion through two call sites (pprof's merge
// sort), random paths down it, a rare branch pprof trims, with frames
// hidden and shown.
func TestPeekCut(t *testing.T) {
	m := &pprof.Mapping{ID: 1, Start: 0x1000, Limit: 0x9000, File: "/bin/x", HasFunctions: true, HasLineNumbers: true}
	var fns []*pprof.Function
	var locs []*pprof.Location
	loc := func(name string, line int64) *pprof.Location {
		fn := &pprof.Function{ID: uint64(len(fns) + 1), Name: name, SystemName: name, Filename: "x.c"}
		fns = append(fns, fn)
		l := &pprof.Location{ID: uint64(len(locs) + 1), Mapping: m, Address: 0x1000 + uint64(len(locs))*16,
			Line: []pprof.Line{{Function: fn, Line: line}}}
		locs = append(locs, l)
		return l
	}
	mainL, sortL := loc("main", 10), loc("sort", 20)
	left, right, merge := loc("msort", 30), loc("msort", 31), loc("msort", 32)
	cmp, inl, rare := loc("cmp", 40), loc("swap", 50), loc("rare", 60)
	inl.Line = append(inl.Line, pprof.Line{Function: fns[len(fns)-3], Line: 41}) // swap inlined into cmp
	rng := rand.New(rand.NewPCG(1, 2))
	p := &pprof.Profile{
		SampleType: []*pprof.ValueType{{Type: "samples", Unit: "count"}},
		PeriodType: &pprof.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Mapping:    []*pprof.Mapping{m}, Function: fns, Location: locs,
	}
	for range 3000 {
		st := []*pprof.Location{mainL, sortL}
		for range rng.IntN(14) {
			switch rng.IntN(5) {
			case 0, 1:
				st = append(st, left)
			case 2, 3:
				st = append(st, right)
			default:
				st = append(st, left, right)
			}
		}
		switch rng.IntN(20) {
		case 0:
			st = append(st, rare)
		case 1, 2, 3:
			st = append(st, merge, inl)
		default:
			st = append(st, merge, cmp)
		}
		slices.Reverse(st) // leaf first
		p.Sample = append(p.Sample, &pprof.Sample{Location: st, Value: []int64{1 + rng.Int64N(3)}})
	}
	cut := merged(p, tier{byLineCut, false})
	line := merged(p, tier{byLine, false})
	if len(cut.Sample) >= len(line.Sample)*3/4 {
		t.Errorf("cut: %d stacks of %d", len(cut.Sample), len(line.Sample))
	}
	cutUI, err := driverUI(cut, nil, noObjects{}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	lineUI, err := driverUI(line, nil, noObjects{}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for q, fn := range map[string]string{"f=msort": "msort", "f=cmp": "cmp", "f=sort": "sort", "f=.": "msort", "f=msort&h=cmp": "msort",
		"f=msort&s=msort|main": "msort", "f=main&i=rare": "main", "f=swap": "swap", "f=rare": "rare"} {
		page := func(h map[string]http.Handler) string {
			w := httptest.NewRecorder()
			h["/peek"].ServeHTTP(w, httptest.NewRequest("GET", "/peek?"+q, nil))
			if w.Code != 200 {
				t.Errorf("peek?%s: %d %s", q, w.Code, w.Body)
			}
			return w.Body.String()
		}
		if a, b := page(cutUI), page(lineUI); a != b {
			t.Errorf("peek?%s differs with repeats cut:\n%s\nagainst\n%s", q, a, b)
		} else if !strings.Contains(a, fn) {
			t.Errorf("peek?%s: no %s on the page", q, fn)
		}
	}
}

// mergeStacks gives the pages pprof's Merge gives, merged to each
// granularity: stacks repeated in other threads, locations that become
// one once aggregated, a sample of no value, a function inlined into
// another.
func TestMergeStacks(t *testing.T) {
	m := &pprof.Mapping{ID: 1, Start: 0x1000, Limit: 0x9000, File: "/bin/x", HasFunctions: true, HasLineNumbers: true}
	var fns []*pprof.Function
	for i, name := range []string{"main", "work", "leaf", "inl"} {
		fns = append(fns, &pprof.Function{ID: uint64(i + 1), Name: name, SystemName: name, Filename: "x.c"})
	}
	var locs []*pprof.Location
	for i := range 40 {
		fn := fns[1+i%3]
		l := &pprof.Location{ID: uint64(i + 1), Mapping: m, Address: 0x1000 + uint64(i)*8,
			Line: []pprof.Line{{Function: fn, Line: int64(10*(1+i%3) + i%4)}}}
		if fn.Name == "inl" {
			l.Line = append(l.Line, pprof.Line{Function: fns[1], Line: 99})
		}
		locs = append(locs, l)
	}
	root := &pprof.Location{ID: 41, Mapping: m, Address: 0x2000, Line: []pprof.Line{{Function: fns[0], Line: 5}}}
	locs = append(locs, root)
	rng := rand.New(rand.NewPCG(3, 4))
	p := &pprof.Profile{
		SampleType: []*pprof.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &pprof.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 1000,
		Mapping: []*pprof.Mapping{m}, Function: fns, Location: locs,
	}
	for i := range 2000 {
		st := []*pprof.Location{root}
		for range 1 + rng.IntN(5) {
			st = append(st, locs[rng.IntN(40)])
		}
		slices.Reverse(st)
		v := int64(1 + rng.IntN(3))
		if i == 7 {
			v = 0
		}
		p.Sample = append(p.Sample, &pprof.Sample{Location: st, Value: []int64{v, 1000 * v},
			NumLabel: map[string][]int64{"tid": {int64(rng.IntN(3))}}})
	}
	viaMerge := func(t tier) *pprof.Profile {
		c := p.Copy()
		addrs := t.grain.addresses()
		if err := c.Aggregate(true, true, true, t.grain.lines(), addrs, addrs); err != nil {
			panic(err)
		}
		for _, s := range c.Sample {
			s.NumLabel = nil
		}
		r, err := pprof.Merge([]*pprof.Profile{c})
		if err != nil {
			panic(err)
		}
		return r
	}
	for _, g := range []grain{byFunction, byLine, byAddress} {
		ours, theirs := merged(p, tier{g, false}), viaMerge(tier{g, false})
		if len(ours.Sample) != len(theirs.Sample) || len(ours.Location) != len(theirs.Location) {
			t.Errorf("grain %d: %d samples, %d locations; pprof's Merge: %d, %d", g, len(ours.Sample), len(ours.Location), len(theirs.Sample), len(theirs.Location))
		}
		a, err := driverUI(ours, nil, noObjects{}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		b, err := driverUI(theirs, nil, noObjects{}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{"/top", "/top?g=lines", "/peek?f=.", "/flamegraph", "/top?si=cpu"} {
			page := func(h map[string]http.Handler) string {
				r := httptest.NewRequest("GET", q, nil)
				w := httptest.NewRecorder()
				h[r.URL.Path].ServeHTTP(w, r)
				return w.Body.String()
			}
			if x, y := page(a), page(b); x != y {
				t.Errorf("grain %d, %s: the page differs from pprof's Merge's:\n%s\nagainst\n%s", g, q, x, y)
			}
		}
	}
}
