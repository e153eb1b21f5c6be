package view

import (
	"testing"
	"time"

	"github.com/culprit-dev/culprit/internal/profile"
)

func TestLinked(t *testing.T) {
	p := &profile.Profile{
		Frames:  []profile.Frame{{Function: "spin_a"}, {Function: "main.work"}, {Function: "a<b>"}},
		Samples: []profile.Sample{{}},
	}
	s := &Server{p: p}
	got := s.linked("  1  spin_a (threads) <- main.work; spin_ab & a<b>", Range{})
	want := `  1  <a class="fn" href="fn?f=%5Espin_a%5Cb">spin_a</a> (threads) &lt;- ` +
		`<a class="fn" href="fn?f=%5Emain%5C.work%5Cb">main.work</a>; spin_ab &amp; a&lt;b&gt;`
	if got != want {
		t.Errorf("linked:\n got %s\nwant %s", got, want)
	}
	// Of a time range: the function page of that range.
	got = s.linked("spin_a", Range{From: 500 * time.Millisecond, To: 2 * time.Second})
	if want := `<a class="fn" href="fn?from=500ms&amp;to=2s&amp;f=%5Espin_a%5Cb">spin_a</a>`; got != want {
		t.Errorf("linked of a range:\n got %s\nwant %s", got, want)
	}
	if got := (&Server{p: &profile.Profile{Frames: p.Frames}}).linked("spin_a <", Range{}); got != "spin_a &lt;" {
		t.Errorf("without samples (no pprof views): %s", got)
	}
}

// In a drawing, names in text nodes are linked and the markup is kept:
// tags, attributes, styles and tooltips (title) untouched, entities read
// as their characters.
func TestLinkMarkup(t *testing.T) {
	p := &profile.Profile{Frames: []profile.Frame{{Function: "spin_a"}, {Function: "main"}}, Samples: []profile.Sample{{}}}
	s := &Server{p: p}
	svg := `<svg><style>.spin_a{fill:red}</style><g id="node1"><title>spin_a</title>` +
		`<text x="1" y="2">spin_a&#45;&gt;main</text><text class="main">other</text></g><!-- main --></svg>`
	got := s.linkMarkup(svg, Range{}, "../", "_top")
	want := `<svg><style>.spin_a{fill:red}</style><g id="node1"><title>spin_a</title>` +
		`<text x="1" y="2"><a class="fn" href="../fn?f=%5Espin_a%5Cb" target="_top">spin_a</a>-&gt;` +
		`<a class="fn" href="../fn?f=%5Emain%5Cb" target="_top">main</a></text><text class="main">other</text></g><!-- main --></svg>`
	if got != want {
		t.Errorf("linkMarkup:\n got %s\nwant %s", got, want)
	}
}
