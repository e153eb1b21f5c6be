/* Two USDT begin/end pairs interleaved in one function (sys/sdt.h):
 * usdtoverlap N MS runs N rounds of
 *   app:a_begin, MS ms, app:b_begin, MS ms, app:a_end, MS ms, app:b_end
 * and prints, per round, "a NS", "a-alone NS" (a_begin to b_begin) and
 * "b NS" as the program timed them, then "count NAME N".
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

int main(int argc, char **argv) {
	if (argc < 3) {
		fprintf(stderr, "usage: usdtoverlap N MS\n");
		return 2;
	}
	int n = atoi(argv[1]);
	long ms = atol(argv[2]);
	for (int i = 0; i < n; i++)
		overlap(i, ms * 1000000);
	printf("count app:a %d\ncount app:b %d\n", n, n);
	return 0;
}
