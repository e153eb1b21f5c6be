/* A content-hash build tool in watch mode: every round (run_builds) it asks
 * whether each top-level target is up to date (build_all): check_target
 * checks a target's dependencies, recursively, then the target's own
 * content (digest_file, a hash of its bytes, compared with the digest of
 * the last build); a target is stale when it or anything below it changed.
 *
 * The bug (missing constraint): check_target has no "already checked in
 * this round" test. The answer for a target is stored (t->stale,
 * t->round) but never consulted, so a dependency shared by several targets
 * is checked again, with its whole subtree, once per path that reaches it.
 * In the normal project the dependencies form a tree (every file belongs
 * to one target) and each file is hashed once per round either way. The
 * buggy project is layered: each module depends on two modules of the
 * layer below, which share their dependencies, so the number of paths, and
 * of hashes, doubles with each layer. The fix: return t->stale at once
 * when t->round == round.
 *
 *   prog normal|buggy
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define noinline __attribute__((noinline))

struct target {
	int ndeps;
	struct target **deps;
	unsigned char *content;
	size_t size;
	uint32_t recorded; /* digest at the last build */
	int stale;
	long round;        /* round of the last check */
};

long cfg_rounds = 120;
static long round_no;
static unsigned long hashed;

noinline uint32_t digest_file(const struct target *t)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < t->size; i++)
		h = (h ^ t->content[i]) * 16777619u;
	return h;
}

/* check_target is the root cause: no test of t->round == round_no. */
noinline int check_target(struct target *t)
{
	int stale = 0;
	for (int i = 0; i < t->ndeps; i++)
		stale |= check_target(t->deps[i]);
	hashed++;
	if (digest_file(t) != t->recorded)
		stale = 1;
	t->stale = stale;
	t->round = round_no;
	return stale;
}

noinline long build_all(struct target **tops, long n)
{
	long stale = 0;
	for (long i = 0; i < n; i++)
		stale += check_target(tops[i]);
	return stale;
}

noinline long run_builds(struct target **tops, long n)
{
	long stale = 0;
	for (round_no = 1; round_no <= cfg_rounds; round_no++)
		stale += build_all(tops, n);
	return stale;
}

static uint64_t rng = 88172645463325252ULL;
static uint64_t next(void)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return rng;
}

static struct target *new_target(size_t size, int ndeps)
{
	struct target *t = calloc(1, sizeof *t);
	if (!t)
		abort();
	t->size = size;
	t->content = malloc(size);
	t->ndeps = ndeps;
	t->deps = calloc((size_t)(ndeps ? ndeps : 1), sizeof *t->deps);
	if (!t->content || !t->deps)
		abort();
	for (size_t i = 0; i < size; i++)
		t->content[i] = (unsigned char)next();
	t->recorded = digest_file(t);
	if (next() % 97 == 0) /* edited since the last build */
		t->recorded ^= 1;
	return t;
}

int main(int argc, char **argv)
{
	int buggy = argc > 1 && strcmp(argv[1], "buggy") == 0;
	struct target **tops;
	long ntops;
	if (!buggy) {
		/* A tree: 200 targets of 8 modules of 8 source files each. */
		ntops = 200;
		tops = calloc((size_t)ntops, sizeof *tops);
		for (long i = 0; i < ntops; i++) {
			tops[i] = new_target(1024, 8);
			for (int j = 0; j < 8; j++) {
				struct target *m = new_target(1024, 8);
				tops[i]->deps[j] = m;
				for (int k = 0; k < 8; k++)
					m->deps[k] = new_target(2048, 0);
			}
		}
	} else {
		/* Layers of 6 modules; each depends on two of the layer below. */
		enum { LAYERS = 13, WIDTH = 6 };
		static struct target *layer[LAYERS][WIDTH];
		for (int l = LAYERS - 1; l >= 0; l--)
			for (int w = 0; w < WIDTH; w++) {
				int leaf = l == LAYERS - 1;
				layer[l][w] = new_target(leaf ? 2048 : 1024, leaf ? 0 : 2);
				if (!leaf) {
					layer[l][w]->deps[0] = layer[l + 1][w];
					layer[l][w]->deps[1] = layer[l + 1][(w + 1) % WIDTH];
				}
			}
		ntops = WIDTH;
		tops = calloc((size_t)ntops, sizeof *tops);
		for (long i = 0; i < ntops; i++)
			tops[i] = layer[0][i];
	}
	long stale = run_builds(tops, ntops);
	printf("%ld stale answers, %lu files hashed\n", stale, hashed);
	return 0;
}
