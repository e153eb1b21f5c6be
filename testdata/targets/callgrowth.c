/* callgrowth: insert_sorted shifts more of a growing sorted array at each call
   (culprit models --x call-order). */
#include <stdio.h>
#include <stdlib.h>
static long list[100000]; static long len;
__attribute__((noinline)) long insert_sorted(long v) {
	long i = len;
	while (i > 0 && list[i-1] > v) { list[i] = list[i-1]; i--; }
	list[i] = v; len++;
	return i;
}
__attribute__((noinline)) long lookup(long v) { return list[v % (len ? len : 1)]; }
int main(void) {
	long s = 0;
	for (long k = 0; k < 4000; k++) { s += insert_sorted((k * 7919) % 3001 - 3 * k); s += lookup(k); }
	printf("%ld\n", s);
	return 0;
}
