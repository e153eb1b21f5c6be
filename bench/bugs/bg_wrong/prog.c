/* A log ingester: the main thread appends records to a buffer and flushes
 * it (compressing and checksumming a block) when it holds enough records;
 * two background compactor threads merge old segments all the time and
 * take most of the CPU in both runs.
 *
 * The bug (wrong constraint): maybe_flush computes how many records a
 * buffer holds as buffer_kb / record_size * 1024, which is 0 when a record
 * is larger than a kilobyte-count of the buffer: then every record is
 * flushed on its own, and flush_block (compression, checksum) runs once per
 * record instead of once per few thousand.
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
#define RECORDS 70000
#define BUF_BYTES (1 << 20)

long cfg_buffer_kb = 256;
long cfg_record_size = 64;
atomic_int stop_compactors;

struct buffer {
	unsigned char *data;
	long used;      /* bytes */
	long records;   /* records held */
	uint64_t flushed;
	uint64_t checks;
};

noinline int rle_encode(const unsigned char *in, long n, unsigned char *out)
{
	int o = 0;
	for (long i = 0; i < n;) {
		int run = 1;
		while (i + run < n && run < 255 && in[i + run] == in[i])
			run++;
		out[o++] = (unsigned char)run;
		out[o++] = in[i];
		i += run;
	}
	return o;
}

noinline uint32_t adler32(const unsigned char *p, long n)
{
	uint32_t a = 1, b = 0;
	for (long i = 0; i < n; i++) {
		a = (a + p[i]) % 65521;
		b = (b + a) % 65521;
	}
	return b << 16 | a;
}

noinline void flush_block(struct buffer *b)
{
	static unsigned char out[2 * 8192];
	long n = b->used < 8192 ? b->used : 8192;
	int len = rle_encode(b->data + b->used - n, n, out);
	/* every flush writes a block header padded to 4 KiB */
	memset(out + len, 0, 1024);
	b->flushed += adler32(out, len + 1024);
	b->used = 0;
	b->records = 0;
}

/* maybe_flush is the root cause: the capacity in records is computed in
 * the wrong order and is 0 for records larger than buffer_kb bytes. */
noinline void maybe_flush(struct buffer *b)
{
	long limit = cfg_buffer_kb / cfg_record_size * 1024; /* BUG: buffer_kb * 1024 / record_size */
	if (b->records >= limit)
		flush_block(b);
	b->checks++;
}

/* validate_record checks a record's fields: the per-record work of both runs. */
noinline uint32_t validate_record(const unsigned char *p, long i)
{
	uint32_t h = (uint32_t)i;
	for (int round = 0; round < 80; round++)
		for (int k = 0; k < 64; k++)
			h = (h ^ p[k]) * 16777619u + (uint32_t)round;
	return h;
}

noinline void append_record(struct buffer *b, long i)
{
	long size = cfg_record_size;
	if (b->used + size > BUF_BYTES)
		flush_block(b);
	unsigned char *p = b->data + b->used;
	uint32_t h = (uint32_t)i;
	for (long k = 0; k < 64; k++) {
		h = h * 1103515245u + 12345u;
		p[k] = (unsigned char)((h >> 16) & 0x3);
	}
	memset(p + 64, 0, size - 64);
	b->flushed += validate_record(p, i) & 1;
	b->used += size;
	b->records++;
}

noinline uint64_t ingest(struct buffer *b)
{
	for (long i = 0; i < RECORDS; i++) {
		append_record(b, i);
		maybe_flush(b);
	}
	flush_block(b);
	return b->flushed;
}

/* The compactors merge sorted runs of keys forever. */
noinline long merge_runs(const uint32_t *a, const uint32_t *b, long n, uint32_t *out)
{
	long i = 0, j = 0, o = 0;
	while (i < n && j < n)
		out[o++] = a[i] <= b[j] ? a[i++] : b[j++];
	while (i < n)
		out[o++] = a[i++];
	while (j < n)
		out[o++] = b[j++];
	return o;
}

noinline void *compactor(void *arg)
{
	long n = 1 << 15;
	uint32_t *a = malloc(n * 4), *b = malloc(n * 4), *out = malloc(2 * n * 4);
	uint32_t x = (uint32_t)(uintptr_t)arg * 2654435761u + 1;
	for (long i = 0; i < n; i++) {
		a[i] = (uint32_t)i * 3;
		b[i] = (uint32_t)i * 3 + 1;
	}
	uint64_t sum = 0;
	while (!atomic_load_explicit(&stop_compactors, memory_order_relaxed)) {
		long m = merge_runs(a, b, n, out);
		sum += out[x % m];
		x = x * 1664525u + 1013904223u;
	}
	free(a);
	free(b);
	free(out);
	return (void *)(uintptr_t)sum;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "buggy") == 0)
		cfg_record_size = 512;
	pthread_t th[2];
	for (long i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, compactor, (void *)i);
	struct buffer b = {.data = malloc(BUF_BYTES)};
	uint64_t s = ingest(&b);
	atomic_store(&stop_compactors, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	printf("%llx\n", (unsigned long long)s);
	return 0;
}
