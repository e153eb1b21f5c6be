/* repair.c: checks that decide to rewrite the state a loop is bounded by,
 * for culprit's machine-code tests (schema.Code.Repair). A ring of
 * slots searched from the start to a member bound (ring_find), and
 * functions that call the ring's rewrite (ring_rehome) on tests of
 * different things. */
#include <stdlib.h>

#define noinline __attribute__((noinline))

struct ring {
	long *slot;
	unsigned long used, size, dead, limit;
};

struct log {
	long *slot;
	unsigned long used, size;
};

volatile unsigned long sink;

/* ring_find: a loop bounded by r->used, over r->slot. */
noinline long ring_find(struct ring *r, long key)
{
	for (unsigned long i = 0; i < r->used; i++)
		if (r->slot[i] == key)
			return (long)i;
	return -1;
}

/* ring_rehome: rewrites r->slot and r->used (drops the dead). */
noinline void ring_rehome(struct ring *r)
{
	unsigned long n = 0;
	for (unsigned long i = 0; i < r->used; i++)
		if (r->slot[i] >= 0)
			r->slot[n++] = r->slot[i];
	r->used = n;
	r->dead = 0;
}

/* ring_maybe_rehome: the check: a threshold on the ring's members. */
noinline void ring_maybe_rehome(struct ring *r)
{
	if (r->dead * 4 > r->limit)
		ring_rehome(r);
}

/* ring_rehome_if: the rewrite on a flag the caller passes, not on the
 * ring's state. */
noinline void ring_rehome_if(struct ring *r, int now)
{
	if (now)
		ring_rehome(r);
}

/* ring_count_dead: tests the ring's members, calls only what reads it. */
noinline unsigned long ring_count_dead(struct ring *r)
{
	unsigned long n = 0;
	for (unsigned long i = 0; i < r->used; i++)
		n += r->slot[i] < 0;
	return n;
}

noinline void ring_report(struct ring *r)
{
	if (r->dead > r->limit)
		sink = ring_count_dead(r);
}

/* log_trim: the same shape on another type. */
noinline void log_shrink(struct log *l)
{
	l->used /= 2;
	l->size = l->used;
}

noinline void log_trim(struct log *l)
{
	if (l->used > l->size)
		log_shrink(l);
}

/* ring_each_rehome: rewrites on a test made in every iteration of a loop. */
noinline void ring_each_rehome(struct ring *r, int rounds)
{
	for (int k = 0; k < rounds; k++)
		if (r->dead > r->limit + (unsigned long)k)
			ring_rehome(r);
}

/* A parser's cursor: every step stores c->p, which bounds the loops that
 * walk the text; a dispatch on the character under the cursor (reached
 * through c->p) is no check of the cursor's state. */
struct cursor {
	const char *p, *end;
};

noinline long cur_spaces(struct cursor *c)
{
	long n = 0;
	while (c->p < c->end && *c->p == ' ')
		c->p++, n++;
	return n;
}

noinline void cur_number(struct cursor *c)
{
	while (c->p < c->end && *c->p >= '0' && *c->p <= '9')
		c->p++;
}

noinline void cur_item(struct cursor *c)
{
	if (*c->p >= '0')
		cur_number(c);
}

int main(int argc, char **argv)
{
	(void)argv;
	struct ring r = {calloc(64, sizeof(long)), 0, 64, 0, 16};
	struct log l = {calloc(8, sizeof(long)), 4, 2};
	for (int k = 0; k < 1000; k++) {
		if (r.used < r.size)
			r.slot[r.used++] = k % 3 ? k : -k;
		r.dead += k % 3 == 0;
		ring_maybe_rehome(&r);
		sink += (unsigned long)ring_find(&r, k / 2);
	}
	ring_rehome_if(&r, argc > 1);
	ring_report(&r);
	ring_each_rehome(&r, argc);
	log_trim(&l);
	struct cursor c = {"  12 x", 0};
	c.end = c.p + 6;
	sink += (unsigned long)cur_spaces(&c);
	cur_item(&c);
	free(r.slot);
	free(l.slot);
	return 0;
}
