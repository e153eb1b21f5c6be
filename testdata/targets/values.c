/* Variables for internal/dwarfx: globals of many types, a function with
 * parameters used in a loop (n and a pointer-to-struct j with j->size),
 * locals in nested lexical blocks (one shadowing another), a function that
 * GCC specialises into a clone at -O2 (scaled.constprop.0: its factor is 3
 * at every call site), an always-inlined function, and small structs passed
 * by value in registers (a DWARF piece-composed location at -O2).
 *
 * Deterministic and single-threaded, so that a debugger stopping it at the
 * same PCs sees the same values on every run. Prints a checksum. */
#include <stdio.h>
#include <stdlib.h>

struct limits {
	int lo, hi;
};

struct point {
	int x, y;
};

struct config {
	char name[12];
	int limits[4];
	struct limits range;
	double scale;
	unsigned flags : 3;
	unsigned mode : 5;
	signed delta : 6;
	struct point pts[2];
};

struct job {
	int size;
	int id;
	long weight;
	struct job *next;
};

struct pair {
	long a, b;
};

struct mixed {
	double d;
	long l;
};

union word {
	unsigned int u;
	float f;
	unsigned char bytes[4];
};

enum color { RED, GREEN = 5, BLUE };

int g_int = 42;
long g_long = -1234567890123L;
double g_double = 2.5;
float g_float = 1.25f;
unsigned char g_uchar = 200;
char g_char = 'c';
_Bool g_bool = 1;
short g_matrix[2][3] = {{1, 2, 3}, {4, 5, -6}};
enum color g_color = BLUE;
union word g_word = {.u = 0x3f800000};
struct config cfg = {"culprit", {10, 20, 30, 40}, {1, 99}, 0.75, 5, 17, -3, {{1, 2}, {3, 4}}};
struct job jobs[3] = {
    {7, 1, 100, &jobs[1]},
    {11, 2, 200, &jobs[2]},
    {13, 3, 300, 0},
};
struct job *g_job = &jobs[1];
static int s_file_counter = 5;
int (*g_fn)(int);
volatile long sink;

/* A function with parameters used in a loop. */
__attribute__((noinline)) long process(int n, struct job *j) {
	static int calls;
	long acc = 0;
	calls++;
	for (int i = 0; i < n; i++) {
		acc += (long)j->size * i + sink;
		if (acc > 50) {
			long over = acc - 50;
			acc = over / 2 + j->id;
		}
	}
	s_file_counter += calls;
	return acc;
}

/* Nested lexical blocks; the inner x shadows the outer one. */
__attribute__((noinline)) int blocks(int a) {
	int x = a + 1;
	sink = x;
	{
		int x = a * 2;
		int y = x + 3;
		sink = x + y;
		{
			int z = x * y;
			double half = z / 2.0;
			sink = z + (long)half;
		}
		sink += y;
	}
	return x;
}

/* Cloned at -O2 as scaled.constprop.0 (factor is always 3). */
__attribute__((noinline)) static long scaled(long v, int factor) {
	long r = 0;
	for (int k = 0; k < 4; k++)
		r += (v + k) * factor + sink;
	return r;
}

/* Inlined into its callers at every optimisation level. */
static inline __attribute__((always_inline)) int clamp(int v, int lo, int hi) {
	int r = v;
	if (r < lo)
		r = lo;
	if (r > hi)
		r = hi;
	return r;
}

/* Inlined with a loop that survives -O2, so its variables have locations
 * inside the caller. */
static inline __attribute__((always_inline)) long weigh(const struct job *wj, int rounds) {
	long w = 0;
	for (int r = 0; r < rounds; r++)
		w += (wj->weight * (r + 1)) ^ sink;
	return w;
}

/* Small structs passed by value in registers. */
__attribute__((noinline)) long pair_sum(struct pair p, struct point q) {
	long s = p.a * 3 + p.b + sink;
	s += q.x - q.y;
	return s;
}

__attribute__((noinline)) double mixed_sum(struct mixed m, int k) {
	double s = m.d * k;
	s += (double)m.l + sink;
	return s;
}

__attribute__((noinline)) int locals(int seed) {
	struct point pts[3];
	struct limits lim = {seed, seed + 10};
	char tag[8] = "abc";
	enum color c = GREEN;
	union word w;
	float f = seed / 4.0f;
	unsigned short us = seed * 1000;
	_Bool even = (seed & 1) == 0;
	for (int i = 0; i < 3; i++) {
		pts[i].x = seed + i;
		pts[i].y = clamp(seed * i, lim.lo, lim.hi);
	}
	w.f = f;
	sink = pts[2].y + tag[1] + c + w.u + us + even;
	return pts[0].x + pts[1].y + lim.hi;
}

static int twice(int v) { return 2 * v; }

int main(int argc, char **argv) {
	long total = 0;
	g_fn = twice;
	(void)argv;
	for (int round = 0; round < 2; round++) {
		total += process(4 + round, &jobs[round]);
		total += process(3, g_job);
		total += blocks(round + 3);
		total += scaled(total & 7, 3);
		total += scaled(round, 3);
		total += clamp(argc * 7 + round, 2, 6);
		struct pair p = {round + 1, 40};
		struct point q = {5, round};
		total += pair_sum(p, q);
		struct mixed m = {1.5 + round, 7};
		total += (long)mixed_sum(m, round + 2);
		total += locals(round + 11);
		total += g_fn(round);
		total += weigh(&jobs[round], 3 + round);
	}
	printf("total %ld counter %d\n", total, s_file_counter);
	return 0;
}
