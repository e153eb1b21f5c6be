/* Crash recovery of a redo log, after MariaDB MDEV-21826 (vProf's Fig. 1):
 * a wrong constraint.
 *
 * recv_scan_log() applies the log in rounds. A round rescans the blocks
 * since the last checkpoint (records may span blocks: the scan must find
 * their starts again), verifies each block's checksum, parses the blocks not
 * parsed yet into a hash table of records, and applies the table to the
 * data pages. How many new blocks a round may parse depends on the buffer
 * pool memory available for parsed records.
 *
 * The bug: the memory available is computed as pool/3 − reserved (the
 * intended formula was pool − pool/3 − reserved), which is 0 for a small
 * buffer pool. Each round then parses a single block and rescans up to
 * CKPT_EVERY blocks behind it: the checksum and block reading work grows
 * 25-fold, while recv_scan_log itself, which decides this, costs almost
 * nothing. A background thread compresses pages (a page cleaner) meanwhile.
 *
 *   vprof_wrong normal|buggy [blocks] [seed]
 *
 * normal: a 4096-page buffer pool; buggy: 256 pages. Same log in both.
 * Prints a checksum of the recovered pages. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <time.h>

#define BLOCK_SIZE 4096
#define PAGES_PER_BLOCK 8  /* pool pages the records of one block need */
#define RESERVED_PAGES 300 /* pages kept for the data pages being applied */
#define CKPT_EVERY 48      /* blocks between checkpoints */
#define N_PAGES 1024       /* data pages */
#define HT_SIZE 65536
#define RECS_PER_PAGE 16 /* parsed records a pool page holds */
#define noinline __attribute__((noinline))

struct log {
	unsigned char *data; /* n_blocks × BLOCK_SIZE */
	uint32_t *crc;       /* per block */
	long n_blocks;
	unsigned char key[64]; /* the log is "encrypted" with a repeating key */
};

struct rec {
	uint32_t page;
	uint16_t off;
	uint16_t len;
	const unsigned char *body;
};

struct table {
	struct rec slot[HT_SIZE];
	unsigned used[HT_SIZE];
	long n;
};

struct pages {
	unsigned char data[N_PAGES][256];
	uint64_t lsn[N_PAGES];
};

struct pool {
	long n_pages;
	long n_reserved;
};

struct cleaner {
	struct pages *pg;
	atomic_int stop;
	uint64_t out;
	clockid_t paced_by; /* the CPU-time clock of the recovering thread */
	long long due;      /* its time of the next pass, ns */
};

static uint32_t crc_table[256];

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0x82f63b78 ^ (c >> 1) : c >> 1;
		crc_table[i] = c;
	}
}

noinline uint32_t crc32c(const unsigned char *p, size_t len)
{
	uint32_t c = ~0u;
	for (size_t i = 0; i < len; i++)
		c = crc_table[(c ^ p[i]) & 0xff] ^ (c >> 8);
	return ~c;
}

/* read_block decrypts block b of the log into dst. */
noinline const unsigned char *read_block(const struct log *log, long b, unsigned char *dst)
{
	const unsigned char *src = log->data + (size_t)b * BLOCK_SIZE;
	for (int i = 0; i < BLOCK_SIZE; i++)
		dst[i] = src[i] ^ log->key[i & 63];
	return dst;
}

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* make_log writes n_blocks blocks of records: [page u16][off u8][len u8][body]. */
static void make_log(struct log *log, long n_blocks, uint64_t seed)
{
	log->n_blocks = n_blocks;
	log->data = malloc((size_t)n_blocks * BLOCK_SIZE);
	log->crc = malloc(n_blocks * sizeof *log->crc);
	for (int i = 0; i < 64; i++)
		log->key[i] = (unsigned char)rng_next(&seed);
	unsigned char plain[BLOCK_SIZE];
	for (long b = 0; b < n_blocks; b++) {
		int pos = 0;
		while (pos + 4 + 64 <= BLOCK_SIZE) {
			uint64_t r = rng_next(&seed);
			int len = 8 + (int)(r % 57);
			plain[pos] = (unsigned char)(r >> 8);
			plain[pos + 1] = (unsigned char)((r >> 16) % (N_PAGES / 256));
			plain[pos + 2] = (unsigned char)(r >> 24);
			plain[pos + 3] = (unsigned char)len;
			for (int k = 0; k < len; k++)
				plain[pos + 4 + k] = (unsigned char)(r >> (k & 31));
			pos += 4 + len;
		}
		memset(plain + pos, 0, BLOCK_SIZE - pos);
		log->crc[b] = crc32c(plain, BLOCK_SIZE);
		for (int i = 0; i < BLOCK_SIZE; i++)
			log->data[(size_t)b * BLOCK_SIZE + i] = plain[i] ^ log->key[i & 63];
	}
}

