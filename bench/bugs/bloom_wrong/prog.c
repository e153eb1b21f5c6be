/* A log-structured key-value store, read side: the data sits in sorted
 * tables (struct table), newest first; each table is a sparse index of
 * blocks of BLOCK_KEYS keys, delta- and varint-encoded with a checksum, and
 * tables of at least cfg_bloom_min_keys keys carry a Bloom filter. Reader
 * threads (reader) look keys up: db_get asks each table, newest first,
 * through sst_get, which consults the table's filter and otherwise reads
 * the block (block_search: find the block in the index, block_verify its
 * checksum, block_seek through its keys). Half the lookups are for keys the
 * store does not hold (existence checks before inserts). The number of
 * tables is the compaction setting cfg_max_tables: 2 when tables are merged
 * eagerly (the normal configuration), 8 with lazier compaction (buggy).
 *
 * The bug (wrong constraint): sst_get's size test is inverted. Small tables
 * have no filter and are meant to be read directly; the test consults the
 * filter only for tables *below* cfg_bloom_min_keys (which have none, so
 * bloom_may_contain says yes) and never for the large tables that have
 * one. Every miss therefore reads a block of every table. With two tables
 * that is two block reads per miss; with eight, eight. The fix: consult the
 * filter when t->nkeys >= cfg_bloom_min_keys.
 *
 *   prog normal|buggy
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define noinline __attribute__((noinline))
#define BLOCK_KEYS 128
#define BLOOM_BITS_PER_KEY 10
#define BLOOM_HASHES 6
#define KEYS (1 << 18)
#define LOOKUPS_PER_READER 1350000

struct table {
	long nkeys;
	long nblocks;
	uint64_t *first;   /* first key of each block */
	uint32_t *offset;  /* byte offset of each block in data */
	uint32_t *sum;     /* checksum of each block */
	unsigned char *data;
	uint64_t *bloom;   /* NULL when the table is small */
	uint64_t bloom_bits;
};

long cfg_max_tables = 2;
long cfg_bloom_min_keys = 4096;
long cfg_readers = 3;

static struct table *tables;
static long ntables;
static uint64_t *present;

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

noinline uint32_t block_checksum(const unsigned char *p, size_t n)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

noinline int bloom_may_contain(const struct table *t, uint64_t key)
{
	if (!t->bloom)
		return 1;
	uint64_t h = mix(key), d = (h >> 33) | 1;
	for (int i = 0; i < BLOOM_HASHES; i++, h += d) {
		uint64_t b = h % t->bloom_bits;
		if (!(t->bloom[b >> 6] & (1ULL << (b & 63))))
			return 0;
	}
	return 1;
}

noinline int block_verify(const struct table *t, long b)
{
	uint32_t end = b + 1 < t->nblocks ? t->offset[b + 1] : t->offset[t->nblocks];
	return block_checksum(t->data + t->offset[b], end - t->offset[b]) == t->sum[b];
}

noinline int block_seek(const struct table *t, long b, uint64_t key)
{
	const unsigned char *p = t->data + t->offset[b];
	uint64_t k = t->first[b];
	long n = b + 1 < t->nblocks ? BLOCK_KEYS : t->nkeys - b * BLOCK_KEYS;
	for (long i = 0; i < n; i++) {
		if (i > 0) {
			uint64_t d = 0;
			int s = 0;
			while (*p & 0x80) {
				d |= (uint64_t)(*p++ & 0x7f) << s;
				s += 7;
			}
			d |= (uint64_t)*p++ << s;
			k += d;
		}
		if (k >= key)
			return k == key;
	}
	return 0;
}

noinline int block_search(const struct table *t, uint64_t key)
{
	if (key < t->first[0])
		return 0;
	long lo = 0, hi = t->nblocks - 1;
	while (lo < hi) {
		long mid = (lo + hi + 1) / 2;
		if (t->first[mid] <= key)
			lo = mid;
		else
			hi = mid - 1;
	}
	if (!block_verify(t, lo))
		abort();
	return block_seek(t, lo, key);
}

/* sst_get is the root cause: the size test is inverted (should be >=). */
noinline int sst_get(const struct table *t, uint64_t key)
{
	if (t->nkeys < cfg_bloom_min_keys && !bloom_may_contain(t, key))
		return 0;
	return block_search(t, key);
}

