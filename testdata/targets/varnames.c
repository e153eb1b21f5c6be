// Requests named by strings: the main thread begin()s each request with
// its name in a buffer of its own and queues a copy; a consumer thread
// finish()es it with the copy (another address). N requests, one every
// ms; it prints "lat NAME NS" for each (begin's entry to finish's end).
//
//   varnames N
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PROBED __attribute__((noinline))

static uint64_t now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

static char **ring;
static uint64_t *began, *ended;
static int head, tail, nreq;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static volatile uint64_t sink;

PROBED void begin(const char *name, int i) {
	began[i] = now_ns();
	sink += strlen(name);
}

PROBED void finish(int i, const char *name) {
	sink += strlen(name);
	ended[i] = now_ns();
}

static void *consumer(void *arg) {
	(void)arg;
	for (int n = 0; n < nreq; n++) {
		pthread_mutex_lock(&mu);
		while (head == tail)
			pthread_cond_wait(&cv, &mu);
		char *name = ring[head++];
		pthread_mutex_unlock(&mu);
		finish(atoi(name + 4), name);
	}
	return NULL;
}

int main(int argc, char **argv) {
	nreq = argc == 2 ? atoi(argv[1]) : 0;
	if (nreq < 2) {
		fprintf(stderr, "usage: varnames N (N at least 2)\n");
		return 2;
	}
	ring = calloc(nreq, sizeof *ring);
	began = calloc(nreq, sizeof *began);
	ended = calloc(nreq, sizeof *ended);
	pthread_t th;
	pthread_create(&th, NULL, consumer, NULL);
	char buf[32];
	for (int i = 0; i < nreq; i++) {
		snprintf(buf, sizeof buf, "req-%d", i);
		begin(buf, i);
		pthread_mutex_lock(&mu);
		ring[tail++] = strdup(buf);
		pthread_cond_signal(&cv);
		pthread_mutex_unlock(&mu);
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	pthread_join(th, NULL);
	for (int i = 0; i < nreq; i++)
		printf("lat req-%d %llu\n", i, (unsigned long long)(ended[i] - began[i]));
	return 0;
}
