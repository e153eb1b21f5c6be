/* Which code reads a global, for schema's Reads. Static variables
 * declared inside functions, whose symbols the compiler names "v.N":
 * count_a and count_b each keep a static "seen", plain keeps none.
 * Members of a global struct: read_a reads opts.a only, share passes
 * &opts on (every member reachable), main reads opts.b. A function's
 * static struct: tally_a keeps "tally" and reads tally.a only. For
 * Writes: count_a, count_b and tally_a store into their statics, per
 * divides by opts.b (a memory operand it only reads), read_a and main
 * only read.
 *
 *   statics [n] */
#include <stdio.h>
#include <stdlib.h>

#define noinline __attribute__((noinline))

noinline long count_a(long x)
{
	static long seen;
	seen += x;
	return seen;
}

noinline long count_b(long x)
{
	static long seen;
	seen ^= x;
	return seen;
}

noinline long plain(long x) { return x * 3 + 1; }

struct options {
	long a, b;
} opts = {1, 2};

noinline long read_a(long x) { return x + opts.a; }

noinline long tally_a(long x)
{
	static struct options tally;
	tally.a += x;
	return tally.a;
}

noinline long per(long x) { return x / opts.b; }

noinline long sum(const struct options *o) { return o->a + o->b; }

noinline long share(long x) { return x * sum(&opts); }

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000, r = opts.b;
	for (long i = 0; i < n; i++)
		r += count_a(i) + count_b(i) + plain(i) + read_a(i) + share(i) + tally_a(i) + per(i);
	printf("%ld\n", r);
	return 0;
}
