package vprof

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/profile"
)

// Localisation in basic blocks: the BlockFunc given to SetBlocks is asked
// for each distinct frame where buggy values were read, and the blocks of
// the samples outside the normal range are counted like the lines.
func TestBlocks(t *testing.T) {
	a, err := New(paperOptions())
	if err != nil {
		t.Fatal(err)
	}
	asked := map[uint64]bool{}
	a.SetBlocks(func(object string, offset uint64) (string, uint64, uint64, bool) {
		asked[offset] = true
		if !strings.HasPrefix(object, "/") {
			t.Errorf("asked for object %q", object)
		}
		start := offset &^ 0xf // 16-byte "blocks"
		return "blk", start, start + 16, true
	})
	if err := a.AddNormal(fig6a(t, false), Run{Path: "n"}); err != nil {
		t.Fatal(err)
	}
	if err := a.AddBuggy(fig6a(t, true), Run{Path: "b"}); err != nil {
		t.Fatal(err)
	}
	res, err := a.Result()
	if err != nil {
		t.Fatal(err)
	}
	root := res.fn(t, "dispatch_2")
	if len(asked) == 0 || len(root.Blocks) == 0 {
		t.Fatalf("blocks %+v (asked %d)", root.Blocks, len(asked))
	}
	total := 0
	for i, b := range root.Blocks {
		total += b.Samples
		if b.Function != "blk" || b.End != b.Start+16 || !strings.HasPrefix(b.Object, "/") {
			t.Errorf("block %+v", b)
		}
		if i > 0 && b.Samples > root.Blocks[i-1].Samples {
			t.Errorf("blocks not ordered by samples: %+v", root.Blocks)
		}
	}
	if total != 3100 {
		t.Errorf("blocks hold %d samples, want the 3100 outside the normal range", total)
	}
	// Functions whose variable looks normal have no blocks.
	if w := res.fn(t, "worker"); len(w.Blocks) != 0 {
		t.Errorf("worker blocks %+v", w.Blocks)
	}

	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Functions []struct {
			Name   string `json:"name"`
			Blocks []struct {
				Object, Function, Start, End string
				Samples                      int
			} `json:"blocks"`
		} `json:"functions"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, f := range doc.Functions {
		if f.Name == "dispatch_2" && (len(f.Blocks) == 0 || !strings.HasPrefix(f.Blocks[0].Start, "0x") || f.Blocks[0].Function != "blk") {
			t.Errorf("dispatch_2 JSON blocks %+v", f.Blocks)
		}
	}
	var back Block
	if err := json.Unmarshal([]byte(`{"start":"0x401136","end":4198730}`), &back); err != nil || back.Start != 0x401136 || back.End != 4198730 {
		t.Errorf("Address round trip: %+v %v", back, err)
	}
	// Without a BlockFunc: no blocks, empty lists.
	plain := analyze(t, []*profile.Profile{fig6a(t, false)}, []*profile.Profile{fig6a(t, true)})
	if b := plain.fn(t, "dispatch_2").Blocks; b == nil || len(b) != 0 {
		t.Errorf("blocks without a BlockFunc: %+v", b)
	}
}
