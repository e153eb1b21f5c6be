/* A long-running process to attach to: spins in busy() in rounds, for
 * argv[1] seconds (default 3), then exits with code argv[2] (default 0). */
#include <stdlib.h>
#include <time.h>

volatile unsigned long sink;

__attribute__((noinline)) void busy(void) { for (long i = 0; i < 1000000; i++) sink += i; }

int main(int argc, char **argv) {
	double secs = argc > 1 ? atof(argv[1]) : 3;
	int code = argc > 2 ? atoi(argv[2]) : 0;
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		busy();
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	return code;
}
