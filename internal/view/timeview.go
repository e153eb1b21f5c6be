package view

import (
	"cmp"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/culprit-dev/culprit/internal/analysis/exprs"
	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
)

// rowsPerSecond is the time view's rows: each cell is 1/rowsPerSecond of
// a column.
const rowsPerSecond = 50

// maxColumns is how many columns the time view's maps have at most: a
// column is one second of a recording up to maxColumns seconds long, and
// as many whole seconds as keep a longer one within maxColumns columns
// (a cell then 1/rowsPerSecond of that). A column a second would make a
// recording of two hours 8,293 columns: maps 33,000 pixels wide, a page of
// 2.5 MB, 4.3 s to draw.
const maxColumns = 1200

// maxThreads is how many threads the time view draws, the busiest.
const maxThreads = 16

// timePath is the time view's path.
const timePath = "time"

var timePage = Page{
	Path:  timePath,
	Title: "Time view",
	Focus: true,
	ForFunction: func(_ Range, q string) link {
		return link{timePath + q, "Time view of its samples"}
	},
	About: "samples over time per thread as heat maps (offset within the second × second), system calls, context switches and sampled values below them; select a range to open pprof's views and the other pages on it",
	Needs: func(s *Server) string {
		if !s.hasSamples() {
			return "needs CPU samples: culprit record"
		}
		return ""
	},
	Handler: func(s *Server) http.Handler {
		// The data is the same for every request: it is built once, in
		// the background from the moment the server starts, and sent as
		// encoded.
		// With ?f=REGEXP (a function chosen on another page), the maps
		// count only the samples with a frame matching it.
		// Only the maps depend on f: the lanes under them (events,
		// threads, values) are counted once, and a function's maps
		// count the samples of the stacks that hold it (decided once
		// per stack) without copying the samples.
		var data memos[string, []byte]
		var lanes memo[laneSet]
		build := func(f string) ([]byte, error) {
			var keep []bool
			if f != "" {
				re, err := regexp.Compile(f)
				if err != nil {
					return nil, fmt.Errorf("f=%q: %v", f, err)
				}
				keep = s.p.StacksMatching(re)
			}
			d := s.heatMaps(keep)
			ls, _ := lanes.get(func() (laneSet, error) { return s.laneSet(d.Seconds, d.cellNS(), d.SpanMS), nil })
			d.Lanes, d.Windows = ls.ordered(d.Threads[1:]), ls.windows
			return json.Marshal(d)
		}
		s.warm = append(s.warm, func() { _, _ = data.get("", build) })
		mux := http.NewServeMux()
		mux.HandleFunc("GET /time", func(w http.ResponseWriter, r *http.Request) {
			var pages []link // the pages a range re-targets
			for _, pg := range s.shown {
				if pg.Ranged {
					pages = append(pages, link{pg.Path, pg.Title})
				}
			}
			// The page carries its data (JSON; json.Marshal escapes <, >
			// and &, so it cannot end the script element): its maps are
			// drawn as it is parsed, without a request after it. When
			// the data cannot be built (a wrong f), the page asks for
			// it, and shows the answer.
			var inline template.JS
			if b, err := data.get(r.URL.Query().Get("f"), build); err == nil {
				inline = template.JS(b)
			}
			s.html(w, "time.html", map[string]any{"Pprof": pprofViews, "Pages": pages, "Data": inline})
		})
		// Lanes of values, asked for by the page once its maps are
		// drawn: ?src=K (a lane's source; repeated for several, at most
		// maxLanesAsked), of the range from, to; answered as a list.
		mux.HandleFunc("GET /time/values", func(w http.ResponseWriter, r *http.Request) {
			rng, err := requestRange(r)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			srcs := r.URL.Query()["src"]
			if len(srcs) == 0 || len(srcs) > maxLanesAsked {
				http.Error(w, fmt.Sprintf("want 1 to %d src parameters, the lanes' sources", maxLanesAsked), http.StatusBadRequest)
				return
			}
			idx := make([]int, len(srcs))
			for i, q := range srcs {
				src, err := strconv.Atoi(q)
				if err != nil || src < 0 || src >= len(s.p.ValueSources) {
					http.Error(w, fmt.Sprintf("src=%q: want the index of a sampled expression, 0 to %d", q, len(s.p.ValueSources)-1), http.StatusBadRequest)
					return
				}
				idx[i] = src
			}
			// The values are read once for every lane; a request that
			// comes while they are read is answered with how far the
			// reading is (202), and the page asks again: at once when the
			// reading is under way (which pauses while a request is
			// answered when it is a build ahead), else once the reading
			// it starts has run for buildWait.
			wait := buildWait
			if s.valuesMemo.running() {
				wait = 0
			}
			var ok bool
			var running time.Duration
			s.awaiting(r, func() { _, err, ok, running = s.valuesMemo.within(wait, s.readValues) })
			if !ok {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Cache-Control", "no-store")
				w.WriteHeader(http.StatusAccepted)
				b, _ := json.Marshal(valuesProgress{Read: s.valuesRead.Load(), Total: s.valueTotal(), RunningMS: running.Milliseconds()})
				_, _ = w.Write(b)
				return
			} else if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			lanes, err := s.valueLanes(idx, rng)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			b, err := json.Marshal(lanes)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(b)
		})
		mux.HandleFunc("GET /time/data", func(w http.ResponseWriter, r *http.Request) {
			b, err := data.get(r.URL.Query().Get("f"), build)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(b)
		})
		return mux
	},
}

