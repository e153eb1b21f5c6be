package render

import (
	"bufio"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/culprit-dev/culprit/internal/analysis/introperf"
	"github.com/culprit-dev/culprit/internal/recording"
)

// latencyName names the latency a comparison ranks by.
func latencyName(c introperf.Comparison) string {
	if c.Options.Inclusive {
		return "inclusive"
	}
	return "own"
}

// aggregateName names how a comparison aggregates instances.
func aggregateName(c introperf.Comparison) string {
	if c.Options.Scaled {
		return "scaled-total"
	}
	if c.Options.Totals {
		return "total"
	}
	return "mean"
}

// costName names how a comparison sums a path's cost.
func costName(c introperf.Comparison) string {
	if c.Options.Net {
		return "net"
	}
	return "growth"
}

func runLine(r *introperf.Result) string {
	if r == nil {
		return "none"
	}
	s := fmt.Sprintf("%d events used (%s) in %d threads, %d contexts, %d root-to-leaf paths",
		r.Used, eventSummary(r.EventCounts), len(r.Threads), r.Tree.Nodes(), len(r.Tree.Leaves()))
	if r.Objects.Main != "" {
		s += "; main program " + runBase(r.Objects.Main)
	}
	if len(r.Objects.Plugins) > 0 {
		var ps []string
		for p := range r.Objects.Plugins {
			ps = append(ps, runBase(p))
		}
		sort.Strings(ps)
		s += "; plug-ins " + strings.Join(ps, ", ")
	}
	if r.Objects.Note != "" {
		s += " (" + r.Objects.Note + ")"
	}
	if r.Lost > 0 {
		s += fmt.Sprintf("; %d records lost by the kernel, threads' inference cut at %d windows of loss (record with larger rings: --mmap-pages)", r.Lost, r.Cut)
	}
	if n := syscallNote(r); n != "" {
		s += "; " + n
	}
	if r.Between > 0 || r.WindowCut > 0 {
		s += fmt.Sprintf("; %d events between system call windows skipped, threads' inference cut at %d window edges, instances in windows counted PERIOD/ON times", r.Between, r.WindowCut)
	}
	return s
}

// syscallNote says how many system calls the recorder left out
// (record --syscall-limit), or "" when it recorded every one.
func syscallNote(r *introperf.Result) string {
	rec := uint64(r.EventCounts[recording.EventSyscallEnter])
	if r.ThinnedCalls > 0 || r.ThinnedSwitches > 0 {
		// Thinned to the compared run's windows (introperf.Options.Like).
		return fmt.Sprintf("thinned to the other run's system call windows, to compare like with like: %d system calls left out where that run recorded in windows and this one all along, %d context switches inside them without stacks; %d calls kept stand for an estimated %d",
			r.ThinnedCalls, r.ThinnedSwitches, rec, r.Syscalls)
	}
	if r.Syscalls <= rec {
		return ""
	}
	rule := ""
	if rate, burst, ok := strings.Cut(r.SyscallLimit, "/"); ok && rate != "1000000000" {
		rule = fmt.Sprintf(", at most %s a second per thread beyond a burst of %s", rate, burst)
	}
	if on, period, ok := strings.Cut(r.SyscallWindows, "/"); ok {
		above := ""
		if p, a, ok := strings.Cut(period, ">"); ok {
			period, above = p, fmt.Sprintf(" (while the traced threads made more than %s calls a second; every call below)", a)
		}
		return fmt.Sprintf("%d system calls recorded in windows of %s every %s%s%s stand for an estimated %d: the others have no kernel instances, and their threads' functions are seen at fewer moments (record --syscall-windows off for calls all along)",
			rec, on, period, above, rule, r.Syscalls)
	}
	return fmt.Sprintf("%d of %d system calls recorded (%.0f%%%s): the others have no kernel instances, and their threads' functions are seen at fewer moments (record --syscall-limit 0 for every call)",
		rec, r.Syscalls, 100*float64(rec)/float64(r.Syscalls), rule)
}

