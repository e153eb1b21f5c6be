package view

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"net/url"
	"regexp"
)

// pprof's flame graph page sends the browser every stack of its report
// (report.StackSet, as JSON in the call of its script's stackViewer), and
// the browser parses all of it before it draws: on a real recording
// thousands of stacks, most of them kernel paths and other slivers that
// the first view does not draw, since pprof's script leaves out every box
// narrower than 4 pixels and all it holds. So the page culprit serves
// carries the stacks trimmed to what its first view can draw: each stack
// is cut after its first frame whose box is under minFlameFraction of the
// whole, and the stacks cut at the same frame are summed. Every box at
// least that wide keeps its width, its self gap and its place; the frame
// a stack is cut at keeps its own width (under 4 pixels on a chart up to
// 8,192 pixels wide, so not drawn); nothing it held is drawn; the
// functions in no stack kept are sent as an empty entry, which keeps the
// others' indexes. No source carries its places (the stack slots where it
// occurs): they follow from the stacks, and were two thirds of the page,
// so the page's script fills them in (culpritPlaces) before pprof's
// script reads them. pprof's script draws other views of the same stacks
// without asking the server (a frame clicked becomes the root, a search
// pivots): the page fetches the whole set (flameStacksPath, the same
// query, also without places) once it is drawn and puts it in place of
// the trimmed one, so those views show every stack. It is pprof's own
// JSON otherwise; pprof's Go packages that write it are internal, so
// culprit reads it from the page, and serves the page unchanged when the
// page is not what it expects.

// minFlameFraction is the narrowest box, as a fraction of the whole
// profile, that a flame graph page keeps what is below: pprof draws no
// box under 4 pixels, and 4/8192 is the fraction of a 8,192-pixel chart.
const minFlameFraction = 4.0 / 8192

// flameStacksPath is the path below a pprof UI's root of the whole stack
// set of its flame graph, for the same query (JSON); flameTrimmedPath,
// of that set trimmed as the page's, which a flame graph drawn in place
// draws first.
const (
	flameStacksPath  = "/flamegraph.json"
	flameTrimmedPath = "/flamegraph.trimmed.json"
)

// flameCall is how pprof's flame graph page hands its stacks to its
// script.
var flameCall = []byte("stackViewer(")

// wholeStacksCall is how culprit's flame graph page hands pprof's script
// its trimmed stacks (flameScript).
var wholeStacksCall = []byte("culpritWholeStacks(")

// nodesCall is how culprit's flame graph page hands pprof's script the
// sources' names, which a stack set drawn in place replaces.
var nodesCall = []byte("culpritNodes(")

// flameStackSet is pprof's report.StackSet as its flame graph page
// sends it (JSON), decoded once, less the sources' places, which culprit
// never sends; with the page's legend and, for a trimmed set, the whole
// set's URL. Its fields are all of pprof's (TestFlameGraphTrimmed checks
// that the page has no other): read typed, a set is decoded and encoded
// in a fraction of the time that maps of its fields took.
type flameStackSet struct {
	Total   int64
	Scale   float64
	Type    string
	Unit    string
	Stacks  []flameStack
	Sources []flameSource
	Legend  []string `json:",omitempty"`
	Whole   string   `json:",omitempty"`
}

// flameSource is pprof's report.StackSource less its Places; one in no
// stack sent (absent) is sent as an empty object, which keeps the
// indexes of the others.
type flameSource struct {
	FullName   string
	FileName   string
	UniqueName string
	Inlined    bool
	Display    []string
	Self       int64
	Color      int
	absent     bool
}

func (s flameSource) MarshalJSON() ([]byte, error) {
	if s.absent {
		return []byte("{}"), nil
	}
	type plain flameSource
	return json.Marshal(plain(s))
}

type flameStack struct {
	Value   int64
	Sources []int
}

type flameSlot struct {
	Stack int
	Pos   int
}

