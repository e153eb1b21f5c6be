package recorder

import (
	"testing"

	"github.com/culprit-dev/culprit/internal/testutil"
)

// The measurement takes samples of culprit's own thread and gives a cost
// for them: what it is depends on the machine (a hypervisor's interrupts
// are slow), so only that samples were taken and a figure came out is
// asserted.
func TestMeasureSampleCost(t *testing.T) {
	testutil.NeedRoot(t)
	c, err := MeasureSampleCost()
	if err != nil {
		t.Fatal(err)
	}
	// 4 phases of 10 ms of CPU time at one sample each 200 µs: 200.
	if c.Samples < 100 || c.Samples > 400 {
		t.Errorf("%d samples taken, want about 200", c.Samples)
	}
	t.Logf("%v a sample (%d samples)", c.PerSample, c.Samples)
}
