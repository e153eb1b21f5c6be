/* Variables with known uses, for culprit schema's tags (internal/schema).
 *
 *   filter: i is a loop counter (loop), x is compared with limit in an if
 *   (cond) and passed to consume (args), limit is compared (cond);
 *   walk: steps a pointer and a counter through a list whose end the loop
 *   tests (scanned: loop, stepped but never compared);
 *   cfg is a global struct whose member limit is read in a condition;
 *   counter is a global that consume updates;
 *   hits is a global pointer to a scalar.
 *
 *   schema [n] */
#include <stdio.h>
#include <stdlib.h>

#define noinline __attribute__((noinline))

struct config {
	long limit;
	int mode;
	double ratio;
};

struct config cfg = {50, 1, 0.5};
long counter;
int *hits;

struct node {
	struct node *next;
	long v;
};

noinline long consume(long value, long at)
{
	counter += value ^ at;
	return counter & 7;
}

noinline long filter(const long *a, long n, long limit)
{
	long kept = 0;
	for (long i = 0; i < n; i++) {
		long x = a[i] % 100;
		if (x > limit)
			kept += consume(x, i);
	}
	return kept;
}

noinline long walk(struct node *head)
{
	long scanned = 0;
	for (struct node *p = head; p != NULL; p = p->next, scanned++)
		counter += p->v;
	return scanned;
}

noinline long over_limit(const long *a, long n)
{
	long over = 0;
	for (long k = 0; k < n; k++)
		if (a[k] > cfg.limit)
			over++;
	return over;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;
	long *a = malloc(n * sizeof *a);
	struct node *head = NULL;
	static int hit_count;
	hits = &hit_count;
	for (long k = 0; k < n; k++) {
		a[k] = k * 7919 % 1009;
		struct node *nd = malloc(sizeof *nd);
		nd->v = a[k];
		nd->next = head;
		head = nd;
	}
	long r = filter(a, n, cfg.limit) + walk(head) + over_limit(a, n);
	*hits += (int)r;
	printf("%ld %ld %d\n", r, counter, *hits);
	return 0;
}
