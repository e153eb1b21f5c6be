// attachwindow: threads calling held back to back, for a trace that
// attaches to them with -p. The first call of each thread that finds a
// probe set on held (its first byte an int3, the probe's breakpoint,
// there for an entry or a return probe alike) spins for SECONDS before
// it returns, and the thread then ends: a call entered the moment the
// breakpoint went in, in flight while the trace samples the CPU. A trace
// that sets a function's return probe before its entry probe has, in
// between, calls with a return probe and no entry seen. The 4,096 pad_
// functions are never called: traced with held (-f 'pad_*'), their
// probes are set after held's in each batch (in order of name), so that
// with the return probes' batch first they widen that window.
//
//   attachwindow THREADS SECONDS
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

volatile unsigned long sink;
static double seconds;

#define PAD(n) __attribute__((noipa)) void pad_##n(void) { sink += n; }
#define PAD8(n) PAD(n##0) PAD(n##1) PAD(n##2) PAD(n##3) PAD(n##4) PAD(n##5) PAD(n##6) PAD(n##7)
#define PAD64(n) PAD8(n##0) PAD8(n##1) PAD8(n##2) PAD8(n##3) PAD8(n##4) PAD8(n##5) PAD8(n##6) PAD8(n##7)
#define PAD512(n) PAD64(n##0) PAD64(n##1) PAD64(n##2) PAD64(n##3) PAD64(n##4) PAD64(n##5) PAD64(n##6) PAD64(n##7)
PAD512(1) PAD512(2) PAD512(3) PAD512(4) PAD512(5) PAD512(6) PAD512(7) PAD512(9)

int held(void);

// probed says whether held's first byte is an int3.
__attribute__((noipa)) int probed(void) {
	return *(const volatile unsigned char *)(uintptr_t)held == 0xcc;
}

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noipa)) void spin(void) {
	double end = now() + seconds;
	while (now() < end)
		for (int i = 0; i < 1000; i++)
			sink++;
}

__attribute__((noipa)) int held(void) {
	if (!probed())
		return 0;
	spin();
	return 1;
}

static void *worker(void *arg) {
	while (!held())
		;
	return arg;
}

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: attachwindow THREADS SECONDS\n");
		return 2;
	}
	seconds = atof(argv[2]);
	int n = atoi(argv[1]);
	pthread_t t[n];
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, worker, NULL) != 0)
			return 1;
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	pause();
	return 0;
}