// ContextsText prints the ranked paths: for each, its cost, the
// root-cause candidate and its binary's layer, and the frames outermost
// first with their latency, base latency, rank and distance from the hottest
// frame.
func ContextsText(w io.Writer, c introperf.Comparison) error {
	bw := bufio.NewWriter(w)
	per := "per instance"
	switch {
	case c.Options.Scaled:
		per = "in total, the buggy run's scaled to the base run's length"
	case c.Options.Totals:
		per = "in total"
	}
	fmt.Fprintf(bw, "IntroPerf calling-context ranking: %s latencies, %s time %s; a path's cost: %s\n", c.Options.Mode, latencyName(c), per, costName(c))
	fmt.Fprintf(bw, "buggy %s: %s\n", runBase(c.BuggyName), runLine(c.Buggy))
	fmt.Fprintf(bw, "base  %s: %s\n", runBase(c.BaseName), runLine(c.Base))
	if len(c.Paths) == 0 {
		fmt.Fprintln(bw, "\nno calling contexts in the buggy run")
		return bw.Flush()
	}
	for _, p := range c.Paths {
		status := "also in base"
		if !p.InBase {
			status = "absent from base (base latency 0)"
		}
		fmt.Fprintf(bw, "\n#%d  cost %s  %s\n", p.Rank, signedNS(p.Cost), status)
		fmt.Fprintf(bw, "    root-cause candidate: %s\n", p.Verdict())
		fmt.Fprintf(bw, "    %5s %4s %10s %10s %10s %8s  %s\n", "dist", "rank", "buggy", "base", "increase", "count", "function (object) [layer]")
		for i, f := range p.Frames {
			mark := " "
			switch {
			case i == p.Candidate:
				mark = ">"
			case i == p.Grew:
				mark = "+"
			}
			fmt.Fprintf(bw, "  %s %+5d %4d %10s %10s %10s %8d  %s [%s]\n", mark, f.Distance, f.Rank,
				fmtNS(f.Latency), fmtNS(f.Base), signedNS(f.Delta()), f.Count, f.Func.Label(), f.Layer)
		}
	}
	fmt.Fprintf(bw, "\n(dist: frames from the hottest frame (0), - callers, + callees; rank: by buggy latency in the path;\n >: root-cause candidate; +: the frame that grew most, when the candidate is its caller outside the kernel and C runtime)\n")
	return bw.Flush()
}

func signedNS(ns float64) string {
	if ns > 0 {
		return "+" + fmtNS(ns)
	}
	return fmtNS(ns)
}

type ctxRunJSON struct {
	File      string         `json:"file"`
	Events    map[string]int `json:"events"`
	Used      int            `json:"used"`
	Threads   int            `json:"threads"`
	Contexts  int            `json:"contexts"`
	Paths     int            `json:"paths"`
	Main      string         `json:"main"`
	Plugins   []string       `json:"plugins"`
	LoadTimes bool           `json:"load_times"`
	Note      string         `json:"note,omitempty"`
	// Syscalls: the system calls the recorded entries stand for (more
	// than events' syscall-enter when record --syscall-limit left some out).
	Syscalls uint64 `json:"syscalls"`
}

type ctxFrameJSON struct {
	Name        string  `json:"name"`
	Object      string  `json:"object"`
	Latency     float64 `json:"latency"`
	Inclusive   float64 `json:"inclusive"`
	Rank        int     `json:"rank"`
	Distance    int     `json:"distance"`
	BaseLatency float64 `json:"base_latency"`
	Delta       float64 `json:"delta"`
	Count       int64   `json:"count"`
	BaseCount   int64   `json:"base_count"`
	Layer       string  `json:"layer"`
	Path        string  `json:"path"`
}

type ctxPathJSON struct {
	Rank      int            `json:"rank"`
	Cost      float64        `json:"cost"`
	InBase    bool           `json:"in_base"`
	Hottest   int            `json:"hottest"`
	Grew      int            `json:"grew"`
	Candidate int            `json:"candidate"`
	Layer     string         `json:"layer"`
	Binary    string         `json:"binary"`
	External  bool           `json:"external"`
	Verdict   string         `json:"verdict"`
	Frames    []ctxFrameJSON `json:"frames"`
}

func toCtxRunJSON(name string, r *introperf.Result) ctxRunJSON {
	j := ctxRunJSON{File: name, Events: map[string]int{}, Plugins: []string{}}
	if r == nil {
		return j
	}
	j.Events = eventCounts(r.EventCounts)
	j.Used, j.Threads, j.Contexts, j.Paths = r.Used, len(r.Threads), r.Tree.Nodes(), len(r.Tree.Leaves())
	j.Main, j.LoadTimes, j.Note = r.Objects.Main, r.Objects.LoadTimes, r.Objects.Note
	j.Syscalls = r.Syscalls
	for p := range r.Objects.Plugins {
		j.Plugins = append(j.Plugins, p)
	}
	sort.Strings(j.Plugins)
	return j
}

