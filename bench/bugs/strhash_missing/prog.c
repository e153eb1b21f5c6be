/* A small interpreter for generated scripts of assignments
 * ("dst = a OP b" over named variables), as a code generator emits them for
 * metrics pipelines. Variable names are interned string objects that cache
 * their hash, like java.lang.String: str_hash computes the hash of a name
 * the first time it is asked and keeps it in the object, and every variable
 * access (env_get, env_set) goes through the scope's hash table
 * (table_find), which asks str_hash for the key's hash.
 *
 * The bug (missing constraint): str_hash uses a cached hash of 0 to mean
 * "not computed yet", so a name whose hash is 0 has its hash recomputed
 * (hash_bytes over the whole name) on every access. The normal script's
 * names hash to other values; the buggy script is the same program in
 * which the generator's mangled names of six hot variables happen to hash
 * to 0. The fix: a separate "hash is zero" flag that str_hash checks
 * before recomputing (OpenJDK JDK-8221836).
 *
 *   prog normal|buggy
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define noinline __attribute__((noinline))
#define NVARS 48
#define NSTMTS 400
#define ITERATIONS 250000
#define BUCKETS 256

struct str {
	uint32_t hash; /* 0: not computed yet (the bug: also a real hash) */
	uint32_t len;
	char s[];
};

struct entry {
	struct str *key;
	uint64_t value;
	struct entry *next;
};

struct table {
	struct entry *b[BUCKETS];
	long count;
};

struct env {
	struct table vars;
	struct env *parent;
};

enum { OPD_VAR, OPD_CONST };
struct operand {
	int kind;
	struct str *name;
	uint64_t k;
};

enum { OP_ADD, OP_SUB, OP_MUL, OP_XOR, OP_AND, OP_SHR };
struct expr {
	int op;
	struct operand a, b;
};

struct stmt {
	struct str *dst;
	struct expr e;
};

struct block {
	struct stmt *s;
	long n;
};

static long hashes_computed;
static long lookups;

/* Names a code generator mangled for the six hottest variables of the
 * buggy script; each hashes to 0 under the String hash (31 * h + c). */
static const char *zero_names[] = {
	"session_request_counter_total_vaqhpx67w5cwgw9uhcpqwm2b2hb5fAZT",
	"response_bytes_accumulated_sum_bboqmnq4ruq6i21of2zi5w66kmsoOKZk",
	"cache_lookup_latency_bucket_6p9tokw4ktaqp9j3ydbsqxeuxr0kME9T",
	"retry_backoff_interval_millis_tbsqdcm73o8db1gy8ftgpmu685n6rIKE",
	"payload_checksum_running_value_x921apx225ppfdkk5rrog6o4jw68K391",
	"connection_pool_active_gauge_uzqzd4zgmrmeewjligxt1zxv9mjn9u2D",
};
static const char *bases[] = {
	"session_request_counter_total_", "response_bytes_accumulated_sum_",
	"cache_lookup_latency_bucket_", "retry_backoff_interval_millis_",
	"payload_checksum_running_value_", "connection_pool_active_gauge_",
	"upstream_error_ratio_window_", "queue_depth_high_watermark_",
};

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

noinline uint32_t hash_bytes(const char *s, uint32_t n)
{
	uint32_t h = 0;
	for (uint32_t i = 0; i < n; i++)
		h = 31 * h + (unsigned char)s[i];
	return h;
}

/* str_hash is the root cause: a cached hash of 0 is taken for "not
 * computed", so names that hash to 0 are hashed again on every call. */
noinline uint32_t str_hash(struct str *k)
{
	uint32_t h = k->hash;
	if (h == 0) {
		h = hash_bytes(k->s, k->len);
		k->hash = h;
		hashes_computed++;
	}
	return h;
}

noinline struct entry *table_find(struct table *t, struct str *k)
{
	uint32_t h = str_hash(k);
	lookups++;
	for (struct entry *e = t->b[h % BUCKETS]; e; e = e->next)
		if (e->key == k || (e->key->len == k->len && memcmp(e->key->s, k->s, k->len) == 0))
			return e;
	return NULL;
}

noinline struct entry *table_add(struct table *t, struct str *k, uint64_t v)
{
	struct entry *e = malloc(sizeof *e);
	if (!e)
		abort();
	uint32_t h = str_hash(k);
	e->key = k;
	e->value = v;
	e->next = t->b[h % BUCKETS];
	t->b[h % BUCKETS] = e;
	t->count++;
	return e;
}

noinline uint64_t env_get(struct env *env, struct str *name)
{
	for (struct env *s = env; s; s = s->parent) {
		struct entry *e = table_find(&s->vars, name);
		if (e)
			return e->value;
	}
	return 0;
}