// trimFlamePage returns pprof's flame graph page, whose stack set is
// page[start:end], with trimmed (its set trimmed: trimmedSet) in place
// of it and the script that fills the places in and fetches the whole
// set from stacksURL (none when stacksURL is empty: trimmed is the whole
// set); or page itself when it is not a flame graph page of the shape
// culprit reads.
func trimFlamePage(page []byte, trimmed *flameStackSet, start, end int, stacksURL string) []byte {
	js, err := json.Marshal(trimmed)
	if err != nil {
		return page
	}
	u, err := json.Marshal(stacksURL) // escapes <, > and &: safe in a script
	if err != nil {
		return page
	}
	nodesStart, nodesEnd, ok := flameNodes(page, end)
	if !ok {
		return page
	}
	var out bytes.Buffer
	out.Grow(len(page))
	out.Write(page[:start])
	fmt.Fprintf(&out, "%s%s, %s)", wholeStacksCall, js, u)
	out.Write(page[end:nodesStart])
	fmt.Fprintf(&out, "%s%s)", nodesCall, page[nodesStart:nodesEnd])
	out.Write(page[nodesEnd:])
	body := out.Bytes()
	if i := bytes.Index(body, []byte("<body>")); i >= 0 {
		i += len("<body>")
		body = bytes.Join([][]byte{body[:i], []byte(flameScript), body[i:]}, nil)
	} else {
		return page
	}
	return body
}

// flameNodes returns where the second argument of the stackViewer call
// whose first ends at end in page (the sources' names, a JSON array)
// starts and ends.
func flameNodes(page []byte, end int) (start, stop int, ok bool) {
	rest := bytes.TrimLeft(page[end:], " \t\n")
	if !bytes.HasPrefix(rest, []byte(",")) {
		return 0, 0, false
	}
	rest = bytes.TrimLeft(rest[1:], " \t\n")
	start = len(page) - len(rest)
	dec := json.NewDecoder(bytes.NewReader(rest))
	var nodes []string
	if err := dec.Decode(&nodes); err != nil {
		return 0, 0, false
	}
	return start, start + int(dec.InputOffset()), true
}

// flamePageSet decodes the stack set in pprof's flame graph page (or
// culprit's trimmed one) and returns where it starts and ends in page.
func flamePageSet(page []byte) (set *flameStackSet, start, end int, err error) {
	i := bytes.LastIndex(page, flameCall)
	if i < 0 {
		return nil, 0, 0, fmt.Errorf("not a flame graph page: no call of stackViewer")
	}
	start = i + len(flameCall)
	start += len(wholeStacksCall) * b2i(bytes.HasPrefix(page[start:], wholeStacksCall)) // trimmed
	rest, cuts := withoutPlaces(page[start:])
	dec := json.NewDecoder(bytes.NewReader(rest))
	set = &flameStackSet{}
	if err := dec.Decode(set); err != nil {
		return nil, 0, 0, fmt.Errorf("not a flame graph page: %w", err)
	}
	end = int(dec.InputOffset())
	for _, c := range cuts { // where the set ends in page[start:]
		if c.at > end {
			break
		}
		end += c.n
	}
	return set, start, start + end, nil
}

// placesKey is how pprof's page writes a source's places: an array of
// objects of numbers ({"Stack":1,"Pos":2}), which holds no string and no
// other array. A string's quotes inside JSON are escaped, so the key is
// not found inside one.
var placesKey = []byte(`"Places":[`)

// cut is n bytes of pprof's JSON left out at at, an offset in what is
// left.
type cut struct{ at, n int }

// withoutPlaces returns js (JSON, and whatever follows it) without the
// sources' places and the comma that separated each from the next field,
// and where they were left out: culprit never reads them, and they are
// two thirds of pprof's stack set, which the JSON decoder would read
// through twice.
func withoutPlaces(js []byte) (out []byte, cuts []cut) {
	out = make([]byte, 0, len(js)/2)
	for {
		i := bytes.Index(js, placesKey)
		if i < 0 {
			return append(out, js...), cuts
		}
		j := bytes.IndexByte(js[i+len(placesKey):], ']')
		if j < 0 {
			return append(out, js...), cuts
		}
		end := i + len(placesKey) + j + 1
		switch {
		case end < len(js) && js[end] == ',':
			end++ // "Places":[...], next field
		case i > 0 && js[i-1] == ',':
			i-- // , "Places":[...] last
		}
		out = append(out, js[:i]...)
		cuts = append(cuts, cut{len(out), end - i})
		js = js[end:]
	}
}

