/* A session server's loop: each tick some clients disconnect and new ones
 * connect, up to cfg_max_clients, and a batch of requests is served
 * (handle_request: find the session, parse the request line, update the
 * session, format the response). Sessions live in a chained hash table
 * keyed by session id that grows when full and shrinks when it empties.
 *
 * The bug (wrong constraint): table_remove shrinks the table as soon as it
 * is less than half full, the same point at which table_insert's doubling
 * leaves it, so a table whose size hovers at a power of two is rehashed
 * twice per tick (shrunk on the first disconnect, grown again on the
 * connect that refills it). With cfg_max_clients = 3000 (normal) the
 * count stays between two powers of two; with 4096 (buggy) it sits on
 * one. The fix: shrink only below an eighth full, leaving hysteresis
 * between the two thresholds (as Redis does with its 10% minimum fill).
 *
 *   prog normal|buggy
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define noinline __attribute__((noinline))
#define TICKS 110000
#define CHURN 8
#define REQUESTS 48
#define MIN_SIZE 16

struct session {
	uint64_t id;
	struct session *next;
	uint64_t requests, bytes;
	char user[24];
};

struct table {
	struct session **b;
	unsigned long size, used;
	long resizes;
};

long cfg_max_clients = 3000;

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static inline unsigned long slot(uint64_t id, unsigned long size)
{
	return (unsigned long)((id * 0x9E3779B97F4A7C15ull) >> 32) & (size - 1);
}

noinline void table_resize(struct table *t, unsigned long size)
{
	struct session **nb = calloc(size, sizeof *nb);
	if (!nb)
		abort();
	for (unsigned long i = 0; i < t->size; i++) {
		struct session *s = t->b[i];
		while (s) {
			struct session *next = s->next;
			unsigned long j = slot(s->id, size);
			s->next = nb[j];
			nb[j] = s;
			s = next;
		}
	}
	free(t->b);
	t->b = nb;
	t->size = size;
	t->resizes++;
}

noinline void table_insert(struct table *t, struct session *s)
{
	unsigned long j = slot(s->id, t->size);
	s->next = t->b[j];
	t->b[j] = s;
	if (++t->used >= t->size)
		table_resize(t, t->size * 2);
}

noinline struct session *table_find(const struct table *t, uint64_t id)
{
	for (struct session *s = t->b[slot(id, t->size)]; s; s = s->next)
		if (s->id == id)
			return s;
	return NULL;
}

/* table_remove is the root cause: its shrink threshold (half full) is the
 * fill that a doubling leaves, with no hysteresis. */
noinline struct session *table_remove(struct table *t, uint64_t id)
{
	struct session **pp = &t->b[slot(id, t->size)];
	while (*pp && (*pp)->id != id)
		pp = &(*pp)->next;
	struct session *s = *pp;
	if (!s)
		return NULL;
	*pp = s->next;
	t->used--;
	if (t->size > MIN_SIZE && t->used < t->size / 2)
		table_resize(t, t->size / 2);
	return s;
}

noinline int handle_request(struct table *t, uint64_t id, const char *req, char *resp, size_t n)
{
	struct session *s = table_find(t, id);
	if (!s)
		return snprintf(resp, n, "404 no session %llu\r\n", (unsigned long long)id);
	char path[32];
	unsigned long off = 0, len = 0;
	if (sscanf(req, "GET %31s %lu %lu", path, &off, &len) != 3)
		return snprintf(resp, n, "400 bad request\r\n");
	s->requests++;
	s->bytes += len;
	return snprintf(resp, n, "200 %s %s %lu-%lu of session %llu, %llu requests\r\n", s->user, path, off,
			off + len, (unsigned long long)s->id, (unsigned long long)s->requests);
}

static struct session *session_new(uint64_t id)
{
	struct session *s = calloc(1, sizeof *s);
	if (!s)
		abort();
	s->id = id;
	snprintf(s->user, sizeof s->user, "user%llu", (unsigned long long)(id % 100000));
	return s;
}

noinline uint64_t run_server(struct table *t, long ticks)
{
	uint64_t *live = malloc(cfg_max_clients * sizeof *live);
	if (!live)
		abort();
	long nlive = 0;
	uint64_t next_id = 1, sum = 0;
	char req[64], resp[128];
	for (long tick = 0; tick < ticks; tick++) {
		/* disconnects */
		for (int c = 0; c < CHURN && nlive > 0; c++) {
			long i = (long)(next_rand() % (uint64_t)nlive);
			free(table_remove(t, live[i]));
			live[i] = live[--nlive];
		}
		/* connects, up to the limit */
		while (nlive < cfg_max_clients) {
			struct session *s = session_new(next_id++);
			table_insert(t, s);
			live[nlive++] = s->id;
		}
		/* requests */
		for (int r = 0; r < REQUESTS; r++) {
			uint64_t x = next_rand();
			uint64_t id = live[x % (uint64_t)nlive];
			snprintf(req, sizeof req, "GET /obj/%llu %llu %llu", (unsigned long long)(x >> 40) % 1000,
				 (unsigned long long)(x >> 20) % 65536, (unsigned long long)(x >> 8) % 4096);
			sum += (uint64_t)handle_request(t, id, req, resp, sizeof resp) + (unsigned char)resp[4];
		}
	}
	free(live);
	return sum;
}

int main(int argc, char **argv)
{
	int buggy = argc > 1 && strcmp(argv[1], "buggy") == 0;
	cfg_max_clients = buggy ? 4096 : 3000;
	struct table t = {.size = MIN_SIZE};
	t.b = calloc(t.size, sizeof *t.b);
	if (!t.b)
		abort();
	uint64_t sum = run_server(&t, TICKS);
	printf("%ld ticks, %ld requests, %lu sessions, table of %lu, %ld resizes, checksum %llu\n", (long)TICKS,
	       (long)TICKS * REQUESTS, t.used, t.size, t.resizes, (unsigned long long)sum);
	return 0;
}
