/* Several pthreads spinning in distinct functions, so each thread shows up. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

volatile unsigned long sink;
static long iters = 200000000;

__attribute__((noinline)) void spin_a(void) { for (long i = 0; i < iters; i++) sink += i; }
__attribute__((noinline)) void spin_b(void) { for (long i = 0; i < iters; i++) sink ^= i; }
__attribute__((noinline)) void spin_c(void) { for (long i = 0; i < iters; i++) sink -= i; }

static void *thread_a(void *p) { spin_a(); return p; }
static void *thread_b(void *p) { spin_b(); return p; }

int main(int argc, char **argv) {
	if (argc > 1) iters = atol(argv[1]);
	pthread_t a, b;
	pthread_create(&a, NULL, thread_a, NULL);
	pthread_create(&b, NULL, thread_b, NULL);
	spin_c();
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	return 0;
}
