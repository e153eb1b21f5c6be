/* A journaling writer: main's loop reads operations and calls a handler
 * through a table (op_append, op_stat, op_rotate); op_append copies the
 * record into the journal buffer (journal_write) and asks should_sync
 * whether to make it durable; journal_sync seals the pending bytes: a
 * checksum of the journal's index page and a rewrite of its header. A
 * background thread compresses sealed segments (compress_segment) for the
 * whole run.
 *
 * The bug (wrong constraint): should_sync compares the pending byte count
 * with cfg_sync_kb, a size in kilobytes (the fix: cfg_sync_kb * 1024). With
 * the normal input's large records (64 KiB each) every record passes the
 * threshold either way; with the buggy input's small records (200 bytes)
 * each one is synced on its own instead of one sync per 64 KiB (the normal
 * input: 20,000 records of 64 KiB; the buggy one: 300,000 of 200 bytes).
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
#define JOURNAL (1 << 20)
#define INDEX_PAGE 1024

struct op {
	int kind; /* 0 append, 1 stat, 2 rotate */
	int len;
};

struct journal {
	unsigned char buf[JOURNAL];
	unsigned char index[INDEX_PAGE];
	long pos;
	long pending;
	unsigned long syncs;
	uint32_t header_crc;
};

static struct journal jn;
static unsigned char record[1 << 16];
static atomic_int stop;
static atomic_ulong compressed;
long cfg_sync_kb = 64;

noinline uint32_t page_checksum(const unsigned char *p, size_t n)
{
	uint32_t a = 1, b = 0;
	for (size_t i = 0; i < n; i++) {
		a = (a + p[i]) % 65521;
		b = (b + a) % 65521;
	}
	return (b << 16) | a;
}

noinline void journal_sync(struct journal *j)
{
	j->index[j->syncs % INDEX_PAGE] = (unsigned char)j->pos;
	j->header_crc = page_checksum(j->index, INDEX_PAGE);
	j->pending = 0;
	j->syncs++;
}

/* should_sync is the root cause: pending is in bytes, cfg_sync_kb in KiB. */
noinline int should_sync(const struct journal *j)
{
	return j->pending >= cfg_sync_kb;
}

noinline void journal_write(struct journal *j, const unsigned char *r, int len)
{
	if (j->pos + len > JOURNAL)
		j->pos = 0;
	memcpy(j->buf + j->pos, r, (size_t)len);
	j->pos += len;
	j->pending += len;
}

static void op_append(const struct op *o)
{
	journal_write(&jn, record, o->len);
	if (should_sync(&jn))
		journal_sync(&jn);
}

static void op_stat(const struct op *o)
{
	(void)o;
	compressed += (unsigned long)jn.pos & 1;
}

static void op_rotate(const struct op *o)
{
	(void)o;
	jn.pos = 0;
}

static void (*const handlers[])(const struct op *) = {op_append, op_stat, op_rotate};

noinline unsigned long compress_segment(const unsigned char *p, size_t n)
{
	unsigned long h = 0;
	for (size_t i = 0; i < n; i++)
		h = h * 31 + p[i];
	return h;
}

static void *compressor(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop))
		compressed += compress_segment(jn.buf, 1 << 18) & 1;
	return NULL;
}

int main(int argc, char **argv)
{
	int buggy = argc > 1 && strcmp(argv[1], "buggy") == 0;
	int len = buggy ? 200 : 1 << 16;
	long n = buggy ? 300000 : 20000;
	struct op *ops = malloc((size_t)n * sizeof *ops);
	if (!ops)
		return 1;
	for (long i = 0; i < n; i++) {
		ops[i].kind = i % 97 == 0 ? 1 : i % 1009 == 0 ? 2 : 0;
		ops[i].len = len;
	}
	for (size_t i = 0; i < sizeof record; i++)
		record[i] = (unsigned char)(i * 7);
	pthread_t t;
	pthread_create(&t, NULL, compressor, NULL);
	for (long i = 0; i < n; i++)
		handlers[ops[i].kind](&ops[i]);
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	printf("%lu syncs, %lu\n", jn.syncs, (unsigned long)compressed);
	return 0;
}
