package recorder

import (
	"os"
	"testing"
)

// A CPU's ring holds at least ringSeconds of the largest samples at the
// rate asked for, up to its cap, and is a power of two of pages. The cap
// is 16 MiB on many CPUs, and more on few, the rings of all CPUs together
// staying within ringBudget: 9999 Hz with 8 KiB stack copies keeps its half
// second on two CPUs.
func TestRingPages(t *testing.T) {
	ps := os.Getpagesize()
	for _, c := range []struct{ freq, stack, cpus int }{
		{999, 1024, 2}, {999, 4096, 2}, {999, 16384, 2}, {99, 4096, 2}, {4999, 1024, 2}, {1, 0, 2}, {100000, 65528, 2},
		{9999, 8192, 2}, {9999, 8192, 1}, {9999, 8192, 4}, {9999, 8192, 64}, {999, 16384, 64}, {100000, 65528, 64},
	} {
		p := ringPages(c.freq, c.stack, c.cpus)
		most := ringCap(c.cpus)
		if p&(p-1) != 0 || p < 64 || p > most {
			t.Errorf("%d Hz, %d bytes, %d CPUs: %d pages (at most %d)", c.freq, c.stack, c.cpus, p, most)
		}
		if most > 4096 && most*c.cpus*ps > ringBudget {
			t.Errorf("%d CPUs: rings of %d pages each exceed the budget of %d MiB", c.cpus, most, ringBudget>>20)
		}
		held := float64(p*ps) / float64(c.freq*(c.stack+sampleOverhead))
		if c.cpus <= 2 && c.freq <= 9999 && c.stack <= 8192 && held < ringSeconds {
			t.Errorf("%d Hz, %d bytes, %d CPUs: %d pages hold %.2fs of samples, want %.1fs", c.freq, c.stack, c.cpus, p, held, ringSeconds)
		}
		if p < most && held < ringSeconds {
			t.Errorf("%d Hz, %d bytes: %d pages hold %.2fs of samples, want %.1fs", c.freq, c.stack, p, held, ringSeconds)
		}
		if p > 64 && held >= 2*ringSeconds {
			t.Errorf("%d Hz, %d bytes: %d pages hold %.2fs of samples, twice what is needed", c.freq, c.stack, p, held)
		}
	}
}
