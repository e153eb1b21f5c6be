/* A key-value store serving a stream of commands (SET, GET, DEL) from a
 * request buffer: serve() reads each command and dispatch() calls its
 * handler. DEL leaves a tombstone; maybe_compact() decides when the slot
 * array is rebuilt without them (compact(), a copy of every live entry).
 *
 * The bug (wrong constraint): maybe_compact compares the tombstones with a
 * thousandth of the live entries where the fix compares them with half, so
 * a workload with many deletes (the buggy input, 30% DEL) rewrites the
 * whole log after every hundred or so deletes; with few deletes (the normal
 * input, 0.5% DEL) it rarely fires.
 *
 *   prog normal|buggy
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define noinline __attribute__((noinline))
#define KEYS 200000
#define LOGCAP 1000000
#define OPS 4000000

/* The log: SET appends an entry (or overwrites a live key's) and points the key's index at it; DEL
 * marks the key's entry dead (a tombstone); compaction rewrites the log
 * with only the live entries and repoints the index. */
struct entry {
	uint64_t key;
	int dead;
	char val[52];
};

struct store {
	struct entry *log, *tmp;
	int *index; /* key -> log position + 1, 0: absent */
	int n, live, dead;
	long compactions;
};

enum { SET, GET, DEL };
struct cmd {
	int op;
	uint64_t key;
};

static struct cmd *reqs;
static struct store st;

static uint64_t rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

noinline void compact(struct store *s)
{
	int k = 0;
	for (int i = 0; i < s->n; i++)
		if (!s->log[i].dead) {
			s->tmp[k] = s->log[i];
			s->index[s->log[i].key] = k + 1;
			k++;
		}
	memcpy(s->log, s->tmp, (size_t)k * sizeof *s->log);
	s->n = k;
	s->dead = 0;
	s->compactions++;
}

/* maybe_compact is the root cause: the threshold should be s->live / 2. */
noinline void maybe_compact(struct store *s)
{
	if (s->dead > s->live / 1000 || s->n == LOGCAP)
		compact(s);
}

noinline void cmd_del(struct store *s, uint64_t key)
{
	int at = s->index[key];
	if (at && !s->log[at - 1].dead) {
		s->log[at - 1].dead = 1;
		s->index[key] = 0;
		s->live--;
		s->dead++;
		maybe_compact(s);
	}
}

noinline void cmd_set(struct store *s, uint64_t key)
{
	int at = s->index[key];
	struct entry *e;
	if (at) {
		e = &s->log[at - 1]; /* a live key: overwritten in place */
	} else {
		if (s->n == LOGCAP)
			compact(s);
		e = &s->log[s->n++];
		e->key = key;
		e->dead = 0;
		s->index[key] = s->n;
		s->live++;
	}
	snprintf(e->val, sizeof e->val, "v%llu", (unsigned long long)key);
}

noinline int cmd_get(struct store *s, uint64_t key)
{
	int at = s->index[key];
	if (!at)
		return -1;
	int h = 0;
	for (int r = 0; r < 6; r++)
		for (const char *c = s->log[at - 1].val; *c; c++)
			h = h * 31 + *c;
	return h;
}

noinline long dispatch(const struct cmd *c)
{
	switch (c->op) {
	case SET:
		cmd_set(&st, c->key);
		return 0;
	case GET:
		return cmd_get(&st, c->key);
	default:
		cmd_del(&st, c->key);
		return 0;
	}
}

noinline long serve(int nreq)
{
	long sum = 0;
	for (int i = 0; i < nreq; i++)
		sum += dispatch(&reqs[i]);
	return sum;
}

noinline void make_requests(int del_permille)
{
	uint64_t s = 2463534242ull;
	for (int i = 0; i < OPS; i++) {
		int r = (int)(rng(&s) % 1000);
		reqs[i].key = rng(&s) % KEYS;
		reqs[i].op = r < del_permille ? DEL : r < 500 ? SET : GET;
	}
}

int main(int argc, char **argv)
{
	if (argc != 2 || (strcmp(argv[1], "normal") && strcmp(argv[1], "buggy"))) {
		fprintf(stderr, "usage: prog normal|buggy\n");
		return 2;
	}
	reqs = calloc(OPS, sizeof *reqs);
	st.log = calloc(LOGCAP, sizeof *st.log);
	st.tmp = calloc(LOGCAP, sizeof *st.tmp);
	st.index = calloc(KEYS, sizeof *st.index);
	make_requests(strcmp(argv[1], "buggy") ? 5 : 300);
	long sum = serve(OPS);
	printf("%ld %d %ld\n", sum, st.live, st.compactions);
	return 0;
}
