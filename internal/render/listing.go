package render

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/culprit-dev/culprit/internal/profile"
)

// Source gives the text of a source file named by the debug information of
// object (a path), or nil when it could not be read. The caller reads
// files; render does not.
type Source func(file, object string) *SourceFile

// SourceFile is a source file's text.
type SourceFile struct {
	Lines   []string // the first is line 1
	FoundAt string   // where it was read
	// Note, when not empty, warns that the text may not be what was
	// compiled (e.g. the file changed after the object was built).
	Note string
}

// ListContext is how many unsampled lines a listing shows around sampled
// ones; longer runs of unsampled lines are folded into "...".
const ListContext = 3

// declSearch is how far above a function's first sampled line a listing
// looks for the line that declares it, so that the listing starts there.
const declSearch = 60

// listFile is the part of a listing in one source file.
type listFile struct {
	file, foundAt string
	note          string
	src           []string // nil when not found
	counts        map[int]profile.LineCount
	rows          []int // line numbers to print, 0 for a fold
}

func splitFiles(l profile.Listing, read Source) []*listFile {
	var out []*listFile
	for _, lc := range l.Lines {
		if len(out) == 0 || out[len(out)-1].file != lc.File {
			f := &listFile{file: lc.File, counts: map[int]profile.LineCount{}}
			if read != nil {
				if sf := read(lc.File, l.Path); sf != nil {
					f.src, f.foundAt, f.note = sf.Lines, sf.FoundAt, sf.Note
				}
			}
			out = append(out, f)
		}
		out[len(out)-1].counts[lc.Line] = lc
	}
	for _, f := range out {
		f.rows = listRows(f, l.Function)
	}
	return out
}

// listRows chooses the lines to print: from the function's declaration (or a
// few lines above its first sampled line) to a few lines past its last, with
// long unsampled stretches folded (0).
func listRows(f *listFile, function string) []int {
	sampled := slices.Sorted(maps.Keys(f.counts))
	if f.src == nil {
		return sampled // no text to give context to
	}
	lo, hi := sampled[0], sampled[len(sampled)-1]
	first := max(1, lo-ListContext)
	if d := declLine(f.src, function, lo); d > 0 {
		first = d
	}
	// Context after the last sampled line ends at the function's end: a
	// closing brace in the first column, or a blank line.
	last := ""
	if hi <= len(f.src) {
		last = strings.TrimRight(f.src[hi-1], " \t\r")
	}
	oneLine := last != "" && last[0] != ' ' && last[0] != '\t' && strings.HasSuffix(last, "}")
	for end := hi + ListContext; !oneLine && hi < min(end, len(f.src)); {
		next := f.src[hi] // line hi+1
		if strings.TrimSpace(next) == "" {
			break
		}
		hi++
		if strings.HasPrefix(next, "}") {
			break
		}
	}
	near := func(n int) bool {
		for d := -ListContext; d <= ListContext; d++ {
			if _, ok := f.counts[n+d]; ok {
				return true
			}
		}
		return n < lo // the declaration down to the first sampled line
	}
	var rows []int
	for n := first; n <= hi; n++ {
		if near(n) {
			rows = append(rows, n)
		} else if len(rows) > 0 && rows[len(rows)-1] != 0 {
			rows = append(rows, 0)
		}
	}
	return rows
}

// declLine finds the line declaring function at or above line lo: the
// nearest one within declSearch lines that names it followed by "(". 0 when
// none does.
func declLine(src []string, function string, lo int) int {
	name := function
	if i := strings.LastIndex(name, "::"); i >= 0 {
		name = name[i+2:]
	}
	if i := strings.LastIndexByte(name, '.'); i >= 0 { // Go: pkg.(*T).Method
		name = name[i+1:]
	}
	if name == "" {
		return 0
	}
	for n := min(lo, len(src)); n >= 1 && n > lo-declSearch; n-- {
		line := src[n-1]
		if i := strings.Index(line, name); i >= 0 && strings.HasPrefix(strings.TrimLeft(line[i+len(name):], " "), "(") {
			return n
		}
	}
	return 0
}

// cellShare is n of samples as a percentage, "." for none: the cells of the
// listings and of their code.
func cellShare(n, samples int) string {
	if n == 0 {
		return "."
	}
	return pct(fraction(n, samples))
}

