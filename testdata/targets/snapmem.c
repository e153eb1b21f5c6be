/* Heap nodes reached from a global and from registers: the BPF snapshot
 * test reads cfg (a global), *cfg.head (through a planned pointer) and the
 * nodes that walk()'s registers point to, at each sample. It prints the
 * addresses so the test knows the truth. */
#include <stdio.h>
#include <stdlib.h>

struct node {
	long magic;
	volatile long value;
	struct node *next;
};

struct config {
	long limit;
	struct node *head;
} cfg;

static long __attribute__((noinline)) walk(struct node *n, long rounds)
{
	long s = 0;
	for (long r = 0; r < rounds; r++)
		for (struct node *p = n; p; p = p->next)
			s += p->value;
	return s;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 100000000;
	struct node *a = malloc(sizeof *a), *b = malloc(sizeof *b);
	a->magic = 0x1111aaaa;
	a->value = 7;
	a->next = b;
	b->magic = 0x2222bbbb;
	b->value = 9;
	b->next = NULL;
	cfg.limit = 0x1234567;
	cfg.head = a;
	printf("%p %p %p\n", (void *)&cfg, (void *)a, (void *)b);
	fflush(stdout);
	getchar(); /* the test attaches, then lets it run */
	return walk(a, rounds) == 0;
}
