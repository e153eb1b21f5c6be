package view

import (
	"cmp"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/culprit-dev/culprit/internal/profile"
	"github.com/culprit-dev/culprit/internal/recording"
)

// TestValueLanes checks that the time view's data names and counts the
// lanes of sampled values without their points, and that each lane's
// points come on request, of the whole recording or of a range: the
// values of that source alone in it, missing and non-finite ones left
// out.
func TestValueLanes(t *testing.T) {
	const start = 1_000_000_000
	p := &profile.Profile{
		Frames:       []profile.Frame{{Function: "main"}},
		Stacks:       [][]int32{{0}},
		Threads:      map[uint32]profile.Thread{1: {PID: 1, TID: 1, Comm: "main"}},
		StartTime:    start,
		ValueSources: []recording.ValueSource{{Name: "n", Function: "work"}, {Name: "g"}, {Name: "never"}},
	}
	// 4 s of samples every 10 ms, each with a value of n (its time in ms),
	// one of g (NaN every 10th) and a missing one of never.
	for i := range 400 {
		tm := uint64(start + i*10_000_000)
		p.Samples = append(p.Samples, profile.Sample{Time: tm, PID: 1, TID: 1, Period: 10_000_000, Event: recording.EventCPU})
		p.Values = append(p.Values,
			profile.Value{Time: tm, PID: 1, TID: 1, Source: 0, Type: recording.ValueInt, Bits: uint64(i * 10)},
			profile.Value{Time: tm, PID: 1, TID: 1, Source: 1, Type: recording.ValueFloat, Bits: math.Float64bits(float64(i % 7))},
			profile.Value{Time: tm, PID: 1, TID: 1, Source: 2, Type: recording.ValueMissing})
		if i%10 == 0 {
			p.Values[len(p.Values)-2].Bits = math.Float64bits(math.NaN())
		}
	}
	s, err := New(Inputs{Profile: p, Names: []string{"a.rec"}}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	// A request for lanes while the values are read is answered 202 and
	// asked again, as the page does.
	get := func(path string, v any) int {
		t.Helper()
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, s.Path()+path, nil))
		for w.Code == http.StatusAccepted {
			w = httptest.NewRecorder()
			s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, s.Path()+path, nil))
		}
		if w.Code == http.StatusOK {
			if err := json.Unmarshal(w.Body.Bytes(), v); err != nil {
				t.Fatalf("GET %s: %v\n%s", path, err, w.Body)
			}
		}
		return w.Code
	}
	var data TimeData
	if code := get("time/data", &data); code != http.StatusOK {
		t.Fatalf("GET time/data: %d", code)
	}
	var lanes []Lane
	for _, l := range data.Lanes {
		if l.Kind == "values" {
			lanes = append(lanes, l)
		}
	}
	if len(lanes) != 2 || lanes[0].Name != "work: n" || lanes[0].Src != 0 || lanes[0].Total != 400 ||
		lanes[1].Name != "g" || lanes[1].Src != 1 || lanes[1].Total != 400 {
		t.Fatalf("time data's lanes of values: %+v; want work: n and g (400 values each, NaN counted), never (none) left out", lanes)
	}
	for _, l := range lanes {
		if len(l.Points) > 0 {
			t.Errorf("time data's lane %s carries %d points, want none (asked for apart)", l.Name, len(l.Points))
		}
	}
	for _, c := range []struct {
		query          string
		total          int
		min, max       float64
		firstMS, maxMS float64
	}{
		{"src=0", 400, 0, 3990, 0, 3990},
		{"src=0&from=1s&to=2s", 100, 1000, 1990, 1000, 1990},
		{"src=1", 400, 0, 6, 10, 3990},
	} {
		var ls []Lane
		if code := get("time/values?"+c.query, &ls); code != http.StatusOK || len(ls) != 1 {
			t.Fatalf("GET time/values?%s: %d, %d lanes", c.query, code, len(ls))
		}
		l := ls[0]
		if l.Total != c.total || l.Min != c.min || l.Max != c.max || len(l.Points) == 0 || len(l.Points) > maxPoints {
			t.Errorf("time/values?%s: %d values, %v to %v, %d points; want %d, %v to %v, 1 to %d points",
				c.query, l.Total, l.Min, l.Max, len(l.Points), c.total, c.min, c.max, maxPoints)
			continue
		}
		if first, last := l.Points[0][0], l.Points[len(l.Points)-1][0]; first < c.firstMS || last > c.maxMS {
			t.Errorf("time/values?%s: points from %v to %v ms, want within %v to %v", c.query, first, last, c.firstMS, c.maxMS)
		}
		for _, pt := range l.Points {
			if math.IsNaN(pt[1]) || pt[1] < c.min || pt[1] > c.max {
				t.Errorf("time/values?%s: point %v outside %v to %v", c.query, pt, c.min, c.max)
				break
			}
		}
	}
	// Several lanes at once: each as asked alone, in the order asked.
	var two, one, zero []Lane
	get("time/values?src=1&src=0&from=1s&to=2s", &two)
	get("time/values?src=1&from=1s&to=2s", &one)
	get("time/values?src=0&from=1s&to=2s", &zero)
	if len(two) != 2 || len(one) != 1 || len(zero) != 1 || two[0].Src != 1 || two[1].Src != 0 ||
		two[0].Total != one[0].Total || two[1].Total != zero[0].Total || len(two[1].Points) != len(zero[0].Points) {
		t.Errorf("time/values?src=1&src=0: %+v\nwant the lanes of src=1 and src=0 asked alone", two)
	}
	many := "src=0"
	for range maxLanesAsked {
		many += "&src=0"
	}
	for _, q := range []string{"src=3", "src=-1", "src=x", "", "src=0&from=2s", "src=0&src=9", many} {
		var l []Lane
		if code := get("time/values?"+q, &l); code != http.StatusBadRequest {
			t.Errorf("GET time/values?%.40s: %d, want 400", q, code)
		}
	}
}