noinline int parse_rec(const unsigned char *p, int avail, struct rec *r)
{
	if (avail < 4 || p[3] == 0)
		return 0;
	r->page = p[0] | (uint32_t)p[1] << 8;
	r->off = p[2];
	r->len = p[3];
	if (4 + r->len > avail)
		return 0;
	r->body = p + 4;
	uint32_t sum = 0; /* validate the body */
	for (int k = 0; k < r->len; k++)
		sum = sum * 31 + p[4 + k];
	return sum == 0xffffffff ? 0 : 4 + r->len;
}

noinline void hash_insert(struct table *t, const struct rec *r, long lsn)
{
	unsigned h = (r->page * 2654435761u + r->off) & (HT_SIZE - 1);
	for (int probe = 0; probe < HT_SIZE; probe++) {
		unsigned i = (h + probe) & (HT_SIZE - 1);
		if (!t->used[i]) {
			t->slot[i] = *r;
			t->used[i] = (unsigned)lsn | 1;
			t->n++;
			return;
		}
	}
}

/* parse_block hashes the records of one block; returns how many. */
noinline long parse_block(const unsigned char *blk, struct table *t, long lsn)
{
	long n = 0;
	struct rec r;
	for (int off = 0; off < BLOCK_SIZE;) {
		int len = parse_rec(blk + off, BLOCK_SIZE - off, &r);
		if (len == 0)
			break;
		hash_insert(t, &r, lsn + off);
		off += len;
		n++;
	}
	return n;
}

noinline void apply_rec(struct pages *pg, const struct rec *r, unsigned lsn)
{
	unsigned char *d = pg->data[r->page % N_PAGES];
	for (int k = 0; k < r->len; k++)
		d[(r->off + k) & 255] ^= r->body[k];
	if (lsn > pg->lsn[r->page % N_PAGES])
		pg->lsn[r->page % N_PAGES] = lsn;
}

/* apply_table applies and empties the hash table; returns how many records
 * it applied. */
noinline long apply_table(struct table *t, struct pages *pg)
{
	long recs = t->n;
	for (int i = 0; i < HT_SIZE; i++) {
		if (t->used[i]) {
			apply_rec(pg, &t->slot[i], t->used[i]);
			t->used[i] = 0;
		}
	}
	t->n = 0;
	return recs;
}

/* recv_scan_log is the root cause: with available == 0 every round parses
 * one block and rescans everything since the last checkpoint. */
noinline long recv_scan_log(const struct log *log, const struct pool *pool, struct table *t, struct pages *pg)
{
	unsigned char buf[BLOCK_SIZE];
	long available = pool->n_pages / 3 - pool->n_reserved; /* BUG: pool − pool/3 − reserved */
	long done = 0, ckpt = 0, rounds = 0, bad = 0;
	if (available < 0)
		available = 0;
	do {
		long limit;
		if (available < PAGES_PER_BLOCK) {
			limit = done + 1; /* no memory for a whole block: one per round */
			rounds++;
		} else {
			limit = done + available / PAGES_PER_BLOCK;
		}
		if (limit > log->n_blocks)
			limit = log->n_blocks;
		long recs = 0;
		for (long b = ckpt; b < limit; b++) {
			const unsigned char *blk = read_block(log, b, buf);
			if (crc32c(blk, BLOCK_SIZE) != log->crc[b]) {
				bad++;
				continue;
			}
			if (b >= done)
				recs += parse_block(blk, t, b * BLOCK_SIZE);
		}
		available -= recs / RECS_PER_PAGE;                /* parsed records hold pool pages */
		available += apply_table(t, pg) / RECS_PER_PAGE; /* applying frees them */
		done = limit;
		if (done - ckpt >= CKPT_EVERY)
			ckpt = done;
	} while (done < log->n_blocks && available >= 0);
	return rounds * 1000 + bad;
}

