package e2e

import (
	"encoding/xml"
	"fmt"
	"math"
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
	_, errs, code := run(t, "record", "-o", out, "--", bin, "4", "0", "cpu")
	if code != 0 {
		t.Fatalf("record: exit %d\n%s", code, errs)
	}
	// The program's own CPU time in each dispatch: the widths' truth.
	var cpu1, cpu2 float64
	if i := strings.Index(errs, "cpu dispatch_1 "); i < 0 {
		t.Fatalf("the program printed no CPU times:\n%s", errs)
	} else if _, err := fmt.Sscanf(errs[i:], "cpu dispatch_1 %g dispatch_2 %g", &cpu1, &cpu2); err != nil || cpu1 <= 0 {
		t.Fatalf("the program's CPU times: %v\n%s", err, errs)
	}
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
	type box struct{ x, y, w, n float64 }
	frames := map[string][]box{}
	for _, g := range doc.Frames.G {
		frames[g.Name] = append(frames[g.Name], box{g.Rect.X, g.Rect.Y, g.Rect.Width, float64(g.Samples)})
	}
	d1, d2 := frames["dispatch_1"], frames["dispatch_2"]
	if len(d1) != 1 || len(d2) != 1 {
		t.Fatalf("dispatch frames: %v %v (frames: %d)", d1, d2, len(doc.Frames.G))
	}
	// dispatch_2's width over dispatch_1's is the ratio of their samples;
	// it estimates the ratio of their CPU times, which the program
	// measured (about 2, more or less as a busy machine slows one round
	// or another), within four standard deviations of a ratio of two
	// sample counts (var ln r = 1/n1 + 1/n2).
	n1, n2 := d1[0].n, d2[0].n
	want := cpu2 / cpu1
	if r := d2[0].w / d1[0].w; n1 == 0 || n2 == 0 || math.Abs(math.Log(r/want)) > 4*math.Sqrt(1/n1+1/n2) {
		t.Errorf("dispatch_2 is %.2f times as wide as dispatch_1 (%g and %g samples); the program measured %.2f times the CPU time", r, n2, n1, want)
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