// trimmedSet returns set with its stacks trimmed to what a first view
// draws and the sources in none of them absent (set is unchanged), or an
// error when set is not of the shape culprit reads.
func trimmedSet(set *flameStackSet) (*flameStackSet, error) {
	stacks, ok := trimStacks(set.Stacks, minFlameFraction)
	if !ok {
		return nil, fmt.Errorf("stacks of more than one root")
	}
	sources, ok := namedSources(set.Sources, stacks)
	if !ok {
		return nil, fmt.Errorf("a stack names a source that is not there")
	}
	t := *set
	t.Stacks, t.Sources = stacks, sources
	return &t, nil
}

// detailsBox is where pprof's pages list their legend, a line per div.
var detailsBox = []byte(`<div id="detailsbox">`)

var legendLine = regexp.MustCompile(`^\s*<div>([^<]*)</div>`)

// flameLegend returns the lines of the legend of pprof's page, as text.
func flameLegend(page []byte) []string {
	i := bytes.Index(page, detailsBox)
	if i < 0 {
		return nil
	}
	rest := page[i+len(detailsBox):]
	lines := []string{}
	for {
		m := legendLine.FindSubmatchIndex(rest)
		if m == nil {
			return lines
		}
		lines = append(lines, html.UnescapeString(string(rest[m[2]:m[3]])))
		rest = rest[m[1]:]
	}
}

