package view

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
	"github.com/culprit-dev/culprit/internal/testutil"
)

// TestLaneRangeBrowser checks, in headless Chromium, that a range
// selected in the time view's maps is what its lanes of values draw: the
// values of that range asked for (summarised for the lane's width) and
// drawn across the lane, and the whole recording again from the link the
// lanes then show.
func TestLaneRangeBrowser(t *testing.T) {
	path := testutil.NeedTool(t, "chromium")
	const start = 1_000_000_000
	p := &profile.Profile{
		Frames:       []profile.Frame{{Function: "main"}},
		Stacks:       [][]int32{{0}},
		Threads:      map[uint32]profile.Thread{1: {PID: 1, TID: 1, Comm: "main"}},
		StartTime:    start,
		ValueSources: []recording.ValueSource{{Name: "n", Function: "work"}},
	}
	// 4 s of samples every 10 ms, each with a value of n: its time in ms.
	for i := range 400 {
		tm := uint64(start + i*10_000_000)
		p.Samples = append(p.Samples, profile.Sample{Time: tm, PID: 1, TID: 1, Period: 10_000_000, Event: recording.EventCPU})
		p.Values = append(p.Values, profile.Value{Time: tm, PID: 1, TID: 1, Source: 0, Type: recording.ValueInt, Bits: uint64(i * 10)})
	}
	s, err := New(Inputs{Profile: p, Names: []string{"a.rec"}}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var asked []string // the queries of time/values
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/time/values") {
			mu.Lock()
			asked = append(asked, r.URL.RawQuery)
			mu.Unlock()
		}
		s.ServeHTTP(w, r)
	}))
	defer hs.Close()
	base := hs.URL + s.Path()
	bctx, eval, wait := headless(t, path)
	if err := chromedp.Do(bctx, chromedp.Navigate(base+"time")); err != nil {
		t.Fatal(err)
	}
	lane := `document.querySelector("#lanes svg.lane.values:not(.pending) polyline")`
	wait(`!!` + lane)
	// The second second selected: its first cell, then its last. The
	// lanes are redrawn in place (the same elements, not rebuilt).
	eval(`(() => {
		window.laneSVG = document.querySelector("#lanes svg.lane.values");
		const svg = document.querySelector("#maps svg.heat");
		const click = k => { const [x, y] = cellCenter(0, k); svg.dispatchEvent(new MouseEvent("click", {clientX: x, clientY: y, bubbles: true})); };
		click(data.rows); click(2 * data.rows - 1);
		return true;
	})()`)
	wait(`document.getElementById("lanes").dataset.range === "1000-2000" && !!` + lane)
	// The lane's points span its width: the range's values, 1000 to
	// 1990, from its left edge to its right.
	got := eval(`(() => {
		const pts = ` + lane + `.getAttribute("points").trim().split(" ").map(p => +p.split(",")[0]);
		return [pts[0], pts[pts.length - 1], pts.length, document.querySelector("#lanes h2").textContent];
	})()`).([]any)
	if x0, x1 := got[0].(float64), got[1].(float64); x0 > 15 || x1 < float64(1100-15) {
		t.Errorf("the range's lane draws from x %v to %v (%v points), want across its width (0 to 1100)", x0, x1, got[2])
	}
	if h := got[3].(string); h != "work: n: 100 values, 1000 to 1990" {
		t.Errorf("the range's lane is titled %q, want its 100 values, 1000 to 1990", h)
	}
	if !eval(`document.querySelector("#lanes svg.lane.values") === window.laneSVG && document.querySelectorAll("#lanes svg.lane").length === 1 && document.querySelectorAll("#lanes svg.lane polyline").length === 1`).(bool) {
		t.Errorf("the range's lane is not the lane drawn before, redrawn in place with one line")
	}
	mu.Lock()
	ranged := false
	for _, q := range asked {
		ranged = ranged || strings.Contains(q, "from=1000ms&to=2000ms")
	}
	mu.Unlock()
	if !ranged {
		t.Errorf("the lanes asked for %q, none of the range", asked)
	}
	// Back to the whole recording.
	eval(`(document.getElementById("lanes-whole").click(), true)`)
	wait(`document.getElementById("lanes").dataset.range === "" && !!` + lane)
	if h := eval(`document.querySelector("#lanes h2").textContent`).(string); h != "work: n: 400 values, 0 to 3990" {
		t.Errorf("the whole recording's lane is titled %q, want its 400 values, 0 to 3990", h)
	}
}

