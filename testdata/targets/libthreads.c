/* libthreads [ROUNDS]: libcalls' loop (qsort with a comparator, snprintf of
 * numbers, in Debian's libc, which has no frame pointers) run by main and by
 * two threads, in small frames: built without frame pointers, an 8 KiB stack
 * copy holds each thread's whole stack, from libc's frames to _start or to
 * clone, so every stack has its thread's one root. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static int rounds = 1000;
static int cmp(const void *a, const void *b) { int x = *(const int *)a, y = *(const int *)b; return (x > y) - (x < y); }
__attribute__((noinline)) static void sorting(int *v, int n, unsigned *seed) { for (int i = 0; i < n; i++) v[i] = rand_r(seed); qsort(v, n, sizeof v[0], cmp); }
__attribute__((noinline)) static void formatting(char *buf, int i) { for (int k = 0; k < 50; k++) snprintf(buf, 64, "%d %.3f %x %g", i + k, i * 0.5, i, i / 7.0); }
__attribute__((noinline)) static int work(unsigned seed) {
	int *v = malloc(500 * sizeof *v);
	char buf[64];
	for (int i = 0; i < rounds; i++) { sorting(v, 500, &seed); formatting(buf, i); }
	free(v);
	return buf[0];
}
__attribute__((noinline)) static void *thread(void *p) { return (void *)(long)work((unsigned)(long)p); }

int main(int argc, char **argv) {
	if (argc > 1) rounds = atoi(argv[1]);
	pthread_t a, b;
	pthread_create(&a, NULL, thread, (void *)1L);
	pthread_create(&b, NULL, thread, (void *)2L);
	int r = work(3);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	return r == 0;
}
