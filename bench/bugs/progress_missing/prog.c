/* An archive extractor in the manner of a package manager's install step:
 * an archive of entries (make_archive: a name and the data of each file)
 * is extracted entry by entry (extract_archive → extract_entry: the data
 * copied block by block into the destination, with a CRC-32 of each
 * block, crc32_update), and after each entry the extractor reports its
 * progress through a callback the caller registered (ops->progress, here
 * tty_progress), which redraws a progress line on the terminal: a bar, the
 * percentage, the bytes done, the rate and the time left, and the name of
 * the current entry, written and flushed to the terminal's stream.
 *
 * The bug (missing constraint): tty_progress redraws on every call; it
 * lacks the throttle that returns early unless the redraw interval (50 ms)
 * has passed since the last redraw (or the work is done). An archive of a
 * few large files calls it a few hundred times; one of many tiny files
 * (a dependency tree) calls it for every file.
 *
 *   prog normal|buggy   (an archive of large files, or of tiny ones)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define noinline __attribute__((noinline))
#define TOTAL (64u << 20) /* bytes of data in the archive */
#define BLOCK 4096

struct entry {
	char name[48];
	uint32_t size;
	uint32_t off;
};

struct archive {
	struct entry *e;
	long n;
	unsigned char *data;
};

struct extract_ops {
	void (*progress)(void *ctx, uint64_t done, uint64_t total, const char *name);
	void *ctx;
};

struct tty {
	FILE *out;
	int width;
	uint64_t start_ns, last_ns, interval_ns;
	uint64_t last_done;
	double rate; /* bytes per second, smoothed */
	long redraws;
};

static uint32_t crc_table[256];
static unsigned char *dest;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

noinline void crc32_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crc_table[i] = c;
	}
}

noinline uint32_t crc32_update(uint32_t crc, const unsigned char *p, size_t n)
{
	crc = ~crc;
	for (size_t i = 0; i < n; i++)
		crc = crc_table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
	return ~crc;
}

/* tty_progress is the root cause: it redraws on every call (fix: return
 * unless t->interval_ns has passed since t->last_ns, or done == total). */
noinline void tty_progress(void *ctx, uint64_t done, uint64_t total, const char *name)
{
	struct tty *t = ctx;
	uint64_t now = now_ns();
	double dt = (double)(now - t->last_ns) / 1e9;
	if (dt > 0)
		t->rate = 0.8 * t->rate + 0.2 * (double)(done - t->last_done) / dt;
	t->last_ns = now;
	t->last_done = done;
	char bar[128], line[256];
	int fill = (int)((uint64_t)t->width * done / total);
	for (int i = 0; i < t->width; i++)
		bar[i] = i < fill ? '#' : i == fill ? '>' : '-';
	bar[t->width] = 0;
	double left = t->rate > 0 ? (double)(total - done) / t->rate : 0;
	snprintf(line, sizeof line, "\r[%s] %3u%% %7.1f/%.1f MiB %7.1f MiB/s eta %02d:%02d %-40.40s", bar,
		 (unsigned)(100 * done / total), (double)done / 1048576, (double)total / 1048576, t->rate / 1048576,
		 (int)left / 60, (int)left % 60, name);
	fputs(line, t->out);
	fflush(t->out);
	t->redraws++;
}

noinline uint32_t extract_entry(const struct archive *a, const struct entry *e)
{
	uint32_t crc = 0;
	for (uint32_t o = 0; o < e->size; o += BLOCK) {
		uint32_t n = e->size - o < BLOCK ? e->size - o : BLOCK;
		memcpy(dest + o, a->data + e->off + o, n);
		crc = crc32_update(crc, dest + o, n);
	}
	return crc;
}

noinline uint32_t extract_archive(const struct archive *a, const struct extract_ops *ops)
{
	uint64_t total = 0, done = 0;
	uint32_t sum = 0;
	for (long i = 0; i < a->n; i++)
		total += a->e[i].size;
	for (long i = 0; i < a->n; i++) {
		sum ^= extract_entry(a, &a->e[i]);
		done += a->e[i].size;
		ops->progress(ops->ctx, done, total, a->e[i].name);
	}
	return sum;
}

/* make_archive: entries of about `size` bytes each (±50%), TOTAL bytes in
 * all, their data drawn from one pool so the archive stays small. */
noinline void make_archive(struct archive *a, uint32_t size)
{
	static const char *parts[] = {"lib", "index", "util", "dist", "src", "package", "README", "types", "esm", "cjs"};
	uint64_t x = 0x1234567887654321ULL;
	a->data = malloc(TOTAL);
	a->n = 0;
	long cap = (long)(TOTAL / (size / 2)) + 1;
	a->e = malloc((size_t)cap * sizeof *a->e);
	if (!a->data || !a->e)
		abort();
	for (uint32_t i = 0; i < TOTAL; i += 8) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		memcpy(a->data + i, &x, 8);
	}
	uint32_t off = 0;
	while (off < TOTAL && a->n < cap) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		struct entry *e = &a->e[a->n];
		uint32_t s = size / 2 + (uint32_t)(x % size);
		if (s > TOTAL - off)
			s = TOTAL - off;
		e->size = s;
		e->off = off;
		snprintf(e->name, sizeof e->name, "node_modules/pkg%05ld/%s/%s.js", a->n / 7, parts[(x >> 20) % 10],
			 parts[(x >> 30) % 10]);
		off += s;
		a->n++;
	}
}

int main(int argc, char **argv)
{
	if (argc != 2 || (strcmp(argv[1], "normal") && strcmp(argv[1], "buggy"))) {
		fprintf(stderr, "usage: prog normal|buggy\n");
		return 2;
	}
	/* normal: files of 256 KiB on average; buggy: of 160 bytes */
	uint32_t size = strcmp(argv[1], "buggy") == 0 ? 160 : 256 << 10;
	struct archive a;
	crc32_init();
	make_archive(&a, size);
	dest = malloc(2 * (size_t)size + BLOCK);
	struct tty t = {0};
	t.out = fopen("/dev/null", "w"); /* the terminal */
	if (!dest || !t.out)
		return 1;
	t.width = 60;
	t.interval_ns = 50000000; /* 50 ms between redraws */
	t.start_ns = t.last_ns = now_ns();
	struct extract_ops ops = {tty_progress, &t};
	uint32_t sum = extract_archive(&a, &ops);
	printf("%ld entries extracted, checksum %08x, %ld redraws\n", a.n, sum, t.redraws);
	return 0;
}
