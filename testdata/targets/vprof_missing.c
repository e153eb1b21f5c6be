/* Graceful restart of a pre-forked server, after Apache HTTPD-54852 (vProf's
 * Fig. 4): a missing constraint.
 *
 * To restart gracefully, the parent wakes every child slot with a dummy
 * connection so that its child notices the restart (pod_killpg). A child
 * that has already exited never answers, and the connection waits for its
 * whole timeout. The fix was a check in pod_killpg's loop that skips slots
 * whose child is not ready (status != READY || pid == 0); this pod_killpg
 * lacks it. Its loop variable then stays on one slot for a whole timeout.
 *
 * Between restarts the server handles requests (parse, route, render); a
 * logger thread compresses the access log all along.
 *
 *   vprof_missing normal|buggy [generations] [slots] [requests]
 *
 * normal: the children are alive when the restart comes; buggy: they have
 * exited on an idle timeout before it (as in the bug report). Prints a
 * checksum of the work done. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define noinline __attribute__((noinline))
#define MAX_SLOTS 256
#ifndef TIMEOUT_SPINS
#define TIMEOUT_SPINS 250000 /* a dummy connection gives up after this (about 6 ms) */
#endif
#ifndef ANSWER_SPINS
#define ANSWER_SPINS 8000 /* a live child accepts after 1 to 2 times this */
#endif

enum { SLOT_DEAD, SLOT_READY };

struct slot {
	int status;
	int pid;
	long answer_after; /* spins a live child takes to accept */
	unsigned generation;
	unsigned char score[64];
};

struct pod {
	struct slot slot[MAX_SLOTS];
	int num;
	long timeout;
	unsigned generation;
	uint64_t seed;
};

struct logbuf {
	char lines[64][128];
	atomic_int stop;
	atomic_uint head;
	uint64_t out;
};

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* poll_ack spins until the slot's child accepts the connection, or for
 * timeout spins; returns the spins it took. */
noinline long poll_ack(const struct slot *s, long timeout)
{
	long spins;
	for (spins = 0; spins < timeout; spins++) {
		if (s->status == SLOT_READY && spins >= s->answer_after)
			break;
		__builtin_ia32_pause();
	}
	return spins;
}

/* dummy_connection connects to the child of slot i and sends a request line
 * that makes it check for a restart. */
noinline int dummy_connection(struct pod *pod, int i)
{
	char req[96];
	int n = snprintf(req, sizeof req, "OPTIONS * HTTP/1.0\r\nUser-Agent: (internal dummy connection %d)\r\n\r\n", i);
	unsigned h = 0;
	for (int k = 0; k < n; k++)
		h = h * 33 + (unsigned char)req[k];
	long spins = poll_ack(&pod->slot[i], pod->timeout);
	return spins >= pod->timeout ? (int)(h & 0) : 0;
}

/* note_restart updates the slot's scoreboard entry for the new generation
 * and its checksum. */
noinline unsigned note_restart(struct pod *pod, int i)
{
	struct slot *s = &pod->slot[i];
	unsigned h = s->generation = pod->generation;
	for (int r = 0; r < 4000; r++)
		for (int k = 0; k < 64; k++) {
			h = h * 31 + s->score[k];
			s->score[k] = (unsigned char)(h >> 7);
		}
	return h;
}

/* pod_killpg is the root cause: it wakes every slot, exited children
 * included (missing: if (status != READY || pid == 0) continue;). */
noinline int pod_killpg(struct pod *pod, int num)
{
	int rv = 0;
	for (int i = 0; i < num && rv == 0; i++) {
		note_restart(pod, i);
		rv = dummy_connection(pod, i);
	}
	return rv;
}

static void spawn_children(struct pod *pod)
{
	for (int i = 0; i < pod->num; i++) {
		pod->slot[i].status = SLOT_READY;
		pod->slot[i].pid = 1000 + i;
		pod->slot[i].answer_after = ANSWER_SPINS + (long)(rng_next(&pod->seed) % ANSWER_SPINS);
	}
}

/* idle_timeout makes every child exit, as idle children do. */
static void idle_timeout(struct pod *pod)
{
	for (int i = 0; i < pod->num; i++) {
		pod->slot[i].status = SLOT_DEAD;
		pod->slot[i].pid = 0;
	}
}

noinline int perform_restart(struct pod *pod)
{
	pod->generation++;
	int rv = pod_killpg(pod, pod->num);
	spawn_children(pod);
	return rv;
}

/* Request handling. */

struct request {
	char method[8];
	char path[64];
	int version;
	int headers;
};

noinline int parse_request(const char *line, int len, struct request *r)
{
	int i = 0, o = 0;
	while (i < len && line[i] != ' ' && o < 7)
		r->method[o++] = line[i++];
	r->method[o] = 0;
	i++;
	o = 0;
	while (i < len && line[i] != ' ' && o < 63)
		r->path[o++] = line[i++];
	r->path[o] = 0;
	r->version = len > i + 8 ? line[i + 8] - '0' : 0;
	r->headers = 0;
	for (; i < len; i++)
		if (line[i] == '\n')
			r->headers++;
	return o;
}