noinline void env_set(struct env *env, struct str *name, uint64_t v)
{
	struct entry *e = table_find(&env->vars, name);
	if (e)
		e->value = v;
	else
		table_add(&env->vars, name, v);
}

noinline uint64_t eval_operand(struct env *env, const struct operand *o)
{
	return o->kind == OPD_VAR ? env_get(env, o->name) : o->k;
}

noinline uint64_t eval_binop(struct env *env, const struct expr *e)
{
	uint64_t a = eval_operand(env, &e->a);
	uint64_t b = eval_operand(env, &e->b);
	switch (e->op) {
	case OP_ADD: return a + b;
	case OP_SUB: return a - b;
	case OP_MUL: return a * (b | 1);
	case OP_XOR: return a ^ b;
	case OP_AND: return a & b;
	default: return a >> (b & 7);
	}
}

noinline uint64_t eval_expr(struct env *env, const struct expr *e)
{
	return eval_binop(env, e);
}

noinline void exec_assign(struct env *env, const struct stmt *s, uint64_t v)
{
	env_set(env, s->dst, v);
}

noinline void exec_stmt(struct env *env, const struct stmt *s)
{
	exec_assign(env, s, eval_expr(env, &s->e));
}

noinline void exec_block(struct env *env, const struct block *b)
{
	for (long i = 0; i < b->n; i++)
		exec_stmt(env, &b->s[i]);
}

noinline uint64_t run_program(struct env *globals, const struct block *b, long iterations, struct str **names)
{
	struct env local = {.parent = globals};
	for (long it = 0; it < iterations; it++)
		exec_block(&local, b);
	uint64_t sum = 0;
	for (int i = 0; i < NVARS; i++)
		sum = sum * 1000003 + env_get(&local, names[i]);
	return sum;
}

static struct str *str_new(const char *s)
{
	size_t n = strlen(s);
	struct str *k = malloc(sizeof *k + n + 1);
	if (!k)
		abort();
	k->hash = 0;
	k->len = (uint32_t)n;
	memcpy(k->s, s, n + 1);
	return k;
}

/* The generator's names: a metric's base name and a 32-character mangled
 * suffix. The buggy script's six hottest variables have the names above. */
static void make_names(struct str **names, int buggy)
{
	static const char alnum[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	char buf[96];
	for (int i = 0; i < NVARS; i++) {
		if (buggy && i < 6) {
			names[i] = str_new(zero_names[i]);
			continue;
		}
		int n = snprintf(buf, sizeof buf, "%s", bases[i % 8]);
		for (int j = 0; j < 32; j++)
			buf[n + j] = alnum[next_rand() % 36];
		buf[n + 32] = 0;
		names[i] = str_new(buf);
	}
}

/* The statements: the six first variables are the hot ones (operands of
 * about half the statements), in both scripts. */
static void make_block(struct block *b, struct str **names)
{
	b->n = NSTMTS;
	b->s = calloc(NSTMTS, sizeof *b->s);
	if (!b->s)
		abort();
	for (long i = 0; i < NSTMTS; i++) {
		struct stmt *s = &b->s[i];
		uint64_t r = next_rand();
		s->dst = names[6 + r % (NVARS - 6)];
		s->e.op = (int)((r >> 8) % 6);
		s->e.a.kind = OPD_VAR;
		s->e.a.name = (r >> 16) % 2 ? names[(r >> 20) % 6] : names[6 + (r >> 20) % (NVARS - 6)];
		if ((r >> 28) % 4 == 0) {
			s->e.b.kind = OPD_CONST;
			s->e.b.k = (r >> 32) % 1000;
		} else {
			s->e.b.kind = OPD_VAR;
			s->e.b.name = names[6 + (r >> 36) % (NVARS - 6)];
		}
		if (i % 50 == 0)
			s->dst = names[i / 50 % 6];
	}
}

int main(int argc, char **argv)
{
	int buggy = argc > 1 && strcmp(argv[1], "buggy") == 0;
	struct str *names[NVARS];
	make_names(names, buggy);
	struct env globals = {0};
	for (int i = 0; i < NVARS; i++)
		env_set(&globals, names[i], (uint64_t)i + 1);
	struct block b;
	make_block(&b, names);
	uint64_t sum = run_program(&globals, &b, ITERATIONS, names);
	printf("%ld statements, %ld lookups, %ld hashes computed, checksum %llu\n",
	       (long)NSTMTS * ITERATIONS, lookups, hashes_computed, (unsigned long long)sum);
	return 0;
}
