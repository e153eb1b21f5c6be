/* One function, spin(level, secs), run for argv[1] CPU seconds (default 2)
 * with level 3, then as long with level 250: the values of level sampled
 * with the CPU samples (culprit record --values) are 3 and 250 alone, so
 * the time view's lane of level runs from 3 to 250. Built -O0, so that
 * level is in memory at every PC of spin. */
#include <stdlib.h>
#include <time.h>

volatile unsigned long sink;

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

__attribute__((noinline)) void spin(int level, double secs) {
	double end = now() + secs;
	while (now() < end)
		for (int i = 0; i < 10000; i++)
			if (level > 100) /* level in a condition: culprit schema samples it */
				sink ^= i;
			else
				sink += i;
}

int main(int argc, char **argv) {
	double secs = argc > 1 ? atof(argv[1]) : 2;
	spin(3, secs);
	spin(250, secs);
	return 0;
}
