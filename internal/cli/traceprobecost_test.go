package cli

import (
	"strings"
	"testing"

	"github.com/culprit-dev/culprit/internal/analysis/trace"
)

func TestProbeCost(t *testing.T) {
	st := map[string]trace.FuncStats{"leaf": {Count: 300000}, "main": {Count: 1}}
	if w := probeCost(40, 400, st); !strings.Contains(w, "at least 11× slower") || !strings.Contains(w, "leaf (300000 calls), main (1 calls)") {
		t.Errorf("400 samples in traps against 40: %q", w)
	}
	if w := probeCost(100, 60, st); w != "" {
		t.Errorf("traps under the program's own time: %q", w)
	}
	if w := probeCost(2, 10, st); w != "" {
		t.Errorf("12 samples are too few to tell: %q", w)
	}
}
