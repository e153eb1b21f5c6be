// A thread pool whose requests are marked with culprit/interval.h: the
// main thread accepts a request every 1 ms, marks its start
// (CULPRIT_INTERVAL_START(id)) and queues it; W workers take requests,
// run step_a and step_b and mark the end (CULPRIT_INTERVAL_END(id)) on
// their own thread. step_b waits 10 ms more in one request of four.
//
//   varmarks N W
//
// The program prints each request's latency from its start mark to its
// end mark ("lat ID NS", CLOCK_MONOTONIC) and step_b's true share of the
// latency's variance ("share step_b X").
#define _GNU_SOURCE
#include <culprit/interval.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define INLINE static inline __attribute__((always_inline))
#define PROBED __attribute__((noinline))

INLINE uint64_t now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

INLINE void spin(uint64_t ns) {
	uint64_t end = now_ns() + ns;
	while (now_ns() < end)
		;
}

INLINE void wait_ns(uint64_t ns) {
	struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
	nanosleep(&ts, NULL);
}

struct req {
	long id;
	int heavy;
	uint64_t start, end, b;
};

static struct req *reqs;
static int *ring, head, tail, nreq, stopping;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

PROBED void step_a(struct req *r) { spin(10000 + (uint64_t)r->id % 2); }

PROBED void step_b(struct req *r) {
	uint64_t t0 = now_ns();
	spin(10000);
	if (r->heavy)
		wait_ns(10000000);
	r->b = now_ns() - t0;
}

static void *worker(void *arg) {
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&mu);
		while (head == tail && !stopping)
			pthread_cond_wait(&cv, &mu);
		int i = head < tail ? ring[head++] : -1;
		pthread_mutex_unlock(&mu);
		if (i < 0)
			return NULL;
		struct req *r = &reqs[i];
		step_a(r);
		step_b(r);
		r->end = now_ns();
		CULPRIT_INTERVAL_END(r->id);
	}
}

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: varmarks N WORKERS\n");
		return 2;
	}
	nreq = atoi(argv[1]);
	int nw = atoi(argv[2]);
	if (nreq < 2 || nw < 1 || nw > 64) {
		fprintf(stderr, "varmarks: N must be at least 2, WORKERS from 1 to 64\n");
		return 2;
	}
	reqs = calloc(nreq, sizeof *reqs);
	ring = calloc(nreq, sizeof *ring);
	uint64_t x = 88172645463325252ull;
	for (int i = 0; i < nreq; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		reqs[i].id = 1000 + i;
		reqs[i].heavy = x % 4 == 0;
	}
	pthread_t th[64];
	for (int i = 0; i < nw; i++)
		pthread_create(&th[i], NULL, worker, NULL);
	for (int i = 0; i < nreq; i++) {
		CULPRIT_INTERVAL_START(reqs[i].id);
		reqs[i].start = now_ns();
		pthread_mutex_lock(&mu);
		ring[tail++] = i;
		pthread_cond_signal(&cv);
		pthread_mutex_unlock(&mu);
		wait_ns(1000000);
	}
	pthread_mutex_lock(&mu);
	stopping = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	for (int i = 0; i < nw; i++)
		pthread_join(th[i], NULL);
	double ml = 0, mb = 0, vl = 0, vb = 0;
	for (int i = 0; i < nreq; i++) {
		printf("lat %ld %llu\n", reqs[i].id, (unsigned long long)(reqs[i].end - reqs[i].start));
		ml += reqs[i].end - reqs[i].start;
		mb += reqs[i].b;
	}
	ml /= nreq;
	mb /= nreq;
	for (int i = 0; i < nreq; i++) {
		double l = reqs[i].end - reqs[i].start - ml, b = reqs[i].b - mb;
		vl += l * l;
		vb += b * b;
	}
	printf("share step_b %.4f\n", vb / vl);
	return 0;
}
