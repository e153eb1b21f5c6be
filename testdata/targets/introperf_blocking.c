/* IntroPerf e2e target: time lost blocking, which a CPU profile cannot see.
 *
 *   introperf_blocking ROUNDS ENTRIES
 *
 * Three worker threads insert ENTRIES entries per round into a shared table
 * guarded by a mutex; a flusher thread empties the table every round. When a
 * round leaves more than FLUSH_SYNC entries (the buggy input), the flusher
 * writes them out synchronously while still holding the lock: it sleeps
 * (standing in for a slow device) inside flush_table_locked, and the workers
 * wait for the mutex in insert_entry. The threads are off the CPU for most
 * of the run: only the stacks taken at context switches show where they
 * wait. A base run uses ENTRIES <= FLUSH_SYNC. The flusher runs 4 * ROUNDS
 * rounds and on until the workers are done, so the workers meet the lock
 * held however slowly a busy machine runs them. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define FLUSH_SYNC 64
#define WORKERS 3

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static long table[1 << 16];
static long table_len;
static long rounds, entries;
static atomic_int workers_done;
volatile unsigned long sink;

__attribute__((noinline)) long compute_entry(long r, long i) {
	unsigned long h = (unsigned long)(r * 7919 + i);
	for (int k = 0; k < 2000; k++)
		h = h * 6364136223846793005UL + 1442695040888963407UL;
	return (long)(h >> 17);
}

__attribute__((noinline)) void insert_entry(long v) {
	pthread_mutex_lock(&table_lock);
	if (table_len < (1 << 16))
		table[table_len++] = v;
	pthread_mutex_unlock(&table_lock);
}

__attribute__((noinline)) void *worker(void *arg) {
	long id = (long)arg;
	for (long r = 0; r < rounds; r++)
		for (long i = 0; i < entries; i++)
			insert_entry(compute_entry(r * WORKERS + id, i));
	return NULL;
}

__attribute__((noinline)) void write_out_slowly(long n) {
	/* A synchronous write to a slow device. */
	struct timespec ts = {0, 200000 + n * 2000};
	nanosleep(&ts, NULL);
}

__attribute__((noinline)) void flush_table_locked(void) {
	for (long i = 0; i < table_len; i++)
		sink += table[i];
	if (table_len > FLUSH_SYNC)
		write_out_slowly(table_len); /* BUG: sleeps holding table_lock */
	table_len = 0;
}

__attribute__((noinline)) void *flusher(void *arg) {
	(void)arg;
	for (long r = 0; r < rounds * 4 || !atomic_load(&workers_done); r++) {
		pthread_mutex_lock(&table_lock);
		flush_table_locked();
		pthread_mutex_unlock(&table_lock);
		usleep(500);
	}
	return NULL;
}

int main(int argc, char **argv) {
	rounds = argc > 1 ? atol(argv[1]) : 100;
	entries = argc > 2 ? atol(argv[2]) : 200;
	pthread_t w[WORKERS], f;
	pthread_create(&f, NULL, flusher, NULL);
	for (long i = 0; i < WORKERS; i++)
		pthread_create(&w[i], NULL, worker, (void *)i);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(w[i], NULL);
	atomic_store(&workers_done, 1);
	pthread_join(f, NULL);
	printf("%lu\n", sink & 0xff);
	return 0;
}
