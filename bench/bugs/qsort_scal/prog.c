/* A log merger: two worker threads take batches of log records (a 64-bit
 * timestamp key, a source and a sequence number), each a shard of the
 * input (load_batch), sort each by timestamp with the program's own
 * quicksort (sort_range) and fold it into per-source statistics
 * (summarize_batch).
 *
 * The bug (scalability): sort_range takes the first element of a range as
 * its pivot. On records in random order that is as good as any pivot; on a
 * shard that arrives already in time order every partition splits off one
 * element, and a batch of n records costs n * n / 2 comparisons instead of
 * n log n. The normal input is shards from collectors that interleave their
 * sources (random order); in the buggy input a sixth of the shards come
 * from a replica that writes them already sorted. The fix: a
 * median-of-three pivot.
 *
 *   prog normal|buggy
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define noinline __attribute__((noinline))
#define NWORKERS 2
#define BATCHES 16000
#define BATCH 4000
#define SOURCES 64

struct rec {
	uint64_t key;
	uint32_t src;
	uint32_t seq;
};

struct stats {
	uint64_t count[SOURCES];
	uint64_t last[SOURCES];
	uint64_t out_of_order;
	uint64_t checksum;
	long sorted_shards;
};

static int buggy;

static uint64_t next_rand(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* load_batch: shard k's records. Shards from the replica (buggy input,
 * every sixth) are in time order; the others interleave their sources. */
noinline int load_batch(long k, struct rec *r, long n)
{
	uint64_t s = 0x9E3779B97F4A7C15ull ^ (uint64_t)(k + 1) * 0xD1B54A32D192ED03ull;
	int in_order = buggy && k % 6 == 0;
	uint64_t t = (uint64_t)k << 32;
	for (long i = 0; i < n; i++) {
		uint64_t x = next_rand(&s);
		if (in_order)
			t += 1 + x % 1000;
		else
			t = ((uint64_t)k << 32) + x % 4000000;
		r[i].key = t;
		r[i].src = (uint32_t)(x >> 40) % SOURCES;
		r[i].seq = (uint32_t)i;
	}
	return in_order;
}

/* sort_range is the root cause: its pivot is the first element, which on
 * sorted input makes every partition one element smaller than the last. */
noinline void sort_range(struct rec *a, long lo, long hi)
{
	while (lo < hi) {
		uint64_t p = a[lo].key;
		long i = lo - 1, j = hi + 1;
		for (;;) {
			do
				i++;
			while (a[i].key < p);
			do
				j--;
			while (a[j].key > p);
			if (i >= j)
				break;
			struct rec t = a[i];
			a[i] = a[j];
			a[j] = t;
		}
		if (j - lo < hi - j) {
			sort_range(a, lo, j);
			lo = j + 1;
		} else {
			sort_range(a, j + 1, hi);
			hi = j;
		}
	}
}

noinline void summarize_batch(struct stats *st, const struct rec *r, long n)
{
	for (long i = 0; i < n; i++) {
		uint32_t s = r[i].src;
		if (i > 0 && r[i].key < r[i - 1].key)
			st->out_of_order++;
		st->count[s]++;
		st->last[s] = r[i].key;
		st->checksum = st->checksum * 31 + (r[i].key ^ r[i].seq);
	}
}

noinline void process_batch(long k, struct rec *r, struct stats *st)
{
	st->sorted_shards += load_batch(k, r, BATCH);
	sort_range(r, 0, BATCH - 1);
	summarize_batch(st, r, BATCH);
}

static void *worker(void *arg)
{
	long w = (long)arg;
	struct stats *st = calloc(1, sizeof *st);
	struct rec *r = malloc(BATCH * sizeof *r);
	if (!st || !r)
		abort();
	for (long k = w; k < BATCHES; k += NWORKERS)
		process_batch(k, r, st);
	free(r);
	return st;
}

int main(int argc, char **argv)
{
	buggy = argc > 1 && strcmp(argv[1], "buggy") == 0;
	pthread_t th[NWORKERS];
	for (long w = 0; w < NWORKERS; w++)
		pthread_create(&th[w], NULL, worker, (void *)w);
	uint64_t records = 0, bad = 0, sum = 0;
	long sorted = 0;
	for (long w = 0; w < NWORKERS; w++) {
		void *p;
		pthread_join(th[w], &p);
		struct stats *st = p;
		for (int s = 0; s < SOURCES; s++)
			records += st->count[s];
		bad += st->out_of_order;
		sum ^= st->checksum;
		sorted += st->sorted_shards;
		free(st);
	}
	printf("%ld batches (%ld already in order), %llu records, %llu out of order, checksum %llu\n",
	       (long)BATCHES, sorted, (unsigned long long)records, (unsigned long long)bad, (unsigned long long)sum);
	return bad != 0;
}
