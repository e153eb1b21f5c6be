/* A table exporter: main reads its options and calls export_all, which
 * writes every table of a small in-memory database as CSV: export_table
 * per table, write_row per row, write_cell per cell (formatting the value
 * with snprintf), emit_field (quoting a field that holds a separator or a
 * quote) and sb_append, which appends to the document's string buffer.
 * The buffer is written out (flush_doc) every cfg_chunk_rows rows, or, with
 * cfg_chunk_rows 0 (one document per table, e.g. for an upload that must be
 * whole), once per table.
 *
 * The bug (scalability): sb_append finds the end of the buffer with strlen
 * on every append instead of keeping the length, so an append costs the
 * length of the document so far. In chunks of 64 rows the buffer never
 * exceeds a few KiB and strlen is cheap; as one document per table it grows
 * to tens of KiB (700 rows) and the export becomes quadratic in the size of
 * a table. The fix keeps the length in the buffer (sb->len) and appends at
 * it.
 *
 *   prog normal|buggy
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define noinline __attribute__((noinline))
#define COLS 6

struct strbuf {
	char *buf;
	size_t cap;
};

struct table {
	const char *name;
	long nrows;
	long *ids;
	double *vals;
	const char **labels;
};

long cfg_chunk_rows = 64;
long cfg_tables = 4400;
long cfg_rows = 700;
static FILE *out;
static unsigned long written;

noinline void sb_init(struct strbuf *sb, size_t cap)
{
	sb->buf = malloc(cap);
	if (!sb->buf)
		abort();
	sb->buf[0] = 0;
	sb->cap = cap;
}

/* sb_append is the root cause: strlen walks the whole buffer on each call. */
noinline void sb_append(struct strbuf *sb, const char *s, size_t n)
{
	size_t used = strlen(sb->buf);
	if (used + n + 1 > sb->cap) {
		size_t cap = sb->cap * 2;
		while (cap < used + n + 1)
			cap *= 2;
		char *b = realloc(sb->buf, cap);
		if (!b)
			abort();
		sb->buf = b;
		sb->cap = cap;
	}
	memcpy(sb->buf + used, s, n);
	sb->buf[used + n] = 0;
}

noinline void flush_doc(struct strbuf *sb)
{
	size_t n = strlen(sb->buf);
	written += fwrite(sb->buf, 1, n, out);
	sb->buf[0] = 0;
}

noinline void emit_field(struct strbuf *sb, const char *s, size_t n)
{
	int quote = 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] == ',' || s[i] == '"')
			quote = 1;
	if (!quote) {
		sb_append(sb, s, n);
		return;
	}
	sb_append(sb, "\"", 1);
	size_t start = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] != '"')
			continue;
		sb_append(sb, s + start, i + 1 - start);
		sb_append(sb, "\"", 1);
		start = i + 1;
	}
	sb_append(sb, s + start, n - start);
	sb_append(sb, "\"", 1);
}

noinline void write_cell(struct strbuf *sb, const struct table *t, long r, int c)
{
	char tmp[64];
	int n;
	switch (c) {
	case 0:
		n = snprintf(tmp, sizeof tmp, "%ld", t->ids[r]);
		break;
	case 1:
		n = snprintf(tmp, sizeof tmp, "%s", t->labels[r]);
		break;
	case 2:
		n = snprintf(tmp, sizeof tmp, "%.4f", t->vals[r]);
		break;
	case 3:
		n = snprintf(tmp, sizeof tmp, "%.2e", t->vals[r] * 1e3);
		break;
	case 4:
		n = snprintf(tmp, sizeof tmp, "%s-%ld", t->name, r);
		break;
	default:
		n = snprintf(tmp, sizeof tmp, "%08lx", (unsigned long)t->ids[r] * 2654435761UL);
		break;
	}
	emit_field(sb, tmp, (size_t)n);
	sb_append(sb, c == COLS - 1 ? "\n" : ",", 1);
}

noinline void write_row(struct strbuf *sb, const struct table *t, long r)
{
	for (int c = 0; c < COLS; c++)
		write_cell(sb, t, r, c);
}

noinline void export_table(struct strbuf *sb, const struct table *t)
{
	sb_append(sb, "id,label,value,scaled,ref,hash\n", 31);
	for (long r = 0; r < t->nrows; r++) {
		write_row(sb, t, r);
		if (cfg_chunk_rows > 0 && (r + 1) % cfg_chunk_rows == 0)
			flush_doc(sb);
	}
	flush_doc(sb);
}

noinline void export_all(struct table *tabs, long n)
{
	struct strbuf sb;
	sb_init(&sb, 4096);
	for (long i = 0; i < n; i++)
		export_table(&sb, &tabs[i]);
	free(sb.buf);
}

static const char *labels[] = {"alpha", "beta, gamma", "delta \"quoted\"", "epsilon", "zeta", "eta, theta", "iota"};

int main(int argc, char **argv)
{
	int buggy = argc > 1 && strcmp(argv[1], "buggy") == 0;
	if (buggy)
		cfg_chunk_rows = 0;
	out = fopen("/dev/null", "w");
	if (!out)
		return 1;
	struct table *tabs = calloc((size_t)cfg_tables, sizeof *tabs);
	static char names[64][24];
	for (long i = 0; i < cfg_tables; i++) {
		struct table *t = &tabs[i];
		snprintf(names[i % 64], sizeof names[0], "t%ld", i);
		t->name = names[i % 64];
		t->nrows = cfg_rows;
		t->ids = malloc((size_t)cfg_rows * sizeof *t->ids);
		t->vals = malloc((size_t)cfg_rows * sizeof *t->vals);
		t->labels = malloc((size_t)cfg_rows * sizeof *t->labels);
		if (!t->ids || !t->vals || !t->labels)
			return 1;
		uint64_t x = 88172645463325252ULL + (uint64_t)i;
		for (long r = 0; r < cfg_rows; r++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			t->ids[r] = (long)(x % 100000000);
			t->vals[r] = (double)(x % 1000003) / 997.0;
			t->labels[r] = labels[x % 7];
		}
	}
	export_all(tabs, cfg_tables);
	fclose(out);
	printf("%lu bytes written\n", written);
	return 0;
}