// ContextsJSON writes the ranking as described in docs/report-json.md.
func ContextsJSON(w io.Writer, c introperf.Comparison) error {
	doc := struct {
		Mode      string        `json:"mode"`
		Latency   string        `json:"latency"`
		Aggregate string        `json:"aggregate"`
		Cost      string        `json:"cost"`
		Unit      string        `json:"unit"`
		Base      ctxRunJSON    `json:"base"`
		Buggy     ctxRunJSON    `json:"buggy"`
		Paths     []ctxPathJSON `json:"paths"`
	}{Mode: c.Options.Mode.String(), Latency: latencyName(c), Aggregate: aggregateName(c), Cost: costName(c), Unit: "ns",
		Base: toCtxRunJSON(c.BaseName, c.Base), Buggy: toCtxRunJSON(c.BuggyName, c.Buggy), Paths: []ctxPathJSON{}}
	for _, p := range c.Paths {
		cf := p.CandidateFrame()
		jp := ctxPathJSON{Rank: p.Rank, Cost: p.Cost, InBase: p.InBase, Hottest: p.Hottest, Grew: p.Grew, Candidate: p.Candidate,
			Layer: cf.Layer.Key(), Binary: cf.Func.Path, External: cf.Layer.External(), Verdict: p.Verdict(),
			Frames: []ctxFrameJSON{}}
		for _, f := range p.Frames {
			jp.Frames = append(jp.Frames, ctxFrameJSON{Name: f.Func.Name, Object: f.Func.Object, Latency: f.Latency, Inclusive: f.Inclusive,
				Rank: f.Rank, Distance: f.Distance, BaseLatency: f.Base, Delta: f.Delta(), Count: f.Count,
				BaseCount: f.BaseCount, Layer: f.Layer.Key(), Path: f.Func.Path})
		}
		doc.Paths = append(doc.Paths, jp)
	}
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	return bw.Flush()
}

// overlay is a node of the two runs' trees merged by calling context.
type ctxOverlay struct {
	id       int
	fn       introperf.Func
	base     *introperf.Node
	buggy    *introperf.Node
	children []*ctxOverlay
	keep     bool
}

// merge overlays the two trees by function identity.
func overlayOf(c introperf.Comparison) *ctxOverlay {
	root := &ctxOverlay{id: 0}
	next := 1
	var add func(o *ctxOverlay, v *introperf.Node, t *introperf.Tree, buggy bool)
	add = func(o *ctxOverlay, v *introperf.Node, t *introperf.Tree, buggy bool) {
		for _, ch := range v.Children {
			fn := t.Funcs.Get(ch.Func)
			var m *ctxOverlay
			for _, x := range o.children {
				if x.fn.Key() == fn.Key() {
					m = x
					break
				}
			}
			if m == nil {
				m = &ctxOverlay{id: next, fn: fn}
				next++
				o.children = append(o.children, m)
			}
			if buggy {
				m.buggy = ch
			} else {
				m.base = ch
			}
			add(m, ch, t, buggy)
		}
	}
	if c.Base != nil {
		add(root, c.Base.Tree.Root, c.Base.Tree, false)
	}
	if c.Buggy != nil {
		add(root, c.Buggy.Tree.Root, c.Buggy.Tree, true)
	}
	return root
}

// dotLimit bounds the nodes of a DOT graph.
const dotLimit = 400