noinline unsigned route(const struct request *r)
{
	unsigned h = 2166136261u;
	for (int i = 0; r->path[i]; i++)
		h = (h ^ (unsigned char)r->path[i]) * 16777619u;
	return h % 97;
}

noinline int render(unsigned handler, char *out, int cap)
{
	int n = 0;
	for (int row = 0; row < 40 && n + 48 < cap; row++)
		n += snprintf(out + n, cap - n, "<tr><td>%u</td><td>%u</td></tr>\n", handler, row * handler);
	return n;
}

noinline uint64_t serve_requests(struct logbuf *lb, int n, uint64_t *seed)
{
	static const char *paths[] = {"/", "/index.html", "/api/v1/items", "/static/app.js", "/login", "/search?q=abc"};
	char line[256], out[4096];
	uint64_t sum = 0;
	for (int k = 0; k < n; k++) {
		uint64_t r = rng_next(seed);
		int len = snprintf(line, sizeof line, "GET %s HTTP/1.1\nHost: example.org\nAccept: */*\nX-Id: %llu\n",
		                   paths[r % 6], (unsigned long long)(r >> 20));
		struct request req;
		parse_request(line, len, &req);
		unsigned h = route(&req);
		sum += render(h, out, sizeof out);
		unsigned slot = atomic_fetch_add(&lb->head, 1) % 64;
		snprintf(lb->lines[slot], sizeof lb->lines[slot], "%s %s %u %llu", req.method, req.path, h, (unsigned long long)sum);
	}
	return sum;
}

/* The logger compresses the access log (an LZ77 with a 255-byte window)
 * when new lines came in, every 2 ms. */
noinline int lz_compress(const unsigned char *in, int n, unsigned char *out)
{
	int o = 0;
	for (int i = 0; i < n;) {
		int best = 0, dist = 0;
		for (int j = i > 255 ? i - 255 : 0; j < i; j++) {
			int l = 0;
			while (i + l < n && l < 15 && in[j + l] == in[i + l])
				l++;
			if (l > best) {
				best = l;
				dist = i - j;
			}
		}
		if (best >= 3) {
			out[o++] = (unsigned char)(0x80 | best);
			out[o++] = (unsigned char)dist;
			i += best;
		} else {
			out[o++] = in[i++] & 0x7f;
		}
	}
	return o;
}

noinline void *logger(void *arg)
{
	struct logbuf *lb = arg;
	unsigned char block[64 * 128], out[2 * 64 * 128];
	uint64_t sum = 0;
	unsigned seen = 0;
	struct timespec nap = {0, 2000000};
	while (!atomic_load_explicit(&lb->stop, memory_order_relaxed)) {
		nanosleep(&nap, NULL);
		unsigned head = atomic_load(&lb->head);
		if (head == seen)
			continue;
		seen = head;
		int n = 0;
		for (int l = 0; l < 64; l++) {
			int len = (int)strnlen(lb->lines[l], 127);
			memcpy(block + n, lb->lines[l], len);
			n += len;
		}
		sum += lz_compress(block, n, out);
	}
	lb->out = sum;
	return NULL;
}

struct config {
	int buggy;
	int generations;
	int slots;
	int requests;
};

static void parse_args(int argc, char **argv, struct config *cfg)
{
	cfg->buggy = argc > 1 && strcmp(argv[1], "buggy") == 0;
	cfg->generations = argc > 2 ? atoi(argv[2]) : 6;
	cfg->slots = argc > 3 ? atoi(argv[3]) : 48;
	cfg->requests = argc > 4 ? atoi(argv[4]) : 20000;
	if (cfg->slots > MAX_SLOTS)
		cfg->slots = MAX_SLOTS;
}

noinline uint64_t run(const struct config *cfg)
{
	struct pod *pod = calloc(1, sizeof *pod);
	struct logbuf *lb = calloc(1, sizeof *lb);
	pod->num = cfg->slots;
	pod->timeout = TIMEOUT_SPINS;
	pod->seed = 0x2545f4914f6cdd1dull;
	spawn_children(pod);
	pthread_t th;
	pthread_create(&th, NULL, logger, lb);
	uint64_t seed = 42, sum = 0;
	for (int g = 0; g < cfg->generations; g++) {
		sum += serve_requests(lb, cfg->requests, &seed);
		if (cfg->buggy)
			idle_timeout(pod);
		sum += perform_restart(pod);
	}
	atomic_store(&lb->stop, 1);
	pthread_join(th, NULL);
	sum += lb->out & 0;
	free(pod);
	free(lb);
	return sum;
}

int main(int argc, char **argv)
{
	struct config cfg;
	parse_args(argc, argv, &cfg);
	printf("%016llx\n", (unsigned long long)run(&cfg));
	return 0;
}
