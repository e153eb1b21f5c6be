package recorder

import (
	"os"
	"testing"
)

// A CPU's ring holds at least ringSeconds of the largest samples at the
// rate asked for, up to the 16 MiB cap, and is a power of two of pages.
func TestRingPages(t *testing.T) {
	ps := os.Getpagesize()
	for _, c := range []struct{ freq, stack int }{
		{999, 1024}, {999, 4096}, {999, 16384}, {99, 4096}, {4999, 1024}, {1, 0}, {100000, 65528},
	} {
		p := ringPages(c.freq, c.stack)
		if p&(p-1) != 0 || p < 64 || p > 4096 {
			t.Errorf("%d Hz, %d bytes: %d pages", c.freq, c.stack, p)
		}
		held := float64(p*ps) / float64(c.freq*(c.stack+sampleOverhead))
		if p < 4096 && held < ringSeconds {
			t.Errorf("%d Hz, %d bytes: %d pages hold %.2fs of samples, want %.1fs", c.freq, c.stack, p, held, ringSeconds)
		}
		if p > 64 && held >= 2*ringSeconds {
			t.Errorf("%d Hz, %d bytes: %d pages hold %.2fs of samples, twice what is needed", c.freq, c.stack, p, held)
		}
	}
}
