package view

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	pprof "github.com/google/pprof/profile"
)

// nodeWeights returns the sum of |value| of the stacks through each node
// (a stack's prefix), positive and negative apart, by the prefix.
func nodeWeights(stacks []flameStack) map[string][2]int64 {
	w := map[string][2]int64{}
	for _, s := range stacks {
		for d := 1; d <= len(s.Sources); d++ {
			k := fmt.Sprint(s.Sources[:d])
			v := w[k]
			if s.Value < 0 {
				v[1] -= s.Value
			} else {
				v[0] += s.Value
			}
			w[k] = v
		}
	}
	return w
}

// Trimming keeps the width (positive and negative parts) of every node it
// keeps, cuts only below nodes under the fraction, and sums the stacks
// cut at one node, by sign.
func TestTrimStacks(t *testing.T) {
	stacks := []flameStack{
		{Value: 1000, Sources: []int{0, 1, 2}},
		{Value: 900, Sources: []int{0, 1, 3}},
		{Value: 2, Sources: []int{0, 1, 4, 5}}, // node [0 1 4]: 2+3+(-1) = 6 by |value|
		{Value: 3, Sources: []int{0, 1, 4, 6, 7}},
		{Value: -1, Sources: []int{0, 1, 4, 6}},
		{Value: 1, Sources: []int{0, 8, 9}}, // node [0 8]: 1
		{Value: 100, Sources: []int{0, 1, 2, 9}},
	}
	out, ok := trimStacks(stacks, 10.0/2007) // under 10 is cut
	if !ok {
		t.Fatal("not trimmed")
	}
	want := []flameStack{
		{Value: 1000, Sources: []int{0, 1, 2}},
		{Value: 900, Sources: []int{0, 1, 3}},
		{Value: 5, Sources: []int{0, 1, 4}},
		{Value: -1, Sources: []int{0, 1, 4}},
		{Value: 1, Sources: []int{0, 8}},
		{Value: 100, Sources: []int{0, 1, 2, 9}},
	}
	if fmt.Sprint(out) != fmt.Sprint(want) {
		t.Errorf("trimmed to\n%v\nwant\n%v", out, want)
	}
	before, after := nodeWeights(stacks), nodeWeights(out)
	for k, w := range after {
		if before[k] != w {
			t.Errorf("node %s: %v after trimming, %v before", k, w, before[k])
		}
	}
	for k, w := range before {
		if _, kept := after[k]; !kept && w[0]+w[1] >= 10 {
			t.Errorf("node %s of %v dropped", k, w)
		}
	}
	if _, ok := trimStacks([]flameStack{{Value: 1, Sources: []int{0}}, {Value: 1, Sources: []int{1}}}, 0.5); ok {
		t.Error("stacks of two roots trimmed")
	}
}

