package view

import (
	"net/http/httptest"
	"testing"

	pprof "github.com/google/pprof/profile"
)

// Two addresses in one function at two lines, and a caller: merged to
// functions, the two stacks become one with their values summed; merged to
// lines they stay two. Off-CPU profiles have no period type and merge too.
func TestMerged(t *testing.T) {
	for _, period := range []*pprof.ValueType{{Type: "cpu", Unit: "nanoseconds"}, nil} {
		m := &pprof.Mapping{ID: 1, Start: 0x1000, Limit: 0x2000, File: "/bin/x", HasFunctions: true, HasLineNumbers: true}
		leaf := &pprof.Function{ID: 1, Name: "leaf", Filename: "x.c"}
		caller := &pprof.Function{ID: 2, Name: "caller", Filename: "x.c"}
		locs := []*pprof.Location{
			{ID: 1, Mapping: m, Address: 0x1010, Line: []pprof.Line{{Function: leaf, Line: 10}}},
			{ID: 2, Mapping: m, Address: 0x1020, Line: []pprof.Line{{Function: leaf, Line: 11}}},
			{ID: 3, Mapping: m, Address: 0x1100, Line: []pprof.Line{{Function: caller, Line: 20}}},
		}
		p := &pprof.Profile{
			SampleType: []*pprof.ValueType{{Type: "samples", Unit: "count"}},
			PeriodType: period,
			Mapping:    []*pprof.Mapping{m},
			Function:   []*pprof.Function{leaf, caller},
			Location:   locs,
			Sample: []*pprof.Sample{
				{Location: []*pprof.Location{locs[0], locs[2]}, Value: []int64{3}, NumLabel: map[string][]int64{"tid": {7}}},
				{Location: []*pprof.Location{locs[1], locs[2]}, Value: []int64{4}, NumLabel: map[string][]int64{"tid": {7}}},
			},
		}
		fn := merged(p, byFunction)
		if len(fn.Sample) != 1 || fn.Sample[0].Value[0] != 7 {
			t.Errorf("period %v: merged to functions: %d samples, want 1 of 7", period, len(fn.Sample))
		}
		if (fn.PeriodType == nil) != (period == nil) {
			t.Errorf("period %v: merged profile's period type %v", period, fn.PeriodType)
		}
		if ln := merged(p, byLine); len(ln.Sample) != 2 {
			t.Errorf("period %v: merged to lines: %d samples, want 2", period, len(ln.Sample))
		}
		if len(p.Sample) != 2 || p.Sample[0].Location[0].Address != 0x1010 {
			t.Errorf("period %v: merged changed its input", period)
		}
	}
}

func TestGrainOf(t *testing.T) {
	for url, want := range map[string]grain{
		"/flamegraph":           byFunction,
		"/top":                  byFunction,
		"/graph?f=x":            byFunction,
		"/top?g=files":          byFunction,
		"/peek?f=x":             byLine,
		"/top?g=lines":          byLine,
		"/source?f=x":           byAddress,
		"/disasm?f=x":           byAddress,
		"/download":             byAddress,
		"/graph?g=addresses":    byAddress,
		"/flamegraph?noinlines": byAddress,
	} {
		if got := grainOf(httptest.NewRequest("GET", url, nil)); got != want {
			t.Errorf("%s: grain %d, want %d", url, got, want)
		}
	}
}
