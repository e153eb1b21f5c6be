package render

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/culprit-dev/culprit/internal/analysis/introperf"
	"github.com/culprit-dev/culprit/internal/profile"
)

// Every latency and contexts output copes with odd profiles: out-of-range
// stack indexes, empty stacks, one event, equal times.
func TestIntroPerfOutputsOddProfiles(t *testing.T) {
	p := &profile.Profile{
		Frames:  []profile.Frame{{Function: "main", Object: "/bin/x"}, {Object: "/bin/x", Offset: 0x10}},
		Stacks:  [][]int32{{}, {1, 0}},
		Samples: []profile.Sample{{Time: 5, Stack: -1}, {Time: 5, Stack: 0}, {Time: 5, Stack: 1}, {Time: 5, Stack: 99}, {Time: 5, Stack: 1}},
	}
	r := introperf.Analyze(p, introperf.Options{KeepInstances: true})
	if len(r.Instances) != 2 {
		t.Fatalf("%d instances", len(r.Instances))
	}
	cmp := introperf.Comparison{Base: r, Buggy: r}
	var buf bytes.Buffer
	for _, f := range []func() error{
		func() error { return LatencyText(&buf, r, LatencyView{Mode: introperf.Conservative}) },
		func() error { return LatencyJSON(&buf, r, LatencyView{}) },
		func() error { return LatencyChrome(&buf, p, r, introperf.Aggressive) },
		func() error { return ContextsText(&buf, cmp) },
		func() error { return ContextsJSON(&buf, cmp) },
		func() error { return ContextsDOT(&buf, cmp) },
		func() error { return ContextsHTML(&buf, cmp) },
	} {
		buf.Reset()
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
}

// Two threads interleaved: the JSON lists every instance with its thread.
func TestLatencyJSONInstances(t *testing.T) {
	p := &profile.Profile{
		Frames: []profile.Frame{{Function: "a", Object: "/bin/prog"}, {Function: "main", Object: "/bin/prog"},
			{Function: "b", Object: "/bin/prog"}, {Function: "start", Object: "/bin/prog"}, {Function: "c", Object: "/bin/prog"}},
		Stacks: [][]int32{{0, 1}, {2, 3}, {4, 3}, {1}},
		Samples: []profile.Sample{{Time: 10, PID: 1, TID: 1, Stack: 0}, {Time: 11, PID: 1, TID: 2, Stack: 1},
			{Time: 20, PID: 1, TID: 1, Stack: 0}, {Time: 21, PID: 1, TID: 2, Stack: 2}, {Time: 30, PID: 1, TID: 1, Stack: 3}},
		StartTime: 10,
	}
	r := introperf.Analyze(p, introperf.Options{KeepInstances: true})
	var buf bytes.Buffer
	if err := LatencyJSON(&buf, r, LatencyView{Mode: introperf.Aggressive}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Instances []struct {
			Function string `json:"function"`
			TID      uint32 `json:"tid"`
		} `json:"instances"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil || len(doc.Instances) != 5 {
		t.Fatalf("json: %v %d", err, len(doc.Instances))
	}
	tids := map[uint32]int{}
	for _, in := range doc.Instances {
		tids[in.TID]++
	}
	if tids[1] != 2 || tids[2] != 3 {
		t.Errorf("instances per thread %v, want 2 of tid 1 (main, a) and 3 of tid 2 (start, b, c)", tids)
	}
}
