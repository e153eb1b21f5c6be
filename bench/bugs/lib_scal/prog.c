/* A metrics aggregator: parses text lines "name value", keeps a histogram
 * per metric in libhist, prints quantiles.
 *
 * The buggy input has latencies with a finer resolution: hundreds of
 * distinct values, and libhist's hist_add scans its bins linearly.
 *
 *   prog normal|buggy
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hist.h"

#define noinline __attribute__((noinline))
#define LINES 3000000

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

noinline int cmp_u32(uint32_t a, uint32_t b) { return a < b ? -1 : a > b; }

noinline int format_line(char *buf, long i, uint32_t resolution)
{
	uint32_t v = (uint32_t)(next_rand() % 4000000);
	v -= v % resolution;
	return snprintf(buf, 64, "latency.%ld %u\n", i % 4, v);
}

noinline uint32_t parse_line(const char *s, int *metric)
{
	while (*s && *s != '.')
		s++;
	*metric = (int)strtol(s + 1, (char **)&s, 10);
	return (uint32_t)strtoul(s, NULL, 10);
}

noinline uint64_t aggregate(struct hist **h, uint32_t resolution)
{
	char line[64];
	for (long i = 0; i < LINES; i++) {
		format_line(line, i, resolution);
		int m;
		uint32_t v = parse_line(line, &m);
		hist_add(h[m & 3], v);
	}
	uint64_t s = 0;
	for (int m = 0; m < 4; m++)
		s += hist_quantile(h[m], 0.99) + (uint64_t)hist_distinct(h[m]);
	return s;
}

int main(int argc, char **argv)
{
	uint32_t resolution = argc > 1 && strcmp(argv[1], "buggy") == 0 ? 8000 : 250000;
	struct hist *h[4];
	for (int i = 0; i < 4; i++)
		h[i] = hist_new(cmp_u32);
	printf("%llx\n", (unsigned long long)aggregate(h, resolution));
	return 0;
}
