/* A telemetry importer: it reads JSON documents (import_stream, one
 * document per load_document call), parses each with a recursive-descent
 * parser (parse_document, parse_value, parse_array, parse_object,
 * parse_string, parse_number) and sums the readings it finds. A record
 * holds an id, a station name, a grid of readings nested five arrays deep
 * and a flat list of calibration values.
 *
 * The input comes either as JSON lines (one small document per record;
 * cfg_batch 1) or as batches of records, one JSON array of cfg_batch
 * records per document (an export from another site).
 *
 * The bug (scalability): parse_number reads a number with sscanf on the
 * cursor, which points into the whole rest of the document. glibc's sscanf
 * first measures its input string (strlen), so every number costs the
 * length of what remains of the document: nothing on a JSON line, a
 * quadratic parse on a batch. The fix reads the number with strtod, which
 * stops at the number's end.
 *
 *   prog normal|buggy
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define noinline __attribute__((noinline))

long cfg_batch = 1;    /* records per document */
long cfg_records = 30000;
long cfg_passes = 3;   /* the import is run this many times (re-imports) */

struct stats {
	double sum;
	long numbers, strings, records;
};

struct parser {
	const char *p;
	struct stats *st;
	int depth;
};

static noinline void fail(const char *what, const char *at)
{
	fprintf(stderr, "parse error: %s at \"%.20s\"\n", what, at);
	exit(1);
}

static void skip_ws(struct parser *ps)
{
	while (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\t' || *ps->p == '\r')
		ps->p++;
}

static noinline double parse_value(struct parser *ps);

/* parse_number is the root cause: sscanf on the cursor measures the whole
 * rest of the document before it converts the number. */
noinline double parse_number(struct parser *ps)
{
	double v;
	int n = 0;
	if (sscanf(ps->p, "%lf%n", &v, &n) != 1 || n == 0)
		fail("number", ps->p);
	ps->p += n;
	ps->st->numbers++;
	return v;
}

noinline double parse_string(struct parser *ps)
{
	const char *s = ++ps->p;
	while (*ps->p != '"') {
		if (*ps->p == 0)
			fail("unterminated string", s);
		if (*ps->p == '\\')
			ps->p++;
		ps->p++;
	}
	ps->p++;
	ps->st->strings++;
	return (double)(ps->p - s);
}

noinline double parse_array(struct parser *ps)
{
	double s = 0;
	ps->p++;
	skip_ws(ps);
	if (*ps->p == ']') {
		ps->p++;
		return 0;
	}
	for (;;) {
		s += parse_value(ps);
		skip_ws(ps);
		if (*ps->p == ',') {
			ps->p++;
			continue;
		}
		if (*ps->p != ']')
			fail("',' or ']'", ps->p);
		ps->p++;
		return s;
	}
}

noinline double parse_object(struct parser *ps)
{
	double s = 0;
	ps->p++;
	skip_ws(ps);
	if (*ps->p == '}') {
		ps->p++;
		return 0;
	}
	for (;;) {
		skip_ws(ps);
		if (*ps->p != '"')
			fail("key", ps->p);
		parse_string(ps);
		skip_ws(ps);
		if (*ps->p != ':')
			fail("':'", ps->p);
		ps->p++;
		s += parse_value(ps);
		skip_ws(ps);
		if (*ps->p == ',') {
			ps->p++;
			continue;
		}
		if (*ps->p != '}')
			fail("',' or '}'", ps->p);
		ps->p++;
		return s;
	}
}

static noinline double parse_value(struct parser *ps)
{
	double v;
	skip_ws(ps);
	ps->depth++;
	switch (*ps->p) {
	case '[':
		v = parse_array(ps);
		break;
	case '{':
		v = parse_object(ps);
		break;
	case '"':
		v = parse_string(ps);
		break;
	default:
		v = parse_number(ps);
		break;
	}
	ps->depth--;
	return v;
}

noinline double parse_document(const char *doc, struct stats *st)
{
	struct parser ps = {.p = doc, .st = st, .depth = 0};
	double v = parse_value(&ps);
	skip_ws(&ps);
	if (*ps.p)
		fail("trailing data", ps.p);
	return v;
}

/* write_record appends one record's JSON to b; returns its length. */
static size_t write_record(char *b, long id)
{
	unsigned long x = 0x9e3779b97f4a7c15UL * (unsigned long)(id + 1);
	size_t n = (size_t)sprintf(b, "{\"id\": %ld, \"station\": \"st-%03ld\", \"grid\": [[[[[", id, id % 977);
	for (int i = 0; i < 24; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		n += (size_t)sprintf(b + n, "%s%lu.%03lu", i ? ", " : "", x % 1000, (x >> 20) % 1000);
	}
	n += (size_t)sprintf(b + n, "]]]]], \"cal\": [%ld.5, %ld.25, -%ld.125]}", id % 7, id % 11, id % 13);
	return n;
}

/* load_document parses one document out of the input buffer. */
noinline double load_document(char *doc, struct stats *st)
{
	return parse_document(doc, st);
}

/* import_stream makes the input (cfg_batch records per document) and
 * parses each document as it arrives. */
noinline double import_stream(long records, long batch, struct stats *st)
{
	size_t cap = (size_t)batch * 512 + 64;
	char *doc = malloc(cap);
	if (!doc)
		abort();
	double s = 0;
	for (long r = 0; r < records;) {
		size_t n = 0;
		long r0 = r;
		if (batch > 1)
			doc[n++] = '[';
		for (long k = 0; k < batch && r < records; k++, r++) {
			if (k)
				n += (size_t)sprintf(doc + n, ",\n");
			n += write_record(doc + n, r);
		}
		if (batch > 1)
			doc[n++] = ']';
		doc[n] = 0;
		s += load_document(doc, st);
		st->records += r - r0;
	}
	free(doc);
	return s;
}

noinline double run_import(struct stats *st)
{
	double s = 0;
	for (long i = 0; i < cfg_passes; i++)
		s += import_stream(cfg_records, cfg_batch, st);
	return s;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "buggy") == 0)
		cfg_batch = 450;
	struct stats st = {0};
	st.sum = run_import(&st);
	printf("%ld records, %ld numbers, %ld strings, sum %.3f\n", st.records, st.numbers, st.strings, st.sum);
	return 0;
}
