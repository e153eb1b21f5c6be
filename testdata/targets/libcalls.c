/* libcalls [ROUNDS]: a loop that spends its time in Debian's libc (qsort with
 * a comparator, snprintf of numbers), which has no frame pointers: in fp mode
 * only the CFI unwinding of the stack copy leads out of libc back to main, so
 * the share of samples whose stack reaches main shows what a stack copy of a
 * given size keeps (docs/performance.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static int cmp(const void *a, const void *b) { int x = *(const int *)a, y = *(const int *)b; return (x > y) - (x < y); }
__attribute__((noinline)) void sorting(int *v, int n) { for (int i = 0; i < n; i++) v[i] = rand(); qsort(v, n, sizeof v[0], cmp); }
__attribute__((noinline)) void formatting(char *buf, int i) { for (int k = 0; k < 200; k++) snprintf(buf, 256, "%d %.3f %s %x %g", i + k, i * 0.5, "hello", i, i / 7.0); }
int main(int argc, char **argv) {
	int n = 2000, v[2000]; char buf[256];
	int rounds = argc > 1 ? atoi(argv[1]) : 2000;
	for (int i = 0; i < rounds; i++) { sorting(v, n); formatting(buf, i); }
	return buf[0] == 0;
}
