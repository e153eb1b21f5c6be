/* An API gateway: the main thread takes requests (a client and a time in
 * microseconds, read_request), asks the rate limiter whether the client is
 * within its quota (rate_allow: at most cfg_limit requests in any window of
 * cfg_window_us), routes the admitted ones (route_request) and appends an
 * access-log line to a ring of log segments. A scrubber thread re-reads
 * the sealed segments and verifies their CRC-32 for as long as the gateway
 * runs (scrub_segment, crc32_update), as a storage engine's background
 * verification does; it takes most of the CPU time in both runs.
 *
 * The bug (scalability): rate_allow keeps a log of each client's request
 * times and, per request, drops the expired ones and counts the rest by a
 * pass over the whole log, so a request costs time linear in the client's
 * requests inside the window. The normal input is many clients at a few
 * requests per second each; the buggy input is the same number of requests
 * from a few batch clients, each with hundreds of requests in its window
 * (still within the limit). The fix: a fixed number of per-slot counters
 * per client (a sliding-window counter), constant time per request.
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
#define REQUESTS 3000000
#define MAXCLIENTS 4096
#define SEGMENT (64 * 1024)
#define NSEGMENTS 64

struct client {
	uint64_t *log; /* request times inside the window, oldest first */
	long n, cap;
	long admitted, rejected;
};

struct segment {
	char data[SEGMENT];
	long len;
	uint32_t crc;
	int sealed;
	pthread_mutex_t mu; /* held by the scrubber while it reads, by the writer to seal or reuse */
};

long cfg_limit = 2500;            /* requests per window and client */
long cfg_window_us = 1000000;     /* one second */

static struct client clients[MAXCLIENTS];
static struct segment segs[NSEGMENTS];
static atomic_int done;
static uint32_t crc_table[256];

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
		crc_table[i] = c;
	}
}

noinline uint32_t crc32_update(uint32_t crc, const char *p, long n)
{
	crc = ~crc;
	for (long i = 0; i < n; i++)
		crc = crc_table[(crc ^ (unsigned char)p[i]) & 0xff] ^ (crc >> 8);
	return ~crc;
}

noinline int scrub_segment(struct segment *s)
{
	return crc32_update(0, s->data, s->len) == s->crc;
}

static void *scrubber(void *arg)
{
	long *passes = arg;
	while (!atomic_load(&done)) {
		for (int i = 0; i < NSEGMENTS && !atomic_load(&done); i++) {
			pthread_mutex_lock(&segs[i].mu);
			if (segs[i].sealed && !scrub_segment(&segs[i]))
				fprintf(stderr, "segment %d: checksum mismatch\n", i);
			pthread_mutex_unlock(&segs[i].mu);
		}
		(*passes)++;
	}
	return NULL;
}

/* rate_allow is the root cause: it drops expired times and counts the
 * client's log by a pass over all of it, on every request. */
noinline int rate_allow(struct client *c, uint64_t now)
{
	long kept = 0;
	for (long i = 0; i < c->n; i++)
		if (c->log[i] + (uint64_t)cfg_window_us > now)
			c->log[kept++] = c->log[i];
	c->n = kept;
	if (kept >= cfg_limit) {
		c->rejected++;
		return 0;
	}
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 16;
		c->log = realloc(c->log, (size_t)c->cap * sizeof *c->log);
		if (!c->log)
			abort();
	}
	c->log[c->n++] = now;
	c->admitted++;
	return 1;
}

noinline int route_request(const char *path, char *backend, size_t n)
{
	static const char *prefixes[] = {"/api/v1/users", "/api/v1/orders", "/api/v2/search", "/static"};
	static const char *backends[] = {"users:8001", "orders:8002", "search:8003", "cdn:8004"};
	for (int i = 0; i < 4; i++)
		if (strncmp(path, prefixes[i], strlen(prefixes[i])) == 0)
			return snprintf(backend, n, "%s", backends[i]);
	return snprintf(backend, n, "default:8000");
}

noinline void log_append(const char *line, long len)
{
	static int cur;
	struct segment *s = &segs[cur];
	if (s->len + len > SEGMENT) {
		pthread_mutex_lock(&s->mu);
		s->crc = crc32_update(0, s->data, s->len);
		s->sealed = 1;
		pthread_mutex_unlock(&s->mu);
		cur = (cur + 1) % NSEGMENTS;
		s = &segs[cur];
		pthread_mutex_lock(&s->mu);
		s->sealed = 0;
		s->len = 0;
		pthread_mutex_unlock(&s->mu);
	}
	memcpy(s->data + s->len, line, (size_t)len);
	s->len += len;
}

/* read_request: the next request. Normal: 4,000 clients, each at about
 * 4 requests per second; buggy: 8 batch clients at about 1,800 per second. */
noinline int read_request(int buggy, uint64_t i, long *client, uint64_t *now, char *path, size_t n)
{
	static const char *paths[] = {"/api/v1/users/", "/api/v1/orders/", "/api/v2/search?q=", "/static/img/"};
	uint64_t x = next_rand();
	*now = i * 70; /* 14,300 requests per second in all */
	*client = buggy ? (long)(x % 8) : (long)(x % 4000);
	return snprintf(path, n, "%s%llu", paths[(x >> 20) % 4], (unsigned long long)(x >> 32) % 100000);
}

noinline long serve(int buggy)
{
	char path[64], backend[32], line[160];
	long admitted = 0;
	for (uint64_t i = 0; i < REQUESTS; i++) {
		long cl;
		uint64_t now;
		read_request(buggy, i, &cl, &now, path, sizeof path);
		int ok = rate_allow(&clients[cl], now);
		int status = 429;
		if (ok) {
			route_request(path, backend, sizeof backend);
			status = 200;
			admitted++;
		} else {
			snprintf(backend, sizeof backend, "-");
		}
		int len = snprintf(line, sizeof line, "%llu client%ld \"GET %s\" %d %s\n", (unsigned long long)now, cl,
				   path, status, backend);
		log_append(line, len);
	}
	return admitted;
}

int main(int argc, char **argv)
{
	int buggy = argc > 1 && strcmp(argv[1], "buggy") == 0;
	crc_init();
	for (int i = 0; i < NSEGMENTS; i++)
		pthread_mutex_init(&segs[i].mu, NULL);
	long passes = 0;
	pthread_t th;
	pthread_create(&th, NULL, scrubber, &passes);
	long admitted = serve(buggy);
	atomic_store(&done, 1);
	pthread_join(th, NULL);
	long rejected = 0, maxlog = 0;
	for (int i = 0; i < MAXCLIENTS; i++) {
		rejected += clients[i].rejected;
		if (clients[i].cap > maxlog)
			maxlog = clients[i].cap;
	}
	printf("%ld requests, %ld admitted, %ld rejected, largest log %ld, %ld scrub passes\n", (long)REQUESTS,
	       admitted, rejected, maxlog, passes);
	return 0;
}
