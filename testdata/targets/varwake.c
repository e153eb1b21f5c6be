// A request that waits on another thread, for culprit variance --sched:
// the main thread handle()s N requests one after the other; each hands
// its job to a helper thread and sleeps until the helper says it is done.
// What makes the requests' latency vary runs on the helper, in a function
// the interval's thread never calls: slow_lookup, which waits 4 ms in
// one request of four and 100 µs in the others.
//
//   varwake nested N   helper_loop → take_job, serve → {slow_lookup,
//                      encode}, reply (reply wakes the requester)
//   varwake flat N     helper_loop → take_job, slow_lookup, encode and
//                      wakes the requester itself: the function on the
//                      waker's stack at the wake-up is its thread's loop,
//                      which never returns
//
// The program times every request and slow_lookup itself and prints
// "req START t[handle] t[slow_lookup]" (ns, CLOCK_MONOTONIC as the
// probes' clock), over the spans the probes time: from just before the
// call (the entry probe's trap, and a wait for a CPU when it returns, are
// in the call's time) to the function's last statement (the return
// probe's time stamp comes before the wait that can follow its trap).
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

// spin busies the CPU until ns have passed on the clock.
INLINE void spin(uint64_t ns) {
	uint64_t end = now_ns() + ns;
	while (now_ns() < end)
		;
}

INLINE void wait_ns(uint64_t ns) {
	struct timespec ts = {0, (long)ns};
	nanosleep(&ts, NULL);
}

struct job {
	int id;
	uint64_t start, handle, slow_called, slow;
	volatile int done;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t to_helper = PTHREAD_COND_INITIALIZER;
static pthread_cond_t to_main = PTHREAD_COND_INITIALIZER;
static struct job *slot;
static int stopping;

PROBED void slow_lookup(struct job *j) {
	wait_ns(j->id % 4 == 0 ? 4000000 : 100000);
	j->slow = now_ns() - j->slow_called;
}

PROBED void encode(struct job *j) {
	spin(20000);
	__asm__ volatile("" ::"r"(j) : "memory");
}

PROBED struct job *take_job(void) {
	pthread_mutex_lock(&mu);
	while (!slot && !stopping)
		pthread_cond_wait(&to_helper, &mu);
	struct job *j = slot;
	slot = NULL;
	pthread_mutex_unlock(&mu);
	return j;
}

PROBED void reply(struct job *j) {
	pthread_mutex_lock(&mu);
	j->done = 1;
	pthread_cond_signal(&to_main);
	pthread_mutex_unlock(&mu);
}

PROBED void serve(struct job *j) {
	j->slow_called = now_ns();
	slow_lookup(j);
	encode(j);
	reply(j);
}

static int flat;

PROBED void *helper_loop(void *arg) {
	(void)arg;
	for (;;) {
		struct job *j = take_job();
		if (!j)
			return NULL;
		if (!flat) {
			serve(j);
			continue;
		}
		j->slow_called = now_ns();
		slow_lookup(j);
		encode(j);
		pthread_mutex_lock(&mu);
		j->done = 1;
		pthread_cond_signal(&to_main);
		pthread_mutex_unlock(&mu);
	}
}

PROBED void prepare(struct job *j) {
	spin(20000);
	__asm__ volatile("" ::"r"(j) : "memory");
}

PROBED void submit(struct job *j) {
	pthread_mutex_lock(&mu);
	slot = j;
	pthread_cond_signal(&to_helper);
	pthread_mutex_unlock(&mu);
}

PROBED void wait_reply(struct job *j) {
	pthread_mutex_lock(&mu);
	while (!j->done)
		pthread_cond_wait(&to_main, &mu);
	pthread_mutex_unlock(&mu);
}

PROBED void handle(struct job *j) {
	prepare(j);
	submit(j);
	wait_reply(j);
	j->handle = now_ns() - j->start;
}

int main(int argc, char **argv) {
	if (argc != 3 || (strcmp(argv[1], "nested") && strcmp(argv[1], "flat"))) {
		fprintf(stderr, "usage: varwake nested|flat N\n");
		return 2;
	}
	flat = !strcmp(argv[1], "flat");
	int n = atoi(argv[2]);
	struct job *jobs = calloc(n, sizeof *jobs);
	pthread_t th;
	pthread_create(&th, NULL, helper_loop, NULL);
	pthread_setname_np(th, "helper");
	for (int i = 0; i < n; i++) {
		struct job *j = &jobs[i];
		j->id = i;
		j->start = now_ns();
		handle(j);
	}
	pthread_mutex_lock(&mu);
	stopping = 1;
	pthread_cond_signal(&to_helper);
	pthread_mutex_unlock(&mu);
	pthread_join(th, NULL);
	for (int i = 0; i < n; i++)
		printf("req %llu %llu %llu\n", (unsigned long long)jobs[i].start, (unsigned long long)jobs[i].handle,
		       (unsigned long long)jobs[i].slow);
	return 0;
}
