package view

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
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
// The UIs of addresses (source, disassembly) read the objects with objs
// (none when it is nil), the others with noObjects.
func pprofUI(prof, base *pprof.Profile, objs driver.ObjTool, stderr io.Writer) (*pprofPages, error) {
	var uis [grains][2]struct {
		once     sync.Once
		handlers map[string]http.Handler
		err      error
	}
	build := func(t tier, background bool) (map[string]http.Handler, error) {
		u := &uis[t.grain][b2i(t.labels)]
		if background {
			waitRequests()
		} else {
			defer requesting()()
		}
		if ot, ok := objs.(*objTool); ok && t.grain.addresses() {
			ot.openMapped(prof, base)
		}
		u.once.Do(func() {
			var tool driver.ObjTool = noObjects{}
			if t.grain.addresses() && objs != nil {
				tool = objs
			}
			u.handlers, u.err = driverUI(merged(prof, t), merged(base, t), tool, stderr)
		})
		return u.handlers, u.err
	}
	first, err := build(tier{byFunction, false}, false)
	if err != nil {
		return nil, err
	}
	pages := &pprofPages{handlers: map[string]http.Handler{}}
	// serve answers r for the view at path from the responses kept, or
	// has pprof's handler build it and keeps it; requests for one page
	// wait for one build.
	serve := func(w http.ResponseWriter, r *http.Request, path string, background bool) {
		key := path + "?" + r.URL.RawQuery
		if r.Method == http.MethodGet {
			unlock := pages.lockKey(key)
			defer unlock()
			if pages.cached(w, key) {
				return
			}
		}
		hs, err := build(tierOf(r), background)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		h := hs[path]
		stacksPath := path == flameStacksPath || path == flameTrimmedPath
		if stacksPath {
			h = hs["/flamegraph"]
		}
		bw := &bufferedWriter{header: http.Header{}}
		h.ServeHTTP(bw, r)
		resp := &response{code: bw.code, header: bw.header, body: bw.body.Bytes()}
		if resp.code == http.StatusOK && (path == "/flamegraph" || stacksPath) {
			resp = flameResponses(pages, resp, path, r.URL.Query())
		}
		if r.Method == http.MethodGet && resp.code == http.StatusOK {
			pages.keep(key, resp)
		}
		resp.write(w)
	}
	for path := range first {
		pages.handlers[path] = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			serve(w, r, path, false)
		})
	}
	if first["/flamegraph"] != nil {
		for _, path := range []string{flameStacksPath, flameTrimmedPath} {
			pages.handlers[path] = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				serve(w, r, path, false)
			})
		}
	}
	// Ahead of use: the pages the index links to without a query that
	// the profile merged to functions answers (their first visit then
	// costs no more than a later one), then the UIs of lines with
	// repeats cut (peek) and of addresses once per stack (source and
	// disassembly).
	pages.warm = func() {
		for _, path := range []string{"/flamegraph", "/top", "/graph"} {
			if first[path] == nil {
				continue
			}
			r, err := http.NewRequest(http.MethodGet, path, nil)
			if err != nil {
				continue
			}
			waitRequests()
			serve(&bufferedWriter{header: http.Header{}}, r, path, true)
		}
		for _, g := range []grain{byLineCut, byAddressOnce} {
			_, _ = build(tier{g, false}, true)
		}
	}
	return pages, nil
}