// flameScript is the script culprit's flame graph page runs before
// pprof's. It fills in the places of the stack sets culprit sends
// (culpritPlaces), puts the whole stack set in place of the trimmed one
// that pprof's script draws first (culpritWholeStacks: fetched once the
// page is drawn, or at once when the view changes without the server,
// history.pushState, and drawn again then), and draws another query of
// the flame graph in place of the page (culpritShow): a link to the same
// page with another query (pprof's Refine and action menus: focus,
// ignore, hide, show, show from, reset; its sample types) or another
// time range (the time view, in which the page is a frame) fetches that
// stack set, trimmed as the page's (flameTrimmedPath; the whole one,
// flameStacksPath, once drawn), and hands it to pprof's script, which
// draws on popstate, instead of loading a new page: what costs the
// browser is loading pprof's page, not drawing it. The page's URL (history), the
// sources' names pprof's search reads, its legend and culprit's links of
// the range follow. Back and forward draw the set of the URL shown. Links
// that leave the page leave the frame too.
//
// A source's places are the stack slots where it occurs first in a
// stack, in the order of the stacks, as pprof's report fills them
// (StackSet.fillPlaces): they follow from the stacks, and sent they
// were two thirds of the page.
const flameScript = `<script>
"use strict";
function culpritPlaces(set) {
  for (const src of set.Sources) src.Places = [];
  set.Stacks.forEach((stack, i) => {
    const seen = new Set();
    stack.Sources.forEach((src, j) => {
      if (seen.has(src)) return;
      seen.add(src);
      set.Sources[src].Places.push({Stack: i, Pos: j});
    });
  });
  return set;
}
// culpritFlame is what pprof's script draws: its stack set and names
// (the objects it was given, whose contents change), the URL of the set
// (key: flamegraph.json with the page's query less the pivot), whether
// it is whole, whether it is a difference (pprof's script reads that
// once), and the last drawing in place (key, ms from the request).
// history.culpritPush is the browser's own pushState (culprit's other
// script may have kept it already: a page put in place runs this again).
if (!history.culpritPush) history.culpritPush = history.pushState.bind(history);
var culpritFlame = {stacks: null, nodes: null, key: "", path: location.pathname, whole: true, diff: false, wanted: "", last: null,
  load: null, pushState: history.culpritPush};
function culpritStacksURL(u) {
  const j = new URL(u, location.href);
  j.pathname = j.pathname.replace(/[^/]*$/, "flamegraph.json");
  j.searchParams.delete("p");
  j.hash = "";
  return j.href;
}
function culpritNegative(set) { return set.Stacks.some(s => s.Value < 0); }
function culpritNodes(nodes) { culpritFlame.nodes = nodes; return nodes; }
function culpritLoad(key) {
  return fetch(key).then(r => r.ok ? r.json() : Promise.reject(r.status)).catch(() => null);
}
// culpritPut makes set, fetched from key, the stack set pprof's script
// draws next.
function culpritPut(set, key) {
  const f = culpritFlame, legend = set.Legend;
  delete set.Legend;
  culpritPlaces(set);
  for (const k of Object.keys(f.stacks)) delete f.stacks[k];
  Object.assign(f.stacks, set);
  if (f.nodes) {
    f.nodes.length = 0;
    for (const s of set.Sources) f.nodes.push(s.FullName || "");
    f.nodes[0] = ""; // the root
  }
  f.key = key;
  f.whole = true;
  const box = document.getElementById("detailsbox");
  if (box && legend) box.replaceChildren(...legend.map(l => { const d = document.createElement("div"); d.textContent = l; return d; }));
}
function culpritDraw() { window.dispatchEvent(new PopStateEvent("popstate")); }
// culpritRange points culprit's links of a time range at the page's.
function culpritRange() {
  const m = location.pathname.match(/\/([^/]+)\/[^/]*$/);
  if (!m) return;
  const [from, to] = m[1] === "all" ? [] : decodeURIComponent(m[1]).split("-");
  for (const a of document.querySelectorAll("#culprit-nav a[data-ranged]")) {
    const u = new URL(a.href);
    if (to) { u.searchParams.set("from", from); u.searchParams.set("to", to); }
    else { u.searchParams.delete("from"); u.searchParams.delete("to"); }
    a.href = u.href;
  }
}
// culpritLater makes the whole set of key, fetched from url, the one
// pprof's script draws in place of the trimmed one drawn: fetched once
// asked for (culpritFlame.load), and drawn at once when the view changes
// without the server (history.pushState: a frame clicked, a search).
function culpritLater(key, url) {
  const f = culpritFlame;
  let loading = null;
  f.whole = false;
  f.load = () => loading || (loading = culpritLoad(url).then(set => {
    if (!set || f.key !== key || f.whole) return false;
    culpritPut(set, key);
    return true;
  }));
}
if (!history.culpritFlamePush) {
  history.culpritFlamePush = true;
  history.pushState = function(...args) {
    const f = window.culpritFlame;
    history.culpritPush(...args);
    if (f && !f.whole && f.load) f.load().then(ok => { if (ok && f === window.culpritFlame) culpritDraw(); });
  };
}
function culpritWholeStacks(stacks, url) {
  const f = culpritFlame;
  f.stacks = stacks;
  f.key = culpritStacksURL(location.href);
  f.diff = culpritNegative(stacks);
  if (url) {
    culpritLater(f.key, new URL(url, location.href).href);
    // On a page put in place of another (swapScript), the load event
    // has been.
    if (document.readyState === "complete") setTimeout(f.load, 0);
    else window.addEventListener("load", () => setTimeout(f.load, 0));
  }
  return culpritPlaces(stacks);
}
// culpritShow draws the flame graph page href in place of this one (push:
// as a new entry of the history): its stacks trimmed as the page's
// first, the whole set once drawn. Or it loads the page when it cannot
// (a page of another origin, an error, a difference where this page is
// none). at is when the input that asked for it happened (ms since the
// epoch: performance.timeOrigin + the event's timeStamp, of the window
// it happened in), if one did.
function culpritShow(href, push, at) {
  const f = culpritFlame, u = new URL(href, location.href), key = culpritStacksURL(u);
  const t0 = performance.now();
  const leave = () => { location.assign(u.href); return false; };
  if (!f.stacks || u.origin !== location.origin) return Promise.resolve(leave());
  f.wanted = key;
  const have = key === f.key && f.whole;
  const trimmed = key.replace(/\/flamegraph\.json(\?|$)/, "/flamegraph.trimmed.json$1");
  return (have ? Promise.resolve(null) : culpritLoad(trimmed)).then(set => {
    if (f.wanted !== key || window.culpritFlame !== f) return false; // a later choice came first
    if (!have && (!set || culpritNegative(set) !== f.diff)) return leave();
    const t1 = performance.now();
    if (push) f.pushState(null, "", u.href);
    if (set) {
      const whole = set.Whole;
      delete set.Whole;
      culpritPut(set, key);
      if (whole) culpritLater(key, new URL(whole, trimmed).href);
    }
    culpritRange();
    // Emptied first, the chart is as wide as on a page loaded afresh
    // (the old drawing's height may have added a scroll bar).
    const chart = document.getElementById("stack-chart");
    if (chart) { chart.replaceChildren(); chart.style.height = ""; }
    const t2 = performance.now();
    culpritDraw();
    const t3 = performance.now();
    return new Promise(done => requestAnimationFrame(() => setTimeout(() => {
      // ms: from the request to the frame drawn; of which fetch (the
      // server's answer and its JSON parsed), put (the set in place),
      // draw (pprof's script); input, from the input event to the frame
      // drawn.
      const now = performance.now();
      f.last = {key: key, ms: now - t0, fetch: t1 - t0, put: t2 - t1, draw: t3 - t2};
      if (at !== undefined) f.last.input = performance.timeOrigin + now - at;
      document.documentElement.dataset.culpritShown = key;
      if (!f.whole) f.load();
      done(true);
    }, 0)));
  });
}
window.addEventListener("popstate", () => {
  const f = culpritFlame;
  if (f && f.stacks && location.pathname === f.path && culpritStacksURL(location.href) !== f.key) culpritShow(location.href, false);
});
document.addEventListener("click", e => {
  if (e.defaultPrevented || e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey || e.altKey) return;
  const a = e.target instanceof Element ? e.target.closest("a[href]") : null;
  if (!a || (a.target && a.target !== "_self") || a.hasAttribute("download")) return;
  const u = new URL(a.href, location.href);
  if (culpritFlame && culpritFlame.stacks && u.origin === location.origin && u.pathname === location.pathname) {
    e.preventDefault();
    culpritShow(u.href, true, performance.timeOrigin + e.timeStamp);
  } else if (window.parent !== window) {
    a.target = "_top";
  }
});
</script>`