// HeatMap is one thread's samples (or all threads') over time: Cells[c][r]
// counts the samples in column c (ColumnS seconds from c×ColumnS s) at
// offset [r, r+1)/Rows of it.
type HeatMap struct {
	Name    string  `json:"name"`
	TID     uint32  `json:"tid,omitempty"`
	Samples int     `json:"samples"`
	Cells   [][]int `json:"cells"`
	Max     int     `json:"max"`
}

// TimeData is what the time view draws: summaries, not samples.
type TimeData struct {
	Rows    int       `json:"rows"`     // cells per column
	Seconds int       `json:"seconds"`  // columns
	ColumnS int       `json:"column_s"` // seconds a column
	CellMS  float64   `json:"cell_ms"`  // ms a cell: ColumnS×1000/Rows
	Samples int       `json:"samples"`
	Threads []HeatMap `json:"threads"` // all threads first, then the busiest
	Hidden  int       `json:"hidden"`  // threads not drawn
	SpanMS  float64   `json:"span_ms"` // the last sample's offset
	Lanes   []Lane    `json:"lanes"`   // events and sampled values over time
	// Windows are the spans (ms from the start) in which the threads'
	// system calls and switches were recorded, when they were recorded
	// in windows whose calls stand for more than themselves: the thread
	// lanes draw them, their spans off the CPU being those of the
	// windows only (syscallWindows).
	Windows [][2]float64 `json:"windows,omitempty"`
}

// Lane is one row under the heat maps, on a linear time axis: the events
// of a kind counted per cell (Counts[c*Rows+r], as the maps' cells), the
// values of a sampled expression (Points: ms from the start, value; at
// most maxPoints, each a value, or the mean of a slice of the values or
// of a group of buckets of them, see valueLanes), or one
// thread's system calls and off-CPU spans. The time data names the lanes
// of values (Src, Total) without their points: the page asks for each
// (time/values, valueLanes).
type Lane struct {
	Name   string       `json:"name"`
	Kind   string       `json:"kind"` // "events", "values" or "thread"
	Src    int          `json:"src"`  // a lane of values: its source, index of Profile.ValueSources
	TID    uint32       `json:"tid,omitempty"`
	Total  int          `json:"total"`
	Counts []int        `json:"counts,omitempty"`
	Points [][2]float64 `json:"points,omitempty"`
	// Bands are, for a lane whose points are means, the least and
	// greatest value of each point's values.
	Bands [][2]float64 `json:"bands,omitempty"`
	Min   float64      `json:"min"`
	Max   float64      `json:"max"`
	// A thread's lane: Counts are its system calls, Spans its time off
	// the CPU (ms from the start, from and to), OffMS their total.
	Spans [][2]float64 `json:"spans,omitempty"`
	OffMS float64      `json:"off_ms,omitempty"`
}

