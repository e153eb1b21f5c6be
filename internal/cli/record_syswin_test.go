package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/culprit-dev/culprit/internal/recorder"
)

// --syscall-windows takes ON/PERIOD, two durations with ON above 0 (at
// least 1ms) and below PERIOD, auto or off; anything else is refused with a message
// that says what is expected.
func TestParseWindows(t *testing.T) {
	on, period, above, err := parseWindows("10ms/100ms")
	if err != nil || on != 10*time.Millisecond || period != 100*time.Millisecond || above != 0 {
		t.Errorf("10ms/100ms: %v %v %v %v", on, period, above, err)
	}
	on, period, above, err = parseWindows("auto")
	if err != nil || on != recorder.AutoWindowOn || period != recorder.AutoWindowPeriod || above != recorder.AutoWindowAbove {
		t.Errorf("auto: %v %v %v %v", on, period, above, err)
	}
	if on, period, above, err = parseWindows("off"); err != nil || on != 0 || period != 0 || above != 0 {
		t.Errorf("off: %v %v %v %v", on, period, above, err)
	}
	for in, want := range map[string]string{
		"10ms":      "ON/PERIOD",
		"0/100ms":   "above 0",
		"10ms/5ms":  "below PERIOD",
		"10ms/10ms": "below PERIOD",
		"abc/1s":    "not a duration",
		"1s/xyz":    "not a duration",
		"-1ms/10ms": "above 0",
		"500us/1ms": "at least 1ms",
	} {
		if _, _, _, err := parseWindows(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error saying %q", in, err, want)
		}
	}
}
