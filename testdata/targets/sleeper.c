/* A long-running process to attach to: spins in busy() in rounds until it
 * has used argv[1] seconds of CPU time (default 3), then exits with code
 * argv[2] (default 0). CPU time, not wall time: on a busy machine it does the
 * same work, only later, so a test can wait for it to use some CPU time. */
#include <stdlib.h>
#include <time.h>

volatile unsigned long sink;

__attribute__((noinline)) void busy(void) { for (long i = 0; i < 1000000; i++) sink += i; }

int main(int argc, char **argv) {
	double secs = argc > 1 ? atof(argv[1]) : 3;
	int code = argc > 2 ? atoi(argv[2]) : 0;
	struct timespec t0, t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	do {
		busy();
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	return code;
}
