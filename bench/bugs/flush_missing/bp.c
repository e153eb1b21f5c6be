/* libbp: a buffer pool with background writeback. A write marks its buffer
 * dirty; bp_balance, called after each write, starts writeback of all
 * dirty buffers (wb_start_all) once their number reaches the pool's
 * background threshold, so that writes are submitted in batches and a
 * buffer being filled is written once, not once per write.
 *
 * The bug (missing constraint): wb_start_all does not check the threshold
 * (if (p->ndirty < p->bg_thresh) return 0;), so every write starts
 * writeback of every dirty buffer: a buffer filled by small appends is
 * checksummed and submitted again after each append, and the pool is
 * walked each time. */
#include <stdlib.h>
#include <string.h>
#include "bp.h"

#define noinline __attribute__((noinline))

struct buf {
	int dirty;
	uint32_t len;
	uint32_t crc;
	unsigned char data[BP_BUFSIZE];
};

struct bp {
	struct buf *b;
	int n;
	int ndirty;
	int bg_thresh;
	uint64_t written;  /* bytes submitted */
	uint64_t submits;
	uint32_t table[256];
};

struct bp *bp_new(int nbufs, int bg_thresh)
{
	struct bp *p = calloc(1, sizeof *p);
	if (!p)
		return NULL;
	p->b = calloc((size_t)nbufs, sizeof *p->b);
	if (!p->b) {
		free(p);
		return NULL;
	}
	p->n = nbufs;
	p->bg_thresh = bg_thresh;
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
		p->table[i] = c;
	}
	return p;
}

void bp_free(struct bp *p)
{
	free(p->b);
	free(p);
}

noinline uint32_t bp_crc32(const uint32_t *table, const unsigned char *d, size_t n)
{
	uint32_t c = 0xffffffffu;
	for (size_t i = 0; i < n; i++)
		c = table[(c ^ d[i]) & 0xff] ^ (c >> 8);
	return c ^ 0xffffffffu;
}

/* wb_write_buf submits one buffer: its checksum goes with it. */
noinline void wb_write_buf(struct bp *p, struct buf *b)
{
	b->crc = bp_crc32(p->table, b->data, b->len);
	p->written += b->len;
	p->submits++;
	b->dirty = 0;
}

/* wb_start_all is the root cause: it starts writeback without checking
 * the background threshold (the fix: return 0 while ndirty < bg_thresh). */
noinline int wb_start_all(struct bp *p)
{
	int started = 0;
	for (int i = 0; i < p->n; i++) {
		struct buf *b = &p->b[i];
		if (!b->dirty)
			continue;
		wb_write_buf(p, b);
		started++;
	}
	p->ndirty = 0;
	return started;
}

void bp_balance(struct bp *p)
{
	if (p->ndirty > 0)
		wb_start_all(p);
}

void bp_write(struct bp *p, int idx, size_t off, const void *src, size_t len)
{
	struct buf *b = &p->b[idx % p->n];
	if (off + len > BP_BUFSIZE)
		len = off < BP_BUFSIZE ? BP_BUFSIZE - off : 0;
	memcpy(b->data + off, src, len);
	if (off + len > b->len)
		b->len = (uint32_t)(off + len);
	if (!b->dirty) {
		b->dirty = 1;
		p->ndirty++;
	}
	bp_balance(p);
}

void bp_sync(struct bp *p)
{
	for (int i = 0; i < p->n; i++)
		if (p->b[i].dirty)
			wb_write_buf(p, &p->b[i]);
	p->ndirty = 0;
}

uint64_t bp_written(const struct bp *p) { return p->written; }

uint32_t bp_checksum(const struct bp *p)
{
	uint32_t c = 0;
	for (int i = 0; i < p->n; i++)
		c ^= p->b[i].crc + (uint32_t)i;
	return c;
}