// flameResponses returns what culprit serves for pprof's flame graph
// page resp, asked for at path with query q: for the page, the page with
// its stacks trimmed to what its first view draws (when q pivots, which
// only pprof's script reads, with its whole set); for flameStacksPath, the page's
// whole stack set; for flameTrimmedPath, that set trimmed as the page's,
// with the whole set's URL as Whole. The whole set is kept for the
// request the page or the trimmed set's reader makes for it. All leave
// out the sources' places, which the page's script fills in from the
// stacks.
func flameResponses(pages *pprofPages, resp *response, path string, q url.Values) *response {
	fail := func(code int, err error) *response {
		if path == "/flamegraph" {
			return resp
		}
		return &response{code: code, header: http.Header{}, body: []byte(err.Error() + "\n")}
	}
	set, start, end, err := flamePageSet(resp.body)
	if err != nil {
		return fail(http.StatusNotFound, err)
	}
	set.Legend = flameLegend(resp.body)
	js, err := json.Marshal(set)
	if err != nil {
		return fail(http.StatusInternalServerError, err)
	}
	stacks := &response{code: http.StatusOK, header: http.Header{"Content-Type": {"application/json"}}, body: js}
	sq := flameStacksQuery(q)
	wholeURL := strings.TrimPrefix(flameStacksPath, "/") + "?" + sq
	if path == flameStacksPath {
		return stacks
	}
	pages.keep(flameStacksPath+"?"+sq, stacks)
	if path == "/flamegraph" && q.Has("p") {
		// Pivoted: pprof's script draws from every stack at once, so the
		// page carries the whole set, and the script that draws other
		// queries in place.
		whole := *set
		whole.Legend = nil
		return &response{code: resp.code, header: resp.header, body: trimFlamePage(resp.body, &whole, start, end, "")}
	}
	trimmed, err := trimmedSet(set)
	if path == flameTrimmedPath {
		if err != nil {
			return stacks // whole, then: it has no Whole to fetch
		}
		trimmed.Whole = wholeURL
		b, err := json.Marshal(trimmed)
		if err != nil {
			return stacks
		}
		return &response{code: http.StatusOK, header: stacks.header, body: b}
	}
	if err != nil {
		return resp
	}
	trimmed.Legend = nil // the page shows it
	page := trimFlamePage(resp.body, trimmed, start, end, wholeURL)
	return &response{code: resp.code, header: resp.header, body: page}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// pprofPages is pprof's web UI for one profile: its handlers by path;
// warm, which builds the UIs of the finer granularities ahead of their
// first use; and the responses its handlers gave, by path and query.
//
// pprof builds each page afresh from its profile at every request (a
// copy of the profile, then a report), though a page depends only on
// the profile and the request's path and query: so the last maxResponses
// responses are kept and a request asked again is answered from them.
type pprofPages struct {
	handlers map[string]http.Handler
	warm     func()

	mu    sync.Mutex
	keys  map[string]*keyLock // held while a key's response is built
	resps map[string]*response
	order []string // keys of resps, oldest first
	size  int      // bytes of the bodies in resps
}

// Bounds of the responses a pprofPages keeps: how many and how many bytes
// in all (the oldest go first); a larger response is not kept.
const (
	maxResponses     = 64
	maxResponseBytes = 32 << 20
)

// response is a response of one of pprof's handlers.
type response struct {
	code   int
	header http.Header
	body   []byte
}

func (r *response) write(w http.ResponseWriter) {
	for k, v := range r.header {
		w.Header()[k] = slices.Clone(v)
	}
	if r.code != 0 {
		w.WriteHeader(r.code)
	}
	_, _ = w.Write(r.body)
}

// lockKey locks key's response until the returned func is called, so
// that a page asked for twice at once is built once. A key's lock is
// kept while someone holds or waits for it.
func (p *pprofPages) lockKey(key string) func() {
	p.mu.Lock()
	if p.keys == nil {
		p.keys = map[string]*keyLock{}
	}
	l := p.keys[key]
	if l == nil {
		l = &keyLock{}
		p.keys[key] = l
	}
	l.users++
	p.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		p.mu.Lock()
		if l.users--; l.users == 0 {
			delete(p.keys, key)
		}
		p.mu.Unlock()
	}
}

// keyLock is a key's lock and how many hold or wait for it.
type keyLock struct {
	sync.Mutex
	users int
}

// cached writes the response kept for key to w, if there is one.
func (p *pprofPages) cached(w http.ResponseWriter, key string) bool {
	p.mu.Lock()
	r := p.resps[key]
	p.mu.Unlock()
	if r == nil {
		return false
	}
	r.write(w)
	return true
}

// keep keeps r as the response for key, dropping the oldest ones past
// the bounds.
func (p *pprofPages) keep(key string, r *response) {
	if len(r.body) > maxResponseBytes/4 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.resps == nil {
		p.resps = map[string]*response{}
	}
	if _, ok := p.resps[key]; ok {
		return
	}
	for len(p.order) > 0 && (len(p.order) >= maxResponses || p.size+len(r.body) > maxResponseBytes) {
		old := p.order[0]
		p.size -= len(p.resps[old].body)
		delete(p.resps, old)
		p.order = p.order[1:]
	}
	p.resps[key] = r
	p.order = append(p.order, key)
	p.size += len(r.body)
}

// grain is a granularity pprof's views are built at.
type grain int

