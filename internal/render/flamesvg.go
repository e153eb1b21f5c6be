package render

// The flame graph is written by hand: no maintained Go library draws one
// (pprof's is an HTML page served by its web UI, flamegraph.pl is Perl).

import (
	"bufio"
	"fmt"
	"hash/fnv"
	"html"
	"io"
	"strings"

	"github.com/culprit-dev/culprit/internal/profile"
)

// Flame graph geometry, in SVG pixels, as flamegraph.pl draws it.
const (
	flameWidth     = 1200
	flamePad       = 10   // left and right margin
	flameFrame     = 16   // height of a level
	flameTop       = 60   // title, subtitle, controls
	flameBottom    = 34   // details line
	flameFont      = 12   // font size
	flameCharWidth = 0.59 // average glyph width in font sizes
	// flameMin is the narrowest frame drawn, as a fraction of all samples.
	flameMin = 0.001
)

// flameColor picks a frame's fill from its name: warm reds and oranges for
// programs, yellows for shared libraries, blues for the kernel, greys for
// the root and processes; inlined frames are paler.
func flameColor(n *profile.TreeNode) string {
	h := fnv.New32a()
	h.Write([]byte(n.Name))
	v := h.Sum32()
	a, b, c := float64(v&0xff)/255, float64(v>>8&0xff)/255, float64(v>>16&0xff)/255
	var r, g, bl float64
	switch {
	case n.Object == "": // the root and the processes
		r, g, bl = 190+20*a, 190+20*a, 190+20*a
	case n.Kernel:
		r, g, bl = 70+60*a, 130+60*b, 215+40*c
	case n.IsLibrary():
		r, g, bl = 200+30*a, 200+35*b, 70+50*c
	default:
		r, g, bl = 215+40*a, 50+100*b, 10+40*c
	}
	if n.Inlined {
		r, g, bl = r+(255-r)*0.4, g+(255-g)*0.4, bl+(255-bl)*0.4
	}
	return fmt.Sprintf("rgb(%d,%d,%d)", int(r), int(g), int(bl))
}

// flameLabel fits name into width pixels, ending in ".." when cut; "" when
// not even three characters fit.
func flameLabel(name string, width float64) string {
	fits := int((width - 6) / (flameFont * flameCharWidth))
	if fits < 3 {
		return ""
	}
	r := []rune(name)
	if len(r) <= fits {
		return name
	}
	return string(r[:fits-2]) + ".."
}

// WriteFlameSVG writes p as a flame graph in one self-contained SVG file,
// as flamegraph.pl draws them: the root ("all") at the bottom, then each
// process (named as at its samples), then the frames of the stacks from the
// outermost up, each as wide as the samples that went through it, siblings
// in name order. Hovering shows a frame's samples and share; clicking zooms
// into it (the ancestors stay, faded); Search highlights the frames matching
// a regular expression and shows the share of samples they cover. Frames
// narrower than 0.1% of the samples are left out, and the subtitle says how
// many.
func WriteFlameSVG(w io.Writer, p *profile.Profile) error {
	root := p.CallTree(true)
	sub := fmt.Sprintf("%d samples", root.Samples)
	if p.Lost > 0 || p.Throttled > 0 {
		sub += fmt.Sprintf(", %d lost, %d throttled", p.Lost, p.Throttled)
	}
	tip := func(n *profile.TreeNode) string {
		return fmt.Sprintf("%s — %d samples, %.2f%%", flameName(n), n.Samples, 100*fraction(n.Samples, root.Samples))
	}
	return writeFlame(w, root, commandName(p), sub, "orange: programs, yellow: libraries, blue: kernel", flameColor, tip)
}

// flameName is a frame's name for its tooltip: with its object, and marked
// when inlined or in the kernel.
func flameName(n *profile.TreeNode) string {
	s := n.Name
	if n.Object != "" {
		s += " (" + n.Object + ")"
	}
	if n.Inlined {
		s += " inlined"
	}
	if n.Kernel {
		s += " [kernel]"
	}
	return s
}

