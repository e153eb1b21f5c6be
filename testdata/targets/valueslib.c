/* Calls into glibc (qsort's merge sort, strtol) so that internal/dwarfx can
 * compare its evaluation of glibc's variables, from glibc's separate debug
 * information, with gdb's. Deterministic; prints a checksum. */
#include <stdio.h>
#include <stdlib.h>

struct rec {
	int key;
	char name[8];
};

static int cmp(const void *a, const void *b) {
	const struct rec *x = a, *y = b;
	return (x->key > y->key) - (x->key < y->key);
}

int main(void) {
	struct rec recs[9] = {{5, "five"}, {3, "three"}, {8, "eight"}, {1, "one"}, {9, "nine"},
	                      {2, "two"}, {7, "seven"}, {4, "four"}, {6, "six"}};
	const char *nums[] = {"42", "-17", "0x1f", "  99xyz", "0777"};
	long total = 0;
	qsort(recs, 9, sizeof recs[0], cmp);
	for (int i = 0; i < 9; i++)
		total = total * 3 + recs[i].key;
	for (int i = 0; i < 5; i++) {
		char *end;
		total += strtol(nums[i], &end, 0) + (end - nums[i]);
	}
	printf("total %ld %s\n", total, recs[0].name);
	return 0;
}
