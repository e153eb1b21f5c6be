/* A generic container as C programs keep one: values behind void * in a
 * tagged union, a typedef'd struct, an enum state. consume(de) walks
 * ((list *)de->v.val)->len elements; main prints each entry's list as
 * "entry KEY len LEN cap CAP phase PHASE" before the work, so that sampled
 * expressions through casts can be compared with what the program used. The
 * global last points to the list being consumed. */
#include <stdio.h>
#include <stdlib.h>

typedef struct list {
	volatile long len; /* re-read each iteration */
	long cap;
	struct list *next;
} list;

enum phase { PHASE_IDLE, PHASE_PARSE = 3, PHASE_RUN = 7 };

struct dictentry {
	const char *key;
	union {
		void *val;
		long s64;
		double d;
	} v;
	enum phase phase;
};

volatile unsigned long sink;
volatile enum phase current = PHASE_IDLE;
void *volatile last; /* the list being consumed */

static const char *phase_name(enum phase p) {
	return p == PHASE_RUN ? "PHASE_RUN" : p == PHASE_PARSE ? "PHASE_PARSE" : "PHASE_IDLE";
}

__attribute__((noinline)) long consume(struct dictentry *volatile de) {
	long s = 0;
	current = de->phase;
	last = de->v.val;
	for (long i = 0; i < ((list *)de->v.val)->len; i++)
		s += i ^ sink;
	current = PHASE_IDLE;
	return s;
}

int main(int argc, char **argv) {
	int rounds = argc > 1 ? atoi(argv[1]) : 20;
	static const char *keys[3] = {"small", "medium", "large"};
	static const long lens[3] = {1000000, 2000000, 7000000};
	struct dictentry *des = calloc(3, sizeof *des);
	for (int k = 0; k < 3; k++) {
		list *l = malloc(sizeof *l);
		l->len = lens[k];
		l->cap = lens[k] + k + 1;
		l->next = NULL;
		des[k].key = keys[k];
		des[k].v.val = l;
		des[k].phase = k == 2 ? PHASE_RUN : PHASE_PARSE;
		printf("entry %s len %ld cap %ld phase %s\n", keys[k], l->len, l->cap, phase_name(des[k].phase));
	}
	fflush(stdout);
	for (int r = 0; r < rounds; r++)
		for (int k = 0; k < 3; k++)
			sink += consume(&des[k]);
	return 0;
}
