package view

import (
	"encoding/json"
	"net/http"
	"slices"
	"time"
)

// rowsPerSecond is the time view's rows: each cell is 1/rowsPerSecond s.
const rowsPerSecond = 50

// maxThreads is how many threads the time view draws, the busiest.
const maxThreads = 16

var timePage = Page{
	Path:  "time",
	Title: "Time view",
	About: "samples over time per thread as heat maps (offset within the second × second); select a range to open pprof's views on it",
	Needs: func(s *Server) string {
		if !s.hasSamples() {
			return "needs CPU samples: culprit record"
		}
		return ""
	},
	Handler: func(s *Server) http.Handler {
		mux := http.NewServeMux()
		mux.HandleFunc("GET /time", func(w http.ResponseWriter, r *http.Request) {
			s.html(w, "time.html", map[string]any{"Pprof": pprofViews})
		})
		mux.HandleFunc("GET /time/data", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(s.heatMaps())
		})
		return mux
	},
}

// HeatMap is one thread's samples (or all threads') over time: Cells[c][r]
// counts the samples in second c at offset [r, r+1)/Rows s of it.
type HeatMap struct {
	Name    string  `json:"name"`
	TID     uint32  `json:"tid,omitempty"`
	Samples int     `json:"samples"`
	Cells   [][]int `json:"cells"`
	Max     int     `json:"max"`
}

// TimeData is what the time view draws: summaries, not samples.
type TimeData struct {
	Rows    int       `json:"rows"`    // cells per second
	Seconds int       `json:"seconds"` // columns
	Samples int       `json:"samples"`
	Threads []HeatMap `json:"threads"` // all threads first, then the busiest
	Hidden  int       `json:"hidden"`  // threads not drawn
}

// heatMaps counts the samples per thread per cell, offsets from the
// profile's first sample as --from and --to take them.
func (s *Server) heatMaps() TimeData {
	p := s.p
	var last uint64
	for _, smp := range p.Samples {
		last = max(last, smp.Time)
	}
	secs := 1
	if last > p.StartTime {
		secs = int((last-p.StartTime)/uint64(time.Second)) + 1
	}
	grid := func() [][]int {
		g := make([][]int, secs)
		for i := range g {
			g[i] = make([]int, rowsPerSecond)
		}
		return g
	}
	all := HeatMap{Name: "all threads", Cells: grid()}
	per := map[uint32]*HeatMap{}
	for _, smp := range p.Samples {
		if smp.Time < p.StartTime {
			continue
		}
		d := smp.Time - p.StartTime
		c, r := int(d/uint64(time.Second)), int(d%uint64(time.Second)*rowsPerSecond/uint64(time.Second))
		n := smp.N()
		all.Cells[c][r] += n
		all.Samples += n
		h := per[smp.TID]
		if h == nil {
			h = &HeatMap{TID: smp.TID, Name: p.ThreadNameAt(smp.TID, smp.Time), Cells: grid()}
			per[smp.TID] = h
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
	out := TimeData{Rows: rowsPerSecond, Seconds: secs, Samples: all.Samples}
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
