package render

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/culprit-dev/culprit/internal/profile"
)

// Summary writes the header line "N samples (lost L, throttled T)", or
// "no samples (lost L, throttled T)" when there are none.
func Summary(w io.Writer, samples int, lost, throttled uint64) error {
	var err error
	switch samples {
	case 0:
		_, err = fmt.Fprintf(w, "no samples (lost %d, throttled %d)\n", lost, throttled)
	case 1:
		_, err = fmt.Fprintf(w, "1 sample (lost %d, throttled %d)\n", lost, throttled)
	default:
		_, err = fmt.Fprintf(w, "%d samples (lost %d, throttled %d)\n", samples, lost, throttled)
	}
	return err
}

// LostNote writes a line saying how many samples the recording lacks
// (lost or throttled while recording), nothing when none: the header of
// the views whose first line is not Summary's.
func LostNote(w io.Writer, lost, throttled uint64) error {
	if lost == 0 && throttled == 0 {
		return nil
	}
	var err error
	switch {
	case lost > 0 && throttled > 0:
		_, err = fmt.Fprintf(w, "%d samples lost and the sampling throttled %d times while recording: these figures leave them out\n", lost, throttled)
	case lost > 0:
		_, err = fmt.Fprintf(w, "%d samples lost while recording: these figures leave them out\n", lost)
	default:
		_, err = fmt.Fprintf(w, "the sampling was throttled %d times while recording: these figures leave out what it missed\n", throttled)
	}
	return err
}

func pct(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }
func pm(f float64) string  { return fmt.Sprintf("±%.1f", 100*f) }

// FlatText writes a flat profile: the Summary line, then a table with the
// columns self%, ±err, total%, ±err, samples (self samples) and name, the
// errors in percentage points (two sigma). Only the first top rows are
// written (0 = all), followed by a line saying how many were left out. A name
// that appears on more than one written row (same function in different
// objects) is followed by its object in brackets.
func FlatText(w io.Writer, f profile.Flat, top int) error {
	bw := bufio.NewWriter(w)
	if err := Summary(bw, f.Samples, f.Lost, f.Throttled); err != nil {
		return err
	}
	if f.Samples == 0 || len(f.Rows) == 0 {
		return bw.Flush()
	}
	rows := f.Rows
	if top > 0 && len(rows) > top {
		rows = rows[:top]
	}
	count := map[string]int{}
	for _, r := range rows {
		count[r.Name]++
	}
	fmt.Fprintf(bw, "%6s %6s %7s %6s %8s  %s\n", "self%", "±err", "total%", "±err", "samples", "name")
	for _, r := range rows {
		name := r.Name
		if count[name] > 1 && r.Object != "" {
			name += " [" + r.Object + "]"
		}
		fmt.Fprintf(bw, "%6s %6s %7s %6s %8d  %s\n", pct(r.SelfFrac), pm(r.SelfErr), pct(r.TotalFrac), pm(r.TotalErr), r.Self, name)
	}
	if n := len(f.Rows) - len(rows); n > 0 {
		fmt.Fprintf(bw, "(%d more not shown)\n", n)
	}
	return bw.Flush()
}

// share returns the fraction and error of a caller row, recomputed from total
// when total is positive.
func share(r profile.CallerRow, total int) (float64, float64) {
	if total > 0 {
		return float64(r.Samples) / float64(total), profile.Err(r.Samples, total)
	}
	return r.Frac, r.Err
}

// CallersText writes one line per call path, e.g.
//
//	67.6% ±1.2  worker <- dispatch_2 <- main
//
// the share of total samples, its two-sigma error in percentage points, and
// the path leaf first. Only the first top rows are written (0 = all). With
// total 0 it writes "no samples".
func CallersText(w io.Writer, rows []profile.CallerRow, total int, top int) error {
	bw := bufio.NewWriter(w)
	if total <= 0 || len(rows) == 0 {
		fmt.Fprintln(bw, "no samples")
		return bw.Flush()
	}
	shown := rows
	if top > 0 && len(shown) > top {
		shown = shown[:top]
	}
	for _, r := range shown {
		f, e := share(r, total)
		fmt.Fprintf(bw, "%6s %-5s %s\n", pct(f), pm(e), strings.Join(r.Path, " <- "))
	}
	if n := len(rows) - len(shown); n > 0 {
		fmt.Fprintf(bw, "(%d more not shown)\n", n)
	}
	return bw.Flush()
}
