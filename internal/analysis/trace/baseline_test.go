package trace

import (
	"reflect"
	"testing"
)

func TestDynamicBaseline(t *testing.T) {
	st := map[string]FuncStats{
		"hot":       {Count: 2000000, Median: 5000, IQR: 4000}, // over the hard limit
		"flat":      {Count: 20000, Median: 5000, IQR: 100},    // IQR under 10% of the median
		"tiny":      {Count: 20000, Median: 900, IQR: 800},     // median under the resolution
		"varied":    {Count: 20000, Median: 5000, IQR: 4000},   // kept
		"few":       {Count: 50, Median: 100, IQR: 0},          // under the soft threshold: kept
		"wrapper":   {Count: 300, Median: 1000, IQR: 500, Callees: map[string]uint64{"inner": 300}},
		"inner":     {Count: 300, Median: 950, IQR: 500},                                               // wrapped: 95% of its wrapper's median
		"recursive": {Count: 300, Median: 950, IQR: 500, Callees: map[string]uint64{"recursive": 299}}, // not its own wrapper
		"changed":   {Count: 2000000, Median: 5000, IQR: 4000},                                         // changed: never left out
	}
	got := DynamicBaseline(st, BaselineSoft, map[string]bool{"changed": true})
	want := []Excluded{{"flat", "constant"}, {"hot", "call_limit"}, {"inner", "wrapped"}, {"tiny", "constant"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("soft: %v, want %v", got, want)
	}
	// Strict: 1,000 calls are enough to be judged constant.
	st2 := map[string]FuncStats{"f": {Count: 5000, Median: 5000, IQR: 100}}
	if got := DynamicBaseline(st2, BaselineSoft, nil); len(got) != 0 {
		t.Errorf("soft, 5000 calls: %v", got)
	}
	if got := DynamicBaseline(st2, BaselineStrict, nil); len(got) != 1 {
		t.Errorf("strict, 5000 calls: %v", got)
	}
}

func TestQuantileAndCount(t *testing.T) {
	v := []uint64{1, 2, 3, 4, 5}
	if q := quantile(v, 0.25); q != 2 {
		t.Errorf("Q1 = %v", q)
	}
	if q := quantile(v, 0.5); q != 3 {
		t.Errorf("median = %v", q)
	}
	if q := quantile([]uint64{1, 2}, 0.5); q != 1.5 {
		t.Errorf("median of 1, 2 = %v", q)
	}
}

// main → a → b → c, main → c, a ↔ d (a cycle): levels are longest paths
// from main, the cycle broken at its lowest member.
func TestLevelsAndTrim(t *testing.T) {
	g := &CallGraph{Callees: map[string][]string{
		"main": {"a", "c"}, "a": {"b", "d"}, "b": {"c"}, "c": nil, "d": {"a"}, "orphan": {"c"},
	}}
	lv := g.Levels("main")
	want := map[string]int{"main": 0, "a": 1, "b": 2, "c": 3, "d": 2}
	if !reflect.DeepEqual(lv, want) {
		t.Errorf("levels %v, want %v", lv, want)
	}
	probed := map[string]bool{"main": true, "a": true, "b": true, "c": true, "d": true, "orphan": true}
	// Depth 3: keepTop = max(0, 2) = 2; with 6 probed functions (≤ 20)
	// leaves are kept; below level 2 levels are kept while fewer than 10.
	keep := g.Trim(probed, lv, 0.25)
	if !keep["main"] || !keep["a"] || !keep["b"] || !keep["d"] || !keep["c"] || keep["orphan"] {
		t.Errorf("trim kept %v", keep)
	}
}

// The budget keeps the protected functions and fills the rest by level,
// then by how many functions each reaches; unreached ones go first.
func TestBudget(t *testing.T) {
	g := &CallGraph{Callees: map[string][]string{
		"main": {"a", "x"}, "a": {"b", "c"}, "x": nil, "b": {"c"}, "c": nil, "orphan": {"c"},
	}}
	lv := g.Levels("main")
	probed := []string{"a", "b", "c", "main", "orphan", "x"}
	cases := []struct {
		n         int
		protected map[string]bool
		prefer    map[string]float64
		want      []string
	}{
		{6, nil, nil, nil},
		{3, nil, nil, []string{"b", "c", "orphan"}},                                   // main, then a (reaches 3) before x (reaches 1)
		{2, nil, nil, []string{"b", "c", "orphan", "x"}},                              // level 1 cut: a reaches more than x
		{3, map[string]bool{"c": true, "orphan": true}, nil, []string{"a", "b", "x"}}, // two protected leave room for main only
		{1, map[string]bool{"c": true, "b": true}, nil, []string{"a", "main", "orphan", "x"}},
		// Preferred functions come before the levels, the largest first.
		{3, map[string]bool{"main": true}, map[string]float64{"orphan": 0.5, "c": 0.9}, []string{"a", "b", "x"}},
		{2, map[string]bool{"main": true}, map[string]float64{"orphan": 0.5, "c": 0.9}, []string{"a", "b", "orphan", "x"}},
	}
	for _, c := range cases {
		got := g.Budget(probed, c.protected, c.prefer, lv, c.n)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("budget %d, protected %v: left out %v, want %v", c.n, c.protected, got, c.want)
		}
	}
}

