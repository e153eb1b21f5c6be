/* A key-value server's event loop: a client thread sends GET and PUT
 * requests through a pipe in bursts; the loop waits in poll(), reads a
 * burst and dispatches each request.
 *
 * The bug (wrong constraint): store_put compacts the store when its garbage
 * exceeds cfg_compact_pct percent of the live entries. The documented
 * setting 0 means "never compact", but the test treats it as a threshold of
 * 0, so with the buggy configuration every PUT compacts the whole store.
 *
 *   prog normal|buggy
 */
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define noinline __attribute__((noinline))
#define N_KEYS 2048
#define BURSTS 3000
#define PER_BURST 64

long cfg_compact_pct = 50;
long cfg_max_clients = 64;

struct msg {
	int op; /* 0 GET, 1 PUT, 2 quit */
	uint32_t key;
	uint64_t val;
};

struct slot {
	uint64_t val;
	uint64_t old[4];
	int n_old;
};

struct store {
	struct slot s[N_KEYS];
	long live, garbage;
	uint64_t compactions;
	uint64_t checksum;
	uint64_t puts;
};

static int fds[2];

noinline uint64_t value_hash(uint64_t v)
{
	for (int i = 0; i < 2000; i++)
		v = (v ^ (v >> 29)) * 0xbf58476d1ce4e5b9ull;
	return v;
}

/* slot_checksum re-verifies a slot's live value as it is rewritten. */
noinline uint64_t slot_checksum(const struct slot *s)
{
	uint64_t v = s->val;
	for (int i = 0; i < 25; i++)
		v = (v ^ (v >> 31)) * 0x94d049bb133111ebull;
	return v;
}

noinline void compact_store(struct store *st)
{
	uint64_t sum = 0;
	for (int k = 0; k < N_KEYS; k++) {
		struct slot *s = &st->s[k];
		s->n_old = 0;
		sum += slot_checksum(s);
	}
	st->garbage = 0;
	st->compactions++;
	st->checksum ^= sum;
}

/* store_put is the root cause: a compaction percentage of 0 should
 * disable compaction, not trigger it on every put. */
noinline void store_put(struct store *st, uint32_t key, uint64_t val)
{
	struct slot *s = &st->s[key % N_KEYS];
	if (s->n_old < 4)
		s->old[s->n_old++] = s->val;
	s->val = value_hash(val);
	st->garbage++;
	long threshold = st->live * cfg_compact_pct / 100; /* BUG: 0 means never */
	if (st->garbage > threshold)
		compact_store(st);
	st->puts++;
}

noinline uint64_t store_get(struct store *st, uint32_t key)
{
	return value_hash(st->s[key % N_KEYS].val);
}

noinline uint64_t handle_put(struct store *st, const struct msg *m)
{
	store_put(st, m->key, m->val);
	return 1;
}

noinline uint64_t handle_get(struct store *st, const struct msg *m)
{
	return store_get(st, m->key);
}

noinline uint64_t dispatch(struct store *st, const struct msg *m)
{
	switch (m->op) {
	case 0:
		return handle_get(st, m);
	case 1:
		return handle_put(st, m);
	}
	return 0;
}

noinline uint64_t event_loop(struct store *st)
{
	struct pollfd p = {.fd = fds[0], .events = POLLIN};
	struct msg buf[PER_BURST];
	uint64_t sum = 0;
	for (;;) {
		if (poll(&p, 1, -1) < 0)
			continue;
		ssize_t n = read(fds[0], buf, sizeof buf);
		if (n <= 0)
			break;
		for (long i = 0; i < n / (ssize_t)sizeof(struct msg); i++) {
			if (buf[i].op == 2)
				return sum;
			sum += dispatch(st, &buf[i]);
		}
	}
	return sum;
}

noinline void *client(void *arg)
{
	(void)arg;
	uint64_t r = 0x243F6A8885A308D3ull;
	struct msg burst[PER_BURST];
	struct timespec nap = {0, 1000000};
	for (int b = 0; b < BURSTS; b++) {
		for (int i = 0; i < PER_BURST; i++) {
			r ^= r << 13;
			r ^= r >> 7;
			r ^= r << 17;
			burst[i] = (struct msg){.op = r % 10 == 0, .key = (uint32_t)(r >> 20), .val = r};
		}
		if (write(fds[1], burst, sizeof burst) < 0)
			break;
		nanosleep(&nap, NULL); /* clients think between bursts */
	}
	struct msg quit = {.op = 2};
	if (write(fds[1], &quit, sizeof quit) < 0)
		return NULL;
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "buggy") == 0) {
		cfg_compact_pct = 0;
		cfg_max_clients = 256;
	}
	if (pipe(fds) < 0)
		return 1;
	struct store *st = calloc(1, sizeof *st);
	st->live = N_KEYS;
	pthread_t th;
	pthread_create(&th, NULL, client, NULL);
	uint64_t s = event_loop(st);
	pthread_join(th, NULL);
	printf("%llx %llu %llx\n", (unsigned long long)s, (unsigned long long)st->compactions, (unsigned long long)st->checksum);
	return 0;
}