// ListingText writes, for each listing, its header and its source lines with
// the self and total share of all samples at each line, as pprof -list does:
//
//	ROUTINE worker in hier: self 98.9% (2012), total 99.0% (2014) of 2033 samples
//	/src/hier.c
//	  self%  total%  line
//	                    8  void worker(long n) {
//	  42.4%   42.4%     9      for (long i = 0; i < n; i++)
//
// Lines of a file that could not be read are printed with their counts only,
// after a note saying so; frames without line information by address. With
// asm, each listing shows its machine code instead, the source line above
// each run of instructions compiled from it (perf annotate). Only the first
// top listings are written (0 = all).
func ListingText(w io.Writer, ls []profile.Listing, samples int, read Source, asm Disassembler, top int) error {
	bw := bufio.NewWriter(w)
	if samples == 0 || len(ls) == 0 {
		fmt.Fprintln(bw, "no samples in the functions listed")
		return bw.Flush()
	}
	shown := ls
	if top > 0 && len(shown) > top {
		shown = shown[:top]
	}
	cell := func(n int) string { return cellShare(n, samples) }
	for i, l := range shown {
		if i > 0 {
			fmt.Fprintln(bw)
		}
		fmt.Fprintf(bw, "ROUTINE %s in %s: self %s (%d), total %s (%d) of %d samples\n",
			l.Function, l.Object, pct(float64(l.Self)/float64(samples)), l.Self,
			pct(float64(l.Total)/float64(samples)), l.Total, samples)
		if asm != nil {
			writeAsm(bw, l, asm(l), samples, read)
			continue
		}
		for _, f := range splitFiles(l, read) {
			fmt.Fprintln(bw, f.file)
			if f.src == nil {
				fmt.Fprintf(bw, "(source not found: the counts are by line; --source-path DIR looks for it under DIR)\n")
			} else if f.foundAt != f.file {
				fmt.Fprintf(bw, "(read from %s)\n", f.foundAt)
			}
			if f.note != "" {
				fmt.Fprintf(bw, "(%s)\n", f.note)
			}
			fmt.Fprintf(bw, "%7s %7s %6s\n", "self%", "total%", "line")
			for _, n := range f.rows {
				if n == 0 {
					fmt.Fprintf(bw, "%7s %7s %6s\n", "", "", "...")
					continue
				}
				text := ""
				if n <= len(f.src) {
					text = strings.TrimRight(f.src[n-1], " \t\r")
				}
				lc, ok := f.counts[n]
				if !ok {
					fmt.Fprintf(bw, "%7s %7s %6d  %s\n", "", "", n, text)
					continue
				}
				fmt.Fprintf(bw, "%7s %7s %6d  %s\n", cell(lc.Self), cell(lc.Total), n, text)
			}
		}
		if len(l.Addresses) > 0 {
			kernel := strings.HasPrefix(l.Object, "[")
			switch {
			case len(l.Lines) > 0:
				fmt.Fprintln(bw, "samples without line information, by address:")
			case kernel:
				fmt.Fprintf(bw, "no line information for %s (kernel code: culprit does not read the kernel's debug information), samples by address:\n", l.Function)
			default:
				fmt.Fprintf(bw, "no line information for %s (%s has no DWARF line table: build with -g), samples by address:\n", l.Function, l.Object)
			}
			fmt.Fprintf(bw, "%7s %7s  %s\n", "self%", "total%", "address")
			for _, a := range l.Addresses {
				if kernel { // an address, not an offset in a file
					fmt.Fprintf(bw, "%7s %7s  0x%x\n", cell(a.Self), cell(a.Total), a.Offset)
					continue
				}
				fmt.Fprintf(bw, "%7s %7s  %s+0x%x\n", cell(a.Self), cell(a.Total), l.Object, a.Offset)
			}
		}
	}
	if n := len(ls) - len(shown); n > 0 {
		fmt.Fprintf(bw, "\n(%d more functions match, not shown: raise --top or narrow --list)\n", n)
	}
	return bw.Flush()
}

type listLineJSON struct {
	Line   int     `json:"line"`
	Source *string `json:"source"`
	countsJSON
}

type listFileJSON struct {
	File    string         `json:"file"`
	FoundAt string         `json:"found_at,omitempty"`
	Note    string         `json:"note,omitempty"`
	Lines   []listLineJSON `json:"lines"`
}

type listAddrJSON struct {
	Offset uint64 `json:"offset"`
	countsJSON
}

type listingJSON struct {
	Function string `json:"function"`
	Object   string `json:"object"`
	countsJSON
	Files     []listFileJSON `json:"files"`
	Addresses []listAddrJSON `json:"addresses"`
	Code      []asmBlockJSON `json:"code,omitempty"`
}

type listingsJSON struct {
	Samples   int           `json:"samples"`
	Lost      uint64        `json:"lost"`
	Throttled uint64        `json:"throttled"`
	Listings  []listingJSON `json:"listings"`
	Sources   []jsonSource  `json:"sources"`
	Warnings  []string      `json:"warnings"`
}

// ListingJSON writes listings as JSON (docs/report-json.md): every sampled
// line of each function, with its source text when the file was found (null
// otherwise), and the same context lines the text shows with zero counts.
//
// With asm, each listing also has its machine code ("code").
func ListingJSON(w io.Writer, ls []profile.Listing, samples int, read Source, asm Disassembler, extra JSONExtra) error {
	out := listingsJSON{Samples: samples, Lost: extra.Lost, Throttled: extra.Throttled,
		Listings: []listingJSON{}, Sources: jsonSources(extra.Sources), Warnings: jsonWarnings(extra.Warnings)}
	for _, l := range ls {
		j := listingJSON{Function: l.Function, Object: l.Object, countsJSON: counts(l.Self, l.Total, samples),
			Files: []listFileJSON{}, Addresses: []listAddrJSON{}}
		for _, f := range splitFiles(l, read) {
			jf := listFileJSON{File: f.file, FoundAt: f.foundAt, Note: f.note, Lines: []listLineJSON{}}
			for _, n := range f.rows {
				if n == 0 {
					continue
				}
				lc := f.counts[n]
				var text *string
				if n <= len(f.src) {
					s := strings.TrimRight(f.src[n-1], " \t\r")
					text = &s
				}
				jf.Lines = append(jf.Lines, listLineJSON{Line: n, Source: text, countsJSON: counts(lc.Self, lc.Total, samples)})
			}
			j.Files = append(j.Files, jf)
		}
		for _, a := range l.Addresses {
			j.Addresses = append(j.Addresses, listAddrJSON{Offset: a.Offset, countsJSON: counts(a.Self, a.Total, samples)})
		}
		if asm != nil {
			j.Code = asmJSON(asm(l), samples)
		}
		out.Listings = append(out.Listings, j)
	}
	return writeJSON(w, out)
}