// maxPoints is how many points a lane of values draws at most.
const maxPoints = 800

// maxLanesAsked is how many lanes of values one request asks for at most
// (the page asks for its lanes in 3 requests at once, more past 3 × 64).
const maxLanesAsked = 64

// heatMaps counts the server's samples per thread per cell, offsets
// from the profile's first sample as --from and --to take them: those
// whose stack keep allows (keep[stack]; every sample when keep is nil,
// none of a stack out of its range). Its Lanes are left to laneSet.
func (s *Server) heatMaps(keep []bool) TimeData {
	p := s.p
	var last uint64
	for _, smp := range p.Samples {
		last = max(last, smp.Time)
	}
	secs, colS := 1, 1
	if last > p.StartTime {
		n := int((last-p.StartTime)/uint64(time.Second)) + 1
		colS = (n + maxColumns - 1) / maxColumns
		secs = int((last-p.StartTime)/(uint64(colS)*uint64(time.Second))) + 1
	}
	col := uint64(colS) * uint64(time.Second) // ns a column
	grid := func() [][]int {
		g := make([][]int, secs)
		for i := range g {
			g[i] = make([]int, rowsPerSecond)
		}
		return g
	}
	all := HeatMap{Name: "all threads", Cells: grid()}
	per := map[uint32]*HeatMap{}
	var h *HeatMap // the last sample's thread's
	for _, smp := range p.Samples {
		if smp.Time < p.StartTime {
			continue
		}
		if keep != nil && (smp.Stack < 0 || int(smp.Stack) >= len(keep) || !keep[smp.Stack]) {
			continue
		}
		d := smp.Time - p.StartTime
		c, r := int(d/col), int(d%col*rowsPerSecond/col)
		n := smp.N()
		all.Cells[c][r] += n
		all.Samples += n
		if h == nil || h.TID != smp.TID {
			h = per[smp.TID]
			if h == nil {
				h = &HeatMap{TID: smp.TID, Name: p.ThreadNameAt(smp.TID, smp.Time), Cells: grid()}
				per[smp.TID] = h
			}
		}
		h.Cells[c][r] += n
		h.Samples += n
	}
	threads := make([]*HeatMap, 0, len(per))
	for _, h := range per {
		threads = append(threads, h)
	}
	slices.SortFunc(threads, func(a, b *HeatMap) int {
		if a.Samples != b.Samples {
			return b.Samples - a.Samples
		}
		return int(a.TID) - int(b.TID)
	})
	out := TimeData{Rows: rowsPerSecond, Seconds: secs, ColumnS: colS, CellMS: float64(colS) * 1000 / rowsPerSecond, Samples: all.Samples}
	if last > p.StartTime {
		out.SpanMS = float64(last-p.StartTime) / 1e6
	}
	out.Threads = append(out.Threads, all)
	for i, h := range threads {
		if i == maxThreads {
			out.Hidden = len(threads) - maxThreads
			break
		}
		out.Threads = append(out.Threads, *h)
	}
	for i := range out.Threads {
		for _, col := range out.Threads[i].Cells {
			for _, v := range col {
				out.Threads[i].Max = max(out.Threads[i].Max, v)
			}
		}
	}
	return out
}

// cellNS is how long a cell of d's maps is, ns.
func (d TimeData) cellNS() uint64 {
	return uint64(max(1, d.ColumnS)) * uint64(time.Second) / rowsPerSecond
}

// laneSet is the lanes under the maps, counted once for every f: those
// of events and values (lanes), and a lane per thread with system calls
// or context switches (threadLanes), ordered by the maps drawn.
type laneSet struct {
	lanes   []Lane
	threads []threadLane
	windows [][2]float64
}

// threadLane is a thread's lane and its first event, for the order of
// the threads not drawn as maps.
type threadLane struct {
	l     Lane
	first uint64
}