// TestSummarisedLaneBrowser checks, in headless Chromium, the lane of a
// source with more values than the time view holds one by one: titled
// with every value and their least and greatest (a lone spike among
// them), drawn as the line of the buckets' means inside the band of
// their least and greatest, across the lane's width.
func TestSummarisedLaneBrowser(t *testing.T) {
	path := testutil.NeedTool(t, "chromium")
	const start = 1_000_000_000
	p := laneProfile(start, recording.ValueSource{Name: "n", Function: "work"})
	// 100,000 values every 40 µs: i mod 100, and 5000 once.
	for i := range 100_000 {
		v := uint64(i % 100)
		if i == 61_234 {
			v = 5000
		}
		p.Values = append(p.Values, profile.Value{Time: uint64(start + i*40_000), PID: 1, TID: 1, Source: 0, Type: recording.ValueInt, Bits: v})
	}
	eval, wait := openTimeView(t, path, p)
	wait(`!!document.querySelector("#lanes svg.lane.values:not(.pending) polygon.band")`)
	got := eval(`(() => {
		const svg = document.querySelector("#lanes svg.lane.values");
		const xs = svg.querySelector("polyline").getAttribute("points").trim().split(" ").map(p => +p.split(",")[0]);
		const band = svg.querySelector("polygon.band").getBBox(), line = svg.querySelector("polyline").getBBox();
		return [document.querySelector("#lanes h2").textContent, xs[0], xs[xs.length - 1], band.y, band.height, line.y, line.height];
	})()`).([]any)
	if h := got[0].(string); h != "work: n: 100000 values, 0 to 5000" {
		t.Errorf("the summarised lane is titled %q, want its 100000 values, 0 to 5000", h)
	}
	if x0, x1 := got[1].(float64), got[2].(float64); x0 > 15 || x1 < 1100-15 {
		t.Errorf("the summarised lane draws from x %v to %v, want across its width (0 to 1100)", x0, x1)
	}
	// The band reaches the spike (the lane's top) and 0; the means stay
	// far below it (each of about 12 values, one of them 5000).
	bandY, bandH, lineY, lineH := got[3].(float64), got[4].(float64), got[5].(float64), got[6].(float64)
	if bandY > 4 || bandY+bandH < 44 || lineY < bandY+20 || lineY+lineH > bandY+bandH+0.5 {
		t.Errorf("the summarised lane's band spans y %v to %v and its line %v to %v; want the band from the top (the spike) to the bottom, the line of the means well below the top, inside the band", bandY, bandY+bandH, lineY, lineY+lineH)
	}
}

