/* spin SECS OUT: spins on the time-stamp counter for SECS seconds and writes
 * every interruption longer than 0.4 µs (an interval in which the loop did
 * not run: an interrupt, a VM exit, a preemption) to OUT as two
 * CLOCK_MONOTONIC times in ns, its start and end. bench/samplegaps (main.go) matches
 * them with the sample times of a recording: the interruption that holds a
 * sample is what that sample cost the sampled thread. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <x86intrin.h>

#define MAXGAPS (1 << 22)
static uint64_t gs[MAXGAPS], ge[MAXGAPS];

static uint64_t mono(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000ull + t.tv_nsec;
}

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: spin SECS OUT\n");
		return 2;
	}
	double secs = atof(argv[1]);
	/* the counter's rate, over 20 ms */
	uint64_t m0 = mono(), c0 = __rdtsc();
	while (mono() - m0 < 20000000)
		;
	double perns = (double)(__rdtsc() - c0) / (double)(mono() - m0);
	uint64_t thresh = (uint64_t)(400 * perns);
	size_t n = 0;
	m0 = mono();
	c0 = __rdtsc();
	uint64_t end = c0 + (uint64_t)(secs * 1e9 * perns), prev = c0;
	for (;;) {
		uint64_t t = __rdtsc();
		if (t - prev > thresh && n < MAXGAPS) {
			gs[n] = prev;
			ge[n] = t;
			n++;
		}
		prev = t;
		if (t > end)
			break;
	}
	uint64_t c1 = __rdtsc(), m1 = mono();
	double k = (double)(m1 - m0) / (double)(c1 - c0);
	FILE *f = fopen(argv[2], "w");
	if (!f) {
		perror(argv[2]);
		return 1;
	}
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%.0f %.0f\n", m0 + (gs[i] - c0) * k, m0 + (ge[i] - c0) * k);
	return fclose(f) != 0;
}
