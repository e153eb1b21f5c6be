// A server whose requests cross a queue: the main thread accept_req()s a
// request every 2 ms and enqueue()s it; W workers dequeue() requests and
// serve() them (parse_req, slow_io, reply). slow_io waits 20 ms more in one
// request of four; everything else is steady.
//
//   varqueue N W
//
// The program times each request itself and prints, for each,
// "req ACCEPT_NS LATENCY QUEUED SLOW_IO" (ns, CLOCK_MONOTONIC as the
// probes' clock; latency from accept_req's entry to serve's end, queued
// from the end of enqueue to the end of dequeue, 0 when the worker's
// dequeue ended first), then slow_io's true share of the variance of the
// latency to serve's return ("share slow_io X") and to reply's ("share_reply
// slow_io X"). The shares are of the spans the probes time: each starts
// just before the call (the entry probe's trap, and the wait for a CPU a
// busy machine can add when it returns, are in the call's time) and ends
// with the function's last statement (the return probe's time stamp comes
// before the wait that can follow its trap).
#define _GNU_SOURCE
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
	int id, heavy;
	uint64_t accepted, enqueued, dequeued, done, slow;
	uint64_t called, replied, slow_called, slow_end; // the spans the probes time
};

static struct req *reqs;
static struct req **ring;
static int head, tail, nreq, stopping;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

PROBED void enqueue(struct req *r) {
	pthread_mutex_lock(&mu);
	ring[tail++] = r;
	pthread_cond_signal(&cv);
	pthread_mutex_unlock(&mu);
	r->enqueued = now_ns();
}

// dequeue returns the next request, NULL when the server stops.
PROBED struct req *dequeue(void) {
	pthread_mutex_lock(&mu);
	while (head == tail && !stopping)
		pthread_cond_wait(&cv, &mu);
	struct req *r = head < tail ? ring[head++] : NULL;
	pthread_mutex_unlock(&mu);
	if (r)
		r->dequeued = now_ns();
	return r;
}

PROBED void read_req(struct req *r) { spin(10000 + (uint64_t)r->id % 2); }

PROBED void accept_req(struct req *r) {
	r->accepted = now_ns();
	read_req(r);
	enqueue(r);
}

PROBED void parse_req(struct req *r) { spin(10000 + (uint64_t)r->id % 2); }

PROBED void slow_io(struct req *r) {
	uint64_t t0 = now_ns();
	spin(20000);
	if (r->heavy)
		wait_ns(20000000);
	r->slow_end = now_ns();
	r->slow = r->slow_end - t0;
}

PROBED void reply(struct req *r) {
	spin(10000 + (uint64_t)r->id % 2);
	r->replied = now_ns();
}

PROBED void serve(struct req *r) {
	parse_req(r);
	r->slow_called = now_ns();
	slow_io(r);
	reply(r);
	r->done = now_ns();
}

static void *worker(void *arg) {
	(void)arg;
	struct req *r;
	while ((r = dequeue()) != NULL)
		serve(r);
	return NULL;
}

// share is slow_io's share of the variance of the requests' latency, to
// serve's return or (to_reply) to reply's, over the spans the probes time.
static double share(int to_reply) {
	double ml = 0, ms = 0, vl = 0, vs = 0;
	for (int i = 0; i < nreq; i++) {
		struct req *r = &reqs[i];
		ml += (to_reply ? r->replied : r->done) - r->called;
		ms += r->slow_end - r->slow_called;
	}
	ml /= nreq;
	ms /= nreq;
	for (int i = 0; i < nreq; i++) {
		struct req *r = &reqs[i];
		double l = (to_reply ? r->replied : r->done) - r->called - ml;
		double s = r->slow_end - r->slow_called - ms;
		vl += l * l;
		vs += s * s;
	}
	return vs / vl;
}

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: varqueue N WORKERS\n");
		return 2;
	}
	nreq = atoi(argv[1]);
	int nw = atoi(argv[2]);
	if (nreq < 2 || nw < 1 || nw > 64) {
		fprintf(stderr, "varqueue: N must be at least 2, WORKERS from 1 to 64\n");
		return 2;
	}
	reqs = calloc(nreq, sizeof *reqs);
	ring = calloc(nreq, sizeof *ring);
	uint64_t x = 88172645463325252ull;
	for (int i = 0; i < nreq; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		reqs[i].id = i;
		reqs[i].heavy = x % 4 == 0;
	}
	pthread_t th[64];
	for (int i = 0; i < nw; i++)
		pthread_create(&th[i], NULL, worker, NULL);
	for (int i = 0; i < nreq; i++) {
		reqs[i].called = now_ns();
		accept_req(&reqs[i]);
		wait_ns(2000000);
	}
	pthread_mutex_lock(&mu);
	stopping = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	for (int i = 0; i < nw; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < nreq; i++) {
		struct req *r = &reqs[i];
		printf("req %llu %llu %llu %llu\n", (unsigned long long)r->accepted, (unsigned long long)(r->done - r->accepted),
		       (unsigned long long)(r->dequeued > r->enqueued ? r->dequeued - r->enqueued : 0), (unsigned long long)r->slow);
	}
	printf("share slow_io %.4f\n", share(0));
	printf("share_reply slow_io %.4f\n", share(1));
	return 0;
}
