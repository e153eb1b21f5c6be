/* A buffer pool with an LRU list, after MariaDB MDEV-23399 (vProf's Fig. 5):
 * a scalability bug.
 *
 * A page read that misses the pool takes a free block; when there is none,
 * buf_lru_scan_and_free() walks the LRU list from its tail for a block it may
 * evict (clean, not fixed, not in I/O), looking at each block under its
 * mutex. The page cleaner flushes the oldest dirty blocks in batches every few
 * requests; when no block is clean the miss flushes the tail block itself.
 * With a working set much larger than the pool and only writes, the
 * cleaner falls behind, every block is dirty, and each miss walks the whole
 * LRU list: the number of blocks scanned per miss grows with the pool. The
 * scan loop itself costs little: its time goes to the block mutexes and
 * checks it calls (each touches another cache line of a scattered block).
 *
 * A log writer thread checksums the redo log buffer meanwhile.
 *
 *   vprof_scal normal|buggy [requests] [pool_blocks]
 *
 * normal: a working set of 1.2 × the pool, 20% writes, 400000 requests (the
 * cleaner keeps up, scans are short);
 * buggy: 20 × the pool, only writes (a bulk load), 28000 requests (the first 20000 fill the
 * pool). Prints a checksum. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define noinline __attribute__((noinline))
#define PAGE_SIZE 1024
#define HASH_SIZE (1 << 16)

struct block {
	struct block *prev, *next; /* LRU list: head is the most recent */
	struct block *hash_next;
	struct block *flush_next; /* dirty blocks, oldest first */
	atomic_int mutex;
	long page_no; /* −1: free */
	int dirty;
	int fix_count;
	int io_fix;
	uint64_t newest_modification; /* the LSN of the last change */
	unsigned char *frame;
};

struct pool {
	struct block *lru_head, *lru_tail;
	struct block *free;
	struct block *flush_head, *flush_tail;
	struct block *hash[HASH_SIZE];
	long n_blocks;
	long n_dirty;
	uint64_t writes, reads;
	uint64_t lru_scanned;
	struct block *lru_hp; /* the LRU iterator's hazard pointer */
};

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

noinline void block_mutex_enter(struct block *b)
{
	for (int spins = 0; atomic_exchange_explicit(&b->mutex, 1, memory_order_acquire); spins++)
		__builtin_ia32_pause();
}

noinline void block_mutex_exit(struct block *b)
{
	atomic_store_explicit(&b->mutex, 0, memory_order_release);
}

noinline int buf_page_can_relocate(const struct block *b)
{
	return b->fix_count == 0 && b->io_fix == 0;
}

/* block_ready_for_replace: a block may be evicted when it is in use for a
 * page, clean (the LSN in its frame is the last one written) and neither
 * fixed nor in I/O. */
noinline int block_ready_for_replace(const struct block *b)
{
	uint64_t lsn;
	memcpy(&lsn, b->frame + 16, 8); /* FIL_PAGE_LSN */
	return lsn == b->newest_modification && b->page_no >= 0 && !b->dirty && buf_page_can_relocate(b);
}

/* lru_itr_prev steps the LRU iterator towards the head, keeping the hazard
 * pointer a concurrent eviction would adjust. */
noinline struct block *lru_itr_prev(struct pool *pool, const struct block *b)
{
	struct block *p = b == pool->lru_head ? NULL : b->prev;
	pool->lru_hp = p;
	return p != NULL && p->page_no >= -1 ? p : NULL;
}

static void lru_remove(struct pool *pool, struct block *b)
{
	if (b->prev)
		b->prev->next = b->next;
	else
		pool->lru_head = b->next;
	if (b->next)
		b->next->prev = b->prev;
	else
		pool->lru_tail = b->prev;
	b->prev = b->next = NULL;
}

static void lru_add_head(struct pool *pool, struct block *b)
{
	b->prev = NULL;
	b->next = pool->lru_head;
	if (pool->lru_head)
		pool->lru_head->prev = b;
	pool->lru_head = b;
	if (!pool->lru_tail)
		pool->lru_tail = b;
}

static void hash_remove(struct pool *pool, struct block *b)
{
	struct block **p = &pool->hash[b->page_no & (HASH_SIZE - 1)];
	while (*p && *p != b)
		p = &(*p)->hash_next;
	if (*p)
		*p = b->hash_next;
}

noinline uint32_t page_checksum(const unsigned char *frame)
{
	uint32_t a = 1, s = 0;
	for (int i = 0; i < PAGE_SIZE; i++) {
		a = (a + frame[i]) % 65521;
		s = (s + a) % 65521;
	}
	return s << 16 | a;
}

