/* Jobs of different sizes processed through a pointer: process(j) spins
 * j->size times. The jobs live in main's frame, or on the heap with the
 * argument "heap"; a global config scales them. Expressions such as
 * j->size, cfg.limits[2] and *j read state. */
#include <stdlib.h>
#include <string.h>

struct job {
	volatile long size; /* re-read each iteration: j stays live */
	int prio;
	struct job *next;
};

struct config {
	int limits[4];
	long scale;
} cfg = {{1, 2, 30, 4}, 100000};

volatile unsigned long sink;

__attribute__((noinline)) long process(struct job *j) {
	long s = 0;
	for (long i = 0; i < j->size; i++)
		s += i ^ sink;
	return s;
}

int main(int argc, char **argv) {
	int rounds = argc > 1 ? atoi(argv[1]) : 20;
	struct job jobs[3] = {{10000, 1, 0}, {20000, 2, 0}, {70000, 3, 0}};
	struct job *first = &jobs[0];
	jobs[0].next = &jobs[1];
	jobs[1].next = &jobs[2];
	if (argc > 2 && strcmp(argv[2], "heap") == 0) {
		struct job *h = malloc(sizeof jobs);
		memcpy(h, jobs, sizeof jobs);
		h[0].next = &h[1];
		h[1].next = &h[2];
		first = h;
	}
	for (int r = 0; r < rounds; r++)
		for (struct job *j = first; j; j = j->next) {
			j->size = (j->prio == 3 ? 7 : j->prio) * cfg.scale * 10;
			sink += process(j);
		}
	return 0;
}
