/* callgrowth [CALLS]: insert_sorted shifts more of a growing sorted array at
   each call, so its time per call grows linearly with the call's order;
   lookup's stays constant (culprit models --x call-order). CALLS calls of
   each, 4000 unless given, at most 100000. */
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
int main(int argc, char **argv) {
	long calls = argc > 1 ? atol(argv[1]) : 4000, s = 0;
	if (calls < 0 || calls > 100000) calls = 100000;
	for (long k = 0; k < calls; k++) { s += insert_sorted((k * 7919) % 3001 - 3 * k); s += lookup(k); }
	printf("%ld\n", s);
	return 0;
}
