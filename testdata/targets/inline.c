/* Inlined frames and a GCC clone: at -O2, square_sum is inlined into
 * compute, and scale is specialised into scale.constprop.0 (its factor is a
 * constant at every call site). */
#include <stdlib.h>

volatile long sink;

static inline long square_sum(long n) {
	long s = 0;
	for (long i = 0; i < n; i++)
		s += i * i ^ sink;
	return s;
}

__attribute__((noinline)) long compute(long n) { return square_sum(n) + 1; }

__attribute__((noinline)) static long scale(long n, long factor) {
	long s = 0;
	for (long i = 0; i < n; i++)
		s += (i ^ sink) * factor;
	return s;
}

int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 300000000;
	sink = compute(n);
	sink += scale(n, 3);
	sink += scale(n / 2, 3);
	return 0;
}
