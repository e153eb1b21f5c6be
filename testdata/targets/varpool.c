// A thread-pool server for culprit variance: W workers take N requests
// from a shared queue and run handle(), which calls functions of known
// lengths. The program times every function of every request itself, over
// the span its probes time: from just before the call (in the caller; the
// entry probe's trap, and a preemption on leaving it, are the callee's)
// to the callee's last statement (the return probe's trap is not), and
// prints each request ("req START_NS t[handle] t[parse] ..." in the order
// of names[], ns, CLOCK_MONOTONIC as the probes' clock) and each
// function's true share of the variance of handle's latency over all
// requests ("share NAME X"; a pair "share a,b X" is 2·Cov).
//
//   varpool dominant N W   handle → parse, process → {lookup, compute},
//                          respond; compute waits 10 ms more in one request
//                          of five, everything else is steady
//   varpool together N W   handle → parse, part_a, part_b, respond;
//                          part_a and part_b both wait 10 ms more in one
//                          request of three
//   varpool lock N W [MS]  handle → parse, locked_update, respond;
//                          locked_update takes a mutex that a thread
//                          named "holder" keeps for MS ms at a time (in
//                          hold_big; 4 if not given), every 2·MS ms: its
//                          waits are lock waits the holder ends; the
//                          holder's own waits for the mutex (a worker
//                          keeps it 5 µs) inside hold_big are printed,
//                          summed, as "holder_wait NS"
//   varpool handoff N      the main thread submit()s a request every 2 ms
//                          into a queue; a consumer thread complete()s
//                          them, one in four 2 ms slower; each request's
//                          latency (submit's entry to complete's return)
//                          is printed as "lat ID NS"
//
// The slow parts sleep rather than spin: a busy machine's preemptions
// then add little to the variance the program sets, which stays the
// largest by far.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define INLINE static inline __attribute__((always_inline))
#define PROBED __attribute__((noinline))

INLINE uint64_t now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

// spin busies the CPU until ns have passed on the clock: the time does
// not grow when the thread is preempted, so lengths stay as set.
INLINE void spin(uint64_t ns) {
	uint64_t end = now_ns() + ns;
	while (now_ns() < end)
		;
}

INLINE void wait_ns(uint64_t ns) {
	struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
	nanosleep(&ts, NULL);
}

enum { F_HANDLE, F_PARSE, F_PROCESS, F_LOOKUP, F_COMPUTE, F_RESPOND, F_A, F_B, NF };
static const char *names[NF] = {"handle", "parse", "process", "lookup", "compute", "respond", "part_a", "part_b"};

struct req {
	int id;
	int heavy;
	uint64_t start;  // when handle was called
	uint64_t t[NF];  // ns each function took
	uint64_t t0[NF]; // when its current call was made
};

static struct req *reqs;
static int nreq, next_req, together, locking;
static volatile int done_work;
static pthread_mutex_t big = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

// CALL times a call of f from just before it; the callee ENDs its time
// at its last statement.
#define CALL(r, f, call)               \
	do {                               \
		(r)->t0[f] = now_ns();         \
		call;                          \
	} while (0)
#define END(r, f) ((r)->t[f] += now_ns() - (r)->t0[f])

PROBED void parse(struct req *r) {
	spin(10000);
	END(r, F_PARSE);
}
PROBED void lookup(struct req *r) {
	spin(5000);
	END(r, F_LOOKUP);
}
PROBED void compute(struct req *r) {
	spin(20000);
	if (r->heavy)
		wait_ns(10000000);
	END(r, F_COMPUTE);
}
PROBED void process(struct req *r) {
	CALL(r, F_LOOKUP, lookup(r));
	CALL(r, F_COMPUTE, compute(r));
	spin(5000);
	END(r, F_PROCESS);
}
PROBED void part_a(struct req *r) {
	spin(30000);
	if (r->heavy)
		wait_ns(10000000);
	END(r, F_A);
}
PROBED void part_b(struct req *r) {
	spin(30000);
	if (r->heavy)
		wait_ns(10000000);
	END(r, F_B);
}
PROBED void locked_update(struct req *r) {
	(void)r;
	pthread_mutex_lock(&big);
	spin(5000);
	pthread_mutex_unlock(&big);
}

static uint64_t holder_wait;         // ns hold_big waited for the mutex
static uint64_t hold_ns = 4000000;   // how long hold_big keeps it

// hold_big keeps the mutex hold_ns.
PROBED void hold_big(void) {
	uint64_t t = now_ns();
	pthread_mutex_lock(&big);
	holder_wait += now_ns() - t;
	wait_ns(hold_ns);
	pthread_mutex_unlock(&big);
}

static void *holder(void *arg) {
	(void)arg;
	pthread_setname_np(pthread_self(), "holder");
	while (!done_work) {
		hold_big();
		wait_ns(hold_ns);
	}
	return NULL;
}

PROBED void respond(struct req *r) {
	spin(10000);
	END(r, F_RESPOND);
}

PROBED void handle(struct req *r) {
	CALL(r, F_PARSE, parse(r));
	if (locking) {
		locked_update(r);
	} else if (together) {
		CALL(r, F_A, part_a(r));
		CALL(r, F_B, part_b(r));
	} else {
		CALL(r, F_PROCESS, process(r));
	}
	CALL(r, F_RESPOND, respond(r));
	END(r, F_HANDLE);
}