// laneSet counts the lanes of a time view of secs columns of cells of
// cell ns whose last sample is at spanMS.
func (s *Server) laneSet(secs int, cell uint64, spanMS float64) laneSet {
	ls := laneSet{lanes: s.lanes(secs, cell)}
	if s.in.Events != nil {
		ls.threads = s.threadLanes(secs, cell, spanMS)
		if len(ls.threads) > 0 {
			ls.windows = s.syscallWindows(spanMS)
		}
	}
	return ls
}

// syscallWindows is the spans, ms from the start, in which the events'
// recording recorded system calls and switches, when some of its windows'
// calls stand for more than themselves (recording.SyscallWindow's Scale
// above 1; a recording of every call, or of auto windows that stayed
// under their rate, has none): a thread lane's spans off the CPU lie in
// them, each drawn once, where the off-CPU flame graph charges each
// switch for the ones its window stands for. Windows closer than
// 1/maxSpans of the recording are joined, as the lanes' spans are.
func (s *Server) syscallWindows(spanMS float64) [][2]float64 {
	ws := s.in.Events.SyscallWindows
	if !slices.ContainsFunc(ws, func(w recording.SyscallWindow) bool { return w.Scale() > 1 }) {
		return nil
	}
	ws = slices.Clone(ws)
	slices.SortFunc(ws, func(a, b recording.SyscallWindow) int { return cmp.Compare(a.Start, b.Start) })
	start, gap := s.p.StartTime, spanMS/maxSpans
	var out [][2]float64
	for _, w := range ws {
		if w.End <= start {
			continue
		}
		out = joinSpan(out, float64(max(w.Start, start)-start)/1e6, float64(w.End-start)/1e6, gap)
	}
	return out
}

// joinSpan adds the span from, to (ms; spans added in order of their
// starts) to spans: joined to the last one when it begins less than gap
// after that one's end.
func joinSpan(spans [][2]float64, from, to, gap float64) [][2]float64 {
	if n := len(spans); n > 0 && from-spans[n-1][1] < gap {
		spans[n-1][1] = max(spans[n-1][1], to)
		return spans
	}
	return append(spans, [2]float64{from, to})
}

// ordered is the lanes of ls under the maps of the threads drawn: the
// lanes of events and values, then the threads' lanes, the threads drawn
// as heat maps first, then the others (threads that only waited) by
// their first event, at most maxThreads in all.
func (ls laneSet) ordered(drawn []HeatMap) []Lane {
	out := slices.Clone(ls.lanes)
	if len(ls.threads) == 0 {
		return out
	}
	at := make(map[uint32]int, len(ls.threads))
	for i, t := range ls.threads {
		at[t.l.TID] = i
	}
	used := make([]bool, len(ls.threads))
	n := 0
	for _, h := range drawn {
		if i, ok := at[h.TID]; ok && !used[i] && n < maxThreads {
			out = append(out, ls.threads[i].l)
			used[i] = true
			n++
		}
	}
	for i, t := range ls.threads { // in the order of their first events
		if !used[i] && n < maxThreads {
			out = append(out, t.l)
			n++
		}
	}
	return out
}