/* write_page writes a dirty block out (checksums its frame). */
noinline void write_page(struct pool *pool, struct block *b)
{
	uint32_t c = page_checksum(b->frame);
	memcpy(b->frame + PAGE_SIZE - 4, &c, 4);
	b->dirty = 0;
	pool->n_dirty--;
	pool->writes++;
}

/* flush_batch is the page cleaner: it writes the n oldest dirty blocks. */
noinline void flush_batch(struct pool *pool, int n)
{
	for (int k = 0; k < n && pool->flush_head; k++) {
		struct block *b = pool->flush_head;
		pool->flush_head = b->flush_next;
		if (!pool->flush_head)
			pool->flush_tail = NULL;
		b->flush_next = NULL;
		if (b->dirty)
			write_page(pool, b);
	}
}

/* buf_lru_free_page_try looks at a block under its mutex: may it be
 * evicted? */
noinline int buf_lru_free_page_try(struct block *b)
{
	block_mutex_enter(b);
	int ready = block_ready_for_replace(b);
	block_mutex_exit(b);
	return ready;
}

/* buf_lru_scan_and_free is the root cause: it walks the whole LRU list for
 * a clean block, however long the list. */
noinline int buf_lru_scan_and_free(struct pool *pool)
{
	long scanned = 0;
	int freed = 0;
	for (struct block *b = pool->lru_tail; b != NULL; b = lru_itr_prev(pool, b), scanned++) {
		if (buf_lru_free_page_try(b)) {
			lru_remove(pool, b);
			hash_remove(pool, b);
			b->page_no = -1;
			b->next = pool->free;
			pool->free = b;
			freed = 1;
			break;
		}
	}
	pool->lru_scanned += scanned; /* the monitor counter of blocks scanned */
	return freed;
}

/* buf_flush_single_page writes the LRU tail block when nothing is clean. */
noinline void buf_flush_single_page(struct pool *pool)
{
	struct block *b = pool->lru_tail;
	if (b && b->dirty)
		write_page(pool, b);
}

noinline struct block *free_list_pop(struct pool *pool)
{
	struct block *b = pool->free;
	pool->free = b->next;
	b->next = NULL;
	return b;
}

noinline struct block *buf_get_free_block(struct pool *pool)
{
	for (;;) {
		if (pool->free)
			return free_list_pop(pool);
		if (!buf_lru_scan_and_free(pool))
			buf_flush_single_page(pool);
	}
}

noinline struct block *buf_alloc_block(struct pool *pool)
{
	struct block *b = buf_get_free_block(pool);
	b->dirty = 0;
	b->fix_count = 0;
	return b;
}

/* read_page fills a frame as reading the page from disk would. */
noinline void read_page(unsigned char *frame, long page_no)
{
	uint64_t s = (uint64_t)page_no * 0x9e3779b97f4a7c15ull + 1;
	for (int i = 0; i < PAGE_SIZE; i += 8) {
		uint64_t v = rng_next(&s);
		memcpy(frame + i, &v, 8);
	}
}

noinline struct block *buf_page_get(struct pool *pool, long page_no, int write)
{
	struct block *b = pool->hash[page_no & (HASH_SIZE - 1)];
	while (b && b->page_no != page_no)
		b = b->hash_next;
	if (b) {
		lru_remove(pool, b);
		lru_add_head(pool, b);
	} else {
		b = buf_alloc_block(pool);
		read_page(b->frame, page_no);
		memcpy(&b->newest_modification, b->frame + 16, 8);
		pool->reads++;
		b->page_no = page_no;
		b->hash_next = pool->hash[page_no & (HASH_SIZE - 1)];
		pool->hash[page_no & (HASH_SIZE - 1)] = b;
		lru_add_head(pool, b);
	}
	if (write) {
		b->frame[32 + (page_no & (PAGE_SIZE - 64))]++;
		b->newest_modification++;
		memcpy(b->frame + 16, &b->newest_modification, 8);
		if (!b->dirty) {
			b->dirty = 1;
			pool->n_dirty++;
			if (!b->flush_next && b != pool->flush_tail) {
				if (pool->flush_tail)
					pool->flush_tail->flush_next = b;
				else
					pool->flush_head = b;
				pool->flush_tail = b;
			}
		}
	}
	return b;
}

