/* Two runs of one program that execute different code: both run steady();
 * only "buggy" runs also run rebuild(), whose variables are then sampled in
 * the buggy run alone. Recorded with the same schema, diagnose must take
 * them for code that did not run in the normal run, not for a different
 * schema.
 *
 *   vprof_cold normal|buggy */
#include <stdio.h>
#include <string.h>

#define noinline __attribute__((noinline))

volatile unsigned long sink;

noinline unsigned long steady(long rounds)
{
	unsigned long acc = 0;
	for (long r = 0; r < rounds; r++)
		for (long i = 0; i < 100000; i++)
			acc += (unsigned long)i * 2654435761u ^ (acc >> 7);
	return acc;
}

noinline unsigned long rebuild(long buckets)
{
	unsigned long moved = 0;
	for (long b = 0; b < buckets; b++) {
		long chain = b % 97 + 1;
		for (long k = 0; k < chain * 1000; k++)
			moved += (unsigned long)k ^ (moved << 1);
	}
	return moved;
}

int main(int argc, char **argv)
{
	int buggy = argc > 1 && strcmp(argv[1], "buggy") == 0;
	unsigned long r = steady(3000);
	if (buggy)
		r += rebuild(3000);
	sink = r;
	printf("%lu\n", r);
	return 0;
}