// ContextsDOT writes both runs' calling context trees overlaid as a Graphviz
// digraph (IntroPerf Figures 5 and 6): each context is one node labelled
// with its function, object, and the base and buggy mean latencies and
// instance counts; the buggy run's edges are red, the base run's blue, with
// widths growing with the log of the callee's total latency. Contexts on the
// ranked paths are drawn (filled by their latency increase); other contexts
// are drawn while their total latency is at least 0.5% of their run's
// largest, up to 400 nodes.
func ContextsDOT(w io.Writer, c introperf.Comparison) error {
	m := c.Options.Mode
	root := overlayOf(c)
	var maxTotal [2]float64
	var walk func(o *ctxOverlay, f func(*ctxOverlay))
	walk = func(o *ctxOverlay, f func(*ctxOverlay)) {
		f(o)
		for _, ch := range o.children {
			walk(ch, f)
		}
	}
	walk(root, func(o *ctxOverlay) {
		if o.base != nil {
			maxTotal[0] = math.Max(maxTotal[0], float64(o.base.Total[m]))
		}
		if o.buggy != nil {
			maxTotal[1] = math.Max(maxTotal[1], float64(o.buggy.Total[m]))
		}
	})
	onPath := map[*introperf.Node]bool{}
	for _, p := range c.Paths {
		for _, f := range p.Frames {
			onPath[f.Node] = true
		}
	}
	kept := 0
	// Mark nodes on ranked paths first, then big ones, breadth first.
	walk(root, func(o *ctxOverlay) {
		if o.buggy != nil && onPath[o.buggy] {
			o.keep = true
			kept++
		}
	})
	queue := []*ctxOverlay{root}
	for len(queue) > 0 && kept < dotLimit {
		o := queue[0]
		queue = queue[1:]
		for _, ch := range o.children {
			big := (ch.base != nil && float64(ch.base.Total[m]) >= 0.005*maxTotal[0]) ||
				(ch.buggy != nil && float64(ch.buggy.Total[m]) >= 0.005*maxTotal[1])
			if big && !ch.keep && kept < dotLimit {
				ch.keep = true
				kept++
			}
			if ch.keep {
				queue = append(queue, ch)
			}
		}
	}
	lat := c.Options.Latency
	width := func(v *introperf.Node, max float64) float64 {
		if v == nil || max <= 0 || v.Total[m] == 0 {
			return 0.5
		}
		return 0.5 + 4*math.Log10(1+9*float64(v.Total[m])/max)
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "digraph cct {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\", fontsize=10, style=filled, fillcolor=white];\n")
	fmt.Fprintf(bw, "  label=%q;\n", fmt.Sprintf("calling context trees, %s %s latency (%s): blue %s (base), red %s (buggy)",
		m, latencyName(c), aggregateName(c), runBase(c.BaseName), runBase(c.BuggyName)))
	fmt.Fprintf(bw, "  n0 [label=\"root\", shape=ellipse];\n")
	var emit func(o *ctxOverlay)
	emit = func(o *ctxOverlay) {
		for _, ch := range o.children {
			if !ch.keep {
				continue
			}
			var bc, gc int64
			if ch.base != nil {
				bc = ch.base.Count
			}
			if ch.buggy != nil {
				gc = ch.buggy.Count
			}
			label := fmt.Sprintf("%s\n%s\nbase %s ×%d\nbuggy %s ×%d", trimTo(ch.fn.Name, 48), ch.fn.Object,
				fmtNS(lat(ch.base)), bc, fmtNS(lat(ch.buggy)), gc)
			fill := "white"
			if ch.buggy != nil && onPath[ch.buggy] {
				fill = "\"#ffe0d0\""
				if lat(ch.buggy)-lat(ch.base) > 0 && lat(ch.buggy) > 2*lat(ch.base) {
					fill = "\"#ff9f80\""
				}
			}
			fmt.Fprintf(bw, "  n%d [label=%q, fillcolor=%s];\n", ch.id, label, fill)
			if ch.base != nil {
				fmt.Fprintf(bw, "  n%d -> n%d [color=blue, penwidth=%.2f];\n", o.id, ch.id, width(ch.base, maxTotal[0]))
			}
			if ch.buggy != nil {
				fmt.Fprintf(bw, "  n%d -> n%d [color=red, penwidth=%.2f];\n", o.id, ch.id, width(ch.buggy, maxTotal[1]))
			}
			emit(ch)
		}
	}
	emit(root)
	fmt.Fprintln(bw, "}")
	return bw.Flush()
}