static struct pool *pool_create(long n_blocks, uint64_t *seed)
{
	struct pool *pool = calloc(1, sizeof *pool);
	pool->n_blocks = n_blocks;
	struct block *blocks = calloc(n_blocks, sizeof *blocks);
	unsigned char *frames = malloc((size_t)n_blocks * PAGE_SIZE);
	/* free list in a shuffled order: blocks end up scattered in memory
	 * along the LRU list, as in a pool that has run for a while */
	long *order = malloc(n_blocks * sizeof *order);
	for (long i = 0; i < n_blocks; i++)
		order[i] = i;
	for (long i = n_blocks - 1; i > 0; i--) {
		long j = (long)(rng_next(seed) % (uint64_t)(i + 1));
		long t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	for (long i = 0; i < n_blocks; i++) {
		struct block *b = &blocks[order[i]];
		b->page_no = -1;
		b->frame = frames + (size_t)order[i] * PAGE_SIZE;
		b->next = pool->free;
		pool->free = b;
	}
	free(order);
	return pool;
}

/* The log writer checksums the redo log buffer every millisecond. */
struct logwriter {
	unsigned char buf[64 * 1024];
	atomic_int stop;
	uint64_t out;
	clockid_t paced_by; /* the CPU-time clock of the thread serving requests */
	long long due;      /* its time of the next pass, ns */
};

noinline uint64_t log_block_checksum(const unsigned char *p, int n)
{
	uint64_t h = 14695981039346656037ull;
	for (int i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

/* The log writer checksums the buffer for every 1 ms of CPU time the
 * requests use (every 1 ms on an idle machine): paced by their CPU time,
 * not the wall clock, its share of the run is the same however busy the
 * machine is. checksum_due waits for the next pass; 0 once the writer is
 * to stop. */
noinline int checksum_due(struct logwriter *lw)
{
	struct timespec nap = {0, 250000};
	while (!atomic_load_explicit(&lw->stop, memory_order_relaxed)) {
		struct timespec ts;
		clock_gettime(lw->paced_by, &ts);
		long long t = ts.tv_sec * 1000000000LL + ts.tv_nsec;
		if (t >= lw->due) {
			lw->due = t + 1000000;
			return 1;
		}
		nanosleep(&nap, NULL);
	}
	return 0;
}

noinline void *log_writer(void *arg)
{
	struct logwriter *lw = arg;
	uint64_t sum = 0;
	while (checksum_due(lw)) {
		for (int off = 0; off < (int)sizeof lw->buf; off += 512)
			sum += log_block_checksum(lw->buf + off, 512);
	}
	lw->out = sum;
	return NULL;
}

struct config {
	long requests;
	long pool_blocks;
	long working_set;
	int write_pct;
};

static void parse_args(int argc, char **argv, struct config *cfg)
{
	int buggy = argc > 1 && strcmp(argv[1], "buggy") == 0;
	cfg->requests = argc > 2 ? atol(argv[2]) : buggy ? 28000 : 400000;
	cfg->pool_blocks = argc > 3 ? atol(argv[3]) : 20000;
	cfg->working_set = buggy ? cfg->pool_blocks * 20 : cfg->pool_blocks * 12 / 10;
	cfg->write_pct = buggy ? 100 : 20;
}

/* run_workload reads and writes random pages; the page cleaner runs every
 * 512 requests. */
noinline uint64_t run_workload(const struct config *cfg)
{
	uint64_t seed = 0x853c49e6748fea9bull;
	struct pool *pool = pool_create(cfg->pool_blocks, &seed);
	struct logwriter *lw = calloc(1, sizeof *lw);
	pthread_getcpuclockid(pthread_self(), &lw->paced_by);
	pthread_t th;
	pthread_create(&th, NULL, log_writer, lw);
	uint64_t sum = 0;
	for (long r = 0; r < cfg->requests; r++) {
		uint64_t x = rng_next(&seed);
		struct block *b = buf_page_get(pool, (long)(x % (uint64_t)cfg->working_set), (int)(x >> 40) % 100 < cfg->write_pct);
		sum += b->frame[r & (PAGE_SIZE - 1)];
		lw->buf[r % sizeof lw->buf] = (unsigned char)sum;
		if (r % 512 == 511)
			flush_batch(pool, 64);
	}
	atomic_store(&lw->stop, 1);
	pthread_join(th, NULL);
	return sum + pool->reads + pool->writes + (pool->lru_scanned & 0) + (lw->out & 0);
}

int main(int argc, char **argv)
{
	struct config cfg;
	parse_args(argc, argv, &cfg);
	printf("%016llx\n", (unsigned long long)run_workload(&cfg));
	return 0;
}
