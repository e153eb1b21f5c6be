package render

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/profile"
)

type svgFrame struct {
	Name    string `xml:"data-n,attr"`
	Samples int    `xml:"data-s,attr"`
	Title   string `xml:"title"`
	Rect    struct {
		X     float64 `xml:"x,attr"`
		Y     float64 `xml:"y,attr"`
		Width float64 `xml:"width,attr"`
		Fill  string  `xml:"fill,attr"`
	} `xml:"rect"`
	Text string `xml:"text"`
}

type svgDoc struct {
	XMLName xml.Name `xml:"svg"`
	Texts   []struct {
		ID   string `xml:"id,attr"`
		Text string `xml:",chardata"`
	} `xml:"text"`
	Frames struct {
		G []svgFrame `xml:"g"`
	} `xml:"g"`
	Script string `xml:"script"`
}

func parseFlame(t *testing.T, p *profile.Profile) svgDoc {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteFlameSVG(&buf, p); err != nil {
		t.Fatal(err)
	}
	var doc svgDoc
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("not well-formed XML: %v\n%s", err, buf.String())
	}
	return doc
}

func rgb(t *testing.T, fill string) (r, g, b int) {
	t.Helper()
	if _, err := fmt.Sscanf(fill, "rgb(%d,%d,%d)", &r, &g, &b); err != nil {
		t.Fatalf("fill %q: %v", fill, err)
	}
	return
}

func TestFlameSVG(t *testing.T) {
	p := testProfile()
	p.Frames = slices.Clone(p.Frames)
	p.Frames[fDispatch].Function = "ns::dispatch<a&b>"
	doc := parseFlame(t, p)
	fs := doc.Frames.G
	if len(fs) == 0 {
		t.Fatal("no frames")
	}
	find := func(name string, y float64) []svgFrame {
		var out []svgFrame
		for _, f := range fs {
			if f.Name == name && (y < 0 || f.Rect.Y == y) {
				out = append(out, f)
			}
		}
		return out
	}
	all := find("all", -1)
	if len(all) != 1 || all[0].Samples != 10 || all[0].Rect.Width != 1180 || all[0].Rect.X != 10 {
		t.Fatalf("root: %+v", all)
	}
	perSample := 1180.0 / 10
	for _, f := range fs {
		if math.Abs(f.Rect.Width-float64(f.Samples)*perSample) > 0.01 {
			t.Errorf("%s: width %.2f for %d samples", f.Name, f.Rect.Width, f.Samples)
		}
		if !strings.Contains(f.Title, fmt.Sprintf("— %d samples, %.2f%%", f.Samples, 10*float64(f.Samples))) {
			t.Errorf("%s: tooltip %q", f.Name, f.Title)
		}
	}
	// Each frame lies inside a frame one level below it (its parent).
	for _, f := range fs {
		if f.Name == "all" {
			continue
		}
		inside := false
		for _, q := range fs {
			if q.Rect.Y == f.Rect.Y+16 && q.Rect.X <= f.Rect.X+0.01 && q.Rect.X+q.Rect.Width >= f.Rect.X+f.Rect.Width-0.01 && q.Samples >= f.Samples {
				inside = true
			}
		}
		if !inside {
			t.Errorf("%s at (%.2f, %.0f) has no parent below it", f.Name, f.Rect.X, f.Rect.Y)
		}
	}
	// Processes above the root, named by their main thread; children in
	// name order ("[unknown]" sorts before "main").
	y1 := all[0].Rect.Y - 16
	app, other := find("app", y1), find("other", y1)
	if len(app) != 1 || app[0].Samples != 9 || len(other) != 1 || other[0].Rect.X < app[0].Rect.X+app[0].Rect.Width-0.01 {
		t.Fatalf("processes: app %+v other %+v", app, other)
	}
	unknown, mains := find(profile.Unknown, y1-16), find("main", y1-16)
	if len(unknown) != 1 || len(mains) != 2 || unknown[0].Rect.X != app[0].Rect.X || mains[0].Samples != 8 {
		t.Errorf("app's children: [unknown] %+v, main %+v", unknown, mains)
	}
	// worker under the escaped C++ name in both processes: 5 + 1 samples.
	d := find("ns::dispatch<a&b>", -1)
	if len(d) != 2 || d[0].Samples+d[1].Samples != 7 || !strings.Contains(d[0].Title, "ns::dispatch<a&b> (app)") {
		t.Errorf("C++ name frames: %+v", d)
	}
	if w := find("worker", -1); len(w) != 2 || w[0].Samples+w[1].Samples != 7 {
		t.Errorf("worker frames: %+v", w)
	}
	// Colours by kind; inlined frames say so.
	k := find("ksys_write", -1)
	if len(k) != 1 || !strings.Contains(k[0].Title, "kernel") {
		t.Fatalf("kernel frame: %+v", k)
	}
	if r, g, b := rgb(t, k[0].Rect.Fill); b < 200 || b <= r || b <= g {
		t.Errorf("kernel frame colour %s is not blue", k[0].Rect.Fill)
	}
	if r, g, b := rgb(t, find("memcpy", -1)[0].Rect.Fill); r < 200 || g < 200 || b > 130 {
		t.Errorf("library frame colour %d,%d,%d is not yellow", r, g, b)
	}
	if r, g, b := rgb(t, find("worker", -1)[0].Rect.Fill); r < 215 || g > 150 || b > 50 {
		t.Errorf("program frame colour %d,%d,%d is not orange", r, g, b)
	}
	if h := find("helper", -1); len(h) != 1 || !strings.Contains(h[0].Title, "inlined") {
		t.Errorf("inlined frame: %+v", h)
	}
	// Labels fit their frames: one sample is 118 px, about 16 characters.
	for _, f := range fs {
		if f.Text != "" && float64(len([]rune(f.Text)))*12*0.59 > f.Rect.Width {
			t.Errorf("label %q overflows %.1f px", f.Text, f.Rect.Width)
		}
	}
	if !strings.Contains(doc.Script, "function zoom") || !strings.Contains(doc.Script, "var W = 1200, PAD = 10") {
		t.Errorf("script missing or its constants not filled in")
	}
	sub := ""
	for _, tx := range doc.Texts {
		if tx.ID == "subtitle" {
			sub = tx.Text
		}
	}
	if !strings.HasPrefix(sub, "10 samples, 2 lost, 1 throttled") {
		t.Errorf("subtitle %q", sub)
	}
}

