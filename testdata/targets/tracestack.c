// tracestack: traced calls nested five deep (outer, rec four times
// through recursion, work), with work spinning on the CPU, so that CPU
// samples taken beside a trace land inside them.
//
//   tracestack DEPTH SPINS CALLS
#include <stdio.h>
#include <stdlib.h>

volatile unsigned long sink;

__attribute__((noipa)) void work(long n) {
	for (long i = 0; i < n; i++)
		sink += i ^ (i >> 3);
}

__attribute__((noipa)) long rec(int d, long n) {
	if (d == 0) {
		work(n);
		return 1;
	}
	long r = rec(d - 1, n);
	sink += r;
	return r + 1;
}

__attribute__((noipa)) long outer(int d, long n) {
	long r = rec(d, n);
	sink += r;
	return r;
}

int main(int argc, char **argv) {
	if (argc != 4) {
		fprintf(stderr, "usage: tracestack DEPTH SPINS CALLS\n");
		return 2;
	}
	int d = atoi(argv[1]), k = atoi(argv[3]);
	long n = atol(argv[2]);
	for (int i = 0; i < k; i++)
		outer(d, n);
	printf("count work %d\n", k);
	printf("count rec %d\n", k * (d + 1));
	return 0;
}