noinline int db_get(uint64_t key)
{
	for (long i = ntables - 1; i >= 0; i--)
		if (sst_get(&tables[i], key))
			return 1;
	return 0;
}

static void *reader(void *arg)
{
	long id = (long)arg, found = 0;
	uint64_t x = 0x9e3779b97f4a7c15ULL * (uint64_t)(id + 1);
	for (long i = 0; i < LOOKUPS_PER_READER; i++) {
		x = mix(x + (uint64_t)i);
		uint64_t key = (i & 1) ? present[x % KEYS] : (mix(x) & ~1ULL) % (1ULL << 40);
		found += db_get(key);
	}
	return (void *)found;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void build_table(struct table *t, uint64_t *keys, long n)
{
	qsort(keys, (size_t)n, sizeof *keys, cmp_u64);
	t->nkeys = n;
	t->nblocks = (n + BLOCK_KEYS - 1) / BLOCK_KEYS;
	t->first = malloc((size_t)t->nblocks * sizeof *t->first);
	t->offset = malloc((size_t)(t->nblocks + 1) * sizeof *t->offset);
	t->sum = malloc((size_t)t->nblocks * sizeof *t->sum);
	t->data = malloc((size_t)n * 10 + 16);
	if (!t->first || !t->offset || !t->sum || !t->data)
		abort();
	uint32_t pos = 0;
	for (long b = 0; b < t->nblocks; b++) {
		t->first[b] = keys[b * BLOCK_KEYS];
		t->offset[b] = pos;
		for (long i = b * BLOCK_KEYS + 1; i < n && i < (b + 1) * BLOCK_KEYS; i++) {
			uint64_t d = keys[i] - keys[i - 1];
			while (d >= 0x80) {
				t->data[pos++] = (unsigned char)(d | 0x80);
				d >>= 7;
			}
			t->data[pos++] = (unsigned char)d;
		}
	}
	t->offset[t->nblocks] = pos;
	for (long b = 0; b < t->nblocks; b++)
		t->sum[b] = block_checksum(t->data + t->offset[b], t->offset[b + 1] - t->offset[b]);
	t->bloom = NULL;
	if (n >= cfg_bloom_min_keys) {
		t->bloom_bits = (uint64_t)n * BLOOM_BITS_PER_KEY;
		t->bloom = calloc((size_t)(t->bloom_bits / 64 + 1), sizeof *t->bloom);
		if (!t->bloom)
			abort();
		for (long i = 0; i < n; i++) {
			uint64_t h = mix(keys[i]), d = (h >> 33) | 1;
			for (int j = 0; j < BLOOM_HASHES; j++, h += d) {
				uint64_t bit = h % t->bloom_bits;
				t->bloom[bit >> 6] |= 1ULL << (bit & 63);
			}
		}
	}
}

int main(int argc, char **argv)
{
	int buggy = argc > 1 && strcmp(argv[1], "buggy") == 0;
	if (buggy)
		cfg_max_tables = 8;
	present = malloc(KEYS * sizeof *present);
	uint64_t *scratch = malloc(KEYS * sizeof *scratch);
	tables = calloc((size_t)cfg_max_tables, sizeof *tables);
	if (!present || !scratch || !tables)
		return 1;
	for (long i = 0; i < KEYS; i++)
		present[i] = (mix((uint64_t)i + 12345) | 1) % (1ULL << 40);
	/* Keys were written in time order; a table holds one stretch of it. */
	ntables = cfg_max_tables;
	long per = KEYS / ntables;
	for (long i = 0; i < ntables; i++) {
		memcpy(scratch, present + i * per, (size_t)per * sizeof *scratch);
		build_table(&tables[i], scratch, per);
	}
	pthread_t th[16];
	long found = 0;
	for (long i = 0; i < cfg_readers; i++)
		pthread_create(&th[i], NULL, reader, (void *)i);
	for (long i = 0; i < cfg_readers; i++) {
		void *r;
		pthread_join(th[i], &r);
		found += (long)r;
	}
	printf("%ld tables, %ld found\n", ntables, found);
	return 0;
}
