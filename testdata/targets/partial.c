/* GCC partial inlining (-O2, -fpartial-inlining): fill's cheap head (a
 * cache test) is inlined into its callers and its loops are outlined into
 * fill.part.0, which the inlined heads call. walk is split the same way and
 * recurses: each of its levels is one call of walk, whatever part of it the
 * recursive call reaches. */
#include <stdlib.h>

struct buf {
	int ready;
	long n;
	long sum;
};

volatile long sink;

void fill(struct buf *b) {
	if (b->ready)
		return;
	long s = 0;
	for (long i = 0; i < b->n; i++)
		s += (i * i) ^ sink;
	for (long i = 0; i < b->n / 4; i++)
		s -= (i << 3) ^ sink;
	b->sum = s;
	b->ready = sink & 1;
}

/* walk(d, n) recurses to depth d (walk called d+1 times, the innermost
 * with d == 0 returning at once) and spins n at each level on the way up. */
long walk(long d, long n) {
	if (d <= 0)
		return 0;
	long s = walk(d - 1, n);
	for (long i = 0; i < n; i++)
		s += (i * 7) ^ sink;
	for (long i = 0; i < n / 8; i++)
		s ^= (i << 2) + sink;
	return s;
}

__attribute__((noinline)) static void step(struct buf *b) { fill(b); sink += b->sum; }

int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 2000;
	struct buf b = {0, 200000, 0};
	for (long k = 0; k < n; k++) {
		b.ready = 0;
		step(&b);
		fill(&b);
		sink += walk(3, 60000);
	}
	return 0;
}
