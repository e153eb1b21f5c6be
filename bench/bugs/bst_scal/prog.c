/* An indexer: it loads records, inserts each record's key into an
 * unbalanced binary search tree (bst_insert, recursive), then answers range
 * counts over the index while a background thread checksums the records.
 *
 * The bug (scalability): the tree is never rebalanced. Keys that arrive in
 * random order give a tree of logarithmic depth; keys that arrive sorted
 * (timestamps from an append-only log: the buggy input) give a list, and
 * every insert walks the whole of it. The fix is a balanced tree. Each
 * round reloads the records (a new log segment) and rebuilds the index.
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
#define RECORDS 4000
#define ROUNDS 40

struct node {
	uint64_t key;
	struct node *left, *right;
};

struct record {
	uint64_t ts;
	char body[512];
};

static struct node pool[RECORDS];
static int pool_used;
static struct record recs[RECORDS];
static atomic_int stop;
int g_sorted_input = 0;

/* bst_insert is the root cause: an unbalanced insert, recursive. */
noinline struct node *bst_insert(struct node *n, uint64_t key)
{
	if (!n) {
		struct node *m = &pool[pool_used++];
		m->key = key;
		m->left = m->right = NULL;
		return m;
	}
	if (key < n->key)
		n->left = bst_insert(n->left, key);
	else
		n->right = bst_insert(n->right, key);
	return n;
}

noinline long bst_count(const struct node *n, uint64_t lo, uint64_t hi)
{
	long c = 0;
	while (n) {
		if (n->key < lo) {
			n = n->right;
		} else if (n->key >= hi) {
			n = n->left;
		} else {
			c += 1 + bst_count(n->left, lo, hi);
			n = n->right;
		}
	}
	return c;
}

static uint64_t rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

noinline void load_records(uint64_t seed)
{
	for (int i = 0; i < RECORDS; i++) {
		recs[i].ts = g_sorted_input ? 1700000000000ull + (uint64_t)i * 1000 : rng(&seed) % 1000000000000ull;
		for (int k = 0; k < (int)sizeof recs[i].body; k++)
			recs[i].body[k] = (char)(rng(&seed) & 0x7f);
	}
}

noinline struct node *index_records(void)
{
	struct node *root = NULL;
	pool_used = 0;
	for (int i = 0; i < RECORDS; i++)
		root = bst_insert(root, recs[i].ts);
	return root;
}

noinline long answer_queries(struct node *root, uint64_t seed)
{
	long total = 0;
	for (int q = 0; q < 50; q++) {
		uint64_t lo = recs[rng(&seed) % RECORDS].ts;
		total += bst_count(root, lo, lo + 50000);
	}
	return total;
}

noinline uint64_t checksum(const struct record *r)
{
	uint64_t h = 1469598103934665603ull;
	for (int k = 0; k < (int)sizeof r->body; k++)
		h = (h ^ (uint8_t)r->body[k]) * 1099511628211ull;
	return h;
}

static void *scrubber(void *arg)
{
	(void)arg;
	uint64_t h = 0;
	while (!atomic_load(&stop))
		for (int i = 0; i < RECORDS && !atomic_load(&stop); i++)
			h ^= checksum(&recs[i]);
	return (void *)(uintptr_t)h;
}

int main(int argc, char **argv)
{
	if (argc != 2 || (strcmp(argv[1], "normal") && strcmp(argv[1], "buggy"))) {
		fprintf(stderr, "usage: prog normal|buggy\n");
		return 2;
	}
	g_sorted_input = !strcmp(argv[1], "buggy");
	pthread_t t;
	pthread_create(&t, NULL, scrubber, NULL);
	long total = 0;
	for (int r = 0; r < ROUNDS; r++) {
		load_records(88172645463325252ull + (uint64_t)r);
		struct node *root = index_records();
		total += answer_queries(root, 2463534242ull + (uint64_t)r);
	}
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	printf("%ld\n", total);
	return 0;
}
