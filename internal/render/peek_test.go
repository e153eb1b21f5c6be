package render

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/profile"
)

func TestPeekText(t *testing.T) {
	peeks := []profile.Peek{{Function: "worker", Object: "app", Self: 150, Total: 180,
		Callers: []profile.Edge{{Name: "dispatch_2", Object: "app", Samples: 120}, {Name: "dispatch_1", Object: "app", Samples: 60}},
		Callees: []profile.Edge{{Name: "memcpy", Object: "libc.so.6", Samples: 20}, {Name: "ksys_write", Object: "[kernel.kallsyms]", Samples: 10}}},
		{Function: "other", Object: "app", Total: 1}}
	var buf bytes.Buffer
	if err := PeekText(&buf, peeks, 200, 1); err != nil {
		t.Fatal(err)
	}
	want := `PEEK worker in app: total 90.0% (180), self 75.0% (150) of 200 samples
 samples    all%     fn%
     120   60.0%   66.7%  <- dispatch_2
      60   30.0%   33.3%  <- dispatch_1
     150   75.0%   83.3%  == worker (self)
      20   10.0%   11.1%  -> memcpy [libc.so.6]
      10    5.0%    5.6%  -> ksys_write [kernel.kallsyms]

(1 more functions match, not shown: raise --top or narrow --peek)
`
	if buf.String() != want {
		t.Errorf("peek text:\n%s\nwant:\n%s", buf.String(), want)
	}
	buf.Reset()
	if err := PeekJSON(&buf, peeks, 200, JSONExtra{Lost: 3}); err != nil {
		t.Fatal(err)
	}
	var j struct {
		Samples int    `json:"samples"`
		Lost    uint64 `json:"lost"`
		Peeks   []struct {
			Function string  `json:"function"`
			Total    float64 `json:"total"`
			Callers  []struct {
				Name    string  `json:"name"`
				Samples int     `json:"samples"`
				Share   float64 `json:"share"`
			} `json:"callers"`
			Callees []struct {
				Object string `json:"object"`
			} `json:"callees"`
		} `json:"peeks"`
	}
	if err := json.Unmarshal(buf.Bytes(), &j); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if j.Samples != 200 || j.Lost != 3 || len(j.Peeks) != 2 || j.Peeks[0].Total != 0.9 ||
		j.Peeks[0].Callers[0].Name != "dispatch_2" || j.Peeks[0].Callers[0].Share != 0.6 ||
		j.Peeks[0].Callees[1].Object != "[kernel.kallsyms]" || j.Peeks[1].Callers == nil {
		t.Errorf("peek JSON: %s", buf.String())
	}
	buf.Reset()
	if err := PeekText(&buf, nil, 0, 0); err != nil || !strings.HasPrefix(buf.String(), "no samples") {
		t.Errorf("empty peek: %v %q", err, buf.String())
	}
}
