/* USDT begin/end pairs (sys/sdt.h), and probes in a library the program
 * dlopens. usdtpair N MS D E LIB K:
 * - app:req_begin/app:req_end around N spins of MS ms each, the program
 *   timing the inside of each and around it: "req IN OUT" (IN from
 *   after the begin to before the end, OUT from before the begin to
 *   after the end);
 * - app:nest_begin/app:nest_end at each level of a recursion D deep:
 *   nested pairs, the innermost spinning 1 ms;
 * - app:try_begin/app:try_end in E calls of a function that returns
 *   between them on every third call (i % 3 == 0): those never end;
 * - LIB's plugin_run(K) (usdtpairlib.c), which prints its own counts.
 * It prints "count NAME N" for what it did.
 */
#define _SDT_HAS_SEMAPHORES 1
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/sdt.h>
#include <time.h>

unsigned short app_req_begin_semaphore __attribute__((unused, section(".probes")));
unsigned short app_req_end_semaphore __attribute__((unused, section(".probes")));
unsigned short app_nest_begin_semaphore __attribute__((unused, section(".probes")));
unsigned short app_nest_end_semaphore __attribute__((unused, section(".probes")));
unsigned short app_try_begin_semaphore __attribute__((unused, section(".probes")));
unsigned short app_try_end_semaphore __attribute__((unused, section(".probes")));

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

__attribute__((noipa)) static void nest(int d) {
	DTRACE_PROBE1(app, nest_begin, d);
	if (d > 0)
		nest(d - 1);
	else
		spin(1000000);
	DTRACE_PROBE1(app, nest_end, d);
}

__attribute__((noipa)) static int try_once(int i) {
	DTRACE_PROBE1(app, try_begin, i);
	if (i % 3 == 0)
		return 0;
	sink += i;
	DTRACE_PROBE1(app, try_end, i);
	return 1;
}

int main(int argc, char **argv) {
	if (argc < 7) {
		fprintf(stderr, "usage: usdtpair N MS D E LIB K\n");
		return 2;
	}
	int n = atoi(argv[1]), d = atoi(argv[3]), e = atoi(argv[4]), k = atoi(argv[6]);
	long ms = atol(argv[2]);
	int armed = 0;
	for (int i = 0; i < n; i++) {
		long before = now();
		DTRACE_PROBE1(app, req_begin, i);
		if (app_req_begin_semaphore && app_req_end_semaphore)
			armed++;
		long t0 = now();
		spin(ms * 1000000);
		long t1 = now();
		DTRACE_PROBE1(app, req_end, i);
		long after = now();
		printf("req %ld %ld\n", t1 - t0, after - before);
	}
	nest(d);
	int ended = 0;
	for (int i = 0; i < e; i++)
		ended += try_once(i);
	void *h = dlopen(argv[5], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	int (*run)(int) = (int (*)(int))dlsym(h, "plugin_run");
	if (!run) {
		fprintf(stderr, "dlsym: %s\n", dlerror());
		return 1;
	}
	run(k);
	printf("count app:req %d\ncount armed %d\ncount app:nest %d\ncount app:try %d\n", n, armed, d + 1, ended);
	return 0;
}