// threadLanes are one lane per thread with system calls or context
// switches: its system calls per cell and the spans it spent off the CPU
// (analysis/offcpu's, as the off-CPU flame graph charges them), in the
// order of the threads' first events. Spans closer than a 1/maxSpans of
// the recording are drawn as one.
func (s *Server) threadLanes(secs int, cell uint64, spanMS float64) []threadLane {
	per := map[uint32]*threadLane{}
	get := func(tid uint32, t uint64) *threadLane {
		a := per[tid]
		if a == nil {
			a = &threadLane{l: Lane{Kind: "thread", TID: tid, Name: s.in.Events.ThreadNameAt(tid, t)}, first: t}
			per[tid] = a
		}
		return a
	}
	start := s.p.StartTime
	for _, smp := range s.in.Events.Samples {
		if smp.Event != recording.EventSyscallEnter || smp.Time < start {
			continue
		}
		i := int((smp.Time - start) / cell)
		if i >= secs*rowsPerSecond {
			continue
		}
		l := &get(smp.TID, smp.Time).l
		if l.Counts == nil {
			l.Counts = make([]int, secs*rowsPerSecond)
		}
		l.Counts[i] += smp.N()
		l.Total += smp.N()
		l.Max = max(l.Max, float64(l.Counts[i]))
	}
	if off, err := s.offCPU(); err == nil {
		gap := spanMS / maxSpans
		for _, smp := range off.Samples {
			if smp.Time < start {
				continue
			}
			l := &get(smp.TID, smp.Time).l
			// A span that stands for more (a switch recorded in a
			// system call window) is drawn and counted once.
			d := float64(smp.Period/uint64(smp.N())) / 1e6
			from := float64(smp.Time-start) / 1e6
			to := from + d
			l.OffMS += d
			l.Spans = joinSpan(l.Spans, from, to, gap)
		}
	}
	out := make([]threadLane, 0, len(per))
	for _, a := range per {
		out = append(out, *a)
	}
	slices.SortFunc(out, func(a, b threadLane) int {
		if a.first != b.first {
			return cmp.Compare(a.first, b.first)
		}
		return cmp.Compare(a.l.TID, b.l.TID)
	})
	return out
}

// maxSpans is how many off-CPU spans a thread's lane draws at most: spans
// closer than 1/maxSpans of the recording are joined.
const maxSpans = 2000

// lanes counts the system calls and context switches of the selected
// threads per cell and summarises each sampled expression's values.
func (s *Server) lanes(secs int, cell uint64) []Lane {
	var out []Lane
	if ev := s.in.Events; ev != nil {
		kinds := []struct {
			name string
			e    recording.Event
		}{{"system calls", recording.EventSyscallEnter}, {"context switches", recording.EventSwitch}}
		for _, k := range kinds {
			l := Lane{Name: k.name, Kind: "events", Counts: make([]int, secs*rowsPerSecond)}
			for _, smp := range ev.Samples {
				if smp.Event != k.e || smp.Time < s.p.StartTime {
					continue
				}
				i := int((smp.Time - s.p.StartTime) / cell)
				if i >= len(l.Counts) {
					continue
				}
				l.Counts[i] += smp.N()
				l.Total += smp.N()
			}
			for _, c := range l.Counts {
				l.Max = max(l.Max, float64(c))
			}
			if l.Total > 0 {
				out = append(out, l)
			}
		}
	}
	// The lanes of values: named, counted; their points come on request.
	counts, err := s.p.ValueCounts()
	if err != nil {
		return out
	}
	for i, c := range counts {
		if c.Present > 0 {
			out = append(out, Lane{Name: valueName(s.p.ValueSources[i]), Kind: "values", Src: i, Total: c.Present})
		}
	}
	return out
}

// valueName is how a lane names a sampled expression.
func valueName(src recording.ValueSource) string {
	if src.Function != "" {
		return src.Function + ": " + src.Name
	}
	return src.Name
}

// sourceValues are the values of one sampled expression present, as the
// time view keeps them: while there are at most rawValues of them, each
// one in time order, the finite ones (times, vals) and the times of the
// others (NaN, infinities: counted, not drawn); past that, summarised in
// valueBuckets buckets of time (buckets), whatever their number, so that
// the memory the lanes hold is bounded by their sources, not their values
// (32 B a bucket: 256 KiB a source, against 16 B a value held).
type sourceValues struct {
	times []uint64
	vals  []float64
	odd   []uint64
	b     []valueBucket // nil while the values are held one by one
}

// valueBucket summarises the values of one source in one bucket of time:
// how many (n finite, odd the others), their least, greatest and sum.
type valueBucket struct {
	n, odd        uint32
	min, max, sum float64
}

// add counts value f (finite unless odd) in b.
func (b *valueBucket) add(f float64, odd bool) {
	if odd {
		b.odd++
		return
	}
	if b.n == 0 {
		b.min, b.max = f, f
	} else {
		b.min, b.max = min(b.min, f), max(b.max, f)
	}
	b.n++
	b.sum += f
}

