/* A page cache simulator in the manner of the kernel's memory cgroup
 * accounting: four worker threads (worker) each replay a stream of page
 * accesses against a cache of their own (cache_access: a hit, or a miss
 * that reads the page in, read_page); every event updates the thread's own
 * statistics counters (stat_add, no lock). A miss of a page that was
 * evicted before is a refault: workingset_refault decides whether to
 * activate the page from the group's totals of active and inactive pages,
 * which it reads after folding every thread's pending counts into the
 * shared totals under the group's lock (stats_flush).
 *
 * The bug (missing constraint): stats_flush folds every time it is called;
 * it lacks the check that skips the flush while the updates pending since
 * the last one are fewer than a batch per thread (FLUSH_BATCH *
 * nthreads), a bounded error the decision tolerates. A working set that
 * fits the cache refaults rarely; one larger than the cache refaults on
 * most accesses, and every refault takes the shared lock and walks every
 * thread's counters.
 *
 *   prog normal|buggy   (a working set that fits the cache, or not)
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define noinline __attribute__((noinline))
#define NTHREADS 4
#define NSTAT 48
#define FLUSH_BATCH 64
#define ACCESSES 400000 /* per thread */
#define CACHE 16384     /* pages per thread's cache */
#define PAGE 256        /* bytes simulated per page */

enum { ST_HIT, ST_MISS, ST_REFAULT, ST_ACTIVATE, ST_ACTIVE, ST_INACTIVE, ST_EVICT };

struct pcpu {
	long delta[NSTAT];
	char pad[64];
};

struct group {
	pthread_mutex_t lock;
	long total[NSTAT];
	long pending; /* updates since the last flush (atomic) */
	long flushes;
};

struct slot {
	uint64_t page;
	uint32_t active, gen;
	unsigned char data[PAGE];
};

struct worker_arg {
	int id;
	uint64_t wset; /* pages in the working set */
	struct slot *cache;
	uint8_t *seen; /* pages evicted before: a miss on one is a refault */
	long refaults, activated;
	uint32_t sum;
};

static struct group grp = {.lock = PTHREAD_MUTEX_INITIALIZER};
static struct pcpu pc[NTHREADS];

noinline void stat_add(int id, int item, long v)
{
	__atomic_store_n(&pc[id].delta[item], pc[id].delta[item] + v, __ATOMIC_RELAXED);
	__atomic_fetch_add(&grp.pending, 1, __ATOMIC_RELAXED);
}

/* stats_flush is the root cause: it folds on every call (fix: return while
 * grp.pending < FLUSH_BATCH * NTHREADS). */
noinline void stats_flush(void)
{
	pthread_mutex_lock(&grp.lock);
	for (int t = 0; t < NTHREADS; t++)
		for (int i = 0; i < NSTAT; i++)
			grp.total[i] += __atomic_exchange_n(&pc[t].delta[i], 0, __ATOMIC_RELAXED);
	__atomic_store_n(&grp.pending, 0, __ATOMIC_RELAXED);
	grp.flushes++;
	pthread_mutex_unlock(&grp.lock);
}

noinline int workingset_refault(int id)
{
	stats_flush();
	long active = __atomic_load_n(&grp.total[ST_ACTIVE], __ATOMIC_RELAXED);
	long inactive = __atomic_load_n(&grp.total[ST_INACTIVE], __ATOMIC_RELAXED);
	int activate = active <= inactive;
	stat_add(id, ST_REFAULT, 1);
	if (activate)
		stat_add(id, ST_ACTIVATE, 1);
	return activate;
}

noinline uint32_t read_page(struct slot *s, uint64_t page)
{
	uint32_t h = (uint32_t)page * 2654435761u;
	for (int i = 0; i < PAGE; i++) {
		h = h * 1103515245u + 12345u;
		s->data[i] = (unsigned char)(h >> 16);
	}
	return h;
}

noinline uint32_t cache_access(struct worker_arg *w, uint64_t page)
{
	struct slot *s = &w->cache[(page * 0x9e3779b97f4a7c15ULL) >> 50 & (CACHE - 1)];
	if (s->gen && s->page == page) {
		stat_add(w->id, ST_HIT, 1);
		uint32_t c = 0;
		for (int i = 0; i < PAGE; i++)
			c = (c << 3 | c >> 29) ^ s->data[i];
		return c;
	}
	if (s->gen) {
		w->seen[s->page] = 1;
		stat_add(w->id, ST_EVICT, 1);
		stat_add(w->id, s->active ? ST_ACTIVE : ST_INACTIVE, -1);
	}
	stat_add(w->id, ST_MISS, 1);
	int act = 0;
	if (w->seen[page]) {
		w->refaults++;
		act = workingset_refault(w->id);
		w->activated += act;
	}
	s->page = page;
	s->gen++;
	s->active = (uint32_t)act;
	stat_add(w->id, act ? ST_ACTIVE : ST_INACTIVE, 1);
	return read_page(s, page);
}

noinline void *worker(void *p)
{
	struct worker_arg *w = p;
	uint64_t x = 0x9e3779b97f4a7c15ULL * (uint64_t)(w->id + 1);
	for (long i = 0; i < ACCESSES; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		/* four accesses in five go to the hottest eighth of the set */
		uint64_t page = (x >> 8) % 5 ? (x >> 24) % (w->wset / 8 + 1) : (x >> 24) % w->wset;
		w->sum += cache_access(w, page);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 2 || (strcmp(argv[1], "normal") && strcmp(argv[1], "buggy"))) {
		fprintf(stderr, "usage: prog normal|buggy\n");
		return 2;
	}
	/* normal: a working set of 12,000 pages per thread (the cache holds
	 * 16,384); buggy: of 400,000 */
	uint64_t wset = strcmp(argv[1], "buggy") == 0 ? 400000 : 12000;
	pthread_t th[NTHREADS];
	struct worker_arg w[NTHREADS];
	for (int i = 0; i < NTHREADS; i++) {
		w[i] = (struct worker_arg){.id = i, .wset = wset};
		w[i].cache = calloc(CACHE, sizeof *w[i].cache);
		w[i].seen = calloc(wset, 1);
		if (!w[i].cache || !w[i].seen)
			return 1;
		if (pthread_create(&th[i], NULL, worker, &w[i]) != 0) {
			fprintf(stderr, "pthread_create failed\n");
			return 1;
		}
	}
	long refaults = 0, activated = 0;
	uint32_t sum = 0;
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(th[i], NULL);
		refaults += w[i].refaults;
		activated += w[i].activated;
		sum ^= w[i].sum;
	}
	stats_flush();
	printf("%ld refaults, %ld activated, %ld flushes, hits %ld misses %ld, sum %08x\n", refaults, activated, grp.flushes,
	       grp.total[ST_HIT], grp.total[ST_MISS], sum);
	return 0;
}
