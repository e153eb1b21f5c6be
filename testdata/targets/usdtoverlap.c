/* USDT begin/end pairs interleaved in one function (sys/sdt.h):
 * usdtoverlap N MS runs N rounds of
 *   app:a_begin, MS ms, app:b_begin, MS ms, app:a_end, MS ms, app:b_end
 * printing "a NS", "a-alone NS" (a_begin to b_begin) and "b NS" as the
 * program timed them, then N rounds of two requests of one pair, told
 * apart by their id (the probes' argument), the first ending first:
 *   app:req_begin(2i), MS ms, app:req_begin(2i+1), MS ms,
 *   app:req_end(2i), MS ms, app:req_end(2i+1)
 * printing "first NS" and "second NS"; then "count NAME N".
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

__attribute__((noipa)) static void overlap(int i, long ns) {
	DTRACE_PROBE1(app, a_begin, i);
	long a0 = now();
	spin(ns);
	long b0 = now();
	DTRACE_PROBE1(app, b_begin, i);
	spin(ns);
	long a1 = now();
	DTRACE_PROBE1(app, a_end, i);
	spin(ns);
	long b1 = now();
	DTRACE_PROBE1(app, b_end, i);
	printf("a %ld\na-alone %ld\nb %ld\n", a1 - a0, b0 - a0, b1 - b0);
}

__attribute__((noipa)) static void byid(int i, long ns) {
	int x = 2 * i, y = 2 * i + 1;
	DTRACE_PROBE1(app, req_begin, x);
	long x0 = now();
	spin(ns);
	long y0 = now();
	DTRACE_PROBE1(app, req_begin, y);
	spin(ns);
	long x1 = now();
	DTRACE_PROBE1(app, req_end, x);
	spin(ns);
	long y1 = now();
	DTRACE_PROBE1(app, req_end, y);
	printf("first %ld\nsecond %ld\n", x1 - x0, y1 - y0);
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
