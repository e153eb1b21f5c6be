/* Static variables declared inside functions, whose symbols the compiler
 * names "v.N": count_a and count_b each keep a static "seen", plain keeps
 * none, for schema's Reads.
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

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000, r = 0;
	for (long i = 0; i < n; i++)
		r += count_a(i) + count_b(i) + plain(i);
	printf("%ld\n", r);
	return 0;
}