noinline void recv_recovery_from_checkpoint(const struct log *log, const struct pool *pool, struct pages *pg)
{
	struct table *t = calloc(1, sizeof *t);
	long r = recv_scan_log(log, pool, t, pg);
	if (r < 0)
		fprintf(stderr, "recovery failed\n");
	free(t);
}

/* The page cleaner runs a pass for every 4 ms of CPU time the recovery
 * uses (every 4 ms on an idle machine): it compresses the pages with a
 * run-length coder and sums the output (Fletcher). Paced by the recovery's
 * CPU time, not the wall clock, its share of the run is the same however
 * busy the machine is. */
noinline int rle_page(const unsigned char *page, unsigned char *out)
{
	int o = 0;
	for (int i = 0; i < 256;) {
		int run = 1;
		while (i + run < 256 && run < 255 && page[i + run] == page[i])
			run++;
		out[o++] = (unsigned char)run;
		out[o++] = page[i];
		i += run;
	}
	return o;
}

noinline uint32_t fletcher32(const unsigned char *p, int n)
{
	uint32_t a = 0xffff, b = 0xffff;
	for (int i = 0; i < n; i++) {
		a = (a + p[i]) % 65535;
		b = (b + a) % 65535;
	}
	return b << 16 | a;
}

static long long cpu_ns(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* pass_due waits until the recovery has used 4 ms of CPU time since the
 * cleaner's last pass; 0 once the cleaner is to stop. */
noinline int pass_due(struct cleaner *c)
{
	struct timespec nap = {0, 1000000};
	while (!atomic_load_explicit(&c->stop, memory_order_relaxed)) {
		long long t = cpu_ns(c->paced_by);
		if (t >= c->due) {
			c->due = t + 4000000;
			return 1;
		}
		nanosleep(&nap, NULL);
	}
	return 0;
}

noinline void *page_cleaner(void *arg)
{
	struct cleaner *c = arg;
	unsigned char out[512];
	uint64_t sum = 0;
	while (pass_due(c)) {
		for (int p = 0; p < N_PAGES; p++) {
			int n = rle_page(c->pg->data[p], out);
			sum += fletcher32(out, n);
		}
	}
	c->out = sum;
	return NULL;
}

struct config {
	long blocks;
	long pool_pages;
	uint64_t seed;
};

static void parse_args(int argc, char **argv, struct config *cfg)
{
	cfg->pool_pages = argc > 1 && strcmp(argv[1], "buggy") == 0 ? 256 : 4096;
	cfg->blocks = argc > 2 ? atol(argv[2]) : 6000;
	cfg->seed = argc > 3 ? strtoull(argv[3], NULL, 0) : 0x9e3779b97f4a7c15ull;
}

/* server_start loads the log, starts the page cleaner and recovers. */
noinline uint64_t server_start(const struct config *cfg)
{
	crc_init();
	struct log log;
	make_log(&log, cfg->blocks, cfg->seed);
	struct pool pool = {.n_pages = cfg->pool_pages, .n_reserved = RESERVED_PAGES};
	struct pages *pg = calloc(1, sizeof *pg);
	struct cleaner c = {.pg = pg};
	pthread_getcpuclockid(pthread_self(), &c.paced_by);
	pthread_t th;
	pthread_create(&th, NULL, page_cleaner, &c);
	recv_recovery_from_checkpoint(&log, &pool, pg);
	atomic_store(&c.stop, 1);
	pthread_join(th, NULL);
	uint64_t sum = c.out & 0;
	for (int p = 0; p < N_PAGES; p++)
		sum = sum * 1099511628211ull ^ crc32c(pg->data[p], 256) ^ pg->lsn[p];
	free(pg);
	free(log.data);
	free(log.crc);
	return sum;
}

int main(int argc, char **argv)
{
	struct config cfg;
	parse_args(argc, argv, &cfg);
	printf("%016llx\n", (unsigned long long)server_start(&cfg));
	return 0;
}
