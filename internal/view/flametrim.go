package view

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
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
// set of its flame graph, for the same query (JSON).
const flameStacksPath = "/flamegraph.json"

// flameCall is how pprof's flame graph page hands its stacks to its
// script.
var flameCall = []byte("stackViewer(")

// wholeStacksCall is how culprit's flame graph page hands pprof's script
// its trimmed stacks (flameScript).
var wholeStacksCall = []byte("culpritWholeStacks(")

// flameStackSet is the part of pprof's report.StackSet that trimming
// changes; the rest is kept as it came.
type flameStackSet struct {
	Stacks  []flameStack
	Sources []map[string]json.RawMessage
}

type flameStack struct {
	Value   int64
	Sources []int
}

type flameSlot struct {
	Stack int
	Pos   int
}

// flameStacks returns the JSON of the stack set in pprof's flame graph
// page (or culprit's trimmed one), and where it starts and ends in page.
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

// trimFlamePage returns pprof's flame graph page with its stacks trimmed
// to what the first view draws, its sources without their places, and
// the script that fills the places in and fetches the whole set from
// stacksURL; or page itself when it is not a flame graph page of the
// shape culprit reads.
func trimFlamePage(page []byte, stacksURL string) []byte {
	js, start, end, err := flameStacks(page)
	if err != nil {
		return page
	}
	var fields map[string]json.RawMessage
	var set flameStackSet
	if json.Unmarshal(js, &fields) != nil || json.Unmarshal(js, &set) != nil {
		return page
	}
	stacks, ok := trimStacks(set.Stacks, minFlameFraction)
	if !ok {
		return page
	}
	sources, ok := namedSources(set.Sources, stacks)
	if !ok {
		return page
	}
	var err1, err2 error
	fields["Stacks"], err1 = json.Marshal(stacks)
	fields["Sources"], err2 = json.Marshal(sources)
	if err1 != nil || err2 != nil {
		return page
	}
	trimmed, err := json.Marshal(fields)
	if err != nil {
		return page
	}
	u, err := json.Marshal(stacksURL) // escapes <, > and &: safe in a script
	if err != nil {
		return page
	}
	var out bytes.Buffer
	out.Grow(len(page))
	out.Write(page[:start])
	fmt.Fprintf(&out, "%s%s, %s)", wholeStacksCall, trimmed, u)
	out.Write(page[end:])
	body := out.Bytes()
	if i := bytes.Index(body, []byte("<body>")); i >= 0 {
		i += len("<body>")
		body = bytes.Join([][]byte{body[:i], []byte(flameScript), body[i:]}, nil)
	} else {
		return page
	}
	return body
}

// withoutPlaces returns pprof's stack set js with its sources'
// Places left out (culpritPlaces fills them in from the stacks).
func withoutPlaces(js []byte) ([]byte, error) {
	var fields map[string]json.RawMessage
	var set flameStackSet
	if err := json.Unmarshal(js, &fields); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(js, &set); err != nil {
		return nil, err
	}
	for _, src := range set.Sources {
		delete(src, "Places")
	}
	b, err := json.Marshal(set.Sources)
	if err != nil {
		return nil, err
	}
	fields["Sources"] = b
	return json.Marshal(fields)
}

// flameScript fills in the places of the stack sets culprit sends
// (culpritPlaces) and puts the whole stack set in place of the trimmed
// one that pprof's script draws first: fetched once the page is drawn,
// or at once when the view changes without the server
// (history.pushState), and drawn again then (pprof's script draws on
// popstate).
//
// A source's places are the stack slots where it occurs first in a
// stack, in the order of the stacks, as pprof's report fills them
// (StackSet.fillPlaces): they follow from the stacks, and sent they
// were two thirds of the page.
const flameScript = `<script>
function culpritPlaces(set) {
  'use strict';
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
function culpritWholeStacks(stacks, url) {
  'use strict';
  let whole = null;
  const load = () => whole || (whole = fetch(url)
    .then(r => r.ok ? r.json() : Promise.reject(r.status))
    .then(s => { culpritPlaces(s); stacks.Stacks = s.Stacks; stacks.Sources = s.Sources; return true; })
    .catch(() => false));
  let done = false;
  const push = history.pushState;
  history.pushState = function(...args) {
    push.apply(this, args);
    if (!done) {
      load().then(ok => { if (ok) { done = true; window.dispatchEvent(new PopStateEvent('popstate')); } });
    }
  };
  window.addEventListener('load', () => setTimeout(() => load().then(ok => { done = ok; }), 0));
  return culpritPlaces(stacks);
}
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

// namedSources returns sources without their Places, and those in none
// of stacks (but the root) as nothing at all (pprof's script reads
// sources by index and draws only those in a stack); ok is false when a
// stack names a source that is not there.
func namedSources(sources []map[string]json.RawMessage, stacks []flameStack) (out []map[string]json.RawMessage, ok bool) {
	in := make([]bool, len(sources))
	for _, s := range stacks {
		for _, src := range s.Sources {
			if src < 0 || src >= len(sources) {
				return nil, false
			}
			in[src] = true
		}
	}
	out = make([]map[string]json.RawMessage, len(sources))
	for i, src := range sources {
		m := make(map[string]json.RawMessage, len(src))
		if in[i] || i == 0 {
			for k, v := range src {
				if k != "Places" {
					m[k] = v
				}
			}
		}
		out[i] = m
	}
	return out, true
}

// flameStacksJSON returns the stack set of pprof's flame graph page, as
// JSON, or an error when page is not one.
func flameStacksJSON(page []byte) ([]byte, error) {
	js, _, _, err := flameStacks(page)
	if err != nil {
		return nil, fmt.Errorf("not a flame graph page: %w", err)
	}
	return js, nil
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
