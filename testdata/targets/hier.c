/* PCT's hierarchical test: worker(n) spins n times; dispatch_1 calls it with
 * 10M, dispatch_2 with 20M, so worker <- dispatch_2 <- main holds 2/3 of the
 * time. ROUNDS (argv[1], default 20) repeats the pair. */
#include <stdlib.h>

volatile unsigned long sink;

__attribute__((noinline)) void worker(long n) {
	for (long i = 0; i < n; i++)
		sink += i ^ (sink >> 3);
}

__attribute__((noinline)) void dispatch_1(void) { worker(10000000); sink++; }
__attribute__((noinline)) void dispatch_2(void) { worker(20000000); sink++; }

/* argv[2] is the exit code. With a third argument, the thread's CPU time
 * in each dispatch is printed to stderr at the end ("cpu dispatch_1 NS
 * dispatch_2 NS"): a busy machine makes the same loop cost more CPU time
 * in some rounds than in others, so the split is the program's to tell.
 * (Added below the functions: tests name the lines above.) */
#include <stdio.h>
#include <time.h>

static long cpu_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

int main(int argc, char **argv) {
	int rounds = argc > 1 ? atoi(argv[1]) : 20;
	long in[2] = {0, 0};
	for (int r = 0; r < rounds; r++) {
		long t0 = cpu_ns();
		dispatch_1();
		long t1 = cpu_ns();
		dispatch_2();
		in[0] += t1 - t0;
		in[1] += cpu_ns() - t1;
	}
	if (argc > 3)
		fprintf(stderr, "cpu dispatch_1 %ld dispatch_2 %ld\n", in[0], in[1]);
	return argc > 2 ? atoi(argv[2]) : 0;
}
