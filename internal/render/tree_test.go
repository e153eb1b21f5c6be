package render

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestTreeText(t *testing.T) {
	p := testProfile()
	var buf bytes.Buffer
	if err := TreeText(&buf, p.CallTree(true), p.Lost, p.Throttled, 0.15); err != nil {
		t.Fatal(err)
	}
	// Two processes: they head the tree. Under 15%: the one-sample frames,
	// the other process, the empty stack.
	out := buf.String()
	for _, line := range []string{
		" total%   self%  function\n  90.0%    0.0%  app\n",
		"  80.0%    0.0%  └─ main\n",
		"  60.0%    0.0%     ├─ dispatch_2\n",
		"  60.0%   40.0%     │  └─ worker\n",
		"  20.0%    0.0%     └─ libc.so.6+0x1234 [libc.so.6]\n",
		"  20.0%    0.0%        └─ entry_SYSCALL_64 [kernel.kallsyms]\n",
		"  20.0%   20.0%           └─ ksys_write\n(7 frames under 15.0% not shown",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("tree lacks %q:\n%s", line, out)
		}
	}
	if strings.Contains(out, "helper") || strings.Contains(out, "other") || strings.Contains(out, "[unknown]") {
		t.Errorf("small frames shown or not counted:\n%s", out)
	}
}

func TestTreeJSON(t *testing.T) {
	p := testProfile()
	var buf bytes.Buffer
	if err := TreeJSON(&buf, p.CallTree(true), 0.15, JSONExtra{Lost: 2}); err != nil {
		t.Fatal(err)
	}
	type node struct {
		Name         string  `json:"name"`
		Process      bool    `json:"process"`
		Kernel       bool    `json:"kernel"`
		TotalSamples int     `json:"total_samples"`
		SelfSamples  int     `json:"self_samples"`
		Total        float64 `json:"total"`
		Children     []node  `json:"children"`
	}
	var j struct {
		Samples  int     `json:"samples"`
		Lost     uint64  `json:"lost"`
		MinShare float64 `json:"min_share"`
		Hidden   int     `json:"hidden"`
		Tree     []node  `json:"tree"`
	}
	if err := json.Unmarshal(buf.Bytes(), &j); err != nil {
		t.Fatal(err)
	}
	// As TreeText: app on top (other, at 10%, hidden with its 3 frames),
	// main under it, dispatch_2 → worker (4 self) and the libc → kernel path.
	if j.Samples != 10 || j.Lost != 2 || j.MinShare != 0.15 || j.Hidden != 7 || len(j.Tree) != 1 || !j.Tree[0].Process || j.Tree[0].Name != "app" {
		t.Fatalf("tree JSON: %s", buf.String())
	}
	m := j.Tree[0].Children[0]
	if m.Name != "main" || m.TotalSamples != 8 || len(m.Children) != 2 || m.Children[0].Children[0].Name != "worker" ||
		m.Children[0].Children[0].SelfSamples != 4 || m.Children[0].Children[0].Total != 0.6 || !m.Children[1].Children[0].Kernel {
		t.Errorf("main's subtree: %+v", m)
	}
}
