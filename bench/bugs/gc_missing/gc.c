/* libgc: three generations of tracked objects. A new object goes into
 * generation 0; when a generation's count passes its threshold it is
 * collected together with the younger ones, and its survivors move to the
 * next. A collection finds the objects that only the collected objects
 * refer to (references counted minus the references from inside) and
 * clears the cycles among them.
 *
 * The bug (missing constraint): collect_generations runs a full
 * collection whenever generation 2's count (the number of generation-1
 * collections since the last full one) passes its threshold, however few
 * objects have become long-lived since: a program that builds a large
 * structure pays a traversal of everything it holds every
 * threshold0 * threshold1 * threshold2 allocations, quadratic in the
 * structure's size. The fix (CPython issue 4074): skip the full collection
 * while the objects that survived generation 1 since the last one are
 * fewer than a quarter of the long-lived objects.
 */
#include <stddef.h>
#include "gc.h"

#define NGEN 3
#define TENTATIVE (-1)

struct gen {
	struct gc_head head;
	long threshold, count;
};

static struct gen gens[NGEN];
static long long_lived_total, long_lived_pending;
static long ncollections[NGEN], ncollected;
static int collecting;
static uint64_t epoch;

static void list_init(struct gc_head *h) { h->next = h->prev = h; }

static void list_append(struct gc_head *n, struct gc_head *list)
{
	n->prev = list->prev;
	n->next = list;
	list->prev->next = n;
	list->prev = n;
}

static void list_remove(struct gc_head *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = n->prev = NULL;
}

static void list_merge(struct gc_head *from, struct gc_head *to)
{
	if (from->next != from) {
		to->prev->next = from->next;
		from->next->prev = to->prev;
		to->prev = from->prev;
		from->prev->next = to;
	}
	list_init(from);
}

static long list_size(const struct gc_head *list)
{
	long n = 0;
	for (const struct gc_head *o = list->next; o != list; o = o->next)
		n++;
	return n;
}

void gc_init(long threshold0, long threshold1, long threshold2)
{
	long th[NGEN] = {threshold0, threshold1, threshold2};
	for (int i = 0; i < NGEN; i++) {
		list_init(&gens[i].head);
		gens[i].threshold = th[i];
		gens[i].count = 0;
	}
}

static void visit_decref(struct gc_head *child, void *arg)
{
	(void)arg;
	if (child->epoch == epoch)
		child->gc_refs--;
}

static void visit_reachable(struct gc_head *child, void *arg)
{
	struct gc_head *young = arg;
	if (child->epoch != epoch)
		return;
	if (child->gc_refs == 0) {
		child->gc_refs = 1;
	} else if (child->gc_refs == TENTATIVE) {
		list_remove(child);
		list_append(child, young);
		child->gc_refs = 1;
	}
}

__attribute__((noinline)) static void update_refs(struct gc_head *young)
{
	for (struct gc_head *o = young->next; o != young; o = o->next) {
		o->gc_refs = o->refcnt;
		o->epoch = epoch;
	}
}

__attribute__((noinline)) static void subtract_refs(struct gc_head *young)
{
	for (struct gc_head *o = young->next; o != young; o = o->next)
		o->type->traverse(o, visit_decref, NULL);
}

__attribute__((noinline)) static void move_unreachable(struct gc_head *young, struct gc_head *unreachable)
{
	struct gc_head *o = young->next;
	while (o != young) {
		struct gc_head *next;
		if (o->gc_refs > 0) {
			o->type->traverse(o, visit_reachable, young);
			next = o->next;
		} else {
			next = o->next;
			list_remove(o);
			list_append(o, unreachable);
			o->gc_refs = TENTATIVE;
		}
		o = next;
	}
}

__attribute__((noinline)) static void delete_garbage(struct gc_head *unreachable, struct gc_head *old)
{
	while (unreachable->next != unreachable) {
		struct gc_head *o = unreachable->next;
		o->type->clear(o); /* usually frees o, which untracks it */
		if (unreachable->next == o) {
			list_remove(o);
			list_append(o, old);
		} else {
			ncollected++;
		}
	}
}

__attribute__((noinline)) static void collect(int gen)
{
	struct gc_head unreachable;
	list_init(&unreachable);
	collecting = 1;
	epoch++;
	if (gen + 1 < NGEN)
		gens[gen + 1].count++;
	for (int i = 0; i <= gen; i++)
		gens[i].count = 0;
	for (int i = 0; i < gen; i++)
		list_merge(&gens[i].head, &gens[gen].head);
	struct gc_head *young = &gens[gen].head;
	struct gc_head *old = gen + 1 < NGEN ? &gens[gen + 1].head : young;
	update_refs(young);
	subtract_refs(young);
	move_unreachable(young, &unreachable);
	long survivors = list_size(young);
	if (gen == NGEN - 2)
		long_lived_pending += survivors;
	if (young != old)
		list_merge(young, old);
	if (gen == NGEN - 1) {
		long_lived_total = survivors;
		long_lived_pending = 0;
	}
	delete_garbage(&unreachable, old);
	ncollections[gen]++;
	collecting = 0;
}

/* collect_generations is the root cause: it has no check of
 * long_lived_pending against long_lived_total before a full collection. */
__attribute__((noinline)) void collect_generations(void)
{
	if (collecting)
		return;
	for (int i = NGEN - 1; i >= 0; i--) {
		if (gens[i].count > gens[i].threshold) {
			collect(i);
			break;
		}
	}
}

void gc_track(struct gc_head *o, const struct gc_type *t)
{
	o->type = t;
	o->gc_refs = 0;
	o->epoch = 0;
	list_append(o, &gens[0].head);
	gens[0].count++;
	collect_generations();
}

void gc_untrack(struct gc_head *o)
{
	list_remove(o);
	if (gens[0].count > 0)
		gens[0].count--;
}

long gc_collections(int gen) { return gen >= 0 && gen < NGEN ? ncollections[gen] : 0; }
long gc_collected(void) { return ncollected; }
