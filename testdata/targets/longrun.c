/* A target to kill its profiler under: writes its pid to argv[3] when it
 * starts, spins in three threads for argv[1] seconds of wall time, then
 * exits with code argv[2]. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

volatile unsigned long sink;
static double secs = 1;

static double since(const struct timespec *t0) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) + (t.tv_nsec - t0->tv_nsec) / 1e9;
}

__attribute__((noinline)) void spin(const struct timespec *t0) {
	do {
		for (long i = 0; i < 100000; i++) sink += i;
	} while (since(t0) < secs);
}

static struct timespec start;
static void *worker(void *p) { spin(&start); return p; }

int main(int argc, char **argv) {
	clock_gettime(CLOCK_MONOTONIC, &start);
	if (argc > 1) secs = atof(argv[1]);
	int code = argc > 2 ? atoi(argv[2]) : 0;
	if (argc > 3) {
		FILE *f = fopen(argv[3], "w");
		if (!f) return 99;
		fprintf(f, "%d\n", (int)getpid());
		fclose(f);
	}
	pthread_t a, b;
	pthread_create(&a, NULL, worker, NULL);
	pthread_create(&b, NULL, worker, NULL);
	spin(&start);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	return code;
}
