/* callgrowth [CALLS]: insert_sorted shifts more of a growing sorted array at
   each call, so its time per call grows linearly with the call's order;
   lookup's stays constant (culprit models --x call-order). CALLS calls of
   each, 4000 unless given, at most 100000. Each element shifted also goes
   through a chain of 16 multiplications (some 16 ns of CPU work, no memory), so
   that each call's growth stands well above the noise of a busy machine
   while the array stays small enough not to crowd lookup's caches. */
#include <stdio.h>
#include <stdlib.h>
static long list[100000]; static long len;
static volatile unsigned long sink;
__attribute__((noinline)) long insert_sorted(long v) {
	long i = len;
	unsigned long h = 0;
	while (i > 0 && list[i-1] > v) {
		list[i] = list[i-1];
		for (int r = 0; r < 16; r++) h = (h ^ (unsigned long)list[i]) * 0x9E3779B97F4A7C15UL;
		i--;
	}
	list[i] = v; len++;
	sink = h;
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