const (
	// rawValues is how many values of a source the time view holds one
	// by one; a source with more is summarised in buckets.
	rawValues = 8192
	// valueBuckets is how many buckets of time a summarised source has:
	// the samples' span (valueSpan) cut in equal parts. The lane of a
	// range draws the buckets it overlaps, so a range shorter than
	// maxPoints buckets draws fewer points than maxPoints, one a bucket,
	// and its counts, least and greatest value are those of the buckets
	// (the range widened to their edges).
	valueBuckets = 8192
)

// valueSummary is what the time view keeps of the recordings' values:
// per source (indexed like Profile.ValueSources), read once.
type valueSummary struct {
	sources []sourceValues
	t0      uint64 // the first bucket's start: the first sample's time
	width   uint64 // ns a bucket (≥ 1)
}

// bucket is the bucket of time t: values before the first sample count in
// the first, those after the last sample in the last.
func (vs *valueSummary) bucket(t uint64) int {
	if t < vs.t0 {
		return 0
	}
	return int(min((t-vs.t0)/vs.width, valueBuckets-1))
}

// add keeps value f of source src, read at time t.
func (vs *valueSummary) add(src int, t uint64, f float64) {
	sv := &vs.sources[src]
	odd := math.IsNaN(f) || math.IsInf(f, 0)
	if sv.b != nil {
		sv.b[vs.bucket(t)].add(f, odd)
		return
	}
	if odd {
		sv.odd = append(sv.odd, t)
	} else {
		sv.times = append(sv.times, t)
		sv.vals = append(sv.vals, f)
	}
	if len(sv.times)+len(sv.odd) > rawValues {
		// Past rawValues: into buckets, the values held so far too.
		sv.b = make([]valueBucket, valueBuckets)
		for i, t := range sv.times {
			sv.b[vs.bucket(t)].add(sv.vals[i], false)
		}
		for _, t := range sv.odd {
			sv.b[vs.bucket(t)].add(0, true)
		}
		sv.times, sv.vals, sv.odd = nil, nil, nil
	}
}

// valuesProgress is the answer to a request for lanes of values while
// the values are read: how many of how many, for how long.
type valuesProgress struct {
	Read      int64 `json:"read"`
	Total     int64 `json:"total"`
	RunningMS int64 `json:"running_ms"`
}

// valueTotal is how many values the recordings hold, of every source (0
// when not known).
func (s *Server) valueTotal() int64 {
	counts, err := s.p.ValueCounts()
	if err != nil {
		return 0
	}
	var n int64
	for _, c := range counts {
		n += int64(c.All)
	}
	return n
}

// values returns the server's values by source, read once.
func (s *Server) values() (*valueSummary, error) { return s.valuesMemo.get(s.readValues) }

// valuesAhead is values for the build ahead of use: a reading it starts
// pauses while a request is answered (no request waits for it
// unbounded: they ask with valuesMemo.within), so that a click gets the
// CPU the reading, tens of seconds on 1 GB recordings, would share.
func (s *Server) valuesAhead() {
	_, _ = s.valuesMemo.get(func() (*valueSummary, error) { return s.readValuesPausing(true) })
}

// readValues reads the server's values by source, counting them in
// valuesRead as it goes.
func (s *Server) readValues() (*valueSummary, error) { return s.readValuesPausing(false) }

// readValuesPausing is readValues, which with pause waits, every 2^16
// values, until no request is being answered. The values are read in no
// set order and without their frames (Profile.EachValueWithin: only the
// bytes of the values, decoded in place, where EachValue merges every
// record in time order): the buckets do not depend on the order, and the
// few values of a source held one by one are put in time order after.
func (s *Server) readValuesPausing(pause bool) (*valueSummary, error) {
	out := &valueSummary{sources: make([]sourceValues, len(s.p.ValueSources)), t0: s.p.StartTime}
	var end uint64 // the last sample's time
	for i := range s.p.Samples {
		end = max(end, s.p.Samples[i].Time)
	}
	out.width = max(1, (end-min(end, out.t0)+valueBuckets)/valueBuckets)
	var n int64
	defer func() { s.valuesRead.Store(n) }()
	err := s.p.EachValueWithin(0, math.MaxUint64, func(v *profile.Value) bool {
		if n++; n%(1<<16) == 0 {
			s.valuesRead.Store(n)
			if pause {
				s.waitAnswered()
			}
		}
		if v.Source < 0 || int(v.Source) >= len(out.sources) || v.Missing() {
			return true
		}
		out.add(int(v.Source), v.Time, v.Float64())
		return true
	})
	for i := range out.sources {
		out.sources[i].sort()
	}
	return out, err
}

