package cli

import (
	"strings"
	"testing"
)

// A pool too small to see a function at the line says so; one large
// enough says nothing.
func TestFewSamples(t *testing.T) {
	if got := fewSamples(89, 1); !strings.Contains(got, "0.9 samples") || !strings.Contains(got, "none 41% of the time") {
		t.Errorf("89 samples: %q", got)
	}
	if got := fewSamples(300, 1); got != "" {
		t.Errorf("300 samples: %q, want nothing", got)
	}
}