const (
	byFunction grain = iota // function and file, inlined frames kept
	byLine                  // and line
	// byLineCut is byLine with each run of three or more repeats of a
	// sequence of frames in a stack cut to two (a recursion's f f f g
	// becomes f f g, f g f g f g becomes f g f g): the stack passes the
	// same frames and the same calls (pairs of adjacent frames) in the
	// same order of first occurrence, and ends at the same leaf, also
	// with any frames hidden. pprof's call graph counts a sample once
	// per frame and per call, so its nodes, edges and their weights are
	// those of byLine (peek).
	byLineCut
	byAddress // and address
	// byAddressOnce is byAddress with each stack's frames once, in the
	// order they first occur from the leaf: the stacks of a recursive
	// call are many (one per path down the recursion) and become few.
	// It serves the views that count a sample once at each address of
	// its stack and read no call order (source and disassembly: pprof's
	// report counts a recursive address once per sample, too).
	byAddressOnce
	grains
)

// lines reports whether g keeps each frame's line; addresses, its
// address.
func (g grain) lines() bool     { return g >= byLine }
func (g grain) addresses() bool { return g >= byAddress }

// cutParams are the query parameters of peek that read the stacks only
// through pprof's call graph: the callers and callees of the functions
// matching f (f also focuses on the samples through them), of the samples
// through none of i, with the frames matching h hidden or only those
// matching s shown, of sample value si, in a unit.
var cutParams = map[string]bool{"f": true, "i": true, "h": true, "s": true, "si": true, "unit": true}

// onceParams are the query parameters of pprof's pages that read the
// stacks only as sets of frames: the source or disassembly of the
// functions matching f (f also focuses on the samples through them), of
// the samples through none of i, of sample value si, in a unit and
// syntax.
var onceParams = map[string]bool{"f": true, "i": true, "si": true, "unit": true, "intel": true}

// tier is the profile a pprof page is built from: merged to a grain, and
// with or without the samples' labels (thread id, pid and name).
type tier struct {
	grain
	labels bool
}

// tierOf returns the profile pprof's page asked for by r needs. Its
// granularity is pprof's own default for the view (driver.go and
// webui.go: peek shows lines, source and disassembly addresses, the
// others functions or files), or finer when a parameter asks. Labels
// only matter to pages that filter by them (tag focus, ignore, show,
// hide, or a saved configuration, which may) and to the download of the
// profile: without them, a profile has one sample per stack rather than
// per stack and thread, and each page copies and reads fewer. Source
// and disassembly with no parameter that reads a stack's order (hide,
// show, prune, tags) are built from byAddressOnce, and peek with no
// parameter beyond the call graph's from byLineCut.
func tierOf(r *http.Request) tier {
	q := r.URL.Query()
	t := tier{grain: byFunction}
	switch {
	case r.URL.Path == "/source" || r.URL.Path == "/disasm" || r.URL.Path == "/download",
		q.Get("g") == "addresses", q.Has("noinlines"), q.Has("showcolumns"):
		t.grain = byAddress
		if r.URL.Path != "/download" && onlyParams(q, onceParams) {
			t.grain = byAddressOnce
		}
	case r.URL.Path == "/peek", q.Get("g") == "lines":
		t.grain = byLine
		if r.URL.Path == "/peek" && onlyParams(q, cutParams) {
			t.grain = byLineCut
		}
	}
	for _, p := range []string{"tf", "ti", "ts", "th", "config"} {
		if q.Get(p) != "" {
			t.labels = true
		}
	}
	if r.URL.Path == "/download" {
		t.labels = true
	}
	return t
}

// onlyParams reports whether q has no parameter but those in allowed.
func onlyParams(q url.Values, allowed map[string]bool) bool {
	for k := range q {
		if !allowed[k] {
			return false
		}
	}
	return true
}