// writeFlame draws the tree under root: title and subtitle on top (the
// legend and the count of frames too narrow to draw appended to the
// subtitle), each frame filled by color and with the tooltip tip.
func writeFlame(w io.Writer, root *profile.TreeNode, title, sub, legend string, color, tip func(*profile.TreeNode) string) error {
	depth := 0
	var measure func(n *profile.TreeNode, d int)
	measure = func(n *profile.TreeNode, d int) {
		if float64(n.Samples) < flameMin*float64(root.Samples) {
			return
		}
		depth = max(depth, d)
		for _, c := range n.Children {
			measure(c, d+1)
		}
	}
	measure(root, 0)
	height := flameTop + (depth+1)*flameFrame + flameBottom

	bw := bufio.NewWriter(w)
	var body strings.Builder
	omitted := 0
	var draw func(n *profile.TreeNode, x float64, d int)
	scale := float64(flameWidth-2*flamePad) / float64(max(root.Samples, 1))
	draw = func(n *profile.TreeNode, x float64, d int) {
		if float64(n.Samples) < flameMin*float64(root.Samples) {
			omitted += n.Size()
			return
		}
		wd := float64(n.Samples) * scale
		y := float64(height - flameBottom - (d+1)*flameFrame)
		fmt.Fprintf(&body, `<g class="f" data-n="%s" data-s="%d"><title>%s</title><rect x="%.2f" y="%.0f" width="%.2f" height="%d" fill="%s" rx="2" ry="2"/><text x="%.2f" y="%.0f">%s</text></g>`+"\n",
			html.EscapeString(n.Name), n.Samples, html.EscapeString(tip(n)), x, y, wd, flameFrame-1, color(n),
			x+3, y+flameFrame-4.5, html.EscapeString(flameLabel(n.Name, wd)))
		for _, c := range n.ByName() {
			draw(c, x, d+1)
			x += float64(c.Samples) * scale
		}
	}
	if root.Samples > 0 {
		draw(root, flamePad, 0)
	}
	if omitted > 0 {
		sub += fmt.Sprintf("; %d frames under 0.1%% not drawn", omitted)
	}
	sub += " · " + legend

	fmt.Fprintf(bw, `<?xml version="1.0" standalone="no"?>
<svg version="1.1" width="%d" height="%d" viewBox="0 0 %d %d" xmlns="http://www.w3.org/2000/svg" data-samples="%d">
<style>
text { font-family: Verdana, sans-serif; font-size: %dpx; fill: black; }
#title { font-size: 17px; text-anchor: middle; }
#subtitle { fill: #555; text-anchor: middle; }
#reset, #search { cursor: pointer; }
#search, #matched { text-anchor: end; }
.f { cursor: pointer; }
.f:hover rect { stroke: black; stroke-width: 0.5; }
.f text { pointer-events: none; }
</style>
<defs><linearGradient id="bg" y1="0" y2="1" x1="0" x2="0"><stop stop-color="#eeeeee" offset="5%%"/><stop stop-color="#eeeeb0" offset="95%%"/></linearGradient></defs>
<rect x="0" y="0" width="%d" height="%d" fill="url(#bg)"/>
<text id="title" x="%d" y="24">%s</text>
<text id="subtitle" x="%d" y="42">%s</text>
<text id="reset" x="%d" y="24" style="display:none">Reset Zoom</text>
<text id="search" x="%d" y="24">Search</text>
<text id="details" x="%d" y="%d"> </text>
<text id="matched" x="%d" y="%d"> </text>
<g id="frames">
`, flameWidth, height, flameWidth, height, root.Samples, flameFont, flameWidth, height,
		flameWidth/2, html.EscapeString(title), flameWidth/2, html.EscapeString(sub),
		flamePad, flameWidth-flamePad, flamePad, height-12, flameWidth-flamePad, height-12)
	if root.Samples == 0 {
		fmt.Fprintf(bw, `<text x="%d" y="%d" style="text-anchor:middle">no samples</text>`+"\n", flameWidth/2, flameTop+flameFrame)
	}
	bw.WriteString(body.String())
	bw.WriteString("</g>\n<script><![CDATA[\n")
	strings.NewReplacer("{W}", fmt.Sprint(flameWidth), "{PAD}", fmt.Sprint(flamePad),
		"{CW}", fmt.Sprint(flameFont*flameCharWidth)).WriteString(bw, flameScript)
	bw.WriteString("\n]]></script>\n</svg>\n")
	return bw.Flush()
}

