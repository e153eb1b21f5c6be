/* Thresholds that decide a call, for schema's GuardReads: sized calls
 * probe when a count is below the configuration's cfg_min_keys, the
 * global loaded for the comparison itself; logged reads the global
 * verbosity for its log line, then calls probe when a count exceeds a
 * limit that is no global. */
#include <stdio.h>

#define noinline __attribute__((noinline))

struct table {
	long nkeys, limit, hits;
};

long cfg_min_keys = 4096;
long verbosity = 1;

noinline void probe(struct table *t) { t->hits += t->nkeys; }

noinline void sized(struct table *t)
{
	if (t->nkeys < cfg_min_keys)
		probe(t);
}

noinline void logged(struct table *t)
{
	if (verbosity > 2)
		printf("table of %ld keys\n", t->nkeys);
	if (t->nkeys > t->limit)
		probe(t);
}

int main(int argc, char **argv)
{
	struct table t = {argc * 5000L, argc + 3, 0};
	for (long i = 0; i < 1000; i++) {
		t.nkeys = i * 7 + argc;
		sized(&t);
		logged(&t);
	}
	printf("%ld\n", t.hits + (long)argv[0][0]);
	return 0;
}