// The hand-off queue: ids in a ring, a condition variable for the consumer.
static int *ring, head, tail;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static uint64_t *sub_at, *done_at;

PROBED void submit(int id) {
	sub_at[id] = now_ns();
	spin(10000);
	pthread_mutex_lock(&mu);
	ring[tail++] = id;
	pthread_cond_signal(&cv);
	pthread_mutex_unlock(&mu);
}

PROBED void complete(int id) {
	spin(20000);
	if (id % 4 == 0)
		wait_ns(2000000);
	done_at[id] = now_ns();
}

static void *consumer(void *arg) {
	(void)arg;
	for (int n = 0; n < nreq; n++) {
		pthread_mutex_lock(&mu);
		while (head == tail)
			pthread_cond_wait(&cv, &mu);
		int id = ring[head++];
		pthread_mutex_unlock(&mu);
		complete(id);
	}
	return NULL;
}

static int handoff(void) {
	ring = calloc(nreq, sizeof *ring);
	sub_at = calloc(nreq, sizeof *sub_at);
	done_at = calloc(nreq, sizeof *done_at);
	pthread_t th;
	pthread_create(&th, NULL, consumer, NULL);
	for (int i = 0; i < nreq; i++) {
		submit(i);
		wait_ns(2000000);
	}
	pthread_join(th, NULL);
	for (int i = 0; i < nreq; i++)
		printf("lat %d %llu\n", i, (unsigned long long)(done_at[i] - sub_at[i]));
	return 0;
}

static void *worker(void *arg) {
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&mu);
		int i = next_req < nreq ? next_req++ : -1;
		pthread_mutex_unlock(&mu);
		if (i < 0)
			return NULL;
		CALL(&reqs[i], F_HANDLE, handle(&reqs[i]));
		reqs[i].start = reqs[i].t0[F_HANDLE];
	}
}

static double cov(int f, int g) {
	double mf = 0, mg = 0, s = 0;
	for (int i = 0; i < nreq; i++) {
		mf += reqs[i].t[f];
		mg += reqs[i].t[g];
	}
	mf /= nreq;
	mg /= nreq;
	for (int i = 0; i < nreq; i++)
		s += (reqs[i].t[f] - mf) * (reqs[i].t[g] - mg);
	return s / (nreq - 1);
}

int main(int argc, char **argv) {
	if (argc == 3 && !strcmp(argv[1], "handoff")) {
		nreq = atoi(argv[2]);
		if (nreq < 1) {
			fprintf(stderr, "varpool: N must be at least 1\n");
			return 2;
		}
		return handoff();
	}
	locking = argc >= 2 && !strcmp(argv[1], "lock");
	if ((argc != 4 && !(locking && argc == 5)) ||
	    (strcmp(argv[1], "dominant") && strcmp(argv[1], "together") && !locking)) {
		fprintf(stderr, "usage: varpool dominant|together N WORKERS, varpool lock N WORKERS [HOLD_MS], or varpool handoff N\n");
		return 2;
	}
	together = !strcmp(argv[1], "together");
	if (argc == 5) {
		int ms = atoi(argv[4]);
		if (ms < 1 || ms > 1000) {
			fprintf(stderr, "varpool: HOLD_MS must be from 1 to 1000\n");
			return 2;
		}
		hold_ns = (uint64_t)ms * 1000000u;
	}
	nreq = atoi(argv[2]);
	int nw = atoi(argv[3]);
	if (nreq < 2 || nw < 1 || nw > 64) {
		fprintf(stderr, "varpool: N must be at least 2, WORKERS from 1 to 64\n");
		return 2;
	}
	reqs = calloc(nreq, sizeof *reqs);
	uint64_t x = 88172645463325252ull;
	for (int i = 0; i < nreq; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		reqs[i].id = i;
		reqs[i].heavy = together ? x % 3 == 0 : x % 5 == 0;
	}
	pthread_t th[64], hold;
	if (locking)
		pthread_create(&hold, NULL, holder, NULL);
	for (int i = 0; i < nw; i++)
		pthread_create(&th[i], NULL, worker, NULL);
	for (int i = 0; i < nw; i++)
		pthread_join(th[i], NULL);
	if (locking) {
		done_work = 1;
		pthread_join(hold, NULL);
	}
	for (int i = 0; i < nreq; i++) {
		printf("req %llu", (unsigned long long)reqs[i].start);
		for (int f = 0; f < NF; f++)
			printf(" %llu", (unsigned long long)reqs[i].t[f]);
		printf("\n");
	}
	if (locking)
		printf("holder_wait %llu\n", (unsigned long long)holder_wait);
	double v = cov(F_HANDLE, F_HANDLE);
	if (together) {
		printf("share part_a %.4f\n", cov(F_A, F_A) / v);
		printf("share part_b %.4f\n", cov(F_B, F_B) / v);
		printf("share part_a,part_b %.4f\n", 2 * cov(F_A, F_B) / v);
	} else {
		for (int f = F_PARSE; f <= F_RESPOND; f++)
			printf("share %s %.4f\n", names[f], cov(f, f) / v);
	}
	return 0;
}