// TestNarrowRangeBrowser checks, in headless Chromium, that a narrow
// range of a summarised source (two cells of the map selected) draws the
// values recorded in it, one point each (no band), titled with their
// exact count, least and greatest: what the buckets would widen and
// average.
func TestNarrowRangeBrowser(t *testing.T) {
	path := testutil.NeedTool(t, "chromium")
	const start = 1_000_000_000
	p := laneProfile(start, recording.ValueSource{Name: "n", Function: "work"})
	// 50,000 values every 80 µs: 3i.
	for i := range 50_000 {
		p.Values = append(p.Values, profile.Value{Time: uint64(start + i*80_000), PID: 1, TID: 1, Source: 0, Type: recording.ValueInt, Bits: uint64(3 * i)})
	}
	eval, wait := openTimeView(t, path, p)
	lane := `document.querySelector("#lanes svg.lane.values:not(.pending) polyline")`
	wait(`!!document.querySelector("#lanes svg.lane.values:not(.pending) polygon.band")`)
	// The first two cells of the second second: 1000 to 1040 ms, values
	// 12,500 to 12,999.
	eval(`(() => {
		const svg = document.querySelector("#maps svg.heat");
		const click = k => { const [x, y] = cellCenter(0, k); svg.dispatchEvent(new MouseEvent("click", {clientX: x, clientY: y, bubbles: true})); };
		click(data.rows); click(data.rows + 1);
		return true;
	})()`)
	wait(`document.getElementById("lanes").dataset.range === "1000-1040" && !!` + lane)
	got := eval(`(() => {
		const svg = document.querySelector("#lanes svg.lane.values");
		const pts = svg.querySelector("polyline").getAttribute("points").trim().split(" ").map(p => p.split(",").map(Number));
		let rising = true;
		for (let i = 1; i < pts.length; i++) rising = rising && pts[i][0] > pts[i-1][0] && pts[i][1] <= pts[i-1][1];
		return [document.querySelector("#lanes h2").textContent, pts.length, !!svg.querySelector("polygon.band"), rising, pts[0][0], pts[pts.length-1][0]];
	})()`).([]any)
	if h := got[0].(string); h != "work: n: 500 values, 37500 to 38997" {
		t.Errorf("the narrow range's lane is titled %q, want its 500 values, 37500 to 38997", h)
	}
	if n, band, rising := got[1].(float64), got[2].(bool), got[3].(bool); n != 500 || band || !rising {
		t.Errorf("the narrow range's lane draws %v points (a band: %v; left to right, rising: %v), want its 500 values one by one, rising, no band", n, band, rising)
	}
	if x0, x1 := got[4].(float64), got[5].(float64); x0 > 15 || x1 < 1100-15 {
		t.Errorf("the narrow range's lane draws from x %v to %v, want across its width (0 to 1100)", x0, x1)
	}
}

// TestLongRecordingBrowser checks, in headless Chromium, the time view of
// a recording longer than maxColumns seconds: columns of several seconds
// (3 for 3,000 s), each row 1/rows of a column, and a range selected from
// the cells is the time they stand for (the second column's cells: 3 s to
// 6 s), its lane of values drawing that range.
func TestLongRecordingBrowser(t *testing.T) {
	path := testutil.NeedTool(t, "chromium")
	const start = 1_000_000_000
	p := laneProfile(start, recording.ValueSource{Name: "n", Function: "work"})
	p.Samples = nil
	// A sample and a value of n (its second) every second for 3,000 s.
	for i := range 3001 {
		tm := uint64(start + i*1_000_000_000)
		p.Samples = append(p.Samples, profile.Sample{Time: tm, PID: 1, TID: 1, Period: 1_000_000, Event: recording.EventCPU})
		p.Values = append(p.Values, profile.Value{Time: tm, PID: 1, TID: 1, Source: 0, Type: recording.ValueInt, Bits: uint64(i)})
	}
	eval, wait := openTimeView(t, path, p)
	lane := `document.querySelector("#lanes svg.lane.values:not(.pending) polyline")`
	wait(`!!` + lane)
	got := eval(`[data.seconds, data.column_s, document.getElementById("column").textContent, document.querySelector("#maps svg.heat").getAttribute("width")]`).([]any)
	if got[0].(float64) != 1001 || got[1].(float64) != 3 || got[2].(string) != "3 seconds" {
		t.Errorf("3,000 s drawn as %v columns of %v s (%q), maps %v px wide; want 1001 columns of 3 s", got[0], got[1], got[2], got[3])
	}
	eval(`(() => {
		const svg = document.querySelector("#maps svg.heat");
		const click = k => { const [x, y] = cellCenter(0, k); svg.dispatchEvent(new MouseEvent("click", {clientX: x, clientY: y, bubbles: true})); };
		click(data.rows); click(2 * data.rows - 1);
		return true;
	})()`)
	wait(`document.getElementById("lanes").dataset.range === "3000-6000" && !!` + lane)
	if h := eval(`document.querySelector("#lanes h2").textContent`).(string); h != "work: n: 3 values, 3 to 5" {
		t.Errorf("the range's lane is titled %q, want its 3 values, 3 to 5", h)
	}
}

