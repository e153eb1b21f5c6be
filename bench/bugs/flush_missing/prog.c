/* A storage daemon with three writer threads, each owning a buffer pool
 * over its own device (libbp). In bulk mode (cfg_append 0) a writer
 * imports whole blocks (bulk_load, one bp_write per 4 KiB buffer); in
 * journal mode it appends small records to the tail buffer of a log
 * (journal_append, one bp_write per record of cfg_append bytes). libbp
 * starts writeback after a write once enough buffers are dirty.
 *
 * The buggy input is the journal workload: libbp's wb_start_all misses its
 * threshold check, so every append writes back the tail buffer again.
 *
 *   prog normal|buggy
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bp.h"

#define noinline __attribute__((noinline))
#define WRITERS 3
#define POOL_BUFS 256
#define BG_THRESH 64

long cfg_append = 0;          /* record size in journal mode; 0: bulk mode */
long cfg_bulk_blocks = 60000; /* per writer, bulk mode */
long cfg_journal_blocks = 4000; /* per writer, journal mode */

struct writer {
	int id;
	struct bp *pool;
	uint64_t written;
	uint32_t sum;
};

static void fill(unsigned char *d, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		d[i] = (unsigned char)(seed >> 56);
	}
}

noinline void bulk_load(struct writer *w, long blocks)
{
	static __thread unsigned char block[BP_BUFSIZE];
	fill(block, sizeof block, (uint64_t)w->id);
	for (long i = 0; i < blocks; i++) {
		block[i % BP_BUFSIZE] ^= (unsigned char)i;
		bp_write(w->pool, (int)(i % POOL_BUFS), 0, block, BP_BUFSIZE);
	}
}

noinline void journal_append(struct writer *w, long blocks, size_t rec)
{
	unsigned char r[512];
	fill(r, sizeof r, (uint64_t)w->id + 7);
	size_t per = BP_BUFSIZE / rec;
	for (long i = 0; i < blocks; i++)
		for (size_t k = 0; k < per; k++) {
			r[0] = (unsigned char)k;
			bp_write(w->pool, (int)(i % POOL_BUFS), k * rec, r, rec);
		}
}

noinline void run_writer(struct writer *w)
{
	if (cfg_append > 0)
		journal_append(w, cfg_journal_blocks, (size_t)cfg_append);
	else
		bulk_load(w, cfg_bulk_blocks);
	bp_sync(w->pool);
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	run_writer(w);
	w->written = bp_written(w->pool);
	w->sum = bp_checksum(w->pool);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "buggy") == 0)
		cfg_append = 128;
	struct writer w[WRITERS];
	pthread_t th[WRITERS];
	for (int i = 0; i < WRITERS; i++) {
		w[i] = (struct writer){.id = i, .pool = bp_new(POOL_BUFS, BG_THRESH)};
		if (!w[i].pool) {
			fprintf(stderr, "out of memory\n");
			return 1;
		}
		pthread_create(&th[i], NULL, writer_main, &w[i]);
	}
	uint64_t total = 0;
	uint32_t sum = 0;
	for (int i = 0; i < WRITERS; i++) {
		pthread_join(th[i], NULL);
		total += w[i].written;
		sum ^= w[i].sum;
		bp_free(w[i].pool);
	}
	printf("%llu bytes written back, checksum %08x\n", (unsigned long long)total, sum);
	return 0;
}
