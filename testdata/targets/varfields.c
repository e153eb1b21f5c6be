// Requests known by a number inside them: the main thread begin()s each
// request with a job pointing to its own struct, one every ms, and hands
// a job with a copy (other addresses) to a consumer thread, which waits
// for a batch of 4 and finish()es it last first, one every ms. The id is two pointer
// steps away, in a struct nested in the request: j->req->hdr.id. It
// prints "lat ID NS" for each request (begin's entry to finish's end).
//
//   varfields N     (N a multiple of 4)
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PROBED __attribute__((noinline))
#define BATCH 4

struct hdr {
	short kind;
	long id;
};

struct req {
	char tag[12];
	struct hdr hdr;
	double weight;
};

struct job {
	int prio;
	struct req *req;
};

static uint64_t now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

static struct job *ring;
static uint64_t *began, *ended;
static int tail, nreq;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static volatile uint64_t sink;

// Ids are not the request's number, and not in order.
static long id_of(int i) { return 1000003L * (i + 1) % 7919 + 100000; }
static int num_of(long id) {
	for (int i = 0; i < nreq; i++)
		if (id_of(i) == id)
			return i;
	return -1;
}

PROBED void begin(struct job *j) {
	began[num_of(j->req->hdr.id)] = now_ns();
	sink += j->req->tag[0];
}

PROBED void finish(struct job *j) {
	sink += j->req->tag[0] + j->prio;
	ended[num_of(j->req->hdr.id)] = now_ns();
}

static void *consumer(void *arg) {
	(void)arg;
	for (int b = 0; b < nreq; b += BATCH) {
		pthread_mutex_lock(&mu);
		while (tail < b + BATCH)
			pthread_cond_wait(&cv, &mu);
		pthread_mutex_unlock(&mu);
		for (int k = BATCH - 1; k >= 0; k--) {
			finish(&ring[b + k]);
			struct timespec ts = {0, 1000000};
			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

int main(int argc, char **argv) {
	nreq = argc == 2 ? atoi(argv[1]) : 0;
	if (nreq < BATCH || nreq % BATCH != 0) {
		fprintf(stderr, "usage: varfields N (N a multiple of %d)\n", BATCH);
		return 2;
	}
	if (7919 < nreq) {
		fprintf(stderr, "varfields: at most 7919 requests\n");
		return 2;
	}
	ring = calloc(nreq, sizeof *ring);
	began = calloc(nreq, sizeof *began);
	ended = calloc(nreq, sizeof *ended);
	pthread_t th;
	pthread_create(&th, NULL, consumer, NULL);
	struct req r;
	for (int i = 0; i < nreq; i++) {
		memset(&r, 0, sizeof r);
		snprintf(r.tag, sizeof r.tag, "r%d", i);
		r.hdr.kind = i % 3;
		r.hdr.id = id_of(i);
		struct job mine = {.prio = i % 2, .req = &r};
		begin(&mine);
		struct req *copy = malloc(sizeof *copy);
		*copy = r;
		pthread_mutex_lock(&mu);
		ring[tail] = (struct job){.prio = i % 2, .req = copy};
		tail++;
		pthread_cond_signal(&cv);
		pthread_mutex_unlock(&mu);
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	pthread_join(th, NULL);
	for (int i = 0; i < nreq; i++)
		printf("lat %ld %llu\n", id_of(i), (unsigned long long)(ended[i] - began[i]));
	return 0;
}
