/* libgc: a generational collector of reference cycles for objects whose
 * owner counts references (the scheme of CPython's gc module). */
#include <stdint.h>
struct gc_head;
typedef void (*gc_visit)(struct gc_head *child, void *arg);
struct gc_type {
	const char *name;
	/* traverse calls visit on every tracked object the object refers to */
	void (*traverse)(struct gc_head *self, gc_visit visit, void *arg);
	/* clear drops the object's references (to break a cycle) */
	void (*clear)(struct gc_head *self);
};
struct gc_head {
	struct gc_head *next, *prev;
	const struct gc_type *type;
	long refcnt;  /* kept by the program */
	long gc_refs; /* the collector's */
	uint64_t epoch;
};
void gc_init(long threshold0, long threshold1, long threshold2);
void gc_track(struct gc_head *o, const struct gc_type *t);
void gc_untrack(struct gc_head *o);
long gc_collections(int gen);
long gc_collected(void);
