/* A log ingester: worker threads each parse a share of the log lines
 * ("<user> <bytes> <path>") and account the bytes to the line's user; each
 * worker interns user names in its own table (intern_name) and sums bytes
 * per interned id; main merges the per-worker totals.
 *
 * The bug (scalability): intern_name searches the interned names one by
 * one. A log with a few dozen distinct users (the normal input) keeps the
 * walk short; a log with thousands (the buggy input: a crawler with a fresh
 * user name per request) walks thousands of names for every line. The fix
 * is a hash table.
 *
 *   prog normal|buggy
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define noinline __attribute__((noinline))
#define WORKERS 2
#define LINES 60000
#define MAXNAMES 8192

struct worker {
	int id;
	int nnames;
	char names[MAXNAMES][24];
	uint64_t bytes[MAXNAMES];
	uint64_t paths;
};

static char lines[LINES][96];
static struct worker workers[WORKERS];

static uint64_t rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* intern_name is the root cause: a linear search of the names seen. */
noinline int intern_name(struct worker *w, const char *name)
{
	for (int i = 0; i < w->nnames; i++)
		if (strcmp(w->names[i], name) == 0)
			return i;
	if (w->nnames == MAXNAMES)
		return MAXNAMES - 1;
	strncpy(w->names[w->nnames], name, sizeof w->names[0] - 1);
	return w->nnames++;
}

noinline void account_user(struct worker *w, const char *user, uint64_t bytes)
{
	w->bytes[intern_name(w, user)] += bytes;
}

noinline uint64_t hash_path(const char *p)
{
	uint64_t h = 1469598103934665603ull;
	for (int r = 0; r < 24; r++)
		for (const char *c = p; *c; c++)
			h = (h ^ (uint8_t)*c) * 1099511628211ull;
	return h;
}

noinline void parse_line(struct worker *w, const char *line)
{
	char user[24];
	const char *sp = strchr(line, ' ');
	size_t n = (size_t)(sp - line);
	if (n >= sizeof user)
		n = sizeof user - 1;
	memcpy(user, line, n);
	user[n] = 0;
	char *end;
	uint64_t bytes = strtoull(sp + 1, &end, 10);
	w->paths ^= hash_path(end + 1);
	account_user(w, user, bytes);
}

noinline void ingest_batch(struct worker *w, int from, int to)
{
	for (int i = from; i < to; i++)
		parse_line(w, lines[i]);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	int per = LINES / WORKERS;
	for (int pass = 0; pass < 20; pass++)
		ingest_batch(w, w->id * per, (w->id + 1) * per);
	return NULL;
}

noinline void make_log(int users)
{
	uint64_t s = 88172645463325252ull;
	for (int i = 0; i < LINES; i++) {
		int u = (int)(rng(&s) % (uint64_t)users);
		snprintf(lines[i], sizeof lines[i], "user%05d %llu /static/img/%llx/%llx.png", u,
			 (unsigned long long)(rng(&s) % 100000), (unsigned long long)(rng(&s) & 0xffffff),
			 (unsigned long long)(rng(&s) & 0xffffffff));
	}
}

int main(int argc, char **argv)
{
	if (argc != 2 || (strcmp(argv[1], "normal") && strcmp(argv[1], "buggy"))) {
		fprintf(stderr, "usage: prog normal|buggy\n");
		return 2;
	}
	make_log(strcmp(argv[1], "buggy") ? 40 : 1500);
	pthread_t t[WORKERS];
	for (int i = 0; i < WORKERS; i++) {
		workers[i].id = i;
		pthread_create(&t[i], NULL, worker_main, &workers[i]);
	}
	uint64_t total = 0, paths = 0;
	int names = 0;
	for (int i = 0; i < WORKERS; i++) {
		pthread_join(t[i], NULL);
		for (int k = 0; k < workers[i].nnames; k++)
			total += workers[i].bytes[k];
		names += workers[i].nnames;
		paths ^= workers[i].paths;
	}
	printf("%d %llu %llx\n", names, (unsigned long long)total, (unsigned long long)paths);
	return 0;
}
