/* A deep call chain for unwinder tests and benchmarks: main -> level_1 ->
 * ... -> level_8 -> spin, where level_4 uses a variable-length array (so at
 * -O2 it keeps a frame pointer and its CFA is rbp-based) and the others are
 * frameless at -O2. ROUNDS (argv[1], default 1000) repeats the descent. */
#include <stdlib.h>

volatile unsigned long sink;

__attribute__((noinline)) void spin(long n) {
	for (long i = 0; i < n; i++)
		sink += i ^ (sink >> 3);
}

#define LEVEL(name, next)                                                      \
	__attribute__((noinline)) void name(long n) {                          \
		unsigned long a = sink, b = sink * 3, c = sink ^ 7;            \
		next(n);                                                       \
		sink += a + b + c;                                             \
	}

LEVEL(level_8, spin)
LEVEL(level_7, level_8)
LEVEL(level_6, level_7)
LEVEL(level_5, level_6)

__attribute__((noinline)) void level_4(long n) {
	volatile char vla[16 + (n & 15)];
	vla[0] = 1;
	level_5(n);
	sink += vla[0];
}

LEVEL(level_3, level_4)
LEVEL(level_2, level_3)
LEVEL(level_1, level_2)

int main(int argc, char **argv) {
	long rounds = argc > 1 ? atol(argv[1]) : 1000;
	for (long r = 0; r < rounds; r++)
		level_1(10000000);
	return 0;
}
