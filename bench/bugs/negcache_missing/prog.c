/* A request router: main reads requests ("<host> <path>"), route_request
 * resolves the host to a backend (resolve_host) and forwards the path
 * (forward: a checksum of it stands in for the copy). Resolution consults a
 * cache of found hosts, then a cache of hosts known not to exist, and only
 * then scans the host table (lookup_table). A background thread refreshes
 * health statistics throughout.
 *
 * The bug (missing constraint): resolve_host records unknown hosts in the
 * negative cache but never checks it, so every request for an unknown host
 * scans the whole table again. The normal input names only known hosts;
 * the buggy input (a misconfigured client) sends a quarter of its requests to
 * hosts that do not exist. The fix adds the check
 * (if (neg_find(name)) return -1;) before the scan.
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
#define TABLE 2000
#define CACHE 8192
#define REQUESTS 150000

struct host {
	char name[32];
	int backend;
};

static struct host table[TABLE];
static struct host cache[CACHE];
static char neg[CACHE][32];
static char (*reqs)[96];
static atomic_int stop;
static atomic_ulong health;
int cfg_table_hosts = TABLE;
int cfg_neg_ttl = 30;

static uint64_t rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static unsigned hash_name(const char *s)
{
	unsigned h = 2166136261u;
	while (*s)
		h = (h ^ (uint8_t)*s++) * 16777619u;
	return h;
}

noinline int lookup_table(const char *name)
{
	for (int i = 0; i < cfg_table_hosts; i++)
		if (strcmp(table[i].name, name) == 0)
			return table[i].backend;
	return -1;
}

/* slot: where name is in an open-addressing table of names, or the empty
 * slot where it would go. */
static unsigned slot(char (*names)[32], size_t stride, const char *name)
{
	unsigned i = hash_name(name) % CACHE;
	for (;;) {
		const char *n = (const char *)names + (size_t)i * stride;
		if (!n[0] || strcmp(n, name) == 0)
			return i;
		i = (i + 1) % CACHE;
	}
}

noinline int neg_find(const char *name)
{
	return neg[slot(neg, sizeof neg[0], name)][0] != 0;
}

noinline void neg_add(const char *name)
{
	strncpy(neg[slot(neg, sizeof neg[0], name)], name, 31);
}

/* resolve_host is the root cause: it never calls neg_find. */
noinline int resolve_host(const char *name)
{
	struct host *c = &cache[slot((char (*)[32])cache, sizeof cache[0], name)];
	if (c->name[0])
		return c->backend;
	int b = lookup_table(name);
	if (b < 0) {
		neg_add(name);
		return -1;
	}
	strncpy(c->name, name, 31);
	c->backend = b;
	return b;
}

noinline uint64_t forward(int backend, const char *path)
{
	uint64_t h = (uint64_t)backend;
	for (int r = 0; r < 10; r++)
		for (const char *p = path; *p; p++)
			h = (h ^ (uint8_t)*p) * 1099511628211ull;
	return h;
}

noinline uint64_t route_request(const char *req)
{
	char host[32];
	const char *sp = strchr(req, ' ');
	size_t n = (size_t)(sp - req);
	if (n >= sizeof host)
		n = sizeof host - 1;
	memcpy(host, req, n);
	host[n] = 0;
	int b = resolve_host(host);
	if (b < 0)
		return 404;
	return forward(b, sp + 1);
}

static void *health_main(void *arg)
{
	(void)arg;
	uint64_t s = 7, acc = 0;
	while (!atomic_load(&stop)) {
		for (int i = 0; i < 100000; i++)
			acc += rng(&s) % 1000;
		atomic_store(&health, acc);
	}
	return NULL;
}

noinline void make_requests(int unknown_pct)
{
	uint64_t s = 88172645463325252ull;
	for (int i = 0; i < REQUESTS; i++) {
		int unknown = (int)(rng(&s) % 100) < unknown_pct;
		unsigned h = (unsigned)(rng(&s) % (unknown ? 200 : TABLE));
		snprintf(reqs[i], sizeof reqs[i], "%s%u.svc.internal /api/v2/items/%llx?fields=all", unknown ? "gone" : "node", h,
			 (unsigned long long)(rng(&s) & 0xffffffffff));
	}
}

int main(int argc, char **argv)
{
	if (argc != 2 || (strcmp(argv[1], "normal") && strcmp(argv[1], "buggy"))) {
		fprintf(stderr, "usage: prog normal|buggy\n");
		return 2;
	}
	int buggy = !strcmp(argv[1], "buggy");
	if (buggy)
		cfg_neg_ttl = 300;
	for (int i = 0; i < TABLE; i++) {
		snprintf(table[i].name, sizeof table[i].name, "node%d.svc.internal", i);
		table[i].backend = i % 16;
	}
	reqs = calloc(REQUESTS, sizeof *reqs);
	make_requests(buggy ? 25 : 0);
	pthread_t t;
	pthread_create(&t, NULL, health_main, NULL);
	uint64_t sum = 0;
	for (int round = 0; round < 3; round++)
		for (int i = 0; i < REQUESTS; i++)
			sum += route_request(reqs[i]);
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	printf("%llu %lu\n", (unsigned long long)sum, (unsigned long)atomic_load(&health));
	return 0;
}