func TestDynamicSampling(t *testing.T) {
	lv := map[string]int{"main": 0, "a": 1, "b": 3, "deep": 40}
	st := map[string]FuncStats{
		"a":   {SampledCount: 20, Sample: 100}, // the thesis's example: threshold 10 → 200
		"b":   {SampledCount: 10, Sample: 7},   // in the band: kept
		"few": {SampledCount: 2, Sample: 4},    // far under: 4/(10/2) = 0.8 → 1
	}
	got := DynamicSampling([]string{"main", "a", "b", "deep", "few", "gone"}, lv, st, Sampling{Threshold: 10, EpsRatio: 0.1, Step: 2, Max: 1 << 20})
	want := map[string]uint32{"main": 1, "a": 200, "b": 7, "deep": 1 << 20, "few": 1, "gone": 1}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%v, want %v", got, want)
	}
}

// main → a → b → c → d → e and a → x → y: levels 0..5, x 2, y 3; the
// bottom set is {e, y}. With keepTop 2 and chains of 2 steps (levels
// within ±1 of the bottom's): e and d go (c, on level 3, is 2 from e's),
// and y and x (a is above keepTop).
func TestPrune(t *testing.T) {
	g := &CallGraph{Callees: map[string][]string{
		"main": {"a"}, "a": {"b", "x"}, "b": {"c"}, "c": {"d"}, "d": {"e"}, "e": nil, "x": {"y"}, "y": nil,
	}}
	lv := g.Levels("main")
	probed := map[string]bool{}
	for f := range g.Callees {
		probed[f] = true
	}
	keep := g.prune(probed, lv, 2, 2)
	want := map[string]bool{"main": true, "a": true, "b": true, "c": true}
	if !reflect.DeepEqual(keep, want) {
		t.Errorf("pruning kept %v, want %v (levels %v)", keep, want, lv)
	}
	// Depth 5: chain max(0.5, 1) = 1, keepTop 2: a chain of one step
	// takes callers on the bottom's own level only (±0.5): none here.
	keep = g.Prune(probed, lv)
	want = map[string]bool{"main": true, "a": true, "b": true, "c": true, "d": true, "x": true}
	if !reflect.DeepEqual(keep, want) {
		t.Errorf("Prune kept %v, want %v", keep, want)
	}
}

// Hot: exclusive time scaled to the calls made; over the share of the
// total.
func TestHot(t *testing.T) {
	st := map[string]FuncStats{
		"big":     {SampledCount: 10, Count: 10, ExclTotal: 900},
		"sampled": {SampledCount: 10, Count: 100, ExclTotal: 10}, // ×10: 100
		"small":   {SampledCount: 5, Count: 5, ExclTotal: 5},
		"gone":    {},
	}
	if got := Hot(st, 0.01, "main"); !reflect.DeepEqual(got, map[string]bool{"big": true, "sampled": true}) {
		t.Errorf("hot %v", got)
	}
	// Against main's inclusive time: 1% of 100,000 is 1000.
	st["main"] = FuncStats{SampledCount: 1, Count: 1, Total: 100000, ExclTotal: 10}
	if got := Hot(st, 0.01, "main"); !reflect.DeepEqual(got, map[string]bool{}) {
		t.Errorf("hot against main %v", got)
	}
}
