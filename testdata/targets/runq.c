// runq: more threads than CPUs, each spinning in work, sleeping 100 µs
// (nanosleep: a timer interrupt wakes it, on whatever task the CPU runs)
// and passing a token around a ring: a thread waits on a condition
// variable for its turn every few rounds. Its time is on the CPU,
// waiting for one (others spin), asleep, and blocked on a lock the
// thread before it in the ring ends. Its rounds done, each thread blocks
// for good, and main prints, for each, its thread id and the kernel's
// schedstat of it (/proc/self/task/TID/schedstat: time on the CPU, time
// waiting on a run queue, times run): "tid TID CPU_NS RUN_DELAY_NS
// PCOUNT", after "at NS", the time it read them (CLOCK_MONOTONIC).
// Usage: runq THREADS ROUNDS
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int nthreads, rounds;
static int turn;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pthread_cond_t donecv = PTHREAD_COND_INITIALIZER, never = PTHREAD_COND_INITIALIZER;
static long tids[64];
static int done;

static long long now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

// work spins for us microseconds of the wall clock.
__attribute__((noinline)) void work(int us) {
	long long end = now() + us * 1000LL;
	while (now() < end) {
	}
}

static void *run(void *arg) {
	int me = (int)(long)arg;
	for (int r = 0; r < rounds; r++) {
		work(300);
		struct timespec d = {0, 100000};
		nanosleep(&d, 0);
		if (r % 4 == 0) {
			pthread_mutex_lock(&mu);
			while (turn != me)
				pthread_cond_wait(&cv, &mu);
			turn = (turn + 1) % nthreads;
			pthread_cond_broadcast(&cv);
			pthread_mutex_unlock(&mu);
		}
	}
	// Done: block for good (the process's exit ends the thread), so that
	// main reads the kernel's final account of it.
	pthread_mutex_lock(&mu);
	tids[me] = syscall(SYS_gettid);
	done++;
	pthread_cond_signal(&donecv);
	for (;;)
		pthread_cond_wait(&never, &mu);
	return 0;
}

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: runq THREADS ROUNDS\n");
		return 2;
	}
	nthreads = atoi(argv[1]);
	rounds = atoi(argv[2]);
	if (nthreads < 1 || nthreads > 64 || rounds < 1) {
		fprintf(stderr, "runq: 1 to 64 threads, at least 1 round\n");
		return 2;
	}
	pthread_t th[64];
	for (int i = 0; i < nthreads; i++)
		pthread_create(&th[i], 0, run, (void *)(long)i);
	pthread_mutex_lock(&mu);
	while (done < nthreads)
		pthread_cond_wait(&donecv, &mu);
	pthread_mutex_unlock(&mu);
	// The time of the account (CLOCK_MONOTONIC, the recordings' clock):
	// the threads' exit after it is not in their schedstat.
	printf("at %lld\n", now());
	for (int i = 0; i < nthreads; i++) {
		char p[64], b[128];
		snprintf(p, sizeof p, "/proc/self/task/%ld/schedstat", tids[i]);
		FILE *f = fopen(p, "r");
		if (!f || !fgets(b, sizeof b, f)) {
			perror("runq: schedstat");
			return 1;
		}
		fclose(f);
		printf("tid %ld %s", tids[i], b);
	}
	fflush(stdout);
	_exit(0);
}
