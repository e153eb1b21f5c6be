/* A key-value table shared by two request handlers: handle_get parses a
 * request and looks its key up; handle_update looks the key up and formats
 * a new value. Both call table_get, a wrapper that hashes the key and walks
 * its bucket's chain (chain_find).
 *
 * The bug (scalability): the table has a fixed number of buckets and is
 * never resized. With 2,000 keys (normal) the chains hold 2 entries; with
 * 190,000 (buggy) they hold about 185, and chain_find walks them for every
 * request. The fix is to grow the table. Root cause: chain_find.
 *
 *   prog normal|buggy
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define noinline __attribute__((noinline))
#define NB 1024
#define MAXE 200000

struct ent {
	uint64_t key, val;
	struct ent *next;
};
static struct ent *tab[NB];
static struct ent pool[MAXE];
static int npool;
static char req[512];

static uint64_t rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

noinline unsigned bucket_of(uint64_t key) { return (unsigned)((key * 0x9e3779b97f4a7c15ull) >> 54); }

/* chain_find is the root cause: the walk of a chain that never stops growing. */
noinline struct ent *chain_find(struct ent *e, uint64_t key)
{
	for (long steps = 0; e != NULL; e = e->next, steps++)
		if (e->key == key)
			return e;
	return NULL;
}

noinline struct ent *table_get(uint64_t key) { return chain_find(tab[bucket_of(key)], key); }

noinline void table_put(uint64_t key, uint64_t val)
{
	struct ent *e = &pool[npool++];
	unsigned b = bucket_of(key);
	e->next = tab[b];
	e->key = key;
	e->val = val;
	tab[b] = e;
}

noinline uint64_t parse_request(uint64_t *s)
{
	uint64_t h = 1469598103934665603ull;
	for (int i = 0; i < (int)sizeof req; i++) {
		req[i] = (char)('a' + rng(s) % 26);
		h = (h ^ (uint8_t)req[i]) * 1099511628211ull;
	}
	return h;
}

noinline uint64_t handle_get(uint64_t *s, uint64_t key)
{
	uint64_t h = parse_request(s);
	struct ent *e = table_get(key);
	return h ^ (e ? e->val : 0);
}

noinline uint64_t format_value(uint64_t *s, uint64_t v)
{
	char buf[256];
	for (int i = 0; i < (int)sizeof buf; i++)
		buf[i] = (char)('0' + (v + rng(s)) % 10);
	uint64_t h = 0;
	for (int i = 0; i < (int)sizeof buf; i++)
		h = h * 31 + (uint8_t)buf[i];
	return h;
}

noinline uint64_t handle_update(uint64_t *s, uint64_t key)
{
	struct ent *e = table_get(key);
	uint64_t v = format_value(s, e ? e->val : 0);
	if (e)
		e->val = v;
	return v;
}

int main(int argc, char **argv)
{
	int buggy = argc > 1 && strcmp(argv[1], "buggy") == 0;
	long keys = buggy ? 190000 : 2000, requests = buggy ? 300000 : 600000;
	uint64_t s = 88172645463325252ull, sum = 0;
	for (long k = 0; k < keys; k++)
		table_put(k * 7 + 1, k);
	for (long r = 0; r < requests; r++) {
		uint64_t key = (rng(&s) % keys) * 7 + 1;
		sum += (r & 1) ? handle_update(&s, key) : handle_get(&s, key);
	}
	printf("%llu\n", (unsigned long long)sum);
	return 0;
}