// flameScript zooms, searches and shows details; frames keep their first
// geometry in data-x, data-y and data-w. {W}, {PAD} and {CW} are replaced by
// the geometry constants.
const flameScript = `(function () {
"use strict";
var W = {W}, PAD = {PAD}, CW = {CW};
var frames = Array.prototype.slice.call(document.querySelectorAll("#frames .f"));
var details = document.getElementById("details"), matched = document.getElementById("matched");
var reset = document.getElementById("reset"), searchBtn = document.getElementById("search");
frames.forEach(function (g) {
	var r = g.querySelector("rect");
	g.setAttribute("data-x", r.getAttribute("x"));
	g.setAttribute("data-w", r.getAttribute("width"));
	g.setAttribute("data-y", r.getAttribute("y"));
});
function label(g, w) {
	var name = g.getAttribute("data-n"), fits = Math.floor((w - 6) / CW);
	if (fits < 3) return "";
	return name.length <= fits ? name : name.substring(0, fits - 2) + "..";
}
function place(g, x, w) {
	var r = g.querySelector("rect"), t = g.querySelector("text");
	r.setAttribute("x", x); r.setAttribute("width", w);
	t.setAttribute("x", x + 3); t.textContent = label(g, w);
}
function zoom(z) {
	var zx = +z.getAttribute("data-x"), zw = +z.getAttribute("data-w"), zy = +z.getAttribute("data-y");
	var ratio = (W - 2 * PAD) / zw;
	frames.forEach(function (g) {
		var x = +g.getAttribute("data-x"), w = +g.getAttribute("data-w"), y = +g.getAttribute("data-y");
		g.style.display = "";
		g.style.opacity = "";
		if (y > zy && x <= zx + 0.01 && x + w >= zx + zw - 0.01) {
			place(g, PAD, W - 2 * PAD); g.style.opacity = "0.5";
		} else if (y <= zy && x >= zx - 0.01 && x + w <= zx + zw + 0.01) {
			place(g, PAD + (x - zx) * ratio, w * ratio);
		} else {
			g.style.display = "none";
		}
	});
	reset.style.display = "";
}
function unzoom() {
	frames.forEach(function (g) {
		g.style.display = ""; g.style.opacity = "";
		place(g, +g.getAttribute("data-x"), +g.getAttribute("data-w"));
	});
	reset.style.display = "none";
}
function search() {
	var term = prompt("Search for (regular expression):", "");
	frames.forEach(function (g) { g.querySelector("rect").style.fill = ""; });
	if (!term) { matched.textContent = " "; return; }
	var re;
	try { re = new RegExp(term); } catch (e) { matched.textContent = "bad expression: " + e.message; return; }
	var spans = [];
	frames.forEach(function (g) {
		if (!re.test(g.getAttribute("data-n"))) return;
		g.querySelector("rect").style.fill = "rgb(230,0,230)";
		spans.push([+g.getAttribute("data-x"), +g.getAttribute("data-x") + +g.getAttribute("data-w")]);
	});
	spans.sort(function (a, b) { return a[0] - b[0]; });
	var covered = 0, end = -1;
	spans.forEach(function (s) {
		if (s[0] >= end) { covered += s[1] - s[0]; end = s[1]; }
		else if (s[1] > end) { covered += s[1] - end; end = s[1]; }
	});
	matched.textContent = "Matched: " + (100 * covered / (W - 2 * PAD)).toFixed(1) + "%";
}
document.addEventListener("click", function (e) {
	var t = e.target;
	if (t === reset) return unzoom();
	if (t === searchBtn) return search();
	var g = t.closest ? t.closest(".f") : null;
	if (g) zoom(g);
});
document.addEventListener("mouseover", function (e) {
	var g = e.target.closest ? e.target.closest(".f") : null;
	if (g) details.textContent = g.querySelector("title").textContent;
});
document.addEventListener("mouseout", function () { details.textContent = " "; });
})();`
