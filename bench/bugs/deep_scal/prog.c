/* A session service: every request walks ten layers (routing, session
 * lookup, a cache, a hash table) before its session is found.
 *
 * The table has a fixed number of buckets: it was sized for a few thousand
 * sessions and never grows. With the buggy input (many more sessions) every
 * chain is long and bucket_find, ten frames below main, walks it; its time
 * is spread over key_eq, which it calls per entry.
 *
 *   prog normal|buggy
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define noinline __attribute__((noinline))
#define N_BUCKETS 1024
#define REQUESTS 1200000

struct sess {
	char key[24];
	uint64_t hits;
	struct sess *next;
};

struct table {
	struct sess *bucket[N_BUCKETS];
	long n;
};

/* Per-layer request counters, as a service keeps for its metrics page. */
static uint64_t g_layer_calls[8];

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

noinline unsigned hash_key(const char *k)
{
	unsigned h = 2166136261u;
	for (; *k; k++)
		h = (h ^ (unsigned char)*k) * 16777619u;
	return h;
}

noinline int key_eq(const char *a, const char *b)
{
	for (int i = 0; i < 24; i++) {
		if (a[i] != b[i])
			return 0;
		if (a[i] == 0)
			return 1;
	}
	return 1;
}

/* bucket_find is the root cause: a walk whose length grows with the
 * number of sessions. */
noinline struct sess *bucket_find(struct table *t, unsigned h, const char *key)
{
	long steps = 0;
	for (struct sess *s = t->bucket[h % N_BUCKETS]; s; s = s->next, steps++)
		if (key_eq(s->key, key))
			return s;
	return NULL;
}

noinline struct sess *tbl_probe(struct table *t, const char *key)
{
	unsigned h = hash_key(key);
	struct sess *s = bucket_find(t, h, key);
	g_layer_calls[0]++;
	return s;
}

noinline struct sess *tbl_lookup(struct table *t, const char *key)
{
	struct sess *s = tbl_probe(t, key);
	if (s)
		s->hits++;
	return s;
}

noinline struct sess *cache_get(struct table *t, const char *key)
{
	struct sess *s = tbl_lookup(t, key);
	g_layer_calls[1]++;
	return s;
}

noinline struct sess *session_get(struct table *t, const char *key)
{
	struct sess *s = cache_get(t, key);
	g_layer_calls[2]++;
	return s;
}

noinline struct sess *lookup_session(struct table *t, const char *cookie)
{
	char key[24];
	int i = 0;
	for (; cookie[i] && cookie[i] != ';' && i < 23; i++)
		key[i] = cookie[i];
	key[i] = 0;
	struct sess *s = session_get(t, key);
	g_layer_calls[3]++;
	return s;
}

/* render_body formats a response: the work every request does. */
noinline uint64_t render_body(const struct sess *s, char *out)
{
	uint64_t sum = 0;
	for (int round = 0; round < 6; round++) {
		int n = snprintf(out, 256, "<p>%s %llu %d</p>", s ? s->key : "-", (unsigned long long)(s ? s->hits : 0), round);
		for (int i = 0; i < n; i++)
			sum = sum * 131 + (unsigned char)out[i];
	}
	return sum;
}

noinline uint64_t route(struct table *t, const char *cookie, char *out)
{
	struct sess *s = lookup_session(t, cookie);
	return render_body(s, out);
}

noinline uint64_t handle_request(struct table *t, const char *cookie)
{
	char out[256];
	return route(t, cookie, out);
}

noinline uint64_t serve(struct table *t, long n_sessions)
{
	uint64_t sum = 0;
	char cookie[40];
	for (long r = 0; r < REQUESTS; r++) {
		snprintf(cookie, sizeof cookie, "s%07ld;path=/", (long)(next_rand() % n_sessions));
		sum += handle_request(t, cookie);
	}
	return sum;
}

noinline uint64_t run_requests(struct table *t, long n)
{
	uint64_t s = serve(t, n);
	g_layer_calls[4]++;
	return s;
}

static void fill(struct table *t, long n)
{
	for (long i = 0; i < n; i++) {
		struct sess *s = calloc(1, sizeof *s);
		snprintf(s->key, sizeof s->key, "s%07ld", i);
		unsigned h = hash_key(s->key) % N_BUCKETS;
		s->next = t->bucket[h];
		t->bucket[h] = s;
		t->n++;
	}
}

int main(int argc, char **argv)
{
	int buggy = argc > 1 && strcmp(argv[1], "buggy") == 0;
	long n = buggy ? 40000 : 2000;
	struct table *t = calloc(1, sizeof *t);
	fill(t, n);
	printf("%llx\n", (unsigned long long)run_requests(t, n));
	return 0;
}
