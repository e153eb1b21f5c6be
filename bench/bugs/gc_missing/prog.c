/* A trade-log loader on top of libgc (the objects' memory is managed by
 * reference counts, and libgc collects the cycles, like a scripting
 * runtime's objects): it reads text lines "id,account,symbol,price,qty"
 * (make_line, parse_line), makes a record object per line (record_new)
 * that refers to its account's object (struct account) and folds the
 * amount into the account. A trade that is still pending refers to
 * itself until settled (a cycle only the collector frees).
 *
 * The normal input streams the lines: each record is dropped once folded
 * in. The buggy input keeps every record in memory for an audit index
 * (cfg_keep_records = 1), a structure of millions of objects, and libgc's
 * collect_generations traverses all of it every 70,000 allocations.
 *
 *   prog normal|buggy
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gc.h"

#define noinline __attribute__((noinline))
#define LINES 3000000
#define ACCOUNTS 4096

struct account {
	struct gc_head h;
	char name[16];
	long trades;
	int64_t balance;
};

struct record {
	struct gc_head h;
	struct account *acct;
	struct record *self; /* a pending trade refers to itself */
	uint64_t id;
	int64_t amount;
};

long cfg_keep_records = 0;
long cfg_gc_threshold0 = 700, cfg_gc_threshold1 = 10, cfg_gc_threshold2 = 10;

static struct account *accounts[ACCOUNTS];
static long freed_records;

static void decref(struct gc_head *o);

static void account_traverse(struct gc_head *self, gc_visit visit, void *arg)
{
	(void)self, (void)visit, (void)arg;
}

static void account_clear(struct gc_head *self) { (void)self; }

static void record_traverse(struct gc_head *self, gc_visit visit, void *arg)
{
	struct record *r = (struct record *)self;
	visit(&r->acct->h, arg);
	if (r->self)
		visit(&r->self->h, arg);
}

static void record_clear(struct gc_head *self)
{
	struct record *r = (struct record *)self;
	if (r->self) {
		r->self = NULL;
		decref(&r->h);
	}
}

static const struct gc_type account_type = {"account", account_traverse, account_clear};
static const struct gc_type record_type = {"record", record_traverse, record_clear};

static void decref(struct gc_head *o)
{
	if (--o->refcnt > 0)
		return;
	gc_untrack(o);
	if (o->type == &record_type) {
		struct record *r = (struct record *)o;
		decref(&r->acct->h);
		freed_records++;
	}
	free(o);
}

noinline struct record *record_new(uint64_t id, struct account *a, int64_t amount, int pending)
{
	struct record *r = malloc(sizeof *r);
	if (!r)
		abort();
	r->h.refcnt = 1;
	r->acct = a;
	a->h.refcnt++;
	r->id = id;
	r->amount = amount;
	r->self = NULL;
	if (pending) {
		r->self = r;
		r->h.refcnt++;
	}
	gc_track(&r->h, &record_type);
	return r;
}

noinline int make_line(char *buf, size_t n, uint64_t id, uint64_t x)
{
	static const char *syms[] = {"ACME", "BOLT", "CRUX", "DYNA", "EPIX", "FLUX", "GRID", "HALO"};
	return snprintf(buf, n, "%llu,acct%04llu,%s,%.4f,%lld", (unsigned long long)id,
			(unsigned long long)(x % ACCOUNTS), syms[(x >> 12) % 8], (double)((x >> 16) % 1000000) / 1e4,
			(long long)((x >> 40) % 2000) - 1000);
}

/* parse_line: "id,acctNNNN,SYM,price,qty"; the amount in hundredths. */
noinline int parse_line(const char *s, uint64_t *id, long *acct, int64_t *amount)
{
	char *e;
	*id = strtoull(s, &e, 10);
	if (*e != ',' || strncmp(e + 1, "acct", 4) != 0)
		return -1;
	*acct = strtol(e + 5, &e, 10);
	if (*e != ',' || *acct < 0 || *acct >= ACCOUNTS)
		return -1;
	const char *sym = e + 1;
	e = strchr(sym, ',');
	if (!e || e - sym != 4)
		return -1;
	double price = strtod(e + 1, &e);
	if (*e != ',')
		return -1;
	long qty = strtol(e + 1, &e, 10);
	*amount = (int64_t)(price * 100.0) * qty;
	return *e == 0 ? 0 : -1;
}

noinline void fold(struct record *r)
{
	r->acct->trades++;
	r->acct->balance += r->amount;
}

noinline long load(struct record **kept)
{
	uint64_t x = 0x9E3779B97F4A7C15ull;
	char line[96];
	long n = 0;
	for (uint64_t i = 0; i < LINES; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		make_line(line, sizeof line, i, x);
		uint64_t id;
		long acct;
		int64_t amount;
		if (parse_line(line, &id, &acct, &amount) != 0)
			continue;
		struct record *r = record_new(id, accounts[acct], amount, x % 8 == 0);
		fold(r);
		if (cfg_keep_records)
			kept[n++] = r;
		else
			decref(&r->h);
	}
	return n;
}

int main(int argc, char **argv)
{
	int buggy = argc > 1 && strcmp(argv[1], "buggy") == 0;
	cfg_keep_records = buggy;
	gc_init(cfg_gc_threshold0, cfg_gc_threshold1, cfg_gc_threshold2);
	for (int i = 0; i < ACCOUNTS; i++) {
		struct account *a = calloc(1, sizeof *a);
		if (!a)
			abort();
		a->h.refcnt = 1;
		snprintf(a->name, sizeof a->name, "acct%04d", i);
		gc_track(&a->h, &account_type);
		accounts[i] = a;
	}
	struct record **kept = cfg_keep_records ? malloc(LINES * sizeof *kept) : NULL;
	if (cfg_keep_records && !kept)
		abort();
	long n = load(kept);
	long trades = 0;
	int64_t total = 0;
	for (int i = 0; i < ACCOUNTS; i++)
		trades += accounts[i]->trades, total += accounts[i]->balance;
	printf("%ld trades, %ld kept, balance %lld, %ld freed, %ld cycles collected, collections %ld/%ld/%ld\n",
	       trades, n, (long long)total, freed_records, gc_collected(), gc_collections(0), gc_collections(1),
	       gc_collections(2));
	for (long i = 0; i < n; i++)
		decref(&kept[i]->h);
	free(kept);
	return 0;
}