func trimTo(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// heatColour maps x in [0,1] to a colour from blue (cold) to red (hot).
func heatColour(x float64) string {
	if math.IsNaN(x) || x < 0 {
		x = 0
	}
	if x > 1 {
		x = 1
	}
	hue := 240 * (1 - x)
	return fmt.Sprintf("hsl(%.0f,85%%,%.0f%%)", hue, 55+15*(1-x))
}

// ContextsHTML writes a self-contained heat map of the ranked paths (IntroPerf
// Figure 7): one row per path, hottest first; columns are the path's frames,
// outermost first; each cell is coloured by the frame's inclusive latency
// (PathFrame.Inclusive) on a log10 scale across the whole map and marked
// with its distance from the path's hottest frame (0); the root-cause
// candidate is outlined. Inclusive, not own, latency: a row then reads as
// the time each caller spent down to the leaf, whichever estimate ranks
// (aggressive latencies leave the own time mostly in the leaves,
// conservative ones in the callers whose context stayed open), and the
// ranking's own latencies are in each cell's title.
func ContextsHTML(w io.Writer, c introperf.Comparison) error {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range c.Paths {
		for _, f := range p.Frames {
			if f.Inclusive > 0 {
				l := math.Log10(f.Inclusive)
				lo, hi = math.Min(lo, l), math.Max(hi, l)
			}
		}
	}
	scale := func(ns float64) float64 {
		if ns <= 0 || math.IsInf(lo, 1) {
			return -1
		}
		if hi == lo {
			return 1
		}
		return (math.Log10(ns) - lo) / (hi - lo)
	}
	bw := bufio.NewWriter(w)
	esc := html.EscapeString
	fmt.Fprintf(bw, `<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>culprit contexts: %s vs %s</title>
<style>
body{font-family:sans-serif;font-size:13px;margin:1em}
table{border-collapse:collapse}
td,th{border:1px solid #ccc;padding:2px 4px;vertical-align:top}
td.f{font-family:monospace;font-size:11px;min-width:6em;max-width:12em;overflow:hidden;white-space:nowrap;text-overflow:ellipsis}
td.f span{display:block;font-size:10px;color:#222}
td.cand{outline:3px solid #000;outline-offset:-3px}
td.cold{background:#eee}
.legend span{display:inline-block;width:3em;text-align:center;color:#000}
</style></head><body>
<h1>Top calling contexts</h1>
<p>buggy <b>%s</b>: %s<br>base <b>%s</b>: %s</p>
<p>Ranked by %s mode, %s latency (%s). Colour: each frame's inclusive latency (its own and its callees' in that context) on a log10 scale from %s (blue) to %s (red); grey: none, or an idle wait that counts 0.
Numbers: distance from the hottest frame (0, the highest own latency) in the path; outlined: root-cause candidate (largest increase over the base).</p>
<p class="legend">`,
		esc(runBase(c.BaseName)), esc(runBase(c.BuggyName)),
		esc(runBase(c.BuggyName)), esc(runLine(c.Buggy)), esc(runBase(c.BaseName)), esc(runLine(c.Base)),
		c.Options.Mode, latencyName(c), aggregateName(c), fmtNS(math.Pow(10, lo)), fmtNS(math.Pow(10, hi)))
	for i := 0; i <= 10; i++ {
		x := float64(i) / 10
		v := lo + x*(hi-lo)
		if math.IsInf(lo, 1) {
			v = 0
		}
		fmt.Fprintf(bw, `<span style="background:%s">%s</span>`, heatColour(x), esc(fmtNS(math.Pow(10, v))))
	}
	fmt.Fprintf(bw, "</p>\n<table>\n<tr><th>rank</th><th>cost</th><th>root-cause candidate</th><th colspan=\"999\">frames, outermost first</th></tr>\n")
	for _, p := range c.Paths {
		cf := p.CandidateFrame()
		fmt.Fprintf(bw, "<tr><td>%d</td><td>%s</td><td title=\"%s\">%s<br><small>%s, %s</small></td>",
			p.Rank, esc(signedNS(p.Cost)), esc(p.Verdict()), esc(trimTo(cf.Func.Name, 32)), esc(cf.Func.Object), esc(cf.Layer.String()))
		for i, f := range p.Frames {
			x := scale(f.Inclusive)
			class := "f"
			style := ""
			if x < 0 {
				class += " cold"
			} else {
				style = fmt.Sprintf(` style="background:%s"`, heatColour(x))
			}
			if i == p.Candidate {
				class += " cand"
			}
			title := fmt.Sprintf("%s (%s, %s)\ninclusive %s\nown: buggy %s ×%d, base %s ×%d, increase %s\nrank %d in path, distance %+d",
				f.Func.Name, f.Func.Path, f.Layer, fmtNS(f.Inclusive), fmtNS(f.Latency), f.Count, fmtNS(f.Base), f.BaseCount, signedNS(f.Delta()), f.Rank, f.Distance)
			fmt.Fprintf(bw, `<td class="%s"%s title="%s">%s<span>%+d</span></td>`, class, style, esc(title), esc(trimTo(f.Func.Name, 24)), f.Distance)
		}
		fmt.Fprintln(bw, "</tr>")
	}
	fmt.Fprintln(bw, "</table>\n</body></html>")
	return bw.Flush()
}
