// attachpool: a program of several threads, all running before a tracer
// attaches to it. W workers start at once and keep busy (a short spin,
// then a 1 ms sleep, untraced); once each has spun it prints "ready".
// When the process gets SIGUSR1 each
// calls work() N times, which calls inner() once, and main prints the
// calls made ("count work W·N", "count inner W·N") and "done", and sleeps
// until killed, so that a tracer attached before the signal sees every
// call and detaches when it likes.
//
//	attachpool W N
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile sig_atomic_t go;
static volatile long sink;
static long n;
static int workers, started;

NOINLINE long inner(long i) { return sink + i * 7; }

NOINLINE long work(long i) {
	long s = 0;
	for (int k = 0; k < 50; k++) s += k ^ i;
	return s + inner(i);
}

static void on_usr1(int sig) {
	(void)sig;
	go = 1;
}

static void *worker(void *arg) {
	(void)arg;
	struct timespec ms = {0, 1000000};
	for (int first = 1; !go; first = 0) {
		for (int k = 0; k < 20000; k++) sink += k;
		if (first && __atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST) == workers) {
			printf("ready\n");
			fflush(stdout);
		}
		nanosleep(&ms, NULL);
	}
	for (long i = 0; i < n; i++) sink += work(i);
	return NULL;
}

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: attachpool WORKERS N\n");
		return 2;
	}
	int w = workers = atoi(argv[1]);
	n = atol(argv[2]);
	if (w < 1 || w > 64 || n < 1) {
		fprintf(stderr, "attachpool: WORKERS from 1 to 64, N at least 1\n");
		return 2;
	}
	struct sigaction sa = {0};
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	pthread_t th[64];
	for (int i = 0; i < w; i++)
		pthread_create(&th[i], NULL, worker, NULL);
	for (int i = 0; i < w; i++)
		pthread_join(th[i], NULL);
	printf("count work %ld\ncount inner %ld\ndone\n", w * n, w * n);
	fflush(stdout);
	for (;;)
		pause();
}
