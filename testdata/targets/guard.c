/* Calls decided by a predicate's answer, for schema's Decider:
 * work is entered only where ready() said yes; always is called
 * unconditionally; mixed once under ready() and once without;
 * taken under ready() but its address is also in a table. decide calls
 * each in every iteration of its loop, fresh under an equality test and
 * over under a threshold. descend calls itself in every iteration of its
 * loop, through the clone GCC makes of it at -O2. */
#include <stdio.h>

#define noinline __attribute__((noinline))

struct state {
	long pending, limit, done;
};

noinline int ready(const struct state *s) { return s->pending >= s->limit; }

noinline void work(struct state *s)
{
	for (long i = 0; i < s->pending; i++)
		s->done += i ^ s->limit;
	s->pending = 0;
}

noinline void always(struct state *s) { s->done += s->pending; }

noinline void mixed(struct state *s) { s->done ^= s->pending; }

noinline void taken(struct state *s) { s->done -= s->pending; }

void (*volatile table[])(struct state *) = {taken};

noinline void step(struct state *s, long n)
{
	s->pending += n;
	always(s);
	if (ready(s))
		work(s);
}

noinline void other(struct state *s)
{
	if (ready(s))
		mixed(s);
	mixed(s);
	if (ready(s))
		taken(s);
}

noinline void over(struct state *s) { s->done += 2; }

noinline void fresh(struct state *s) { s->done += 3; }

noinline void each(struct state *s, long i) { s->done += i * s->limit; }

noinline void decide(struct state *s, long n)
{
	for (long i = 0; i < n; i++)
		each(s, i);
	if (s->done == 0)
		fresh(s);
	if (s->pending > s->limit)
		over(s);
}

/* A search that tries the rest at every later position, calling itself
 * in each iteration of its loop with no test of its own there; always
 * called with exact 0, so GCC clones it at -O2 (descend.constprop.0). */
static noinline int descend(const char *p, long n, int exact)
{
	if (*p == 'b')
		return !exact || n == 1;
	while (n > 0) {
		if (descend(p + 1, n - 1, exact))
			return 1;
		n--;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct state s = {0, argc + 3, 0};
	s.done += descend(argv[0], argc + 3, 0);
	for (long i = 0; i < 1000; i++) {
		step(&s, i % 7);
		other(&s);
		decide(&s, i % 5);
	}
	table[0](&s);
	printf("%ld\n", s.done + (long)argv[0][0]);
	return 0;
}
