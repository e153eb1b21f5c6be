/* entryval: walk visits n items, each for the same CPU work. At -O2 GCC
 * turns walk's counter i into a pointer walk and describes i only as
 * (rdi - entry_value(rdi)) / sizeof(struct item): a debugger recovers it
 * from the value main passed (DW_TAG_call_site_parameter).
 *
 *   entryval N ROUNDS  (prints N)
 */
#include <stdio.h>
#include <stdlib.h>

struct item {
	long key;
	long value;
	long spare;
};

volatile long sink;

__attribute__((noinline)) long visit(struct item *it)
{
	long h = it->key;
	for (int k = 0; k < 200000; k++)
		h = h * 6364136223846793005L + it->value;
	sink = h;
	return h;
}

__attribute__((noinline)) long walk(struct item *items, int n)
{
	long s = 0;
	for (int i = 0; i < n; i++)
		s += visit(&items[i]);
	return s;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 16;
	int rounds = argc > 2 ? atoi(argv[2]) : 100;
	struct item *items = calloc(n, sizeof *items);
	long s = 0;

	for (int i = 0; i < n; i++)
		items[i].key = i, items[i].value = 2 * i + 1;
	for (int r = 0; r < rounds; r++)
		s += walk(items, n);
	printf("n %d\n", n);
	return s == 42;
}