// On a profile with a hot stack and thousands of slivers, the flame graph
// page carries the stacks trimmed, and pprof's whole set is served for it
// at flameStacksPath: the stack set of pprof's own page, which culprit
// serves as pprof wrote it when the view is pivoted.
func TestFlameGraphTrimmed(t *testing.T) {
	m := &pprof.Mapping{ID: 1, Start: 0x1000, Limit: 0x100000, File: "/bin/x", HasFunctions: true}
	mainFn := &pprof.Function{ID: 1, Name: "main", Filename: "x.c"}
	hot := &pprof.Function{ID: 2, Name: "hot", Filename: "x.c"}
	p := &pprof.Profile{
		SampleType: []*pprof.ValueType{{Type: "samples", Unit: "count"}},
		PeriodType: &pprof.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Mapping:    []*pprof.Mapping{m},
		Function:   []*pprof.Function{mainFn, hot},
		Location: []*pprof.Location{
			{ID: 1, Mapping: m, Address: 0x1000, Line: []pprof.Line{{Function: mainFn}}},
			{ID: 2, Mapping: m, Address: 0x1100, Line: []pprof.Line{{Function: hot}}},
		},
	}
	p.Sample = append(p.Sample, &pprof.Sample{Location: []*pprof.Location{p.Location[1], p.Location[0]}, Value: []int64{1e6}})
	// 3000 slivers of 1, under 30 rare callers of 100 each: a rare
	// caller holds under 4/8192 of 1e6+3000.
	const slivers, rare = 3000, 30
	loc := func(name string) *pprof.Location {
		id := uint64(len(p.Location) + 1)
		f := &pprof.Function{ID: id, Name: name, Filename: "x.c"}
		l := &pprof.Location{ID: id, Mapping: m, Address: 0x2000 + id, Line: []pprof.Line{{Function: f}}}
		p.Function = append(p.Function, f)
		p.Location = append(p.Location, l)
		return l
	}
	var callers []*pprof.Location
	for i := range rare {
		callers = append(callers, loc(fmt.Sprintf("rare%d", i)))
	}
	for i := range slivers {
		p.Sample = append(p.Sample, &pprof.Sample{Location: []*pprof.Location{loc(fmt.Sprintf("sliver%d", i)), callers[i%rare], p.Location[0]}, Value: []int64{1}})
	}
	pages, err := pprofUI(p, nil, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) string {
		w := httptest.NewRecorder()
		pages.handlers[strings.SplitN(path, "?", 2)[0]].ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		if w.Code != 200 {
			t.Fatalf("%s: %d %s", path, w.Code, w.Body)
		}
		return w.Body.String()
	}
	type rawSet struct {
		Stacks  []flameStack
		Sources []map[string]json.RawMessage
	}
	stacksOf := func(page string) rawSet {
		js, _, _, err := flameStacks([]byte(page))
		if err != nil {
			t.Fatalf("no stacks in the page: %v", err)
		}
		var s rawSet
		if err := json.Unmarshal(js, &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	page := get("/flamegraph")
	// pprof's own page, as its driver writes it.
	raw, err := driverUI(merged(p, tier{byFunction, false}), nil, noObjects{}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	rw := httptest.NewRecorder()
	raw["/flamegraph"].ServeHTTP(rw, httptest.NewRequest("GET", "/flamegraph", nil))
	whole := rw.Body.String()
	if !strings.Contains(page, "culpritWholeStacks(") || strings.Contains(whole, "culpritWholeStacks(") {
		t.Fatal("the page is not trimmed, or pprof's is")
	}
	// Pivoted, the page carries the whole set (pprof's script draws the
	// pivot from it), and the script, with no set to fetch after.
	pivoted := get("/flamegraph?p=x")
	if !strings.Contains(pivoted, "culpritWholeStacks(") || !strings.Contains(pivoted, `}, "")`) || !strings.Contains(pivoted, "function culpritShow") {
		t.Error("the pivoted page carries no whole set through culpritWholeStacks, or no script")
	}
	if ps := stacksOf(pivoted); len(ps.Stacks) != slivers+1 {
		t.Errorf("the pivoted page has %d stacks, want all %d", len(ps.Stacks), slivers+1)
	}
	// The names pprof's search reads go through culpritNodes, which a
	// stack set drawn in place replaces: the same as pprof's.
	_, _, end, _ := flameStacks([]byte(whole))
	ns, ne, ok := flameNodes([]byte(whole), end)
	if !ok || !strings.Contains(page, "culpritNodes("+whole[ns:ne]+")") {
		t.Errorf("the page hands pprof's script no names through culpritNodes, or not pprof's %.200s", whole[ns:])
	}
	trimmed, all := stacksOf(page), stacksOf(whole)
	if len(all.Stacks) != slivers+1 || len(trimmed.Stacks) != rare+1 {
		t.Errorf("%d stacks trimmed to %d, want %d to %d (hot, and the slivers cut at their callers)", len(all.Stacks), len(trimmed.Stacks), slivers+1, rare+1)
	}
	if len(trimmed.Sources) != len(all.Sources) {
		t.Errorf("%d sources trimmed, %d in all: the names' indexes differ", len(trimmed.Sources), len(all.Sources))
	}
	// The slivers are in no stack kept: sent as their places (none).
	inStack := map[int]bool{}
	for _, st := range trimmed.Stacks {
		for _, i := range st.Sources {
			inStack[i] = true
		}
	}
	short := 0
	for i, src := range trimmed.Sources {
		_, named := src["FullName"]
		if _, places := src["Places"]; named != (inStack[i] || i == 0) || places {
			t.Errorf("source %d (in a stack kept: %v): %v", i, inStack[i], src)
		}
		if !named {
			short++
		}
	}
	if short != slivers {
		t.Errorf("%d sources sent without their names, want the %d slivers", short, slivers)
	}
	// flamegraph.json is pprof's stack set without the places, which
	// follow from its stacks as the page's script fills them in.
	var sent, pprofs struct {
		Stacks  []flameStack
		Sources []struct {
			FullName string
			Places   []flameSlot
		}
		Legend []string
	}
	js, _, _, _ := flameStacks([]byte(whole))
	if err := json.Unmarshal([]byte(get("/flamegraph.json?")), &sent); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(js, &pprofs); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(sent.Stacks) != fmt.Sprint(pprofs.Stacks) || len(sent.Sources) != len(pprofs.Sources) {
		t.Fatalf("flamegraph.json: %d stacks, %d sources; pprof's page: %d, %d", len(sent.Stacks), len(sent.Sources), len(pprofs.Stacks), len(pprofs.Sources))
	}
	// flamegraph.json has every field of pprof's set, of every source
	// but Places, with pprof's values (culprit reads them typed).
	var sentRaw, pprofRaw map[string]json.RawMessage
	var sentSrc, pprofSrc []map[string]json.RawMessage
	sentJS := []byte(get("/flamegraph.json?"))
	for _, err := range []error{json.Unmarshal(sentJS, &sentRaw), json.Unmarshal(js, &pprofRaw),
		json.Unmarshal(sentRaw["Sources"], &sentSrc), json.Unmarshal(pprofRaw["Sources"], &pprofSrc)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range pprofRaw {
		if k != "Sources" && string(sentRaw[k]) != string(v) {
			t.Errorf("flamegraph.json: %s is %.80s, pprof's %.80s", k, sentRaw[k], v)
		}
	}
	for i, src := range pprofSrc {
		delete(src, "Places")
		if fmt.Sprint(src) != fmt.Sprint(sentSrc[i]) {
			t.Errorf("flamegraph.json: source %d is %s, pprof's (less Places) %s", i, sentSrc[i], src)
		}
	}
	// flamegraph.trimmed.json is the page's stacks and sources, with
	// the legend and the whole set's URL.
	var cut struct {
		Stacks  []flameStack
		Sources []map[string]json.RawMessage
		Legend  []string
		Whole   string
	}
	if err := json.Unmarshal([]byte(get("/flamegraph.trimmed.json?")), &cut); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(cut.Stacks) != fmt.Sprint(trimmed.Stacks) || fmt.Sprint(cut.Sources) != fmt.Sprint(trimmed.Sources) ||
		fmt.Sprint(cut.Legend) != fmt.Sprint(sent.Legend) || cut.Whole != "flamegraph.json?" {
		t.Errorf("flamegraph.trimmed.json: %d stacks, %d sources, legend %q, whole at %q; want the page's %d, %d, %q and flamegraph.json?",
			len(cut.Stacks), len(cut.Sources), cut.Legend, cut.Whole, len(trimmed.Stacks), len(trimmed.Sources), sent.Legend)
	}
	// Its legend is the page's, line by line, as text.
	if len(sent.Legend) < 2 || !strings.Contains(whole, "<div>"+html.EscapeString(sent.Legend[1])+"</div>") {
		t.Errorf("flamegraph.json: legend %q, not the page's", sent.Legend)
	}
	places := placesOf(sent.Stacks, len(sent.Sources))
	for i, src := range sent.Sources {
		if src.FullName != pprofs.Sources[i].FullName || src.Places != nil {
			t.Errorf("flamegraph.json: source %d is %q with places %v; pprof's: %q", i, src.FullName, src.Places, pprofs.Sources[i].FullName)
		}
		if fmt.Sprint(places[i]) != fmt.Sprint(pprofs.Sources[i].Places) {
			t.Errorf("source %d: places %v from the stacks, pprof's %v", i, places[i], pprofs.Sources[i].Places)
		}
	}
}

// placesOf returns the places of n sources in stacks as flameScript's
// culpritPlaces fills them in: for each stack in order, the first
// position of each source in it.
func placesOf(stacks []flameStack, n int) [][]flameSlot {
	out := make([][]flameSlot, n)
	for i, s := range stacks {
		seen := map[int]bool{}
		for j, src := range s.Sources {
			if !seen[src] {
				seen[src] = true
				out[src] = append(out[src], flameSlot{i, j})
			}
		}
	}
	return out
}

// flameStacks returns the JSON of the stack set in pprof's flame graph
// page (or culprit's trimmed one), as sent, and where it starts and ends
// in page.
func flameStacks(page []byte) (js []byte, start, end int, err error) {
	i := bytes.LastIndex(page, flameCall)
	if i < 0 {
		return nil, 0, 0, fmt.Errorf("no call of stackViewer")
	}
	start = i + len(flameCall)
	start += len(wholeStacksCall) * b2i(bytes.HasPrefix(page[start:], wholeStacksCall)) // trimmed
	dec := json.NewDecoder(bytes.NewReader(page[start:]))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, 0, 0, err
	}
	end = start + int(dec.InputOffset())
	return page[start:end], start, end, nil
}

// TestFlamePageSetPlaces checks that the stack set read from a page
// without its places reads as the whole JSON does, and ends where it
// does: places in the middle of a source and last, empty, and names that
// hold the key's text in a string.
func TestFlamePageSetPlaces(t *testing.T) {
	set := `{"Total":3,"Scale":1,"Type":"cpu","Unit":"ms","Stacks":[{"Value":1,"Sources":[0,1]},{"Value":2,"Sources":[0,2]}],` +
		`"Sources":[{"FullName":"root","FileName":"","UniqueName":"root","Inlined":false,"Display":["root"],"Places":[],"Self":0,"Color":0},` +
		`{"FullName":"f\"Places\":[","FileName":"a.c","UniqueName":"f","Inlined":false,"Display":["Places"],"Places":[{"Stack":0,"Pos":1}],"Self":1,"Color":1},` +
		`{"FullName":"Places","FileName":"b.c","UniqueName":"g","Inlined":true,"Display":["g"],"Self":2,"Color":2,"Places":[{"Stack":1,"Pos":1}]}]}`
	page := []byte(`<script>stackViewer(` + set + `, ["root", "f", "Places"])</script>`)
	got, start, end, err := flamePageSet(page)
	if err != nil {
		t.Fatal(err)
	}
	var want flameStackSet
	if err := json.Unmarshal([]byte(set), &want); err != nil {
		t.Fatal(err)
	}
	if string(page[start:end]) != set {
		t.Errorf("set read at [%d:%d] = %.80s..., want the set", start, end, page[start:end])
	}
	if fmt.Sprint(*got) != fmt.Sprint(want) {
		t.Errorf("set read\n%v\nwant\n%v", *got, want)
	}
}
