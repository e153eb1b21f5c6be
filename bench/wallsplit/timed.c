/* The overhead workload (testdata/targets/hier.c, unchanged) with its own
 * clock: main's start and end (CLOCK_MONOTONIC, ms) are written to the file
 * named by $WALLSPLIT_OUT, so that bench/wallsplit.sh can tell the time spent
 * before main, in main and after main. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define main hier_main
#include "../../testdata/targets/hier.c"
#undef main

static double now_ms(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
	double t0 = now_ms();
	int r = hier_main(argc, argv);
	double t1 = now_ms();
	const char *out = getenv("WALLSPLIT_OUT");
	FILE *f = out ? fopen(out, "w") : NULL;
	if (f) {
		fprintf(f, "%.3f %.3f\n", t0, t1);
		fclose(f);
	}
	return r;
}
