/* USDT probes (sys/sdt.h) and a source line a tracer can probe, each
 * reached a number of times the program prints: "count NAME N".
 * usdtprog N: app:tick N times, app:costly on the odd ones
 * (guarded by its semaphore: the arguments are built only while traced,
 * and the program counts how often the semaphore was set), and the line
 * marked as the probe's line N/2 times (rounded up), and app:pick N times
 * with vals[i % 8] = 7·(i % 8) + 3, an element of a volatile array on the
 * stack, which at -O2 sys/sdt.h gives as an indexed operand,
 * -8@(%rsp,%rcx,8).
 */
#define _SDT_HAS_SEMAPHORES 1
#include <stdio.h>
#include <stdlib.h>
#include <sys/sdt.h>

/* With _SDT_HAS_SEMAPHORES every probe has one; only costly's is read. */
unsigned short app_tick_semaphore __attribute__((unused, section(".probes")));
unsigned short app_costly_semaphore __attribute__((unused, section(".probes")));
unsigned short app_pick_semaphore __attribute__((unused, section(".probes")));

static volatile long sink;

__attribute__((noipa)) static long work(long i) {
	long s = i;
	if (i % 2 == 0) {
		sink += i; /* LINE-PROBE */
		s++;
	}
	return s;
}

int main(int argc, char **argv) {
	long n = argc > 1 ? atol(argv[1]) : 10, armed = 0;
	volatile long vals[8];
	for (int k = 0; k < 8; k++)
		vals[k] = 7 * k + 3;
	for (long i = 0; i < n; i++) {
		DTRACE_PROBE1(app, tick, i);
		DTRACE_PROBE1(app, pick, vals[i % 8]);
		if (i % 2 == 1 && app_costly_semaphore) {
			armed++;
			DTRACE_PROBE2(app, costly, i, sink);
		}
		sink += work(i);
	}
	printf("count app:tick %ld\ncount app:costly %ld\ncount line %ld\n", n, armed, (n + 1) / 2);
	return 0;
}