// sort puts the values of sv held one by one in time order (those read at
// the same time in the order read).
func (sv *sourceValues) sort() {
	slices.Sort(sv.odd)
	if slices.IsSorted(sv.times) {
		return
	}
	type tv struct {
		t uint64
		v float64
	}
	x := make([]tv, len(sv.times))
	for i := range x {
		x[i] = tv{sv.times[i], sv.vals[i]}
	}
	slices.SortStableFunc(x, func(a, b tv) int { return cmp.Compare(a.t, b.t) })
	for i := range x {
		sv.times[i], sv.vals[i] = x[i].t, x[i].v
	}
}

// rawReadMost is how many values a request for lanes of values reads
// again from the recordings at most (Profile.ValuesWithinCost: every
// value of every source in the runs of values the range overlaps) to draw
// the values of a range of summarised sources one by one, rather than
// their buckets: a range narrow enough that its values take tens of
// milliseconds to read (on 1M samples with 32M values, 230k values read
// cost 100 ms of CPU at load 12) is drawn from its values, exactly; a
// wider one from the buckets.
const rawReadMost = 1 << 17

// valueLanes are the lanes of the values of the sources srcs in the range
// rng, on the time view's axis (ms from the first sample), at most
// maxPoints points each. A source held value by value gives the range's
// values exactly (heldLane). A summarised one gives the buckets the range
// overlaps (bucketLane), unless the range's values are few enough to read
// again (Server.readMost, rawReadMost): then its values, read once for
// every summarised source (readRange) and kept for the range (the page
// asks for its lanes in several requests at once), are drawn as a held
// source's.
func (s *Server) valueLanes(srcs []int, rng Range) ([]Lane, error) {
	all, err := s.values()
	if err != nil {
		return nil, err
	}
	var read map[int]*sourceValues
	if !rng.Whole() && slices.ContainsFunc(srcs, func(src int) bool { return all.sources[src].b != nil }) {
		from, to := s.p.StartTime+uint64(rng.From), s.p.StartTime+uint64(rng.To)
		if s.p.ValuesWithinCost(from, to) <= s.readMost {
			read, err = s.rangeValues.get(rng, func(Range) (map[int]*sourceValues, error) {
				var want []int
				for src := range all.sources {
					if all.sources[src].b != nil {
						want = append(want, src)
					}
				}
				return s.readRange(want, from, to)
			})
			if err != nil {
				return nil, err
			}
		}
	}
	out := make([]Lane, 0, len(srcs))
	for _, src := range srcs {
		l := Lane{Name: valueName(s.p.ValueSources[src]), Kind: "values", Src: src}
		switch sv := all.sources[src]; {
		case read[src] != nil:
			out = append(out, s.heldLane(l, read[src], rng))
		case sv.b != nil:
			out = append(out, all.bucketLane(l, sv.b, rng))
		default:
			out = append(out, s.heldLane(l, &sv, rng))
		}
	}
	return out, nil
}

