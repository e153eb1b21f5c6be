package flatdiff

import (
	"cmp"
	"math"
	"path"
	"regexp"
	"slices"

	"github.com/culprit-dev/culprit/internal/profile"
)

// Listing compares where one function's samples fell, line by line, in the
// two runs (diff --list, as pprof -list with -diff_base).
type Listing struct {
	Function  string
	Object    string // basename in the new run (in the base run if only there)
	Path      string // object path in the new run (base run if only there)
	Base, New Side   // the function's own figures
	Lines     []LineRow
}

// LineRow is one source line of a Listing. Lines are matched by file base
// name and line number, so a program rebuilt elsewhere from the same source
// matches.
type LineRow struct {
	File       string // the path in the new run (base run if only there)
	Line       int
	Base, New  Side
	DeltaTotal float64 // New minus Base total share
	ErrTotal   float64 // two standard deviations of DeltaTotal
	// Significant says whether DeltaTotal exceeds ErrTotal.
	Significant bool
}

// LinesResult is the line-by-line comparison of the functions listed.
type LinesResult struct {
	Base, New Run
	Listings  []Listing
}

// CompareLines returns, for each function whose name matches re in either
// run, its lines' samples in both runs; functions are matched by name (a
// program rebuilt under another name matches), ranked by the size of the
// change of their total share, largest first.
func CompareLines(base, new *profile.Profile, re *regexp.Regexp) LinesResult {
	rb, rn := run(base), run(new)
	type lineKey struct {
		file string
		line int
	}
	out := map[string]*Listing{}
	lines := map[string]map[lineKey]*LineRow{}
	add := func(ls []profile.Listing, r Run, isNew bool) {
		for _, l := range ls {
			c := out[l.Function]
			if c == nil {
				c = &Listing{Function: l.Function}
				out[l.Function] = c
				lines[l.Function] = map[lineKey]*LineRow{}
			}
			if isNew || c.Object == "" {
				c.Object, c.Path = l.Object, l.Path
			}
			sd := &c.Base
			if isNew {
				sd = &c.New
			}
			*sd = side(sd.Self+l.Self, sd.Total+l.Total, r)
			for _, lc := range l.Lines {
				k := lineKey{path.Base(lc.File), lc.Line}
				row := lines[l.Function][k]
				if row == nil {
					row = &LineRow{File: lc.File, Line: lc.Line}
					lines[l.Function][k] = row
				}
				if isNew {
					row.File = lc.File
				}
				sd := &row.Base
				if isNew {
					sd = &row.New
				}
				*sd = side(sd.Self+lc.Self, sd.Total+lc.Total, r)
			}
		}
	}
	add(base.Listings(re), rb, false)
	add(new.Listings(re), rn, true)
	var res []Listing
	for name, c := range out {
		for _, row := range lines[name] {
			row.DeltaTotal = row.New.TotalFrac - row.Base.TotalFrac
			row.ErrTotal = diffErr(row.Base.TotalFrac, rb.Samples, row.New.TotalFrac, rn.Samples)
			row.Significant = rb.Samples > 0 && rn.Samples > 0 && math.Abs(row.DeltaTotal) > row.ErrTotal
			c.Lines = append(c.Lines, *row)
		}
		slices.SortFunc(c.Lines, func(a, b LineRow) int {
			return cmp.Or(cmp.Compare(path.Base(a.File), path.Base(b.File)), cmp.Compare(a.Line, b.Line))
		})
		res = append(res, *c)
	}
	slices.SortFunc(res, func(a, b Listing) int {
		da, db := math.Abs(a.New.TotalFrac-a.Base.TotalFrac), math.Abs(b.New.TotalFrac-b.Base.TotalFrac)
		return cmp.Or(cmp.Compare(db, da), cmp.Compare(b.New.Total, a.New.Total), cmp.Compare(a.Function, b.Function))
	})
	return LinesResult{Base: rb, New: rn, Listings: res}
}
