/* Work per call with and without a fixed bound, for schema's BoundedAt:
 * wait polls a mailbox until it answers or a timeout of 600 polls passes
 * (poll reads it 40 times); count_up runs to a constant with its counter
 * stepped up; walk runs to a length it is handed; chase follows a list to
 * its end; drain calls wait, bounded, and walk, not; straight has no loop
 * at all. */
#include <stdio.h>
#include <stdlib.h>

#define noinline __attribute__((noinline))

struct box {
	volatile unsigned mail;
	struct box *next;
};

noinline unsigned poll(struct box *b)
{
	unsigned v = 0;
	for (int i = 0; i < 40; i++)
		v += b->mail;
	return v / 40;
}

noinline int wait(struct box *b, unsigned want)
{
	for (int n = 0; n < 600; n++)
		if (poll(b) == want)
			return 1;
	return 0;
}

noinline unsigned count_up(struct box *b)
{
	unsigned v = 0;
	for (unsigned i = 0; i < 100; i++)
		v = v * 31 + (b->mail ^ i);
	return v;
}

noinline unsigned walk(struct box *b, long n)
{
	unsigned v = 0;
	for (long i = 0; i < n; i++)
		v += b->mail;
	return v;
}

noinline unsigned chase(struct box *b)
{
	unsigned v = 0;
	for (; b; b = b->next)
		v += b->mail;
	return v;
}

noinline long drain(struct box *bs, int n)
{
	long missed = 0;
	for (int i = 0; i < n; i++)
		missed += !wait(&bs[i], 1) + walk(&bs[i], i);
	return missed;
}

noinline unsigned straight(struct box *b) { return b->mail * 3; }

int main(int argc, char **argv)
{
	(void)argv;
	struct box *bs = calloc(8, sizeof *bs);
	for (int i = 0; i < 7; i++)
		bs[i].next = &bs[i + 1];
	bs[0].mail = (unsigned)argc;
	printf("%ld %u %u %u\n", drain(bs, 8), count_up(bs), chase(bs), straight(bs));
	return 0;
}
