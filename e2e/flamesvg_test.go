package e2e

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// TestFlameSVG draws PCT's hierarchical program: dispatch_2's frame is about
// twice as wide as dispatch_1's, and both carry worker.
func TestFlameSVG(t *testing.T) {
	testutil.NeedRoot(t)
	bin := testutil.C(t, "hier-O2", []string{"hier.c"}, "-O2", "-g")
	out := rec(t)
	mustRun(t, "record", "-o", out, "--", bin, "4")
	svg := filepath.Join(t.TempDir(), "flame.svg")
	mustRun(t, "export", "--format", "svg", "-o", svg, out)
	data, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Frames struct {
			G []struct {
				Name    string `xml:"data-n,attr"`
				Samples int    `xml:"data-s,attr"`
				Rect    struct {
					X     float64 `xml:"x,attr"`
					Y     float64 `xml:"y,attr"`
					Width float64 `xml:"width,attr"`
				} `xml:"rect"`
			} `xml:"g"`
		} `xml:"g"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("flame graph is not well-formed XML: %v", err)
	}
	type box struct{ x, y, w float64 }
	frames := map[string][]box{}
	for _, g := range doc.Frames.G {
		frames[g.Name] = append(frames[g.Name], box{g.Rect.X, g.Rect.Y, g.Rect.Width})
	}
	d1, d2 := frames["dispatch_1"], frames["dispatch_2"]
	if len(d1) != 1 || len(d2) != 1 {
		t.Fatalf("dispatch frames: %v %v (frames: %d)", d1, d2, len(doc.Frames.G))
	}
	if r := d2[0].w / d1[0].w; r < 1.6 || r > 2.5 {
		t.Errorf("dispatch_2 is %.2f times as wide as dispatch_1, want about 2", r)
	}
	for _, d := range []box{d1[0], d2[0]} {
		found := false
		for _, w := range frames["worker"] {
			found = found || w.y == d.y-16 && w.x >= d.x-0.01 && w.x+w.w <= d.x+d.w+0.01 && w.w > d.w*0.9
		}
		if !found {
			t.Errorf("no worker frame on dispatch frame %+v: %v", d, frames["worker"])
		}
	}
	if !strings.Contains(string(data), "<script><![CDATA[") {
		t.Error("flame graph has no script")
	}
	if _, errs, code := run(t, "export", "--format", "png", "-o", svg, out); code != 2 || !strings.Contains(errs, "svg") {
		t.Errorf("unknown format: exit %d, %s", code, errs)
	}
}
