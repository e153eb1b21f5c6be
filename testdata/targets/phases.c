/* Two phases of CPU time: phase_one for argv[1] CPU seconds (default 0.6),
 * then phase_two for argv[2] seconds (default as long), so time windows can
 * select one of them and two runs can differ in one phase. */
#include <stdlib.h>
#include <time.h>

volatile unsigned long sink;

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

__attribute__((noinline)) void phase_one(double secs) {
	double end = now() + secs;
	while (now() < end)
		for (int i = 0; i < 10000; i++) sink += i;
}

__attribute__((noinline)) void phase_two(double secs) {
	double end = now() + secs;
	while (now() < end)
		for (int i = 0; i < 10000; i++) sink ^= i;
}

int main(int argc, char **argv) {
	double secs = argc > 1 ? atof(argv[1]) : 0.6;
	phase_one(secs);
	phase_two(argc > 2 ? atof(argv[2]) : secs);
	return 0;
}
