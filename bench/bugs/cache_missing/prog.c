/* A page cache with write-back: reader threads look pages up (cache_get,
 * hashing each page to verify it), writers modify some of them, and every
 * period the flusher (writeback_all) writes the dirty pages back
 * (flush_page: checksum, then copy to the backing store).
 *
 * The bug (missing constraint): writeback_all writes back every cached page,
 * clean ones included (the fix: if (!pg->dirty) continue;). With a
 * write-heavy workload nearly every page is dirty anyway; with a read-heavy
 * one (the buggy input: a large cache, few writes) it checksums and copies
 * thousands of clean pages each period.
 *
 *   prog normal|buggy
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define noinline __attribute__((noinline))
#define PAGE 1024
#define MAXPAGES 4096
#define PERIODS 60

struct page {
	int dirty;
	uint32_t sum;
	uint8_t data[PAGE];
};

static struct page cache[MAXPAGES];
static uint8_t store[MAXPAGES][PAGE];
long cfg_cache_pages = 256;
long cfg_write_pct = 90;
static atomic_int stop;

static uint64_t rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

noinline uint32_t page_hash(const uint8_t *d)
{
	uint32_t h = 2166136261u;
	for (int i = 0; i < PAGE; i++)
		h = (h ^ d[i]) * 16777619u;
	return h;
}

noinline uint32_t cache_get(long no)
{
	return page_hash(cache[no].data);
}

noinline void cache_put(long no, uint64_t v)
{
	memcpy(cache[no].data + (v % (PAGE - 8)), &v, 8);
	cache[no].dirty = 1;
}

static void *reader(void *arg)
{
	uint64_t s = (uintptr_t)arg, h = 0;
	while (!atomic_load(&stop))
		h += cache_get((long)(rng(&s) % (uint64_t)cfg_cache_pages));
	return (void *)(uintptr_t)h;
}

noinline uint32_t crc_page(const uint8_t *d)
{
	uint32_t c = 0xffffffffu;
	for (int i = 0; i < PAGE; i++) {
		c ^= d[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
	}
	return ~c;
}

noinline void flush_page(long no)
{
	struct page *pg = &cache[no];
	pg->sum = crc_page(pg->data);
	memcpy(store[no], pg->data, PAGE);
	pg->dirty = 0;
}

/* writeback_all is the root cause: it does not skip clean pages. */
noinline long writeback_all(void)
{
	long written = 0;
	for (long no = 0; no < cfg_cache_pages; no++) {
		/* missing: if (!cache[no].dirty) continue; */
		flush_page(no);
		written++;
	}
	return written;
}

noinline void apply_writes(uint64_t *s, long n)
{
	for (long i = 0; i < n; i++)
		if ((long)(rng(s) % 100) < cfg_write_pct)
			cache_put((long)(rng(s) % (uint64_t)cfg_cache_pages), rng(s));
}

int main(int argc, char **argv)
{
	if (argc != 2 || (strcmp(argv[1], "normal") && strcmp(argv[1], "buggy"))) {
		fprintf(stderr, "usage: prog normal|buggy\n");
		return 2;
	}
	if (!strcmp(argv[1], "buggy"))
		cfg_cache_pages = 1024, cfg_write_pct = 1;
	uint64_t s = 0x9e3779b97f4a7c15ull;
	for (long no = 0; no < cfg_cache_pages; no++)
		for (int i = 0; i < PAGE; i++)
			cache[no].data[i] = (uint8_t)rng(&s);
	pthread_t r[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&r[i], NULL, reader, (void *)(uintptr_t)(i + 7));
	long written = 0;
	for (int p = 0; p < PERIODS; p++) {
		apply_writes(&s, 20000);
		written += writeback_all();
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(r[i], NULL);
	printf("%ld\n", written);
	return 0;
}
