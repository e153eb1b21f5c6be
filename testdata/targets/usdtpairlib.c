/* A library with USDT probes and a source line to probe, for usdtpair.c:
 * plugin_run(K) times K steps between lib:step_begin and lib:step_end,
 * hits lib:tick and the marked line K times, and prints "count NAME N";
 * "count lib:armed N" is how many steps found the semaphores of both
 * probes of the pair set (the kernel counts them up while traced). */
#define _SDT_HAS_SEMAPHORES 1
#include <stdio.h>
#include <sys/sdt.h>

unsigned short lib_step_begin_semaphore __attribute__((unused, section(".probes")));
unsigned short lib_step_end_semaphore __attribute__((unused, section(".probes")));
unsigned short lib_tick_semaphore __attribute__((unused, section(".probes")));

static volatile long sink;

int plugin_run(int k) {
	int armed = 0;
	for (int i = 0; i < k; i++) {
		DTRACE_PROBE1(lib, step_begin, i);
		if (lib_step_begin_semaphore && lib_step_end_semaphore)
			armed++;
		sink += i; /* LIB-LINE */
		DTRACE_PROBE1(lib, step_end, i);
		DTRACE_PROBE1(lib, tick, i);
	}
	printf("count lib:step %d\ncount lib:tick %d\ncount lib:line %d\ncount lib:armed %d\n", k, k, k, armed);
	return k;
}
