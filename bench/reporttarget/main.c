/* The target of bench/report.sh: THREADS threads (argv[2], default 2) each
 * run a call tree of four levels for SECONDS (argv[1], default 10) of CPU
 * time, mixing loops of its own, libc (qsort, memcpy, strlen) and system
 * calls (write to /dev/null), so that its recording has user, libc and
 * kernel frames and thousands of distinct stacks, as a real program does. */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static double seconds = 10;
static int devnull;

static int cmp(const void *a, const void *b) {
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
	return (x > y) - (x < y);
}

__attribute__((noinline)) static void leaf_hash(unsigned *v, int n) {
	for (int i = 0; i < n; i++) sink += v[i] * 2654435761u ^ (sink >> 7);
}
__attribute__((noinline)) static void leaf_sort(unsigned *v, int n) {
	for (int i = 0; i < n; i++) v[i] = (unsigned)(v[i] * 1103515245u + 12345u);
	qsort(v, n, sizeof *v, cmp);
}
__attribute__((noinline)) static void leaf_copy(char *dst, const char *src, int n) {
	for (int i = 0; i < 64; i++) { memcpy(dst, src, n); sink += strlen(dst); }
}
__attribute__((noinline)) static void leaf_io(const char *buf, int n) {
	for (int i = 0; i < 8; i++) sink += write(devnull, buf, n);
}
__attribute__((noinline)) static void mid_compute(unsigned *v, int n) {
	leaf_hash(v, n);
	leaf_sort(v, n / 4);
}
__attribute__((noinline)) static void mid_move(char *a, char *b, int n) {
	leaf_copy(a, b, n);
	leaf_io(a, n);
}
__attribute__((noinline)) static void stage(int which, unsigned *v, char *a, char *b) {
	if (which % 3) mid_compute(v, 4096);
	else mid_move(a, b, 4000);
}

static double cputime(void) {
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *worker(void *arg) {
	unsigned *v = malloc(4096 * sizeof *v);
	char *a = malloc(4097), *b = malloc(4097);
	for (int i = 0; i < 4096; i++) v[i] = i * (unsigned)(long)arg + 1;
	memset(b, 'x', 4096); b[4096] = 0;
	for (int r = 0; cputime() < seconds; r++) stage(r, v, a, b);
	free(v); free(a); free(b);
	return arg;
}

int main(int argc, char **argv) {
	if (argc > 1) seconds = atof(argv[1]);
	int threads = argc > 2 ? atoi(argv[2]) : 2;
	if (threads < 1 || threads > 64) threads = 2;
	devnull = open("/dev/null", O_WRONLY);
	pthread_t t[64];
	for (int i = 1; i < threads; i++) pthread_create(&t[i], NULL, worker, (void *)(long)(i + 1));
	worker((void *)1L);
	for (int i = 1; i < threads; i++) pthread_join(t[i], NULL);
	return 0;
}
