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

int main(int argc, char **argv) {
	int rounds = argc > 1 ? atoi(argv[1]) : 20;
	for (int r = 0; r < rounds; r++) {
		dispatch_1();
		dispatch_2();
	}
	return argc > 2 ? atoi(argv[2]) : 0;
}
