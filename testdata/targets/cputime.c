/* cputime [ROUNDS]: each round, outer() calls nap() (sleeps 20 ms) and
   work() (spins for about 20 ms of CPU time). nap and work each print the
   CPU time their thread used inside them (CLOCK_THREAD_CPUTIME_ID) and
   their wall time, in ns: "nap CPU WALL", "work CPU WALL". */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static long clk(clockid_t c) {
	struct timespec ts;
	clock_gettime(c, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

__attribute__((noinline)) void nap(void) {
	long c0 = clk(CLOCK_THREAD_CPUTIME_ID), w0 = clk(CLOCK_MONOTONIC);
	struct timespec ts = {0, 20000000};
	nanosleep(&ts, 0);
	printf("nap %ld %ld\n", clk(CLOCK_THREAD_CPUTIME_ID) - c0, clk(CLOCK_MONOTONIC) - w0);
}

__attribute__((noinline)) void work(void) {
	long c0 = clk(CLOCK_THREAD_CPUTIME_ID), w0 = clk(CLOCK_MONOTONIC);
	while (clk(CLOCK_THREAD_CPUTIME_ID) - c0 < 20000000)
		for (int i = 0; i < 1000; i++) sink += i;
	printf("work %ld %ld\n", clk(CLOCK_THREAD_CPUTIME_ID) - c0, clk(CLOCK_MONOTONIC) - w0);
}

__attribute__((noinline)) void outer(void) {
	nap();
	work();
}

int main(int argc, char **argv) {
	int rounds = argc > 1 ? atoi(argv[1]) : 5;
	setvbuf(stdout, 0, _IOLBF, 0);
	for (int r = 0; r < rounds; r++) outer();
	return 0;
}
