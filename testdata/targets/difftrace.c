/* Two builds of one program for diff tracing: built as is (the older
 * build) and with -DNEWER (the newer one). Between them, body gains a
 * branch (its control-flow graph changes), tweak changes a constant (an
 * operand: only strict comparison sees it), old_name is renamed new_name
 * (same code, callers and callees), added is new, and same does not
 * change. It prints "count FUNC N" for each function it calls.
 * Usage: difftrace N
 */
#include <stdio.h>
#include <stdlib.h>

#define REAL_CALLS __attribute__((noipa, noinline))

static volatile long sink;

REAL_CALLS long same(long a) { return a * 3 + 1; }

REAL_CALLS long tweak(long a) {
#ifdef NEWER
	return a + 9;
#else
	return a + 7;
#endif
}

REAL_CALLS long body(long a) {
#ifdef NEWER
	if (a & 1)
		sink++;
#endif
	return a ^ 5;
}

#ifdef NEWER
REAL_CALLS long new_name(long a) { return same(a) + 2; }
#define RENAMED new_name
REAL_CALLS long added(long a) { return a - 1; }
#else
REAL_CALLS long old_name(long a) { return same(a) + 2; }
#define RENAMED old_name
#endif

int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 10;
	for (long i = 0; i < n; i++) {
		sink += RENAMED(i) + tweak(i) + body(i);
#ifdef NEWER
		sink += added(i);
#endif
	}
	printf("count same %ld\ncount tweak %ld\ncount body %ld\ncount renamed %ld\n", n, n, n, n);
#ifdef NEWER
	printf("count added %ld\n", n);
#endif
	return 0;
}