// merged returns p merged to tier t: to function and file, and for
// byLine the line (inlined frames kept), or the whole p for byAddress;
// for byLineCut each stack's repeats cut, for byAddressOnce its repeated
// frames dropped; without its
// samples' labels unless t keeps them; its samples with the same stack
// and labels summed. A nil p stays nil, and p itself is returned when
// there is nothing to merge.
func merged(p *pprof.Profile, t tier) *pprof.Profile {
	if p == nil || t == (tier{byAddress, true}) {
		return p
	}
	c := copyProfile(p)
	addrs := t.grain.addresses()
	if err := c.Aggregate(true, true, true, t.grain.lines(), addrs, addrs); err != nil {
		return p
	}
	if !t.labels {
		for _, s := range c.Sample {
			s.Label, s.NumLabel, s.NumUnit = nil, nil, nil
		}
	}
	if t.grain == byLineCut {
		for _, s := range c.Sample {
			s.Location = cutRepeats(s.Location)
		}
	}
	if t.grain == byAddressOnce {
		seen := map[*pprof.Location]bool{}
		for _, s := range c.Sample {
			clear(seen)
			locs := s.Location[:0]
			for _, l := range s.Location {
				if !seen[l] {
					seen[l] = true
					locs = append(locs, l)
				}
			}
			s.Location = locs
		}
	}
	if !t.labels {
		return mergeStacks(c)
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

// mergeStacks merges p's samples without labels as pprof's Merge does,
// in a tenth of its time: its locations with the same mapping, address
// and lines (after Aggregate) become one, numbered in the order the
// samples first use them, and its samples with the same stack one, in
// the order of their first, their values summed; samples of no value
// go. Mappings and functions are kept as they are.
func mergeStacks(p *pprof.Profile) *pprof.Profile {
	type lineKey struct {
		fn           *pprof.Function
		line, column int64
	}
	type locKey struct {
		m     *pprof.Mapping
		addr  uint64
		lines string // the lineKeys' indexes
	}
	lineIDs := map[lineKey]int{}
	locIDs := map[locKey]*pprof.Location{}
	byLoc := map[*pprof.Location]*pprof.Location{}
	var kb []byte
	loc := func(l *pprof.Location) *pprof.Location {
		if m, ok := byLoc[l]; ok {
			return m
		}
		kb = kb[:0]
		for _, ln := range l.Line {
			k := lineKey{ln.Function, ln.Line, ln.Column}
			id, ok := lineIDs[k]
			if !ok {
				id = len(lineIDs)
				lineIDs[k] = id
			}
			kb = binary.AppendUvarint(kb, uint64(id))
		}
		k := locKey{l.Mapping, l.Address, string(kb)}
		m := locIDs[k]
		if m == nil {
			m = &pprof.Location{ID: uint64(len(locIDs) + 1), Mapping: l.Mapping, Address: l.Address,
				Line: l.Line, IsFolded: l.IsFolded}
			locIDs[k] = m
		}
		byLoc[l] = m
		return m
	}
	out := &pprof.Profile{SampleType: p.SampleType, DefaultSampleType: p.DefaultSampleType, Comments: p.Comments,
		DocURL: p.DocURL, DropFrames: p.DropFrames, KeepFrames: p.KeepFrames, TimeNanos: p.TimeNanos,
		DurationNanos: p.DurationNanos, PeriodType: p.PeriodType, Period: p.Period,
		Mapping: p.Mapping, Function: p.Function}
	zero := func(s *pprof.Sample) bool { return !slices.ContainsFunc(s.Value, func(v int64) bool { return v != 0 }) }
	samples := map[string]*pprof.Sample{}
	for _, s := range p.Sample {
		if zero(s) {
			continue
		}
		stack := make([]*pprof.Location, len(s.Location))
		kb2 := make([]byte, 0, 4*len(stack))
		for i, l := range s.Location {
			stack[i] = loc(l)
			kb2 = binary.AppendUvarint(kb2, stack[i].ID)
		}
		if m := samples[string(kb2)]; m != nil {
			for i := range m.Value {
				m.Value[i] += s.Value[i]
			}
			continue
		}
		m := &pprof.Sample{Location: stack, Value: slices.Clone(s.Value)}
		samples[string(kb2)] = m
		out.Sample = append(out.Sample, m)
	}
	out.Sample = slices.DeleteFunc(out.Sample, zero) // values of both signs
	out.Location = make([]*pprof.Location, len(locIDs))
	for _, l := range locIDs {
		out.Location[l.ID-1] = l
	}
	return out
}

// copyProfile returns a copy of p that merged may change: its mappings,
// functions, locations and samples copied (its value types, and a
// sample's labels and values shared: merged replaces, never changes
// them). pprof's Copy encodes p
// and decodes it again, 10-50 times as long on a profile of tens of
// thousands of stacks.
func copyProfile(p *pprof.Profile) *pprof.Profile {
	c := &pprof.Profile{SampleType: p.SampleType, DefaultSampleType: p.DefaultSampleType, Comments: p.Comments,
		DocURL: p.DocURL, DropFrames: p.DropFrames, KeepFrames: p.KeepFrames, TimeNanos: p.TimeNanos,
		DurationNanos: p.DurationNanos, PeriodType: p.PeriodType, Period: p.Period}
	maps := make(map[*pprof.Mapping]*pprof.Mapping, len(p.Mapping))
	c.Mapping = make([]*pprof.Mapping, len(p.Mapping))
	for i, m := range p.Mapping {
		m2 := *m
		c.Mapping[i], maps[m] = &m2, &m2
	}
	fns := make(map[*pprof.Function]*pprof.Function, len(p.Function))
	c.Function = make([]*pprof.Function, len(p.Function))
	for i, f := range p.Function {
		f2 := *f
		c.Function[i], fns[f] = &f2, &f2
	}
	locs := make(map[*pprof.Location]*pprof.Location, len(p.Location))
	c.Location = make([]*pprof.Location, len(p.Location))
	for i, l := range p.Location {
		l2 := *l
		if l.Mapping != nil {
			l2.Mapping = maps[l.Mapping]
		}
		l2.Line = slices.Clone(l.Line)
		for j := range l2.Line {
			if f := l2.Line[j].Function; f != nil {
				l2.Line[j].Function = fns[f]
			}
		}
		c.Location[i], locs[l] = &l2, &l2
	}
	c.Sample = make([]*pprof.Sample, len(p.Sample))
	for i, s := range p.Sample {
		s2 := *s
		s2.Location = make([]*pprof.Location, len(s.Location))
		for j, l := range s.Location {
			s2.Location[j] = locs[l]
		}
		c.Sample[i] = &s2
	}
	return c
}

// cutRepeats cuts each run of three or more repeats of a sequence of
// locations in stack to two, in place, and returns what is left. For
// each length k of a sequence, a run of 2k locations each equal to the
// one k further is three repeats of a sequence: its last repeat goes.
func cutRepeats(stack []*pprof.Location) []*pprof.Location {
	for k := 1; 3*k <= len(stack); k++ {
		run := 0
		for i := 0; i+k < len(stack); i++ {
			if stack[i] != stack[i+k] {
				run = 0
				continue
			}
			if run++; run == 2*k {
				// stack[i-2k+1 : i+k+1] is three repeats of a sequence of
				// k: drop the last, then look again at this k.
				stack = append(stack[:i+1], stack[i+k+1:]...)
				run, i = 0, max(i-3*k, -1)
			}
		}
	}
	return stack
}

// driverUI returns the handlers pprof's driver builds for prof and base:
// it hands them to its HTTPServer option, which keeps them instead of
// listening. The handlers that write pprof's settings file are left out:
// the server only reads. obj reads the objects: culprit's, never pprof's
// own tool (objdump and a symbolizer started at every request).
func driverUI(prof, base *pprof.Profile, obj driver.ObjTool, stderr io.Writer) (map[string]http.Handler, error) {
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
		Obj:     obj,
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

// noObjects is pprof's object tool for the UIs whose pages read no
// object file (the flame graph, top, call graph and peek: the profile
// names every frame), and for servers given no objects: it opens none. pprof's own tool runs objdump
// --version twice as each UI starts, to choose its objdump: llvm-objdump
// loads LLVM's shared library for it, 20–200 ms of a time range's first
// page, which builds a UI.
type noObjects struct{}

func (noObjects) Open(file string, _, _, _ uint64, _ string) (driver.ObjFile, error) {
	return nil, fmt.Errorf("%s: this view reads no object file", file)
}

func (noObjects) Disasm(file string, _, _ uint64, _ bool) ([]driver.Inst, error) {
	return nil, fmt.Errorf("%s: this view reads no object file", file)
}

// Builds for requests come before builds ahead of use (warm): a build
// ahead waits until no request's build is under way or waiting, so that a
// time range's first page does not wait behind the whole profile's finer
// UIs (the one under way when it comes still finishes first).
var (
	requestMu   sync.Mutex
	requestDone = sync.NewCond(&requestMu)
	requests    int // request builds under way or waiting
)

// requesting counts a request's build until the returned func is called.
func requesting() func() {
	requestMu.Lock()
	requests++
	requestMu.Unlock()
	return func() {
		requestMu.Lock()
		requests--
		if requests == 0 {
			requestDone.Broadcast()
		}
		requestMu.Unlock()
	}
}

// waitRequests waits until no request's build is under way or waiting.
func waitRequests() {
	requestMu.Lock()
	for requests > 0 {
		requestDone.Wait()
	}
	requestMu.Unlock()
}

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
// pprof UI. Its HTML pages get culprit's links atop them (pprofNav), and
// the script that puts another page of the UI in place (swapScript).
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
				nav.WriteString(swapScriptHTML)
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
// index and the pages that can be shown. Those of Focus pages take the
// function selected in pprof's page along (its f parameter).
func (s *Server) pprofNav(r Range) []navLink {
	out := []navLink{{Path: "../../", Title: "index"}}
	for _, pg := range s.shown {
		out = append(out, navLink{Path: "../../" + pg.Path + pg.query(r), Title: pg.Title, Ranged: pg.Ranged, Fn: pg.Focus})
	}
	return out
}

// navLink is a link of pprofNav.
type navLink struct {
	Path, Title string
	Fn          bool // the function selected goes along as f
	Ranged      bool // of the time range (from and to)
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
