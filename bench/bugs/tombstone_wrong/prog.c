/* A connection tracker in the manner of a firewall's flow table: a trace
 * of packets (gen_trace) is processed one packet at a time
 * (process_packet): the packet's header is checked (header_checksum), its
 * flow is looked up in an open-addressing hash table with linear probing
 * (flow_lookup), created on its first packet (flow_insert) and removed on
 * its last (a FIN, flow_remove, which leaves a tombstone so that probe
 * sequences through the slot stay intact). Before an insert,
 * table_check_size decides whether the table must be rebuilt: a rebuild
 * doubles it if the live flows need the room, and in any case drops the
 * tombstones.
 *
 * The bug (wrong constraint): table_check_size compares only the live
 * flows with three quarters of the table, not the live flows plus the
 * tombstones. With long-lived flows the two are close; with short-lived
 * ones the live count stays low while tombstones fill every free slot, so
 * the table is never rebuilt and each lookup of a new flow probes the
 * whole table before it misses.
 *
 *   prog normal|buggy   (long-lived flows, or short-lived ones)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define noinline __attribute__((noinline))
#define PACKETS 3000000
#define ACTIVE 3000 /* flows open at any time */

enum { EMPTY = 0, LIVE = 1, TOMB = 2 };

struct flow {
	uint64_t key;
	uint32_t state;
	uint32_t packets;
	uint64_t bytes;
};

struct table {
	struct flow *slot;
	size_t cap, live, tombs, rebuilds;
};

struct packet {
	uint64_t flow;
	uint16_t len;
	uint8_t fin;
	uint8_t hdr[21];
};

static inline size_t hash64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return (size_t)k;
}

noinline void table_init(struct table *t, size_t cap)
{
	t->slot = calloc(cap, sizeof *t->slot);
	if (!t->slot)
		abort();
	t->cap = cap;
	t->live = t->tombs = 0;
}

/* flow_lookup: the slot holding key, or NULL; a miss probes until an empty
 * slot, or the whole table when it has none. */
noinline struct flow *flow_lookup(struct table *t, uint64_t key)
{
	size_t mask = t->cap - 1, i = hash64(key) & mask;
	for (size_t n = 0; n < t->cap; n++, i = (i + 1) & mask) {
		struct flow *f = &t->slot[i];
		if (f->state == EMPTY)
			return NULL;
		if (f->state == LIVE && f->key == key)
			return f;
	}
	return NULL;
}

noinline void table_rebuild(struct table *t, size_t cap)
{
	struct flow *old = t->slot;
	size_t ocap = t->cap;
	table_init(t, cap);
	for (size_t i = 0; i < ocap; i++) {
		if (old[i].state != LIVE)
			continue;
		size_t j = hash64(old[i].key) & (cap - 1);
		while (t->slot[j].state != EMPTY)
			j = (j + 1) & (cap - 1);
		t->slot[j] = old[i];
		t->live++;
	}
	t->rebuilds++;
	free(old);
}

/* table_check_size is the root cause: it counts the live flows only (fix:
 * t->live + t->tombs, and rebuild at the same size when the live flows
 * would fit). */
noinline void table_check_size(struct table *t)
{
	if ((t->live + 1) * 4 > t->cap * 3) {
		size_t cap = t->cap;
		while ((t->live + 1) * 2 > cap)
			cap *= 2;
		table_rebuild(t, cap == t->cap ? cap * 2 : cap);
	}
}

/* flow_insert: a new flow, in the first tombstone or empty slot of its
 * probe sequence (the caller has looked it up and missed). */
noinline struct flow *flow_insert(struct table *t, uint64_t key)
{
	table_check_size(t);
	size_t mask = t->cap - 1, i = hash64(key) & mask;
	for (size_t n = 0; n < t->cap; n++, i = (i + 1) & mask) {
		struct flow *f = &t->slot[i];
		if (f->state != LIVE) {
			if (f->state == TOMB)
				t->tombs--;
			f->key = key;
			f->state = LIVE;
			f->packets = 0;
			f->bytes = 0;
			t->live++;
			return f;
		}
	}
	table_rebuild(t, t->cap * 2);
	return flow_insert(t, key);
}

noinline void flow_remove(struct table *t, struct flow *f)
{
	f->state = TOMB;
	t->live--;
	t->tombs++;
}

noinline unsigned header_checksum(const struct packet *p)
{
	unsigned s = p->len;
	for (int i = 0; i < (int)sizeof p->hdr; i++)
		s = (s << 5) + s + p->hdr[i];
	return s;
}

static uint64_t closed, opened, bytes;

noinline void process_packet(struct table *t, const struct packet *p)
{
	if (header_checksum(p) == 0xdeadbeefu)
		return; /* a checksum that never matches in this trace: dropped */
	struct flow *f = flow_lookup(t, p->flow);
	if (!f) {
		f = flow_insert(t, p->flow);
		opened++;
	}
	f->packets++;
	f->bytes += p->len;
	bytes += p->len;
	if (p->fin) {
		flow_remove(t, f);
		closed++;
	}
}

/* gen_trace: PACKETS packets over ACTIVE open flows; each packet belongs to
 * a random open flow and ends it (a FIN) with probability 1/life, a new
 * flow taking its place. */
noinline struct packet *gen_trace(unsigned life)
{
	struct packet *tr = malloc(PACKETS * sizeof *tr);
	uint64_t active[ACTIVE];
	uint64_t x = 0x2545f4914f6cdd1dULL, next = 1;
	if (!tr)
		abort();
	for (int i = 0; i < ACTIVE; i++)
		active[i] = next++ * 0x9e3779b97f4a7c15ULL;
	for (long i = 0; i < PACKETS; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		int a = (int)(x % ACTIVE);
		tr[i].flow = active[a];
		tr[i].len = (uint16_t)(64 + (x >> 20) % 1400);
		for (int b = 0; b < (int)sizeof tr[i].hdr; b++)
			tr[i].hdr[b] = (uint8_t)(x >> (b % 8 * 8));
		tr[i].fin = (x >> 40) % life == 0;
		if (tr[i].fin)
			active[a] = next++ * 0x9e3779b97f4a7c15ULL;
	}
	return tr;
}

int main(int argc, char **argv)
{
	if (argc != 2 || (strcmp(argv[1], "normal") && strcmp(argv[1], "buggy"))) {
		fprintf(stderr, "usage: prog normal|buggy\n");
		return 2;
	}
	/* normal: flows of 2,000 packets on average; buggy: 8 */
	unsigned life = strcmp(argv[1], "buggy") == 0 ? 8 : 2000;
	struct packet *tr = gen_trace(life);
	struct table t = {0};
	table_init(&t, 64);
	for (long i = 0; i < PACKETS; i++)
		process_packet(&t, &tr[i]);
	printf("%lu flows opened, %lu closed, %lu bytes; table %zu slots, %zu live, %zu tombstones, %zu rebuilds\n",
	       (unsigned long)opened, (unsigned long)closed, (unsigned long)bytes, t.cap, t.live, t.tombs, t.rebuilds);
	free(tr);
	free(t.slot);
	return 0;
}