// trimStacks cuts each stack after its first frame whose node (the frame
// with its callers, as pprof's script draws it) holds under fraction of
// the whole, summing the stacks cut at one node, positive and negative
// values apart (a diff's box is as wide as both). Stacks keep the order
// of their first appearance. ok is false when the stacks do not start at
// one root.
func trimStacks(stacks []flameStack, fraction float64) (out []flameStack, ok bool) {
	type node struct{ parent, src int }
	ids := map[node]int{}
	var weight []int64 // by node id: the sum of |value| of its stacks
	var total int64
	path := func(s flameStack, f func(depth, id int) bool) {
		parent := -1
		for d, src := range s.Sources {
			k := node{parent, src}
			id, ok := ids[k]
			if !ok {
				id = len(weight)
				ids[k] = id
				weight = append(weight, 0)
			}
			if !f(d, id) {
				return
			}
			parent = id
		}
	}
	root := -1
	for _, s := range stacks {
		if len(s.Sources) == 0 {
			return nil, false
		}
		if root < 0 {
			root = s.Sources[0]
		} else if s.Sources[0] != root {
			return nil, false
		}
		v := abs(s.Value)
		total += v
		path(s, func(_, id int) bool { weight[id] += v; return true })
	}
	min := fraction * float64(total)
	type cut struct {
		id       int
		negative bool
	}
	at := map[cut]int{} // index in out of the stack cut at a node
	for _, s := range stacks {
		depth, last := len(s.Sources), -1
		path(s, func(d, id int) bool {
			last = id
			if d > 0 && float64(weight[id]) < min {
				depth = d + 1
				return false
			}
			return true
		})
		k := cut{last, s.Value < 0}
		if i, ok := at[k]; ok {
			out[i].Value += s.Value
			continue
		}
		at[k] = len(out)
		out = append(out, flameStack{Value: s.Value, Sources: s.Sources[:depth:depth]})
	}
	return out, true
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// namedSources returns sources with those in none of stacks (but the
// root) absent (pprof's script reads sources by index and draws only
// those in a stack); ok is false when a stack names a source that is not
// there.
func namedSources(sources []flameSource, stacks []flameStack) (out []flameSource, ok bool) {
	in := make([]bool, len(sources))
	for _, s := range stacks {
		for _, src := range s.Sources {
			if src < 0 || src >= len(sources) {
				return nil, false
			}
			in[src] = true
		}
	}
	out = make([]flameSource, len(sources))
	for i, src := range sources {
		if in[i] || i == 0 {
			out[i] = src
		} else {
			out[i] = flameSource{absent: true}
		}
	}
	return out, true
}

// flameStacksQuery is the query of the whole stack set's URL for a flame
// graph page asked for with query q: the same, less the pivot (p), which
// only pprof's script reads.
func flameStacksQuery(q url.Values) string {
	q2 := url.Values{}
	for k, v := range q {
		if k != "p" {
			q2[k] = v
		}
	}
	return q2.Encode()
}
