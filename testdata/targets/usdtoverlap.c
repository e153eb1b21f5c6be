/* USDT begin/end pairs interleaved in one function (sys/sdt.h):
 * usdtoverlap N MS runs N rounds of
 *   app:a_begin, MS ms, app:b_begin, MS ms, app:a_end, MS ms, app:b_end
 * printing "a IN OUT", "a-alone IN OUT" (a_begin to b_begin) and
 * "b IN OUT" as the program timed them, then N rounds of two requests of
 * one pair, told apart by their id (the probes' argument), the first
 * ending first:
 *   app:req_begin(2i), MS ms, app:req_begin(2i+1), MS ms,
 *   app:req_end(2i), MS ms, app:req_end(2i+1)
 * printing "first IN OUT" and "second IN OUT"; then "count NAME N".
 * The clock is read just before and just after each probe: IN is the
 * time from after the first probe to before the second (inside the
 * pair), OUT from before the first to after the second (around it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/sdt.h>
#include <time.h>

static volatile long sink;

static long now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void spin(long ns) {
	long t0 = now();
	while (now() - t0 < ns)
		sink++;
}

/* Probe k: the clock just before it and just after it. */
#define AT(k, probe)                                                           \
	do {                                                                   \
		pre[k] = now();                                                \
		probe;                                                         \
		post[k] = now();                                               \
	} while (0)

/* Prints the pair from probe x to probe y: inside, then around. */
static void pair(const char *name, const long *pre, const long *post, int x, int y) {
	printf("%s %ld %ld\n", name, pre[y] - post[x], post[y] - pre[x]);
}

__attribute__((noipa)) static void overlap(int i, long ns) {
	long pre[4], post[4];
	AT(0, DTRACE_PROBE1(app, a_begin, i));
	spin(ns);
	AT(1, DTRACE_PROBE1(app, b_begin, i));
	spin(ns);
	AT(2, DTRACE_PROBE1(app, a_end, i));
	spin(ns);
	AT(3, DTRACE_PROBE1(app, b_end, i));
	pair("a", pre, post, 0, 2);
	pair("a-alone", pre, post, 0, 1);
	pair("b", pre, post, 1, 3);
}

__attribute__((noipa)) static void byid(int i, long ns) {
	int x = 2 * i, y = 2 * i + 1;
	long pre[4], post[4];
	AT(0, DTRACE_PROBE1(app, req_begin, x));
	spin(ns);
	AT(1, DTRACE_PROBE1(app, req_begin, y));
	spin(ns);
	AT(2, DTRACE_PROBE1(app, req_end, x));
	spin(ns);
	AT(3, DTRACE_PROBE1(app, req_end, y));
	pair("first", pre, post, 0, 2);
	pair("second", pre, post, 1, 3);
}

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: usdtoverlap N MS\n");
		return 2;
	}
	int n = atoi(argv[1]);
	long ms = atol(argv[2]);
	for (int i = 0; i < n; i++)
		overlap(i, ms * 1000000);
	for (int i = 0; i < n; i++)
		byid(i, ms * 1000000);
	printf("count app:a %d\ncount app:b %d\ncount app:req %d\n", n, n, 2 * n);
	return 0;
}