// TestValueLanesSummarised checks the lanes of a source with more values
// than the time view holds one by one (rawValues): summarised in buckets
// of time, its lane of the whole recording and of a range count every
// value (NaN too), give the least and greatest exactly (a lone spike and
// dip among them), at most maxPoints points, each the mean of its values
// within the band of their least and greatest; a range's counts are those
// of the range widened to its buckets' edges at most when it is drawn
// from the buckets (its values too many to read again), exactly those of
// the range when drawn from its values read again.
func TestValueLanesSummarised(t *testing.T) {
	const start = 1_000_000_000
	p := laneProfile(start, recording.ValueSource{Name: "n", Function: "work"})
	// 200,000 values every 20 µs: i mod 1000, NaN every 997th, a spike of
	// 1e6 at 2.5 s and a dip of -5 at 0.7 s.
	const n, every = 200_000, 20_000
	val := func(i int) float64 {
		switch {
		case i == 2_500_000_000/every:
			return 1e6
		case i == 700_000_000/every:
			return -5
		case i%997 == 0:
			return math.NaN()
		}
		return float64(i % 1000)
	}
	for i := range n {
		p.Values = append(p.Values, profile.Value{Time: uint64(start + i*every), PID: 1, TID: 1, Source: 0, Type: recording.ValueFloat, Bits: math.Float64bits(val(i))})
	}
	s, err := New(Inputs{Profile: p, Names: []string{"a.rec"}}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := s.values()
	if err != nil {
		t.Fatal(err)
	}
	if sv := vs.sources[0]; sv.b == nil || sv.times != nil || sv.vals != nil || sv.odd != nil {
		t.Fatalf("a source of %d values is held one by one, want it summarised in buckets", n)
	}
	width := time.Duration(vs.width)
	// count is how many values lie in [from, to).
	count := func(from, to time.Duration) int {
		c := 0
		for i := range n {
			if at := time.Duration(i * every); at >= from && at < to {
				c++
			}
		}
		return c
	}
	for _, c := range []struct {
		rng      Range
		min, max float64
		readMost int
	}{
		{Range{}, -5, 1e6, rawReadMost},
		{Range{From: time.Second, To: 2 * time.Second}, 0, 999, 0},
		{Range{From: 2 * time.Second, To: 3 * time.Second}, 0, 1e6, 0},
		{Range{From: 690 * time.Millisecond, To: 710 * time.Millisecond}, -5, 999, 0},
		{Range{From: time.Second, To: 2 * time.Second}, 0, 999, rawReadMost},
		{Range{From: 2 * time.Second, To: 3 * time.Second}, 0, 1e6, rawReadMost},
		{Range{From: 690 * time.Millisecond, To: 710 * time.Millisecond}, -5, 999, rawReadMost},
	} {
		s.readMost = c.readMost
		l, err := s.valueLane(0, c.rng)
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := count(c.rng.From, c.rng.To), count(c.rng.From-width, c.rng.To+width)
		switch {
		case c.rng.Whole():
			lo, hi = n, n
		case c.readMost > 0: // read again: exactly
			hi = lo
		}
		if l.Total < lo || l.Total > hi || l.Min != c.min || l.Max != c.max {
			t.Errorf("lane of %v (read again up to %d): %d values, %v to %v; want %d to %d values, %v to %v", c.rng, c.readMost, l.Total, l.Min, l.Max, lo, hi, c.min, c.max)
		}
		if len(l.Points) == 0 || len(l.Points) > maxPoints || len(l.Bands) != len(l.Points) {
			t.Errorf("lane of %v: %d points, %d bands; want 1 to %d points, a band each", c.rng, len(l.Points), len(l.Bands), maxPoints)
			continue
		}
		top := math.Inf(-1)
		for i, pt := range l.Points {
			b := l.Bands[i]
			if pt[1] < b[0] || pt[1] > b[1] || b[0] < c.min || b[1] > c.max {
				t.Errorf("lane of %v: point %v, band %v: want the point within its band, within %v to %v", c.rng, pt, b, c.min, c.max)
				break
			}
			if i > 0 && pt[0] <= l.Points[i-1][0] {
				t.Errorf("lane of %v: point %d at %v ms after %v ms, want in time order", c.rng, i, pt[0], l.Points[i-1][0])
				break
			}
			top = max(top, b[1])
		}
		if top != c.max {
			t.Errorf("lane of %v: bands up to %v, want its greatest, %v", c.rng, top, c.max)
		}
		if from, to := float64(c.rng.From-width)/1e6, float64(c.rng.To+width)/1e6; !c.rng.Whole() && (l.Points[0][0] < from || l.Points[len(l.Points)-1][0] > to) {
			t.Errorf("lane of %v: points from %v to %v ms, want within %v to %v", c.rng, l.Points[0][0], l.Points[len(l.Points)-1][0], from, to)
		}
	}
	if l, _ := s.valueLane(0, Range{From: 10 * time.Second, To: 11 * time.Second}); l.Total != 0 || len(l.Points) != 0 {
		t.Errorf("lane past the samples: %d values, %d points; want none", l.Total, len(l.Points))
	}
}

// TestNarrowRangeValues checks that the lane of a summarised source in a
// range whose values are few enough to read again draws each of them,
// exactly (no band), and the buckets when they are not.
func TestNarrowRangeValues(t *testing.T) {
	const start = 1_000_000_000
	p := laneProfile(start, recording.ValueSource{Name: "n", Function: "work"}, recording.ValueSource{Name: "m"})
	// 50,000 values of n every 80 µs, 3i; as many of m, 7.
	const n, every = 50_000, 80_000
	for i := range n {
		t := uint64(start + i*every)
		p.Values = append(p.Values,
			profile.Value{Time: t, PID: 1, TID: 1, Source: 0, Type: recording.ValueInt, Bits: uint64(3 * i)},
			profile.Value{Time: t, PID: 1, TID: 1, Source: 1, Type: recording.ValueInt, Bits: 7})
	}
	s, err := New(Inputs{Profile: p, Names: []string{"a.rec"}}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	// 1000 ms to 1040 ms: values 12,500 to 12,999, and as many of m.
	rng := Range{From: time.Second, To: 1040 * time.Millisecond}
	ls, err := s.valueLanes([]int{0, 1}, rng)
	if err != nil {
		t.Fatal(err)
	}
	l := ls[0]
	if l.Total != 500 || len(l.Points) != 500 || l.Bands != nil || l.Min != 3*12_500 || l.Max != 3*12_999 {
		t.Fatalf("lane of %v: %d values, %d points, %d bands, %v to %v; want 500 values drawn one by one, %d to %d",
			rng, l.Total, len(l.Points), len(l.Bands), l.Min, l.Max, 3*12_500, 3*12_999)
	}
	for k, pt := range l.Points {
		i := 12_500 + k
		if want := [2]float64{float64(i*every) / 1e6, float64(3 * i)}; math.Abs(pt[0]-want[0]) > 1e-9 || pt[1] != want[1] {
			t.Fatalf("lane of %v: point %d is %v, want %v (the value recorded then)", rng, k, pt, want)
		}
	}
	if m := ls[1]; m.Total != 500 || len(m.Points) != 500 || m.Min != 7 || m.Max != 7 {
		t.Errorf("lane of m in %v: %d values, %d points, %v to %v; want 500 values of 7", rng, m.Total, len(m.Points), m.Min, m.Max)
	}
	// Too many to read again (every value of the range is read, m's too):
	// the buckets.
	s.readMost = 999
	if l, err := s.valueLane(0, rng); err != nil || l.Bands == nil || len(l.Points) >= 500 {
		t.Errorf("lane of %v, 1000 values to read, 999 at most: %d points, %d bands (%v); want the buckets, with bands", rng, len(l.Points), len(l.Bands), err)
	}
}

// TestValueLanesWhileRead checks that a request for lanes of values while
// the values are read is answered at once with how far the reading is
// (202, not waiting for it), a wrong source still with 400, and once
// they are read with the lanes.
func TestValueLanesWhileRead(t *testing.T) {
	const start = 1_000_000_000
	p := &profile.Profile{
		Frames:       []profile.Frame{{Function: "main"}},
		Stacks:       [][]int32{{0}},
		Threads:      map[uint32]profile.Thread{1: {PID: 1, TID: 1, Comm: "main"}},
		StartTime:    start,
		Samples:      []profile.Sample{{Time: start, PID: 1, TID: 1, Period: 1, Event: recording.EventCPU}},
		ValueSources: []recording.ValueSource{{Name: "n"}},
	}
	release := make(chan struct{})
	p.SetValueStream([]profile.ValueCount{{All: 3, Present: 3}}, func(yield func(*profile.Value) bool) error {
		<-release // the reading goes on until the test lets it end
		for i := range 3 {
			if !yield(&profile.Value{Time: start + uint64(i), PID: 1, TID: 1, Source: 0, Type: recording.ValueInt, Bits: uint64(i)}) {
				break
			}
		}
		return nil
	})
	s, err := New(Inputs{Profile: p, Names: []string{"a.rec"}}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	get := func(q string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest(http.MethodGet, s.Path()+"time/values?"+q, nil))
		return w
	}
	w := get("src=0")
	var pr valuesProgress
	if w.Code != http.StatusAccepted || json.Unmarshal(w.Body.Bytes(), &pr) != nil || pr.Total != 3 || pr.Read != 0 {
		t.Fatalf("GET time/values while read: %d %s; want 202 with read 0 of total 3", w.Code, w.Body)
	}
	if w := get("src=1"); w.Code != http.StatusBadRequest {
		t.Errorf("GET time/values?src=1 while read: %d, want 400", w.Code)
	}
	close(release)
	for w.Code == http.StatusAccepted {
		w = get("src=0")
	}
	var ls []Lane
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &ls) != nil || len(ls) != 1 || ls[0].Total != 3 || ls[0].Max != 2 {
		t.Errorf("GET time/values once read: %d %s; want the lane of 3 values, 0 to 2", w.Code, w.Body)
	}
	if n := s.valuesRead.Load(); n != 3 {
		t.Errorf("values read: %d, want 3", n)
	}
}

// TestValuesAheadPause checks that the reading of the values ahead of use
// pauses while a request is being answered: the value after the first
// 2^16 is read only once no request is.
func TestValuesAheadPause(t *testing.T) {
	const start = 1_000_000_000
	p := &profile.Profile{
		Frames:       []profile.Frame{{Function: "main"}},
		Stacks:       [][]int32{{0}},
		Threads:      map[uint32]profile.Thread{1: {PID: 1, TID: 1, Comm: "main"}},
		StartTime:    start,
		Samples:      []profile.Sample{{Time: start, PID: 1, TID: 1, Period: 1, Event: recording.EventCPU}},
		ValueSources: []recording.ValueSource{{Name: "n"}},
	}
	const n = 3 << 16
	release := make(chan struct{})
	var s *Server
	var answeringAfter int // requests being answered as the value after 2^16 was read
	p.SetValueStream([]profile.ValueCount{{All: n, Present: n}}, func(yield func(*profile.Value) bool) error {
		<-release
		for i := range n {
			if i == 1<<16 {
				s.answerMu.Lock()
				answeringAfter = s.answering
				s.answerMu.Unlock()
			}
			if !yield(&profile.Value{Time: start + uint64(i), PID: 1, TID: 1, Source: 0, Type: recording.ValueInt, Bits: uint64(i)}) {
				break
			}
		}
		return nil
	})
	var err error
	s, err = New(Inputs{Profile: p, Names: []string{"a.rec"}}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	// Once the build ahead reads (the stream waits for release), a
	// request comes.
	deadline := time.Now().Add(2 * time.Minute) // a hang, not a timing
	for !s.valuesMemo.running() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	answered := s.answer()
	close(release)
	for s.valuesRead.Load() < 1<<16 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if s.valuesRead.Load() != 1<<16 {
		t.Fatalf("values read: %d, want 2^16 (paused there)", s.valuesRead.Load())
	}
	answered()
	vs, err := s.values()
	if l, lerr := s.valueLane(0, Range{}); err != nil || lerr != nil || vs.sources[0].b == nil || l.Total != n {
		t.Fatalf("values: %v, %v, %d read; want %d summarised", err, lerr, l.Total, n)
	}
	if answeringAfter != 0 {
		t.Errorf("the value after 2^16 was read while %d requests were answered, want it read once none was", answeringAfter)
	}
}

// laneProfile is a profile of one thread with 4 s of CPU samples every
// 10 ms from start and the value sources given, their values to be added.
func laneProfile(start uint64, sources ...recording.ValueSource) *profile.Profile {
	p := &profile.Profile{
		Frames:       []profile.Frame{{Function: "main"}},
		Stacks:       [][]int32{{0}},
		Threads:      map[uint32]profile.Thread{1: {PID: 1, TID: 1, Comm: "main"}},
		StartTime:    start,
		ValueSources: sources,
	}
	for i := range uint64(400) {
		p.Samples = append(p.Samples, profile.Sample{Time: start + i*10_000_000, PID: 1, TID: 1, Period: 10_000_000, Event: recording.EventCPU})
	}
	return p
}

// TestLongRecordingColumns checks that a recording longer than maxColumns
// seconds is counted in columns of several seconds: each sample in the
// column and row of its time, the lanes of events per cell of that
// length.
func TestLongRecordingColumns(t *testing.T) {
	const start = 1_000_000_000
	p := laneProfile(start)
	p.Samples = nil
	for i := range 3001 { // a sample every second for 3,000 s
		p.Samples = append(p.Samples, profile.Sample{Time: uint64(start + i*1_000_000_000), PID: 1, TID: 1, Period: 1, Event: recording.EventCPU})
	}
	// and one at 2,000.5 s: column 666 (1,998 s to 2,001 s), row 41 (2.5 s
	// into it, cells of 60 ms).
	p.Samples = append(p.Samples, profile.Sample{Time: start + 2_000_500_000_000, PID: 1, TID: 1, Period: 1, Event: recording.EventCPU})
	slices.SortFunc(p.Samples, func(a, b profile.Sample) int { return cmp.Compare(a.Time, b.Time) })
	s, err := New(Inputs{Profile: p, Names: []string{"a.rec"}}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	d := s.heatMaps(nil)
	if d.Seconds != 1001 || d.ColumnS != 3 || d.CellMS != 60 || d.Samples != 3002 {
		t.Fatalf("3,000 s: %d columns of %d s, cells of %v ms, %d samples; want 1001 of 3 s, 60 ms, 3002", d.Seconds, d.ColumnS, d.CellMS, d.Samples)
	}
	cells := d.Threads[0].Cells
	if cells[666][41] != 1 || cells[666][16] != 1 || cells[666][0] != 1 || cells[666][33] != 1 {
		t.Errorf("column 666: rows 0, 16, 33, 41 hold %d, %d, %d, %d samples; want 1 each (1998 s, 1999 s, 2000 s, 2000.5 s)",
			cells[666][0], cells[666][16], cells[666][33], cells[666][41])
	}
	if d.cellNS() != 60_000_000 {
		t.Errorf("cell of %d ns, want 60 ms", d.cellNS())
	}
	short, err := New(Inputs{Profile: laneProfile(start), Names: []string{"a.rec"}}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if d := short.heatMaps(nil); d.Seconds != 4 || d.ColumnS != 1 || d.CellMS != 20 {
		t.Errorf("4 s: %d columns of %d s, cells of %v ms; want 4 of 1 s, 20 ms", d.Seconds, d.ColumnS, d.CellMS)
	}
}
