package render

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/culprit-dev/culprit/internal/analysis/flatdiff"
	"github.com/culprit-dev/culprit/internal/profile"
)

// diffListFile turns a compared listing's lines of one file into the rows a
// listing shows (the same context and folds as ListingText), reading the
// file as the new run's object names it.
func diffListFiles(l flatdiff.Listing, read Source) ([]*listFile, map[*listFile]map[int]flatdiff.LineRow) {
	var files []*listFile
	rows := map[*listFile]map[int]flatdiff.LineRow{}
	for _, r := range l.Lines {
		if len(files) == 0 || files[len(files)-1].file != r.File {
			f := &listFile{file: r.File, counts: map[int]profile.LineCount{}}
			if read != nil {
				if sf := read(r.File, l.Path); sf != nil {
					f.src, f.foundAt, f.note = sf.Lines, sf.FoundAt, sf.Note
				}
			}
			files = append(files, f)
			rows[f] = map[int]flatdiff.LineRow{}
		}
		f := files[len(files)-1]
		f.counts[r.Line] = profile.LineCount{File: r.File, Line: r.Line, Total: max(r.Base.Total, r.New.Total)}
		rows[f][r.Line] = r
	}
	for _, f := range files {
		f.rows = listRows(f, l.Function)
	}
	return files, rows
}

// DiffListingText writes, for each compared function, its source lines with
// the total share of each run's samples at each line and the change in
// percentage points, marked * beyond two sigma of sampling noise (as
// pprof -list with -diff_base). Only the first top functions are written
// (0 = all).
func DiffListingText(w io.Writer, d flatdiff.LinesResult, basePath, newPath string, read Source, top int) error {
	bw := bufio.NewWriter(w)
	writeRuns(bw, basePath, newPath, d.Base, d.New)
	shown := d.Listings
	if top > 0 && len(shown) > top {
		shown = shown[:top]
	}
	for _, l := range shown {
		fmt.Fprintf(bw, "\nROUTINE %s in %s: total %s → %s (%+.1f), self %s → %s (%+.1f)\n", l.Function, l.Object,
			pct(l.Base.TotalFrac), pct(l.New.TotalFrac), 100*(l.New.TotalFrac-l.Base.TotalFrac),
			pct(l.Base.SelfFrac), pct(l.New.SelfFrac), 100*(l.New.SelfFrac-l.Base.SelfFrac))
		files, rows := diffListFiles(l, read)
		for _, f := range files {
			fmt.Fprintln(bw, f.file)
			if f.src == nil {
				fmt.Fprintf(bw, "(source not found: the counts are by line; --source-path DIR looks for it under DIR)\n")
			} else if f.note != "" {
				fmt.Fprintf(bw, "(%s)\n", f.note)
			}
			fmt.Fprintf(bw, "%7s %7s %8s %6s\n", "base%", "new%", "change", "line")
			for _, n := range f.rows {
				if n == 0 {
					fmt.Fprintf(bw, "%7s %7s %8s %6s\n", "", "", "", "...")
					continue
				}
				text := ""
				if n <= len(f.src) {
					text = strings.TrimRight(f.src[n-1], " \t\r")
				}
				r, ok := rows[f][n]
				if !ok {
					fmt.Fprintf(bw, "%7s %7s %8s %6d  %s\n", "", "", "", n, text)
					continue
				}
				mark := " "
				if r.Significant {
					mark = "*"
				}
				fmt.Fprintf(bw, "%7s %7s %+7.1f%s %6d  %s\n", pct(r.Base.TotalFrac), pct(r.New.TotalFrac), 100*r.DeltaTotal, mark, n, text)
			}
		}
	}
	if n := len(d.Listings) - len(shown); n > 0 {
		fmt.Fprintf(bw, "\n(%d more functions match, not shown: raise --top or narrow --list)\n", n)
	}
	fmt.Fprintf(bw, "\nshares are of each run's samples, callees included; * the change exceeds two sigma of sampling noise\n")
	return bw.Flush()
}

type diffLineJSON struct {
	Line        int      `json:"line"`
	Source      *string  `json:"source"`
	Base        diffSide `json:"base"`
	New         diffSide `json:"new"`
	TotalChange float64  `json:"total_change"`
	TotalErr    float64  `json:"total_err"`
	Significant bool     `json:"significant"`
}

type diffFileJSON struct {
	File    string         `json:"file"`
	FoundAt string         `json:"found_at,omitempty"`
	Lines   []diffLineJSON `json:"lines"`
}

type diffListingJSON struct {
	Function string         `json:"function"`
	Object   string         `json:"object"`
	Base     diffSide       `json:"base"`
	New      diffSide       `json:"new"`
	Files    []diffFileJSON `json:"files"`
}

type diffListingsJSON struct {
	Base     diffRun           `json:"base"`
	New      diffRun           `json:"new"`
	Listings []diffListingJSON `json:"listings"`
	Warnings []string          `json:"warnings"`
}

// DiffListingJSON writes the line-by-line comparison as documented in
// docs/report-json.md: the sampled lines in either run, and the context
// lines the text shows, with zero counts.
func DiffListingJSON(w io.Writer, d flatdiff.LinesResult, basePath, newPath string, read Source, warnings []string) error {
	out := diffListingsJSON{Base: diffRun{basePath, d.Base.Samples, d.Base.CPU}, New: diffRun{newPath, d.New.Samples, d.New.CPU},
		Listings: []diffListingJSON{}, Warnings: jsonWarnings(warnings)}
	for _, l := range d.Listings {
		j := diffListingJSON{Function: l.Function, Object: l.Object, Base: diffSideOf(l.Base), New: diffSideOf(l.New), Files: []diffFileJSON{}}
		files, rows := diffListFiles(l, read)
		for _, f := range files {
			jf := diffFileJSON{File: f.file, FoundAt: f.foundAt, Lines: []diffLineJSON{}}
			for _, n := range f.rows {
				if n == 0 {
					continue
				}
				var text *string
				if n <= len(f.src) {
					s := strings.TrimRight(f.src[n-1], " \t\r")
					text = &s
				}
				r := rows[f][n]
				jf.Lines = append(jf.Lines, diffLineJSON{Line: n, Source: text, Base: diffSideOf(r.Base), New: diffSideOf(r.New),
					TotalChange: r.DeltaTotal, TotalErr: r.ErrTotal, Significant: r.Significant})
			}
			j.Files = append(j.Files, jf)
		}
		out.Listings = append(out.Listings, j)
	}
	return writeJSON(w, out)
}