// openTimeView serves p as a view of one recording for the test's
// length and opens its time view in headless Chromium (at path): the
// page's eval and wait.
func openTimeView(t *testing.T, path string, p *profile.Profile) (func(string) any, func(string)) {
	t.Helper()
	s, err := New(Inputs{Profile: p, Names: []string{"a.rec"}}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	bctx, eval, wait := headless(t, path)
	if err := chromedp.Do(bctx, chromedp.Navigate(hs.URL+s.Path()+"time")); err != nil {
		t.Fatal(err)
	}
	return eval, wait
}

// TestWindowedLaneBrowser checks, in headless Chromium, that a thread's
// lane of a recording made in system call windows shades the windows
// behind its spans and says that its calls and its time off the CPU are
// those recorded in them.
func TestWindowedLaneBrowser(t *testing.T) {
	path := testutil.NeedTool(t, "chromium")
	const start, ms = 1_000_000_000, 1_000_000
	frames, stacks := []profile.Frame{{Function: "main"}}, [][]int32{{0}}
	threads := map[uint32]profile.Thread{1: {PID: 1, TID: 1, Comm: "one"}}
	p := &profile.Profile{Frames: frames, Stacks: stacks, Threads: threads, StartTime: start}
	for i := range 1000 {
		p.Samples = append(p.Samples, profile.Sample{Time: start + uint64(i)*ms, PID: 1, TID: 1, Period: ms, Event: recording.EventCPU})
	}
	ev := &profile.Profile{Frames: frames, Stacks: stacks, Threads: threads, StartTime: start,
		SyscallWindows: []recording.SyscallWindow{
			{Start: start + 200*ms, End: start + 220*ms, On: 20 * ms, Period: 200 * ms},
			{Start: start + 400*ms, End: start + 420*ms, On: 20 * ms, Period: 200 * ms},
		},
		Samples: []profile.Sample{
			{Time: start + 205*ms, PID: 1, TID: 1, Period: 10, Event: recording.EventSyscallEnter},
			{Time: start + 206*ms, PID: 1, TID: 1, Period: 10, Event: recording.EventSwitch, Arg: 1},
			{Time: start + 210*ms, PID: 1, TID: 1, Period: 10, Event: recording.EventSyscallExit},
		}}
	s, err := New(Inputs{Profile: p, Events: ev, Names: []string{"a.rec"}}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	defer hs.Close()
	bctx, eval, wait := headless(t, path)
	if err := chromedp.Do(bctx, chromedp.Navigate(hs.URL+s.Path()+"time")); err != nil {
		t.Fatal(err)
	}
	wait(`!!document.querySelector("#lanes svg.lane.thread rect.offcpu")`)
	got := eval(`(() => {
		const svg = document.querySelector("#lanes svg.lane.thread");
		const w = [...svg.querySelectorAll("rect.window")];
		return [w.length, w.length ? svg.firstChild === w[0] : false, svg.closest(".lane-box").querySelector("h2").textContent];
	})()`).([]any)
	if got[0].(float64) != 2 || !got[1].(bool) {
		t.Errorf("the thread's lane draws %v windows (behind its spans: %v), want 2", got[0], got[1])
	}
	if h := got[2].(string); !strings.Contains(h, "1 system calls recorded in the shaded windows, 4ms off the CPU in them") {
		t.Errorf("the thread's lane is titled %q", h)
	}
}
