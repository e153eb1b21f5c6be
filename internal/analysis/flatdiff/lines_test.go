package flatdiff

import (
	"math"
	"regexp"
	"testing"

	"github.com/culprit-dev/culprit/internal/profile"
)

func at(fn, obj, file string, line int) profile.Frame {
	return profile.Frame{Function: fn, Object: obj, File: file, Line: line}
}

func TestCompareLines(t *testing.T) {
	// The program moved (another object path and source directory) and its
	// loop at line 10 took twice as much: base 40 of 100 samples, new 80 of
	// 120; line 5's call (where the loop is reached from) grows with it.
	base := build(map[int][]profile.Frame{
		0: {at("worker", "/v1/app", "/src1/w.c", 10), at("main", "/v1/app", "/src1/m.c", 5)},
		1: {at("worker", "/v1/app", "/src1/w.c", 12), at("main", "/v1/app", "/src1/m.c", 5)},
		2: {at("other", "/v1/app", "/src1/o.c", 3), at("main", "/v1/app", "/src1/m.c", 6)},
	}, map[int]int{0: 40, 1: 20, 2: 40})
	cur := build(map[int][]profile.Frame{
		0: {at("worker", "/v2/app2", "/src2/w.c", 10), at("main", "/v2/app2", "/src2/m.c", 5)},
		1: {at("worker", "/v2/app2", "/src2/w.c", 12), at("main", "/v2/app2", "/src2/m.c", 5)},
		2: {at("other", "/v2/app2", "/src2/o.c", 3), at("main", "/v2/app2", "/src2/m.c", 6)},
	}, map[int]int{0: 80, 1: 20, 2: 20})
	d := CompareLines(base, cur, regexp.MustCompile(`^(worker|main)$`))
	if d.Base.Samples != 100 || d.New.Samples != 120 || len(d.Listings) != 2 {
		t.Fatalf("result %+v", d)
	}
	w := d.Listings[0]
	if w.Function != "worker" || w.Object != "app2" || w.Path != "/v2/app2" || w.Base.Total != 60 || w.New.Total != 100 {
		t.Fatalf("first listing %+v, want worker, most changed", w)
	}
	if len(w.Lines) != 2 || w.Lines[0].Line != 10 || w.Lines[0].File != "/src2/w.c" {
		t.Fatalf("worker lines %+v", w.Lines)
	}
	l10 := w.Lines[0]
	if l10.Base.Total != 40 || l10.New.Total != 80 || math.Abs(l10.DeltaTotal-(80.0/120-0.4)) > 1e-9 || !l10.Significant {
		t.Errorf("line 10: %+v", l10)
	}
	// Line 12: 20 of 100 then 20 of 120: a small change, within noise.
	if l12 := w.Lines[1]; l12.Significant || l12.Base.Total != 20 || l12.New.Total != 20 {
		t.Errorf("line 12: %+v", l12)
	}
	m := d.Listings[1]
	if m.Function != "main" || len(m.Lines) != 2 || m.Lines[0].Line != 5 || m.Lines[0].Base.Total != 60 || m.Lines[0].New.Total != 100 || m.Lines[0].New.Self != 0 {
		t.Errorf("main %+v", m)
	}
	if got := CompareLines(base, cur, regexp.MustCompile("nothing")); len(got.Listings) != 0 {
		t.Errorf("no match: %+v", got.Listings)
	}
}