// readRange reads the values of the sources srcs whose times lie in
// [from, to) again from the recordings (Profile.EachValueWithin), held
// one by one in time order.
func (s *Server) readRange(srcs []int, from, to uint64) (map[int]*sourceValues, error) {
	out := make(map[int]*sourceValues, len(srcs))
	for _, src := range srcs {
		out[src] = &sourceValues{}
	}
	err := s.p.EachValueWithin(from, to, func(v *profile.Value) bool {
		sv := out[int(v.Source)]
		if sv == nil || v.Missing() {
			return true
		}
		if f := v.Float64(); math.IsNaN(f) || math.IsInf(f, 0) {
			sv.odd = append(sv.odd, v.Time)
		} else {
			sv.times = append(sv.times, v.Time)
			sv.vals = append(sv.vals, f)
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	for _, sv := range out {
		sv.sort()
	}
	return out, nil
}

// valueLane is the lane of the values of source src in the range rng
// (valueLanes).
func (s *Server) valueLane(src int, rng Range) (Lane, error) {
	ls, err := s.valueLanes([]int{src}, rng)
	if err != nil {
		return Lane{}, err
	}
	return ls[0], nil
}

// heldLane is l, the lane of values held one by one (sv, in time order),
// in the range rng: its values from From up to To, as Filter selects
// them, exactly (their count, least and greatest); at most maxPoints
// points, each a value or, past maxPoints values, the mean of a slice of
// them at its middle value's time, with the slice's least and greatest
// value (Bands): exprs.SeriesBands.
func (s *Server) heldLane(l Lane, sv *sourceValues, rng Range) Lane {
	within := func(times []uint64) (int, int) {
		if rng.Whole() {
			return 0, len(times)
		}
		lo, _ := slices.BinarySearch(times, s.p.StartTime+uint64(rng.From))
		hi, _ := slices.BinarySearch(times, s.p.StartTime+uint64(rng.To))
		return lo, hi
	}
	lo, hi := within(sv.times)
	olo, ohi := within(sv.odd)
	l.Total = hi - lo + ohi - olo
	if hi == lo {
		return l
	}
	times, vals := sv.times[lo:hi], sv.vals[lo:hi]
	l.Min, l.Max = vals[0], vals[0]
	for _, v := range vals {
		l.Min, l.Max = min(l.Min, v), max(l.Max, v)
	}
	pts, bands := exprs.SeriesBands(times, vals, s.p.StartTime, maxPoints)
	l.Points = make([][2]float64, len(pts))
	for i, pt := range pts {
		l.Points[i] = [2]float64{pt.T * 1000, pt.Value}
	}
	l.Bands = bands
	return l
}

// bucketLane is l, the lane of a summarised source (its buckets b), in
// the range rng: the buckets it overlaps, in at most maxPoints groups.
func (vs *valueSummary) bucketLane(l Lane, b []valueBucket, rng Range) Lane {
	lo, hi := 0, len(b)
	if !rng.Whole() {
		lo = vs.bucket(vs.t0 + uint64(rng.From))
		hi = vs.bucket(vs.t0+uint64(max(rng.From, rng.To-1))) + 1
		if uint64(rng.From) >= vs.width*valueBuckets { // past the samples
			hi = lo
		}
	}
	per := (hi - lo + maxPoints - 1) / maxPoints
	first := true
	for g := lo; g < hi; g += per {
		var sum acc
		for i := g; i < min(hi, g+per); i++ {
			sum.add(b[i])
		}
		l.Total += int(sum.n + sum.odd)
		if sum.n == 0 {
			continue
		}
		if first {
			l.Min, l.Max, first = sum.min, sum.max, false
		}
		l.Min, l.Max = min(l.Min, sum.min), max(l.Max, sum.max)
		mid := float64(vs.width) * (float64(g) + float64(min(hi, g+per)-g)/2) / 1e6
		l.Points = append(l.Points, [2]float64{mid, sum.sum / float64(sum.n)})
		l.Bands = append(l.Bands, [2]float64{sum.min, sum.max})
	}
	return l
}

// acc sums buckets.
type acc struct {
	n, odd        int64
	min, max, sum float64
}

func (a *acc) add(b valueBucket) {
	a.odd += int64(b.odd)
	if b.n == 0 {
		return
	}
	if a.n == 0 {
		a.min, a.max = b.min, b.max
	} else {
		a.min, a.max = min(a.min, b.min), max(a.max, b.max)
	}
	a.n += int64(b.n)
	a.sum += b.sum
}
