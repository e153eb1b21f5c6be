package render

import (
	"encoding/json"
	"io"
	"math"

	"github.com/culprit-dev/culprit/internal/profile"
)

// JSONExtra is what a JSON report carries beside its rows. The schemas are in
// docs/report-json.md.
type JSONExtra struct {
	Sources  []profile.Source // the recordings that went into the profile: "sources"
	Warnings []string         // "warnings"
	// Lost and Throttled are the "lost" and "throttled" of CallersJSON;
	// FlatJSON takes them from its Flat.
	Lost, Throttled uint64
	// Grouping, when set, is written as "grouping" by CallersJSON; FlatJSON
	// takes it from its Flat.
	Grouping string
}

type jsonSource struct {
	Path     string `json:"path"`
	Complete bool   `json:"complete"`
	Salvage  string `json:"salvage,omitempty"`
	Samples  int    `json:"samples"`
}

func jsonSources(src []profile.Source) []jsonSource {
	out := make([]jsonSource, 0, len(src))
	for _, s := range src {
		out = append(out, jsonSource(s))
	}
	return out
}

func jsonWarnings(w []string) []string {
	if w == nil {
		return []string{}
	}
	return w
}

// countsJSON are a row's samples and their fractions of all samples, as
// the listing, peek and asm documents give them.
type countsJSON struct {
	Self         float64 `json:"self"`
	Total        float64 `json:"total"`
	SelfSamples  int     `json:"self_samples"`
	TotalSamples int     `json:"total_samples"`
}

func counts(self, total, samples int) countsJSON {
	return countsJSON{Self: fraction(self, samples), Total: fraction(total, samples), SelfSamples: self, TotalSamples: total}
}

// fraction is n/total, 0 when total is 0.
func fraction(n, total int) float64 {
	if total == 0 {
		return 0
	}
	return float64(n) / float64(total)
}

type flatEntry struct {
	Name         string  `json:"name"`
	Object       string  `json:"object"`
	Self         float64 `json:"self"`
	Total        float64 `json:"total"`
	SelfSamples  int     `json:"self_samples"`
	TotalSamples int     `json:"total_samples"`
	SelfErr      float64 `json:"self_err"`
	TotalErr     float64 `json:"total_err"`
}

type flatJSON struct {
	Samples   int          `json:"samples"`
	Lost      uint64       `json:"lost"`
	Throttled uint64       `json:"throttled"`
	Grouping  string       `json:"grouping"`
	Entries   []flatEntry  `json:"entries"`
	Sources   []jsonSource `json:"sources"`
	Warnings  []string     `json:"warnings"`
}

// isFinite reports whether f is neither infinite nor NaN, which JSON
// cannot hold.
func isFinite(f float64) bool { return !math.IsInf(f, 0) && !math.IsNaN(f) }

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// FlatJSON writes a flat profile as JSON (docs/report-json.md): all rows,
// fractions of all samples, two-sigma errors as fractions.
func FlatJSON(w io.Writer, f profile.Flat, extra JSONExtra) error {
	out := flatJSON{
		Samples:   f.Samples,
		Lost:      f.Lost,
		Throttled: f.Throttled,
		Grouping:  f.Grouping.String(),
		Entries:   make([]flatEntry, 0, len(f.Rows)),
		Sources:   jsonSources(extra.Sources),
		Warnings:  jsonWarnings(extra.Warnings),
	}
	for _, r := range f.Rows {
		out.Entries = append(out.Entries, flatEntry{
			Name: r.Name, Object: r.Object,
			Self: r.SelfFrac, Total: r.TotalFrac,
			SelfSamples: r.Self, TotalSamples: r.Total,
			SelfErr: r.SelfErr, TotalErr: r.TotalErr,
		})
	}
	return writeJSON(w, out)
}

type callerEntry struct {
	Path    []string `json:"path"`
	Samples int      `json:"samples"`
	Share   float64  `json:"share"`
	Err     float64  `json:"err"`
}

type callersJSON struct {
	Samples   int           `json:"samples"`
	Lost      uint64        `json:"lost"`
	Throttled uint64        `json:"throttled"`
	Grouping  string        `json:"grouping,omitempty"`
	Callers   []callerEntry `json:"callers"`
	Sources   []jsonSource  `json:"sources"`
	Warnings  []string      `json:"warnings"`
}

// CallersJSON writes call paths as JSON (docs/report-json.md); total is the
// number of samples the shares are of.
func CallersJSON(w io.Writer, rows []profile.CallerRow, total int, extra JSONExtra) error {
	out := callersJSON{
		Samples:   total,
		Lost:      extra.Lost,
		Throttled: extra.Throttled,
		Grouping:  extra.Grouping,
		Callers:   make([]callerEntry, 0, len(rows)),
		Sources:   jsonSources(extra.Sources),
		Warnings:  jsonWarnings(extra.Warnings),
	}
	for _, r := range rows {
		f, e := share(r, total)
		path := r.Path
		if path == nil {
			path = []string{}
		}
		out.Callers = append(out.Callers, callerEntry{Path: path, Samples: r.Samples, Share: f, Err: e})
	}
	return writeJSON(w, out)
}
