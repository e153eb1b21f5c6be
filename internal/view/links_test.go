package view

import (
	"testing"

	"github.com/culprit-dev/culprit/internal/profile"
)

func TestLinked(t *testing.T) {
	p := &profile.Profile{
		Frames:  []profile.Frame{{Function: "spin_a"}, {Function: "main.work"}, {Function: "a<b>"}},
		Samples: []profile.Sample{{}},
	}
	s := &Server{p: p}
	got := s.linked("  1  spin_a (threads) <- main.work; spin_ab & a<b>", Range{})
	want := `  1  <a class="fn" href="pprof/all/peek?f=%5Espin_a%5Cb">spin_a</a> (threads) &lt;- ` +
		`<a class="fn" href="pprof/all/peek?f=%5Emain%5C.work%5Cb">main.work</a>; spin_ab &amp; a&lt;b&gt;`
	if got != want {
		t.Errorf("linked:\n got %s\nwant %s", got, want)
	}
	if got := (&Server{p: &profile.Profile{Frames: p.Frames}}).linked("spin_a <", Range{}); got != "spin_a &lt;" {
		t.Errorf("without samples (no pprof views): %s", got)
	}
}