func TestFlameSVGNarrowAndEmpty(t *testing.T) {
	// 2000 samples of one stack and one of another: the one-sample frames
	// are under 0.1% and left out, and the subtitle counts them.
	p := testProfile()
	p.Samples = p.Samples[:1]
	for i := 0; i < 2000; i++ {
		p.Samples = append(p.Samples, p.Samples[0])
	}
	p.Samples = append(p.Samples, profile.Sample{Time: p.StartTime, PID: 100, TID: 101, Stack: 2})
	doc := parseFlame(t, p)
	for _, f := range doc.Frames.G {
		if f.Samples < 2 {
			t.Errorf("frame %s of %d sample drawn", f.Name, f.Samples)
		}
	}
	found := false
	for _, tx := range doc.Texts {
		found = found || tx.ID == "subtitle" && strings.Contains(tx.Text, "3 frames under 0.1% not drawn")
	}
	if !found {
		t.Errorf("subtitle does not count the 3 frames left out (libc+0x1234, entry_SYSCALL_64, ksys_write): %+v", doc.Texts)
	}

	p.Samples = nil
	var buf bytes.Buffer
	if err := WriteFlameSVG(&buf, p); err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(buf.Bytes(), new(svgDoc)); err != nil || !strings.Contains(buf.String(), "no samples") {
		t.Errorf("empty flame graph: %v\n%s", err, buf.String())
	}
}

func TestFlameDiffSVG(t *testing.T) {
	base := testProfile()
	cur := testProfile()
	// In the new run worker's stack (stack 0) takes 6 more samples of
	// process 100: worker's self share grows from 5/10 to 11/16; everything
	// else shrinks.
	for i := 0; i < 6; i++ {
		cur.Samples = append(cur.Samples, cur.Samples[0])
	}
	var buf bytes.Buffer
	if err := WriteFlameDiffSVG(&buf, base, cur); err != nil {
		t.Fatal(err)
	}
	var doc svgDoc
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("not well-formed XML: %v", err)
	}
	byName := map[string]svgFrame{}
	for _, f := range doc.Frames.G {
		if _, dup := byName[f.Name]; !dup || f.Samples > byName[f.Name].Samples {
			byName[f.Name] = f
		}
	}
	w, k := byName["worker"], byName["ksys_write"]
	if w.Samples != 12 {
		t.Fatalf("worker in process 100: %+v", w)
	}
	if r, g, b := rgb(t, w.Rect.Fill); r != 255 || g > 100 || g != b {
		t.Errorf("worker, whose self share grew most, is %d,%d,%d: want deep red", r, g, b)
	}
	if r, g, b := rgb(t, k.Rect.Fill); b != 255 || r >= 255 || r != g {
		t.Errorf("ksys_write, whose self share shrank, is %d,%d,%d: want blue", r, g, b)
	}
	if r, g, b := rgb(t, byName["main"].Rect.Fill); r != 255 || g != 255 || b != 255 {
		t.Errorf("main, never innermost, is %d,%d,%d: want white", r, g, b)
	}
	// worker in process 100: 6 → 12 samples (with helper and memcpy above it); its self share 4/10 → 10/16.
	if !strings.Contains(w.Title, "6 → 12 samples") || !strings.Contains(w.Title, "self 40.00% → 62.50% (+22.50)") {
		t.Errorf("worker tooltip %q", w.Title)
	}
}
